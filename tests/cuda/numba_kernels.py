"""numba-cuda kernels whose hardware outputs are committed (tests/golden/cuda_sm90.npz).

Plain ``numba.cuda`` code: the capture compiled each with ``numba.cuda.compile_ptx`` for sm_90 and
ran that PTX on an H100 through CuPy; the tests compile them through ``warpsim.cuda.jit``.
"""

import math

import numpy as np
from numba import cuda, float32, int32

STENCIL_WEIGHTS = np.array([[0.0625, 0.125, 0.0625],
                            [0.125, 0.25, 0.125],
                            [0.0625, 0.125, 0.0625]], dtype=np.float32)


@cuda.jit(device=True)
def scaled_exp(v, scale):
    return math.exp(v) * scale


def exp_elementwise_f32(x, y, scale):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = scaled_exp(x[i], scale)


def exp_elementwise_f64(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = math.exp(x[i]) - 0.5 * math.log1p(abs(x[i]))


def shared_reduce(x, partial):
    buf = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    buf[t] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = buf[0]


def atomic_histogram(values, bins, stats):
    i = cuda.grid(1)
    if i < values.size:
        v = values[i]
        cuda.atomic.add(bins, v % bins.size, 1)
        cuda.atomic.max(stats, 0, v)
        cuda.atomic.min(stats, 1, v)


def stencil_2d(src, dst):
    w = cuda.const.array_like(STENCIL_WEIGHTS)
    r, c = cuda.grid(2)
    rows, cols = src.shape
    if r < rows and c < cols:
        taps = cuda.local.array(9, float32)
        for dr in range(3):
            for dc in range(3):
                rr = min(max(r + dr - 1, 0), rows - 1)
                cc = min(max(c + dc - 1, 0), cols - 1)
                taps[dr * 3 + dc] = src[rr, cc]
        acc = float32(0.0)
        for k in range(9):
            acc += w[k // 3, k % 3] * taps[k]
        dst[r, c] = acc


def warp_fp16(x, y, out):
    i = cuda.grid(1)
    lane = cuda.laneid
    prod = cuda.fp16.hfma(x[i], y[i], x[i])
    v = float32(prod)
    off = 16
    while off > 0:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, off)
        off //= 2
    if lane == 0:
        out[i // 32] = v


#: name -> (function, numba signature)
KERNELS = {
    "exp_elementwise_f32": (exp_elementwise_f32, "void(float32[::1], float32[::1], float32)"),
    "exp_elementwise_f64": (exp_elementwise_f64, "void(float64[::1], float64[::1])"),
    "shared_reduce": (shared_reduce, "void(float32[::1], float32[::1])"),
    "atomic_histogram": (atomic_histogram, "void(int32[::1], int32[::1], int32[::1])"),
    "stencil_2d": (stencil_2d, "void(float32[:, ::1], float32[:, ::1])"),
    "warp_fp16": (warp_fp16, "void(float16[::1], float16[::1], float32[::1])"),
}


def inputs(seed=31):
    """The launches: name -> (args as numpy arrays and scalars, grid, block); index of outputs."""
    rng = np.random.default_rng(seed)
    x32 = (rng.standard_normal(1000) * 4).astype(np.float32)
    x64 = rng.standard_normal(777) * 6
    red = rng.standard_normal(1024).astype(np.float32)
    vals = rng.integers(-5000, 5000, 3000).astype(np.int32)
    img = rng.standard_normal((37, 45)).astype(np.float32)
    hx = (rng.standard_normal(256)).astype(np.float16)
    hy = (rng.standard_normal(256)).astype(np.float16)
    return {
        "exp_elementwise_f32": ([x32, np.zeros_like(x32), np.float32(0.75)], 8, 128, [1]),
        "exp_elementwise_f64": ([x64, np.zeros_like(x64)], 7, 128, [1]),
        "shared_reduce": ([red, np.zeros(8, np.float32)], 8, 128, [1]),
        "atomic_histogram": ([vals, np.zeros(61, np.int32), np.array([-2**31, 2**31 - 1], np.int32)], 12, 256,
                             [1, 2]),
        "stencil_2d": ([img, np.zeros_like(img)], (3, 3), (16, 16), [1]),
        "warp_fp16": ([hx, hy, np.zeros(8, np.float32)], 2, 128, [2]),
    }
