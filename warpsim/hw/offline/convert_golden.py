"""One-off conversion of the plain ``.npz`` captures (before golden format 1) to compact golden files.

    python3 -m warpsim.hw.offline.convert_golden OLD_ROOT NEW_ROOT

OLD_ROOT and NEW_ROOT are repository roots (``tests/golden``, ``tests/ptx/data`` below them).
Every input array that a registered generator makes again becomes a recipe, everything else is
stored; :func:`warpsim.hw.golden.save_golden` checks each recipe against the old words, and this
script then reads every array of every new file back and compares it with the old file, word for
word, printing one line per file.  It exits non-zero on any difference.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from ..golden import open_golden, save_golden
from ..capture import corpus_recipes

GOLDEN = os.path.join("tests", "golden")
PTXDATA = os.path.join("tests", "ptx", "data")
CAPS_FIRST = {k: 20480 for k in ("f32a", "f32b", "i32", "i64", "f64")}


def _load(path):
    z = np.load(path)
    return {k: z[k] for k in z.files}


def _mma(old):
    man = json.loads(str(old["manifest"]))
    recipes = corpus_recipes(man)
    for key in old:
        if key != "manifest" and not key.endswith(".d"):
            idx, role = key.split(".")
            recipes[int(idx)]["arrays"][key] = role
    return recipes, {"kind": "mma corpus"}


def _wgmma_entries(old, build, sparse):
    """Match each entry of a wgmma corpus to its launch (and groups) of the seeded plan."""
    from ..wgmma_cases import CORPUS_CAPS as CAPS
    man = json.loads(bytes(old["manifest"]).decode())
    seed = 2027 if sparse else 2026
    launches = build(seed)[1]
    recipes, li = [], 0
    keys = ("smem", "desc", "a", "d", "sd") + (("e",) if sparse else ())
    for j, e in enumerate(man["entries"]):
        while True:
            if li >= len(launches):
                raise SystemExit(f"entry {j} ({e['spec']}) matches no launch of the plan")
            L = launches[li]
            li += 1
            if L["spec"].key() != e["spec"] or L["purpose"] != e["purpose"]:
                continue
            if sparse:
                groups = None
            else:
                groups = e.get("capture_groups") or [int(x) for x in np.unique(np.linspace(
                    0, len(L["sd"]) - 1, min(len(L["sd"]), CAPS[L["purpose"]])).round().astype(int))]
            sel = slice(None) if groups is None else groups
            if all(np.array_equal(L[k][sel].astype(old[f"{j}.{k}"].dtype), old[f"{j}.{k}"]) for k in keys):
                break
        args = {"seed": seed, "launch": li - 1} if sparse else {"seed": seed, "launch": li - 1, "groups": groups}
        recipes.append({"generator": "wgmma_sp_launch" if sparse else "wgmma_launch", "args": args,
                        "arrays": {f"{j}.{k}": k for k in keys}})
    return recipes


def _wgmma(old):
    from ..wgmma_cases import build
    return _wgmma_entries(old, build, False), {"kind": "wgmma corpus"}


def _wgmma_sp(old):
    from ..wgmma_sp_cases import build
    return _wgmma_entries(old, build, True), {"kind": "sparse wgmma corpus"}


def _gemm(old):
    sets = {}
    for key in old:
        if key.startswith("s."):
            _, name, part = key.split(".")
            sets.setdefault(name, {})[key] = part
    return [{"generator": "gemm_set", "args": {"name": n}, "arrays": a} for n, a in sets.items()], {"kind": "gemm captures"}


def _ptx_inputs(script, first=None):
    def make(old):
        args = {"script": script} if not first else {"script": script, "first": first}
        return [{"generator": "ptx_capture_inputs", "args": args, "arrays": {k: k for k in old}}], {"kind": "ptx capture inputs"}
    return make


def _stored(kind):
    return lambda old: ([], {"kind": kind})


PLAN = [(GOLDEN, "corpus_sm90.npz", _mma), (GOLDEN, "corpus_sm90_edge.npz", _mma),
        (GOLDEN, "wgmma_sm90a.npz", _wgmma), (GOLDEN, "wgmma_sm90a_numerics.npz", _wgmma),
        (GOLDEN, "wgmma_sp_sm90a.npz", _wgmma_sp), (GOLDEN, "wgmma_sp_sm90a_cover.npz", _wgmma_sp),
        (GOLDEN, "wgmma_sp_sm90a_wide.npz", _wgmma_sp),
        (GOLDEN, "gemm_sm90_mma.npz", _gemm), (GOLDEN, "gemm_sm90_triton.npz", _gemm),
        (PTXDATA, "cap_inputs.npz", _ptx_inputs("caps", CAPS_FIRST)), (PTXDATA, "alu_inputs.npz", _ptx_inputs("alu")),
        (PTXDATA, "kernels_in.npz", _ptx_inputs("kernels"))]
PLAN += [(PTXDATA, f, _stored("ptx captures")) for f in
         ("cap_alu.npz", "cap_cvt.npz", "cap_ldmatrix.npz", "cap_movmatrix.npz", "cap_stmatrix.npz",
          "cap_wmma_load.npz", "cap_wmma_mma.npz", "cap_wmma_store.npz", "kernels_out.npz")]


def convert(old_root, new_root, only=None):
    ok = True
    total_old = total_new = 0
    for sub, name, how in PLAN:
        if only and name not in only:
            continue
        src, dst = os.path.join(old_root, sub, name), os.path.join(new_root, sub, name)
        old = _load(src)
        recipes, info = how(old)
        info["converted_from"] = {"file": name, "bytes": os.path.getsize(src)}
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        save_golden(dst, old, recipes=recipes, info=info)
        new = open_golden(dst)
        diff = [k for k in old if not (new[k].dtype == old[k].dtype and np.array_equal(new[k], old[k]))]
        diff += sorted(set(new.files) ^ set(old))
        ok &= not diff
        total_old += os.path.getsize(src)
        total_new += os.path.getsize(dst)
        print(f"{sub}/{name}: {len(old)} arrays, {sum(v.size for v in old.values())} words; "
              f"{os.path.getsize(src)} -> {os.path.getsize(dst)} bytes; differing arrays: {len(diff)} {diff[:5]}")
    print(f"total {total_old} -> {total_new} bytes")
    return ok


if __name__ == "__main__":
    sys.exit(0 if convert(sys.argv[1], sys.argv[2], sys.argv[3:] or None) else 1)


LAYOUTS = {"mma": _mma, "wgmma": _wgmma, "wgmma_sp": _wgmma_sp, "gemm": _gemm, "stored": _stored("captures")}


def write_compact(path, arrays, layout):
    """Write a freshly packed capture (arrays in the plain layout the packers build) compactly."""
    recipes, info = LAYOUTS[layout]({k: np.asarray(v) for k, v in arrays.items()})
    return save_golden(path, arrays, recipes=recipes, info=info)
