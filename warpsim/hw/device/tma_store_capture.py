"""Device script: TMA tensor stores / reductions, bulk reductions, tensormap.replace and im2col loads
captured on an H100 (issue 33).

    python -m warpsim.hw.tma_store_cases DIR && ptxas -arch=sm_90a DIR/tma_store.ptx -o DIR/tma_store.cubin
    OUT=/some/dir python3 warpsim/hw/device/tma_store_capture.py DIR

Reads DIR/tma_store_plan.json and DIR/tma_store.cubin (built here from the plan's PTX, so the GPU runs
exactly the statements warpsim replays), encodes each case's tensormap with the driver
(cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col), launches the case's entry with one CTA of 128
threads and keeps the bytes the GPU left: the whole global tensor after a store or reduction, the
destination buffer after a bulk reduction, the 128 tensormap bytes after ``tensormap.replace``, the
shared window and the mbarrier status after an im2col load.  Groups run in child processes; a case that
kills the CUDA context is recorded as crashed (result -1) and the next child goes on after it.
Writes $OUT/tma_stores.npz (the plan's JSON inside).  No warpsim import: this runs on a bare GPU machine.
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

OUT = os.environ.get("OUT", ".")
DEADLINE_S = float(os.environ.get("TMA_DEADLINE_S", "150"))
TMAP = np.dtype([("raw", np.uint8, (128,))])


def data_bytes(seed, n):
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def pad(v, n, fill):
    return list(v) + [fill] * (n - len(v))


def encode(cu, c, gptr):
    """(driver result, 128 tensormap bytes) for a tensor / im2col case."""
    buf = (ctypes.c_uint8 * 192)()
    hm = (ctypes.addressof(buf) + 63) // 64 * 64
    r = c["rank"]
    dims = (ctypes.c_uint64 * 5)(*pad(c["dims"], 5, 1))
    strides = (ctypes.c_uint64 * 4)(*pad(c["strides"], 4, 16))
    es = (ctypes.c_uint32 * 5)(*pad(c.get("es", [1] * r), 5, 1))
    if c["group"] == "im2col":
        res = cu.cuTensorMapEncodeIm2col(
            ctypes.c_void_p(hm), c["dtype"], r, ctypes.c_void_p(gptr), dims, strides,
            (ctypes.c_int * 3)(*pad(c["lower"], 3, 0)), (ctypes.c_int * 3)(*pad(c["upper"], 3, 0)),
            c["channels_per_pixel"], c["pixels_per_column"], es, 0, c["swizzle"], 0, 0)
    else:
        res = cu.cuTensorMapEncodeTiled(ctypes.c_void_p(hm), c["dtype"], r, ctypes.c_void_p(gptr), dims, strides,
                                        (ctypes.c_uint32 * 5)(*pad(c["box"], 5, 1)), es, 0, c["swizzle"], 0, 0)
    return int(res), np.frombuffer(ctypes.string_at(hm, 128), dtype=np.uint8).copy()


def run_case(cp, cu, mod, c, bases, keep):
    """Launch one case; returns a dict of arrays to save."""
    fn = mod.get_function(c["entry"])
    g = c["group"]
    if g == "tensor":
        data = cp.asarray(data_bytes(c["seed"], c["gbytes"]))
        res, tm = encode(cu, c, data.data.ptr)
        out = {"result": np.int32(res), "tensormap": tm, "gaddr": np.uint64(data.data.ptr)}
        if res == 0:
            src = cp.asarray(data_bytes(c["seed"] + 1, c["nbytes"]))
            co = cp.asarray(np.array(pad(c["coords"], 5, 0), np.int32))
            fn((1,), (128,), (np.frombuffer(tm.tobytes(), dtype=TMAP)[0], co, src, np.uint32(c["nbytes"])))
            cp.cuda.Device().synchronize()
            out["after"] = data.get()
        keep.append(data)
        return out
    if g == "bulk":
        dst = cp.asarray(data_bytes(c["seed"], c["nbytes"] + 256))
        src = cp.asarray(data_bytes(c["seed"] + 1, c["nbytes"]))
        ptr = dst.data.ptr + c["dst_off"]
        fn((1,), (128,), (np.uint64(ptr), src, np.uint32(c["nbytes"])))
        cp.cuda.Device().synchronize()
        return {"result": np.int32(0), "after": dst.get(), "gaddr": np.uint64(dst.data.ptr)}
    if g == "replace":
        tm = bases[c["base"]]
        buf = cp.zeros(256, cp.uint8)
        fn((1,), (32,), (np.frombuffer(tm.tobytes(), dtype=TMAP)[0], buf, np.uint64(c["value"] % (1 << 64))))
        cp.cuda.Device().synchronize()
        return {"result": np.int32(0), "after": buf.get()[:128]}
    # im2col
    data = cp.asarray(data_bytes(c["seed"], c["gbytes"]))
    res, tm = encode(cu, c, data.data.ptr)
    out = {"result": np.int32(res), "tensormap": tm, "gaddr": np.uint64(data.data.ptr)}
    if res == 0:
        co = cp.asarray(np.array(pad(c["coords"], 5, 0), np.int32))
        offs = cp.asarray(np.array(pad(c["offsets"], 4, 0), np.uint16))
        win = cp.zeros(16384, cp.uint8)
        st = cp.zeros(4, cp.int32)
        fn((1,), (128,), (np.frombuffer(tm.tobytes(), dtype=TMAP)[0], co, offs, np.uint32(c["nbytes"]), win, st))
        cp.cuda.Device().synchronize()
        out["after"], out["status"] = win.get(), st.get()
    keep.append(data)
    return out


def base_maps(cu, cp, bases, keep):
    """The driver's tensormaps that tensormap.replace starts from."""
    out = []
    for dtype, dims, strides, box, es, swz, fill in bases:
        g = cp.zeros(1 << 16, cp.uint8)
        keep.append(g)
        c = dict(group="tensor", rank=len(dims), dtype=dtype, dims=dims, strides=strides, box=box, es=es, swizzle=swz)
        buf = (ctypes.c_uint8 * 192)()
        hm = (ctypes.addressof(buf) + 63) // 64 * 64
        r = len(dims)
        res = cu.cuTensorMapEncodeTiled(ctypes.c_void_p(hm), dtype, r, ctypes.c_void_p(g.data.ptr),
                                        (ctypes.c_uint64 * 5)(*pad(dims, 5, 1)), (ctypes.c_uint64 * 4)(*pad(strides, 4, 16)),
                                        (ctypes.c_uint32 * 5)(*pad(box, 5, 1)), (ctypes.c_uint32 * 5)(*pad(es, 5, 1)),
                                        0, swz, 0, fill)
        assert res == 0, (res, c)
        out.append(np.frombuffer(ctypes.string_at(hm, 128), dtype=np.uint8).copy())
    return out


def child(plan_dir, tmp, lo, hi):
    import cupy as cp

    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuTensorMapEncodeTiled.restype = ctypes.c_int
    cu.cuTensorMapEncodeIm2col.restype = ctypes.c_int
    with open(os.path.join(plan_dir, "tma_store_plan.json")) as f:
        plan = json.load(f)
    mod = cp.RawModule(path=os.path.join(plan_dir, "tma_store.cubin"))
    keep = []
    bases = base_maps(cu, cp, plan["replace_bases"], keep)
    np.save(os.path.join(tmp, "bases.npy"), np.stack(bases))
    print("ready", flush=True)
    for i in range(lo, hi):
        out = run_case(cp, cu, mod, plan["cases"][i], bases, keep)
        np.savez(os.path.join(tmp, f"c{i}.npz"), **out)
        if len(keep) > 64:
            keep.clear()


def main():
    plan_dir = sys.argv[1]
    t0 = time.time()
    with open(os.path.join(plan_dir, "tma_store_plan.json")) as f:
        plan = json.load(f)
    n = len(plan["cases"])
    tmp = tempfile.mkdtemp()
    log, crashed = [], []
    groups = {}
    for i, c in enumerate(plan["cases"]):
        lo, hi = groups.get(c["group"], (i, i))
        groups[c["group"]] = (lo, i + 1)
    order = [g for g in ("replace", "bulk", "tensor", "im2col") if g in groups]
    for gi, g in enumerate(order):           # each group its own crash budget and share of the time
        lo, hi = groups[g]
        nxt, cr, stop = lo, 0, t0 + (time.time() - t0) + (DEADLINE_S - (time.time() - t0)) / (len(order) - gi)
        while nxt < hi and time.time() < stop and cr < 15:
            try:
                p = subprocess.run([sys.executable, __file__, "--child", plan_dir, tmp, str(nxt), str(hi)],
                                   capture_output=True, text=True, timeout=max(5, stop - time.time()))
            except subprocess.TimeoutExpired:
                log.append(f"{g}: time share used up in the child started at case {nxt}")
                break
            done = [i for i in range(nxt, hi) if os.path.exists(os.path.join(tmp, f"c{i}.npz"))]
            last = max(done) if done else nxt - 1
            if p.returncode == 0:
                break
            crashed.append(last + 1)
            cr += 1
            err = (p.stderr.strip().splitlines() or ["?"])[-1]
            log.append(f"case {last + 1} ({plan['cases'][last + 1]['entry']}): {err}")
            nxt = last + 2
    arrays = {}
    for i in range(n):
        f = os.path.join(tmp, f"c{i}.npz")
        if os.path.exists(f):
            with np.load(f) as z:
                for k in z.files:
                    arrays[f"{i}.{k}"] = z[k]
        else:
            arrays[f"{i}.result"] = np.int32(-1 if i in crashed else -2)
    if os.path.exists(os.path.join(tmp, "bases.npy")):
        arrays["replace_bases"] = np.load(os.path.join(tmp, "bases.npy"))
    arrays["plan"] = np.array(json.dumps(plan))
    arrays["crash_log"] = np.array("\n".join(log))
    np.savez_compressed(os.path.join(OUT, "tma_stores.npz"), **arrays)
    got = sum(1 for i in range(n) if f"{i}.after" in arrays)
    print(f"{n} cases, {got} with results, {len(crashed)} crashed, {time.time() - t0:.1f} s")
    print("\n".join(log[:40]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
