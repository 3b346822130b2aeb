"""Exact numeric conversions of PTX ``cvt`` as numpy array operations (no per-element Python).

Floats are decoded to float64 (exact for every source format), scaled by a power of two so that
one unit in the last place of the destination is 1, rounded to an integer in float64 (exact),
scaled back and encoded by integer bit arithmetic.  NaN and overflow results follow what the
H100 returned for each conversion (see tests/ptx/ for the captured words).""" 
from __future__ import annotations

import numpy as np

# name: (exponent bits, mantissa bits, has infinities, canonical NaN, storage bits)
FORMATS = {
    "f64": (11, 52, True, 0x7FFFFFFFFFFFFFFF, 64),
    "f32": (8, 23, True, 0x7FFFFFFF, 32),
    "tf32": (8, 10, True, 0x7FFFE000, 32),
    "f16": (5, 10, True, 0x7FFF, 16),
    "bf16": (8, 7, True, 0x7FFF, 16),
    "e4m3": (4, 3, False, 0x7F, 8),
    "e5m2": (5, 2, True, 0x7F, 8),
}


def _fmt(name):
    eb, mb, has_inf, nan, bits = FORMATS[name]
    bias = (1 << (eb - 1)) - 1
    if has_inf:
        emax = bias
        max_finite = (2.0 - 2.0 ** -mb) * 2.0 ** emax
    else:   # e4m3: exponent field 1111 is finite except mantissa 111 (NaN)
        emax = bias + 1
        max_finite = (2.0 - 2.0 ** (1 - mb)) * 2.0 ** emax
    return eb, mb, has_inf, nan, bits, bias, emax, max_finite


def saturate(bits, name):
    """``.sat`` of a float result (cvt, add, fma, ...): clamp to [+0, 1]; NaN and any negative
    value, -0 included, give +0 (the PTX ISA's rule for float destinations)."""
    eb, mb, _, _, nbits = FORMATS[name]
    x = np.asarray(bits).astype(np.uint64)
    sign = x >> np.uint64(eb + mb)
    e = (x >> np.uint64(mb)) & np.uint64((1 << eb) - 1)
    nan = (e == np.uint64((1 << eb) - 1)) & ((x & np.uint64((1 << mb) - 1)) != 0)
    one = np.uint64(((1 << (eb - 1)) - 1) << mb)
    mag = x & np.uint64((1 << (eb + mb)) - 1)
    out = np.where((sign == 1) | nan, np.uint64(0), np.where(mag > one, one, x))
    return out.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits])


def decode(bits, name):
    """Raw words of format ``name`` -> float64 values (exact; NaN stays NaN)."""
    eb, mb, has_inf, nan, nbits, bias, emax, _ = _fmt(name)
    b = np.asarray(bits).astype(np.uint64)
    if name == "f64":
        return b.view(np.float64)
    if name in ("f32", "tf32"):
        return (b.astype(np.uint32)).view(np.float32).astype(np.float64)
    sign = (b >> np.uint64(nbits - 1)) & np.uint64(1)
    e = ((b >> np.uint64(mb)) & np.uint64((1 << eb) - 1)).astype(np.int64)
    m = (b & np.uint64((1 << mb) - 1)).astype(np.float64)
    val = np.where(e == 0, np.ldexp(m, 1 - bias - mb), np.ldexp(m + 2.0 ** mb, e - bias - mb))
    if has_inf:
        top = e == (1 << eb) - 1
        val = np.where(top & (m == 0), np.inf, val)
        val = np.where(top & (m != 0), np.nan, val)
    else:
        val = np.where((e == (1 << eb) - 1) & (m == (1 << mb) - 1), np.nan, val)
    return np.where(sign == 1, -val, val)


def encode(x, name, mode="rn", *, satfinite=False, relu=False, nan=None):
    """float64 values -> raw words of format ``name`` rounded by ``mode`` (rn, rna, rz, rm, rp).

    Exact: the value is scaled by a power of two so that one unit in the last place of the
    target is 1, rounded to an integer in float64 (exact for every format up to 52 mantissa
    bits), and scaled back.  Overflow follows the rounding direction (IEEE), or clamps to the
    largest finite value with ``satfinite``; NaN becomes ``nan`` (default: the format's
    canonical NaN); ``relu`` turns negative results into +0.
    """
    eb, mb, has_inf, cnan, nbits, bias, emax, max_finite = _fmt(name)
    x = np.asarray(x, dtype=np.float64)
    isnan = np.isnan(x)
    neg = np.signbit(x)
    a = np.abs(np.where(isnan, 0.0, x))
    _, ex = np.frexp(a)
    e = np.maximum(ex.astype(np.int64) - 1, 1 - bias)
    s = np.ldexp(a, (mb - e).astype(np.int64))
    if mode == "rn":
        r = np.rint(s)
    elif mode == "rna":
        r = np.floor(s + 0.5)
    elif mode == "rz":
        r = np.trunc(s)
    elif mode == "rm":
        r = np.where(neg, np.ceil(s), np.floor(s))
    elif mode == "rp":
        r = np.where(neg, np.floor(s), np.ceil(s))
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    y = np.ldexp(r, (e - mb).astype(np.int64))
    isinf_in = np.isinf(a)
    over = (y > max_finite) | isinf_in
    # overflow goes to infinity when the rounding direction points away from zero
    to_inf = {"rn": np.ones_like(neg), "rna": np.ones_like(neg), "rz": np.zeros_like(neg),
              "rm": neg, "rp": ~neg}[mode] | isinf_in
    if satfinite:
        to_inf = np.zeros_like(neg)
    mag_bits = _magnitude_bits(np.where(over, 0.0, y), eb, mb, bias, nbits, name)
    max_bits = _magnitude_bits(np.array(max_finite), eb, mb, bias, nbits, name)
    if name in ("f32", "tf32"):
        inf_bits = 0x7F800000
    elif name == "f64":
        inf_bits = 0x7FF0000000000000
    else:
        inf_bits = ((1 << eb) - 1) << mb if has_inf else cnan
    out = np.where(over, np.where(to_inf, np.uint64(inf_bits), np.uint64(max_bits)), mag_bits).astype(np.uint64)
    out = out | (neg.astype(np.uint64) << np.uint64(nbits - 1))
    if relu:
        out = np.where(neg, np.uint64(0), out)
    out = np.where(isnan, np.uint64(cnan if nan is None else nan), out)
    if not has_inf:   # a NaN-on-overflow format: an overflow without satfinite is NaN
        out = np.where(over & ~satfinite, np.uint64(cnan), out)
    return out.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits])


def _magnitude_bits(y, eb, mb, bias, nbits, name):
    """Bits of finite non-negative values y that are exactly representable in the format."""
    y = np.asarray(y, dtype=np.float64)
    if name == "f64":
        return y.view(np.uint64)
    if name in ("f32", "tf32"):
        return y.astype(np.float32).view(np.uint32).astype(np.uint64)
    m, ex = np.frexp(y)
    e = ex.astype(np.int64) - 1
    normal = (y > 0) & (e >= 1 - bias)
    field = np.where(normal, e + bias, 0)
    mant = np.where(normal, np.ldexp(y, (mb - e)) - 2.0 ** mb, np.ldexp(y, mb - (1 - bias)))
    return (field.astype(np.uint64) << np.uint64(mb)) | mant.astype(np.uint64)


# --------------------------------------------------------------------------------------------
# cvt: every form as one function of (destination type, source type, modifiers)

FLOATS = ("f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2")
INTS = {"s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
        "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False)}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# NaN results that keep the source's payload (shifted to the destination's mantissa, quiet bit set),
# as captured on the H100; every other float conversion returns the destination's canonical NaN.
_PAYLOAD_NAN = {("f32", "f64"), ("f64", "f32"), ("f64", "f16"), ("f64", "bf16"), ("bf16", "f32")}
_QUIET = {("bf16", "f32"): False}


def _payload_nan(bits, src, dst):
    seb, smb = FORMATS[src][:2]
    deb, dmb, _, _, dbits = FORMATS[dst]
    sbits = FORMATS[src][4]
    b = np.asarray(bits).astype(np.uint64)
    sign = (b >> np.uint64(sbits - 1)) & np.uint64(1)
    mant = b & np.uint64((1 << smb) - 1)
    mant = mant << np.uint64(dmb - smb) if dmb >= smb else mant >> np.uint64(smb - dmb)
    if _QUIET.get((src, dst), True):
        mant = mant | np.uint64(1 << (dmb - 1))
    return (sign << np.uint64(dbits - 1)) | np.uint64(((1 << deb) - 1) << dmb) | mant


def float_to_float(bits, src, dst, mode=None, *, satfinite=False, relu=False, ftz=False):
    """Raw words of float type ``src`` -> raw words of float type ``dst``."""
    x = decode(bits, src)
    if ftz and src in ("f32",):
        x = np.where(np.abs(x) < 2.0 ** -126, np.copysign(0.0, x), x)
    if dst == "tf32" and mode == "rna":
        b = np.asarray(bits).astype(np.uint32)
        special = (b & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
        out = encode(x, dst, mode, satfinite=satfinite, relu=relu)
        trunc = b & np.uint32(0xFFFFE000)
        if satfinite:   # captured: a non-finite input gives its truncated word less one tf32 unit
            trunc = trunc - np.uint32(0x2000)
        return np.where(special, trunc, out)
    out = encode(x, dst, mode or "rn", satfinite=satfinite, relu=relu)
    if (src, dst) in _PAYLOAD_NAN:
        out = np.where(np.isnan(x), _payload_nan(bits, src, dst), out).astype(out.dtype)
    return out


def round_to_integral(bits, src, mode, ftz=False):
    """cvt.rni/rzi/rmi/rpi with a float destination of the source's type."""
    x = decode(bits, src)
    if ftz:
        x = np.where(np.abs(x) < 2.0 ** -126, np.copysign(0.0, x), x)
    f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode]
    with np.errstate(invalid="ignore"):
        y = f(x)
    return encode(y, src, "rn")


def float_to_int(bits, src, dst, mode):
    """Saturating float -> integer conversion, rounding rni/rzi/rmi/rpi.  NaN gives 0, except for a
    .s64 destination, where the H100 returns 0x8000000000000000 (captured)."""
    x = decode(bits, src)
    n, signed = INTS[dst]
    f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    nan = np.isnan(x)
    with np.errstate(invalid="ignore"):
        y = f(np.where(nan, 0.0, x))
    big = y >= float(hi)
    small = y <= float(lo)
    if signed or n < 64:
        v = np.clip(y, -2.0 ** 63, 2.0 ** 63 - 1024).astype(np.int64).astype(np.uint64)
    else:
        v = np.clip(y, 0.0, 2.0 ** 64 - 2048).astype(np.uint64)
    mask = (1 << 64) - 1
    v = np.where(big, np.uint64(hi & mask), v)
    v = np.where(small, np.uint64(lo & mask), v)
    if dst == "s64":
        v = np.where(nan, np.uint64(1 << 63), v)
    return (v & np.uint64((1 << n) - 1) if n < 64 else v).astype(_UINT[n])


def int_to_float(bits, src, dst, mode):
    """Integer -> float, rounded by ``mode``; exact for every width (64-bit values keep a sticky bit)."""
    n, signed = INTS[src]
    b = np.asarray(bits).astype(np.uint64) & np.uint64((1 << n) - 1 if n < 64 else (1 << 64) - 1)
    if signed:
        neg = (b >> np.uint64(n - 1)) & np.uint64(1) == 1
        mag = np.where(neg, (~b + np.uint64(1)) & np.uint64((1 << n) - 1 if n < 64 else (1 << 64) - 1), b)
    else:
        neg = np.zeros(b.shape, dtype=bool)
        mag = b
    mb = FORMATS[dst][1]
    if n <= 32 or mb <= 50:
        # keep 52 significant bits: shifting out the rest into a sticky bit rounds exactly later
        shift = np.zeros(mag.shape, dtype=np.uint64)
        top = mag >> np.uint64(52)
        need = top != 0
        if need.any():
            k = np.where(need, np.floor(np.log2(np.maximum(top, 1).astype(np.float64))).astype(np.int64) + 1, 0)
            k = np.where(need & ((top >> k.astype(np.uint64)) != 0), k + 1, k).astype(np.uint64)
            sticky = (mag & ((np.uint64(1) << k) - np.uint64(1))) != 0
            mag = (mag >> k) | sticky.astype(np.uint64)
            shift = k
        x = np.ldexp(mag.astype(np.float64), shift.astype(np.int64))
    else:
        # 64-bit integer -> f64: the sum of two exact halves, rounded once by the FPU (nearest even),
        # then stepped one unit toward the rounding direction where nearest went the other way
        hi = (mag >> np.uint64(32)).astype(np.float64) * 2.0 ** 32
        lo = (mag & np.uint64(0xFFFFFFFF)).astype(np.float64)
        x = hi + lo
        if mode != "rn":
            xi = np.where(x >= 2.0 ** 64, np.uint64(0xFFFFFFFFFFFFFFFF), np.minimum(x, 2.0 ** 64 - 2048).astype(np.uint64))
            over = (x >= 2.0 ** 64) | (xi > mag)
            under = (x < 2.0 ** 64) & (xi < mag)
            if mode in ("rz",):
                x = np.where(over, np.nextafter(x, 0.0), x)
            else:
                down = ~neg if mode == "rm" else neg      # magnitude rounds down
                x = np.where(over & down, np.nextafter(x, 0.0), x)
                x = np.where(under & ~down, np.nextafter(x, np.inf), x)
        return encode(np.where(neg, -x, x), dst, "rn")
    x = np.where(neg, -x, x)
    return encode(x, dst, mode)


def int_to_int(bits, src, dst, sat):
    """Integer width changes: sign or zero extension, truncation, or clamping with .sat."""
    n, signed = INTS[src]
    m, dsigned = INTS[dst]
    b = np.asarray(bits).astype(np.uint64) & np.uint64((1 << n) - 1 if n < 64 else (1 << 64) - 1)
    v = b
    if signed and n < 64:
        v = np.where((b >> np.uint64(n - 1)) & np.uint64(1) == 1, b | ~np.uint64((1 << n) - 1), b)
    if sat:
        if signed:
            s = v.view(np.int64)
        lo, hi = (-(1 << (m - 1)), (1 << (m - 1)) - 1) if dsigned else (0, (1 << m) - 1)
        if signed:
            c = np.clip(s, lo, min(hi, (1 << 63) - 1)).astype(np.int64).view(np.uint64)
        else:
            c = np.minimum(v, np.uint64(min(hi, (1 << 64) - 1)))
            if dsigned and m == 64:
                c = np.minimum(v, np.uint64((1 << 63) - 1))
        v = c
    return v  # uint64; the caller truncates to the register width
