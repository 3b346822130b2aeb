"""The exhaustive special-function sweep: the GPU computes each PTX form over its whole operand space
and warpsim's model computes the same operands on the CPU cores; every differing word is counted.

    OUT=/some/dir python3 -m warpsim.hw sfu-sweep [--tables] [--forms rcp.approx.f32,...] [--workers N]

``--tables`` first captures the MUFU tables (the canonical binades of each operation, every word of
the 16-bit operations) and writes ``$OUT/tables.npz`` (the committed ``warpsim/numerics/sfu_data/``
file), then sweeps with them.  Operand spaces: every 32-bit word of an f32 form and of packed 16-bit
forms (both halves at once), every 16-bit word of scalar 16-bit forms, every upper word of the f64
forms (lower word a fixed pseudo-random function of the upper word), and for division every divisor
word with a pseudo-random dividend (2**32 pairs, every divisor mantissa in every binade).  Reports
``$OUT/sfu_sweep.json``: per form the operands checked, the differing words and the first of them.
Needs CuPy and ptxas on the GPU machine; the model side is plain warpsim.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from ...numerics import sfu
from ...ptx import sfu_ops

MUL_A = 2654435761        # dividend / lower word = operand index * MUL_A mod 2**32 (a permutation)
CHUNK = 1 << 27

# the PTX form whose MUFU alone computes each table (ptxas emits nothing else around it)
TABLE_FORMS = {"rcp": "rcp.approx.ftz.f32", "rsq_odd": "rsqrt.approx.ftz.f32", "rsq_even": "rsqrt.approx.ftz.f32",
               "sqrt_odd": "sqrt.approx.ftz.f32", "sqrt_even": "sqrt.approx.ftz.f32",
               "ex2_pos": "ex2.approx.ftz.f32", "ex2_neg": "ex2.approx.ftz.f32",
               "rcp64h": "rcp.approx.ftz.f64", "rsq64h_odd": "rsqrt.approx.ftz.f64", "rsq64h_even": "rsqrt.approx.ftz.f64",
               "ex2_f16": "ex2.approx.f16", "ex2_bf16": "ex2.approx.ftz.bf16",
               "tanh_f16": "tanh.approx.f16", "tanh_bf16": "tanh.approx.bf16"}


def kernel_name(form):
    return "k_" + form.replace(".", "_")


def ptx_source(forms):
    """One kernel per form: operand i of the launch is ``base + i`` (a second operand, or the lower
    word of an f64, ``(base + i) * MUL_A``); results stored at index i."""
    out = [".version 8.7", ".target sm_90a", ".address_size 64"]
    for form in forms:
        widths = sfu_ops.FORMS[form][1]
        head = (f".visible .entry {kernel_name(form)}(.param .u64 out, .param .u32 base, .param .u32 n) {{\n"
                ".reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .f64 %fd<4>; .reg .b16 %h<4>; .reg .pred %p<2>;\n"
                "ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd2, %rd1; ld.param.u32 %r7, [base]; ld.param.u32 %r6, [n];\n"
                "mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.u32 %r4, %r1, %r2, %r3;\n"
                "setp.ge.u32 %p1, %r4, %r6; @%p1 ret; add.u32 %r5, %r4, %r7;\n"
                f"mul.lo.u32 %r8, %r5, {MUL_A};\n")
        if widths == (32,):
            body = (f"mov.b32 %f1, %r5; {form} %f2, %f1; mov.b32 %r9, %f2;\n"
                    "mul.wide.u32 %rd3, %r4, 4; add.s64 %rd4, %rd2, %rd3; st.global.u32 [%rd4], %r9;\n")
            if form.endswith("x2"):
                body = (f"{form} %r9, %r5;\n"
                        "mul.wide.u32 %rd3, %r4, 4; add.s64 %rd4, %rd2, %rd3; st.global.u32 [%rd4], %r9;\n")
        elif widths == (16,):
            body = (f"cvt.u16.u32 %h1, %r5; {form} %h2, %h1; cvt.u32.u16 %r9, %h2;\n"
                    "mul.wide.u32 %rd3, %r4, 4; add.s64 %rd4, %rd2, %rd3; st.global.u32 [%rd4], %r9;\n")
        elif widths == (32, 32):
            body = (f"mov.b32 %f1, %r8; mov.b32 %f3, %r5; {form} %f2, %f1, %f3; mov.b32 %r9, %f2;\n"
                    "mul.wide.u32 %rd3, %r4, 4; add.s64 %rd4, %rd2, %rd3; st.global.u32 [%rd4], %r9;\n")
        else:
            body = (f"mov.b64 %fd1, {{%r8, %r5}}; {form} %fd2, %fd1; mov.b64 %rd5, %fd2;\n"
                    "mul.wide.u32 %rd3, %r4, 8; add.s64 %rd4, %rd2, %rd3; st.global.u64 [%rd4], %rd5;\n")
        out.append(head + body + "ret; }")
    return "\n".join(out) + "\n"


def operands(form, base, n):
    """The operands of launch indices [base, base + n), as the kernel forms them."""
    return operands_at(form, np.arange(base, base + n, dtype=np.uint64))


def operands_at(form, index):
    """The operands of the given launch indices (uint64 array), as the kernel forms them."""
    i = np.asarray(index, np.uint64)
    w = (i & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    other = ((i * np.uint64(MUL_A)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    widths = sfu_ops.FORMS[form][1]
    if widths == (16,):
        return (w.astype(np.uint16),)
    if widths == (32, 32):
        return (other, w)
    if widths == (64,):
        return ((w.astype(np.uint64) << np.uint64(32)) | other.astype(np.uint64),)
    return (w,)


def space(form):
    return 1 << 16 if sfu_ops.FORMS[form][1] == (16,) else 1 << 32


EDGES = [0, 1, 2, 0x7FFFFF, 0x800000, 0x800001, 0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x40000000, 0x42FC0000,
         0x42FE0000, 0x43000000, 0x7E800000, 0x7E800001, 0x7F000000, 0x7F7FFFFF, 0x7F800000, 0x7F800001,
         0x7FC00000, 0x7FFFFFFF]


def sample_indices(form, n=4096):
    """The operand indices whose GPU words are kept as the committed sample of a form: every edge
    word with either sign, then pseudo-random ones (fixed seed)."""
    top = space(form)
    edges = [e for e in EDGES + [e | 0x80000000 for e in EDGES] if e < top]
    rnd = np.random.default_rng(7).integers(0, top, n, dtype=np.uint64)
    return np.unique(np.concatenate([np.array(edges, np.uint64), rnd]))


def _check(args):
    form, base, lo, hi, path = args
    gpu = np.load(path, mmap_mode="r")[lo:hi]
    model = np.asarray(sfu_ops.FORMS[form][0](*operands(form, base + lo, hi - lo)))
    model = model.astype(gpu.dtype)
    bad = np.nonzero(model != gpu)[0]
    first = [[int(x) for x in (base + lo + j, gpu[j], model[j])] for j in bad[:20]]
    return len(bad), first


def run_gpu(cp, mod, form, base, n):
    widths = sfu_ops.FORMS[form][1]
    out = cp.zeros(n, dtype=cp.uint64 if widths == (64,) else cp.uint32)
    mod.get_function(kernel_name(form))(((n + 255) // 256,), (256,), (out, np.uint32(base & 0xFFFFFFFF), np.uint32(n)))
    res = out.get()
    return res.astype(np.uint16) if widths == (16,) else res


def capture_tables(cp, mod):
    store = {}
    for name, form in TABLE_FORMS.items():
        t = sfu.TABLES[name]
        canon = t.canonical()
        base, n = int(canon[0]), len(canon)
        assert (canon == np.arange(base, base + n, dtype=np.uint64).astype(canon.dtype)).all()
        words = run_gpu(cp, mod, form, base, n)
        if sfu_ops.FORMS[form][1] == (64,):
            words = (words >> np.uint64(32)).astype(np.uint32)
        store.update(sfu.encode(name, words.astype(np.uint32)))
    return store


def main(argv=None):
    import argparse

    import cupy as cp

    ap = argparse.ArgumentParser(prog="python -m warpsim.hw sfu-sweep")
    ap.add_argument("--tables", action="store_true", help="capture the MUFU tables first ($OUT/tables.npz)")
    ap.add_argument("--forms", default=",".join(sfu_ops.FORMS), help="comma-separated PTX forms to sweep")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--limit", type=int, default=0, help="sweep only the first N operands of each form (a smoke test)")
    args = ap.parse_args(argv)
    out_dir = os.environ.get("OUT") or "."
    forms = [f for f in args.forms.split(",") if f]
    unknown = [f for f in forms if f not in sfu_ops.FORMS]
    if unknown:
        raise SystemExit(f"unknown forms {unknown}; known: {sorted(sfu_ops.FORMS)}")
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "sweep.ptx")
        with open(src, "w") as fh:
            fh.write(ptx_source(sorted(set(forms) | set(TABLE_FORMS.values()))))
        subprocess.run(["ptxas", "-arch=sm_90a", src, "-o", os.path.join(tmp, "sweep.cubin")], check=True)
        mod = cp.RawModule(path=os.path.join(tmp, "sweep.cubin"))
        if args.tables:
            store = capture_tables(cp, mod)
            np.savez(os.path.join(out_dir, "tables.npz"), **store)
            print("tables:", sfu.load(os.path.join(out_dir, "tables.npz")), f"{time.time() - t0:.1f} s", flush=True)
        report = {"device": str(cp.cuda.runtime.getDeviceProperties(0)["name"]), "forms": {}}
        samples = {}
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else tmp
        path = os.path.join(shm, "sfu_gpu_chunk.npy")
        with mp.get_context("fork").Pool(args.workers) as pool:
            for form in forms:
                total = args.limit or space(form)
                bad, first, done = 0, [], 0
                keep = sample_indices(form)
                kept = []
                for base in range(0, total, CHUNK):
                    n = min(CHUNK, total - base)
                    words = run_gpu(cp, mod, form, base, n)
                    sel = keep[(keep >= base) & (keep < base + n)]
                    kept.append(words[(sel - base).astype(np.int64)])
                    np.save(path, words)
                    step = -(-n // args.workers)
                    jobs = [(form, base, lo, min(lo + step, n), path) for lo in range(0, n, step)]
                    for b, f in pool.map(_check, jobs):
                        bad += b
                        first.extend(f[: max(0, 20 - len(first))])
                    done += n
                report["forms"][form] = {"operands": done, "differing": bad, "first": first}
                samples[form + ".index"] = keep[keep < total]
                samples[form + ".words"] = np.concatenate(kept)
                np.savez_compressed(os.path.join(out_dir, "sfu_samples.npz"), **samples)
                print(f"{form}: {done} operands, {bad} differing  ({time.time() - t0:.0f} s)", flush=True)
                with open(os.path.join(out_dir, "sfu_sweep.json"), "w") as fh:
                    json.dump(report, fh, indent=1)
        if os.path.exists(path):
            os.remove(path)
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
