"""``warpsim bench`` rows for the special-function unit: words per second of one PTX form per family
(the jitted path that the PTX rows run), and the ratio to numpy's own function of the same inputs
(float32; float64 for the f64 forms; the 16-bit forms' halves widened to float32), timed interleaved
in the same run.  Target (issue 29): within 5x of numpy on one thread."""

from __future__ import annotations

import statistics
import time

import numpy as np

TARGET_RATIO = 5.0


def _pos(rng, n):
    """Positive f32 values spread over 2**-40 .. 2**40 (random significands)."""
    return np.exp2(rng.uniform(-40, 40, n)).astype(np.float32)


def _f16x2(rng, n, dt):
    """Packed pairs of 16-bit values in [-8, 8] (dt float16, or 'bf16': the top half of an f32)."""
    v = rng.uniform(-8, 8, 2 * n).astype(np.float32)
    h = v.astype(np.float16).view(np.uint16) if dt == "f16" else (v.view(np.uint32) >> 16).astype(np.uint16)
    w = h.astype(np.uint32)
    return w[0::2] | (w[1::2] << 16), v


#: (row name, PTX form, inputs(rng, n) -> (warpsim operand words, numpy function on the same inputs))
def _rows():
    def unary(gen, fn):
        def make(rng, n):
            x = gen(rng, n)
            return (x.view(np.uint32),), (lambda: fn(x))
        return make

    def div(rng, n):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        return (a.view(np.uint32), b.view(np.uint32)), (lambda: np.divide(a, b))

    def f64(fn):
        def make(rng, n):
            x = np.exp2(rng.uniform(-300, 300, n))
            return (x.view(np.uint64),), (lambda: fn(x))
        return make

    def half(dt, fn):
        def make(rng, n):
            w, v = _f16x2(rng, n, dt)
            return (w,), (lambda: fn(v))
        return make

    return (
        ("sfu rcp f32", "rcp.approx.f32", unary(_pos, np.reciprocal), "np.reciprocal f32"),
        ("sfu rsqrt f32", "rsqrt.approx.f32", unary(_pos, lambda x: np.reciprocal(np.sqrt(x))), "1/np.sqrt f32"),
        ("sfu sqrt f32", "sqrt.approx.f32", unary(_pos, np.sqrt), "np.sqrt f32"),
        ("sfu ex2 f32", "ex2.approx.f32",
         unary(lambda r, n: r.uniform(-30, 10, n).astype(np.float32), np.exp2), "np.exp2 f32"),
        ("sfu lg2 f32", "lg2.approx.f32", unary(_pos, np.log2), "np.log2 f32"),
        ("sfu sin f32", "sin.approx.f32", unary(lambda r, n: r.uniform(-20, 20, n).astype(np.float32), np.sin),
         "np.sin f32"),
        ("sfu cos f32", "cos.approx.f32", unary(lambda r, n: r.uniform(-20, 20, n).astype(np.float32), np.cos),
         "np.cos f32"),
        ("sfu tanh f32", "tanh.approx.f32", unary(lambda r, n: r.uniform(-6, 6, n).astype(np.float32), np.tanh),
         "np.tanh f32"),
        ("sfu div.full f32", "div.full.f32", div, "np.divide f32"),
        ("sfu div.approx f32", "div.approx.f32", div, "np.divide f32"),
        ("sfu rcp f64", "rcp.approx.ftz.f64", f64(np.reciprocal), "np.reciprocal f64"),
        ("sfu rsqrt f64", "rsqrt.approx.f64", f64(lambda x: np.reciprocal(np.sqrt(x))), "1/np.sqrt f64"),
        ("sfu ex2 f16x2", "ex2.approx.f16x2", half("f16", np.exp2), "np.exp2 f32 of both halves"),
        ("sfu tanh bf16x2", "tanh.approx.bf16x2", half("bf16", np.tanh), "np.tanh f32 of both halves"),
    )


ROWS = _rows()


def bench_sfu(words, repeat, threads_all, time_pair, names=None, clock=time.perf_counter):
    """One row per family: one-thread and all-cores words/s, the one-thread ratio to numpy (``time_pair``:
    bench's interleaved timer, passed in so that this module does not import bench)."""
    import numba

    from ..ptx import sfu_ops

    out = []
    rng = np.random.default_rng(7)
    for name, form, make, ref_name in ROWS:
        if names and not any(s in name for s in names):
            continue
        fn = sfu_ops.FORMS[form][0]
        ops, ref = make(rng, words)
        row = {"family": name, "form": form, "words": words, "numpy": ref_name}
        for label, nt in (("one_thread", 1), ("all_cores", threads_all)):
            numba.set_num_threads(nt)
            fn(*ops)                              # compile / load the tables
            ts, rs, ratio = time_pair(lambda: fn(*ops), ref, repeat, clock if nt == 1 else time.perf_counter)
            med = statistics.median(ts)
            row[label] = {"threads": nt, "seconds": med, "words_per_s": words / med, "ratio_to_numpy": ratio,
                          "numpy_words_per_s": words / statistics.median(rs)}
        numba.set_num_threads(threads_all)
        row["ratio_one_thread"] = row["one_thread"]["ratio_to_numpy"]
        row["target_ratio"] = TARGET_RATIO
        row["meets_ratio"] = row["ratio_one_thread"] <= TARGET_RATIO
        out.append(row)
    return out


def _rate(x):
    return f"{x / 1e6:.1f}M"


def format_lines(rows, markdown=False):
    """The SFU rows as text (or Markdown) table lines."""
    if not rows:
        return []
    if markdown:
        lines = ["", "Special-function unit: PTX words per second (jitted path) and the one-thread ratio to numpy's "
                     "function of the same inputs (interleaved, same run).", "",
                 "| family | form | 1 thread | all cores | numpy 1 thread | ratio | target | met |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| {r['family']} | `{r['form']}` | {_rate(r['one_thread']['words_per_s'])} | "
                         f"{_rate(r['all_cores']['words_per_s'])} | {_rate(r['one_thread']['numpy_words_per_s'])} "
                         f"({r['numpy']}) | {r['ratio_one_thread']:.1f} | <= {r['target_ratio']:g} | "
                         f"{'yes' if r['meets_ratio'] else '**no**'} |")
        return lines
    hdr = f"{'special function':<20} {'1 thread':>9} {'all cores':>9} {'numpy 1t':>9} {'ratio':>7} {'target':>7}"
    lines = ["", hdr, "-" * len(hdr)]
    for r in rows:
        lines.append(f"{r['family']:<20} {_rate(r['one_thread']['words_per_s']):>9} "
                     f"{_rate(r['all_cores']['words_per_s']):>9} {_rate(r['one_thread']['numpy_words_per_s']):>9} "
                     f"{r['ratio_one_thread']:>7.1f} {'<=' + format(r['target_ratio'], 'g'):>5} "
                     f"{'ok' if r['meets_ratio'] else 'MISS'}")
    lines.append("(words per second; ratio = warpsim time / numpy's function of the same inputs, one thread)")
    return lines
