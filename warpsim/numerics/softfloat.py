"""Exact bit-level IEEE binary arithmetic: one fused multiply-add for every format.

:func:`fma_bits` computes ``round(a * b + c)`` exactly for any binary format of at most
64 bits (given by exponent and mantissa widths) on raw bit patterns held in ``uint64``:
the product is a 128-bit integer in two words, ``c`` is aligned with a sticky bit, and
the sum is rounded once to nearest, ties to even, with gradual underflow and overflow
to infinity.  Addition is ``a * 1 + c`` and a plain product is ``a * b + (-0)``, both
exact identities including signed zeros.  There are no host floating-point operations
here, so the host's rounding mode, flush-to-zero or contraction cannot change a result.

NaN contract (the per-target quirk, chosen by the caller): ``nan_mode`` 0 returns the
given default NaN for every NaN result; otherwise a three-digit operand priority
(1 = a, 2 = b, 3 = c; 231 = b, then c, then a) says which NaN operand comes out
quieted, and an invalid operation (inf * 0, inf - inf) gives the default NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit

U64 = np.uint64
_Z = U64(0)
_ONE = U64(1)
_M32 = U64(0xFFFFFFFF)
_TOP = 124          # bit where normalised 128-bit significands keep their leading one
NAN_CANONICAL = 0
NAN_PROPAGATE_ABC, NAN_PROPAGATE_BCA = 123, 231   # NaN operand priority, 1=a 2=b 3=c
NAN_PROPAGATE = NAN_PROPAGATE_ABC
F64_DEFAULT_NAN = U64(0xFFF8000000000000)
ROUND_NEAREST, ROUND_ZERO, ROUND_DOWN, ROUND_UP = 0, 1, 2, 3     # PTX .rn .rz .rm .rp



# --- 128-bit unsigned helpers on (hi, lo) uint64 pairs -------------------------------------

@njit(cache=True, nogil=True)
def _mul64(a, b):
    """Full 128-bit product of two uint64."""
    a0 = a & _M32
    a1 = a >> U64(32)
    b0 = b & _M32
    b1 = b >> U64(32)
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> U64(32)) + (p01 & _M32) + (p10 & _M32)
    lo = (p00 & _M32) | (mid << U64(32))
    hi = p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))
    return hi, lo


@njit(cache=True, nogil=True)
def _msb64(x):
    """Index of the highest set bit of a nonzero uint64."""
    n = 0
    for step in (32, 16, 8, 4, 2, 1):       # binary search: halve the window while its top half holds a bit
        if x >> U64(step):
            x >>= U64(step)
            n += step
    return n


@njit(cache=True, nogil=True)
def _msb128(hi, lo):
    """Highest set bit of a nonzero 128-bit value; -1 for zero."""
    if hi != _Z:
        return 64 + _msb64(hi)
    if lo != _Z:
        return _msb64(lo)
    return -1


@njit(cache=True, nogil=True)
def _shl128(hi, lo, s):
    """(hi, lo) << s for 0 <= s < 128."""
    if s == 0:
        return hi, lo
    if s >= 64:
        return lo << U64(s - 64), _Z
    return (hi << U64(s)) | (lo >> U64(64 - s)), lo << U64(s)


@njit(cache=True, nogil=True)
def _shr128_sticky(hi, lo, s):
    """(hi, lo) >> s, with bit 0 set if any nonzero bit was shifted out (s >= 0)."""
    if s == 0:
        return hi, lo
    if s >= 128:
        return _Z, (_ONE if (hi | lo) != _Z else _Z)
    if s >= 64:
        t = s - 64
        nlo = hi >> U64(t) if t < 64 else _Z
        lost = lo != _Z
        if t > 0:
            lost = lost or (hi & ((_ONE << U64(t)) - _ONE)) != _Z
        return _Z, nlo | (_ONE if lost else _Z)
    nlo = (lo >> U64(s)) | (hi << U64(64 - s))
    nhi = hi >> U64(s)
    lost = (lo & ((_ONE << U64(s)) - _ONE)) != _Z
    return nhi, nlo | (_ONE if lost else _Z)


@njit(cache=True, nogil=True)
def _shr128_low(hi, lo, s):
    """Low word of (hi, lo) >> s for s >= 1 (caller knows the result fits in 64 bits)."""
    if s >= 128:
        return _Z
    if s >= 64:
        return hi >> U64(s - 64)
    return (lo >> U64(s)) | (hi << U64(64 - s))


@njit(cache=True, nogil=True)
def _bit128(hi, lo, i):
    if i >= 128:
        return False
    if i >= 64:
        return ((hi >> U64(i - 64)) & _ONE) != _Z
    return ((lo >> U64(i)) & _ONE) != _Z


@njit(cache=True, nogil=True)
def _any_below128(hi, lo, s):
    """Whether any of the s lowest bits is set."""
    if s <= 0:
        return False
    if s >= 128:
        return (hi | lo) != _Z
    if s >= 64:
        return lo != _Z or (s > 64 and (hi & ((_ONE << U64(s - 64)) - _ONE)) != _Z)
    return (lo & ((_ONE << U64(s)) - _ONE)) != _Z


@njit(cache=True, nogil=True)
def _add128(ah, al, bh, bl):
    lo = al + bl
    carry = _ONE if lo < al else _Z
    return ah + bh + carry, lo


@njit(cache=True, nogil=True)
def _sub128(ah, al, bh, bl):
    """(a - b) for a >= b."""
    lo = al - bl
    borrow = _ONE if al < bl else _Z
    return ah - bh - borrow, lo


@njit(cache=True, nogil=True)
def _ge128(ah, al, bh, bl):
    return ah > bh or (ah == bh and al >= bl)


# --- formats -------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _emask(eb):
    return (_ONE << U64(eb)) - _ONE


@njit(cache=True, nogil=True)
def is_nan(x, eb, mb):
    e = (x >> U64(mb)) & _emask(eb)
    f = x & ((_ONE << U64(mb)) - _ONE)
    return e == _emask(eb) and f != _Z


@njit(cache=True, nogil=True)
def _is_inf(x, eb, mb):
    e = (x >> U64(mb)) & _emask(eb)
    f = x & ((_ONE << U64(mb)) - _ONE)
    return e == _emask(eb) and f == _Z


@njit(cache=True, nogil=True)
def canonical_nan(eb, mb):
    """All exponent and mantissa bits set, sign clear (0x7fff, 0x7fffffff, ...)."""
    return (_ONE << U64(eb + mb)) - _ONE


@njit(cache=True, nogil=True)
def _quiet(x, eb, mb):
    return x | (_ONE << U64(mb - 1))


@njit(cache=True, nogil=True)
def _decode(x, eb, mb):
    """Finite x -> (sign, significand, exponent) with value = significand * 2**exponent."""
    sign = (x >> U64(eb + mb)) & _ONE
    e = np.int64((x >> U64(mb)) & _emask(eb))
    f = x & ((_ONE << U64(mb)) - _ONE)
    bias = (1 << (eb - 1)) - 1
    if e == 0:
        return sign, f, 1 - bias - mb
    return sign, f | (_ONE << U64(mb)), e - bias - mb


@njit(cache=True, nogil=True)
def _round_pack(sign, hi, lo, exp, eb, mb):
    """Round sign * (hi, lo) * 2**exp (nonzero) to the format, nearest even; pack the bits."""
    return _round_pack_mode(sign, hi, lo, exp, eb, mb, ROUND_NEAREST)


@njit(cache=True, nogil=True)
def _round_pack_mode(sign, hi, lo, exp, eb, mb, rmode):
    """Round sign * (hi, lo) * 2**exp (nonzero) to the format by ``rmode`` (ROUND_*); pack the bits.
    Directed modes overflow to the largest finite value when they round towards zero."""
    bias = (1 << (eb - 1)) - 1
    emin = 1 - bias
    m = _msb128(hi, lo)
    top = m + exp                       # exponent of the leading one
    if top >= emin:
        shift = m - mb
    else:
        shift = (emin - mb) - exp       # the last kept bit weighs 2**(emin - mb)
    if shift <= 0:
        q = lo << U64(-shift)           # exact: at most mb + 1 bits
    else:
        q = _shr128_low(hi, lo, shift)
        guard = _bit128(hi, lo, shift - 1)
        sticky = _any_below128(hi, lo, shift - 1)
        if rmode == ROUND_NEAREST:
            up = guard and (sticky or (q & _ONE) != _Z)
        elif rmode == ROUND_ZERO:
            up = False
        else:
            up = (guard or sticky) and ((sign == _ONE) == (rmode == ROUND_DOWN))
        if up:
            q += _ONE
    if top >= emin:
        field = np.int64(top + bias)
        bits = (U64(field - 1) << U64(mb)) + q      # a carry out of q bumps the exponent
    else:
        bits = q                                    # subnormal; q == 2**mb is the least normal
    if bits >= (_emask(eb) << U64(mb)):
        bits = _emask(eb) << U64(mb)                # overflow: infinity ...
        if rmode == ROUND_ZERO or (rmode == ROUND_DOWN and sign == _Z) or (rmode == ROUND_UP and sign == _ONE):
            bits -= _ONE                            # ... or the largest finite value
    return bits | (sign << U64(eb + mb))


# --- the one fused operation ---------------------------------------------------------------

@njit(cache=True, nogil=True)
def fma_bits(a, b, c, eb, mb, nan_mode, dnan):
    """Correctly rounded (nearest even) a * b + c: :func:`fma_bits_mode` with ROUND_NEAREST."""
    return fma_bits_mode(a, b, c, eb, mb, nan_mode, dnan, ROUND_NEAREST)


@njit(cache=True, nogil=True)
def fma_bits_mode(a, b, c, eb, mb, nan_mode, dnan, rmode):
    """Correctly rounded a * b + c on raw bits of one binary format, rounding by ``rmode``
    (ROUND_NEAREST even, ROUND_ZERO, ROUND_DOWN towards -inf, ROUND_UP towards +inf).

    eb / mb: exponent / stored-mantissa widths (f16 5/10, f32 8/23, f64 11/52).
    NaN results: nan_mode NAN_CANONICAL (0): always ``dnan``; otherwise a three-digit
    priority (1 = a, 2 = b, 3 = c; e.g. 231 = b before c before a): the first NaN
    operand in that order is returned quieted; an invalid operation (inf * 0,
    inf - inf) without NaN operands gives ``dnan``.
    """
    a = U64(a)
    b = U64(b)
    c = U64(c)
    dnan = U64(dnan)
    sbit = U64(eb + mb)
    na = is_nan(a, eb, mb)
    nb = is_nan(b, eb, mb)
    nc = is_nan(c, eb, mb)
    if na or nb or nc:
        if nan_mode == NAN_CANONICAL:
            return dnan
        order = nan_mode
        for _ in range(3):
            which = order // 100            # leading decimal digit: 1 = a, 2 = b, 3 = c
            order = (order % 100) * 10
            if which == 1 and na:
                return _quiet(a, eb, mb)
            if which == 2 and nb:
                return _quiet(b, eb, mb)
            if which == 3 and nc:
                return _quiet(c, eb, mb)
        return dnan
    sp = ((a ^ b) >> sbit) & _ONE
    sc = (c >> sbit) & _ONE
    mag = (_ONE << sbit) - _ONE
    ia = _is_inf(a, eb, mb)
    ib = _is_inf(b, eb, mb)
    ic = _is_inf(c, eb, mb)
    za = (a & mag) == _Z
    zb = (b & mag) == _Z
    zc = (c & mag) == _Z
    if ia or ib:
        if za or zb:
            return dnan                             # inf * 0
        if ic and sc != sp:
            return dnan                             # inf - inf
        return (_emask(eb) << U64(mb)) | (sp << sbit)
    if ic:
        return c
    if za or zb:
        if zc:
            if sp != sc and rmode == ROUND_DOWN:
                return _ONE << sbit                 # +0 + -0 rounding down: -0
            return (sp & sc) << sbit                # zero + zero: -0 only if both are -0
        return c
    _, ma, ea = _decode(a, eb, mb)
    _, mbv, eb_ = _decode(b, eb, mb)
    ph, pl = _mul64(ma, mbv)
    pe = ea + eb_
    sh = _TOP - _msb128(ph, pl)
    ph, pl = _shl128(ph, pl, sh)
    pe -= sh
    if zc:
        return _round_pack_mode(sp, ph, pl, pe, eb, mb, rmode)
    _, mc, ce = _decode(c, eb, mb)
    sh = _TOP - _msb64(mc)
    ch, cl = _shl128(_Z, mc, sh)
    ce -= sh
    # align the smaller-exponent operand to the larger one (sticky keeps exactness of rounding)
    if pe >= ce:
        ch, cl = _shr128_sticky(ch, cl, pe - ce)
        e = pe
    else:
        ph, pl = _shr128_sticky(ph, pl, ce - pe)
        e = ce
    if sp == sc:
        rh, rl = _add128(ph, pl, ch, cl)
        s = sp
    elif _ge128(ph, pl, ch, cl):
        rh, rl = _sub128(ph, pl, ch, cl)
        s = sp
    else:
        rh, rl = _sub128(ch, cl, ph, pl)
        s = sc
    if rh == _Z and rl == _Z:
        return (_ONE << sbit) if rmode == ROUND_DOWN else _Z    # exact cancellation: +0 (-0 rounding down)
    return _round_pack_mode(s, rh, rl, e, eb, mb, rmode)


@njit(cache=True, nogil=True)
def one_bits(eb, mb):
    return U64((1 << (eb - 1)) - 1) << U64(mb)


@njit(cache=True, nogil=True)
def neg_zero_bits(eb, mb):
    return _ONE << U64(eb + mb)


@njit(cache=True, nogil=True)
def add_bits(x, y, eb, mb, nan_mode, dnan):
    """x + y, nearest even (FADD); as x * 1 + y, a NaN x ranks as operand a."""
    return fma_bits(x, one_bits(eb, mb), y, eb, mb, nan_mode, dnan)


@njit(cache=True, nogil=True)
def mul_bits(x, y, eb, mb, nan_mode, dnan):
    """x * y, nearest even (FMUL); x * y + (-0) is x * y for every input."""
    return fma_bits(x, y, neg_zero_bits(eb, mb), eb, mb, nan_mode, dnan)


@njit(cache=True, nogil=True)
def convert_bits(x, eb1, mb1, eb2, mb2, nan_mode):
    """Format conversion, nearest even (exact when widening).

    NaN: nan_mode 0 gives format 2's canonical NaN; 1 keeps the sign and the top
    mantissa bits (quieted)."""
    x = U64(x)
    sbit1 = U64(eb1 + mb1)
    sign = (x >> sbit1) & _ONE
    if is_nan(x, eb1, mb1):
        if nan_mode != NAN_CANONICAL:
            f = x & ((_ONE << U64(mb1)) - _ONE)
            f = (f >> U64(mb1 - mb2)) if mb1 >= mb2 else (f << U64(mb2 - mb1))
            return (sign << U64(eb2 + mb2)) | (_emask(eb2) << U64(mb2)) | f | (_ONE << U64(mb2 - 1))
        return canonical_nan(eb2, mb2)
    if _is_inf(x, eb1, mb1):
        return (sign << U64(eb2 + mb2)) | (_emask(eb2) << U64(mb2))
    if (x & ((_ONE << sbit1) - _ONE)) == _Z:
        return sign << U64(eb2 + mb2)
    _, m, e = _decode(x, eb1, mb1)
    return _round_pack(sign, _Z, m, e, eb2, mb2)


# convenient fixed-format wrappers --------------------------------------------------------

@njit(cache=True, nogil=True)
def fma_f32(a, b, c):
    """Exact f32 FFMA (nearest even, subnormals kept, canonical NaN 0x7fffffff)."""
    return fma_bits(a, b, c, 8, 23, NAN_CANONICAL, canonical_nan(8, 23))


@njit(cache=True, nogil=True)
def add_f32(a, b):
    """f32 FADD (nearest even, subnormals kept, canonical NaN)."""
    return add_bits(a, b, 8, 23, NAN_CANONICAL, canonical_nan(8, 23))


@njit(cache=True, nogil=True)
def f32_to_f16(x):
    """F2FP.F16.F32: nearest even, NaN -> 0x7fff."""
    return convert_bits(x, 8, 23, 5, 10, NAN_CANONICAL)


@njit(cache=True, nogil=True)
def fma_f64(a, b, c):
    """Exact f64 FMA (nearest even) with DMMA's NaN rules: a NaN operand propagates
    quieted, b before c before a; an invalid operation gives F64_DEFAULT_NAN."""
    return fma_bits(a, b, c, 11, 52, NAN_PROPAGATE_BCA, F64_DEFAULT_NAN)
