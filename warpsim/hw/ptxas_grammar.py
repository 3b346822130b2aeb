"""Which spellings of the catalog's opcodes ptxas accepts: generate candidates, ask ptxas, store verdicts.

ptxas reads the qualifiers after an MMA's name as a bag: ``.sync``/``.aligned``/the shape/
``.satfinite``/``.sp`` may stand anywhere, only the layouts and the types keep their order
among themselves.  The canonical catalog opcode is one spelling of many; a kernel written
another way must replay too.  This module writes candidate spellings of every catalog opcode
(random permutations, single moves, duplicated, dropped and inserted qualifiers; seeded, so
the set is reproducible), assembles thousands per ptxas call (one statement per line; ptxas
reports errors by line), and stores the verdicts in ``tests/golden/ptxas/spellings.json.xz``.
Per target it also records ptxas's verdict on every canonical catalog opcode (``refused``: the
mma / wgmma opcodes the target lacks) and on the catalog's one-step neighbours (another D/C
type, the other sparse forms, any layout, ``.satfinite``, no ``.kind``, fp6/fp4 without
``.kind``: ``neighbours``), so an opcode the catalog misses shows up as accepted there.
Each accepted line is re-assembled in an all-accepted file (so a check ptxas makes only after
parsing cannot hide), and a sample of accepted spellings is assembled next to the canonical
opcodes: identical cubins prove the spelling means the canonical instruction.

    python -m warpsim.hw.ptxas_grammar [--ptxas ptxas] [--ptxas12 PATH] [--out tests/golden/ptxas/spellings.json.xz]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import random
import re
import subprocess
import sys
import tempfile

from ..isa.catalog import CATALOG, WGMMA_CATALOG, WGMMA_SP_CATALOG
from .ptxcheck import PTX_VERSION, PTX_VERSION_FOR, ptx_version

#: ptxas targets whose spellings are asked, per instruction class (the a-suffixed targets enable
#: wgmma / kind::); every target is also asked about every canonical opcode and the neighbours
TARGETS = {"mma": ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_110a",
                   "sm_120", "sm_120a"),
           "wgmma": ("sm_90a",)}
#: targets ptxas 13 no longer assembles: a CUDA 12 ptxas answers for them
PTXAS12_TARGETS = ("sm_70",)
DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "ptxas", "spellings.json.xz")
SEED = 24

_HEADER = """.version {version}
.target {target}
.address_size 64
.visible .entry {name}(.param .u64 P)
{{
  .reg .b32 %r<300>;
  .reg .f64 %fd<300>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd0, [P];
  ld.global.u64 %rd1, [%rd0];
  ld.global.b32 %r299, [%rd0+8];
  setp.ne.b32 %p0, %r299, 0;
"""


def base_and_qualifiers(opcode: str) -> tuple[str, list[str]]:
    """``wgmma.mma_async.sync...`` -> (``wgmma.mma_async``, [``sync``, ...]); mma likewise with ``mma``."""
    head = "wgmma.mma_async" if opcode.startswith("wgmma.mma_async") else opcode.split(".")[0]
    return head, opcode[len(head) + 1:].split(".")


def operands(ins) -> str:
    """Operand text that ptxas accepts for ``ins`` (registers loaded from nowhere: verdicts only)."""
    def group(n, wide=False):
        return "{" + ", ".join(f"%fd{i}" if wide else f"%r{i}" for i in range(n)) + "}"
    if ins.is_wgmma:
        d = group(ins.words("d"))
        sp = ", %r298, 0" if ins.is_sparse else ""
        imms = (", 1, 1" if ins.imm_scale else "") + (", 0, 0" if ins.imm_trans else "")
        return f"{d}, %rd1, %rd1{sp}, %p0{imms}"
    ops = [group(ins.registers(r), ins.elem(r).bits == 64) for r in "dabc"]
    tail = ", %r298, 0" if ins.is_sparse else ""
    if ins.block_scaled:
        tail += ", %r298, {0, 0}, %r298, {0, 0}"
    return ", ".join(ops) + tail


def statement(ins, spelling: str) -> str:
    """One line: the instruction spelt ``spelling``, then a store that keeps its D alive."""
    wide = not ins.is_wgmma and ins.elem("d").bits == 64
    store = "st.global.f64 [%rd0], %fd0;" if wide else "st.global.b32 [%rd0], %r0;"
    return f"{spelling} {operands(ins)}; {store}"


def _required(ins, tok: str) -> bool:
    """Qualifiers whose removal leaves no spelling of ``ins`` (dropping .satfinite/.sp/.kind names another opcode)."""
    return tok not in ("satfinite", "sp", "sp::ordered_metadata") and not tok.startswith(("kind::", "scale_vec::"))


def _ordered_class(tok: str):
    """Qualifiers whose order among themselves is meaning (A before B layout; D, A, B, C types; op before popc)."""
    from ..isa.types import SCALE_TYPES, TYPES

    if tok in ("row", "col"):
        return "layout"
    if tok in TYPES or tok in SCALE_TYPES:
        return "type"
    if tok in ("xor", "and", "popc"):
        return "op"
    return None


def _keep_order(moved: list[str], original: list[str]) -> list[str]:
    """``moved`` with each ordered class's qualifiers put back in their original order (same positions)."""
    out = list(moved)
    for cls in ("layout", "type", "op"):
        seq = [t for t in original if _ordered_class(t) == cls]
        pos = [i for i, t in enumerate(out) if _ordered_class(t) == cls]
        if len(seq) == len(pos):
            for i, t in zip(pos, seq):
                out[i] = t
    return out


def candidates(ins, rng: random.Random, per_opcode: int = 12) -> list[str]:
    """The canonical opcode and spellings of it, each either meaning ``ins`` or nothing at all."""
    head, q = base_and_qualifiers(ins.opcode)
    out = {ins.opcode}
    spell = lambda toks: ".".join([head] + toks)  # noqa: E731
    tries = 0
    while len(out) < per_opcode and tries < 4 * per_opcode:
        tries += 1
        t = list(q)
        how = rng.randrange(7)
        if how == 0:                          # any order
            rng.shuffle(t)
        elif how == 1:                        # one qualifier moved
            t.insert(rng.randrange(len(t)), t.pop(rng.randrange(len(t))))
        elif how == 2:                        # one qualifier twice
            t.insert(rng.randrange(len(t) + 1), rng.choice(t))
        elif how == 3:                        # one required qualifier missing
            drop = [i for i, x in enumerate(t) if _required(ins, x)]
            t.pop(rng.choice(drop))
        elif how == 4:                        # a layout more (wgmma: ptxas ignores layouts)
            for _ in range(rng.randrange(1, 3)):
                t.insert(rng.randrange(len(t) + 1), rng.choice(("row", "col")))
        elif how == 5:                        # two neighbours swapped
            i = rng.randrange(len(t) - 1)
            t[i], t[i + 1] = t[i + 1], t[i]
        else:                                 # moved, then a .sync / .satfinite more
            t.insert(rng.randrange(len(t)), t.pop(rng.randrange(len(t))))
            t.insert(rng.randrange(len(t) + 1), rng.choice(("sync", "satfinite", "aligned")))
            if "satfinite" not in q and t.count("satfinite"):   # would name the .satfinite opcode
                continue
        if how != 4:
            t = _keep_order(t, q)
        out.add(spell(t))
    return sorted(out)


def _assemble(ptxas, target, lines, name="k0", header=_HEADER):
    """(returncode, {line index: [errors]}, cubin bytes or None) for one kernel holding ``lines``."""
    hdr = header.format(version=ptx_version(target), target=target, name=name)
    first = hdr.count("\n") + 1
    text = hdr + "\n".join("  " + s for s in lines) + "\n  ret;\n}\n"
    with tempfile.TemporaryDirectory(prefix="warpsim_grammar_") as d:
        src, cub = os.path.join(d, "a.ptx"), os.path.join(d, "a.cubin")
        with open(src, "w") as f:
            f.write(text)
        # -O0: acceptance does not depend on optimisation, and wgmma codegen at -O3 takes minutes
        r = subprocess.run([ptxas, f"-arch={target}", "-O0", src, "-o", cub], capture_output=True, text=True,
                           timeout=600)
        blob = open(cub, "rb").read() if r.returncode == 0 else None
    bad = {}
    for ln in r.stderr.splitlines():
        m = re.search(r", line (\d+); error\s*:\s*(.*)", ln)
        if m:
            bad.setdefault(int(m.group(1)) - first, []).append(m.group(2).strip())
    if r.returncode != 0 and not bad:
        raise RuntimeError(f"ptxas failed without a line number: {r.stderr[-400:]}")
    return r.returncode, bad, blob


def verdicts(ptxas: str, target: str, pairs, chunk: int = 1000):
    """{spelling: first ptxas error or ""} for (instruction, spelling) pairs on ``target``."""
    out = {}
    for s in range(0, len(pairs), chunk):
        part = pairs[s:s + chunk]
        lines = [statement(ins, sp) for ins, sp in part]
        _, bad, _ = _assemble(ptxas, target, lines)
        for i, (ins, sp) in enumerate(part):
            out[sp] = bad[i][0] if i in bad else ""
        ok = [i for i in range(len(part)) if i not in bad]
        while ok:                             # the accepted lines alone must assemble cleanly
            rc, bad2, _ = _assemble(ptxas, target, [lines[i] for i in ok])
            if rc == 0:
                break
            for j in bad2:
                out[part[ok[j]][1]] = bad2[j][0]
            ok = [i for j, i in enumerate(ok) if j not in bad2]
    return out


def same_cubins(ptxas: str, target: str, pairs, chunk: int = 200) -> int:
    """Assemble accepted spellings and their canonical opcodes in twin files; count the pairs checked.

    Raises if the cubins differ: that spelling would mean another instruction than its canonical one."""
    for s in range(0, len(pairs), chunk):
        part = pairs[s:s + chunk]
        canon = [statement(ins, ins.opcode) for ins, _ in part]
        spelt = [statement(ins, sp) for ins, sp in part]
        _, _, a = _assemble(ptxas, target, canon)
        _, _, b = _assemble(ptxas, target, spelt)
        if a is None or b is None or hashlib.sha256(a).digest() != hashlib.sha256(b).digest():
            raise RuntimeError(f"spellings {part[0][1]} .. {part[-1][1]} do not assemble like their canonical opcodes")
    return len(pairs)


def ptxas_version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def find_ptxas12() -> str | None:
    """A CUDA 12 ptxas (the only kind that still targets sm_70): ``WARPSIM_PTXAS12``, the
    ``nvidia-cuda-nvcc-cu12`` wheel's, Triton 3.x's bundled one, or ``ptxas`` on PATH if it is 12.x."""
    import glob
    import shutil

    cands = [os.environ.get("WARPSIM_PTXAS12", "")]
    for p in sys.path:
        cands += glob.glob(os.path.join(p or ".", "nvidia", "cuda_nvcc", "bin", "ptxas"))
        cands += glob.glob(os.path.join(p or ".", "triton", "backends", "nvidia", "bin", "ptxas"))
    cands.append(shutil.which("ptxas") or "")
    for c in cands:
        if c and os.path.exists(c) and ptxas_version(c).startswith("12."):
            return c
    return None


def neighbours() -> dict:
    """{opcode: Instruction-like entry} of one-step variants of the catalog's mma rows that are not
    catalog opcodes (another D/C type pair, the other sparse forms, any layout, .satfinite, no
    ``.kind``, the fp6/fp4 types on a legacy fp8 row); operand counts follow from the variant."""
    import dataclasses
    import itertools

    from ..isa import catalog as cat

    floats = ("f16", "f32")

    def variants(row):
        rep = dataclasses.replace
        if all(x in floats for dc in row.dc for x in dc):
            yield rep(row, dc=tuple(itertools.product(floats, repeat=2)))
        yield rep(row, layouts=cat.ANY_LAYOUT)
        yield rep(row, satfinite=cat.ANY_SAT)
        yield rep(row, selectors=0, forms=None) if row.selectors else rep(row, selectors=1, forms=None)
        if row.kind and not row.scales:
            yield rep(row, kind=None, container=0)
        if row.family == "fp8":
            yield rep(row, ab=cat._mix(cat.F8F6F4))

    known = {ins.opcode for ins in CATALOG}
    out = {}
    for row in cat.ROWS:
        for v in variants(row):
            for ins in cat._expand((v,)):
                whole = all(ins.registers(r) > 0 and ins.elements_per_lane(r) * ins.elem(r).bits % 32 == 0
                            for r in "abcd")
                if ins.opcode not in known and whole:
                    out.setdefault(ins.opcode, ins)
    return out


def build(ptxas: str = "ptxas", per_opcode: int = 12, cubin_sample: int = 600, ptxas12: str | None = None) -> dict:
    """The verdict table: per target, per canonical opcode, the accepted and the refused spellings;
    the canonical catalog opcodes the target refuses; the neighbours' verdicts."""
    from ..isa.archs import available

    rng = random.Random(SEED)
    every = list(CATALOG) + list(WGMMA_CATALOG) + list(WGMMA_SP_CATALOG)
    cands = {ins.opcode: candidates(ins, rng, per_opcode) for ins in every}
    near = neighbours()
    ptxas12 = ptxas12 or find_ptxas12()
    table = {"ptxas": ptxas_version(ptxas), "ptxas12": ptxas_version(ptxas12), "ptx_version": PTX_VERSION,
             "ptx_version_for": PTX_VERSION_FOR, "seed": SEED, "targets": {}}
    for target in sorted({t for ts in TARGETS.values() for t in ts}):
        tool = ptxas12 if target in PTXAS12_TARGETS else ptxas
        if tool is None:
            raise RuntimeError(f"{target} needs a CUDA 12 ptxas (ptxas 13 dropped it): pass --ptxas12 or set "
                               "WARPSIM_PTXAS12 (pip install --target DIR nvidia-cuda-nvcc-cu12)")
        canon = verdicts(tool, target, [(ins, ins.opcode) for ins in every])
        refused = {op: why for op, why in canon.items() if why}
        nv = verdicts(tool, target, [(ins, op) for op, ins in near.items()])
        rows = [ins for ins in every if target in TARGETS[ins.iclass] and not refused.get(ins.opcode)]
        pairs = [(ins, sp) for ins in rows for sp in cands[ins.opcode]]
        v = verdicts(tool, target, pairs)
        ok = [(ins, sp) for ins, sp in pairs if not v[sp] and sp != ins.opcode]
        checked = same_cubins(tool, target, random.Random(SEED).sample(ok, min(cubin_sample, len(ok))))
        per = {}
        for ins, sp in pairs:
            ent = per.setdefault(ins.opcode, {"ok": [], "no": {}})
            if v[sp]:
                ent["no"][sp] = v[sp]
            else:
                ent["ok"].append(sp)
        table["targets"][target] = {"opcodes": per, "candidates": len(pairs), "cubins_compared": checked,
                                    "ptxas": ptxas_version(tool), "refused": refused,
                                    "neighbours": {"ok": sorted(op for op, why in nv.items() if not why),
                                                   "no": {op: why for op, why in nv.items() if why}}}
        print(f"{target} (ptxas {ptxas_version(tool)}): {len(every) - len(refused)} of {len(every)} catalog opcodes, "
              f"{len(pairs)} spellings, {sum(len(e['ok']) for e in per.values())} accepted, {checked} accepted "
              f"non-canonical spellings assemble to the canonical cubin; {sum(not w for w in nv.values())}"
              f" of {len(near)} neighbours accepted", file=sys.stderr)
    return table


def load(path: str = DEFAULT_OUT) -> dict:
    with lzma.open(path, "rt") as f:
        return json.load(f)


def verdicts_main(argv, doc, build_table, default_out, per_flag, per_default, ptxas12=False):
    """The command line every ptxas verdict generator shares: build the table, write it as LZMA'd JSON."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument(per_flag, type=int, default=per_default)
    ap.add_argument("--out", default=default_out)
    if ptxas12:
        ap.add_argument("--ptxas12", default=None, help="a CUDA 12 ptxas for sm_70 (default: found by find_ptxas12)")
    a = ap.parse_args(argv)
    kw = {"ptxas12": a.ptxas12} if ptxas12 else {}
    t = build_table(a.ptxas, getattr(a, per_flag.lstrip("-").replace("-", "_")), **kw)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with lzma.open(a.out, "wt", preset=9) as f:
        json.dump(t, f, sort_keys=True, separators=(",", ":"))
    return 0


def main(argv=None):
    return verdicts_main(argv, __doc__, build, DEFAULT_OUT, "--per-opcode", 12, ptxas12=True)


if __name__ == "__main__":
    sys.exit(main())
