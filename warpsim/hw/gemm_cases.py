"""The whole-GEMM capture plan: seeded input sets (raw bits), packed mma-kernel cases, CUDA source.

    python3 -m warpsim.hw.gemm_cases OUTDIR     # payload.npz + gemm_mma.cu for warpsim/hw/device/gemm.py
    python3 -m warpsim.hw.gemm_cases cutlass3|cutlass3-more|cutlass2 OUTDIR   # CUTLASS launch inputs

The committed GEMM corpora keep the GPU's D and regenerate these sets through :func:`set_arrays`.
"""
import json
import os
import sys

import ml_dtypes
import numpy as np

from ..isa.catalog import BY_OPCODE
from ..isa.types import TYPES
from .gemm import gemm_kernel_source, pack_tiles
from .inputs import float_elements, float_specials, int_elements

SETS = {}


def fl(t, dist, role, rng, n, K):
    t = TYPES[t]
    if dist == "special":       # ordinary values with a few specials and subnormals sprinkled in
        p = float_elements(t, "normal", role, rng, n)
        sp = float_specials(t)
        pick = rng.random(n) < 1.0 / (4 * K)
        p[pick] = sp[rng.integers(0, len(sp), size=int(pick.sum()))]
        tiny = float_elements(t, "tiny", role, rng, n)
        pick = rng.random(n) < 0.05
        p[pick] = tiny[pick]
        return p
    return float_elements(t, dist, role, rng, n)


def fset(name, ta, tb, dist, M, N, K, seed, ctypes=("f32",), sparse=False):
    rng = np.random.default_rng(seed)
    A = fl(ta, dist, "a", rng, M * K, K).reshape(M, K)
    B = fl(tb, dist, "b", rng, K * N, K).reshape(K, N)
    if sparse:   # 2:4: keep 2 (sometimes 1 or 0) random positions of every group of 4
        g = A.reshape(M, K // 4, 4)
        keep = np.argsort(rng.random((M, K // 4, 4)), axis=-1)[..., :2]
        mask = np.zeros(g.shape, bool)
        np.put_along_axis(mask, keep, True, axis=-1)
        mask &= rng.random(g.shape) < 0.9
        g[~mask] = 0
        A = g.reshape(M, K)
    s = dict(A=A, B=B, atype=ta, btype=tb, dist=dist, M=M, N=N, K=K, seed=seed)
    for ct in ctypes:
        s["C_" + ct] = fl(ct, dist, "c", rng, M * N, K).reshape(M, N)
    SETS[name] = s


def iset(name, ta, tb, dist, M, N, K, seed, cdist=None):
    rng = np.random.default_rng(seed)
    A = int_elements(TYPES[ta], dist, "a", rng, M * K).reshape(M, K)
    B = int_elements(TYPES[tb], dist, "b", rng, K * N).reshape(K, N)
    C = int_elements(TYPES["s32"], cdist or dist, "c", rng, M * N).reshape(M, N)
    SETS[name] = dict(A=A, B=B, C_s32=C, atype=ta, btype=tb, dist=dist, M=M, N=N, K=K, seed=seed)


seed = 1000
for t, sets in {"f16": [("normal", 1024), ("mixed", 256), ("spread", 256), ("special", 256)],
                "bf16": [("normal", 1024), ("mixed", 256), ("spread", 256), ("special", 256)],
                "tf32": [("normal", 512), ("mixed", 256), ("spread", 256), ("special", 256)],
                "e4m3": [("normal", 1024), ("spread", 256), ("special", 256)],
                "e5m2": [("normal", 1024), ("spread", 256), ("special", 256)]}.items():
    for dist, K in sets:
        seed += 1
        fset(f"{t}_{dist}_k{K}", t, t, dist, 64, 64, K, seed, ctypes=("f32", "f16"))
fset("f16_normal_k4096", "f16", "f16", "normal", 64, 16, 4096, 2001, ctypes=("f32", "f16"))
fset("e4m3_normal_k4096", "e4m3", "e4m3", "normal", 64, 16, 4096, 2002, ctypes=("f32", "f16"))
fset("f16sp_normal_k256", "f16", "f16", "normal", 64, 64, 256, 2003, ctypes=("f32",), sparse=True)
fset("e4m3sp_normal_k256", "e4m3", "e4m3", "normal", 64, 64, 256, 2004, ctypes=("f32",), sparse=True)
fset("f64_normal_k256", "f64", "f64", "normal", 64, 64, 256, 2005, ctypes=("f64",))
fset("f64_special_k256", "f64", "f64", "special", 64, 64, 256, 2006, ctypes=("f64",))
iset("s8_uniform_k1024", "s8", "s8", "uniform", 64, 64, 1024, 2007, cdist="near_limit")
iset("s8_extreme_k1024", "s8", "s8", "extreme", 64, 64, 1024, 2008, cdist="near_limit")
iset("u4s4_uniform_k1024", "u4", "s4", "uniform", 64, 64, 1024, 2009, cdist="near_limit")
iset("b1_uniform_k1024", "b1", "b1", "uniform", 64, 64, 1024, 2010)

# --- (a) the tiled mma.sync kernel: cases ---
F32 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
MMA_CASES = [
    (F32, ["f16_normal_k1024", "f16_mixed_k256", "f16_spread_k256", "f16_special_k256", "f16_normal_k4096"], 0, 0),
    ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", ["f16_normal_k1024", "f16_spread_k256", "f16_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", ["f16_normal_k1024", "f16_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", ["bf16_normal_k1024", "bf16_spread_k256", "bf16_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", ["tf32_normal_k512", "tf32_spread_k256", "tf32_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", ["tf32_normal_k512"], 0, 0),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", ["e4m3_normal_k1024", "e4m3_spread_k256", "e4m3_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k16.row.col.f16.e4m3.e4m3.f16", ["e4m3_normal_k1024", "e4m3_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", ["e5m2_normal_k1024"], 0, 0),
    ("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", ["s8_uniform_k1024", "s8_extreme_k1024"], 0, 0),
    ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", ["s8_extreme_k1024"], 0, 0),
    ("mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.s4.s32", ["u4s4_uniform_k1024"], 0, 0),
    ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", ["b1_uniform_k1024"], 0, 0),
    ("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", ["f64_normal_k256", "f64_special_k256"], 0, 0),
    ("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64", ["f64_normal_k256"], 0, 0),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", ["f16sp_normal_k256"], 0, 0),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", ["f16sp_normal_k256"], 1, 0),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", ["f16sp_normal_k256"], 2, 0),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32", ["e4m3sp_normal_k256"], 0, 0),
    # promote_every (= split_k serial) variant: partial chains from zero, f32 __fadd_rn into the main accumulator
    (F32, ["f16_normal_k1024", "f16_special_k256"], 0, 4),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", ["e4m3_normal_k1024"], 0, 2),
]


def as_values(bits, t):
    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
          "f32": np.float32, "tf32": np.float32, "f64": np.float64}[t]
    raw = {2: np.uint16, 1: np.uint8, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
    return bits.astype(raw).view(dt)


def set_arrays(name: str) -> dict:
    """Input set ``name`` as raw element bits in its storage dtype: ``A``, ``B``, ``C_<type>``
    (registered with :mod:`warpsim.hw.golden` as ``gemm_set``)."""
    s = SETS[name]
    out = {}
    for key in s:
        if key == "A" or key == "B" or key.startswith("C_"):
            t = TYPES[s["atype"] if key == "A" else s["btype"] if key == "B" else key[2:]]
            dt = {1: np.uint8, 4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits]
            out[key] = s[key].astype(dt)
    return out


def pack_case(op, sname, sel):
    s = SETS[sname]
    return pack_tiles(op, s["A"], s["B"], s["C_" + BY_OPCODE[op].ctype], sel)


#: CUTLASS 3 Hopper GEMM launches (warpsim/hw/device/cutlass3.py): A (M x K, row-major) and B
#: (N x K, K-major) from the corpus generators, C (M x N, f32), D = alpha * A @ B^T + beta * C in f32.
CUTLASS3_CASES = [
    dict(dtype="f16", M=256, N=256, K=256, seed=3101, alpha=1.0, beta=1.0),
    dict(dtype="f16", M=256, N=128, K=512, seed=3102, alpha=1.0, beta=0.0),
    dict(dtype="e4m3", M=256, N=256, K=256, seed=3103, alpha=1.0, beta=1.0),
    dict(dtype="e4m3", M=256, N=128, K=512, seed=3104, alpha=1.0, beta=0.0),
]


#: CUTLASS 3 launches of the other Hopper kernel shapes (issue 33): the ping-pong kernel (each consumer
#: warpgroup owns a 64 x 128 tile, the two alternate on the tensor cores) and fused epilogues
#: (``LinCombPerRowBiasEltAct`` / ``LinCombPerColBiasEltAct``: bias + activation as Sm90 EVT nodes).
#: ``kernel`` names an entry of warpsim/hw/device/cutlass3.py's KERNELS; ``sm_count`` caps the
#: persistent grid so each CTA walks several tiles; ``bias`` is the f32 bias vector's length (M per
#: row, N per column); ``d`` the output element type.
CUTLASS3_MORE_CASES = [
    dict(kernel="pingpong", dtype="f16", M=256, N=256, K=128, seed=3201, alpha=1.0, beta=1.0, sm_count=2, d="f32"),
    dict(kernel="rowbias_relu", dtype="f16", M=256, N=256, K=128, seed=3202, alpha=1.5, beta=-0.5, sm_count=2,
         bias=256, d="f16"),
    dict(kernel="pingpong_colbias_gelu", dtype="f16", M=256, N=128, K=128, seed=3203, alpha=0.015625, beta=0.25,
         sm_count=2, bias=128, d="f32"),
]


def cutlass3_inputs(dtype: str, M: int, N: int, K: int, seed: int, bias: int = 0) -> dict:
    """Raw element bits of one CUTLASS 3 case: ``A`` (M, K), ``B`` (N, K), ``C`` (M, N) f32 words and,
    with ``bias`` > 0, ``bias`` (that many f32 words, drawn after C so the other streams are unchanged).
    Registered with :mod:`warpsim.hw.golden` as ``cutlass3_inputs``."""
    rng = np.random.default_rng(seed)
    t = TYPES[dtype]
    dt = np.uint16 if t.bits == 16 else np.uint8
    A = float_elements(t, "normal", "a", rng, M * K).reshape(M, K).astype(dt)
    B = float_elements(t, "normal", "b", rng, N * K).reshape(N, K).astype(dt)
    C = float_elements(TYPES["f32"], "normal", "c", rng, M * N).reshape(M, N).astype(np.uint32)
    out = {"A": A, "B": B, "C": C}
    if bias:
        out["bias"] = float_elements(TYPES["f32"], "normal", "c", rng, bias).astype(np.uint32)
    return out


def cutlass3_input_args(case: dict) -> dict:
    """The :func:`cutlass3_inputs` arguments of a case (``bias`` only where the case has one)."""
    return {k: case[k] for k in ("dtype", "M", "N", "K", "seed", "bias") if k in case}


#: CUTLASS 2.x sm_80 tensor-op GEMM launches (warpsim/hw/device/cutlass2.py, cutlass2_gemm.cu): the
#: same operands as CUTLASS3_CASES (inputs from ``cutlass3_inputs``), f16 only; case 1 has partial
#: tiles in M, N and K and a non-trivial epilogue.
CUTLASS2_CASES = [
    dict(dtype="f16", M=256, N=256, K=128, seed=2101, alpha=1.0, beta=1.0),
    dict(dtype="f16", M=200, N=136, K=72, seed=2102, alpha=1.5, beta=-0.5),
]


def write_cutlass3_inputs(out, cases=None):
    """Inputs of every CUTLASS3_CASES (or ``cases``) entry as raw files for warpsim/hw/device/cutlass3.py
    (and cutlass2.py)."""
    cases = CUTLASS3_CASES if cases is None else cases
    os.makedirs(out, exist_ok=True)
    for i, case in enumerate(cases):
        d = os.path.join(out, f"case{i}")
        os.makedirs(d, exist_ok=True)
        for k, v in cutlass3_inputs(**cutlass3_input_args(case)).items():
            v.tofile(os.path.join(d, f"{k}.bin"))
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


if __name__ == "__main__" and sys.argv[1:2] == ["cutlass3"]:
    write_cutlass3_inputs(sys.argv[2])
elif __name__ == "__main__" and sys.argv[1:2] == ["cutlass3-more"]:
    write_cutlass3_inputs(sys.argv[2], CUTLASS3_MORE_CASES)
elif __name__ == "__main__" and sys.argv[1:2] == ["cutlass2"]:
    write_cutlass3_inputs(sys.argv[2], CUTLASS2_CASES)
elif __name__ == "__main__":
    OUT = sys.argv[1] if len(sys.argv) > 1 else "cap"
    os.makedirs(OUT, exist_ok=True)
    kcases = []
    arrays = {}
    runs = []
    for op, snames, sel, promote in MMA_CASES:
        kidx = len(kcases)
        kcases.append((op, sel, promote))
        for sn in snames:
            pc = pack_case(op, sn, sel)
            r = len(runs)
            for x in "abce":
                arrays[f"m{r}.{x}"] = np.ascontiguousarray(pc[x], dtype=np.uint32)
            runs.append(dict(kernel=kidx, opcode=op, selector=sel, promote=promote, set=sn, Tm=pc["Tm"], Tn=pc["Tn"], S=pc["S"],
                             dwords=BY_OPCODE[op].words("d")))
    src = gemm_kernel_source(kcases)
    open(os.path.join(OUT, "gemm_mma.cu"), "w").write(src)
    for name in SETS:
        for key, v in set_arrays(name).items():
            arrays[f"s.{name}.{key}"] = v
    meta = {"runs": runs, "sets": {n: {k: v for k, v in s.items() if not (k in "AB" or k.startswith("C_"))} for n, s in SETS.items()}}
    np.savez_compressed(os.path.join(OUT, "payload.npz"), meta=np.array(json.dumps(meta)), **arrays)
    print(len(runs), "mma runs,", len(SETS), "sets")

