"""CUDA's math library in kernels (issue 29 item 3): every launch whose GPU words are committed in
tests/golden/cuda_math_sm90.npz.

Each function of kernels/math_funcs.cu runs over one operand array of its type (special values and
edges first, then random words, then ordinary values), once per build: the default options,
--use_fast_math, --ftz=true alone and --prec-div=false --prec-sqrt=false.  Same case format as
cu_cases.py, so warpsim.hw.offline.cuda_sources prepares and merges both.
"""

import re
from pathlib import Path

import numpy as np

SEED = 2929
SRC = "math_funcs.cu"
N = 512
#: build name -> nvcc options (spellings nvcc and NVRTC both accept)
BUILDS = {"default": (), "fast_math": ("--use_fast_math",), "ftz": ("--ftz=true",),
          "approx_div_sqrt": ("--prec-div=false", "--prec-sqrt=false")}


def kernels():
    """Kernel name -> number of array operands (1 unary / packed, 2 binary), read from the source."""
    text = (Path(__file__).resolve().parent / "kernels" / SRC).read_text()
    return {m.group(2): 2 if m.group(1) == "BINARY" else 1
            for m in re.finditer(r"^(UNARY|BINARY|PAIRED)\((\w+),", text, re.M)}


def _edges_f32():
    pi = np.float32(np.pi)
    w = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
         0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0x3F800000, 0xBF800000,
         0x3F7FFFFF, 0x3F800001, 0x33800000, 0x34000000, 0xB3800000, 0x38000000, 0x1F800000, 0x5F800000]
    vals = [0.5, -0.5, 2.0, -2.0, 3.0, 10.0, 0.1, -0.1, 1e-3, 1e-10, 1e-20, 1e-38, 1e10, 1e20, 1e30, -1e30,
            88.72283, 88.7228394, 89.0, -87.33654, -87.5, -103.27893, -103.97208, -104.0, 127.0, 127.99999, 128.0,
            -126.0, -126.5, -149.0, -150.0, -151.0, 38.5318, -37.9297, -45.0, 9.01, -9.01, 8.0, 0.55, 0.6, -0.6,
            15.0, 41.0, 0.0001, 0.004, 0.9999, 1.0001, -0.9999, 0.7071068, 1.4142135, 4.0, 0.25, 65504.0,
            3.9, 3.92, -3.92, 10.05, 1e-6, 0.0625]
    turns = [1, 2, 3, 4, 7, 100, 1000, 12345, 33000, 48039, 105614, 105616, 1e6, 1e7, 2**23, 2**24, 1e9, 1e15,
             1e20, 1e30, 1e38]
    vals += [float(np.float32(k) * pi) for k in turns] + [float(np.float32(k) * pi / 2) for k in turns[:12]]
    vals += [float(np.float32(k + 0.5) * pi) for k in turns[:10]] + [1e38, 3.4e38, 1.7e38, 2**64, 2**100]
    v = np.array(vals, np.float32)
    return np.concatenate([np.array(w, np.uint64).astype(np.uint32).view(np.float32), v, -v])


def _ordinary(rng, n, lo, hi):
    return (rng.choice([-1.0, 1.0], n) * 2.0 ** rng.uniform(lo, hi, n)).astype(np.float32)


def operands_f32(rng, n=N):
    e = _edges_f32()
    rest = n - e.size
    words = rng.integers(0, 2**32, rest // 3, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ordinary = _ordinary(rng, rest - words.size - rest // 6, -24, 24)
    small = rng.uniform(-12, 12, rest // 6).astype(np.float32)
    return np.concatenate([e, words, ordinary, small])


def operands_16(rng, dtype, n=N):
    """f16 (numpy float16) or bf16 (as uint16 words, the upper half of an f32)."""
    if dtype == "f16":
        edges = np.array([0, 0x8000, 1, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00,
                          0x7C01, 0x3C00, 0xBC00, 0x3BFF, 0x3C01, 0x4900, 0x4980, 0xC980, 0xCA00, 0xCC00, 0x4200,
                          0x4248, 0x5A48, 0x7248, 0x1400, 0x2000], np.uint16)
        vals = _ordinary(rng, n // 3, -14, 15).astype(np.float16).view(np.uint16)
    else:
        edges = np.array([0, 0x8000, 1, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0,
                          0x7F81, 0x3F80, 0xBF80, 0x3F7F, 0x3F81, 0x42B1, 0x42B2, 0xC2AE, 0xC2CE, 0xC2D0, 0x4049,
                          0x40C9, 0x4149, 0x4716, 0x3C00, 0x3000], np.uint16)
        vals = (_ordinary(rng, n // 3, -30, 30).view(np.uint32) >> 16).astype(np.uint16)
    small = rng.uniform(-10, 10, n // 3).astype(np.float32)
    small = small.astype(np.float16).view(np.uint16) if dtype == "f16" else (small.view(np.uint32) >> 16).astype(
        np.uint16)
    words = rng.integers(0, 2**16, n - edges.size - vals.size - small.size).astype(np.uint16)
    out = np.concatenate([edges, vals, small, words])
    return out.view(np.float16) if dtype == "f16" else out


def operands_f64(rng, n=256):
    w = np.array([0, 1 << 63, 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
                  0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                  0x3FF0000000000000, 0xBFF0000000000000, 0x3FEFFFFFFFFFFFFF, 0x3FF0000000000001], np.uint64)
    vals = [0.5, 2.0, 1e-300, 1e300, 709.78, 709.79, -708.39, -745.1, -746.0, 1e-8, 0.1, 10.0, np.pi, np.pi / 2,
            3 * np.pi, 1e5 * np.pi, 1e15, 2.0 ** 60 * np.pi, 1e22, 1e300, 6381956970095103.0 * 2.0 ** 797]
    v = np.array(vals)
    e = np.concatenate([w.view(np.float64), v, -v])
    rest = n - e.size
    words = rng.integers(0, 2**64, rest // 3, dtype=np.uint64).view(np.float64)
    ordinary = rng.choice([-1.0, 1.0], rest - words.size) * 2.0 ** rng.uniform(-40, 40, rest - words.size)
    return np.concatenate([e, words, ordinary])


def operands():
    """Type prefix -> (x, z): the operand arrays every kernel of that type reads (z: binary ones)."""
    rng = np.random.default_rng(SEED)
    x = operands_f32(rng)
    z = np.concatenate([rng.permutation(x[:256]), _ordinary(rng, 128, -4, 4),
                        rng.uniform(-30, 30, 128).astype(np.float32)])
    return {"f": (x, z), "h": (operands_16(rng, "f16"), None), "b": (operands_16(rng, "bf16"), None),
            "d": (operands_f64(rng), None)}


def cases():
    """'build.kernel' -> dict(src, options, kernel, grid, block, args, outputs, globals, read_globals)."""
    ops = operands()
    c = {}
    for build, options in BUILDS.items():
        for kernel, arity in kernels().items():
            x, z = ops[kernel[0]]
            n = x.size
            threads = n // 2 if kernel.startswith(("h_h2", "b_h2")) else n
            args = [x, z, np.zeros_like(x), np.int32(n)] if arity == 2 else [x, np.zeros_like(x), np.int32(n)]
            c[f"{build}.{kernel}"] = dict(src=SRC, options=options, kernel=kernel, grid=(threads + 127) // 128,
                                          block=128, args=args, outputs=[len(args) - 2], globals={},
                                          read_globals=[])
    return c
