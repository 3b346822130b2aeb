"""Special-function rows: each PTX form as the SASS sequence ptxas 13 writes for sm_90a around its
``MUFU`` (read with ``cuobjdump -sass``; the sequences are listed in docs/sfu.md), the MUFU itself
from :mod:`warpsim.numerics.sfu`.  The functions here are the readable numpy model (:data:`REFERENCE`); the
rows and :data:`FORMS` run the jitted copy of each in :mod:`warpsim.engine.sfu` (same words, checked
against the hardware by tests/test_sfu.py and tests/test_ptx_alu2.py).

The wrappers are ordinary correctly rounded FMUL / DFMA steps and predicated scalings: non-``.ftz``
forms move subnormal operands into the normal range by 2**24 (and results back), ``div.full``
scales a divisor above 2**126 by 1/4, ``sin``/``cos`` multiply by 1/(2 pi) rounding towards zero.
"""

from __future__ import annotations

import numpy as np

from ..engine import sfu as _fast
from ..numerics import sfu
from .alu_rows import VERIFIED, row
from .float_ops import fma as _soft_fma
from .packed_ops import lanes

_NAN32 = np.uint32(0x7FFFFFFF)
_ABS = np.uint32(0x7FFFFFFF)
_TWO_M126 = np.uint32(0x00800000)      # 2**-126
_TWO_126 = np.uint32(0x7E800000)       # 2**126
_EXHAUSTIVE = ("verified (exhaustive): equal to an H200 (the H100's GH100 SM) on every operand word, and to "
               "the H100 capture where the form is in it (docs/sfu.md); the SASS sequence of ptxas 13 around "
               "MUFU.{unit}, the MUFU from its hardware table")


def _f32(bits):
    with np.errstate(all="ignore"):
        return np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)


def _flush32(x):
    x = np.asarray(x, np.uint32)
    return np.where((x & np.uint32(0x7F800000)) == 0, x & np.uint32(0x80000000), x).astype(np.uint32)


def fmul32(a, b, ftz=False):
    """FMUL (round to nearest): the product of two f32 is exact in float64, so one rounding to f32
    is the correct one, subnormal results included.  NaN results 0x7fffffff."""
    if ftz:
        a, b = _flush32(a), _flush32(b)
    with np.errstate(all="ignore"):
        p = _f32(a) * _f32(b)
        out = np.where(np.isnan(p), _NAN32, p.astype(np.float32).view(np.uint32)).astype(np.uint32)
    return _flush32(out) if ftz else out


def _const(value, like):
    return np.full(np.shape(like), np.float32(value).view(np.uint32), np.uint32)


def _abs_ge(x, bound):
    """FSETP.GEU |x|, bound: true for NaN as well."""
    mag = np.asarray(x, np.uint32) & _ABS
    return (mag >= bound) | (mag > np.uint32(0x7F800000))


def _abs_gt(x, bound):
    """FSETP.GT |x|, bound (ordered: false for NaN)."""
    mag = np.asarray(x, np.uint32) & _ABS
    return (mag > bound) & (mag <= np.uint32(0x7F800000))


# ----------------------------------------------------------------------------------------------
# f32 forms

def _patch(out, where, fn, *xs):
    """out with fn(*xs[where]) at the operands the SASS sends down its predicated path."""
    if where.any():
        out = out.copy()
        out[where] = fn(*(x[where] for x in xs))
    return out


def rcp_approx(a, ftz):
    a = np.asarray(a, np.uint32)
    if ftz:
        return sfu.rcp(a)
    r = sfu.rcp(a)
    scaled = ~_abs_ge(a, _TWO_M126) | _abs_gt(a, _TWO_126)

    def slow(x):
        s = np.where(_abs_ge(x, _TWO_M126), _const(1.0, x), _const(2.0 ** 24, x))
        s = np.where(_abs_gt(x, _TWO_126), _const(0.25, x), s)
        return fmul32(s, sfu.rcp(fmul32(x, s)))
    return _patch(r, scaled, slow, a)


def _scaled_root(a, unit, ftz, back):
    a = np.asarray(a, np.uint32)
    if ftz:
        return unit(a)
    return _patch(unit(a), ~_abs_ge(a, _TWO_M126),
                  lambda x: fmul32(unit(fmul32(x, _const(2.0 ** 24, x))), _const(back, x)), a)


def rsqrt_approx(a, ftz):
    return _scaled_root(a, sfu.rsq, ftz, 4096.0)


def sqrt_approx(a, ftz):
    return _scaled_root(a, sfu.sqrt, ftz, 2.0 ** -12)


def ex2_approx(a, ftz):
    a = np.asarray(a, np.uint32)
    if ftz:
        return sfu.ex2(a)
    low = _f32(a) < -126.0                           # FSETP.GEU a, -126 fails: halve, square the result

    def slow(x):
        r = sfu.ex2(fmul32(x, _const(0.5, x)))
        return fmul32(r, r)
    return _patch(sfu.ex2(a), low, slow, a)


def _div_operands(a, b, ftz, full, mufu_rcp=sfu.rcp):
    """(MUFU.RCP of the divisor, dividend), both scaled as the form scales them: ``div.full`` by 1/4 for a
    divisor above 2**126, non-.ftz forms by 2**24 for one below 2**-126."""
    big = _abs_gt(b, _TWO_126) if full else np.zeros(b.shape, bool)
    small = np.zeros(b.shape, bool) if ftz else (~_abs_ge(b, _TWO_M126) & ~big)
    quarter, k = _const(0.25, b), _const(2.0 ** 24, b)
    a = np.where(big, fmul32(a, quarter, ftz), np.where(small, fmul32(a, k), a))
    b = np.where(big, fmul32(b, quarter, ftz), np.where(small, fmul32(b, k), b))
    return mufu_rcp(b), a


def _div_scaled(a, b, ftz, full):
    r, a = _div_operands(a, b, ftz, full)
    return fmul32(r, a, ftz)


_SIGN32 = np.uint32(0x80000000)


def div_contracted(a, b, c, form, op):
    """``div.<form>.f32`` merged by ptxas into the add / sub reading it (:mod:`warpsim.ptx.contraction`):
    FFMA(RCP(b'), a', c) rounded once -- ``sub`` negates c, ``rsub`` (c - a / b) the dividend."""
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.uint32) for x in (a, b, c)))
    ftz = ".ftz" in form
    # rcp.approx.ftz.f32 is the MUFU alone: its jitted form reads one table, not all of numerics.sfu's
    r, a = _div_operands(a, b, ftz, form.startswith("full"), FORMS["rcp.approx.ftz.f32"][0])
    if op == "sub":
        c = c ^ _SIGN32
    elif op == "rsub":
        a = a ^ _SIGN32
    return _soft_fma(r, a, c, "f32", ftz=ftz).astype(np.uint32)


def div_full(a, b, ftz):
    """The quotient a * MUFU.RCP(b), a divisor above 2**126 scaled by 1/4 (non-.ftz: below 2**-126 by 2**24)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.uint32), np.asarray(b, np.uint32))
    scaled = _abs_gt(b, _TWO_126) | (np.zeros(b.shape, bool) if ftz else ~_abs_ge(b, _TWO_M126))
    return _patch(fmul32(sfu.rcp(b), a, ftz), scaled, lambda x, y: _div_scaled(x, y, ftz, True), a, b)


def div_approx(a, b, ftz):
    a, b = np.broadcast_arrays(np.asarray(a, np.uint32), np.asarray(b, np.uint32))
    if ftz:
        return fmul32(sfu.rcp(b), a, True)
    return _patch(fmul32(sfu.rcp(b), a), ~_abs_ge(b, _TWO_M126), lambda x, y: _div_scaled(x, y, False, False), a, b)


_INV_2PI = np.float32(0.15915493667125701904)


def fmul32_rz(a, b):
    """FMUL.RZ (no .FTZ): the exact float64 product rounded to nearest, then one step towards zero
    where that rounding went away from it (subnormal and overflowing results included)."""
    with np.errstate(all="ignore"):
        p = _f32(a) * _f32(b)
        r = p.astype(np.float32)
        bits = r.view(np.uint32)
        away = np.abs(r.astype(np.float64)) > np.abs(p)
    bits = np.where(away, bits - np.uint32(1), bits)
    return np.where(np.isnan(p), _NAN32, bits).astype(np.uint32)


def sincos_approx(a, fn):
    """sin / cos.approx(.ftz).f32: FMUL.RZ by 1/(2 pi) as an f32, then MUFU.SIN / COS (both forms alike)."""
    return fn(fmul32_rz(a, _const(_INV_2PI, a)))


# ----------------------------------------------------------------------------------------------
# f64 forms: MUFU.RCP64H / RSQ64H read the upper word and write the upper word

def _hi(a):
    return (np.asarray(a, np.uint64) >> np.uint64(32)).astype(np.uint32)


def _from_hi(h):
    return np.asarray(h, np.uint32).astype(np.uint64) << np.uint64(32)


def rcp_approx_ftz64(a):
    return _from_hi(sfu.rcp64h(_hi(a)))


def _dmul(a, b):
    with np.errstate(all="ignore"):
        return (np.asarray(a, np.uint64).view(np.float64) * np.asarray(b, np.uint64).view(np.float64)).view(np.uint64)


def _dconst(v, like):
    return np.full(np.shape(like), np.float64(v).view(np.uint64), np.uint64)


def _rsqrt_newton(x, y):
    """The refinement ptxas emits after MUFU.RSQ64H: e = 1 - x*y*y; y + (3/8 e + 1/2) * (y e)."""
    e = _soft_fma(x, _dmul(y, y) ^ np.uint64(1 << 63), _dconst(1.0, x), "f64")
    h = _soft_fma(e, _dconst(0.375, x), _dconst(0.5, x), "f64")
    return _soft_fma(h, _dmul(y, e), y, "f64")


def rsqrt_approx64(a, ftz):
    a = np.asarray(a, np.uint64)
    if ftz:
        return _from_hi(sfu.rsq64h(_hi(a)))
    out = _rsqrt_newton(a, _from_hi(sfu.rsq64h(_hi(a))))
    hi = _hi(a)
    slow = (hi - np.uint32(0x00100000)) >= np.uint32(0x7FE00000)
    if slow.any():
        sign = a >> np.uint64(63)
        mag = a & np.uint64((1 << 63) - 1)
        xs = _dmul(a, _dconst(2.0 ** 54, a))
        sub = _dmul(_rsqrt_newton(xs, _from_hi(sfu.rsq64h(_hi(xs)))), _dconst(2.0 ** 27, a))
        r = np.where(mag == np.uint64(0x7FF0000000000000), np.uint64(0), sub)
        r = np.where(sign == 1, np.uint64(0xFFF8000000000000), r)
        r = np.where(mag > np.uint64(0x7FF0000000000000), a | np.uint64(1 << 51), r)       # DADD a, a: quieted
        r = np.where(mag == 0, (sign << np.uint64(63)) | np.uint64(0x7FF0000000000000), r)
        out = np.where(slow, r, out)
    return out.astype(np.uint64)


# ----------------------------------------------------------------------------------------------
# the rows


def lg2_approx(a, ftz):
    a = np.asarray(a, np.uint32)
    if ftz:
        return sfu.lg2(a)

    def slow(x):
        r = sfu.lg2(fmul32(x, _const(2.0 ** 24, x)))
        with np.errstate(all="ignore"):
            v = _f32(r) - 24.0                  # FADD: exact in float64, one rounding
            return np.where(np.isnan(v), _NAN32, v.astype(np.float32).view(np.uint32)).astype(np.uint32)
    return _patch(sfu.lg2(a), ~_abs_ge(a, _TWO_M126), slow, a)


def half_form(fn, t, a):
    """ex2 / tanh on f16, bf16 (and packed x2: each half through the scalar MUFU, as the SASS does)."""
    return lanes(lambda base, h: sfu.half(f"{fn}_{base}", h), t, a)




# one row per family: (pattern, destination type, source types, MUFU, status note); every row runs
# FORMS[opcode], so the rows, the sweep and the bench share one table of forms
ROWS = [
    (r"rcp\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "RCP", _EXHAUSTIVE),
    (r"rsqrt\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "RSQ", _EXHAUSTIVE),
    (r"sqrt\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "SQRT", _EXHAUSTIVE),
    (r"ex2\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "EX2", _EXHAUSTIVE),
    (r"sin\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "SIN", _EXHAUSTIVE),
    (r"cos\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "COS", _EXHAUSTIVE),
    (r"lg2\.approx(?:\.ftz)?\.f32", "f32", ["f32"], "LG2", _EXHAUSTIVE),
    (r"tanh\.approx\.f32", "f32", ["f32"], "TANH", _EXHAUSTIVE),
    (r"div\.(?:full|approx)(?:\.ftz)?\.f32", "f32", ["f32", "f32"], "RCP", _EXHAUSTIVE),
    (r"rcp\.approx\.ftz\.f64", "f64", ["f64"], "RCP64H", _EXHAUSTIVE),
    (r"rsqrt\.approx(?:\.ftz)?\.f64", "f64", ["f64"], "RSQ64H", _EXHAUSTIVE),
    (r"ex2\.approx\.(?P<t>f16|f16x2)", "{t}", ["{t}"], "EX2.F16", _EXHAUSTIVE),
    (r"ex2\.approx\.ftz\.(?P<t>bf16|bf16x2)", "{t}", ["{t}"], "EX2.BF16", _EXHAUSTIVE),
    (r"tanh\.approx\.(?P<t>f16|f16x2|bf16|bf16x2)", "{t}", ["{t}"], "TANH.F16/BF16", _EXHAUSTIVE),
]


def _run_form(m, *operands):
    """A special-function row: the form's entry of FORMS on the raw operand words."""
    return FORMS[m[0]][0](*operands)


for _pattern, _dst, _srcs, _unit, _note in ROWS:
    row(_pattern, _dst, _srcs, status=VERIFIED, note=_note.format(unit=_unit))(_run_form)


@row(r"contracted\.div\.(?P<form>full|approx|full\.ftz|approx\.ftz)\.f32\.(?P<op>add|sub|rsub)\.f32", "f32",
     ["f32", "f32", "f32"], status=VERIFIED,
     note="a division merged by ptxas into the add / sub reading it (warpsim.ptx.contraction): one FFMA of the "
          "MUFU.RCP and the dividend, as the SASS shows; equal to an H200 (ptx_contraction_sm90.npz, the Triton "
          "RMSNorm capture)")
def _contracted_division(m, a, b, c):
    return div_contracted(a, b, c, m["form"], m["op"])



REFERENCE = {   # PTX form -> (numpy function on raw words, operand widths): the readable model
    "rcp.approx.f32": (lambda a: rcp_approx(a, False), (32,)),
    "rcp.approx.ftz.f32": (lambda a: rcp_approx(a, True), (32,)),
    "rsqrt.approx.f32": (lambda a: rsqrt_approx(a, False), (32,)),
    "rsqrt.approx.ftz.f32": (lambda a: rsqrt_approx(a, True), (32,)),
    "sqrt.approx.f32": (lambda a: sqrt_approx(a, False), (32,)),
    "sqrt.approx.ftz.f32": (lambda a: sqrt_approx(a, True), (32,)),
    "ex2.approx.f32": (lambda a: ex2_approx(a, False), (32,)),
    "ex2.approx.ftz.f32": (lambda a: ex2_approx(a, True), (32,)),
    "sin.approx.f32": (lambda a: sincos_approx(a, sfu.sin), (32,)),
    "sin.approx.ftz.f32": (lambda a: sincos_approx(a, sfu.sin), (32,)),
    "cos.approx.f32": (lambda a: sincos_approx(a, sfu.cos), (32,)),
    "cos.approx.ftz.f32": (lambda a: sincos_approx(a, sfu.cos), (32,)),
    "tanh.approx.f32": (sfu.tanh, (32,)),
    "lg2.approx.f32": (lambda a: lg2_approx(a, False), (32,)),
    "lg2.approx.ftz.f32": (lambda a: lg2_approx(a, True), (32,)),
    "div.full.f32": (lambda a, b: div_full(a, b, False), (32, 32)),
    "div.full.ftz.f32": (lambda a, b: div_full(a, b, True), (32, 32)),
    "div.approx.f32": (lambda a, b: div_approx(a, b, False), (32, 32)),
    "div.approx.ftz.f32": (lambda a, b: div_approx(a, b, True), (32, 32)),
    "rcp.approx.ftz.f64": (rcp_approx_ftz64, (64,)),
    "rsqrt.approx.f64": (lambda a: rsqrt_approx64(a, False), (64,)),
    "rsqrt.approx.ftz.f64": (lambda a: rsqrt_approx64(a, True), (64,)),
    "ex2.approx.f16": (lambda a: half_form("ex2", "f16", a), (16,)),
    "ex2.approx.f16x2": (lambda a: half_form("ex2", "f16x2", a), (32,)),
    "ex2.approx.ftz.bf16": (lambda a: half_form("ex2", "bf16", a), (16,)),
    "ex2.approx.ftz.bf16x2": (lambda a: half_form("ex2", "bf16x2", a), (32,)),
    "tanh.approx.f16": (lambda a: half_form("tanh", "f16", a), (16,)),
    "tanh.approx.f16x2": (lambda a: half_form("tanh", "f16x2", a), (32,)),
    "tanh.approx.bf16": (lambda a: half_form("tanh", "bf16", a), (16,)),
    "tanh.approx.bf16x2": (lambda a: half_form("tanh", "bf16x2", a), (32,)),
}

#: PTX form -> (function on raw words, operand widths): the sweep's, the rows' and the bench's list; the
#: jitted path of :mod:`warpsim.engine.sfu` where it has the form, else the numpy model
FORMS = {form: (_fast.FORMS.get(form, fn), widths) for form, (fn, widths) in REFERENCE.items()}
