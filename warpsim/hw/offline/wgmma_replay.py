"""Replay a wgmma capture (warpsim/hw/wgmma_cases.py + warpsim/hw/device/wgmma.py) through warpsim.wgmma.

    python3 warpsim/hw/offline/wgmma_replay.py CAPDIR [purpose ...]

CAPDIR holds plan.json and io_*.npz.  Prints differing words per purpose and family.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(capdir):
    plan = json.load(open(os.path.join(capdir, "plan.json")))
    io = {}
    for f in sorted(glob.glob(os.path.join(capdir, "io_*.npz"))):
        io.update(dict(np.load(f)))
    return plan, io


def call_args(spec_key, L, io, i):
    """(opcode, kwargs for warpsim.wgmma) of launch i, as the hardware saw it."""
    op, a_src, sa, sb, ta, tb = spec_key.split("|")
    smem = io[f"{i}.smem"]
    desc = io[f"{i}.desc"]
    base = io[f"{i}.base"]
    if base.size and int(base.max()) != 0:
        off = int(base[0])
        assert (base == off).all()
        full = np.zeros((smem.shape[0], off + smem.shape[1]), np.uint8)
        full[:, off:] = smem
        smem = full
        desc = desc + np.uint64(off >> 4)
    kw = dict(smem=smem, scale_d=io[f"{i}.sd"].astype(np.int64), scale_a=int(sa), scale_b=int(sb),
              trans_a=int(ta), trans_b=int(tb))
    a = io[f"{i}.a"] if a_src == "reg" else desc[:, 0].copy()
    return op, io[f"{i}.d"], a, desc[:, 1].copy(), kw


def main(capdir, purposes=None):
    import warpsim

    plan, io = load(capdir)
    miss = collections.Counter()
    tot = collections.Counter()
    bad = []
    for i, L in enumerate(plan["launches"]):
        if purposes and L["purpose"] not in purposes:
            continue
        if f"{i}.dout" not in io or io[f"{i}.dout"].size == 0:
            print("no output for launch", i, L["spec"])
            continue
        op, d, a, b, kw = call_args(L["spec"], L, io, i)
        ins = warpsim.parse(op)
        got = warpsim.wgmma(op, d, a, b, **kw)
        hw = io[f"{i}.dout"]
        key = (L["purpose"], ins.family, ins.atype, ins.btype, ins.dtype)
        nd = int((got != hw).sum())
        miss[key] += nd
        tot[key] += hw.size
        if nd:
            bad.append((i, L["spec"], nd, hw.size))
    for k in sorted(tot):
        print(k, f"{miss[k]} of {tot[k]} words differ")
    print("launches with differences:", len(bad))
    for b in bad[:30]:
        print("  ", b)
    return miss, tot, bad


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or None)
