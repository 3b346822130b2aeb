"""Pack and replay the TMA store / reduction / tensormap.replace / im2col capture (issue 33).

``pack(raw, out)`` turns the device script's ``tma_stores.npz`` into the committed
``tests/golden/tma_stores_sm90.npz`` (a compact golden file, ``warpsim.hw.golden``): the plan, and per case the driver's result, tensormap bytes,
device addresses and, instead of whole tensors (seeded random bytes that do not compress), the
positions and values of the bytes the GPU changed.  ``replay_case(z, i)`` launches the case's entry
of :func:`warpsim.hw.tma_store_cases.ptx_text` with ``warpsim.ptx`` on the same bytes and returns
(warpsim's bytes, the GPU's bytes).

    python -m warpsim.hw.offline.tma_store_replay RAW.npz tests/golden/tma_stores_sm90.npz
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ...ptx import GlobalMemory, load
from ..golden import save_golden
from ..tma_store_cases import data_bytes, ptx_text

_MODULE = None


def _module():
    global _MODULE
    if _MODULE is None:
        _MODULE = load(ptx_text())
    return _MODULE


def initial(c, base_maps=None):
    """The bytes a case's output buffer held before the launch."""
    if c["group"] == "tensor":
        return data_bytes(c["seed"], c["gbytes"])
    if c["group"] == "bulk":
        return data_bytes(c["seed"], c["nbytes"] + 256)
    if c["group"] == "replace":
        return np.asarray(base_maps[c["base"]], dtype=np.uint8).copy()
    return np.full(16384, 0xA5, np.uint8)


def _replace_bases_as_run(z, plan, bases):
    """The base tensormaps the replace cases really started from.  Every child process of the capture
    re-encodes them over a fresh buffer and rewrites ``replace_bases``, so the stored ones carry the
    last child's buffer address; the replace group ran first, in one child.  Bytes 0..7 (the address)
    are taken from that group's outputs of other fields, which must agree on them (checked)."""
    bases = np.array(bases, dtype=np.uint8, copy=True)
    for b in range(len(bases)):
        seen = {bytes(z[f"{i}.after"][:8]) for i, c in enumerate(plan["cases"])
                if c["group"] == "replace" and c["base"] == b and c["field"] != "global_address"
                and f"{i}.after" in z.files}
        if len(seen) != 1:
            raise ValueError(f"replace base {b}: the outputs disagree on the tensormap's address ({len(seen)} values)")
        bases[b, :8] = np.frombuffer(seen.pop(), dtype=np.uint8)
    return bases


def pack(raw_path, out_path):
    z = np.load(raw_path)
    plan = json.loads(str(z["plan"]))
    bases = z["replace_bases"] if "replace_bases" in z.files else None
    if bases is not None:
        bases = _replace_bases_as_run(z, plan, bases)
    arrays = {"plan": z["plan"], "crash_log": z["crash_log"]}
    if bases is not None:
        arrays["replace_bases"] = bases
    for i, c in enumerate(plan["cases"]):
        for k in ("result", "tensormap", "gaddr", "status"):
            if f"{i}.{k}" in z.files:
                arrays[f"{i}.{k}"] = z[f"{i}.{k}"]
        if f"{i}.after" in z.files:
            after = z[f"{i}.after"]
            before = initial(c, bases)
            idx = np.flatnonzero(after != before)
            arrays[f"{i}.idx"] = idx.astype(np.uint32)
            arrays[f"{i}.val"] = after[idx]
    save_golden(out_path, {k: np.asarray(v) for k, v in arrays.items()},
                info={"capture": "warpsim/hw/device/tma_store_capture.py", "gpu": "H200 (sm_90a)"})


def gpu_bytes(z, i, c):
    """The GPU's output bytes of case ``i`` (None if it has none)."""
    if f"{i}.idx" not in z.files:
        return None
    out = initial(c, z["replace_bases"] if "replace_bases" in z.files else None)
    out[z[f"{i}.idx"]] = z[f"{i}.val"]
    return out


def replay_case(z, i, c):
    """(warpsim's output bytes, the GPU's) for case ``i`` of a packed capture."""
    mod = _module()
    gm = GlobalMemory()
    g = c["group"]
    if g == "tensor":
        data = initial(c)
        gm.map(data, address=int(z[f"{i}.gaddr"]))
        co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
        mod.launch(c["entry"], (1,), (128,), [bytes(z[f"{i}.tensormap"]), co, data_bytes(c["seed"] + 1, c["nbytes"]),
                                              c["nbytes"]], memory=gm)
        return data, gpu_bytes(z, i, c)
    if g == "bulk":
        data = initial(c)
        gm.map(data, address=int(z[f"{i}.gaddr"]))
        mod.launch(c["entry"], (1,), (128,), [int(z[f"{i}.gaddr"]) + c["dst_off"],
                                              data_bytes(c["seed"] + 1, c["nbytes"]), c["nbytes"]], memory=gm)
        return data, gpu_bytes(z, i, c)
    if g == "replace":
        out = np.zeros(256, np.uint8)
        base = bytes(np.asarray(z["replace_bases"][c["base"]], dtype=np.uint8))
        mod.launch(c["entry"], (1,), (32,), [base, out, c["value"] % (1 << 64)], memory=gm)
        return out[:128], gpu_bytes(z, i, c)
    data = data_bytes(c["seed"], c["gbytes"])          # im2col
    gm.map(data, address=int(z[f"{i}.gaddr"]))
    win, status = np.zeros(16384, np.uint8), np.zeros(4, np.int32)
    co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
    offs = np.array(c["offsets"] + [0] * (4 - len(c["offsets"])), np.uint16)
    mod.launch(c["entry"], (1,), (128,), [bytes(z[f"{i}.tensormap"]), co, offs, c["nbytes"], win, status], memory=gm)
    return win, gpu_bytes(z, i, c)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    pack(argv[0], argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
