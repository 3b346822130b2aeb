"""f32 / f64 rows: every rounding mode, .ftz and .sat, division, reciprocal and square root,
min/max with NaN rules, copysign, testp.

Correctly rounded operations run on the exact soft-float core (:mod:`warpsim.numerics.softfloat`)
or, where the host's IEEE double is provably enough, on float64: a quotient, reciprocal or square
root rounded to float64 and then to float32 is the correctly rounded float32 result (53 >= 2*24 + 2,
double rounding is innocuous for these operations).  The special-function forms
(``.approx``, ``div.full``) live in :mod:`warpsim.ptx.sfu_ops`.
"""

from __future__ import annotations

import numpy as np

from .alu_rows import EXACT, VERIFIED, note_status, row
from .convert import saturate
from .instructions import _CMPS, _combine, _compare, instr

# format: (exponent bits, mantissa bits, storage dtype, canonical NaN of arithmetic results)
FMT = {"f16": (5, 10, np.uint16, 0x7FFF), "bf16": (8, 7, np.uint16, 0x7FFF),
       "f32": (8, 23, np.uint32, 0x7FFFFFFF), "f64": (11, 52, np.uint64, 0xFFF8000000000000)}

_KERNELS = {}


def _kernel():
    """The soft-float fma over arrays (numba imported and compiled on first use; never fastmath)."""
    if not _KERNELS:
        from numba import njit

        from ..numerics.softfloat import fma_bits_mode

        @njit(cache=True, nogil=True)
        def fma_arrays(a, b, c, out, eb, mb, nan_mode, dnan, rmode):
            for i in range(a.size):
                out[i] = fma_bits_mode(a[i], b[i], c[i], eb, mb, nan_mode, dnan, rmode)

        _KERNELS["fma"] = fma_arrays
    return _KERNELS["fma"]


def _fields(x, fmt):
    eb, mb, dt, _ = FMT[fmt]
    x = np.asarray(x).astype(np.uint64)
    sign = x >> np.uint64(eb + mb)
    exp = (x >> np.uint64(mb)) & np.uint64((1 << eb) - 1)
    man = x & np.uint64((1 << mb) - 1)
    return sign, exp, man


def is_nan(x, fmt):
    eb = FMT[fmt][0]
    _, e, mn = _fields(x, fmt)
    return (e == (1 << eb) - 1) & (mn != 0)


def flush(x, fmt):
    """.ftz: a subnormal becomes the zero of its sign."""
    eb, mb, dt, _ = FMT[fmt]
    s, e, mn = _fields(x, fmt)
    sub = (e == 0) & (mn != 0)
    return np.where(sub, s << np.uint64(eb + mb), np.asarray(x).astype(np.uint64)).astype(dt)


def fma(a, b, c, fmt, rmode="rn", *, nan="canonical", ftz=False, sat=False):
    """Correctly rounded a * b + c on raw bits (arrays of one shape), rounding by ``rmode`` (rn, rz,
    rm, rp).  NaN results: ``nan`` "canonical" (the format's canonical NaN) or an operand priority
    "abc" / "bca" (the first NaN operand in that order comes out quieted; see softfloat)."""
    from ..numerics import softfloat as sf
    eb, mb, dt, dnan = FMT[fmt]
    rcode = {"rn": sf.ROUND_NEAREST, "rz": sf.ROUND_ZERO, "rm": sf.ROUND_DOWN, "rp": sf.ROUND_UP}[rmode]
    ncode = {"canonical": sf.NAN_CANONICAL, "abc": sf.NAN_PROPAGATE_ABC, "bca": sf.NAN_PROPAGATE_BCA}[nan]
    if ftz:
        a, b, c = flush(a, fmt), flush(b, fmt), flush(c, fmt)
    a, b, c = np.broadcast_arrays(*(np.asarray(x).astype(np.uint64) for x in (a, b, c)))
    shape = a.shape
    out = np.empty(a.size, np.uint64)
    _kernel()(np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1),
              np.ascontiguousarray(c).reshape(-1), out, eb, mb, ncode, np.uint64(dnan), rcode)
    r = out.reshape(shape).astype(dt)
    if ftz:
        r = flush(r, fmt)
    if sat:
        r = saturate(r, fmt)
    return r


def _one(fmt):
    eb, mb, dt, _ = FMT[fmt]
    return dt(((1 << (eb - 1)) - 1) << mb)


def _sign(fmt):
    eb, mb, dt, _ = FMT[fmt]
    return dt(1 << (eb + mb))


def arith(op, a, b, fmt, rmode="rn", **kw):
    """add / sub / mul through the fma core (x * 1 + y, x * y + (-0), or + (+0) rounding down)."""
    if op == "sub":
        b = b ^ _sign(fmt)
        op = "add"
    if op == "add":
        return fma(a, _one(fmt), b, fmt, rmode, **kw)
    zero = _sign(fmt) if rmode != "rm" else FMT[fmt][2](0)
    return fma(a, b, zero, fmt, rmode, **kw)


# ----------------------------------------------------------------------------------------------
# add / sub / mul / fma / mad, f32 and f64

_RND = r"(?:\.(?P<rnd>rn|rz|rm|rp))"
_F64_FMA_NAN = "bca"      # f64 fma NaN operand priority (DMMA's rule, as the capture confirms)
_F64_NOTE = "a NaN operand comes out quieted, a before b, payload and sign kept; invalid operations 0xfff8000000000000"
_F64_ARITH_NOTE = ("NaN results: b's NaN quieted if b is a NaN, else a's (sub keeps b's sign); invalid "
                   "operations 0xfff8000000000000 (H100 capture)")
_QUIET64 = np.uint64(1 << 51)


def nan_b_then_a(r, a, b):
    """f64 add / sub / mul NaN rule of the H100: a NaN b comes out quieted (sign and payload as
    given, also for sub), else a NaN a; other results are r."""
    a, b = np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64)
    return np.where(is_nan(b, "f64"), b | _QUIET64, np.where(is_nan(a, "f64"), a | _QUIET64, r)).astype(np.uint64)


@row(r"(?P<op>add|sub|mul)" + _RND + r"?(?P<ftz>\.ftz)?(?P<sat>\.sat)?\.f32", "f32", ["f32", "f32"],
     note="exact soft-float rounding in every mode; NaN results 0x7fffffff")
def _f32_arith(m, a, b):
    return arith(m["op"], a, b, "f32", m["rnd"] or "rn", ftz=bool(m["ftz"]), sat=bool(m["sat"]))


@row(r"(?P<op>fma|mad)" + _RND + r"(?P<ftz>\.ftz)?(?P<sat>\.sat)?\.f32", "f32", ["f32", "f32", "f32"])
def _f32_fma(m, a, b, c):
    return fma(a, b, c, "f32", m["rnd"], ftz=bool(m["ftz"]), sat=bool(m["sat"]))


@row(r"contracted\.mul(?P<ftz>\.ftz)?\.f32\.(?P<op>add|sub|rsub)\.f32", "f32", ["f32", "f32", "f32"],
     status=VERIFIED,
     note="a mul.f32 merged by ptxas into the add / sub reading it (warpsim.ptx.contraction): one FFMA, as the "
          "SASS shows (sub negates the addend, rsub the product); equal to an H200 (ptx_contraction_sm90.npz)")
def _f32_contracted_product(m, a, b, c):
    sign = _sign("f32")
    c = c ^ sign if m["op"] == "sub" else c
    a = a ^ sign if m["op"] == "rsub" else a
    return fma(a, b, c, "f32", ftz=bool(m["ftz"]))


@row(r"(?P<op>add|sub|mul)" + _RND + r"?\.f64", "f64", ["f64", "f64"], note=_F64_ARITH_NOTE)
def _f64_arith(m, a, b):
    return nan_b_then_a(arith(m["op"], a, b, "f64", m["rnd"] or "rn"), a, b)


@row(r"(?P<op>fma|mad)" + _RND + r"\.f64", "f64", ["f64", "f64", "f64"], note=_F64_NOTE)
def _f64_fma(m, a, b, c):
    return fma(a, b, c, "f64", m["rnd"], nan=_F64_FMA_NAN)


# ----------------------------------------------------------------------------------------------
# division, reciprocal, square root

def require_ieee_host():
    """The host-float rows are exact only while the FPU rounds to nearest and keeps subnormals."""
    from ..engine.hostfpu import PROBE32, PROBE64, fp_env_ok
    if not fp_env_ok(PROBE64, PROBE32):
        raise RuntimeError("the host FPU is not in IEEE round-to-nearest with subnormals (FTZ/DAZ or a "
                           "directed rounding mode is set): warpsim's div/rcp/sqrt rows would not be exact")


def _host(fmt, fn, *xs, ftz=False):
    """fn on float64 values of raw bits; round to fmt (f32: via f64, innocuous double rounding).
    NaN results become the format's canonical NaN (f32) or propagate quieted (f64)."""
    require_ieee_host()
    dt = FMT[fmt][2]
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    vals = [np.asarray(x).astype(dt).view(np.float32 if fmt == "f32" else np.float64).astype(np.float64)
            for x in xs]
    with np.errstate(all="ignore"):
        r = fn(*vals)
    if fmt == "f32":
        out = r.astype(np.float32).view(np.uint32)
        out = np.where(np.isnan(r), np.uint32(0x7FFFFFFF), out)
    else:
        out = _host_nan64(r.view(np.uint64), r, xs)
    out = out.astype(dt)
    return flush(out, fmt) if ftz else out


@row(r"div\.rn(?P<ftz>\.ftz)?\.f32", "f32", ["f32", "f32"])
def _div_rn32(m, a, b):
    return _host("f32", np.divide, a, b, ftz=bool(m["ftz"]))


def _quotient(kind, v):
    """(a, b, the host's nearest result q) of div (a / b), rcp (1 / b) or sqrt (sqrt a; b None) of the
    decoded operands v."""
    if kind == "div":
        a, b = v
    elif kind == "rcp":
        a, b = np.ones_like(v[0]), v[0]
    else:
        a, b = v[0], None
    return a, b, (np.sqrt(a) if kind == "sqrt" else a / b)


def directed32(kind, mode, xs, ftz=False):
    """div / rcp / sqrt of f32 bits rounded towards zero, -inf or +inf, exactly: the float64
    result q is rounded by ``mode``; only when q itself lies on the f32 grid can the exact value be
    on either side of it, and an exact float64 comparison (a against q*b, or q*q) says which."""
    from .convert import encode
    require_ieee_host()
    if ftz:
        xs = [flush(x, "f32") for x in xs]
    with np.errstate(all="ignore"):
        v = [np.asarray(x).astype(np.uint32).view(np.float32).astype(np.float64) for x in xs]
        a, b, q = _quotient(kind, v)
        y = encode(q, "f32", mode).astype(np.uint32)
        on_grid = np.isfinite(q) & (q != 0) & (q.astype(np.float32).astype(np.float64) == q)
        above = (a > q * b) == (b > 0) if b is not None else a > q * q     # exact value above q
        below = (a < q * b) == (b > 0) if b is not None else a < q * q
        if b is not None:
            above, below = above & (a != q * b), below & (a != q * b)
        yf = y.view(np.float32)
        up = np.nextafter(yf, np.float32(np.inf)).view(np.uint32)
        down = np.nextafter(yf, np.float32(-np.inf)).view(np.uint32)
        neg = q < 0
        step_up = above & ((mode == "rp") | ((mode == "rz") & neg))
        step_down = below & ((mode == "rm") | ((mode == "rz") & ~neg))
    out = np.where(on_grid & step_up, up, np.where(on_grid & step_down, down, y)).astype(np.uint32)
    out = np.where(np.isnan(q), np.uint32(0x7FFFFFFF), out)
    if ftz:
        # .ftz decides on the exact value (tininess before rounding): a quotient below 2**-126 in
        # magnitude is a zero even where rm / rp would round it up to 2**-126 (H100 capture)
        tiny = np.abs(q) < 2.0 ** -126
        edge = (np.abs(q) == 2.0 ** -126) & np.where(q > 0, below, above)
        zero = (np.signbit(q).astype(np.uint32) << np.uint32(31))
        out = np.where(tiny | edge, zero, flush(out, "f32")).astype(np.uint32)
    return out


_DIRECTED = r"(?P<rnd>rz|rm|rp)(?P<ftz>\.ftz)?\.f32"


@row(r"div\." + _DIRECTED, "f32", ["f32", "f32"])
def _div_directed32(m, a, b):
    return directed32("div", m["rnd"], [a, b], bool(m["ftz"]))


@row(r"rcp\." + _DIRECTED, "f32", ["f32"])
def _rcp_directed32(m, a):
    return directed32("rcp", m["rnd"], [a], bool(m["ftz"]))


@row(r"sqrt\." + _DIRECTED, "f32", ["f32"])
def _sqrt_directed32(m, a):
    return directed32("sqrt", m["rnd"], [a], bool(m["ftz"]))


def directed64(kind, mode, xs):
    """div / rcp / sqrt of f64 bits rounded towards zero, -inf or +inf, exactly: q is the host's
    correctly rounded (nearest) result; the exact value's side of q comes from rational arithmetic
    (one Fraction comparison per element), and the directed result is q or its neighbour."""
    from fractions import Fraction
    require_ieee_host()
    v = [np.asarray(x).astype(np.uint64).view(np.float64) for x in xs]
    with np.errstate(all="ignore"):
        a, b, q = _quotient(kind, v)
    side = np.zeros(q.shape, np.int64)           # sign of (exact - q) where q is finite
    fin = np.isfinite(q) & np.isfinite(a) & (np.ones(q.shape, bool) if b is None else np.isfinite(b))
    for i in zip(*np.nonzero(fin)):
        fa, fq = Fraction(float(a[i])), Fraction(float(q[i]))
        if b is None:
            d = fa - fq * fq
        else:
            fb = Fraction(float(b[i]))
            d = (fa - fq * fb) * (1 if fb > 0 else -1)
        side[i] = (d > 0) - (d < 0)
    up, down = np.nextafter(q, np.inf), np.nextafter(q, -np.inf)
    neg = np.signbit(q)
    toward_up = (mode == "rp") | ((mode == "rz") & neg)
    toward_down = (mode == "rm") | ((mode == "rz") & ~neg)
    out = np.where((side > 0) & toward_up, up, np.where((side < 0) & toward_down, down, q))
    # overflow of finite operands: towards zero gives the largest finite number
    big = np.isinf(q) & np.isfinite(a) & (np.ones(q.shape, bool) if b is None else (np.isfinite(b) & (b != 0)))
    shrink = big & np.where(neg, mode != "rm", mode != "rp")
    out = np.where(shrink, np.copysign(np.finfo(np.float64).max, q), out)
    bits = out.view(np.uint64)
    return _host_nan64(bits, q, xs)


def _host_nan64(bits, r, xs):
    """NaN results of an f64 operation: a NaN operand quieted (first first), else the default NaN."""
    nan_in = np.zeros(bits.shape, bool)
    prop = np.zeros(bits.shape, np.uint64)
    for x in reversed(xs):
        xn = is_nan(x, "f64")
        prop = np.where(xn, np.asarray(x).astype(np.uint64) | np.uint64(1 << 51), prop)
        nan_in |= xn
    return np.where(np.isnan(r), np.where(nan_in, prop, np.uint64(FMT["f64"][3])), bits).astype(np.uint64)


@row(r"div\.(?P<rnd>rz|rm|rp)\.f64", "f64", ["f64", "f64"], note=_F64_NOTE)
def _div_directed64(m, a, b):
    return directed64("div", m["rnd"], [a, b])


@row(r"rcp\.(?P<rnd>rz|rm|rp)\.f64", "f64", ["f64"], note=_F64_NOTE)
def _rcp_directed64(m, a):
    return directed64("rcp", m["rnd"], [a])


@row(r"sqrt\.(?P<rnd>rz|rm|rp)\.f64", "f64", ["f64"], note=_F64_NOTE)
def _sqrt_directed64(m, a):
    return directed64("sqrt", m["rnd"], [a])


@row(r"div\.rn\.f64", "f64", ["f64", "f64"], note=_F64_NOTE)
def _div_rn64(m, a, b):
    return _host("f64", np.divide, a, b)


@row(r"rcp\.rn(?P<ftz>\.ftz)?\.f32", "f32", ["f32"])
def _rcp_rn32(m, a):
    return _host("f32", lambda x: 1.0 / x, a, ftz=bool(m["ftz"]))


@row(r"rcp\.rn\.f64", "f64", ["f64"], note=_F64_NOTE)
def _rcp_rn64(m, a):
    return _host("f64", lambda x: 1.0 / x, a)


@row(r"sqrt\.rn(?P<ftz>\.ftz)?\.f32", "f32", ["f32"])
def _sqrt_rn32(m, a):
    return _host("f32", np.sqrt, a, ftz=bool(m["ftz"]))


@row(r"sqrt\.rn\.f64", "f64", ["f64"], note=_F64_NOTE)
def _sqrt_rn64(m, a):
    return _host("f64", np.sqrt, a)



# ----------------------------------------------------------------------------------------------
# min / max, abs / neg, copysign, testp

def _key(x, fmt):
    """An integer ordering key of raw float bits (-0 < +0), NaN excluded by the caller."""
    eb, mb, _, _ = FMT[fmt]
    n = eb + mb
    x = np.asarray(x).astype(np.uint64)
    mag = (x & np.uint64((1 << n) - 1)).astype(np.int64)
    neg = (x >> np.uint64(n)) == 1
    return np.where(neg, -mag - 1, mag)


def minmax(op, a, b, fmt, *, nan=False, xorsign=False, ftz=False):
    """PTX min/max on raw bits: a NaN operand loses to a number (with .NaN it wins); two NaNs (or
    any NaN with .NaN) give the canonical NaN; -0 < +0; .xorsign.abs: compare |a|, |b| and give
    the result the sign a ^ b."""
    eb, mb, dt, _ = FMT[fmt]
    cnan = dt((1 << (eb + mb)) - 1)
    if ftz:
        a, b = flush(a, fmt), flush(b, fmt)
    a = np.asarray(a).astype(dt)
    b = np.asarray(b).astype(dt)
    sgn = _sign(fmt)
    s = (a ^ b) & sgn
    if xorsign:
        a, b = a & ~sgn, b & ~sgn
    na, nb = is_nan(a, fmt), is_nan(b, fmt)
    ka, kb = _key(a, fmt), _key(b, fmt)
    pick_a = (ka <= kb) if op == "min" else (ka >= kb)
    r = np.where(pick_a, a, b)
    r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
    bad = (na | nb) if nan else (na & nb)
    r = np.where(bad, cnan, r)
    if xorsign:
        r = np.where(is_nan(r, fmt), r, r | s)
    return r.astype(dt)


@row(r"(?P<op>min|max)(?P<ftz>\.ftz)?(?P<nan>\.NaN)?(?P<xs>\.xorsign\.abs)?\.f32", "f32", ["f32", "f32"])
def _minmax32(m, a, b):
    return minmax(m["op"], a, b, "f32", nan=bool(m["nan"]), xorsign=bool(m["xs"]), ftz=bool(m["ftz"]))


@row(r"(?P<op>min|max)\.f64", "f64", ["f64", "f64"],
     note="a NaN loses to a number; two NaNs give b quieted (H100 capture)")
def _minmax64(m, a, b):
    both = is_nan(a, "f64") & is_nan(b, "f64")
    return np.where(both, np.asarray(b).astype(np.uint64) | _QUIET64, minmax(m["op"], a, b, "f64"))


@row(r"(?P<op>abs|neg)\.ftz\.f32", "f32", ["f32"])
def _absneg_ftz(m, a):
    a = flush(a, "f32")
    r = a & np.uint32(0x7FFFFFFF) if m["op"] == "abs" else a ^ np.uint32(0x80000000)
    return np.where(is_nan(a, "f32"), np.uint32(0x7FFFFFFF), r)     # as the captured abs/neg.f32


@row(r"(?P<op>abs|neg)\.f64", "f64", ["f64"],
     note="sign bit cleared / flipped; a NaN comes out quieted with its sign kept (H100 capture)")
def _absneg64(m, a):
    r = a & np.uint64(0x7FFFFFFFFFFFFFFF) if m["op"] == "abs" else a ^ np.uint64(1 << 63)
    return np.where(is_nan(a, "f64"), a | _QUIET64, r)


@row(r"copysign\.(?P<t>f32|f64)", "{t}", ["{t}", "{t}"])
def _copysign(m, a, b):
    sgn = _sign(m["t"])
    return (b & ~sgn) | (a & sgn)


@instr(r"testp\.(?P<op>finite|infinite|number|notanumber|normal|subnormal)\.(?P<t>f32|f64)")
def _testp(ctx, m):
    p, a = ctx.need(2)
    t = m["t"]
    eb = FMT[t][0]
    x = ctx.read(a, t)
    _, e, mn = _fields(x.view(FMT[t][2]), t)
    top = e == (1 << eb) - 1
    r = {"finite": ~top, "infinite": top & (mn == 0), "number": ~(top & (mn != 0)),
         "notanumber": top & (mn != 0), "normal": ~top & ((e != 0) | (mn == 0)), "subnormal": (e == 0) & (mn != 0)}[m["op"]]
    ctx.write(p, r, "pred")


# ----------------------------------------------------------------------------------------------
# setp with .ftz and for f16 / bf16 / f16x2 / bf16x2; slct

def _as_f64(x, fmt):
    from .convert import decode
    return decode(x, fmt)


def _compare_halves(ctx, m, a_op, b_op, fmt, ftz):
    """The comparison ``m['cmp']`` of two float operands: one boolean array, or two (lower, upper
    half) for the packed formats."""
    pair = fmt.endswith("x2")
    rt = {"f16x2": "b32", "bf16x2": "b32"}.get(fmt, fmt)
    a = ctx.read(a_op, rt)
    b = ctx.read(b_op, rt)
    base = fmt.replace("x2", "")
    parts = [(a, b)] if not pair else [(a & np.uint32(0xFFFF), b & np.uint32(0xFFFF)),
                                        (a >> np.uint32(16), b >> np.uint32(16))]
    res = []
    for x, y in parts:
        x = x.view(FMT[base][2]) if x.dtype.kind == "f" else x.astype(FMT[base][2])
        y = y.view(FMT[base][2]) if y.dtype.kind == "f" else y.astype(FMT[base][2])
        if ftz:
            x, y = flush(x, base), flush(y, base)
        res.append(_compare(m["cmp"], _as_f64(x, base), _as_f64(y, base)))
    return res


def _setp_common(ctx, m, fmt, ftz, pair):
    ops = ctx.operands
    if len(ops) not in (3, 4):
        ctx.fail(f"{ctx.opcode} takes a predicate destination (optionally p|q), two sources and, with "
                 ".and/.or/.xor, a predicate source")
    dst, q = ops[0], None
    if isinstance(dst, str) and "|" in dst:
        dst, q = [x.strip() for x in dst.split("|")]
    res = _compare_halves(ctx, m, ops[1], ops[2], fmt, ftz)
    if pair:          # p gets the lower half, q the upper half
        r, rq = res
    else:
        r, rq = res[0], ~res[0]
    r, rq = _combine(ctx, m, ops, r, rq)
    if pair and q is None:
        ctx.fail(f"{ctx.opcode} compares two halves: its destination is p|q (lower half, upper half)")
    ctx.write(dst, r, "pred")
    if q is not None:
        ctx.write(q, rq, "pred")


_BOP = r"(?:\.(?P<bop>and|or|xor))?"


@instr(r"setp\." + _CMPS + _BOP + r"\.ftz\.(?P<st>f32)")
def _setp_ftz(ctx, m):
    _setp_common(ctx, m, "f32", True, False)


@instr(r"setp\." + _CMPS + _BOP + r"(?P<ftz>\.ftz)?\.(?P<st>f16|bf16|f16x2|bf16x2)")
def _setp_half(ctx, m):
    _setp_common(ctx, m, m["st"], bool(m["ftz"]), m["st"].endswith("x2"))


#: set's "true" word per destination type (false is 0): 1.0 for a float, all ones for an integer;
#: a packed destination gets it in each half
_SET_TRUE = {"f32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80, "u16": 0xFFFF, "s16": 0xFFFF, "u32": 0xFFFFFFFF,
             "s32": 0xFFFFFFFF, "f16x2": 0x3C00, "bf16x2": 0x3F80}


@instr(r"set\." + _CMPS + _BOP + r"(?P<ftz>\.ftz)?\.(?P<dt>[us](?:16|32)|f32|f16x2|bf16x2|f16|bf16)"
       r"\.(?P<st>[bus](?:16|32|64)|f32|f64|f16x2|bf16x2|f16|bf16)")
def _set(ctx, m):
    """``set``: a comparison written as a number -- what cuda_fp16.h's inline asm multiplies by."""
    ops = ctx.operands
    if len(ops) != (4 if m["bop"] else 3):
        ctx.fail(f"{ctx.opcode} takes a destination, two sources" + (" and a predicate" if m["bop"] else ""))
    st, dt = m["st"], m["dt"]
    if st.endswith("x2") != dt.endswith("x2") and dt not in ("u32", "s32"):
        ctx.fail(f"{ctx.opcode}: a packed comparison writes .f16x2/.bf16x2/.u32/.s32")
    if st[0] == "f":
        res = _compare_halves(ctx, m, ops[1], ops[2], st, bool(m["ftz"]))
    else:
        res = [_compare(m["cmp"], ctx.read(ops[1], st), ctx.read(ops[2], st))]
    if m["bop"]:
        if st.endswith("x2"):
            ctx.fail(f"{ctx.opcode}: .and/.or/.xor with a packed comparison is not modelled")
        c = ctx.read(ops[3], "pred")
        res = [{"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[m["bop"]](res[0], c)]
    true = _SET_TRUE[dt] if len(res) == 1 or dt.endswith("x2") else 0xFFFF
    word = np.zeros(res[0].shape, np.uint32)
    for k, r in enumerate(res):
        word |= np.where(r, np.uint32(true << (16 * k)), np.uint32(0))
    bits = "b32" if dt.endswith("x2") or dt in ("u32", "s32", "f32") else "b16"
    ctx.write(ops[0], word.astype(np.uint32 if bits == "b32" else np.uint16), bits)


@instr(r"slct(?P<ftz>\.ftz)?\.(?P<t>[bus](?:16|32|64)|f32|f64)\.(?P<ct>s32|f32)")
def _slct(ctx, m):
    d, a, b, c = ctx.need(4)
    t = m["t"]
    va, vb = ctx.read(a, t), ctx.read(b, t)
    if m["ct"] == "s32":
        take_a = ctx.read(c, "s32") >= 0
    else:
        vc = ctx.read(c, "f32").view(np.uint32)
        if m["ftz"]:
            vc = flush(vc, "f32")
        # c >= 0 (-0 included); NaN gives b
        take_a = ~is_nan(vc, "f32") & (((vc >> np.uint32(31)) == 0) | ((vc & np.uint32(0x7FFFFFFF)) == 0))
    ctx.write(d, np.where(take_a, va, vb), t)


note_status(r"testp\.(?:finite|infinite|number|notanumber|normal|subnormal)\.(?:f32|f64)", EXACT)
note_status(r"setp\." + _CMPS + r"(?:\.(?:and|or|xor))?\.ftz\.f32", EXACT)
note_status(r"setp\." + _CMPS + r"(?:\.(?:and|or|xor))?(?:\.ftz)?\.(?:f16|bf16|f16x2|bf16x2)", EXACT)
note_status(r"set\." + _CMPS + r"(?:\.(?:and|or|xor))?(?:\.ftz)?\.(?:[us](?:16|32)|f32|f16x2|bf16x2|f16|bf16)"
            r"\.(?:[bus](?:16|32|64)|f32|f64|f16x2|bf16x2|f16|bf16)", EXACT)
note_status(r"slct(?:\.ftz)?\.(?:[bus](?:16|32|64)|f32|f64)\.(?:s32|f32)", EXACT)
