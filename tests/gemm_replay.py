"""Replay of the committed whole-GEMM captures (tests/golden/gemm_sm90_*.npz) through warpsim.gemm.

Each case maps to ``warpsim.gemm`` arguments as docs/gemm.md describes:
* the tiled ``mma`` kernel: its instruction, ``promote_every`` as captured;
* Triton 3.6 ``tl.dot`` kernels: f16 / bf16 / tf32 on either lowering path -> the ``mma`` opcode
  with the instruction K of that path (m16n8k16 for f16 / bf16, m16n8k8 for tf32: the wgmma
  m64nNk16 / k8 of the wgmma path computes the same per-instruction sum); fp8 on the mma.sync path
  -> f16 m16n8k16 on the fp8 values (Triton converts them to f16, exactly); fp8 on the wgmma path
  -> the native wgmma fp8 instruction, with ``promote_every = max_num_imprecise_acc``.
"""

from __future__ import annotations

import json
import os

import numpy as np

from warpsim.hw.golden import open_golden

from warpsim.isa.types import TYPES
from warpsim.isa.codec import to_values

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
FILES = ("gemm_sm90_mma.npz", "gemm_sm90_triton.npz")


def load():
    """(cases, arrays): every case of both files, and one lookup of all arrays by key."""
    cases, arrays = [], {}
    for f in FILES:
        z = open_golden(os.path.join(GOLDEN, f))
        man = json.loads(str(z["manifest"]))
        for c in man["cases"]:
            c = dict(c, file=f)
            c["set_meta"] = man["sets"][c["set"]]
            cases.append(c)
        for k in z.files:
            if k != "manifest":
                arrays[(f, k) if k.startswith("case") else k] = z
    return cases, arrays


def _vals(bits, tname):
    return to_values(np.asarray(bits, dtype=np.uint64), TYPES[tname])


_TRITON_OP = {
    "f16": "mma.sync.aligned.m16n8k16.row.col.{acc}.f16.f16.{acc}",
    "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
}
_WGMMA_FP8 = "wgmma.mma_async.sync.aligned.m64n{n}k32.{acc}.{a}.{b}"


def triton_fp8_k_order(K):
    """Triton 3.6's fp8 mma.sync path: in every 32 k elements the first f16 m16n8k16 takes the k with
    (k // 2) % 2 == 0 (the low halves of each 4-element fp8 register), the second the others."""
    t = np.arange(32)
    blk = np.concatenate([t[(t // 2) % 2 == 0], t[(t // 2) % 2 == 1]])
    return (np.arange(K // 32)[:, None] * 32 + blk).ravel()


def gemm_args(case, arrays):
    """(A, B, C, keyword arguments of warpsim.gemm) of a case; the instruction may be a wgmma opcode."""
    s = case["set"]
    sm = case["set_meta"]
    get = lambda key: arrays[key][key]
    A, B = get(f"s.{s}.A"), get(f"s.{s}.B")
    C = get(f"s.{s}.C_{case['ctype']}")
    if case["source"] == "mma_kernel":
        kw = dict(instruction=case["instruction"], promote_every=case["promote_every"])
        from warpsim import parse
        ins = parse(case["instruction"])
        return _vals(A, ins.atype), _vals(B, ins.btype), _vals(C, ins.ctype), kw
    t, acc = case["elem"], case["acc"]
    Av, Bv, Cv = _vals(A, sm["atype"]), _vals(B, sm["btype"]), _vals(C, acc)
    if t in _TRITON_OP:
        return Av, Bv, Cv, dict(instruction=_TRITON_OP[t].format(acc=acc))
    if case["path"] == "mma":          # fp8 converted to f16 (exact), f16 m16n8k16, k interleaved
        return Av.astype(np.float16), Bv.astype(np.float16), Cv, dict(
            instruction=_TRITON_OP["f16"].format(acc=acc), k_order=triton_fp8_k_order(Av.shape[1]))
    imp = case["max_num_imprecise_acc"]
    return Av, Bv, Cv, dict(instruction=_WGMMA_FP8.format(n=case["BLOCK_N"], acc=acc, a=t, b=t),
                            promote_every=imp)


def expected(case, arrays):
    key = (case["file"], case["key"] + ".D")
    return arrays[key][case["key"] + ".D"]


def bits(D):
    D = np.asarray(D)
    if D.dtype.kind in "ub":
        return D
    return D.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[D.dtype.itemsize])
