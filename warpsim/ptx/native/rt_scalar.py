"""The runtime of the translator's scalar rows beyond :mod:`.rt`: bit-field insert, ``.sat`` of float words,
f64 words on the host's IEEE unit with the H100's NaN rules, float-to-integer conversion, and the directed
roundings through the interpreter's soft-float core (jitted; never fastmath).

Each restates an interpreter row for one lane: :mod:`warpsim.ptx.instructions` (bfi), :mod:`warpsim.ptx.convert`
(saturate, float_to_int, the payload-keeping f32 <-> f64 NaNs), :mod:`warpsim.ptx.float_ops` (the f64 NaN rules).
The host's float64 arithmetic rounds to nearest exactly while the FPU is in its IEEE default state, which the
kernel checks before it starts.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...numerics.softfloat import fma_bits_mode

_U64 = np.uint64
_QUIET64 = _U64(1 << 51)
#: the default NaN of an invalid f64 operation (and of the host's)
DNAN64 = _U64(0xFFF8000000000000)


@njit(cache=True, nogil=True)
def bfi(a, b, pos, ln, bits):
    """bfi.b{32,64}: ``ln`` bits of a inserted into b at ``pos`` (each of them read as its low byte, at most
    ``bits``; a field past the word's end is cut there)."""
    pos = min(np.int64(pos & _U64(0xFF)), bits)
    ln = min(np.int64(ln & _U64(0xFF)), bits)
    mask = _U64(0xFFFFFFFFFFFFFFFF) if ln >= 64 else (_U64(1) << _U64(ln)) - _U64(1)
    mask = _U64(0) if pos >= bits else mask << _U64(pos)
    if bits < 64:
        mask &= (_U64(1) << _U64(bits)) - _U64(1)
    ins = (_U64(a) << _U64(min(pos, bits - 1))) & mask
    return (_U64(b) & ~mask) | ins


@njit(cache=True, nogil=True)
def saturate(w, eb, mb):
    """``.sat`` of a float word (exponent / mantissa widths eb / mb): clamped to [+0, 1], NaN and every negative
    value (-0 too) +0."""
    x = _U64(w)
    nan = ((x >> _U64(mb)) & _U64((1 << eb) - 1)) == _U64((1 << eb) - 1) and (x & _U64((1 << mb) - 1)) != _U64(0)
    if (x >> _U64(eb + mb)) != _U64(0) or nan:
        return _U64(0)
    one = _U64(((1 << (eb - 1)) - 1) << mb)
    return one if x > one else x


@njit(cache=True, nogil=True)
def flush16(w, eb, mb):
    """``.ftz`` of a 16-bit float word (f16: eb 5, mb 10; bf16: 8, 7): a subnormal is the zero of its sign."""
    return _flush(_U64(w), eb, mb)


@njit(cache=True, nogil=True)
def fminmax(a, b, eb, mb, is_max, nan, xorsign, ftz):
    """min / max of float words of eb / mb bits (float_ops.minmax): a NaN loses to a number (.NaN: wins), two
    NaNs give the canonical NaN, -0 < +0; .xorsign.abs compares magnitudes and gives the result the sign a ^ b;
    .ftz flushes the operands."""
    n = eb + mb
    sgn = _U64(1 << n)
    a, b = _U64(a), _U64(b)
    if ftz:
        a, b = _flush(a, eb, mb), _flush(b, eb, mb)
    s = (a ^ b) & sgn
    if xorsign:
        a, b = a & ~sgn, b & ~sgn
    inf = _U64(((1 << eb) - 1) << mb)
    na, nb = (a & ~sgn) > inf, (b & ~sgn) > inf
    if (na and nb) or (nan and (na or nb)):
        return _U64((1 << n) - 1)
    if na:
        r = b
    elif nb:
        r = a
    else:
        ka = -np.int64(a & ~sgn) - 1 if a & sgn else np.int64(a)
        kb = -np.int64(b & ~sgn) - 1 if b & sgn else np.int64(b)
        r = a if (ka >= kb if is_max else ka <= kb) else b
    return r | s if xorsign else r


@njit(cache=True, nogil=True)
def _flush(w, eb, mb):
    if (w >> _U64(mb)) & _U64((1 << eb) - 1) == _U64(0) and (w & _U64((1 << mb) - 1)) != _U64(0):
        return w & _U64(1 << (eb + mb))
    return w


@njit(cache=True, nogil=True)
def relu16(w, eb, mb):
    """``.relu`` of a 16-bit float result: a negative value (-0 too) +0, a NaN kept."""
    w = _U64(w)
    nan = (w >> _U64(mb)) & _U64((1 << eb) - 1) == _U64((1 << eb) - 1) and (w & _U64((1 << mb) - 1)) != _U64(0)
    return w if nan or (w >> _U64(eb + mb)) == _U64(0) else _U64(0)


@njit(cache=True, nogil=True)
def flush32(w):
    """``.ftz`` of an f32 word: a subnormal is the zero of its sign."""
    w = _U64(w)
    if (w & _U64(0x7F800000)) == _U64(0) and (w & _U64(0x7FFFFF)) != _U64(0):
        return w & _U64(0x80000000)
    return w


@njit(cache=True, nogil=True)
def f64(w):
    """An f64 word as a host float64 (bit cast)."""
    return _U64(w).view(np.float64)


@njit(cache=True, nogil=True)
def is_nan64(w):
    return (_U64(w) & _U64(0x7FFFFFFFFFFFFFFF)) > _U64(0x7FF0000000000000)


@njit(cache=True, nogil=True, error_model="numpy")
def div64(x, y):
    """x / y of host floats, IEEE (by zero: an infinity or NaN, not an exception)."""
    return x / y


@njit(cache=True, nogil=True, error_model="numpy")
def sqrt64(x):
    return np.sqrt(x)


@njit(cache=True, nogil=True)
def w64_ba(r, a, b):
    """The word of an f64 add / sub / mul result r of words a, b (float_ops.nan_b_then_a): a NaN b quieted (its
    sign as given), else a NaN a quieted, else an invalid operation's 0xfff8000000000000."""
    if is_nan64(b):
        return _U64(b) | _QUIET64
    if is_nan64(a):
        return _U64(a) | _QUIET64
    return DNAN64 if r != r else np.float64(r).view(np.uint64)


@njit(cache=True, nogil=True)
def w64_first(r, a, b, c):
    """The word of an f64 result r of operand words in NaN priority order a, b, c (the first NaN quieted; else
    the default NaN of an invalid operation): fma's order is b, c, a, div's a, b."""
    for x in (a, b, c):
        if is_nan64(x):
            return _U64(x) | _QUIET64
    return DNAN64 if r != r else np.float64(r).view(np.uint64)


@njit(cache=True, nogil=True)
def w64_cvt(x):
    """The word of an f64 ``cvt`` result: NaN is convert.FORMATS' 0x7fffffffffffffff."""
    return _U64(0x7FFFFFFFFFFFFFFF) if x != x else np.float64(x).view(np.uint64)


@njit(cache=True, nogil=True)
def absneg64(a, neg):
    """abs.f64 / neg.f64: the sign bit cleared / flipped; a NaN quieted with its sign kept."""
    a = _U64(a)
    if is_nan64(a):
        return a | _QUIET64
    return a ^ _U64(1 << 63) if neg else a & _U64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True)
def widen32(w, ftz):
    """cvt.f64.f32 (exact): a NaN keeps its payload, shifted up, quieted (convert._payload_nan)."""
    w = _U64(w)
    if ftz:
        w = flush32(w)
    if (w & _U64(0x7FFFFFFF)) > _U64(0x7F800000):
        return ((w >> _U64(31)) << _U64(63)) | _U64(0x7FF0000000000000) | ((w & _U64(0x7FFFFF)) << _U64(29)) | _QUIET64
    return np.float64(np.uint32(w).view(np.float32)).view(np.uint64)


@njit(cache=True, nogil=True)
def half_value(w, eb, mb):
    """The value of a 16-bit float word (f16: eb 5, mb 10; bf16: 8, 7) as a float64, exactly (NaN: a NaN)."""
    w = _U64(w)
    top = (1 << eb) - 1
    e = np.int64((w >> _U64(mb)) & _U64(top))
    m = np.float64(w & _U64((1 << mb) - 1))
    sign = -1.0 if (w >> _U64(eb + mb)) & _U64(1) else 1.0
    if e == top:
        return sign * np.inf if m == 0 else np.nan
    bias = (1 << (eb - 1)) - 1
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - mb)
    return sign * math.ldexp(m + (1 << mb), e - bias - mb)


@njit(cache=True, nogil=True)
def narrow64(w):
    """cvt.rn.f32.f64 on the host (rounds to nearest even; subnormal results kept): a NaN keeps the top of its
    payload, quieted."""
    w = _U64(w)
    if is_nan64(w):
        return ((w >> _U64(63)) << _U64(31)) | _U64(0x7F800000) | ((w & _U64(0xFFFFFFFFFFFFF)) >> _U64(29)) | \
            _U64(0x400000)
    return _U64(np.float32(w.view(np.float64)).view(np.uint32))


@njit(cache=True, nogil=True)
def to_int(x, mode, n, signed):
    """cvt.{rni,rzi,rmi,rpi} (mode 0..3) of a float to an n-bit integer word, saturating; NaN 0, except
    0x8000000000000000 for .s64 (convert.float_to_int)."""
    if x != x:
        return _U64(1 << 63) if signed and n == 64 else _U64(0)
    y = np.rint(x) if mode == 0 else np.trunc(x) if mode == 1 else np.floor(x) if mode == 2 else np.ceil(x)
    if signed:
        lo, hi = -2.0 ** (n - 1), 2.0 ** (n - 1) - 1
        if y >= hi:
            v = np.int64(2 ** (n - 1) - 1) if n < 64 else np.int64(0x7FFFFFFFFFFFFFFF)
        elif y <= lo:
            v = np.int64(-(2 ** (n - 1))) if n < 64 else np.int64(-0x8000000000000000)
        else:
            v = np.int64(y)
        u = _U64(v)
        return u & ((_U64(1) << _U64(n)) - _U64(1)) if n < 64 else u
    if y <= 0.0:
        return _U64(0)
    top = 2.0 ** n - 1
    if y >= top:
        return _U64(0xFFFFFFFFFFFFFFFF) if n == 64 else _U64((1 << n) - 1)
    return _U64(y)


@njit(cache=True, nogil=True)
def round_integral(x, mode):
    """cvt.{rni,rzi,rmi,rpi} to the source's own float type (mode 0..3), on a host float."""
    return np.rint(x) if mode == 0 else np.trunc(x) if mode == 1 else np.floor(x) if mode == 2 else np.ceil(x)


@njit(cache=True, nogil=True)
def fma_directed(a, b, c, eb, mb, nan_mode, dnan, rmode):
    """a * b + c on words, rounded by rmode (softfloat's codes): the interpreter's own soft-float core."""
    return _U64(fma_bits_mode(_U64(a), _U64(b), _U64(c), eb, mb, nan_mode, _U64(dnan), rmode))


@njit(cache=True, nogil=True)
def mul_hi64(a, b, signed):
    """The upper 64 bits of the 128-bit product of two 64-bit words (unsigned, or two's complement when
    ``signed``), from four 32 x 32-bit partial products."""
    m = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = a & m, a >> s32, b & m, b >> s32
    p0, p1, p2, p3 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p0 >> s32) + (p1 & m) + (p2 & m)
    hi = p3 + (p1 >> s32) + (p2 >> s32) + (mid >> s32)
    if signed:
        if a >> np.uint64(63):
            hi -= b
        if b >> np.uint64(63):
            hi -= a
    return hi

