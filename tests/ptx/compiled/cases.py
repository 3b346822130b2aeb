"""The launches of the committed PTX kernels, shared by the H100 capture (warpsim/hw/device/compiled_kernels.py) and the replay tests: seeded inputs, geometry and arguments (data only)."""

import struct
import zlib

import numpy as np

from triton_sources import KERNELS

SEED = 20


def _triton_case(name, k):
    def build(rng):
        M, N, K = k["mnk"]
        if k["a"] == "s8":
            a = rng.integers(-128, 128, (M, K)).astype(np.int8)
            b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        else:     # raw words of the element type, from normal values
            import ml_dtypes
            dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
                  "e4m3": ml_dtypes.float8_e4m3fn}[k["a"]]
            u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[np.dtype(dt).itemsize]
            a = rng.standard_normal((M, K)).astype(dt).view(u)
            b = rng.standard_normal((K, N)).astype(dt).view(u)
        c = np.zeros((M, N), {"f32": np.uint32, "f16": np.uint16, "s32": np.uint32}[k["out"]])
        bufs = {"a": a, "b": b, "c": c, "scratch0": np.zeros(64, np.uint8), "scratch1": np.zeros(64, np.uint8)}
        args = lambda ad: [ad["a"], ad["b"], ad["c"], M, N, K, ad["scratch0"], ad["scratch1"]]
        grid = (-(-M // k["bm"]), -(-N // k["bn"]), 1)
        return bufs, args, grid, (k["warps"] * 32, 1, 1), k["shared"], ["c"]
    return dict(ptx=f"{name}.ptx", entry="matmul", build=build)


def _wmma(rng):
    M, N, K, Mp, Np = 40, 40, 48, 48, 48
    a = np.zeros((Mp, K), np.float16)
    a[:M] = rng.standard_normal((M, K))
    b = np.zeros((K, Np), np.float16)
    b[:, :N] = rng.standard_normal((K, N))
    bufs = {"a": a.view(np.uint16), "b": b.view(np.uint16), "c": np.zeros((M, N), np.uint32),
            "counter": np.zeros(1, np.uint32)}
    args = lambda ad: [ad["a"], ad["b"], ad["c"], M, N, K, Np, ad["counter"]]
    return bufs, args, (2, Mp // 16, 1), (64, 1, 1), 0, ["c", "counter"]


def _reduce(rng):
    n = 3000
    bufs = {"x": rng.integers(-10**6, 10**6, n).astype(np.int32), "sum": np.zeros(1, np.int64),
            "max": np.full(1, -2**31, np.int32), "neg": np.zeros(2, np.uint32), "part": np.zeros(8, np.uint32)}
    args = lambda ad: [ad["x"], n, ad["sum"], ad["max"], ad["neg"], ad["part"]]
    return bufs, args, (2, 1, 1), (128, 1, 1), 0, ["sum", "max", "neg", "part"]


def _simt(rng):
    n = 300
    bufs = {"x": rng.integers(0, 1 << 15, n).astype(np.int32), "out": np.zeros(n, np.int32),
            "stats": np.array([0, 0xFFFFFFFF, 0, 0, 0, 0, 0, 0], np.uint32)}
    args = lambda ad: [struct.pack("<QQQii", ad["x"], ad["out"], ad["stats"], n, 7)]   # struct Params
    return bufs, args, (3, 1, 1), (128, 1, 1), 0, ["out", "stats"]


CASES = {name: _triton_case(name, k) for name, k in KERNELS.items()}
for variant in ("", "_lineinfo"):
    CASES["wmma_gemm_epilogue" + variant] = dict(ptx=f"wmma_gemm_epilogue{variant}.ptx", entry="wmma_gemm_epilogue",
                                                 build=_wmma)
for variant in ("", "_G"):
    CASES["warp_reduce" + variant] = dict(ptx=f"warp_reduce{variant}.ptx", entry="warp_reduce", build=_reduce)
    CASES["simt_calls" + variant] = dict(ptx=f"simt_calls{variant}.ptx", entry="simt_calls", build=_simt)


def inputs(name):
    """(buffers, args(addresses) -> kernel args, grid, block, dynamic shared bytes, output names)."""
    base = name.removesuffix("_G").removesuffix("_lineinfo")        # the builds of one source share inputs
    return CASES[name]["build"](np.random.default_rng([SEED, zlib.crc32(base.encode())]))
