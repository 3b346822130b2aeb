"""The instruction table: opcode patterns -> semantics.

Every row is a regular expression over the whole opcode (``add.s32``, ``ld.global.nc.v2.u32``,
``cvt.rn.satfinite.e4m3x2.f32``) and a handler.  Handlers hold the semantics only: operand
reading and writing (types, register widths, immediates, special registers, predicate
guards), memory access and error reporting are the generic plumbing in :class:`Context`.

``@alu(pattern, n)`` rows are pure functions of ``n`` typed source arrays (numpy, one value
per lane) returning the destination array; ``@instr(pattern)`` rows get the context.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from . import convert as cv
from .spellings import canonical


# PTX type -> (bits, numpy dtype of its values)
TYPES = {
    "pred": (1, np.bool_),
    "b8": (8, np.uint8), "u8": (8, np.uint8), "s8": (8, np.int8),
    "b16": (16, np.uint16), "u16": (16, np.uint16), "s16": (16, np.int16),
    "f16": (16, np.uint16), "bf16": (16, np.uint16), "e4m3x2": (16, np.uint16), "e5m2x2": (16, np.uint16),
    "b32": (32, np.uint32), "u32": (32, np.uint32), "s32": (32, np.int32), "f32": (32, np.float32),
    "f16x2": (32, np.uint32), "bf16x2": (32, np.uint32), "tf32": (32, np.uint32),
    "b64": (64, np.uint64), "u64": (64, np.uint64), "s64": (64, np.int64), "f64": (64, np.float64),
}
UINT = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}

TABLE: list = []      # (compiled pattern, kind, handler, nsrc)


def instr(pattern):
    """A row whose handler gets the :class:`Context` (memory, vectors, several destinations)."""
    def deco(fn):
        TABLE.append((re.compile(pattern + r"\Z"), "ctx", fn, None))
        return fn
    return deco


def alu(pattern, nsrc):
    """A row ``d = f(a, b, ...)``: all operands of the type named by the pattern's group ``t``
    (group ``dt`` for the destination and ``st`` for sources when they differ)."""
    def deco(fn):
        TABLE.append((re.compile(pattern + r"\Z"), "alu", fn, nsrc))
        return fn
    return deco


def _bases(pattern):
    m = re.match(r"\((?:\?P<\w+>|\?:)?([a-z0-9|]+)\)", pattern)
    return m.group(1).split("|") if m else [re.match(r"[a-z][a-z0-9]*", pattern).group(0)]


def known_bases():
    """First opcode tokens the table knows (``add``, ``ld``, ``cvt``, ...)."""
    return {b for pat, *_ in TABLE for b in _bases(pat.pattern)}


def lookup(opcode):
    """(kind, handler, nsrc, match) of the row for ``opcode``, or None.  Spellings of the wmma /
    ldmatrix / stmatrix / movmatrix / cvt families are first put in the table's order
    (:func:`warpsim.ptx.spellings.canonical`; ValueError for a spelling ptxas refuses)."""
    opcode = canonical(opcode)
    for pat, kind, fn, nsrc in TABLE:
        m = pat.match(opcode)
        if m:
            return kind, fn, nsrc, m
    return None


# ----------------------------------------------------------------------------------------------
# integer and logic ALU

_I = r"(?P<t>[us](?:16|32|64))"
_B = r"(?P<t>b(?:16|32|64)|[us](?:16|32|64))"


def _wide(t):
    bits = TYPES[t][0]
    return (SINT if t[0] == "s" else UINT)[bits * 2] if bits < 64 else None


@alu(r"add\." + _I, 2)
def _add(m, a, b):
    return a + b


@alu(r"sub\." + _I, 2)
def _sub(m, a, b):
    return a - b


@alu(r"add\.sat\.(?P<t>s32)", 2)
def _add_sat(m, a, b):
    return np.clip(a.astype(np.int64) + b, -2**31, 2**31 - 1).astype(np.int32)


@alu(r"sub\.sat\.(?P<t>s32)", 2)
def _sub_sat(m, a, b):
    return np.clip(a.astype(np.int64) - b, -2**31, 2**31 - 1).astype(np.int32)


@alu(r"mul\.lo\." + _I, 2)
def _mul_lo(m, a, b):
    return a * b


def _mulhi(a, b, t):
    bits = TYPES[t][0]
    if bits < 64:
        w = _wide(t)
        return ((a.astype(w) * b.astype(w)) >> bits).astype(a.dtype)
    # 64x64 -> high 64 bits with 32-bit limbs (unsigned; signed corrected after)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    al, ah, bl, bh = ua & m32, ua >> np.uint64(32), ub & m32, ub >> np.uint64(32)
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> np.uint64(32)) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> np.uint64(32)) + (hl >> np.uint64(32)) + (mid >> np.uint64(32))
    if t[0] == "s":
        hi = hi - np.where(a < 0, ub, 0).astype(np.uint64) - np.where(b < 0, ua, 0).astype(np.uint64)
    return hi.view(a.dtype)


@alu(r"mul\.hi\." + _I, 2)
def _mul_hi(m, a, b):
    return _mulhi(a, b, m["t"])


@alu(r"mul\.wide\.(?P<st>[us](?:16|32))", 2)
def _mul_wide(m, a, b):
    w = _wide(m["st"])
    return a.astype(w) * b.astype(w)


@alu(r"mad\.lo\." + _I, 3)
def _mad_lo(m, a, b, c):
    return a * b + c


@alu(r"mad\.hi\." + _I, 3)
def _mad_hi(m, a, b, c):
    return _mulhi(a, b, m["t"]) + c


@alu(r"mad\.wide\.(?P<st>[us](?:16|32))", 3)
def _mad_wide(m, a, b, c):
    w = _wide(m["st"])
    return a.astype(w) * b.astype(w) + c


@alu(r"(?P<op>min|max)\." + _I, 2)
def _minmax(m, a, b):
    return np.minimum(a, b) if m["op"] == "min" else np.maximum(a, b)


@alu(r"abs\.(?P<t>s(?:16|32|64))", 1)
def _abs(m, a):
    return np.where(a < 0, -a, a).astype(a.dtype)


@alu(r"neg\.(?P<t>s(?:16|32|64))", 1)
def _neg(m, a):
    return (-a).astype(a.dtype)


@alu(r"(?P<op>and|or|xor)\." + _B, 2)
def _logic(m, a, b):
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[m["op"]](a, b)


@alu(r"(?P<op>and|or|xor)\.(?P<t>pred)", 2)
def _logic_pred(m, a, b):
    return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[m["op"]](a, b)


@alu(r"not\." + _B, 1)
def _not(m, a):
    return ~a


@alu(r"not\.(?P<t>pred)", 1)
def _not_pred(m, a):
    return ~a


@alu(r"cnot\." + _B, 1)
def _cnot(m, a):
    return (a == 0).astype(a.dtype)


def _shift_amount(b, bits):
    return np.minimum(b.astype(np.uint64), np.uint64(bits))


@alu(r"shl\.(?P<t>b(?:16|32|64))", 2)
def _shl(m, a, b):
    bits = TYPES[m["t"]][0]
    s = _shift_amount(b, bits)
    w = a.astype(np.uint64) if bits < 64 else a
    out = np.where(s >= bits, np.uint64(0), w << np.minimum(s, np.uint64(bits - 1)))
    return out.astype(a.dtype)


@alu(r"shr\.(?P<t>[bus](?:16|32|64))", 2)
def _shr(m, a, b):
    bits = TYPES[m["t"]][0]
    s = _shift_amount(b, bits).astype(np.int64)
    if m["t"][0] == "s":
        return (a.astype(np.int64) >> np.minimum(s, 63)).astype(a.dtype) if bits < 64 else a >> np.minimum(s, 63)
    w = a.astype(np.uint64)
    out = np.where(s >= bits, np.uint64(0), w >> np.minimum(s, bits - 1).astype(np.uint64))
    return out.astype(a.dtype)


@alu(r"popc\.(?P<st>b(?:32|64))", 1)
def _popc(m, a):
    return np.bitwise_count(a).astype(np.uint32)


@alu(r"clz\.(?P<st>b(?:32|64))", 1)
def _clz(m, a):
    bits = a.dtype.itemsize * 8
    x = a.astype(np.uint64)
    n = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        if s >= bits:
            continue
        top = x >> np.uint64(bits - s)
        z = top == 0
        n += np.where(z, s, 0)
        x = np.where(z, x << np.uint64(s), x) & np.uint64((1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF)
    n += (x >> np.uint64(bits - 1)) == 0
    return n.astype(np.uint32)


@alu(r"brev\.(?P<t>b(?:32|64))", 1)
def _brev(m, a):
    bits = a.dtype.itemsize * 8
    x = a.astype(np.uint64)
    out = np.zeros(x.shape, dtype=np.uint64)
    for i in range(bits):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
    return out.astype(a.dtype)


@alu(r"bfe\.(?P<t>[us](?:32|64))", 3)
def _bfe(m, a, b, c):
    # bit i of d: a[pos + i] for i < len and pos + i within a; otherwise the sign bit
    # a[min(pos + len - 1, msb)] (signed, len > 0) or 0
    bits = TYPES[m["t"]][0]
    pos = b.astype(np.int64) & 0xFF
    ln = c.astype(np.int64) & 0xFF
    x = a.view(UINT[bits]).astype(np.uint64)
    eff = np.clip(np.minimum(ln, bits - pos), 0, bits)
    field = np.where(pos >= bits, np.uint64(0), x >> np.minimum(pos, bits - 1).astype(np.uint64))
    mask = np.where(eff >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << eff.astype(np.uint64)) - np.uint64(1))
    v = field & mask
    if m["t"][0] == "s":
        sbit = (x >> np.clip(pos + ln - 1, 0, bits - 1).astype(np.uint64)) & np.uint64(1)
        sbit = np.where(ln == 0, np.uint64(0), sbit)
        v = np.where(sbit == 1, v | ~mask, v)
    return (v & np.uint64((1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF)).astype(UINT[bits]).view(a.dtype)


@alu(r"bfi\.(?P<t>b(?:32|64))", 4)
def _bfi(m, a, b, c, d):
    bits = TYPES[m["t"]][0]
    pos = np.minimum(c.astype(np.int64) & 0xFF, bits)
    ln = np.minimum(d.astype(np.int64) & 0xFF, bits)
    mask = np.where(ln >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << ln.astype(np.uint64)) - np.uint64(1))
    mask = np.where(pos >= bits, np.uint64(0), mask << np.minimum(pos, bits - 1).astype(np.uint64))
    mask &= np.uint64((1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF)
    ins = (a.astype(np.uint64) << np.minimum(pos, bits - 1).astype(np.uint64)) & mask
    return ((b.astype(np.uint64) & ~mask) | ins).astype(a.dtype)


@alu(r"prmt\.(?P<t>b32)", 3)
def _prmt(m, a, b, c):
    src = a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))
    out = np.zeros(a.shape, dtype=np.uint64)
    for i in range(4):
        sel = (c.astype(np.uint64) >> np.uint64(4 * i)) & np.uint64(0xF)
        byte = (src >> ((sel & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
        byte = np.where(sel & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        out |= byte << np.uint64(8 * i)
    return out.astype(np.uint32)


# ----------------------------------------------------------------------------------------------
# comparisons and selection

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_FCMP_UNORDERED = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}


def _combine(ctx, m, ops, r, rq):
    """setp's p and q combined with its fourth operand by .and / .or / .xor (m["bop"]; none: as they are)."""
    if not m["bop"]:
        return r, rq
    if len(ops) != 4:
        ctx.fail(f"{ctx.opcode} needs a fourth operand: the predicate it combines with")
    c = ctx.read(ops[3], "pred")
    f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[m["bop"]]
    return f(r, c), f(rq, c)


def _compare(cmp, a, b):
    if cmp in _CMP:
        r = _CMP[cmp](a, b)
        if cmp == "ne" and a.dtype.kind == "f":
            r = r & ~np.isnan(a) & ~np.isnan(b)
        return r
    if cmp in _FCMP_UNORDERED:
        return _CMP[_FCMP_UNORDERED[cmp]](a, b) | np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return ~np.isnan(a) & ~np.isnan(b)
    if cmp == "nan":
        return np.isnan(a) | np.isnan(b)
    raise KeyError(cmp)


_CMPS = r"(?P<cmp>eq|ne|lt|le|gt|ge|lo|ls|hi|hs|equ|neu|ltu|leu|gtu|geu|num|nan)"
_ST = r"(?P<st>[bus](?:16|32|64)|f32|f64)"


@instr(r"setp\." + _CMPS + r"(?:\.(?P<bop>and|or|xor))?\." + _ST)
def _setp(ctx, m):
    ops = ctx.operands
    if len(ops) not in (3, 4):
        ctx.fail(f"{ctx.opcode} takes a predicate destination (optionally p|q), two sources and, with "
                 f".{m['bop'] or 'and/or/xor'}, a predicate source")
    dst = ops[0]
    q = None
    if isinstance(dst, str) and "|" in dst:
        dst, q = [x.strip() for x in dst.split("|")]
    a = ctx.read(ops[1], m["st"])
    b = ctx.read(ops[2], m["st"])
    r = _compare(m["cmp"], a, b)
    rq = ~r
    r, rq = _combine(ctx, m, ops, r, rq)
    ctx.write(dst, r, "pred")
    if q is not None:
        ctx.write(q, rq, "pred")


@instr(r"selp\.(?P<t>[bus](?:16|32|64)|f32|f64)")
def _selp(ctx, m):
    d, a, b, c = ctx.need(4)
    t = m["t"]
    ctx.write(d, np.where(ctx.read(c, "pred"), ctx.read(a, t), ctx.read(b, t)), t)


# ----------------------------------------------------------------------------------------------
# floating point (f32 / f64; exact: numpy's IEEE operations round to nearest even, fma exactly)

_NAN32 = np.uint32(0x7FFFFFFF)


def _canon32(x):
    return np.where(np.isnan(x), _NAN32.view(np.float32), x).astype(np.float32)


@alu(r"(?P<op>add|sub|mul)(?:\.rn)?\.(?P<t>f32)", 2)
def _f32_arith(m, a, b):
    with np.errstate(all="ignore"):
        r = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[m["op"]](a, b)
    return _canon32(r)


@alu(r"(?:fma|mad)\.rn\.(?P<t>f32)", 3)
def _fma32(m, a, b, c):
    shape = a.shape
    a, b, c = (np.ascontiguousarray(x).view(np.uint32).reshape(-1) for x in (a, b, c))
    out = np.empty(a.size, dtype=np.uint32)
    from ..engine.alu_native import fma_f32_words   # the host's FMA where exact, else the soft-float one

    if not fma_f32_words(a, b, c, out):
        _fma32_kernel()(a, b, c, out)
    return out.view(np.float32).reshape(shape)


_FMA32 = []


def _fma32_kernel():
    """The exact soft-float FFMA of warpsim.numerics over arrays (numba, compiled on first use)."""
    if not _FMA32:
        from numba import njit

        from ..numerics.softfloat import fma_f32

        @njit(cache=True, nogil=True)
        def fma_arrays(a, b, c, out):
            for i in range(a.size):
                out[i] = fma_f32(a[i], b[i], c[i])

        _FMA32.append(fma_arrays)
    return _FMA32[0]


@alu(r"(?P<op>min|max)\.(?P<t>f32)", 2)
def _fminmax(m, a, b):
    f = np.fmin if m["op"] == "min" else np.fmax
    r = f(a, b)
    # -0 < +0 for min/max
    both0 = (a == 0) & (b == 0)
    neg = np.signbit(a) | np.signbit(b) if m["op"] == "min" else np.signbit(a) & np.signbit(b)
    r = np.where(both0, np.where(neg, np.float32(-0.0), np.float32(0.0)), r)
    return _canon32(r)


@alu(r"neg\.(?P<t>f32)", 1)
def _fneg(m, a):
    return _canon32(-a)           # captured: a NaN operand gives the canonical NaN, not a sign flip


@alu(r"abs\.(?P<t>f32)", 1)
def _fabs(m, a):
    return _canon32(np.abs(a))


# ----------------------------------------------------------------------------------------------
# moves

_MOVT = r"(?P<t>[bus](?:16|32|64)|f32|f64|pred)"


@instr(r"mov\." + _MOVT)
def _mov(ctx, m):
    t = m["t"]
    dst, src = ctx.need(2)
    bits = TYPES[t][0]
    if isinstance(dst, list) or isinstance(src, list):
        # vector pack / unpack: {lo, hi} <-> wide register (mov.b32 {%rs0,%rs1}, %r1 / mov.b64 %rd1, {%r1,%r2})
        if t[0] != "b":
            ctx.fail(f"vector pack/unpack needs a .b type (mov.b32, mov.b64), not .{t}")
        if isinstance(dst, list) and isinstance(src, list):
            ctx.fail("mov packs a vector into a register or unpacks one; both operands are vectors")
        vec = dst if isinstance(dst, list) else src
        if bits % len(vec):
            ctx.fail(f"{len(vec)} parts do not divide a {bits}-bit value")
        part = bits // len(vec)
        pt = f"b{part}"
        if isinstance(src, list):
            acc = np.zeros(ctx.shape, dtype=np.uint64)
            for i, r in enumerate(src):
                acc |= ctx.read(r, pt, what=f"part {i} of the source of {ctx.opcode}").astype(np.uint64) << np.uint64(part * i)
            ctx.write(dst, acc.astype(UINT[bits]), t, what=f"destination of {ctx.opcode}")
        else:
            v = ctx.read(src, t, what=f"source of {ctx.opcode}").astype(np.uint64)
            for i, r in enumerate(dst):
                if r == "_":
                    continue
                ctx.write(r, ((v >> np.uint64(part * i)) & np.uint64((1 << part) - 1)).astype(UINT[part]), pt,
                          what=f"part {i} of the destination of {ctx.opcode}")
        return
    ctx.write(dst, ctx.read(src, t, what=f"source of {ctx.opcode}"), t, what=f"destination of {ctx.opcode}")


@instr(r"cvta(?P<to>\.to)?\.(?P<space>global|shared|local|const|param)\.(?P<t>u32|u64)")
def _cvta(ctx, m):
    d, a = ctx.need(2)
    v = ctx.read(a, m["t"]).astype(np.uint64)
    ctx.write(d, ctx.memory.cvta(v, m["space"], bool(m["to"]), ctx).astype(TYPES[m["t"]][1]), m["t"])


# ----------------------------------------------------------------------------------------------
# conversions

_RND = ("rn", "rz", "rm", "rp", "rna")
_IRND = ("rni", "rzi", "rmi", "rpi")
_CVT_FLOAT = ("f64", "f32", "tf32", "f16", "bf16")
_CVT_T = r"(?:[bus](?:8|16|32|64)|f16|bf16|f32|f64|tf32|f16x2|bf16x2|e4m3x2|e5m2x2)"


@instr(r"cvt(?P<mods>(?:\.(?:rn|rz|rm|rp|rna|rni|rzi|rmi|rpi|ftz|sat|satfinite|relu))*)\.(?P<dt>" + _CVT_T +
       r")\.(?P<st>" + _CVT_T + r")")
def _cvt(ctx, m):
    mods = [x for x in m["mods"].split(".") if x]
    dt, st = m["dt"], m["st"]
    mode = next((x for x in mods if x in _RND), None)
    imode = next((x for x in mods if x in _IRND), None)
    kw = dict(satfinite="satfinite" in mods, relu="relu" in mods)
    ctx.relaxed = True
    ops = ctx.operands
    if dt in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2") and st == "f32":
        if len(ops) != 3:
            ctx.fail(f"{ctx.opcode} takes a destination and two f32 sources (the first goes to the upper half)")
        if mode is None:
            ctx.fail(f"{ctx.opcode} needs a rounding modifier (.rn or .rz)")
        base, sh = dt[:-2], (16 if dt in ("f16x2", "bf16x2") else 8)
        hi = cv.float_to_float(ctx.read(ops[1], "f32").view(np.uint32), "f32", base, mode, **kw).astype(np.uint64)
        lo = cv.float_to_float(ctx.read(ops[2], "f32").view(np.uint32), "f32", base, mode, **kw).astype(np.uint64)
        ctx.write(ops[0], ((hi << np.uint64(sh)) | lo).astype(UINT[2 * sh]), f"b{2 * sh}")
        return
    d, a = ctx.need(2)
    if dt.endswith("x2") and st.endswith("x2"):
        sb, db = st[:-2], dt[:-2]
        ssh = 16 if sb in ("f16", "bf16") else 8
        dsh = 16 if db in ("f16", "bf16") else 8
        w = ctx.read(a, f"b{2 * ssh}").astype(np.uint64)
        parts = [cv.float_to_float(x, sb, db, mode, **kw).astype(np.uint64)
                 for x in (w & np.uint64((1 << ssh) - 1), w >> np.uint64(ssh))]
        ctx.write(d, (parts[0] | (parts[1] << np.uint64(dsh))).astype(UINT[2 * dsh]), f"b{2 * dsh}")
        return
    sbits = TYPES[st][0]
    a_bits = ctx.read(a, f"b{sbits}" if st not in ("pred",) else st)
    dbits = TYPES[dt][0]
    if st in _CVT_FLOAT and dt in _CVT_FLOAT:
        if imode:
            if dt != st:
                ctx.fail(f".{imode} rounds to an integral value in the same float type; {ctx.opcode} changes type")
            out = cv.round_to_integral(a_bits, st, imode, ftz="ftz" in mods)
        elif dt == st and not mods:
            out = a_bits
        else:
            narrowing = cv.FORMATS[dt][1] < cv.FORMATS[st][1] or cv.FORMATS[dt][0] < cv.FORMATS[st][0]
            if narrowing and mode is None:
                ctx.fail(f"{ctx.opcode} narrows .{st} to .{dt}: it needs a rounding modifier "
                         f"({'.rna' if dt == 'tf32' else '.rn, .rz, .rm or .rp'})")
            out = cv.float_to_float(a_bits, st, dt, mode, ftz="ftz" in mods, **kw)
        if "sat" in mods and dt != "tf32":
            out = cv.saturate(out, dt).astype(np.asarray(out).dtype)
    elif st in _CVT_FLOAT and dt in cv.INTS:
        if imode is None:
            ctx.fail(f"{ctx.opcode} converts a float to an integer: it needs .rni, .rzi, .rmi or .rpi")
        out = cv.float_to_int(a_bits, st, dt, imode)
    elif st in cv.INTS and dt in _CVT_FLOAT:
        out = cv.int_to_float(a_bits, st, dt, mode or "rn")
    elif st in cv.INTS and dt in cv.INTS:
        out = cv.int_to_int(a_bits, st, dt, "sat" in mods)
        if dbits < 64:
            out = out & np.uint64((1 << dbits) - 1)
        if dt[0] == "s" and dbits < 32:
            # a sub-word signed result sign-extends into a wider destination register
            ctx.write(d, out.astype(UINT[dbits]).view(SINT[dbits]), dt)
            return
    else:
        ctx.fail(f"conversion from .{st} to .{dt} is not supported")
    ctx.write(d, np.asarray(out).astype(np.uint64).astype(UINT[dbits]), f"b{dbits}")


# ----------------------------------------------------------------------------------------------
# memory

_SPACE = r"(?:\.(?P<space>global|shared(?:::cta|::cluster)?|param(?:::entry|::func)?|local|const))?"
_CACHE = (r"(?:\.(?:nc|ca|cg|cs|lu|cv|wb|wt|weak|mmio|(?:relaxed|acquire|release)\.(?:cta|cluster|gpu|sys)|volatile|"
          r"L1::\w+|L2::\w+))*")
_VEC = r"(?:\.v(?P<vec>2|4|8))?"
_LDT = r"(?P<t>[bus](?:8|16|32|64)|f16|f16x2|bf16|bf16x2|f32|f64)"


def _ldst_parts(ctx, m, reg_operand):
    n = int(m["vec"] or 1)
    regs = reg_operand if isinstance(reg_operand, list) else [reg_operand]
    if len(regs) != n:
        ctx.fail(f"{ctx.opcode} moves {n} value(s); the register operand lists {len(regs)}")
    return regs


def _ldst_form(ctx, m, regs_at):
    """(the address operand, type, bits, register list, state space) of an ld (registers at operand 0)
    or st (at 1); both may reorder with other relaxed accesses."""
    ops = _mem_operands(ctx)
    t = m["t"]
    regs = _ldst_parts(ctx, m, ops[regs_at])
    ctx.relaxed = True
    return ops[1 - regs_at], t, TYPES[t][0], regs, (m["space"] or "generic").split("::")[0]


@instr(r"ld" + _CACHE + _SPACE + _CACHE + _VEC + r"\." + _LDT)
def _ld(ctx, m):
    src, t, bits, regs, space = _ldst_form(ctx, m, 0)
    if space == "param":
        data = ctx.param_bytes(src, len(regs) * bits // 8)
    else:
        addr = ctx.address(src)
        data = ctx.memory.load(space, addr, len(regs) * bits // 8, bits // 8, ctx)
    for i, r in enumerate(regs):
        chunk = data[..., i * bits // 8:(i + 1) * bits // 8]
        v = _bytes_to(chunk, bits)
        if r == "_":
            continue
        ctx.write(r, v.view(TYPES[t][1]) if t[0] == "s" else v, t)


@instr(r"st" + _CACHE + _SPACE + _CACHE + _VEC + r"\." + _LDT)
def _st(ctx, m):
    dst, t, bits, regs, space = _ldst_form(ctx, m, 1)
    parts = [_to_bytes(ctx.read(r, f"b{bits}" if bits >= 8 else t), bits) for r in regs]
    if space == "param":        # a call's argument or a .func's result: the function's own .param bytes
        ctx.param_store(dst, np.concatenate(parts, axis=-1))
        return
    addr = ctx.address(dst)
    ctx.memory.store(space, addr, np.concatenate(parts, axis=-1), bits // 8, ctx)


def _mem_operands(ctx):
    """The two operands of ld/st; a .L2::cache_hint form has a cache-policy operand after them."""
    if "L2::cache_hint" in ctx.opcode:
        a, b, policy = ctx.need(3)
        ctx.read(policy, "b64")
        return a, b
    return ctx.need(2)


def _bytes_to(chunk, bits):
    c = np.ascontiguousarray(chunk)
    return c.view(UINT[bits]).reshape(c.shape[:-1])


def _to_bytes(v, bits):
    v = np.ascontiguousarray(np.asarray(v).astype(UINT[bits]))
    return v.view(np.uint8).reshape(v.shape + (bits // 8,))


# ----------------------------------------------------------------------------------------------
# ldmatrix / stmatrix / movmatrix (8x8 matrices of b16; each lane owns one 32-bit word per matrix)

_LITTLE = sys.byteorder == "little"


def _frag_from_matrix(mat, trans):
    """(g, 8, 8) uint16 matrices -> (g, 32) words, lane l: row l//4, columns 2(l%4), 2(l%4)+1."""
    if trans:
        mat = np.swapaxes(mat, -1, -2)
    if _LITTLE and mat.dtype == np.uint16:    # lane l's two halves are row l//4's pair l%4: one word
        return np.ascontiguousarray(mat).view(np.uint32).reshape(mat.shape[0], 32)
    lane = np.arange(32)
    lo = mat[:, lane // 4, 2 * (lane % 4)].astype(np.uint32)
    hi = mat[:, lane // 4, 2 * (lane % 4) + 1].astype(np.uint32)
    return lo | (hi << np.uint32(16))


def _matrix_from_frag(words, trans):
    w = words.astype(np.uint32)
    mat = np.empty(words.shape[:-1] + (8, 8), dtype=np.uint16)
    lane = np.arange(32)
    mat[:, lane // 4, 2 * (lane % 4)] = (w & np.uint32(0xFFFF)).astype(np.uint16)
    mat[:, lane // 4, 2 * (lane % 4) + 1] = (w >> np.uint32(16)).astype(np.uint16)
    return np.swapaxes(mat, -1, -2) if trans else mat


# ptxas takes .m8n8, .xN and .trans in any order (CUTLASS writes ldmatrix.sync.aligned.x4.trans.m8n8)
_MATRIX = r"\.sync\.aligned(?P<quals>(?:\.(?:m8n8|x[124]|trans)){2,3})(?:\.(?P<space>shared(?:::cta)?))?\.b16"


def _matrix_form(ctx, m):
    """(number of matrices, transposed?) from the shape qualifiers, each allowed once in any order."""
    q = m["quals"].split(".")[1:]
    xs = [x for x in q if x.startswith("x")]
    if q.count("m8n8") != 1 or len(xs) != 1 or q.count("trans") > 1:
        ctx.fail(f"{ctx.opcode}: the qualifiers are .m8n8, one of .x1/.x2/.x4 and optionally .trans, each once")
    return int(xs[0][1:]), "trans" in q


def _matrix_operands(ctx, m, regs_at, verb, role):
    """(matrix count, .trans, the register list, the row addresses, the state space) of an ldmatrix /
    stmatrix whose register list is operand ``regs_at`` (its ``role``), checked against the count."""
    ops = ctx.need(2)
    n, trans = _matrix_form(ctx, m)
    regs = ops[regs_at] if isinstance(ops[regs_at], list) else [ops[regs_at]]
    if len(regs) != n:
        ctx.fail(f"{ctx.opcode} {verb} {n} matrices: its {role} lists {n} 32-bit register(s), got {len(regs)}")
    ctx.require_converged()
    return n, trans, regs, ctx.address(ops[1 - regs_at]), "shared" if m["space"] else "generic"


def _matrix_rows(ctx, addr, i, name):
    """Matrix i's 8 row addresses (lanes 8i..8i+7 supply them), checked 16-byte aligned."""
    rows = addr[:, 8 * i:8 * i + 8]
    ctx.check_aligned(rows, 16, f"{name} row address (lanes {8 * i}-{8 * i + 7} supply matrix {i}'s rows)", 8 * i)
    return rows


@instr(r"ldmatrix" + _MATRIX)
def _ldmatrix(ctx, m):
    n, trans, regs, addr, space = _matrix_operands(ctx, m, 0, "loads", "destination")
    try_load = getattr(ctx.memory, "try_load", None)
    every = try_load and try_load(space, addr[:, :8 * n], 16, 16, ctx, lanes=slice(0, 8 * n))
    if every is not None:         # every row of every matrix aligned and inside: one gather
        for i, r in enumerate(regs):
            mat = np.ascontiguousarray(every[:, 8 * i:8 * i + 8]).view(np.uint16).reshape(addr.shape[0], 8, 8)
            ctx.write(r, _frag_from_matrix(mat, trans), "b32")
        return
    for i, r in enumerate(regs):
        rows = _matrix_rows(ctx, addr, i, "ldmatrix")
        data = ctx.memory.load(space, rows, 16, 16, ctx, lanes=slice(8 * i, 8 * i + 8))
        mat = np.ascontiguousarray(data).view(np.uint16).reshape(rows.shape[0], 8, 8)
        ctx.write(r, _frag_from_matrix(mat, trans), "b32")


@instr(r"stmatrix" + _MATRIX)
def _stmatrix(ctx, m):
    n, trans, regs, addr, space = _matrix_operands(ctx, m, 1, "stores", "source")
    for i, r in enumerate(regs):
        rows = _matrix_rows(ctx, addr, i, "stmatrix")
        mat = _matrix_from_frag(ctx.read(r, "b32"), trans)
        ctx.memory.store(space, rows, np.ascontiguousarray(mat).view(np.uint8).reshape(rows.shape[0], 8, 16), 16, ctx,
                         lanes=slice(8 * i, 8 * i + 8))


@instr(r"movmatrix\.sync\.aligned\.m8n8\.trans\.b16")
def _movmatrix(ctx, m):
    d, a = ctx.need(2)
    ctx.require_converged()
    ctx.write(d, _frag_from_matrix(_matrix_from_frag(ctx.read(a, "b32"), False), True), "b32")


# ----------------------------------------------------------------------------------------------
# control: barriers and no-ops (branches, ret and exit are the executor's, it owns the program counter)

@instr(r"(?:bar|barrier)(?:\.cta)?\.(?:sync|arrive)(?:\.aligned)?")
def _bar(ctx, m):
    ctx.barrier()


@instr(r"(?:bar|barrier)(?:\.cta)?\.red\.\w+(?:\.aligned)?(?:\.\w+)*")
def _bar_red(ctx, m):
    ctx.fail("bar.red (a barrier with a reduction across the CTA) is not modelled")


@instr(r"prefetchu?(?:\.(?:global|local|const|param|tensormap))?\.(?:L1|L2|L2::evict_last|L2::evict_normal)")
def _prefetch(ctx, m):
    ctx.need(1)           # a cache hint: no effect on the values a program sees


@instr(r"nanosleep\.u32")
def _nanosleep(ctx, m):
    ctx.read(ctx.need(1)[0], "u32")     # time is the scheduler's step count: sleeping changes nothing


@instr(r"(?:membar|fence)(?:\.[\w:]+)*")
def _fence(ctx, m):
    pass


# ----------------------------------------------------------------------------------------------
# warp-wide exchange: shfl, vote, redux, match, activemask (.sync forms: the executing lanes must be the membermask)

@instr(r"shfl\.sync\.(?P<mode>up|down|bfly|idx)\.b32")
def _shfl(ctx, m):
    ops = ctx.operands
    if len(ops) != 5:
        ctx.fail(f"{ctx.opcode} takes d[|p], a, b, c, membermask")
    dst, p = ops[0], None
    if isinstance(dst, str) and "|" in dst:
        dst, p = [x.strip() for x in dst.split("|")]
    ctx.require_members(ctx.read(ops[4], "b32"))
    a = ctx.read(ops[1], "b32")
    b = ctx.read(ops[2], "u32").astype(np.int64) & 31
    c = ctx.read(ops[3], "u32").astype(np.int64)
    lane = np.arange(32)[None, :]
    cval, seg = c & 31, (c >> 8) & 31
    min_lane = lane & seg
    max_lane = min_lane | (cval & ~seg)
    mode = m["mode"]
    if mode == "up":
        j = lane - b
        ok = j >= max_lane
    elif mode == "down":
        j = lane + b
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ b
        ok = j <= max_lane
    else:
        j = min_lane | (b & ~seg)
        ok = j <= max_lane
    j = np.where(ok, j, lane)
    ctx.write(dst, np.take_along_axis(a, j, axis=1), "b32")
    if p is not None:
        ctx.write(p, ok, "pred")


def _members(ctx):
    """(destination, source, the lanes that take part) of a statement over a membermask (its third
    operand), which must name the converged lanes that run it."""
    d, x, mask = ctx.need(3)
    ctx.require_members(ctx.read(mask, "b32"))
    return d, x, (np.ones(ctx.shape, dtype=bool) if ctx.mask is None else ctx.mask)


@instr(r"vote\.sync\.(?P<mode>all|any|uni)\.pred")
def _vote(ctx, m):
    d, p, on = _members(ctx)          # the members' votes only
    v = ctx.read(p, "pred")
    r = {"all": (v | ~on).all(axis=1), "any": (v & on).any(axis=1),
         "uni": (v | ~on).all(axis=1) | ~(v & on).any(axis=1)}[m["mode"]]
    ctx.write(d, np.broadcast_to(r[:, None], ctx.shape), "pred")


@instr(r"vote\.sync\.ballot\.b32")
def _ballot(ctx, m):
    d, p, on = _members(ctx)
    v = (ctx.read(p, "pred") & on).astype(np.uint64)
    bits = (v << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    ctx.write(d, np.broadcast_to(bits[:, None], ctx.shape), "b32")


@instr(r"redux\.sync\.(?:(?P<arith>add|min|max)\.(?P<t>u32|s32)|(?P<bit>and|or|xor)\.b32)")
def _redux(ctx, m):
    """One value for the whole membermask: add wraps mod 2^32, min / max compare as the type says."""
    d, a, on = _members(ctx)
    if m["bit"]:
        v = ctx.read(a, "b32").astype(np.uint32)
        ident = {"and": np.uint32(0xFFFFFFFF), "or": np.uint32(0), "xor": np.uint32(0)}[m["bit"]]
        ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[m["bit"]]
        r = ufunc.reduce(np.where(on, v, ident), axis=1).astype(np.uint32)
        typ = "b32"
    else:
        typ = m["t"]
        v = ctx.read(a, typ).astype(np.int64)
        if m["arith"] == "add":
            r = (np.where(on, v, 0).sum(axis=1) & 0xFFFFFFFF).astype(np.uint32)
            typ = "u32"
        else:
            big = np.iinfo(np.int64).max
            r = (np.where(on, v, big).min(axis=1) if m["arith"] == "min" else np.where(on, v, -big).max(axis=1))
    ctx.write(d, np.broadcast_to(r[:, None], ctx.shape), typ)


@instr(r"match\.(?P<mode>any|all)\.sync\.(?P<t>b32|b64)")
def _match(ctx, m):
    """match.any: each member gets the mask of the members whose a equals its own; match.all: the
    membermask (and p true) for every member when all members' a are equal, else 0 (p false)."""
    ops = ctx.operands
    if len(ops) != 3:
        ctx.fail(f"{ctx.opcode} takes d{'[|p]' if m['mode'] == 'all' else ''}, a, membermask; got {len(ops)} operands")
    dst, p = ops[0], None
    if isinstance(dst, str) and "|" in dst:
        if m["mode"] == "any":
            ctx.fail("match.any.sync has no predicate destination (d|p is match.all's)", token=dst)
        dst, p = [x.strip() for x in dst.split("|")]
    ctx.require_members(ctx.read(ops[2], "b32"))
    on = np.ones(ctx.shape, dtype=bool) if ctx.mask is None else ctx.mask
    a = ctx.read(ops[1], m["t"])
    lanes = np.uint64(1) << np.arange(32, dtype=np.uint64)
    same = (a[:, :, None] == a[:, None, :]) & on[:, None, :]          # [warp, lane, other member]
    if m["mode"] == "any":
        d = (same.astype(np.uint64) * lanes).sum(axis=2).astype(np.uint32)
    else:
        members = (on.astype(np.uint64) * lanes).sum(axis=1)
        alleq = (same.sum(axis=2) == on.sum(axis=1)[:, None]) | ~on      # every member equal to this lane's a
        alleq = np.broadcast_to(alleq.all(axis=1)[:, None], ctx.shape)
        d = np.where(alleq, members[:, None], 0).astype(np.uint32)
        if p is not None:
            ctx.write(p, alleq, "pred")
    ctx.write(dst, d, "b32")


@instr(r"bar\.warp\.sync")
def _bar_warp_sync(ctx, m):
    (mask,) = ctx.need(1)
    ctx.require_members(ctx.read(mask, "b32"))


@instr(r"activemask\.b32")
def _activemask(ctx, m):
    (d,) = ctx.need(1)
    lanes = np.ones(ctx.shape, dtype=np.uint64) if ctx.mask is None else ctx.mask.astype(np.uint64)
    bits = (lanes << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    ctx.write(d, np.broadcast_to(bits[:, None], ctx.shape), "b32")


# ----------------------------------------------------------------------------------------------
# cp.async: global -> shared copies.  warpsim completes the copy at once (reading the destination
# before cp.async.wait_group/wait_all is undefined in PTX, so no program can tell the difference).

@instr(r"cp\.async\.(?P<cache>ca|cg)\.shared(?:::cta)?\.global(?P<hint>\.L2::cache_hint)?(?:\.L2::(?:64|128|256)B)?"
       r"(?(hint)|(?:\.L2::cache_hint)?)")
def _cp_async(ctx, m):
    ops = ctx.operands
    hint = "L2::cache_hint" in ctx.opcode
    if len(ops) < 3 or len(ops) > 4 + hint:
        ctx.fail(f"{ctx.opcode} takes [dst], [src], cp-size[, src-size]{'[, cache-policy]' if hint else ''} or "
                 f"[dst], [src], cp-size[, ignore-src]{'[, cache-policy]' if hint else ''}")
    size = ctx.read(ops[2], "u32")
    if not (size == size.flat[0]).all() or int(size.flat[0]) not in (4, 8, 16):
        ctx.fail("cp-size must be the immediate 4, 8 or 16", token=ops[2] if isinstance(ops[2], str) else None)
    n = int(size.flat[0])
    if m["cache"] == "cg" and n != 16:
        ctx.fail(f"cp.async.cg copies 16 bytes; cp-size {n} needs .ca")
    rest = list(ops[3:])
    if hint:
        if len(rest) == 0:
            ctx.fail(f"{ctx.opcode} needs its cache-policy operand last")
        ctx.read(rest.pop(), "b64")
    src_size = np.full(ctx.shape, n, dtype=np.int64)
    if rest:
        tok = rest[0]
        neg = isinstance(tok, str) and tok.startswith("!")
        reg = tok[1:] if neg else tok
        if isinstance(reg, str) and ctx.machine.is_register(reg) and ctx.machine.register_width(reg, ctx) == 1:
            ignore = ctx.read(reg, "pred")
            src_size = np.where(~ignore if neg else ignore, 0, src_size)       # ignore-src predicate
        else:
            src_size = ctx.read(tok, "u32").astype(np.int64)
            active = ctx.lane_mask()
            bad = (src_size > n) & (True if active is None else active)
            if bad.any():
                ctx.fail(f"src-size {int(src_size[bad][0])} is larger than cp-size {n}", token=tok)
    dst = ctx.address(ops[0])
    src = ctx.address(ops[1])
    data = np.zeros(ctx.shape + (n,), dtype=np.uint8)
    active = ctx.lane_mask()
    active = np.ones(ctx.shape, bool) if active is None else active
    saved = ctx.mask
    try:            # the source is read only where src-size is not zero, byte by byte when partial
        full = active & (src_size == n)
        if full.any():
            ctx.mask = full
            data[full] = ctx.memory.load("global", src, n, n, ctx)[full]
        part = active & (src_size > 0) & (src_size < n)
        for j in range(n if part.any() else 0):
            sel = part & (src_size > j)
            if sel.any():
                ctx.mask = sel
                data[sel, j] = ctx.memory.load("global", src + np.uint64(j), 1, 1, ctx)[sel][:, 0]
    finally:
        ctx.mask = saved
    ctx.memory.store("shared", dst, data, n, ctx)


@instr(r"cp\.async\.(?:commit_group|wait_group|wait_all)")
def _cp_async_sync(ctx, m):
    pass
