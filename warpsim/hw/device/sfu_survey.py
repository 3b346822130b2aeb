"""Survey the special-function unit (MUFU) on a GPU: per-binade statistics and key-binade words.

    OUT=/some/dir python3 warpsim/hw/device/sfu_survey.py      # on an H100/H200 with ptxas and CuPy

Each raw MUFU operation is reached through the PTX form that ptxas lowers to that MUFU alone
(``ex2.approx.ftz.f32`` -> ``MUFU.EX2``, ...; ``sin``/``cos`` through their one ``FMUL.RZ`` by
1/(2 pi)).  For every (sign, exponent) binade of the input the GPU computes all outputs; the host
side (CuPy) compares them with the correctly rounded function and records, per binade, a histogram
of the differences in units of the output's last place and a fingerprint of the whole difference
sequence (equal fingerprints: the binade repeats another's mantissa pattern).  The differences of
the key binades are saved whole (lzma) so the table structure can be studied offline.  ``--second``
surveys the sin/cos turn grid, lg2 binades and tanh's operand quantisation (it imports warpsim's
deterministic references; the first survey is numpy and CuPy only).

    OUT=/some/dir python3 warpsim/hw/device/sfu_survey.py --second [--sc-only]
"""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# unit -> (PTX form, operand kind, key binades as (sign, exponent field))
UNITS = {
    "rcp": ("rcp.approx.ftz.f32", "f32", [(0, 127)]),
    "rsq": ("rsqrt.approx.ftz.f32", "f32", [(0, 127), (0, 128)]),
    "sqrt": ("sqrt.approx.ftz.f32", "f32", [(0, 127), (0, 128)]),
    "lg2": ("lg2.approx.ftz.f32", "f32", [(0, 126), (0, 127)]),
    "ex2": ("ex2.approx.ftz.f32", "f32", [(0, 126), (0, 127), (1, 126), (1, 127)]),
    "sin": ("sin.approx.ftz.f32", "f32", [(0, 126), (0, 127), (0, 128), (0, 129)]),
    "cos": ("cos.approx.ftz.f32", "f32", [(0, 126), (0, 127), (0, 128), (0, 129)]),
    "tanh": ("tanh.approx.f32", "f32", [(0, 125), (0, 126), (0, 127)]),
    "rcp64h": ("rcp.approx.ftz.f64", "f64", [(0, 1023)]),
    "rsq64h": ("rsqrt.approx.ftz.f64", "f64", [(0, 1023), (0, 1024)]),
}
HALF_UNITS = {  # 16-bit forms: every input, and the x2 form checked against the scalar one
    "ex2_f16": ("ex2.approx.f16", "ex2.approx.f16x2"),
    "ex2_bf16": ("ex2.approx.ftz.bf16", "ex2.approx.ftz.bf16x2"),
    "tanh_f16": ("tanh.approx.f16", "tanh.approx.f16x2"),
    "tanh_bf16": ("tanh.approx.bf16", "tanh.approx.bf16x2"),
}
TWO_PI = 6.283185307179586
INV_2PI_F32 = np.float32(0.15915493667125701904)


def ptx_source():
    head = [".version 8.7", ".target sm_90a", ".address_size 64"]
    body = []
    idx = ("mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.u32 %r4, %r1, %r2, %r3;"
           "setp.ge.u32 %p1, %r4, %r6; @%p1 ret; add.u32 %r5, %r4, %r7;")
    for name, (form, kind, _) in UNITS.items():
        if kind == "f32":
            op = f"mov.b32 %f1, %r5; {form} %f2, %f1; mov.b32 %r8, %f2; mul.wide.u32 %rd3, %r4, 4; " \
                 "add.s64 %rd4, %rd2, %rd3; st.global.u32 [%rd4], %r8;"
        else:  # the upper word is the operand's, the lower word 0; both result words are kept
            op = f"mov.b64 %fd1, {{%r0, %r5}}; {form} %fd2, %fd1; mov.b64 %rd5, %fd2; mul.wide.u32 %rd3, %r4, 8; " \
                 "add.s64 %rd4, %rd2, %rd3; st.global.u64 [%rd4], %rd5;"
        body.append(_entry(name, idx, op))
    for name, (scalar, pair) in HALF_UNITS.items():
        op = (f"cvt.u16.u32 %h1, %r5; {scalar} %h2, %h1; mov.b32 %r9, {{%h1, %h1}}; {pair} %r10, %r9;"
              "mov.b32 {%h3, %h4}, %r10; cvt.u32.u16 %r11, %h2; cvt.u32.u16 %r12, %h3; cvt.u32.u16 %r13, %h4;"
              "shl.b32 %r12, %r12, 16; or.b32 %r11, %r11, %r12; xor.b32 %r13, %r13, %r11; and.b32 %r13, %r13, 0xffff;"
              "mul.wide.u32 %rd3, %r4, 8; add.s64 %rd4, %rd2, %rd3; st.global.v2.u32 [%rd4], {%r11, %r13};")
        body.append(_entry(name, idx, op))
    return "\n".join(head + body) + "\n"


def _entry(name, idx, op):
    return (f".visible .entry {name}(.param .u64 out, .param .u32 base, .param .u32 n) {{\n"
            ".reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .f64 %fd<4>; .reg .b16 %h<6>; .reg .pred %p<3>;\n"
            "mov.u32 %r0, 0; ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd2, %rd1; ld.param.u32 %r7, [base];"
            f" ld.param.u32 %r6, [n];\n{idx}\n{op}\nret; }}\n")


def reference(cp, name, u):
    """The correctly rounded function of the PTX form's operand words ``u`` (float64, CuPy)."""
    if name in ("rcp64h", "rsq64h"):
        x = (u.astype(cp.uint64) << cp.uint64(32)).view(cp.float64)
    else:
        x = u.view(cp.float32).astype(cp.float64)
    with np.errstate(all="ignore"):
        if name in ("rcp", "rcp64h"):
            return 1.0 / x
        if name in ("rsq", "rsq64h"):
            return 1.0 / cp.sqrt(x)
        if name == "sqrt":
            return cp.sqrt(x)
        if name == "lg2":
            return cp.log2(x)
        if name == "ex2":
            return cp.exp2(x)
        if name == "tanh":
            return cp.tanh(x)
        y = rz_to_f32(cp, x * float(INV_2PI_F32))        # the FMUL.RZ before MUFU.SIN / COS
        y = y - cp.floor(y)
        return cp.sin(TWO_PI * y) if name == "sin" else cp.cos(TWO_PI * y)


def rz_to_f32(cp, d):
    """float64 -> float32 rounded towards zero (normal range), as float64."""
    bits = d.view(cp.uint64) & ~cp.uint64((1 << 29) - 1)
    return bits.view(cp.float64).astype(cp.float32).astype(cp.float64)


def deltas(cp, name, out, ref):
    """Difference in output last places (int64) and a class code for outputs not comparable that way."""
    if name in ("rcp64h", "rsq64h"):
        hi = (out >> cp.uint64(32)).astype(cp.int64)
        rb = (ref.view(cp.uint64) >> cp.uint64(32)).astype(cp.int64)         # the reference truncated to its upper word
        sgn_o, sgn_r = hi >> 31, rb >> 31
        mag_o, mag_r = hi & 0x7FFFFFFF, rb & 0x7FFFFFFF
        lo_nonzero = (out & cp.uint64(0xFFFFFFFF)) != 0
        exp_r = (mag_r >> 20) & 0x7FF
    else:
        r32 = ref.astype(cp.float32).view(cp.uint32).astype(cp.int64)
        o = out.astype(cp.int64)
        sgn_o, sgn_r = o >> 31, r32 >> 31
        mag_o, mag_r = o & 0x7FFFFFFF, r32 & 0x7FFFFFFF
        lo_nonzero = cp.zeros(out.shape, bool)
        exp_r = (mag_r >> 23) & 0xFF
    d = mag_o - mag_r
    d = cp.where(sgn_o == sgn_r, d, cp.int64(1 << 40))
    return d, lo_nonzero, exp_r


def fingerprint(cp, d, w):
    return int(((d & 0xFFFFFFFF) * w).sum() & 0xFFFFFFFFFFFF)


def main():
    import cupy as cp

    out_dir = os.environ.get("OUT") or sys.argv[1]
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "sfu.ptx")
        with open(src, "w") as fh:
            fh.write(ptx_source())
        subprocess.run(["ptxas", "-arch=sm_90a", src, "-o", os.path.join(tmp, "sfu.cubin")], check=True)
        mod = cp.RawModule(path=os.path.join(tmp, "sfu.cubin"))
        summary = {"device": str(cp.cuda.runtime.getDeviceProperties(0)["name"]), "units": {}}
        blobs = {}
        for name, (form, kind, keys) in UNITS.items():
            kern = mod.get_function(name)
            mbits, ebits = (23, 8) if kind == "f32" else (20, 11)
            n = 1 << mbits
            w = cp.asarray(np.random.default_rng(1).integers(1, 1 << 16, n), dtype=cp.int64)
            out = cp.zeros(n, dtype=cp.uint32 if kind == "f32" else cp.uint64)
            stats = []
            for s in (0, 1):
                for e in range(1 << ebits):
                    base = (s << 31) | (e << mbits)
                    kern(((n + 255) // 256,), (256,), (out, np.uint32(base), np.uint32(n)))
                    u = cp.arange(n, dtype=cp.uint32) + cp.uint32(base)
                    ref = reference(cp, name, u)
                    d, lo, exp_r = deltas(cp, name, out, ref)
                    hist = cp.bincount(cp.clip(d, -16, 16) + 16, minlength=33)
                    other = int((cp.abs(d) > 16).sum())
                    rec = {"s": s, "e": e, "fp": fingerprint(cp, d, w), "hist": [int(v) for v in hist.get()],
                           "far": other, "lo_nonzero": int(lo.sum()),
                           "uniq": int(cp.unique(out).size) if e in (0, (1 << ebits) - 1) or other else None,
                           "first": [int(v) for v in out[:4].get()], "last": int(out[-1].get())}
                    if other:
                        bad = cp.nonzero(cp.abs(d) > 16)[0][:8]
                        rec["far_samples"] = [[int(u[i].get()), int(out[i].get())] for i in bad]
                    stats.append(rec)
                    if (s, e) in keys:
                        dd = d.get()
                        lo_d, hi_d = int(dd.min()), int(dd.max())
                        dt = np.int8 if -128 <= lo_d and hi_d < 128 else (np.int16 if -32768 <= lo_d and hi_d < 32768 else np.int64)
                        blobs[f"{name}_{s}_{e}"] = np.frombuffer(lzma.compress(dd.astype(dt).tobytes(), preset=6), np.uint8)
                        blobs[f"{name}_{s}_{e}_dtype"] = np.array(np.dtype(dt).str)
            summary["units"][name] = stats
            print(name, f"{time.time() - t0:.1f} s", flush=True)
        halves = {}
        for name in HALF_UNITS:
            kern = mod.get_function(name)
            out = cp.zeros(1 << 16, dtype=cp.uint64)
            kern((256,), (256,), (out, np.uint32(0), np.uint32(1 << 16)))
            o = out.get()
            halves[name] = (o & 0xFFFFFFFF).astype(np.uint32)        # scalar | (x2 low half) << 16
            halves[name + "_x2_diff"] = (o >> 32).astype(np.uint32)  # x2 high half xor scalar
        np.savez_compressed(os.path.join(out_dir, "sfu_halves.npz"), **halves)
    groups = {"a": ("rcp", "rsq", "sqrt", "rcp64h", "rsq64h"), "b": ("ex2", "lg2"), "c": ("sin", "cos"), "d": ("tanh",)}
    for g, names in groups.items():
        part = {k: v for k, v in blobs.items() if k.split("_")[0] in names}
        np.savez(os.path.join(out_dir, f"sfu_keys_{g}.npz"), **part)
    with open(os.path.join(out_dir, "sfu_summary.json"), "w") as fh:
        json.dump(summary, fh)
    print(f"done in {time.time() - t0:.1f} s", {k: os.path.getsize(os.path.join(out_dir, k)) for k in os.listdir(out_dir)})




# ----------------------------------------------------------------------------------------------
# second survey: the sin / cos argument grid, lg2 binades, tanh's operand quantisation

SC_KERNEL = """
.visible .entry {name}(.param .u64 out, .param .u32 base, .param .u32 n) {{
.reg .b32 %r<12>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .pred %p<2>;
ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd2, %rd1; ld.param.u32 %r7, [base]; ld.param.u32 %r6, [n];
mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.u32 %r4, %r1, %r2, %r3;
setp.ge.u32 %p1, %r4, %r6; @%p1 ret; add.u32 %r5, %r4, %r7;
mov.b32 %f1, %r5; mul.rz.ftz.f32 %f2, %f1, 0f3E22F983; {form} %f3, %f1;
mov.b32 %r8, %f2; mov.b32 %r9, %f3;
mul.wide.u32 %rd3, %r4, 8; add.s64 %rd4, %rd2, %rd3; st.global.v2.u32 [%rd4], {{%r8, %r9}};
ret; }}
"""


def survey2(out_dir, sc_only=False):
    import cupy as cp
    import cupyx

    sys.path.insert(0, os.getcwd())
    from warpsim.numerics import sfu

    t0 = time.time()
    src = [".version 8.7", ".target sm_90a", ".address_size 64"]
    for name, form in (("k_sin", "sin.approx.ftz.f32"), ("k_cos", "cos.approx.ftz.f32")):
        src.append(SC_KERNEL.format(name=name, form=form))
    tmp = tempfile.mkdtemp()          # kept: CuPy loads the module lazily
    p = os.path.join(tmp, "s2.ptx")
    with open(p, "w") as fh:
        fh.write("\n".join(src) + ptx_source().split(".address_size 64", 1)[1])
    subprocess.run(["ptxas", "-arch=sm_90a", p, "-o", os.path.join(tmp, "s2.cubin")], check=True)
    mod = cp.RawModule(path=os.path.join(tmp, "s2.cubin"))
    n = 1 << 23
    res, info, tables = {}, {}, {}
    grid = 1 << sfu.SC_BITS
    for name in ("sin", "cos"):
        kern = mod.get_function("k_" + name)
        out = cp.zeros(n, dtype=cp.uint64)
        for sign in (0, 1):
            lo = cp.full(grid, 0x7FFFFFFFFFFF, dtype=cp.int64)
            hi = cp.full(grid, -1, dtype=cp.int64)
            for e in range(1, 140):
                base = (sign << 31) | (e << 23)
                kern(((n + 255) // 256,), (256,), (out, np.uint32(base), np.uint32(n)))
                y = (out & cp.uint64(0xFFFFFFFF)).astype(cp.uint32).view(cp.float32).astype(cp.float64)
                s = (out >> cp.uint64(32)).astype(cp.int64)
                ay = cp.abs(y)
                idx = cp.floor((ay - cp.floor(ay)) * grid).astype(cp.int64)
                cupyx.scatter_min(lo, idx, s)
                cupyx.scatter_max(hi, idx, s)
            covered = hi >= 0
            info[f"{name}_{sign}"] = {"covered": int(covered.sum()), "conflicts": int(((lo != hi) & covered).sum())}
            bad = cp.nonzero((lo != hi) & covered)[0][:10]
            info[f"{name}_{sign}"]["conflict_samples"] = [[int(i), int(lo[i]), int(hi[i])] for i in bad.get()]
            tname = f"{name}_{'neg' if sign else 'pos'}"
            t = sfu.TABLES[tname]
            ref = t.reference(t.canonical())
            words = np.where(covered.get(), hi.get(), ref.astype(np.int64)).astype(np.uint32)
            tables.update(sfu.encode(tname, words))
            tables[tname + ".covered"] = np.packbits(covered.get())
            print(name, sign, info[f"{name}_{sign}"], f"{time.time() - t0:.0f} s", flush=True)
    if sc_only:
        for tname in ("sin_pos", "sin_neg", "cos_pos", "cos_neg"):
            np.savez(os.path.join(out_dir, f"sfu2_{tname}.npz"),
                     **{k: v for k, v in tables.items() if k.split(".")[0] == tname})
        print("done", f"{time.time() - t0:.0f} s")
        return
    # lg2 binades, tanh per binade: dropped operand bits and odd symmetry
    lg = mod.get_function("lg2")
    th = mod.get_function("tanh")
    out = cp.zeros(n, dtype=cp.uint32)
    for e in (1, 2, 63, 64, 65, 95, 111, 119, 121, 123, 124, 125, 126, 127, 128, 129, 130, 131, 133, 135, 143, 159, 191, 192, 254):
        lg(((n + 255) // 256,), (256,), (out, np.uint32(e << 23), np.uint32(n)))
        u = np.arange(n, dtype=np.uint32) | np.uint32(e << 23)
        ref = sfu.log2_det(u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
        res[f"lg2_{e}"] = (sfu._key(out.get()) - sfu._key(ref)).astype(np.int32)
    tinfo = {}
    for e in range(100, 140):
        th(((n + 255) // 256,), (256,), (out, np.uint32(e << 23), np.uint32(n)))
        pos = out.copy()
        th(((n + 255) // 256,), (256,), (out, np.uint32((1 << 31) | (e << 23)), np.uint32(n)))
        odd = bool((out == (pos | cp.uint32(1 << 31))).all())
        k = 0
        while k < 23 and bool((pos.reshape(-1, 1 << (k + 1)) == pos.reshape(-1, 1 << (k + 1))[:, :1]).all()):
            k += 1
        tinfo[e] = {"odd": odd, "dropped_bits": k, "distinct": int(cp.unique(pos).size)}
        if 112 <= e <= 132:
            u = (np.arange(0, n, 1 << k, dtype=np.uint32) | np.uint32(e << 23))
            ref = np.tanh(u.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
            res[f"tanh_{e}"] = (sfu._key(pos[:: 1 << k].get()) - sfu._key(ref)).astype(np.int32)
    info["tanh"] = tinfo
    print(tinfo, flush=True)
    np.savez(os.path.join(out_dir, "sfu2_tables.npz"), **tables)
    blobs = {k: np.frombuffer(lzma.compress(v.tobytes(), preset=6), np.uint8) for k, v in res.items()}
    dtypes = {k: str(v.dtype) for k, v in res.items()}
    groups = {"sc": lambda k: k.startswith(("sin", "cos")), "lt": lambda k: not k.startswith(("sin", "cos"))}
    for g, pred in groups.items():
        np.savez(os.path.join(out_dir, f"sfu2_{g}.npz"), **{k: v for k, v in blobs.items() if pred(k)})
    with open(os.path.join(out_dir, "sfu2_info.json"), "w") as fh:
        json.dump({"info": info, "dtypes": dtypes}, fh)
    print("done", f"{time.time() - t0:.0f} s", {f: os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)})


if __name__ == "__main__":
    survey2(os.environ.get("OUT") or sys.argv[1], "--sc-only" in sys.argv) if "--second" in sys.argv else main()
