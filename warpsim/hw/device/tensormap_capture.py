"""Device script: CUtensorMaps encoded by the CUDA driver (cuTensorMapEncodeTiled) on an H100.

Run on a machine with a GPU and CUDA 13 (no warpsim needed there):
    OUT=/some/dir python3 warpsim/hw/device/tensormap_capture.py
Writes $OUT/tensormaps.npz: per case the arguments, the CUresult and the 128 bytes (zeros when
the call failed).  Cases: one-factor-at-a-time variations of a base descriptor (to read off
the byte layout field by field) plus a seeded random grid including invalid arguments.
Uses ctypes on libcuda.so.1 (a context is made with cuDevicePrimaryCtxRetain); no memory is
allocated: the global address is a number (the encoder does not dereference it).
"""

import ctypes
import os
import sys
import time

import numpy as np

if __name__ != "__main__":   # it opens libcuda at once: a program, never a library module
    raise ImportError("tensormap_capture.py is a device script: run it with python3, do not import it")

OUT = os.environ.get("OUT", ".")
SEED = 2024
N_RANDOM = 700

cu = ctypes.CDLL("libcuda.so.1")
cu.cuTensorMapEncodeTiled.restype = ctypes.c_int
cu.cuTensorMapEncodeTiled.argtypes = [
    ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]


def check(r, what):
    if r != 0:
        sys.exit(f"{what} failed with CUresult {r}")


check(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
buf = (ctypes.c_uint8 * (128 + 64))()
tmap = (ctypes.addressof(buf) + 63) // 64 * 64     # 64-byte aligned


def encode(c):
    r = c["rank"]
    dims = (ctypes.c_uint64 * 8)(*c["dims"], 1, 1, 1)        # padded: rank 6 cases must not read past
    strides = (ctypes.c_uint64 * 8)(*c["strides"], 16, 16, 16, 16)
    box = (ctypes.c_uint32 * 8)(*c["box"], 1, 1, 1)
    es = (ctypes.c_uint32 * 8)(*c["es"], 1, 1, 1)
    ctypes.memset(tmap, 0, 128)
    res = cu.cuTensorMapEncodeTiled(ctypes.c_void_p(tmap), c["dtype"], r, ctypes.c_void_p(c["addr"]), dims, strides,
                                    box, es, c["interleave"], c["swizzle"], c["l2"], c["oob"])
    return res, np.frombuffer(ctypes.string_at(tmap, 128), dtype=np.uint8).copy()


BASE = dict(dtype=6, rank=2, addr=0x7F1234560000, dims=[1000, 300, 1, 1, 1], strides=[2048, 0, 0, 0],
            box=[64, 32, 1, 1, 1], es=[1, 1, 1, 1, 1], interleave=0, swizzle=0, l2=0, oob=0)
BASE5 = dict(BASE, rank=5, dims=[64, 5, 6, 7, 8], strides=[128, 128 * 5, 128 * 30, 128 * 210],
             box=[32, 2, 3, 4, 5], es=[1, 1, 1, 1, 1])


def cases():
    yield dict(BASE)
    yield dict(BASE5)
    for bit in range(4, 57):                                 # global address bits
        yield dict(BASE, addr=BASE["addr"] ^ (1 << bit))
    for d in range(5):                                       # dims, strides, box, element strides per dimension
        for v in (1, 2, 3, 255, 256, 4096, 65535, 65536, 1 << 20, (1 << 32) - 1, 1 << 32):
            c = dict(BASE5); c["dims"] = list(BASE5["dims"]); c["dims"][d] = v; yield c
        for v in (1, 2, 3, 7, 8, 64, 128, 255, 256):
            c = dict(BASE5); c["box"] = list(BASE5["box"]); c["box"][d] = v if d else max(16, v // 16 * 16); yield c
        for v in range(1, 10):
            c = dict(BASE5); c["es"] = list(BASE5["es"]); c["es"][d] = v; yield c
    for s in range(4):
        for v in (16, 32, 48, 4096, 1 << 20, 1 << 32, (1 << 40) - 16, 1 << 40, 8):
            c = dict(BASE5); c["strides"] = list(BASE5["strides"]); c["strides"][s] = v; yield c
    for dt in range(17):
        for oob in (0, 1):
            yield dict(BASE, dtype=dt, oob=oob, box=[64 if dt in (13, 14, 15) else 32, 32, 1, 1, 1],
                       dims=[1024, 300, 1, 1, 1])
    for r in range(0, 7):
        yield dict(BASE5, rank=r)
    for il in range(4):
        for sw in range(8):
            yield dict(BASE5, interleave=il, swizzle=sw, box=[16, 2, 3, 4, 5])
    for l2 in range(5):
        yield dict(BASE, l2=l2)
    rng = np.random.default_rng(SEED)
    esz = [1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 1, 1, 1]
    for _ in range(N_RANDOM):
        r = int(rng.integers(1, 6))
        dt = int(rng.integers(0, 16))
        e = esz[dt]
        dims = [int(rng.choice([1, 7, 64, 100, 1000, 65536, 1 << 31])) for _ in range(5)]
        strides, s = [], dims[0] * e
        for i in range(4):
            s = -(-s // 16) * 16 + int(rng.choice([0, 0, 16, 8, 32]))
            strides.append(s); s = s * dims[i + 1] if s * dims[i + 1] < 1 << 41 else s
        box = [int(rng.choice([1, 2, 8, 16, 32, 64, 128, 256, 300])) for _ in range(5)]
        yield dict(dtype=dt, rank=r, addr=int(rng.integers(1, 1 << 40)) * 16 + int(rng.choice([0, 0, 0, 8])),
                   dims=dims, strides=strides, box=box, es=[int(rng.integers(1, 10)) for _ in range(5)],
                   interleave=int(rng.choice([0, 0, 0, 1, 2])), swizzle=int(rng.integers(0, 7)),
                   l2=int(rng.integers(0, 4)), oob=int(rng.choice([0, 0, 1])))


t0 = time.time()
rows = list(cases())
res, raw = zip(*(encode(c) for c in rows))
np.savez_compressed(
    os.path.join(OUT, "tensormaps.npz"),
    dtype=np.array([c["dtype"] for c in rows], np.int32), rank=np.array([c["rank"] for c in rows], np.int32),
    addr=np.array([c["addr"] for c in rows], np.uint64), dims=np.array([c["dims"] for c in rows], np.uint64),
    strides=np.array([c["strides"] for c in rows], np.uint64), box=np.array([c["box"] for c in rows], np.uint32),
    es=np.array([c["es"] for c in rows], np.uint32), interleave=np.array([c["interleave"] for c in rows], np.int32),
    swizzle=np.array([c["swizzle"] for c in rows], np.int32), l2=np.array([c["l2"] for c in rows], np.int32),
    oob=np.array([c["oob"] for c in rows], np.int32), result=np.array(res, np.int32), bytes=np.stack(raw),
    seed=np.int64(SEED))
print(f"{len(rows)} tensormaps, {sum(r == 0 for r in res)} accepted, {time.time() - t0:.1f} s")
