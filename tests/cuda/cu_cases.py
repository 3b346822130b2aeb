"""The CUDA C++ launches whose H100 outputs are committed (tests/golden/cuda_sm90.npz).

Each case: the source in kernels/, nvcc/NVRTC options, the kernel's name (a name expression for
templates), grid, block, the arguments (numpy arrays and typed scalars), which arrays are outputs,
and ``__constant__`` / ``__device__`` variables to set before the launch.
"""

import numpy as np

SEED = 3131
HERE_KERNELS = "kernels"


def _f16(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def cases():
    """name -> dict(src, options, kernel, grid, block, args, outputs, globals)."""
    rng = np.random.default_rng(SEED)
    c = {}
    x = (rng.standard_normal(5000) * 3).astype(np.float32)
    c["reduction"] = dict(src="reduction.cu", kernel="block_sum", grid=6, block=256,
                          args=[x, np.zeros(6, np.float32), np.int32(x.size)], outputs=[1])
    s = rng.standard_normal(700).astype(np.float32)
    c["scan"] = dict(src="scan.cu", kernel="block_scan", grid=3, block=256,
                     args=[s, np.zeros_like(s), np.int32(s.size)], outputs=[1])
    si = rng.integers(0, 100, 600).astype(np.int32)
    c["scan_exclusive_int"] = dict(src="scan.cu", kernel="block_scan_exclusive_int", grid=3, block=256,
                                   args=[si, np.zeros_like(si), np.int32(si.size)], outputs=[1])
    t = rng.standard_normal((40, 70)).astype(np.float32)
    c["transpose"] = dict(src="transpose.cu", kernel="transpose_tiled", grid=(3, 2), block=(32, 8),
                          args=[np.zeros((70, 40), np.float32), t, np.int32(40), np.int32(70)], outputs=[0])
    h = rng.integers(0, 256, 6000).astype(np.uint8)
    h[:500] = 7                              # a hot bin: many shared atomics on one address
    c["histogram"] = dict(src="histogram.cu", kernel="histogram256", grid=4, block=256,
                          args=[h, np.zeros(256, np.uint32), np.int32(h.size)], outputs=[1])
    M, N, K = 48, 40, 56
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = rng.standard_normal((M, N)).astype(np.float32)
    c["matmul_tiled"] = dict(src="matmul_tiled.cu", kernel="matmul_tiled", grid=(3, 3), block=(16, 16),
                             args=[A, B, C, np.int32(M), np.int32(N), np.int32(K), np.float32(1.5),
                                   np.float32(-0.25)], outputs=[2])
    M, N, K = 32, 48, 64
    Ah, Bh = _f16(rng, (M, K)), _f16(rng, (N, K))
    Cw = rng.standard_normal((M, N)).astype(np.float32)
    c["wmma_gemm"] = dict(src="wmma_gemm.cu", kernel="wmma_gemm", grid=2, block=96,
                          args=[Ah, Bh, Cw, np.zeros((M, N), np.float32), np.int32(M), np.int32(N), np.int32(K)],
                          outputs=[3])
    M, N, K = 32, 32, 64
    Am, Bm = _f16(rng, (M, K), 2.0), _f16(rng, (N, K), 2.0)
    c["mma_gemm"] = dict(src="mma_gemm.cu", kernel="mma_gemm", grid=2, block=128,
                         args=[Am, Bm, np.zeros((M, N), np.float32), np.int32(M), np.int32(N), np.int32(K)],
                         outputs=[2])
    rows, cols = 4, 300
    sx = (rng.standard_normal((rows, cols)) * 5).astype(np.float32)
    sx[1, 17] = 90.0                          # one dominant logit
    for name, opts in (("softmax", ()), ("softmax_fast_math", ("--use_fast_math",))):
        c[name] = dict(src="softmax.cu", options=opts, kernel="softmax_rows", grid=rows, block=128,
                       args=[sx, np.zeros_like(sx), np.int32(cols)], outputs=[1])
    coeffs = rng.standard_normal(8).astype(np.float32)
    px = rng.uniform(-2, 2, 300).astype(np.float32)
    c["horner_f32"] = dict(src="const_template.cu", kernel="horner<float, 7>", grid=3, block=128,
                           args=[px, np.zeros_like(px), np.int32(px.size)], outputs=[1],
                           globals={"poly_coeffs": coeffs, "evaluated": np.array([5], np.uint32)},
                           read_globals=["evaluated"])
    pd = rng.uniform(-3, 3, 200)
    c["horner_f64"] = dict(src="const_template.cu", kernel="horner<double, 3>", grid=2, block=128,
                           args=[pd, np.zeros_like(pd), np.int32(pd.size)], outputs=[1],
                           globals={"poly_coeffs": coeffs, "evaluated": np.array([0], np.uint32)},
                           read_globals=["evaluated"])
    # .sat on float destinations (what nvcc's expf runs), one word per thread: special and edge values
    edge32 = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x3F000000, 0x3F7FFFFF,
                       0x3F800000, 0x3F800001, 0x40000000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                       0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF, 0xBD9479D5, 0xBF800000, 0x33800000, 0x3F7FFFF0],
                      np.uint32)
    w32 = np.concatenate([edge32, rng.integers(0, 2**32, 128 - edge32.size, dtype=np.uint64).astype(np.uint32)])
    edge64 = np.array([0, 1 << 63, 1, 0x3FF0000000000001, 0x3FEFFFFFFFFFFFFF, 0x3FEFFFFFF0000000, 0x3FEFFFFFF8000000,
                       0x36A0000000000000, 0x3690000000000000, 0xB690000000000000, 0x7FF0000000000000,
                       0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 0x47EFFFFFF0000000,
                       0x3FE0000000000000], np.uint64)
    w64 = np.concatenate([edge64, rng.integers(0, 2**63, 128 - edge64.size, dtype=np.uint64) * 2 + 1])
    c["cvt_sat"] = dict(src="cvt_sat.cu", kernel="cvt_sat", grid=1, block=128,
                        args=[w32, w64, np.zeros(128, np.uint32), np.zeros(128, np.uint32), np.zeros(128, np.uint32),
                              np.zeros(128, np.uint16), np.int32(128)], outputs=[2, 3, 4, 5])
    for v in c.values():
        v.setdefault("options", ())
        v.setdefault("globals", {})
        v.setdefault("read_globals", [])
    return c


#: the mangled names nvcc 13.0 gives the template instantiations (what NVRTC's name expressions lower to)
MANGLED = {"horner<float, 7>": "_Z6hornerIfLi7EEvPKT_PS0_i", "horner<double, 3>": "_Z6hornerIdLi3EEvPKT_PS0_i"}
