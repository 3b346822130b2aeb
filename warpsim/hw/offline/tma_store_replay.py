"""Pack and replay the TMA store / reduction / tensormap.replace / im2col capture (issue 33).

``pack(raw, out)`` turns the device script's ``tma_stores.npz`` into the committed
``tests/golden/tma_stores_sm90.npz`` (a compact golden file, ``warpsim.hw.golden``): the plan, and per case the driver's result, tensormap bytes,
device addresses and, instead of whole tensors (seeded random bytes that do not compress), the
bytes the GPU changed: their positions as runs (start, length) and their values, every case's in one
array.  ``replay_case(Capture(z), i)`` launches the case's entry
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
    n = len(plan["cases"])
    bases = z["replace_bases"] if "replace_bases" in z.files else None
    if bases is not None:
        bases = _replace_bases_as_run(z, plan, bases)
    result = np.array([int(z[f"{i}.result"]) for i in range(n)], np.int32)
    tmaps = np.zeros((n, 128), np.uint8)
    gaddr = np.zeros(n, np.uint64)
    status = np.zeros((n, 4), np.int32)
    has = np.zeros(n, np.uint8)
    runs, vals, roff, voff = [], [], [0], [0]
    for i, c in enumerate(plan["cases"]):
        if f"{i}.tensormap" in z.files:
            tmaps[i] = z[f"{i}.tensormap"]
        if f"{i}.gaddr" in z.files:
            gaddr[i] = z[f"{i}.gaddr"]
        if f"{i}.status" in z.files:
            status[i] = z[f"{i}.status"]
        r = np.zeros((0, 2), np.int64)
        if f"{i}.after" in z.files:
            has[i] = 1
            after = z[f"{i}.after"]
            idx = np.flatnonzero(after != initial(c, bases))
            if len(idx):                                       # the changed bytes as runs: (start, length)
                cut = np.flatnonzero(np.diff(idx) != 1)
                starts, ends = idx[np.r_[0, cut + 1]], idx[np.r_[cut, len(idx) - 1]]
                r = np.stack([starts, ends - starts + 1], axis=1)
            vals.append(after[idx])
        runs.append(r)
        roff.append(roff[-1] + len(r))
        voff.append(voff[-1] + (len(vals[-1]) if has[i] else 0))
    arrays = {"plan": z["plan"], "crash_log": z["crash_log"], "result": result, "tensormap": tmaps, "gaddr": gaddr,
              "status": status, "has_output": has, "runs": np.concatenate(runs).astype(np.uint32),
              "runs_offsets": np.array(roff, np.int64), "values": np.concatenate(vals).astype(np.uint8),
              "values_offsets": np.array(voff, np.int64)}
    if bases is not None:
        arrays["replace_bases"] = bases
    save_golden(out_path, {k: np.asarray(v) for k, v in arrays.items()},
                info={"capture": "warpsim/hw/device/tma_store_capture.py", "gpu": "H200 (sm_90a)"})


class Capture:
    """A packed capture, read once: per case the driver's result, tensormap, address and the GPU's bytes."""

    def __init__(self, z):
        self.plan = json.loads(str(z["plan"]))
        self.cases = self.plan["cases"]
        self.result, self.tensormap, self.gaddr = np.asarray(z["result"]), np.asarray(z["tensormap"]), np.asarray(z["gaddr"])
        self.has_output = np.asarray(z["has_output"]).astype(bool)
        self.runs, self.roff = np.asarray(z["runs"], np.int64), np.asarray(z["runs_offsets"])
        self.values, self.voff = np.asarray(z["values"]), np.asarray(z["values_offsets"])
        self.replace_bases = np.asarray(z["replace_bases"]) if "replace_bases" in z.files else None

    def gpu_bytes(self, i):
        """The GPU's output bytes of case ``i`` (None if it has none)."""
        if not self.has_output[i]:
            return None
        out = initial(self.cases[i], self.replace_bases)
        runs = self.runs[self.roff[i]:self.roff[i + 1]]
        pos = np.concatenate([np.arange(s, s + n) for s, n in runs]) if len(runs) else np.zeros(0, np.int64)
        out[pos] = self.values[self.voff[i]:self.voff[i + 1]]
        return out


def replay_case(cap: Capture, i: int):
    """(warpsim's output bytes, the GPU's) for case ``i`` of a packed capture."""
    c = cap.cases[i]
    mod = _module()
    gm = GlobalMemory()
    g = c["group"]
    if g == "tensor":
        data = initial(c)
        gm.map(data, address=int(cap.gaddr[i]))
        co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
        mod.launch(c["entry"], (1,), (128,), [bytes(cap.tensormap[i]), co, data_bytes(c["seed"] + 1, c["nbytes"]),
                                              c["nbytes"]], memory=gm)
        return data, cap.gpu_bytes(i)
    if g == "bulk":
        data = initial(c)
        gm.map(data, address=int(cap.gaddr[i]))
        mod.launch(c["entry"], (1,), (128,), [int(cap.gaddr[i]) + c["dst_off"],
                                              data_bytes(c["seed"] + 1, c["nbytes"]), c["nbytes"]], memory=gm)
        return data, cap.gpu_bytes(i)
    if g == "replace":
        out = np.zeros(256, np.uint8)
        base = bytes(np.asarray(cap.replace_bases[c["base"]], dtype=np.uint8))
        mod.launch(c["entry"], (1,), (32,), [base, out, c["value"] % (1 << 64)], memory=gm)
        return out[:128], cap.gpu_bytes(i)
    data = data_bytes(c["seed"], c["gbytes"])          # im2col
    gm.map(data, address=int(cap.gaddr[i]))
    win, status = np.zeros(16384, np.uint8), np.zeros(4, np.int32)
    co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
    offs = np.array(c["offsets"] + [0] * (4 - len(c["offsets"])), np.uint16)
    mod.launch(c["entry"], (1,), (128,), [bytes(cap.tensormap[i]), co, offs, c["nbytes"], win, status], memory=gm)
    return win, cap.gpu_bytes(i)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    pack(argv[0], argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
