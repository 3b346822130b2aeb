"""Capture plan for the ALU rows of issue 20 (part 2): one CUDA kernel per form, inline PTX.

The inputs are regenerated from ``SEED`` by :func:`inputs` (the capture file stores only the GPU's
words, this generator's name, the seed and :func:`input_hash`, so a changed stream fails loudly).
Every form is a PTX body with placeholders: ``{o0}``.. outputs, ``{i0}``.. inputs (registers of the
input arrays' widths), ``{q0}``.. predicate temporaries.  Each thread handles one element.

    python3 warpsim/hw/ptx_alu2_cases.py --out DIR [--cubin]   # writes DIR/alu2.cu (and alu2.cubin)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
from functools import lru_cache
from typing import NamedTuple

import numpy as np

GENERATOR = "gen_alu2"
SEED = 202620
N = 2048            # elements per form (8 CTAs of 256 threads)
BLOCK = 256


class Form(NamedTuple):
    name: str          # kernel name and key prefix in the capture file
    body: str          # PTX with {o*}, {i*}, {q*} placeholders
    outs: tuple        # output widths in bits (16, 32, 64)
    ins: tuple         # input keys (see inputs())


# ----------------------------------------------------------------------------------------------
# inputs

F32_SPECIAL = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0x7FC00000, 0xFFC00001,
               0x7F800001, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF,
               0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F800001, 0x33800000, 0x33800001, 0x3F000000,
               0x40400000, 0x4B000000, 0x5F800000, 0x20000000, 0x3FFFFFFF]
F64_SPECIAL = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF8000000000000,
               0xFFF8000000000001, 0x7FF0000000000001, 1, (1 << 63) | 1, 0x000FFFFFFFFFFFFF,
               0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x3FF0000000000000,
               0xBFF0000000000000, 0x3FF0000000000001, 0x3CA0000000000000, 0x3FE0000000000000,
               0x4008000000000000, 0x4330000000000000, 0x3FFFFFFFFFFFFFFF]
F16_SPECIAL = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7FFF, 0xFE01, 0x7C01, 0x0001, 0x8001, 0x03FF,
               0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3C01, 0x1400, 0x3800, 0x4200]
BF16_SPECIAL = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7FFF, 0xFFC1, 0x7F81, 0x0001, 0x8001, 0x007F,
                0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x3F81, 0x3400, 0x3F00, 0x4040]
I32_EDGE = [0, 1, 2, 3, 7, 31, 32, 33, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000,
            0x80000001, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678, 0xDEADBEEF]
I64_EDGE = [0, 1, 2, 3, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, 0x7FFFFFFFFFFFFFFF, 1 << 63, (1 << 63) + 1,
            0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0x123456789ABCDEF0]
I16_EDGE = [0, 1, 2, 3, 7, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0xFFFE, 0x1234]


def _pairs(special, dtype, rng, which):
    """The first len(special)**2 elements hold every pair (a, b) of specials; c gets a shuffle."""
    s = np.array(special, dtype=dtype)
    k = s.size
    idx = np.arange(k * k)
    if which == 0:
        return s[idx // k]
    if which == 1:
        return s[idx % k]
    return s[rng.integers(0, k, k * k)]


def _f32(rng, which):
    n = N
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(np.float32).view(np.uint32)
    r = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    pick = rng.random(n) < 0.2
    x[pick] = r[pick]
    tiny = rng.random(n) < 0.06            # products and sums in the subnormal range
    x[tiny] = (rng.standard_normal(tiny.sum()) * 2.0 ** -66).astype(np.float32).view(np.uint32)
    sp = rng.random(n) < 0.04
    x[sp] = rng.choice(np.array(F32_SPECIAL, np.uint32), sp.sum())
    head = _pairs(F32_SPECIAL, np.uint32, rng, which)
    x[:head.size] = head
    return x


def _f64(rng, which):
    n = N
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-200, 200, n))).view(np.uint64)
    r = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n).astype(np.uint64)
    pick = rng.random(n) < 0.2
    x[pick] = r[pick]
    tiny = rng.random(n) < 0.06
    x[tiny] = (rng.standard_normal(tiny.sum()) * 2.0 ** -520).view(np.uint64)
    sp = rng.random(n) < 0.04
    x[sp] = rng.choice(np.array(F64_SPECIAL, np.uint64), sp.sum())
    head = _pairs(F64_SPECIAL, np.uint64, rng, which)
    x[:head.size] = head
    return x


def _h16(rng, which, bf):
    n = N
    v = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))).astype(np.float32)
    x = (v.view(np.uint32) >> np.uint32(16)).astype(np.uint16) if bf else v.astype(np.float16).view(np.uint16)
    r = rng.integers(0, 1 << 16, n).astype(np.uint16)
    pick = rng.random(n) < 0.3
    x[pick] = r[pick]
    head = _pairs(BF16_SPECIAL if bf else F16_SPECIAL, np.uint16, rng, which)
    x[:head.size] = head
    return x


def _ints(rng, edge, bits, zeros):
    n = N
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    v = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n).astype(np.uint64)
    v = (v & np.uint64((1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF)).astype(dt)
    small = rng.random(n) < 0.3
    v[small] = rng.integers(-70, 70, small.sum()).astype(np.int64).astype(dt)
    z = rng.random(n) < zeros
    v[z] = 0
    e = np.array(edge, dtype=dt)
    k = e.size
    v[:k * k] = e[np.arange(k * k) // k] if zeros == 0 else e[np.arange(k * k) % k]
    return v


@lru_cache(maxsize=1)
def inputs() -> dict:
    """Input arrays by key, regenerated from SEED (read-only)."""
    rng = np.random.default_rng(SEED)
    IN = {}
    IN["ia"] = _ints(rng, I32_EDGE, 32, 0)
    IN["ib"] = _ints(rng, I32_EDGE, 32, 0.05)      # divisors: zeros, -1, MIN included
    IN["ic"] = _ints(rng, I32_EDGE, 32, 0.02)
    IN["la"] = _ints(rng, I64_EDGE, 64, 0)
    IN["lb"] = _ints(rng, I64_EDGE, 64, 0.05)
    IN["lc"] = _ints(rng, I64_EDGE, 64, 0.02)
    IN["sa"] = _ints(rng, I16_EDGE, 16, 0)
    IN["sb"] = _ints(rng, I16_EDGE, 16, 0.05)
    IN["sc"] = _ints(rng, I16_EDGE, 16, 0.02)
    IN["sh"] = rng.integers(0, 70, N).astype(np.uint32)
    IN["fa"], IN["fb"], IN["fc"] = _f32(rng, 0), _f32(rng, 1), _f32(rng, 2)
    # ties and cancellations: b = +-half an ulp of a (a + b is a tie), c = -round(a * b)
    k = np.arange(1000, 1300)
    ea = (IN["fa"][k] >> np.uint32(23)) & np.uint32(0xFF)
    ok = ea > 30
    tie = ((ea - np.uint32(24)) << np.uint32(23)) | (rng.integers(0, 2, k.size).astype(np.uint32) << np.uint32(31))
    IN["fb"][k[ok]] = tie[ok]
    k = np.arange(1300, 1600)
    with np.errstate(all="ignore"):
        prod = IN["fa"][k].view(np.float32).astype(np.float64) * IN["fb"][k].view(np.float32).astype(np.float64)
        IN["fc"][k] = (-prod).astype(np.float32).view(np.uint32)
    IN["da"], IN["db"], IN["dc"] = _f64(rng, 0), _f64(rng, 1), _f64(rng, 2)
    IN["ha"], IN["hb"], IN["hc"] = (_h16(rng, w, False) for w in range(3))
    IN["ba"], IN["bb"], IN["bc"] = (_h16(rng, w, True) for w in range(3))
    # packed pairs: the low halves from one stream, the high halves from another
    for p, src in (("x", "h"), ("y", "b")):
        for s in "abc":
            lo = IN[src + s].astype(np.uint32)
            hi = np.roll(IN[src + s], 7).astype(np.uint32)
            IN[p + s] = lo | (hi << np.uint32(16))
    for v in IN.values():
        v.setflags(write=False)
    return IN


def input_hash(IN=None) -> str:
    """SHA-256 over the input arrays (sorted keys, names and raw bytes)."""
    IN = inputs() if IN is None else IN
    h = hashlib.sha256()
    for k in sorted(IN):
        h.update(k.encode())
        h.update(np.ascontiguousarray(IN[k]).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# forms

FORMS: list = []
WIDTH = {"i": 32, "l": 64, "s": 16, "f": 32, "d": 64, "h": 16, "b": 16, "x": 32, "y": 32}


def _width(key):
    return 32 if key == "sh" else WIDTH[key[0]]


def _name(text):
    return "alu2__" + "".join(c if c.isalnum() else "_" for c in text)


def form(op, outw, keys, name=None):
    """d = op(inputs)."""
    srcs = ", ".join(f"{{i{j}}}" for j in range(len(keys)))
    FORMS.append(Form(_name(name or op), f"{op} {{o0}}, {srcs};", (outw,), tuple(keys)))


def pred(op, keys, name=None):
    """p = op(inputs), stored as 1 / 0."""
    srcs = ", ".join(f"{{i{j}}}" for j in range(len(keys)))
    FORMS.append(Form(_name(name or op), f"{op} {{q0}}, {srcs}; selp.u32 {{o0}}, 1, 0, {{q0}};", (32,), tuple(keys)))


def body(name, text, outs, keys):
    FORMS.append(Form(_name(name), text, tuple(outs), tuple(keys)))


IKEYS = {"16": ("sa", "sb", "sc"), "32": ("ia", "ib", "ic"), "64": ("la", "lb", "lc")}
RND = ("rn", "rz", "rm", "rp")

# integer
for bits, (a, b, c) in IKEYS.items():
    for s in "su":
        t = f"{s}{bits}"
        w = int(bits)
        form(f"div.{t}", w, (a, b))
        form(f"rem.{t}", w, (a, b))
        form(f"sad.{t}", w, (a, b, c))
        if bits == "16":
            form(f"mul.hi.{t}", 16, (a, b))
            form(f"mul.wide.{t}", 32, (a, b))
            form(f"mad.lo.{t}", 16, (a, b, c))
            form(f"min.{t}", 16, (a, b))
            form(f"max.{t}", 16, (a, b))
        if bits == "64":
            form(f"mad.hi.{t}", 64, (a, b, c))
for t in ("s16", "s64"):
    k = IKEYS[t[1:]]
    form(f"abs.{t}", int(t[1:]), k[:1])
    form(f"neg.{t}", int(t[1:]), k[:1])
form("not.b64", 64, ("la",))
form("cnot.b16", 16, ("sa",))
for t, bits in (("u32", "32"), ("u64", "64"), ("s32", "32")):
    a, b, c = IKEYS[bits]
    w = int(bits)
    sub = "s" if t[0] == "s" else "u"
    body(f"carry.add.{t}", f"add.cc.{t} {{o0}}, {{i0}}, {{i1}}; addc.cc.{t} {{o1}}, {{i2}}, {{i0}}; addc.{t} {{o2}}, 0, 0;",
         (w, w, w), (a, b, c))
    body(f"carry.sub.{t}", f"sub.cc.{t} {{o0}}, {{i0}}, {{i1}}; subc.cc.{t} {{o1}}, {{i2}}, {{i0}}; subc.{t} {{o2}}, 0, 0;",
         (w, w, w), (a, b, c))
    body(f"carry.addsub.{t}", f"add.cc.{t} {{o0}}, {{i0}}, {{i1}}; subc.{t} {{o1}}, {{i2}}, 0;", (w, w), (a, b, c))
    body(f"carry.subadd.{t}", f"sub.cc.{t} {{o0}}, {{i0}}, {{i1}}; addc.{t} {{o1}}, {{i2}}, 0;", (w, w), (a, b, c))
    body(f"carry.mad.{t}", f"mad.lo.cc.{t} {{o0}}, {{i0}}, {{i1}}, {{i2}}; madc.hi.cc.{t} {{o1}}, {{i0}}, {{i1}}, {{i2}}; "
         f"addc.{t} {{o2}}, 0, 0;", (w, w, w), (a, b, c))
    body(f"carry.madc.{t}", f"add.cc.{t} {{o0}}, {{i0}}, {{i2}}; madc.lo.cc.{t} {{o1}}, {{i0}}, {{i1}}, {{i2}}; "
         f"madc.hi.{t} {{o2}}, {{i0}}, {{i1}}, {{i2}};", (w, w, w), (a, b, c))
form("min.relu.s32", 32, ("ia", "ib"))
for t in ("u16x2", "s16x2", "relu.s16x2"):
    form(f"min.{t}", 32, ("ia", "ib"))
    form(f"max.{t}", 32, ("ia", "ib"))
form("max.relu.s32", 32, ("ia", "ib"))
for d in ("l", "r"):
    for mode in ("wrap", "clamp"):
        form(f"shf.{d}.{mode}.b32", 32, ("ia", "ib", "sh"))
for mode in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
    form(f"prmt.b32.{mode}", 32, ("ia", "ib", "ic"))
for lut in (0x00, 0xFF, 0x96, 0xE8, 0xCA, 0x1E, 0x3C, 0xF0, 0x80, 0x01):
    body(f"lop3.b32.{lut:02x}", f"lop3.b32 {{o0}}, {{i0}}, {{i1}}, {{i2}}, 0x{lut:02x};", (32,), ("ia", "ib", "ic"))
for t, k in (("u32", "ia"), ("s32", "ia"), ("u64", "la"), ("s64", "la")):
    form(f"bfind.{t}", 32, (k,))
    form(f"bfind.shiftamt.{t}", 32, (k,))
for at in ("u32", "s32"):
    for bt in ("u32", "s32"):
        form(f"dp4a.{at}.{bt}", 32, ("ia", "ib", "ic"))
        for half in ("lo", "hi"):
            form(f"dp2a.{half}.{at}.{bt}", 32, ("ia", "ib", "ic"))
for t, k in (("f32", "fa"), ("f64", "da")):
    for op in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
        pred(f"testp.{op}.{t}", (k,))

# f32 / f64
F3, D3 = ("fa", "fb", "fc"), ("da", "db", "dc")
for op in ("add", "sub", "mul"):
    for r in RND:
        form(f"{op}.{r}.f32", 32, F3[:2])
        form(f"{op}.{r}.ftz.f32", 32, F3[:2])
        form(f"{op}.{r}.f64", 64, D3[:2])
    form(f"{op}.rn.sat.f32", 32, F3[:2])
    form(f"{op}.rz.ftz.sat.f32", 32, F3[:2])
for r in RND:
    form(f"fma.{r}.f32", 32, F3)
    form(f"fma.{r}.ftz.f32", 32, F3)
    form(f"fma.{r}.sat.f32", 32, F3)
    form(f"fma.{r}.f64", 64, D3)
form("mad.rz.f32", 32, F3)
form("mad.rn.ftz.sat.f32", 32, F3)
for v in ("div.rn", "div.rn.ftz", "div.full", "div.full.ftz", "div.approx", "div.approx.ftz"):
    form(f"{v}.f32", 32, F3[:2])
form("div.rn.f64", 64, D3[:2])
for r in RND[1:]:
    for fn in ("div", "rcp", "sqrt"):
        form(f"{fn}.{r}.f32", 32, F3[:2] if fn == "div" else F3[:1])
    form(f"div.{r}.ftz.f32", 32, F3[:2])
    form(f"div.{r}.f64", 64, D3[:2])
    form(f"rcp.{r}.f64", 64, D3[:1])
    form(f"sqrt.{r}.f64", 64, D3[:1])
for fn in ("rcp.rn", "rcp.rn.ftz", "rcp.approx", "rcp.approx.ftz", "sqrt.rn", "sqrt.rn.ftz", "sqrt.approx",
           "sqrt.approx.ftz", "rsqrt.approx", "rsqrt.approx.ftz", "ex2.approx", "ex2.approx.ftz", "lg2.approx",
           "lg2.approx.ftz", "sin.approx", "sin.approx.ftz", "cos.approx", "cos.approx.ftz", "tanh.approx"):
    form(f"{fn}.f32", 32, F3[:1])
for fn in ("rcp.rn", "rcp.approx.ftz", "sqrt.rn", "rsqrt.approx"):
    form(f"{fn}.f64", 64, D3[:1])
for op in ("min", "max"):
    for mod in ("ftz.", "NaN.", "xorsign.abs.", "ftz.NaN."):
        form(f"{op}.{mod}f32", 32, F3[:2])
    form(f"{op}.f64", 64, D3[:2])
for op in ("abs", "neg"):
    form(f"{op}.ftz.f32", 32, F3[:1])
    form(f"{op}.f64", 64, D3[:1])
form("copysign.f32", 32, F3[:2])
form("copysign.f64", 64, D3[:2])
for cmp in ("lt", "equ", "num"):
    pred(f"setp.{cmp}.ftz.f32", F3[:2])
for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
    pred(f"setp.{cmp}.f64", D3[:2])
for t, k in (("s16", "sa"), ("u16", "sa"), ("s64", "la"), ("u64", "la")):
    other = {"sa": "sb", "la": "lb"}[k]
    cmps = ("lt", "ge") if t[0] == "s" else ("lo", "hs")
    for cmp in cmps:
        pred(f"setp.{cmp}.{t}", (k, other))
form("slct.s32.s32", 32, ("ia", "ib", "ic"))
form("slct.b32.f32", 32, ("ia", "ib", "fc"))
form("slct.ftz.b32.f32", 32, ("ia", "ib", "fc"))

# f16 / bf16 scalar and packed
for t, k in (("f16", "h"), ("f16x2", "x"), ("bf16", "b"), ("bf16x2", "y")):
    w = 32 if t.endswith("x2") else 16
    a, b, c = (k + s for s in "abc")
    half = t.startswith("f16")
    for op in ("add", "sub", "mul"):
        form(f"{op}.rn.{t}", w, (a, b))
        if half:
            form(f"{op}.rn.ftz.{t}", w, (a, b))
            form(f"{op}.rn.sat.{t}", w, (a, b))
    form(f"fma.rn.{t}", w, (a, b, c))
    form(f"fma.rn.relu.{t}", w, (a, b, c))
    if half:
        form(f"fma.rn.ftz.{t}", w, (a, b, c))
        form(f"fma.rn.sat.{t}", w, (a, b, c))
    for op in ("min", "max"):
        mods = ("", "NaN.", "xorsign.abs.") + (("ftz.",) if half else ())
        for mod in mods:
            form(f"{op}.{mod}{t}", w, (a, b))
    for op in ("neg", "abs"):
        form(f"{op}.{t}", w, (a,))
    if not t.endswith("x2"):
        for cmp in ("lt", "equ", "nan"):
            pred(f"setp.{cmp}.{t}", (a, b))
    else:
        for cmp in ("lt", "geu"):
            body(f"setp.{cmp}.{t}", f"setp.{cmp}.{t} {{q0}}|{{q1}}, {{i0}}, {{i1}}; selp.u32 {{o0}}, 1, 0, {{q0}}; "
                 f"selp.u32 {{o1}}, 1, 0, {{q1}};", (32, 32), (a, b))


# ----------------------------------------------------------------------------------------------
# CUDA source

_CT = {16: ("unsigned short", "h"), 32: ("unsigned", "r"), 64: ("unsigned long long", "l")}


def _cuda_kernel(f: Form) -> str:
    no = len(f.outs)
    subs = {f"o{j}": f"%{j}" for j in range(no)}
    subs.update({f"i{j}": f"%{no + j}" for j in range(len(f.ins))})
    nq = sum(f"{{q{j}}}" in f.body for j in range(4))
    subs.update({f"q{j}": f"q{j}" for j in range(4)})
    text = f.body.format(**subs)
    if nq:
        text = "{ .reg .pred " + ", ".join(f"q{j}" for j in range(nq)) + "; " + text + " }"
    params = [f"const {_CT[_width(k)][0]}* __restrict__ in{j}" for j, k in enumerate(f.ins)]
    params += [f"{_CT[w][0]}* __restrict__ out{j}" for j, w in enumerate(f.outs)]
    decl = " ".join(f"{_CT[w][0]} d{j};" for j, w in enumerate(f.outs))
    loads = " ".join(f"{_CT[_width(k)][0]} s{j} = in{j}[i];" for j, k in enumerate(f.ins))
    outc = ", ".join(f'"={_CT[w][1]}"(d{j})' for j, w in enumerate(f.outs))
    inc = ", ".join(f'"{_CT[_width(k)][1]}"(s{j})' for j, k in enumerate(f.ins))
    stores = " ".join(f"out{j}[i] = d{j};" for j in range(no))
    return (f'extern "C" __global__ void {f.name}({", ".join(params)}) {{\n'
            f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  {loads} {decl}\n"
            f'  asm volatile("{text}" : {outc} : {inc});\n  {stores}\n}}\n')


def cuda_source() -> str:
    return "// generated by warpsim/hw/ptx_alu2_cases.py; do not edit\n\n" + "\n".join(_cuda_kernel(f) for f in FORMS)


def check_unique():
    names = [f.name for f in FORMS]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"duplicate form names: {sorted(dup)}")


check_unique()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for alu2.cu (and alu2.cubin)")
    ap.add_argument("--cubin", action="store_true", help="also compile alu2.cubin with nvcc -arch=sm_90a")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    cu = os.path.join(args.out, "alu2.cu")
    with open(cu, "w") as fh:
        fh.write(cuda_source())
    print(f"{len(FORMS)} forms -> {cu}")
    if args.cubin:
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            raise SystemExit("nvcc not found: --cubin needs the CUDA toolkit")
        subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-o", os.path.join(args.out, "alu2.cubin"), cu], check=True)
        print("compiled", os.path.join(args.out, "alu2.cubin"))


if __name__ == "__main__":
    main()
