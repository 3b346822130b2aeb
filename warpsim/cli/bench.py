"""``warpsim bench``: throughput, start-up time and peak memory of the engine.

For one representative instruction per family it measures warp-MMAs per second
at a fixed batch size, on one thread and on every core, and -- in the same run,
on the same machine -- the time numpy's float64 batched matmul
``A (W, m, k) @ B (W, k, n) + C`` takes on the instruction's shape.  The ratio
warpsim / numpy is the figure that carries from one machine to another.

It also measures ``import warpsim`` and the first ``mma`` call with a cold and a
warm numba cache (each in a fresh interpreter), and the peak resident set of a
process that runs one million warps of an m16n8k16 instruction.

Rows whose arithmetic is not in this build (``mma`` raises NotImplementedError)
are reported as "not available"; they never fail the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .bench_kernels import (KERNEL_ROWS, TARGET_FIRST_COMPILE_LINES, TARGET_FIRST_COMPILE_S,  # noqa: F401
                            bench_kernels_one_thread, compile_cell, first_compile_missed, format_kernels,
                            judge_first_compile, reference_compile_s)
from .bench_history import HISTORY, _commit, _isa_note, history_series, isa_label, plot_history, save_history  # noqa: F401
from . import bench_sfu

#: (row name, opcode) -- one representative instruction per family
FAMILIES = (
    ("f16 m16n8k16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("bf16 m16n8k16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("tf32 m16n8k8", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("f64 m16n8k16", "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"),
    ("fp8 m16n8k32", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    ("f16 m8n8k4", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"),
    ("s8 m16n8k32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
    ("s4 m16n8k64", "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"),
    ("b1 m16n8k256 xor", "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc"),
    ("sp f16 m16n8k32", "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"),
    ("sp s8 m16n8k64", "mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32"),
)

#: whole GEMMs (warpsim.gemm, all cores): (row name, opcode, size n of an n x n x n product, target ratio
#: warpsim / numpy float64 ``A @ B`` on the same matrices, measured in the same run)
GEMMS = (
    ("gemm f16->f32 1024^3", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1024, 8.0),
    ("gemm f16->f32 2048^3", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 2048, 8.0),
    ("gemm f16->f16 1024^3", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 1024, 8.0),
    ("gemm bf16 1024^3", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 1024, 20.0),
    ("gemm tf32 1024^3", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 1024, 20.0),
    ("gemm fp8 1024^3", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 1024, 20.0),
    ("gemm wgmma e4m3->f32 1024^3", "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", 1024, 12.0),
    ("gemm f64 1024^3", "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", 1024, 20.0),
    ("gemm s8 1024^3", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 1024, 20.0),
    ("gemm sp f16 1024^3", "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", 1024, 20.0),
)

#: paths measured per multiply-add against ``mma`` f16 m16n8k16 in the same run (interleaved), all
#: cores: (row name, how the row runs, opcode, arch).  "mma": warpsim.mma batched (block-scaled
#: forms with ue8m0 / ue4m3 scales); "wgmma": warpsim.wgmma with A and B through descriptors;
#: "ptx": the PTX interpreter running a committed Triton GEMM kernel (opcode: the kernel's name)
#: against warpsim.gemm on the same matrices
PATH_REFERENCE = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
PATHS = (
    ("wgmma e4m3->f32 m64n256k32", "wgmma", "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", "sm_90a"),
    ("wgmma e5m2->f16 m64n256k32", "wgmma", "wgmma.mma_async.sync.aligned.m64n256k32.f16.e5m2.e5m2", "sm_90a"),
    ("wgmma e4m3->f16 m64n256k32", "wgmma", "wgmma.mma_async.sync.aligned.m64n256k32.f16.e4m3.e4m3", "sm_90a"),
    ("wgmma e5m2->f32 m64n256k32", "wgmma", "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e4m3", "sm_90a"),
    ("wgmma f16->f32 m64n256k16", "wgmma", "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", "sm_90a"),
    ("sm_89 fp8->f32 m16n8k32", "mma", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89"),
    ("sm_89 fp8->f16 m16n8k32", "mma", "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16", "sm_89"),
    ("sm_120a f8f6f4 e4m3 k32", "mma", "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32",
     "sm_120a"),
    ("sm_120a f8f6f4 e2m1 k32", "mma", "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e2m1.f32",
     "sm_120a"),
    ("sm_120a mxf8f6f4 1X ue8m0", "mma",
     "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0",
     "sm_120a"),
    ("sm_120a mxf8f6f4 1X e2m1 ue8m0", "mma",
     "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e2m1.e3m2.f32.ue8m0",
     "sm_120a"),
    ("sm_120a sp mxf8f6f4 1X ue8m0", "mma",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3"
     ".f32.ue8m0", "sm_120a"),
    ("sm_120a mxf4 2X ue8m0", "mma",
     "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", "sm_120a"),
    ("sm_120a mxf4nvf4 2X ue8m0", "mma",
     "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0",
     "sm_120a"),
    ("sm_120a sp mxf4 2X ue8m0", "mma",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1"
     ".f32.ue8m0", "sm_120a"),
    ("sm_120a mxf4nvf4 4X ue4m3", "mma",
     "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
     "sm_120a"),
    ("ptx triton bf16 sm_80 gemm", "ptx", "triton_bf16_f32acc_masked_sm80", "sm_80"),
    ("ptx triton f16 sm_90a gemm", "ptx", "triton_f16_f32acc_masked_sm90", "sm_90a"),
    ("ptx cutlass2 f16 sm_80 gemm", "ptx", "cutlass2_gemm_sm80", "sm_80"),
    ("ptx cutlass3 f16 sm_90a gemm", "ptx", "cutlass3_tma_ws_cooperative_sm90a", "sm_90a"),
)
#: PATHS rows added after the committed full report (benchmarks/results/speed.json, docs/speed.md's tables) was
#: measured: their figures are in the issue-32 reports (benchmarks/results/*_kernels_*.json) until it is re-measured
PATHS_SINCE_REPORT = ("ptx cutlass2 f16 sm_80 gemm", "ptx cutlass3 f16 sm_90a gemm")
TARGET_PATH_RATIO = 1.5          # per multiply-add, against mma f16 in the same run
TARGET_PTX_RATIO = 20.0          # the PTX interpreter against warpsim.gemm on the same problem
TARGET_PTX_COMPILED_RATIO = 3.0  # the compiled engine (warpsim.ptx.native) against warpsim.gemm (issue 32)
TARGET_CUTLASS_COMPILED_RATIO = 5.0     # a compiled CUTLASS GEMM against warpsim.gemm (issue 32)

#: input classes: what the register words hold (see class_inputs)
CLASSES = ("ordinary", "random", "special", "subnormal", "overflow")

#: targets (one thread): warpsim time / numpy float64 matmul time
TARGET_RATIO_INT, TARGET_RATIO_FLOAT = 1.2, 3.0
TARGET_CLASS_SPREAD = 1.3       # a float family's slowest input class vs its ordinary class
TARGET_SCALING = 1.8            # all cores vs one thread, on 2 cores
TARGET_PEAK_BYTES = 2 * 1024**3  # one million warps of m16n8k16

MEMORY_OPCODE = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
MEMORY_STANDIN = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
STARTUP_OPCODE = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _dist(ins) -> str:
    t = ins.elem("a")
    return "normal" if t.is_float else "uniform"


def _inputs(ins, warps: int, seed: int = 0):
    from ..hw.inputs import generate

    g = generate(ins, 0, _dist(ins), warps, seed)
    return g["a"], g["b"], g["c"], g.get("e")


def _top_elements(t, rng, n: int) -> np.ndarray:
    """Finite float elements with exponents in the top eighth of the type's range (random sign and
    mantissa): products and sums that reach the result format's largest values and overflow."""
    from ..hw.inputs import _compose, _is_nonfinite, max_finite_exp_field

    f = t.bits - 1 - t.exp_bits
    top = max_finite_exp_field(t)
    e = rng.integers(top - max(1, top // 8), top + 1, size=n)
    p = _compose(t, rng.integers(0, 2, size=n), e, rng.integers(0, 1 << f, size=n, dtype=np.uint64))
    p[_is_nonfinite(t, p)] &= ~np.uint64(1)      # e4m3 S.1111.111 -> S.1111.110
    return p


def class_inputs(ins, cls: str, warps: int, seed: int = 0):
    """Register words (a, b, c, e) of one input class, or None where the class does not apply.

    ordinary: the entry's ordinary distribution (floats: normal values of moderate exponent;
    integers, b1: uniform); random: every register word uniformly random (any bit pattern: NaN
    payloads, infinities, subnormals, the whole exponent range); special: about 20% of the
    elements drawn from +-0, +-inf, NaN, subnormals, +-max (integers: 80% type extremes);
    subnormal: floats only, half the elements subnormal, the rest near the smallest normal;
    overflow: floats: exponents in the top eighth of each operand's range; integers: C within
    2^21 of the s32 limits.  Sparse metadata is always valid.
    """
    from ..hw.inputs import elements_to_words, generate

    t = ins.elem("a")
    if cls == "ordinary":
        g = generate(ins, 0, _dist(ins), warps, seed)
    elif cls == "random":
        g = generate(ins, 0, _dist(ins), warps, seed)
        rng = np.random.default_rng(seed + 101)
        for r in "abc":
            g[r] = rng.integers(0, 1 << 32, size=g[r].shape, dtype=np.uint64).astype(np.uint32)
    elif cls == "special":
        g = generate(ins, 0, "special" if t.is_float else ("dense" if t.kind == "bits" else "extreme"), warps, seed)
    elif cls == "subnormal":
        if not t.is_float:
            return None
        g = generate(ins, 0, "tiny", warps, seed)
    elif cls == "overflow":
        if t.kind == "bits":
            return None
        if not t.is_float:
            g = generate(ins, 0, "near_limit", warps, seed)
        else:
            g = generate(ins, 0, "normal", warps, seed)
            rng = np.random.default_rng(seed + 202)
            for r in "abc":
                te = ins.elem(r)
                p = _top_elements(te, rng, g[r].size * 32 // te.bits)
                g[r] = elements_to_words(p.reshape(warps, 32, -1), te.bits)
    else:
        raise ValueError(f"unknown input class {cls!r}; allowed: {CLASSES}")
    return g["a"], g["b"], g["c"], g.get("e")


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _numpy_case(ins, warps: int):
    """float64 operands of the instruction's (nominal) shape, one matrix product per product slot."""
    m, n, k = ins.mnk
    bw = warps * ins.products
    rng = np.random.default_rng(1)
    A = rng.standard_normal((bw, m, k))
    B = rng.standard_normal((bw, k, n))
    C = rng.standard_normal((bw, m, n))
    return A, B, C


def _is_int(ins) -> bool:
    return not ins.elem("a").is_float


#: clocks for the one-thread measurements: wall time, or this process's CPU time (steadier on a
#: machine shared with other work; all-cores figures always use wall time)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _time_pair(fn, ref, repeat, clock=time.perf_counter):
    """Median seconds of fn and of ref, and the median of the per-pair ratios fn / ref (the two are
    interleaved so that both see the same machine state: robust to a machine whose speed drifts)."""
    ts, rs, ratios = [], [], []
    for _ in range(repeat):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
        t0 = clock()
        ref()
        rs.append(clock() - t0)
        ratios.append(ts[-1] / rs[-1])
    return ts, rs, statistics.median(ratios)


def _scaling(call, threads_all, repeat):
    """One thread's time over all cores' for ``call``: the median of interleaved pairs (the two timings of a
    pair see the same machine state; separate medians taken seconds apart swung +-25% on a quiet host)."""
    import numba

    ratios = []
    for _ in range(max(repeat, 5)):
        numba.set_num_threads(1)
        t0 = time.perf_counter()
        call()
        one = time.perf_counter() - t0
        numba.set_num_threads(threads_all)
        t0 = time.perf_counter()
        call()
        ratios.append(one / (time.perf_counter() - t0))
    return statistics.median(ratios)


def bench_family(name, opcode, warps, repeat, threads_all, classes=CLASSES, clock="wall"):
    import numba

    from ..api.mma import mma
    from ..isa.catalog import BY_OPCODE

    ins = BY_OPCODE[opcode]
    row = {"family": name, "opcode": opcode, "warps": warps, "products_per_warp": ins.products,
           "numpy_shape": [warps * ins.products, *ins.mnk], "kind": "int" if _is_int(ins) else "float",
           "available": False, "reason": None}
    a, b, c, e = _inputs(ins, warps)
    sel = 0
    try:
        mma(opcode, a[:1], b[:1], c[:1], None if e is None else e[:1], selector=sel)   # plan + serial compile
        numba.set_num_threads(threads_all)
        mma(opcode, a, b, c, e, selector=sel)                                           # parallel compile
    except NotImplementedError as exc:
        row["reason"] = f"not available: {exc}"
        return row
    row["available"] = True

    A, B, C = _numpy_case(ins, warps)
    _ = A @ B + C

    def ref():
        return A @ B + C

    np_times = []
    per_class = {}
    for cls in ("ordinary",) + tuple(x for x in classes if x != "ordinary"):
        ops = class_inputs(ins, cls, warps)
        if ops is None:
            continue
        results = {}
        for label, nt in (("one_thread", 1), ("all_cores", threads_all)):
            numba.set_num_threads(nt)
            mma(opcode, *ops, selector=sel)   # warm
            ts, rs, ratio = _time_pair(lambda: mma(opcode, *ops, selector=sel), ref, repeat,
                                       CLOCKS[clock] if nt == 1 else time.perf_counter)
            np_times += rs
            med = statistics.median(ts)
            results[label] = {"threads": nt, "seconds": med, "mma_per_s": warps / med, "runs": ts,
                              "ratio_to_numpy": ratio}
        results["scaling_unpaired"] = results["one_thread"]["seconds"] / results["all_cores"]["seconds"]
        results["scaling"] = _scaling(lambda: mma(opcode, *ops, selector=sel), threads_all, repeat)
        per_class[cls] = results
    numba.set_num_threads(threads_all)
    np_med = statistics.median(np_times)
    results = per_class["ordinary"]
    row["one_thread"], row["all_cores"] = results["one_thread"], results["all_cores"]
    row["classes"] = per_class
    row["numpy_f64_seconds"] = np_med
    row["numpy_mma_per_s"] = warps / np_med
    row["ratio_one_thread"] = results["one_thread"]["ratio_to_numpy"]
    row["ratio_all_cores"] = results["all_cores"]["ratio_to_numpy"]
    row["scaling"] = results["scaling"]
    row["target_ratio"] = TARGET_RATIO_INT if _is_int(ins) else TARGET_RATIO_FLOAT
    worst = max(per_class, key=lambda k: per_class[k]["one_thread"]["ratio_to_numpy"])
    row["worst_class"] = worst
    row["worst_ratio_one_thread"] = per_class[worst]["one_thread"]["ratio_to_numpy"]
    row["class_spread"] = row["worst_ratio_one_thread"] / row["ratio_one_thread"]
    row["meets_ratio"] = row["worst_ratio_one_thread"] <= row["target_ratio"]
    row["meets_class_spread"] = row["class_spread"] <= TARGET_CLASS_SPREAD if row["kind"] == "float" else None
    row["meets_scaling"] = (min(r["scaling"] for r in per_class.values()) >= TARGET_SCALING
                            if threads_all >= 2 else None)
    return row


def targets_summary(report: dict) -> dict:
    """Which of the issue's targets hold in this report."""
    rows = [r for r in report["families"] if r.get("available")]
    out = {
        "ratio_int_b1": [r["family"] for r in rows if r["kind"] == "int" and not r["meets_ratio"]],
        "ratio_float": [r["family"] for r in rows if r["kind"] == "float" and not r["meets_ratio"]],
        "class_spread": [r["family"] for r in rows if r.get("meets_class_spread") is False],
        "scaling": [r["family"] for r in rows if r.get("meets_scaling") is False],
        "not_available": [r["family"] for r in report["families"] if not r.get("available")],
    }
    if report.get("memory"):
        out["memory_ok"] = report["memory"]["meets_target"]
    if report.get("gemm_memory"):
        out["gemm_memory_ok"] = report["gemm_memory"]["meets_target"]
    if report.get("paths") is not None:
        out["path_ratio"] = [r["path"] for r in report["paths"] if r.get("available") and not r["meets_ratio"]]
    if report.get("gemms") is not None:
        out["gemm_ratio"] = [r["gemm"] for r in report["gemms"] if r.get("available") and not r["meets_ratio"]]
    if report.get("kernels") is not None:
        out["kernel_ratio"] = [r["kernel"] for r in report["kernels"] if not (r.get("available") and r["meets_ratio"])]
    if report.get("kernels") is not None or report.get("paths") is not None:
        out["first_compile"] = (first_compile_missed(report.get("paths") or [], "path")
                                + first_compile_missed(report.get("kernels") or [], "kernel"))
    return out


def _gemm_inputs(ins, n, seed=0):
    from .gemm_report import inputs

    return inputs(ins, n, n, n, "normal" if ins.elem("a").is_float else "uniform", seed)


def bench_gemm(name, opcode, n, target, repeat):
    """warpsim.gemm (all cores) and numpy float64 A @ B on the same n x n matrices, alternating, medians."""
    import warpsim

    ins = warpsim.parse(opcode)
    A, B, C = _gemm_inputs(ins, n)
    a64, b64 = np.asarray(A, np.float64), np.asarray(B, np.float64)
    warpsim.gemm(A[:64], np.ascontiguousarray(B[:, :64]), C[:64, :64], instruction=opcode)    # compile / load
    tw, tn = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        warpsim.gemm(A, B, C, instruction=opcode)
        tw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        a64 @ b64
        tn.append(time.perf_counter() - t0)
    w, np_ = statistics.median(tw), statistics.median(tn)
    return {"gemm": name, "opcode": opcode, "n": n, "available": True, "warpsim_s": w, "numpy_f64_s": np_,
            "ratio": w / np_, "target_ratio": target, "meets_ratio": w / np_ <= target,
            "macs_per_s": n ** 3 / w}


def _path_call(kind, opcode, arch, macs, quick):
    """(function running the path once, multiply-adds it does) for one PATHS row."""
    import warpsim

    ins = warpsim.parse(opcode)
    m, n, k = ins.mnk
    if kind == "mma":
        from ..hw.inputs import generate

        warps = max(1, macs // (m * n * k))
        g = generate(ins, 0, "normal", warps, 0)
        kw = {}
        if ins.block_scaled:
            kw = dict(scale_a=np.ascontiguousarray(g["s"][..., 0]), scale_b=np.ascontiguousarray(g["s"][..., 1]))
        return (lambda: warpsim.mma(opcode, g["a"], g["b"], g["c"], g.get("e"), arch=arch, **kw)), warps * m * n * k
    if kind == "wgmma":
        from ..api.wgmma import canonical_smem
        from ..engine.warpgroup_mma import pack_d
        from ..hw.inputs import float_elements

        G = max(1, macs // (m * n * k))
        rng = np.random.default_rng(0)
        A = float_elements(ins.elem("a"), "normal", "a", rng, G * m * k).reshape(G, m, k)
        B = float_elements(ins.elem("b"), "normal", "b", rng, G * k * n).reshape(G, k, n)
        C = float_elements(ins.elem("d"), "normal", "c", rng, G * m * n).reshape(G, m, n)
        sm, da, db = canonical_smem(ins, A, B)
        d = pack_d(ins, C)
        dav, dbv = np.full(G, da, np.uint64), np.full(G, db, np.uint64)
        return (lambda: warpsim.wgmma(opcode, d, dav, dbv, smem=sm, arch=arch)), G * m * n * k
    raise ValueError(f"unknown path kind {kind!r}")


def _ptx_workers() -> int:
    """The workers of a PTX GEMM row's launches: the threads warpsim.gemm runs on in the same row (numba's), so
    that both sides use the same CPUs -- not the launch's default, which judges idle CPUs by the load average
    (a bench run right after a compile, or beside the other build's, would get fewer)."""
    import numba

    return numba.get_num_threads()


def _cutlass_launch(text, launch, params, ins, M, N, cluster):
    """(run a CUTLASS GEMM from its PTX once -- its buffers mapped at the addresses its parameters hold -- on
    ``ins`` (A (M, K), B (N, K) f16 words, C (M, N) f32 words), run warpsim.gemm on the same product with the
    f16 mma (f32 accumulate), MACs)."""
    import warpsim
    from ..ptx import GlobalMemory, load

    mod = load(text)
    (entry,) = mod.entries
    K = ins["A"].shape[1]

    def ptx(engine="interpret"):
        gm = GlobalMemory()
        for name in ("A", "B", "C"):
            gm.map(np.array(ins[name], copy=True), address=int(launch[name][0]))
        gm.map(np.zeros((M, N), np.uint32), address=int(launch["D"][0]))
        mod.launch(entry, tuple(map(int, launch["grid"])), tuple(map(int, launch["block"])), [params],
                   int(launch["smem"][0]), memory=gm, arch="sm_90a" if cluster else "sm_90", engine=engine,
                   cluster=cluster, workers=_ptx_workers())
        return mod.last_engine["engine"]

    ptx.translation = lambda: mod.translation(entry)
    ptx.shape = (M, N, K)
    ptx.ptx_lines = text.count("\n")
    a, b = ins["A"].view(np.float16), ins["B"].view(np.float16).T
    c0 = ins["C"].view(np.float32)
    op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    return ptx, (lambda: warpsim.gemm(a, b, c0, instruction=op, arch="sm_90", pad=True)), M * N * K


def _cutlass2_gemm(quick):
    """The committed CUTLASS 2.x GEMM (tests/ptx/compiled/cutlass2) on its dry parameters, whose buffer addresses
    are baked in: 256 x 256 x 128 (--quick: the ragged 200 x 136 x 72 case); see _cutlass_launch."""
    from ..hw.gemm_cases import CUTLASS2_CASES, cutlass3_inputs

    here = Path(__file__).resolve().parents[2] / "tests" / "ptx" / "compiled" / "cutlass2"
    k = 1 if quick else 0
    c = CUTLASS2_CASES[k]
    ins = cutlass3_inputs(**{x: c[x] for x in ("dtype", "M", "N", "K", "seed")})
    launch = dict((line.split()[0], line.split()[1:]) for line in (here / f"dry_launch{k}.txt").read_text().splitlines())
    return _cutlass_launch((here / "cutlass2_gemm_sm80.ptx").read_text(), launch,
                           (here / f"dry_params{k}.bin").read_bytes(), ins, c["M"], c["N"], None)


def _cutlass3_gemm(quick):
    """The CUTLASS 3 KernelTmaWarpSpecializedCooperative GEMM an H100 ran (tests/golden/cutlass3_sm90a.npz case 0,
    256 x 256 x 256, a 2x1 cluster with TMA multicast; --quick: case 1, 256 x 128 x 512), on its captured inputs
    and parameters; see _cutlass_launch."""
    from ..hw.golden import open_golden

    g = open_golden(Path(__file__).resolve().parents[2] / "tests" / "golden" / "cutlass3_sm90a.npz")
    k = 1 if quick else 0
    info = g.manifest["cases"][k]
    ins = {x: np.asarray(g[f"{k}.{x}"]) for x in ("A", "B", "C")}
    L = info["launch"]
    return _cutlass_launch(np.asarray(g[f"{k}.ptx"]).tobytes().decode(), L, np.asarray(g[f"{k}.params"]).tobytes(),
                           ins, info["M"], info["N"], tuple(map(int, L["cluster"])))


def _ptx_gemm(name, size):
    """(run the committed Triton kernel once on size^3, run warpsim.gemm on the same with the
    matching warp-level mma (the kernel's input type, f32 accumulator), MACs)."""
    if name.startswith("cutlass"):
        return (_cutlass2_gemm if name.startswith("cutlass2") else _cutlass3_gemm)(size < 256)
    import ml_dtypes
    import warpsim
    from ..ptx import GlobalMemory, load

    root = Path(__file__).resolve().parents[2] / "tests" / "ptx" / "compiled"
    sys.path.insert(0, str(root))
    try:
        from triton_sources import KERNELS
    finally:
        sys.path.remove(str(root))
    kern = KERNELS[name]
    elem = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[kern["a"]]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(elem)
    b = rng.standard_normal((size, size)).astype(elem)
    text = (root / f"{name}.ptx").read_text()
    mod = load(text)
    grid = (-(-size // kern["bm"]), -(-size // kern["bn"]), 1)
    arch = "sm_90"          # as the H100 runs it (the capture of tests/ptx/compiled)

    def ptx(engine="interpret"):
        gm = GlobalMemory()
        ad = {k: gm.map(v) for k, v in dict(a=a.view(np.uint16), b=b.view(np.uint16),
                                             c=np.zeros((size, size), np.uint32), s0=np.zeros(64, np.uint8),
                                             s1=np.zeros(64, np.uint8)).items()}
        mod.launch("matmul", grid, (kern["warps"] * 32, 1, 1),
                   [ad["a"], ad["b"], ad["c"], size, size, size, ad["s0"], ad["s1"]], kern["shared"],
                   memory=gm, arch=arch, engine=engine, workers=_ptx_workers())
        return mod.last_engine["engine"]

    ptx.translation = lambda: mod.translation("matmul")
    ptx.ptx_lines = text.count("\n")
    op = f"mma.sync.aligned.m16n8k16.row.col.f32.{kern['a']}.{kern['a']}.f32"
    c0 = np.zeros((size, size), np.float32)
    return ptx, (lambda: warpsim.gemm(a, b, c0, instruction=op, arch=arch)), size ** 3


def _gemm_size(r) -> str:
    """A PTX row's GEMM size: ``(n^3)``, or ``(M x N x K)`` where they differ."""
    if "size" not in r:
        return ""
    shape = r.get("shape") or [r["size"]] * 3
    return f" ({shape[0]}^3)" if len(set(shape)) == 1 else f" ({' x '.join(map(str, shape))})"


def _engines(r) -> str:
    """A PTX row's engines: the compiled kernel's figure is the row's (its compile apart), the interpreter's beside
    it; nothing for the other rows (and for reports from before the compiled engine)."""
    if "compiled_ratio" in r:
        workers = f", {r['workers']} workers" if "workers" in r else ""
        return (f" (compiled{workers}; interpreter {r['interpret_ratio']:.1f}, {r['interpret_seconds']:.2f} s; compile "
                f"{compile_cell(r, ' s')})")
    return " (interpreter)" if "interpret_ratio" in r else ""


def bench_paths(repeat, quick, names=None):
    """PATHS rows: each path's multiply-adds per second and its time per multiply-add over mma f16's
    (interleaved in the same run); the PTX row against warpsim.gemm instead."""
    import warpsim
    from ..hw.inputs import generate

    macs = (1 << 19) if quick else (1 << 25)
    ref_ins = warpsim.parse(PATH_REFERENCE)
    rw = macs // 2048
    g = generate(ref_ins, 0, "normal", rw, 0)

    def ref():
        return warpsim.mma(PATH_REFERENCE, g["a"], g["b"], g["c"])

    rows = []
    for name, kind, opcode, arch in PATHS:
        if names and not any(x in name for x in names):
            continue
        _log(f"[path] {name}")
        row = {"path": name, "kind": kind, "opcode": opcode, "arch": arch, "available": True}
        try:
            if kind == "ptx":
                size = 32 if quick else 256
                fn, ref_fn, n = _ptx_gemm(opcode, size)
                fn()               # first calls compile numba kernels
                ref_fn()
                reps = 1 if quick else max(1, repeat // 3)
                ts, rs, ratio = _time_pair(fn, ref_fn, reps)
                row.update(size=size, shape=list(getattr(fn, "shape", (size,) * 3)), reference="warpsim.gemm", macs=n,
                           ratio=ratio, target_ratio=TARGET_PTX_RATIO, workers=_ptx_workers(),
                           interpret_seconds=statistics.median(ts), interpret_ratio=ratio)
                tr = fn.translation()
                if tr.native and (not quick or tr.ready()):       # --quick never waits for a compile
                    from ..ptx.native import kernel as _native

                    why = dict(_native.COMPILED_WHY)
                    t0 = time.perf_counter()
                    if fn("compiled") == "compiled":    # the first compiled launch: compiling (or loading) it
                        row["compile_s"] = time.perf_counter() - t0
                        row["compiled_why"] = _native.compiled_since(why)
                        judge_first_compile(row, fn.ptx_lines)
                        # a compiled 256^3 launch takes tens of ms: enough pairs for a steady median
                        ts, rs, ratio = _time_pair(lambda: fn("compiled"), ref_fn, 3 if quick else max(3 * repeat, 9))
                        row.update(engine="compiled", compiled_seconds=statistics.median(ts), compiled_ratio=ratio,
                                   ratio=ratio, target_ratio=TARGET_CUTLASS_COMPILED_RATIO if "cutlass" in name
                                   else TARGET_PTX_COMPILED_RATIO)
                if "compiled_ratio" not in row:
                    row.update(engine="interpret", not_compiled=tr.reason or "--quick: the compiled kernel is not "
                               "built yet")
            else:
                fn, n = _path_call(kind, opcode, arch, macs, quick)
                fn()
                ref()
                ts, rs, ratio = _time_pair(fn, ref, repeat)
                ratio *= rw * 2048 / n            # per multiply-add
                row.update(reference="mma f16 m16n8k16", macs=n, ratio=ratio, target_ratio=TARGET_PATH_RATIO)
            med = statistics.median(ts)
            row.update(seconds=med, runs=ts, macs_per_s=n / med, reference_seconds=statistics.median(rs),
                       meets_ratio=row["ratio"] <= row["target_ratio"])
        except Exception as exc:  # report, never abort the whole run
            row.update(available=False, reason=f"error: {exc!r}")
        rows.append(row)
    return rows


# --- subprocess measurements -------------------------------------------------

def _repo_env(extra=None):
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def _py(code: str, env=None, timeout=900) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_repo_env(env),
                         timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"subprocess failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


_STARTUP_CODE = r"""
import json, time
t0 = time.perf_counter()
import warpsim
t1 = time.perf_counter()
from warpsim.isa.catalog import BY_OPCODE
from warpsim.hw.inputs import generate
ins = BY_OPCODE[{opcode!r}]
g = generate(ins, 0, "uniform", {warps})
t2 = time.perf_counter()
warpsim.mma(ins.opcode, g["a"], g["b"], g["c"])
t3 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "first_mma_s": t3 - t2}}))
"""


def bench_startup(warps: int) -> dict:
    """import time and first mma call (includes loading numba and the kernel) with cold and warm caches."""
    code = _STARTUP_CODE.format(opcode=STARTUP_OPCODE, warps=warps)
    with tempfile.TemporaryDirectory(prefix="warpsim-numba-cache-") as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        _log("startup: cold numba cache (compiles the kernel)")
        cold = _py(code, env)
        _log("startup: warm numba cache")
        warm = _py(code, env)
    _log("startup: import only")
    imports = [_py("import json,time\nt=time.perf_counter()\nimport warpsim\n"
                   "print(json.dumps({'import_s': time.perf_counter()-t}))")["import_s"] for _ in range(3)]
    return {"opcode": STARTUP_OPCODE, "warps": warps, "import_s": statistics.median(imports),
            "first_mma_cold_cache_s": cold["first_mma_s"], "first_mma_warm_cache_s": warm["first_mma_s"]}


_MEMORY_CODE = r"""
import json, resource, sys
import numpy as np
import warpsim
from warpsim.isa.catalog import BY_OPCODE
from warpsim.hw.inputs import generate
W, chunk = {warps}, {chunk}
opcode = None
for op in {opcodes!r}:
    ins = BY_OPCODE[op]
    try:
        g = generate(ins, 0, "normal" if ins.elem("a").is_float else "uniform", min(chunk, W))
        warpsim.mma(op, g["a"][:1], g["b"][:1], g["c"][:1])
        warpsim.mma(op, g["a"][:64], g["b"][:64], g["c"][:64])
        opcode = op
        break
    except NotImplementedError:
        continue
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
ops = {{}}
for r in "abc":
    x = np.empty((W,) + g[r].shape[1:], np.uint32)
    for s in range(0, W, chunk):
        n = min(chunk, W - s)
        x[s:s + n] = g[r][:n]
    ops[r] = x
del g
d = warpsim.mma(opcode, ops["a"], ops["b"], ops["c"])
io = sum(x.nbytes for x in ops.values()) + d.nbytes
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
hwm = None
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
except OSError:
    pass
print(json.dumps({{"opcode": opcode, "peak_rss_bytes": peak, "rss_before_operands_bytes": base,
                  "operand_and_result_bytes": io, "vmhwm_bytes": hwm}}))
"""


#: Linux carries a process's peak RSS across fork and exec into the child's ru_maxrss, so the measuring
#: process is started from a small launcher interpreter (not from this one, whose own peak may be large);
#: the launcher reports its child's ru_maxrss (RUSAGE_CHILDREN) next to the child's own figures.
_LAUNCHER_CODE = r"""
import json, resource, subprocess, sys
out = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
if out.returncode != 0:
    sys.stderr.write(out.stderr)
    sys.exit(out.returncode)
r = json.loads(out.stdout.strip().splitlines()[-1])
r["children_ru_maxrss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps(r))
"""


_GEMM_MEMORY_CODE = r"""
import json, resource
import numpy as np
import warpsim


def hwm():
    # the process's own high-water mark (VmHWM is reset by exec; ru_maxrss keeps the parent's from fork)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


op = {opcode!r}
n = {n}
rng = np.random.default_rng(0)
warpsim.gemm(np.ones((64, 64), np.float16), np.ones((64, 64), np.float16), instruction=op)   # compile / load
base = hwm()
A = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
B = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
C = np.zeros((n, n), np.float32)
D = warpsim.gemm(A, B, C, instruction=op)
peak = hwm()
print(json.dumps({{"opcode": op, "n": n, "peak_rss_bytes": peak, "rss_before_operands_bytes": base,
                  "operand_and_result_bytes": A.nbytes + B.nbytes + C.nbytes + D.nbytes}}))
"""

#: a gemm may use at most this much beyond its operands and result (issue 23: 4096^3 under 1 GB)
TARGET_GEMM_EXTRA_BYTES = 1024**3


def bench_gemm_memory(n: int) -> dict:
    """Peak resident set of a fresh process running one n^3 f16 -> f32 warpsim.gemm, and what it used beyond
    the interpreter + warpsim (measured before the operands exist) and its operands and result."""
    code = _GEMM_MEMORY_CODE.format(opcode=MEMORY_OPCODE, n=n)
    r = _py(code, timeout=3600)
    r["extra_bytes"] = r["peak_rss_bytes"] - r["rss_before_operands_bytes"] - r["operand_and_result_bytes"]
    r["target_extra_bytes"] = TARGET_GEMM_EXTRA_BYTES
    r["meets_target"] = r["extra_bytes"] <= TARGET_GEMM_EXTRA_BYTES
    return r


def bench_memory(warps: int) -> dict:
    code = _MEMORY_CODE.format(warps=warps, chunk=min(warps, 4096), opcodes=(MEMORY_OPCODE, MEMORY_STANDIN))
    out = subprocess.run([sys.executable, "-c", _LAUNCHER_CODE, code], capture_output=True, text=True,
                         env=_repo_env(), timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"memory subprocess failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["warps"] = warps
    r["stand_in"] = r["opcode"] != MEMORY_OPCODE
    if r["stand_in"]:
        r["note"] = (f"{MEMORY_OPCODE} is not available in this build; measured {r['opcode']} instead "
                     "(same operand and result bytes per warp)")
    r["target_bytes"] = TARGET_PEAK_BYTES
    r["meets_target"] = r["peak_rss_bytes"] <= TARGET_PEAK_BYTES
    return r


# --- report --------------------------------------------------------------------

def _fmt_rate(x):
    if x is None:
        return "-"
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.1f}k"


def format_classes(report: dict) -> list:
    """The input-class table: per family and class, one-thread rate and ratio / all-cores ratio."""
    rows = [r for r in report["families"] if r.get("available") and r.get("classes")]
    if not rows:
        return []
    classes = [c for c in CLASSES if any(c in r["classes"] for r in rows)]
    lines = ["", "input classes: 1-thread rate, ratio to numpy 1 thread / all cores"]
    hdr = f"{'family':<18} " + " ".join(f"{c:>19}" for c in classes) + f" {'worst/ord':>9}"
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for r in rows:
        cells = []
        for c in classes:
            x = r["classes"].get(c)
            if x is None:
                cells.append(f"{'-':>19}")
                continue
            cells.append(f"{_fmt_rate(x['one_thread']['mma_per_s']):>6} "
                         f"{x['one_thread']['ratio_to_numpy']:>5.2f}/{x['all_cores']['ratio_to_numpy']:<5.2f}")
        lines.append(f"{r['family']:<18} " + " ".join(f"{x:>19}" for x in cells) + f" {r['class_spread']:>8.2f}x")
    return lines


def _section(lines, hdr, rows, name, row_line, note):
    """One table of the text report: its header and rule, a line per row (or why the row is not
    available), its footnote."""
    lines += ["", hdr, "-" * len(hdr)]
    for r in rows:
        lines.append(row_line(r) if r["available"] else f"{r[name]:<28} not available: {r['reason']}")
    lines.append(note)


def format_table(report: dict) -> str:
    lines = []
    m = report["machine"]
    lines.append(f"warpsim bench: {report['warps']} warps/call, median of {report['repeat']} runs, "
                 f"one-thread clock {report.get('clock_one_thread', 'wall')}, "
                 f"{m['cores']} cores, numba {m['numba']}, numpy {m['numpy']}" + _isa_note(m))
    hdr = (f"{'family':<18} {'1 thread':>10} {'all cores':>10} {'scale':>6} {'numpy f64':>10} "
           f"{'ratio 1t':>9} {'ratio all':>9} {'target':>7}")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for r in report["families"]:
        if not r["available"]:
            lines.append(f"{r['family']:<18} {'not available':>10}")
            continue
        ok = "ok" if r["meets_ratio"] else "MISS"
        lines.append(
            f"{r['family']:<18} {_fmt_rate(r['one_thread']['mma_per_s']):>10} {_fmt_rate(r['all_cores']['mma_per_s']):>10} "
            f"{r['scaling']:>5.2f}x {_fmt_rate(r['numpy_mma_per_s']):>10} {r['ratio_one_thread']:>9.2f} "
            f"{r['ratio_all_cores']:>9.2f} {'<=' + format(r['target_ratio'], 'g'):>5} {ok}")
    lines.append("(rates in warp-MMAs per second; ratio = warpsim time / numpy float64 batched matmul time)")
    lines += format_classes(report)
    s = report.get("startup")
    if s:
        lines.append(f"import warpsim: {s['import_s'] * 1e3:.0f} ms; first mma ({s['warps']} warps): "
                     f"cold numba cache {s['first_mma_cold_cache_s']:.2f} s, warm {s['first_mma_warm_cache_s']:.2f} s")
    mem = report.get("memory")
    if mem:
        lines.append(f"peak RSS, {mem['warps']} warps of {mem['opcode'].split('.', 3)[3]}: "
                     f"{mem['peak_rss_bytes'] / 2**20:.0f} MiB (operands+result {mem['operand_and_result_bytes'] / 2**20:.0f} MiB, "
                     f"before operands {mem['rss_before_operands_bytes'] / 2**20:.0f} MiB)"
                     + (" [stand-in: f16 not available]" if mem["stand_in"] else ""))
    gm = report.get("gemm_memory")
    if gm:
        lines.append(f"peak RSS, warpsim.gemm {gm['n']}^3 f16 -> f32: {gm['peak_rss_bytes'] / 2**20:.0f} MiB; beyond "
                     f"the process before its operands ({gm['rss_before_operands_bytes'] / 2**20:.0f} MiB) and its "
                     f"operands and result ({gm['operand_and_result_bytes'] / 2**20:.0f} MiB): "
                     f"{gm['extra_bytes'] / 2**20:.0f} MiB (target <= {gm['target_extra_bytes'] / 2**20:.0f} MiB: "
                     f"{'holds' if gm['meets_target'] else 'MISSED'})")
    if report.get("paths"):
        _section(lines, f"{'path (all cores)':<28} {'MAC/s':>8} {'ratio':>7} {'target':>7}  reference",
                 report["paths"], "path",
                 lambda r: f"{r['path']:<28} {_fmt_rate(r['macs_per_s']):>8} {r['ratio']:>7.2f} "
                           f"{'<=' + format(r['target_ratio'], 'g'):>6} {'ok' if r['meets_ratio'] else 'MISS'}  "
                           f"{r['reference']}" + _gemm_size(r) + _engines(r),
                 "(ratio = time per multiply-add / the reference's, interleaved in the same run)")
    if report.get("gemms"):
        _section(lines, f"{'whole GEMM (all cores)':<28} {'warpsim':>9} {'numpy f64':>10} {'ratio':>7} {'target':>7}  MAC/s",
                 report["gemms"], "gemm",
                 lambda r: f"{r['gemm']:<28} {r['warpsim_s']:>8.2f}s {r['numpy_f64_s']:>9.3f}s {r['ratio']:>7.1f} "
                           f"{'<=' + format(r['target_ratio'], 'g'):>6} {'ok' if r['meets_ratio'] else 'MISS'}  "
                           f"{_fmt_rate(r['macs_per_s'])}",
                 "(ratio = warpsim.gemm time / numpy float64 A @ B time on the same matrices, same run)")
    lines += format_kernels(report.get("kernels") or [])
    lines += bench_sfu.format_lines(report.get("sfu"))
    t = report.get("targets_missed")
    if t:
        def _say(names):
            return "all hold" if not names else "missed by " + ", ".join(names)
        lines.append(f"targets (every input class): ratio <= {TARGET_RATIO_INT:g} (int, b1): {_say(t['ratio_int_b1'])}; "
                     f"ratio <= {TARGET_RATIO_FLOAT:g} (float): {_say(t['ratio_float'])}; "
                     f"slowest class <= {TARGET_CLASS_SPREAD:g}x ordinary (float): {_say(t['class_spread'])}; "
                     f"all cores >= {TARGET_SCALING:g}x one thread: {_say(t['scaling'])}"
                     + (f"; peak <= 2 GiB: {'holds' if t['memory_ok'] else 'missed'}" if "memory_ok" in t else ""))
        if "path_ratio" in t:
            lines.append(f"path targets (per multiply-add vs mma f16 <= {TARGET_PATH_RATIO:g}; PTX vs gemm <= "
                         f"{TARGET_PTX_COMPILED_RATIO:g} compiled, CUTLASS <= {TARGET_CUTLASS_COMPILED_RATIO:g}, "
                         f"<= {TARGET_PTX_RATIO:g} on the interpreter): {_say(t['path_ratio'])}")
        if "gemm_ratio" in t:
            lines.append(f"whole-GEMM targets (ratio per row): {_say(t['gemm_ratio'])}")
        if "kernel_ratio" in t:
            lines.append(f"whole-kernel targets (ratio to numpy float32 per row): {_say(t['kernel_ratio'])}")
        if "first_compile" in t:
            lines.append(f"first compile (apart from the ratios): a PTX file of <= {TARGET_FIRST_COMPILE_LINES:,} lines "
                         f"in <= {TARGET_FIRST_COMPILE_S:g} s (compiles only; c: loaded from the kernel cache, not "
                         f"judged): {_say(t['first_compile'])}"
                         + (f" (this host compiles numba's reference function in {m['reference_compile_s']:.2f} s)"
                            if m.get("reference_compile_s") else ""))
        if t["not_available"]:
            lines.append("not available in this build: " + ", ".join(t["not_available"]))
    return "\n".join(lines)


def _verdict(ok) -> str:
    return "-" if ok is None else ("yes" if ok else "**no**")


def format_markdown(report: dict) -> str:
    """The report as Markdown tables (docs/speed.md's figures): every family and input class, every
    path, every GEMM, the memory figures, each against its target."""
    out = []
    m = report["machine"]
    out.append(f"{report['warps']:,} warps per call, median of {report['repeat']} runs, one-thread clock "
               f"{report.get('clock_one_thread', 'wall')}; {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}, "
               f"numba {m['numba']}" + _isa_note(m) + (f"; commit {report['commit']}" if report.get("commit") else "")
               + (f"; reference compile {m['reference_compile_s']:.2f} s" if m.get("reference_compile_s") else "")
               + ".")
    rows = [r for r in report["families"] if r.get("available") and r.get("classes")]
    if rows:
        out += ["", "One thread, per input class: warp-MMAs per second / ratio to numpy float64 batched matmul "
                    "(same shapes, same run); all cores / one thread is the lowest over the classes.", ""]
        out.append("| family | " + " | ".join(CLASSES) + " | slowest / ordinary | all cores / 1 thread | target | met |")
        out.append("| --- " * (len(CLASSES) + 5) + "|")
        for r in rows:
            cells = []
            for c in CLASSES:
                x = r["classes"].get(c)
                cells.append("-" if x is None else
                             f"{_fmt_rate(x['one_thread']['mma_per_s'])} / {x['one_thread']['ratio_to_numpy']:.2f}")
            scale = min(x["scaling"] for x in r["classes"].values())
            ok = r["meets_ratio"] and r.get("meets_class_spread") is not False and r.get("meets_scaling") is not False
            tgt = f"<= {r['target_ratio']:g}" + (f", spread <= {TARGET_CLASS_SPREAD:g}" if r["kind"] == "float" else "")
            out.append(f"| {r['family']} | " + " | ".join(cells) + f" | {r['class_spread']:.2f} | {scale:.2f}x | "
                       f"{tgt}, scale >= {TARGET_SCALING:g} | {_verdict(ok)} |")
    if report.get("paths"):
        out += ["", "Paths, all cores: time per multiply-add over `mma` f16 m16n8k16 (the PTX rows: over "
                    "`warpsim.gemm` on the same problem), interleaved in the same run.", "",
                "| path | multiply-adds / s | ratio | target | met |", "| --- | --- | --- | --- | --- |"]
        for r in report["paths"]:
            if not r.get("available"):
                out.append(f"| {r['path']} | not available: {r.get('reason')} | | | |")
                continue
            out.append(f"| {r['path']} | {_fmt_rate(r['macs_per_s'])} | {r['ratio']:.2f}{_engines(r)} | "
                       f"<= {r['target_ratio']:g} | {_verdict(r['meets_ratio'])} |")
    if report.get("gemms"):
        out += ["", "Whole GEMMs, all cores: `warpsim.gemm` against numpy float64 `A @ B` on the same matrices "
                    "(same run).", "", "| GEMM | warpsim | numpy f64 | ratio | target | met |",
                "| --- | --- | --- | --- | --- | --- |"]
        for r in report["gemms"]:
            if not r.get("available"):
                out.append(f"| {r['gemm']} | not available: {r.get('reason')} | | | | |")
                continue
            tgt = r.get("target_ratio")
            out.append(f"| {r['gemm']} | {r['warpsim_s']:.3f} s | {r['numpy_f64_s']:.4f} s | {r['ratio']:.1f} | "
                       f"{'<= ' + format(tgt, 'g') if tgt else '-'} | {_verdict(r['meets_ratio'] if tgt else None)} |")
    out += bench_sfu.format_lines(report.get("sfu"), markdown=True)
    mem, gm = report.get("memory"), report.get("gemm_memory")
    if mem or gm:
        out.append("")
    if mem:
        out.append(f"- Peak resident memory of one `warpsim.mma` call on {mem['warps']:,} warps of "
                   f"`{mem['opcode']}`: {mem['peak_rss_bytes'] / 2**20:,.0f} MiB, of which operands and result "
                   f"{mem['operand_and_result_bytes'] / 2**20:,.0f} MiB (target <= 2 GiB: "
                   f"{'met' if mem['meets_target'] else 'missed'}).")
    if gm:
        out.append(f"- `warpsim.gemm` {gm['n']}^3 f16 -> f32: {gm['extra_bytes'] / 2**20:,.0f} MiB beyond its operands "
                   f"and result ({gm['operand_and_result_bytes'] / 2**20:,.0f} MiB) and the process before them "
                   f"(target <= 1 GiB: {'met' if gm['meets_target'] else 'missed'}).")
    s = report.get("startup")
    if s:
        out.append(f"- `import warpsim` {s['import_s'] * 1e3:.0f} ms; first `mma` call "
                   f"{s['first_mma_warm_cache_s']:.2f} s with a warm numba cache, {s['first_mma_cold_cache_s']:.1f} s cold.")
    return "\n".join(out) + "\n"


#: the generated speed block of docs/speed.md (``--report JSON --readme docs/speed.md`` rewrites it)
SPEED_REPORT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "speed.json"
SPEED_DOC = Path(__file__).resolve().parents[2] / "docs" / "speed.md"
SPEED_BEGIN = "<!-- speed:begin (generated by `warpsim bench --report benchmarks/results/speed.json --readme docs/speed.md`) -->"
SPEED_END = "<!-- speed:end -->"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="warpsim bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--warps", type=int, default=None, help="warps per call (default 16384; --quick: 256)")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per measurement (default 7; --quick: 2)")
    ap.add_argument("--quick", action="store_true", help="small sizes (for tests)")
    ap.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    ap.add_argument("--family", action="append", default=None, help="only rows whose name contains this")
    ap.add_argument("--classes", default=",".join(CLASSES),
                    help=f"comma-separated input classes (default: all of {','.join(CLASSES)})")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="one-thread timings in wall time (default) or process CPU time (steadier on a shared machine)")
    ap.add_argument("--no-startup", action="store_true", help="skip the import / first-call measurements")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    ap.add_argument("--memory-warps", type=int, default=None, help="warps for the memory run (default 1,000,000)")
    ap.add_argument("--gemm-memory-size", type=int, default=None,
                    help="n of the n^3 gemm whose peak memory is measured (default 4096; --quick: 256)")
    ap.add_argument("--no-gemm", action="store_true", help="skip the whole-GEMM rows")
    ap.add_argument("--no-paths", action="store_true", help="skip the wgmma / sm_89 / sm_120a / PTX path rows")
    ap.add_argument("--no-kernels", action="store_true", help="skip the whole-kernel rows (Triton softmax, layernorm, "
                                                               "flash attention from their PTX)")
    ap.add_argument("--no-sfu", action="store_true", help="skip the special-function rows (bench_sfu)")
    ap.add_argument("--save", nargs="?", const=str(HISTORY), default=None, metavar="HISTORY",
                    help="append this run's JSON with the commit to the history (default benchmarks/results/"
                         "history.jsonl)")
    ap.add_argument("--plot", metavar="SVG", help="draw rate per row over the history's commits and exit "
                                                  "(--history names the file)")
    ap.add_argument("--history", default=str(HISTORY), help="history file for --plot")
    ap.add_argument("--isa", default=None, help="with --plot: only the runs of this vector ISA label (\"AVX2\", "
                                                "\"AVX-512\", \"AVX2 on AVX-512\")")
    ap.add_argument("--markdown", action="store_true", help="print the report as Markdown tables (docs/speed.md's)")
    ap.add_argument("--readme", metavar="MD", help="with --report: rewrite the Markdown file's generated speed block")
    ap.add_argument("--report", metavar="JSON", help="print a saved report (--json) instead of measuring")
    ap.add_argument("--codegen", choices=("host", "avx2"), default="host",
                    help="the vector ISA numba compiles for: the host's (default), or AVX2 (haswell) on an "
                         "AVX-512 host, to measure what an AVX2 machine runs (re-runs this command with "
                         "NUMBA_CPU_NAME / NUMBA_CPU_FEATURES set; numba caches each build apart)")
    ap.add_argument("--gemm-size", type=int, default=None,
                    help="n of every n x n x n GEMM row instead of the table's (--quick: 128)")
    args = ap.parse_args(argv)
    if args.report:
        report = json.loads(Path(args.report).read_text())
        if args.readme:
            from .docs import update_block

            changed = update_block(args.readme, SPEED_BEGIN, SPEED_END, format_markdown(report).rstrip("\n"))
            _log(f"{args.readme}: speed tables {'rewritten' if changed else 'already current'}")
            return 0
        print(format_markdown(report) if args.markdown else format_table(report), end="" if args.markdown else "\n")
        return 0
    if args.plot:
        n = plot_history(args.plot, args.history, args.isa)
        _log(f"wrote {args.plot} ({n} rows)")
        return 0
    if args.codegen == "avx2" and os.environ.get("NUMBA_CPU_NAME") is None:
        from ..engine.hostisa import avx2_environment

        rest = [a for a in (sys.argv[1:] if argv is None else list(argv)) if a not in ("--codegen=avx2",)]
        if "--codegen" in rest:
            i = rest.index("--codegen")
            del rest[i:i + 2]
        env = dict(os.environ, **avx2_environment())
        return subprocess.run([sys.executable, "-m", "warpsim", "bench", *rest, "--codegen", "avx2"],
                              env=env).returncode
    warps = args.warps or (256 if args.quick else 16384)
    repeat = args.repeat or (2 if args.quick else 7)
    mem_warps = args.memory_warps or (4096 if args.quick else 1_000_000)

    import numba

    from ..engine.hostisa import describe

    threads_all = numba.config.NUMBA_NUM_THREADS
    report = {
        "warps": warps, "repeat": repeat, "quick": args.quick, "clock_one_thread": args.clock,
        "machine": {"cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(), "numba_threads": threads_all, "python": platform.python_version(),
                    "numpy": np.__version__, "numba": numba.__version__, "platform": platform.platform(),
                    "reference_compile_s": reference_compile_s(), **describe()},
        "targets": {"ratio_int_b1": TARGET_RATIO_INT, "ratio_float": TARGET_RATIO_FLOAT,
                    "scaling_all_cores": TARGET_SCALING, "peak_bytes_1M_warps": TARGET_PEAK_BYTES},
        "families": [],
    }
    classes = tuple(c for c in args.classes.split(",") if c)
    bad = [c for c in classes if c not in CLASSES]
    if bad:
        ap.error(f"unknown input class(es) {bad}; allowed: {', '.join(CLASSES)}")
    fams = [f for f in FAMILIES if not args.family or any(s in f[0] for s in args.family)]
    for i, (name, opcode) in enumerate(fams):
        _log(f"[{i + 1}/{len(fams)}] {name}")
        try:
            row = bench_family(name, opcode, warps, repeat, threads_all, classes, args.clock)
        except Exception as exc:  # report, never abort the whole run
            row = {"family": name, "opcode": opcode, "available": False, "reason": f"error: {exc!r}"}
        report["families"].append(row)
    if not args.no_gemm:
        report["gemms"] = []
        gsize = args.gemm_size or (128 if args.quick else None)
        grepeat = 2 if args.quick else 3
        rows = [g for g in GEMMS if not args.family or any(s in g[0] for s in args.family)]
        seen = set()
        for i, (name, opcode, n, target) in enumerate(rows):
            n = gsize or n
            if (opcode, n) in seen:
                continue
            seen.add((opcode, n))
            _log(f"[gemm {i + 1}/{len(rows)}] {name} (n = {n})")
            try:
                row = bench_gemm(name if not gsize else f"{name.rsplit(' ', 1)[0]} {n}^3", opcode, n, target, grepeat)
            except Exception as exc:  # report, never abort the whole run
                row = {"gemm": name, "opcode": opcode, "n": n, "available": False, "reason": f"error: {exc!r}"}
            report["gemms"].append(row)
    if not args.no_paths:
        report["paths"] = bench_paths(repeat, args.quick, args.family)
    if not args.no_kernels:
        _log("whole kernels (one thread)")
        report["kernels"] = bench_kernels_one_thread(repeat, args.quick, args.family)
    if not args.no_sfu:
        report["sfu"] = bench_sfu.bench_sfu((1 << 14) if args.quick else (1 << 22), repeat, threads_all, _time_pair,
                                            args.family, CLOCKS[args.clock])
    if not args.no_startup:
        report["startup"] = bench_startup(64)
    if not args.no_memory:
        _log(f"memory: {mem_warps} warps")
        report["memory"] = bench_memory(mem_warps)
        gn = args.gemm_memory_size or (256 if args.quick else 4096)
        _log(f"memory: warpsim.gemm {gn}^3")
        report["gemm_memory"] = bench_gemm_memory(gn)
    report["targets_missed"] = targets_summary(report)
    report["commit"] = _commit()
    print(format_markdown(report) if args.markdown else format_table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
        _log(f"wrote {args.json}")
    if args.save:
        ent = save_history(report, args.save)
        _log(f"appended the run (commit {ent['commit']}) to {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
