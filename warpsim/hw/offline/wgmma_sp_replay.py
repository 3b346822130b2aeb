"""Replay a sparse wgmma capture (plan + inputs + device outputs) through warpsim.wgmma; count differing words.

    python3 warpsim/hw/offline/wgmma_sp_replay.py PLANDIR OUTDIR [purpose ...]
"""
import json
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warpsim.api.wgmma import wgmma  # noqa: E402
from warpsim.isa.catalog import BY_OPCODE  # noqa: E402


def spec_fields(key):
    op, a_src, sa, sb, ta, tb, *rest = key.split("|")
    return op, a_src, int(sa), int(sb), int(ta), int(tb), int(rest[0]) if rest else 0


def replay(plan_dir, out_dir, purposes=None):
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    z = np.load(os.path.join(plan_dir, "inputs.npz"))
    outs = {}
    for f in os.listdir(out_dir):
        if f.startswith("out_") and f.endswith(".npz"):
            outs.update(dict(np.load(os.path.join(out_dir, f))))
    tot = defaultdict(lambda: [0, 0, 0])
    bad = []
    for i, L in enumerate(plan["launches"]):
        if purposes and L["purpose"] not in purposes:
            continue
        if f"{i}.d" not in outs:
            tot[L["purpose"]][2] += 1
            continue
        op, a_src, sa, sb, ta, tb, sel = spec_fields(L["spec"])
        base = outs[f"{i}.base"]
        assert (base % 1024 == 0).all(), base
        desc = z[f"{i}.desc"]
        a = z[f"{i}.a"] if a_src == "reg" else desc[:, 0]
        got = wgmma(op, z[f"{i}.d"], a, desc[:, 1].copy(), smem=z[f"{i}.smem"], e=z[f"{i}.e"], selector=sel,
                    scale_d=z[f"{i}.sd"].astype(np.int64), scale_a=sa, scale_b=sb, trans_a=ta, trans_b=tb)
        hw = outs[f"{i}.d"]
        nd = int((got != hw).sum())
        tot[L["purpose"]][0] += hw.size
        tot[L["purpose"]][1] += nd
        if nd:
            bad.append((i, L["spec"], nd, hw.size, [m["metadata"] for m in L["meta"]], [m["b"]["swizzle"] for m in L["meta"]]))
    return dict(tot), bad


if __name__ == "__main__":
    tot, bad = replay(sys.argv[1], sys.argv[2], sys.argv[3:] or None)
    for k, (w, d, miss) in tot.items():
        print(f"{k}: {w} words, {d} differ, {miss} launches without output")
    for b in bad[:int(os.environ.get("SHOW", "40"))]:
        print(b)
