"""Candidate models of sm_90a wgmma fp8 -> f32 against captured words.

    python3 warpsim/hw/offline/wgmma_fit.py [CORPUS.npz ...]     # default: tests/golden/wgmma_sm90a*.npz

Prints, per candidate (fused-sum fractional bits, rounding to f32, mantissa bits kept), how many
f32 D words of the fp8 entries differ from the H100's.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import warpsim  # noqa: E402
from warpsim.api.wgmma import operands  # noqa: E402
from warpsim.isa.bits import words_to_elements  # noqa: E402
from warpsim.isa.layouts import layout  # noqa: E402
from warpsim.numerics import fused as F  # noqa: E402
from warpsim.numerics.recipes import recipe_params  # noqa: E402


def rows(paths):
    """(A rows, B columns, C, hardware D) of every fp8 -> f32 output element in the corpora."""
    out = {}
    for path in paths:
        z = np.load(path)
        man = json.loads(bytes(z["manifest"]))
        for e, ent in enumerate(man["entries"]):
            op, a_src, sa, sb, ta, tb = ent["spec"].split("|")
            ins = warpsim.parse(op)
            if ins.family != "fp8" or ins.dtype != "f32":
                continue
            off = int(z[f"{e}.base"][0])
            smem = np.concatenate([np.zeros((z[f"{e}.smem"].shape[0], off), np.uint8), z[f"{e}.smem"]], axis=1)
            desc = z[f"{e}.desc"] + np.uint64(off >> 4)
            a = z[f"{e}.a"] if a_src == "reg" else desc[:, 0].copy()
            _, _, A, B, C = operands(op, z[f"{e}.d"], a, desc[:, 1].copy(), smem=smem,
                                     scale_d=z[f"{e}.sd"].astype(np.int64), scale_a=int(sa), scale_b=int(sb))
            tab = layout(op, "d")
            H = np.zeros(C.shape, np.uint64)
            H[:, tab[..., 1], tab[..., 2]] = words_to_elements(z[f"{e}.dout"], 32)
            G, M, K = A.shape
            N = B.shape[1]
            key = (ins.atype, ins.btype)
            out.setdefault(key, []).append((np.broadcast_to(A[:, :, None], (G, M, N, K)).reshape(-1, K),
                                            np.broadcast_to(B[:, None], (G, M, N, K)).reshape(-1, K),
                                            C.ravel(), H.ravel()))
    return {k: [np.concatenate([x[j] for x in v]) for j in range(4)] for k, v in out.items()}


def main(paths):
    data = rows(paths)
    tot = {}
    for (a, b), (A, B, C, H) in data.items():
        p = recipe_params(warpsim.parse(f"wgmma.mma_async.sync.aligned.m64n16k32.f32.{a}.{b}"), "sm_90")
        for frac in (13, 14, 25):
            for rnd in ("rz", "rne"):
                for keep in (13, 14, 0):
                    q = p.copy()
                    q[F.P_FRAC] = frac
                    m = keep or 23      # the f32 result word keeps m mantissa bits (f32e8m13: 13)
                    q[F.P_ACC:F.P_ACC + 5] = [32, 8, m, 23 - m, 1]
                    q[F.P_RND] = F.RND_RZ if rnd == "rz" else F.RND_RNE
                    g = np.zeros(len(C), np.uint64)
                    F.tc_dot_rows(A, B, C, 32, q, g)
                    name = f"frac {frac:>2}, {rnd:<3} to f32, keep {keep or 23:>2} mantissa bits (toward zero)"
                    m, n = tot.get(name, (0, 0))
                    tot[name] = (m + int((g != H).sum()), n + len(H))
    for name, (m, n) in sorted(tot.items(), key=lambda x: x[1][0]):
        print(f"{m:>8} of {n} differ   {name}")


if __name__ == "__main__":
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "golden")
    main(sys.argv[1:] or [os.path.join(here, f) for f in ("wgmma_sm90a.npz", "wgmma_sm90a_numerics.npz")])
