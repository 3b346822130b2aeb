"""Device script: TMA tile loads (cp.async.bulk.tensor, ranks 1-5) captured on an H100.

Run from the repository root on a machine with an H100, CUDA 13 (nvcc), CuPy and numpy:
    OUT=/some/dir python3 warpsim/hw/device/tma_capture.py
(about a minute; capped at TMA_DEADLINE_S = 200 s whatever happens).
Writes $OUT/tma_boxes.npz; commit it as tests/golden/tma_boxes_sm90.npz (tests/test_tma.py
replays it with warpsim/hw/offline/tma_replay.py).  Each case: a tensor of seeded random bytes
(stored as seed + SHA-256 only), a tensormap encoded by the driver (its 128 bytes are kept),
coordinates (negative and past-the-end included), element strides, every swizzle, element
sizes 1/2/4/8, NaN fill; the kernel (tma_capture.cu) fills a shared window with 0xA5, lands the
box through an mbarrier (expect_tx = warpsim's box byte count; a timeout is recorded, never a
hang; the bytes still pending then are measured) and copies the window out.  The tensormap is a
``const __grid_constant__`` kernel parameter, as CUTLASS 3 passes it (the first version's pointer to
a global buffer died with cudaErrorIllegalInstruction; a probe reruns the first cases that way and
records the outcome in ``probe_gmem_status``).  Cases run in child processes; one that kills the
CUDA context is recorded (result -1, ``crash_log``, with the seconds it cost) and a reserve child,
already warm (CUDA context and module loaded), goes on after it, so the results are always written.
The shared window is the destination offset + the box's padded footprint (rows narrower than the
swizzle span take the whole span: the first capture's 12 illegal-address launches were boxes that
ran past a window sized by the dense byte count) + 1024 bytes; ``footprint`` and ``smem_window``
are saved per case.  No warpsim import: this runs on a bare GPU machine.
"""

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

OUT = os.environ.get("OUT", ".")
SEED = 90210
N_CASES = 640
N_PROBE = 5
HERE = os.path.dirname(os.path.abspath(__file__))
#: element size -> (float dtype enum, int dtype enum) of CUtensorMapDataType
DTYPES = {1: (None, 0), 2: (6, 1), 4: (7, 2), 8: (8, 4)}
SPAN = {0: 0, 1: 32, 2: 64, 3: 128}


def make_case(rng, i):
    rank = 1 + i % 5
    esz = [1, 2, 4, 8][(i // 5) % 4]
    swz = (i // 20) % 4
    fdt, idt = DTYPES[esz]
    use_float = fdt is not None and rng.random() < 0.6
    dtype = fdt if use_float else idt
    oob = int(use_float and rng.random() < 0.5)
    span = SPAN[swz]
    max_row = span if span else 256
    box0 = int(rng.choice([b for b in (16, 32, 48, 64, 96, 128, 256) if b <= max_row and b // esz <= 256 and b >= 16]))
    box = [box0 // esz] + [int(rng.integers(1, 9)) for _ in range(4)]
    es = [1] + [int(rng.choice([1, 1, 1, 2, 3])) for _ in range(4)]
    dims = [max(1, box[0] * int(rng.integers(1, 4)) - int(rng.integers(0, 3)))] + \
           [int(rng.integers(1, 12)) for _ in range(4)]
    strides, s = [], -(-dims[0] * esz // 16) * 16 + 16 * int(rng.integers(0, 3))
    for d in range(1, 5):
        strides.append(s)
        s = s * dims[d] + 16 * int(rng.integers(0, 2))
    box, es, dims, strides = box[:rank], es[:rank], dims[:rank], strides[:rank - 1]
    coords = [int(rng.integers(-b - 2, d + 2)) for b, d in zip(box, dims)]
    if rng.random() < 0.3:
        coords = [int(rng.integers(0, max(1, d - b + 1))) for b, d in zip(box, dims)]   # fully in bounds
    # the innermost coordinate in bytes must be a multiple of 16: the first capture faulted
    # (illegal instruction) on every box that was not, and landed every box that was
    q = 16 // esz
    coords[0] = coords[0] // q * q
    gbytes = (strides[-1] * dims[-1]) if rank > 1 else dims[0] * esz
    dst_off = int(rng.choice([0, 0, 128, 256, 512, 1024]))
    # every random draw is above, so the cases that need no shrinking stay those of the first capture.
    # In shared memory each box row takes max(row bytes, swizzle span): the first capture's 12
    # illegal-address launches were boxes of narrow swizzled rows whose padded footprint ran past the
    # window the kernel allocated.  Size the window by that footprint, and keep it under FOOTPRINT_CAP
    # by halving the largest outer box dimension.
    while footprint(box, es, esz, span) > FOOTPRINT_CAP:
        d = 1 + int(np.argmax(box[1:]))
        box[d] = -(-box[d] // 2)
    nbytes = box[0] * esz
    for b, e in zip(box[1:], es[1:]):
        nbytes *= -(-b // e)
    foot = footprint(box, es, esz, span)
    return dict(rank=rank, dtype=dtype, esz=esz, swizzle=swz, oob=oob, dims=dims, strides=strides, box=box, es=es,
                coords=coords, nbytes=nbytes, gbytes=-(-gbytes // 16) * 16, dst_off=dst_off, seed=SEED * 1000 + i,
                footprint=foot, window=dst_off + foot + 1024)


FOOTPRINT_CAP = 192 * 1024      # + destination offset + 2 KiB stays under the 200 KiB the kernel may ask


def footprint(box, es, esz, span):
    """Shared bytes a box covers: ceil(box/es) rows per outer dimension, each max(row bytes, swizzle span)."""
    rows = 1
    for b, e in zip(box[1:], es[1:]):
        rows *= -(-b // e)
    return rows * max(box[0] * esz, span)


def data_bytes(seed, n):
    """The tensor's bytes (regenerated by the replay from the seed)."""
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def pad(v, n, fill):
    return list(v) + [fill] * (n - len(v))


TMAP_ARG = np.dtype([("raw", np.uint8, (128,))])    # a CUtensorMap passed by value (__grid_constant__)
DEADLINE_S = float(os.environ.get("TMA_DEADLINE_S", "200"))   # the whole capture stays well under 5 minutes
MAX_CRASHES = 60                                               # then the remaining cases are marked "not run"


def serve(cubin, tmp, kernel="tma_load"):
    """A child process: set up CUDA and the module first, say ``ready``, then run the cases
    ``lo hi`` read from stdin.  The parent keeps one such child warm in reserve, so a crash costs
    only the crashed launch, not a new process's CUDA start-up."""
    import cupy as cp

    fn = cp.RawModule(path=cubin).get_function(kernel)
    fn.max_dynamic_shared_size_bytes = 200 * 1024
    cp.cuda.Device().synchronize()
    print("ready", flush=True)
    line = sys.stdin.readline().split()
    if len(line) == 2:
        run_cases(int(line[0]), int(line[1]), fn, tmp, kernel)


def run_cases(lo, hi, fn, tmp, kernel="tma_load"):
    """Cases [lo, hi) in this process; each finished case is saved at once as tmp/<kernel>.c<i>.npz.

    A case that kills the CUDA context kills this process; the parent sees which case was the
    last one saved, records the next as crashed and hands the rest to its reserve process.
    """
    import cupy as cp

    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuTensorMapEncodeTiled.restype = ctypes.c_int
    host_map = (ctypes.c_uint8 * 192)()
    hm = (ctypes.addressof(host_map) + 63) // 64 * 64
    rng = np.random.default_rng(SEED)
    for i in range(hi):
        c = make_case(rng, i)
        if i < lo:
            continue
        data = data_bytes(c["seed"], c["gbytes"])
        g = cp.asarray(data)
        r = c["rank"]
        res = cu.cuTensorMapEncodeTiled(
            ctypes.c_void_p(hm), c["dtype"], r, ctypes.c_void_p(g.data.ptr), (ctypes.c_uint64 * 5)(*pad(c["dims"], 5, 1)),
            (ctypes.c_uint64 * 4)(*pad(c["strides"], 4, 16)), (ctypes.c_uint32 * 5)(*pad(c["box"], 5, 1)),
            (ctypes.c_uint32 * 5)(*pad(c["es"], 5, 1)), 0, c["swizzle"], 0, c["oob"])
        tmap_bytes = np.frombuffer(ctypes.string_at(hm, 128), dtype=np.uint8).copy()
        window = c["window"]      # destination offset + padded footprint + 1024 bytes that must stay 0xA5
        status = np.zeros(4, np.int32)
        out = np.zeros(window, np.uint8)
        print("case", i, flush=True)      # the last line of a crashed child's output names its case
        if res == 0:
            if kernel == "tma_load":
                tm = np.frombuffer(tmap_bytes.tobytes(), dtype=TMAP_ARG)[0]
            else:
                tm = cp.asarray(tmap_bytes)
            co = cp.asarray(np.array(pad(c["coords"], 5, 0), np.int32))
            st, ob = cp.zeros(4, cp.int32), cp.zeros(window, cp.uint8)
            fn((1,), (128,), (tm, co, np.int32(r), np.uint32(c["nbytes"]), np.uint32(c["dst_off"]), np.uint32(window),
                              ob, st), shared_mem=window + 1024)
            cp.cuda.Device().synchronize()
            status, out = st.get(), ob.get()
        np.savez(os.path.join(tmp, f"{kernel}.c{i}.npz"), result=np.array(res, np.int32), tensormap=tmap_bytes,
                 status=status, window=out, gaddr=np.array(g.data.ptr, np.uint64))


def _spawn(cubin, tmp, kernel):
    return subprocess.Popen([sys.executable, __file__, "--serve", cubin, tmp, kernel], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_all(n, cubin, tmp, t0, log, kernel="tma_load"):
    """Every case in child processes, linear in the crashes; returns (crashed, not_run) case lists."""
    crashed, nxt, spare = [], 0, None
    try:
        while nxt < n:
            left = DEADLINE_S - (time.time() - t0)
            if left < 5 or len(crashed) >= MAX_CRASHES:
                log.append(f"{kernel}: stopped before case {nxt} ({'time cap' if left < 5 else 'too many crashes'})")
                return crashed, list(range(nxt, n))
            child, spare = spare or _spawn(cubin, tmp, kernel), _spawn(cubin, tmp, kernel)
            t1 = time.time()
            try:
                out, err = child.communicate(f"{nxt} {n}\n", timeout=left)
                ok = child.returncode == 0
            except subprocess.TimeoutExpired:
                child.kill()
                out, err = child.communicate()
                ok, err = False, "timeout"
            if not out.startswith("ready"):
                log.append(f"{kernel}: a child failed to start CUDA: {(err.strip().splitlines() or ['?'])[-1]}")
                return crashed, list(range(nxt, n))
            err = (err.strip().splitlines() or [f"exit {child.returncode}"])[-1]
            done = [i for i in range(nxt, n) if os.path.exists(os.path.join(tmp, f"{kernel}.c{i}.npz"))]
            last = max(done) if done else nxt - 1
            if ok:
                return crashed, []
            bad = last + 1                      # the case running when the child died
            crashed.append(bad)
            log.append(f"{kernel} case {bad}: {err} (child ran {time.time() - t1:.1f} s)")
            nxt = bad + 1
        return crashed, []
    finally:
        if spare is not None:
            spare.kill()
            spare.communicate()


def main():
    t0 = time.time()
    tmp = tempfile.mkdtemp()
    cubin = os.path.join(tmp, "tma_capture.cubin")
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-o", cubin, os.path.join(HERE, "tma_capture.cu")], check=True)
    log = []
    failed, not_run = _run_all(N_CASES, cubin, tmp, t0, log)
    # probe: the first cases again with the tensormap in global memory (the form that crashed first)
    probe = []
    if time.time() - t0 < DEADLINE_S - 30:
        p_failed, p_not_run = _run_all(N_PROBE, cubin, tmp, time.time() - (DEADLINE_S - 30), log, "tma_load_gmem")
        for i in range(N_PROBE):
            f = os.path.join(tmp, f"tma_load_gmem.c{i}.npz")
            probe.append(-1 if i in p_failed else -2 if i in p_not_run or not os.path.exists(f)
                         else int(np.load(f)["status"][0]))
    got = {}
    for i in range(N_CASES):
        f = os.path.join(tmp, f"tma_load.c{i}.npz")
        if os.path.exists(f):
            with np.load(f) as z:
                got[i] = {k: z[k] for k in z.files}
    rng = np.random.default_rng(SEED)
    cs = [make_case(rng, i) for i in range(N_CASES)]
    rows, windows = [], []
    for i, c in enumerate(cs):
        if i not in got:      # crashed the context (-1) or not reached before the time cap (-2): no window
            rows.append((c, -1 if i in failed else -2, np.zeros(128, np.uint8), np.array([-1, 0, 0, 0], np.int32), 0))
            windows.append(np.zeros(0, np.uint8))
            continue
        g = got[i]
        rows.append((c, int(g["result"]), g["tensormap"], g["status"], int(g["gaddr"])))
        windows.append(g["window"])
    sha = [hashlib.sha256(data_bytes(c["seed"], c["gbytes"]).tobytes()).hexdigest() for c in cs]
    offs = np.cumsum([0] + [w.size for w in windows])
    np.savez_compressed(
        os.path.join(OUT, "tma_boxes.npz"),
        rank=np.array([c["rank"] for c in cs], np.int32), dtype=np.array([c["dtype"] for c in cs], np.int32),
        swizzle=np.array([c["swizzle"] for c in cs], np.int32), oob=np.array([c["oob"] for c in cs], np.int32),
        dims=np.array([pad(c["dims"], 5, 1) for c in cs], np.int64),
        strides=np.array([pad(c["strides"], 4, 0) for c in cs], np.int64),
        box=np.array([pad(c["box"], 5, 1) for c in cs], np.int32), es=np.array([pad(c["es"], 5, 1) for c in cs], np.int32),
        coords=np.array([pad(c["coords"], 5, 0) for c in cs], np.int32),
        nbytes=np.array([c["nbytes"] for c in cs], np.int64), gbytes=np.array([c["gbytes"] for c in cs], np.int64),
        dst_off=np.array([c["dst_off"] for c in cs], np.int64),
        footprint=np.array([c["footprint"] for c in cs], np.int64), smem_window=np.array([c["window"] for c in cs], np.int64),
        seed=np.array([c["seed"] for c in cs], np.int64),
        result=np.array([r[1] for r in rows], np.int32), tensormap=np.stack([r[2] for r in rows]),
        status=np.stack([r[3] for r in rows]), gaddr=np.array([r[4] for r in rows], np.uint64),
        sha256=np.array(sha), window_offsets=offs, windows=np.concatenate(windows),
        crash_log=np.array("\n".join(log)), probe_gmem_status=np.array(probe, np.int32))
    done = sum(int(r[3][0]) == 1 for r in rows)
    print(f"{N_CASES} boxes, {sum(r[1] == 0 for r in rows)} encoded, {done} completed, {len(failed)} crashed the "
          f"context, {len(not_run)} not run (time cap), {time.time() - t0:.1f} s; global-memory tensormap probe "
          f"(1 done, 0 timeout, -1 crash, -2 not run): {probe}")
    print("\n".join(log[:40]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
