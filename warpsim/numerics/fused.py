"""Exact floating-point arithmetic of the tensor-core (HMMA) path.

Every function here works on raw bit patterns and integers only; no host
floating-point operation takes part in a result.  A float format is described
by five integers (never by a type name), in this order::

    width      bits the element occupies in its register
    exp_bits   exponent field width
    man_bits   stored mantissa bits that take part in arithmetic
    ignored    low register bits the hardware ignores (tf32: 13)
    has_inf    1 if the all-ones exponent encodes inf/NaN (IEEE style);
               0 for e4m3, whose only NaN is S.1111.111;
               2 for the finite-only formats (e2m1, e2m3, e3m2: no inf, no NaN)

A format with no mantissa bits (ue8m0) has neither zero nor subnormals: exponent field 0 is
2**-bias; it is given ``width = bits + 1`` (a sign bit that is always 0) since it has no sign.

A decoded value is ``(cls, sign, exp, sig)`` with value
``(-1)**sign * sig * 2**(exp - man_bits)``: ``exp`` is the unbiased exponent of
the leading significand position (``1 - bias`` for subnormals) and ``sig`` the
integer significand including the hidden bit.  ``cls`` is one of CLS_ZERO,
CLS_FINITE, CLS_INF, CLS_NAN.

The entry point is :func:`tc_dot`; its parameter vector is built by
:mod:`warpsim.numerics.recipes` (the layout is documented there and by the ``P_*``
offsets below).  The model it implements (fitted on H100/H200 captures, see
docs/numerics.md) is, per block of terms:

1. every product ``a_i * b_i`` is formed exactly; its alignment exponent is
   ``exp(a) + exp(b)`` (raw exponents, not renormalised);
2. the largest alignment exponent ``emax`` over the block's nonzero products
   and the accumulator is found; every term is truncated (toward zero, on its
   magnitude) to ``frac`` fractional bits below ``2**emax``;
3. the truncated terms are summed exactly as integers;
4. the sum is rounded once into the block's result format (RZ or RNE).

Blocks are chained through the accumulator; optionally C is added at the end
with a separately rounded (RNE) IEEE addition, as the sm_90 fp8 emulation does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

CLS_ZERO, CLS_FINITE, CLS_INF, CLS_NAN = 0, 1, 2, 3

RND_RZ, RND_RNE = 0, 1
OVF_INF, OVF_IEEE = 0, 1          # overflow: always inf / IEEE (RZ -> largest finite)
ZERO_IEEE, ZERO_POSITIVE = 0, 1  # zero results: IEEE signs / always +0
CMODE_FUSED, CMODE_SEPARATE_ADD = 0, 1

# --- parameter vector layout (see warpsim.numerics.recipes for the meaning) ---------
FMT_LEN = 5
P_KIND = 0        # 1 = tc_dot
P_A = 1           # format of A elements (5 ints)
P_B = 6           # format of B elements
P_C = 11          # format of C
P_D = 16          # format of D
P_OP = 21         # format A and B are converted into (exactly) before the products; width 0 = none
P_NBLK = 26       # number of chained blocks
P_GROUP = 27      # term i belongs to block (i // group) % nblk
P_FRAC = 28       # fractional bits kept below 2**emax inside a block
P_RND = 29        # rounding of each block result: RND_RZ / RND_RNE
P_ACC = 30        # format of the block result / chained accumulator (5 ints)
P_CMODE = 35      # CMODE_FUSED: C is a term of the first block; CMODE_SEPARATE_ADD: blocks start at +0, then D = RNE(acc + C)
P_OVF = 36        # block-result overflow rule (OVF_INF / OVF_IEEE)
P_ZERO = 37       # block-result zeros: ZERO_IEEE (all terms -0 -> -0, underflow keeps the sign) / ZERO_POSITIVE (always +0)
# block scaling (sm_120a kind::mxf8f6f4 / mxf4 / mxf4nvf4); see block_scaled_dot
P_SCALE = 38      # SCALE_NONE / SCALE_PRODUCT (each product times its two scales) / SCALE_GROUP (groups of
                  # P_SGROUP exact products, then scaled)
P_SF = 39         # format of the scale factors (5 ints)
P_STERMS = 44     # terms (in the order the engine passes them) that share one scale factor
P_SGROUP = 45     # SCALE_GROUP: products summed exactly before scaling
P_ZEXP_ON = 46    # 1: a zero term (zero product / all-zero group / zero scale / zero C) takes part in emax
P_ZEXP = 47       #    with this exponent (MMA-Sim's e_zero)
P_LEN = 48
SCALE_NONE, SCALE_PRODUCT, SCALE_GROUP = 0, 1, 2
KIND_TC_DOT = 1

#: fractional bits (below the larger exponent) used by the separately rounded
#: two-operand addition, with a sticky bit: far more than the 3 guard bits a
#: correctly rounded addition needs.
_ADD_FRAC = 40


@njit(cache=True, nogil=True)
def bit_length(x):
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@njit(cache=True, nogil=True)
def decode(bits, width, eb, mb, ign, has_inf):
    """Raw bits -> (cls, sign, exp, sig) as described in the module docstring."""
    x = np.uint64(bits) >> np.uint64(ign)
    w = width - ign
    sign = np.int64((x >> np.uint64(w - 1)) & np.uint64(1))
    emask = (1 << eb) - 1
    mmask = (1 << mb) - 1
    e = np.int64((x >> np.uint64(mb)) & np.uint64(emask))
    m = np.int64(x & np.uint64(mmask))
    bias = (1 << (eb - 1)) - 1
    if e == emask:
        if has_inf == 1:
            if m == 0:
                return CLS_INF, sign, np.int64(0), np.int64(0)
            return CLS_NAN, sign, np.int64(0), np.int64(0)
        if has_inf == 0 and m == mmask:
            return CLS_NAN, sign, np.int64(0), np.int64(0)
    if mb == 0:   # no mantissa (ue8m0): no zero, no subnormals
        return CLS_FINITE, sign, e - bias, np.int64(1)
    if e == 0:
        if m == 0:
            return CLS_ZERO, sign, np.int64(1 - bias), np.int64(0)
        return CLS_FINITE, sign, np.int64(1 - bias), m
    return CLS_FINITE, sign, e - bias, m | (np.int64(1) << mb)


@njit(cache=True, nogil=True)
def nan_bits(width, eb, mb, ign):
    """The canonical NaN the tensor cores and FADD/HADD2 write: every bit but the sign set (the
    ignored low bits too: Ada's fp8 f32 result keeps 13 mantissa bits yet writes 0x7fffffff)."""
    return (np.uint64(1) << np.uint64(width - 1)) - np.uint64(1)


@njit(cache=True, nogil=True)
def inf_bits(sign, width, eb, mb, ign):
    v = (np.uint64(sign) << np.uint64(width - ign - 1)) | (np.uint64((1 << eb) - 1) << np.uint64(mb))
    return v << np.uint64(ign)


@njit(cache=True, nogil=True)
def zero_bits(sign, width, ign):
    return np.uint64(sign) << np.uint64(width - 1)


@njit(cache=True, nogil=True)
def encode(sign, mag, e0, width, eb, mb, ign, has_inf, rnd, ovf, zero):
    """Round ``(-1)**sign * mag * 2**e0`` (mag > 0, int64; its LSB may be a
    sticky bit) into the format and return its raw bits."""
    bias = (1 << (eb - 1)) - 1
    emin = 1 - bias
    if has_inf == 1:
        emaxf = (1 << eb) - 2 - bias
    else:
        emaxf = (1 << eb) - 1 - bias
    L = bit_length(mag)
    E = L - 1 + e0
    Eq = E if E > emin else emin
    sh = Eq - mb - e0
    if sh <= 0:
        sig = mag << (-sh)
    else:
        if sh >= 63:
            sig = np.int64(0)
            rem = mag
            half_cmp = -1  # rem is always below half
        else:
            sig = mag >> sh
            rem = mag & ((np.int64(1) << sh) - 1)
            half = np.int64(1) << (sh - 1)
            if rem > half:
                half_cmp = 1
            elif rem == half:
                half_cmp = 0
            else:
                half_cmp = -1
        if rnd == RND_RNE:
            if half_cmp > 0 or (half_cmp == 0 and (sig & 1) == 1):
                sig += 1
        if sig == (np.int64(1) << (mb + 1)):
            sig >>= 1
            Eq += 1
    if sig == 0:
        if zero == ZERO_POSITIVE:
            return zero_bits(0, width, ign)
        return zero_bits(sign, width, ign)
    if Eq > emaxf or (has_inf == 0 and Eq == emaxf and sig == (np.int64(1) << (mb + 1)) - 1):
        if ovf == OVF_IEEE and rnd == RND_RZ:
            top = emaxf + bias
            msk = (np.int64(1) << mb) - 1
            if has_inf == 0:
                msk -= 1
            v = (np.uint64(sign) << np.uint64(width - ign - 1)) | (np.uint64(top) << np.uint64(mb)) | np.uint64(msk)
            return v << np.uint64(ign)
        return inf_bits(sign, width, eb, mb, ign)
    if sig < (np.int64(1) << mb):
        ef = np.int64(0)
    else:
        ef = Eq + bias
        sig -= np.int64(1) << mb
    v = (np.uint64(sign) << np.uint64(width - ign - 1)) | (np.uint64(ef) << np.uint64(mb)) | np.uint64(sig)
    return v << np.uint64(ign)


@njit(cache=True, nogil=True)
def convert_exact(bits, p, src, dst):
    """Convert raw bits from format p[src:src+5] to p[dst:dst+5] (exact when the
    destination holds every source value, as f16 does for e4m3/e5m2)."""
    cls, s, e, m = decode(bits, p[src], p[src + 1], p[src + 2], p[src + 3], p[src + 4])
    if cls == CLS_NAN:
        return nan_bits(p[dst], p[dst + 1], p[dst + 2], p[dst + 3])
    if cls == CLS_INF:
        return inf_bits(s, p[dst], p[dst + 1], p[dst + 2], p[dst + 3])
    if cls == CLS_ZERO:
        return zero_bits(s, p[dst], p[dst + 3])
    return encode(s, m, e - p[src + 2], p[dst], p[dst + 1], p[dst + 2], p[dst + 3], p[dst + 4],
                  RND_RNE, OVF_INF, ZERO_IEEE)


@njit(cache=True, nogil=True)
def _operand(bits, p, src):
    """Decode an A/B element, converted first into the HMMA operand format when the recipe asks."""
    if p[P_OP] != 0:
        b2 = convert_exact(bits, p, src, P_OP)
        return decode(b2, p[P_OP], p[P_OP + 1], p[P_OP + 2], p[P_OP + 3], p[P_OP + 4])
    return decode(bits, p[src], p[src + 1], p[src + 2], p[src + 3], p[src + 4])


@njit(cache=True, nogil=True)
def _man_bits(p, src):
    if p[P_OP] != 0:
        return p[P_OP + 2]
    return p[src + 2]


@njit(cache=True, nogil=True)
def _align(sig, sh, sticky):
    """sig * 2**sh as an integer, truncated toward zero; with sticky, lost bits set the LSB."""
    if sh >= 0:
        return sig << sh
    if -sh >= 63:
        if sticky and sig != 0:
            return np.int64(1)
        return np.int64(0)
    v = sig >> (-sh)
    if sticky and (v << (-sh)) != sig:
        v |= 1
    return v


@njit(cache=True, nogil=True, inline="always")
def _special_flags(cls, sign, any_nan, pos_inf, neg_inf):
    """The running (any NaN, +inf, -inf) flags of a sum after a term of class ``cls`` and sign ``sign``."""
    if cls == CLS_NAN:
        any_nan = True
    elif cls == CLS_INF:
        if sign == 1:
            neg_inf = True
        else:
            pos_inf = True
    return any_nan, pos_inf, neg_inf


@njit(cache=True, nogil=True, inline="always")
def _product_class(ca, cb):
    """The class of a product of elements of classes ca and cb (inf times zero: NaN)."""
    if ca == CLS_NAN or cb == CLS_NAN:
        return CLS_NAN
    if ca == CLS_INF or cb == CLS_INF:
        return CLS_NAN if (ca == CLS_ZERO or cb == CLS_ZERO) else CLS_INF
    if ca == CLS_ZERO or cb == CLS_ZERO:
        return CLS_ZERO
    return CLS_FINITE


@njit(cache=True, nogil=True, inline="always")
def _special_bits(any_nan, pos_inf, neg_inf, wo, ebo, mbo, igo):
    """A sum's result when some term is NaN or inf: NaN for any NaN or both infinities, else the inf."""
    if any_nan or (pos_inf and neg_inf):
        return nan_bits(wo, ebo, mbo, igo)
    return inf_bits(0 if pos_inf else 1, wo, ebo, mbo, igo)


@njit(cache=True, nogil=True, inline="always")
def _encode_sum(total, e, wo, ebo, mbo, igo, hio, rnd, ovf, zero):
    """The signed integer sum ``total`` times 2^e rounded into the output format (+0 for an exact zero)."""
    if total == 0:
        return zero_bits(0, wo, igo)
    sgn = 0
    if total < 0:
        sgn = 1
        total = -total
    return encode(sgn, total, e, wo, ebo, mbo, igo, hio, rnd, ovf, zero)


@njit(cache=True, nogil=True)
def fused_block(a, b, n, blk, nblk, group, acc, accf, p, outf, frac, rnd, ovf, zero):
    """One tensor-core pass: sum of the exact products a_i*b_i (terms i < n with
    (i // group) % nblk == blk) plus the accumulator ``acc`` (raw bits in format
    p[accf:accf+5]), every term truncated to ``frac`` bits below the largest
    exponent, rounded into format p[outf:outf+5]."""
    fa = _man_bits(p, P_A)
    fb = _man_bits(p, P_B)
    fprod = fa + fb
    wo, ebo, mbo, igo, hio = p[outf], p[outf + 1], p[outf + 2], p[outf + 3], p[outf + 4]
    any_nan = False
    pos_inf = False
    neg_inf = False
    all_zero = True
    all_neg = True
    have_max = False
    emax = np.int64(0)
    cc, sc, ec, mc = decode(acc, p[accf], p[accf + 1], p[accf + 2], p[accf + 3], p[accf + 4])
    # pass 1: classes, specials, largest exponent (the products, then the accumulator)
    for i in range(n + 1):
        if i == n:
            cls, s, e = cc, sc, ec
        elif (i // group) % nblk != blk:
            continue
        else:
            ca, sa, ea, ma = _operand(a[i], p, P_A)
            cb, sb, eb_, mb_ = _operand(b[i], p, P_B)
            cls, s, e = _product_class(ca, cb), sa ^ sb, ea + eb_
        any_nan, pos_inf, neg_inf = _special_flags(cls, s, any_nan, pos_inf, neg_inf)
        if cls == CLS_ZERO:
            if s == 0:
                all_neg = False
        elif cls == CLS_FINITE:
            all_zero = False
            all_neg = False
            if not have_max or e > emax:
                emax = e
                have_max = True
    if any_nan or pos_inf or neg_inf:
        return _special_bits(any_nan, pos_inf, neg_inf, wo, ebo, mbo, igo)
    if all_zero:
        return zero_bits(1 if (all_neg and zero == ZERO_IEEE) else 0, wo, igo)
    # pass 2: align, truncate, sum
    total = np.int64(0)
    for i in range(n):
        if (i // group) % nblk != blk:
            continue
        ca, sa, ea, ma = _operand(a[i], p, P_A)
        cb, sb, eb_, mb_ = _operand(b[i], p, P_B)
        if ca != CLS_FINITE or cb != CLS_FINITE:
            continue
        v = _align(ma * mb_, ea + eb_ - fprod - emax + frac, False)
        total += -v if (sa ^ sb) == 1 else v
    if cc == CLS_FINITE:
        v = _align(mc, ec - p[accf + 2] - emax + frac, False)
        total += -v if sc == 1 else v
    return _encode_sum(total, emax - frac, wo, ebo, mbo, igo, hio, rnd, ovf, zero)


@njit(cache=True, nogil=True)
def add_rne(x, y, p, f):
    """IEEE addition of two values of format p[f:f+5], rounded to nearest even
    (the FADD / HADD2 the compiler emits; subnormals kept, canonical NaN)."""
    w, eb, mb, ig, hi = p[f], p[f + 1], p[f + 2], p[f + 3], p[f + 4]
    cx, sx, ex, mx = decode(x, w, eb, mb, ig, hi)
    cy, sy, ey, my = decode(y, w, eb, mb, ig, hi)
    if cx == CLS_NAN or cy == CLS_NAN:
        return nan_bits(w, eb, mb, ig)
    if cx == CLS_INF or cy == CLS_INF:
        if cx == CLS_INF and cy == CLS_INF and sx != sy:
            return nan_bits(w, eb, mb, ig)
        return inf_bits(sx if cx == CLS_INF else sy, w, eb, mb, ig)
    if cx == CLS_ZERO and cy == CLS_ZERO:
        return zero_bits(1 if (sx == 1 and sy == 1) else 0, w, ig)
    if cx == CLS_ZERO:
        return np.uint64(y)
    if cy == CLS_ZERO:
        return np.uint64(x)
    emax = ex if ex > ey else ey
    vx = _align(mx, ex - mb - emax + _ADD_FRAC, True)
    vy = _align(my, ey - mb - emax + _ADD_FRAC, True)
    t = (-vx if sx == 1 else vx) + (-vy if sy == 1 else vy)
    return _encode_sum(t, emax - _ADD_FRAC, w, eb, mb, ig, hi, RND_RNE, OVF_INF, ZERO_IEEE)


@njit(cache=True, nogil=True)
def _scale(bits, p):
    """A scale factor -> (is NaN, exponent, significand); significand 0 for a zero ue4m3."""
    cls, s, e, m = decode(bits, p[P_SF], p[P_SF + 1], p[P_SF + 2], p[P_SF + 3], p[P_SF + 4])
    if cls == CLS_NAN:
        return True, np.int64(0), np.int64(0)
    if cls == CLS_ZERO:
        return False, np.int64(0), np.int64(0)
    return False, e, m


@njit(cache=True, nogil=True)
def block_scaled_dot(a, b, n, c, p, sa, sb):
    """One block-scaled tensor-core pass (MMA-Sim's ST-FDPA / GST-FDPA, arXiv 2511.10909):

    * SCALE_PRODUCT (kind::mxf8f6f4): term i is the exact product a_i*b_i*SA*SB of its two elements
      and the two scale factors of its k block; its alignment exponent is exp(a)+exp(b)+exp(SA)+exp(SB);
    * SCALE_GROUP (kind::mxf4 / mxf4nvf4): P_SGROUP consecutive products are summed exactly, the
      sum times the significands of SA and SB is one term, and its alignment exponent is
      exp(SA)+exp(SB) alone (the group sum's own magnitude does not enter);
    * C is a term too; a zero term (zero product, all-zero group, zero scale, zero C) has the
      exponent P_ZEXP when P_ZEXP_ON; the largest exponent emax is found, every term truncated to
      P_FRAC fractional bits below 2**emax, the integers summed, and the sum rounded once (P_RND) to D.

    sa, sb: uint64 scale-factor bits of this row of A / column of B, one per P_STERMS terms.
    NaN anywhere (an element, a scale factor that is used, C) gives the canonical NaN; inf follows
    the rules of fused_block.
    """
    outf = P_D
    wo, ebo, mbo, igo, hio = p[outf], p[outf + 1], p[outf + 2], p[outf + 3], p[outf + 4]
    frac = p[P_FRAC]
    st = p[P_STERMS]
    zon = p[P_ZEXP_ON] != 0
    zexp = p[P_ZEXP]
    fa = p[P_A + 2]
    fb = p[P_B + 2]
    fs = p[P_SF + 2]
    group = p[P_SCALE] == SCALE_GROUP
    G = p[P_SGROUP] if group else 1
    any_nan = False
    pos_inf = False
    neg_inf = False
    have_max = False
    emax = np.int64(0)
    nterms = n // G
    # pass 1: specials and the largest exponent
    for g in range(nterms):
        nan_a, esa, msa = _scale(sa[(g * G) // st], p)
        nan_b, esb, msb = _scale(sb[(g * G) // st], p)
        if nan_a or nan_b:
            any_nan = True
        zero_scale = msa == 0 or msb == 0
        all_zero = True
        for i in range(g * G, g * G + G):
            ca, s_a, ea, ma = decode(a[i], p[P_A], p[P_A + 1], p[P_A + 2], p[P_A + 3], p[P_A + 4])
            cb, s_b, eb_, mb_ = decode(b[i], p[P_B], p[P_B + 1], p[P_B + 2], p[P_B + 3], p[P_B + 4])
            if ca == CLS_NAN or cb == CLS_NAN:
                any_nan = True
            elif ca == CLS_INF or cb == CLS_INF:
                if ca == CLS_ZERO or cb == CLS_ZERO or zero_scale:
                    any_nan = True
                elif (s_a ^ s_b) == 1:
                    neg_inf = True
                else:
                    pos_inf = True
            elif ca == CLS_FINITE and cb == CLS_FINITE:
                all_zero = False
                if not group and not zero_scale:
                    e = ea + eb_ + esa + esb
                    if not have_max or e > emax:
                        emax, have_max = e, True
            if not group and (ca == CLS_ZERO or cb == CLS_ZERO or zero_scale) and zon:
                if not have_max or zexp > emax:
                    emax, have_max = zexp, True
        if group:
            e = zexp if (all_zero or zero_scale) else esa + esb
            if (all_zero or zero_scale) and not zon:
                continue
            if not have_max or e > emax:
                emax, have_max = e, True
    cc, sc, ec, mc = decode(c, p[P_C], p[P_C + 1], p[P_C + 2], p[P_C + 3], p[P_C + 4])
    any_nan, pos_inf, neg_inf = _special_flags(cc, sc, any_nan, pos_inf, neg_inf)
    if cc == CLS_FINITE or (zon and cc == CLS_ZERO):
        e = ec if cc == CLS_FINITE else zexp
        if not have_max or e > emax:
            emax, have_max = e, True
    if any_nan or pos_inf or neg_inf:
        return _special_bits(any_nan, pos_inf, neg_inf, wo, ebo, mbo, igo)
    if not have_max:
        return zero_bits(0, wo, igo)
    # pass 2: align, truncate, sum
    total = np.int64(0)
    bias_a = (1 << (p[P_A + 1] - 1)) - 1
    bias_b = (1 << (p[P_B + 1] - 1)) - 1
    emin2 = 2 - bias_a - bias_b          # the smallest raw exponent of a product
    for g in range(nterms):
        _, esa, msa = _scale(sa[(g * G) // st], p)
        _, esb, msb = _scale(sb[(g * G) // st], p)
        if msa == 0 or msb == 0:
            continue
        gsum = np.int64(0)
        for i in range(g * G, g * G + G):
            ca, s_a, ea, ma = decode(a[i], p[P_A], p[P_A + 1], p[P_A + 2], p[P_A + 3], p[P_A + 4])
            cb, s_b, eb_, mb_ = decode(b[i], p[P_B], p[P_B + 1], p[P_B + 2], p[P_B + 3], p[P_B + 4])
            if ca != CLS_FINITE or cb != CLS_FINITE:
                continue
            if group:   # exact: every product on the grid of the smallest product exponent
                v = (ma * mb_) << (ea + eb_ - emin2)
                gsum += -v if (s_a ^ s_b) == 1 else v
            else:
                v = _align(ma * mb_ * msa * msb, ea + eb_ + esa + esb - fa - fb - 2 * fs - emax + frac, False)
                total += -v if (s_a ^ s_b) == 1 else v
        if group and gsum != 0:
            sg = 1 if gsum < 0 else 0
            v = _align((-gsum if sg else gsum) * msa * msb, emin2 - fa - fb - 2 * fs + esa + esb - emax + frac, False)
            total += -v if sg else v
    if cc == CLS_FINITE:
        v = _align(mc, ec - p[P_C + 2] - emax + frac, False)
        total += -v if sc == 1 else v
    return _encode_sum(total, emax - frac, wo, ebo, mbo, igo, hio, p[P_RND], p[P_OVF], p[P_ZERO])


@njit(cache=True, nogil=True)
def tc_dot(a, b, n, c, p, sa, sb):
    """a, b: uint64 arrays of raw element bits (the A row and B column, in k order; length >= n);
    c: uint64 raw bits of the C element; p: int64 recipe parameter vector; sa, sb: uint64 scale-factor
    bits of the row / column (read only by block-scaled recipes). Returns uint64 raw bits of D."""
    if p[P_SCALE] != SCALE_NONE:
        return block_scaled_dot(a, b, n, c, p, sa, sb)
    nblk = p[P_NBLK]
    group = p[P_GROUP]
    if p[P_CMODE] == CMODE_FUSED:
        acc = np.uint64(c)
        accf = P_C
    else:
        acc = zero_bits(0, p[P_ACC], p[P_ACC + 3])
        accf = P_ACC
    for blk in range(nblk):
        acc = fused_block(a, b, n, blk, nblk, group, acc, accf, p, P_ACC,
                          p[P_FRAC], p[P_RND], p[P_OVF], p[P_ZERO])
        accf = P_ACC
    if p[P_CMODE] == CMODE_SEPARATE_ADD:
        return add_rne(acc, np.uint64(c), p, P_D)
    return acc


@njit(cache=True, nogil=True)
def tc_dot_rows(A, B, C, n, p, out, SA=None, SB=None):
    """Batch form: out[i] = tc_dot(A[i], B[i], n, C[i], p, SA[i], SB[i]) for every row i."""
    dummy = np.zeros(1, np.uint64)
    for i in range(A.shape[0]):
        if SA is None:
            out[i] = tc_dot(A[i], B[i], n, C[i], p, dummy, dummy)
        else:
            out[i] = tc_dot(A[i], B[i], n, C[i], p, SA[i], SB[i])


# --- fast path: every operand finite --------------------------------------------------------
#
# The same model as fused_block / add_rne, computed in float64 where float64 is provably exact:
#
# * an element of at most 11 significant bits (f16, bf16, tf32, fp8) is a float64; a product of
#   two is exact (<= 22 bits) and lies in [2^-300, 2^258];
# * a term scaled by 2^(frac - emax) (a power of two; no overflow or underflow for frac <= 30 and
#   these ranges) and cut with trunc is exactly the truncated integer of the integer model; it is
#   below 2^(frac + 2) (product significand < 4, exponent <= emax), so a sum of up to 2^20 terms is
#   an integer below 2^53: float64 adds it exactly;
# * that exact sum times 2^(emax - frac) is again exact, and is rounded once into the result format
#   by scaling its last kept bit to 1 and applying trunc (RZ) or rint (RNE);
# * the separate RNE addition of C (fp8 emulation) adds two values of the same format: float64
#   holds the exact sum of two f16 values, and for f32 the float64 rounding followed by RNE to f32
#   is one correct rounding (53 >= 2*24 + 2: double rounding of a sum is innocuous).
#
# Whenever an operand is NaN or inf, or a recipe lies outside what is proven here, the callers fall
# back to the integer implementation above.

from llvmlite import ir as _ir  # noqa: E402
from numba import types as _nbt  # noqa: E402
from numba.extending import intrinsic as _intrinsic  # noqa: E402


def _bitcast(name, src, dst, irtype):
    """An intrinsic reinterpreting a ``src`` value's bits as ``dst`` (no conversion)."""
    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], irtype)
        return dst(src), codegen
    cast.__name__ = cast.__qualname__ = name
    return _intrinsic(cast)


_f64_bits = _bitcast("_f64_bits", _nbt.float64, _nbt.uint64, _ir.IntType(64))
_bits_f32 = _bitcast("_bits_f32", _nbt.uint32, _nbt.float32, _ir.FloatType())
_bits_f64 = _bitcast("_bits_f64", _nbt.uint64, _nbt.float64, _ir.DoubleType())


#: alignment exponent given to a zero element (far below any real one: a zero never sets emax)
_ZEXP = -4096.0


@njit(cache=True, nogil=True, inline="always")
def _pow2(k):
    """2.0 ** k for -1022 <= k <= 1023, exactly."""
    return _bits_f64(np.uint64(k + 1023) << np.uint64(52))


@njit(cache=True, nogil=True, inline="always")
def _exp2of(v):
    """Unbiased exponent of a normal nonzero float64 (floor(log2|v|))."""
    return np.int64((_f64_bits(v) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023


@njit(cache=True, nogil=True, inline="always")
def _fround(v, mb, emin, infb, sbit, rne):
    """Round float64 v (exact) once into a format with mb mantissa bits, minimum exponent emin and
    an inf (infb: the +inf pattern, sbit: the sign bit, both without ignored bits).
    Returns (bits without ignored bits, the result's value); zero results are +0."""
    if v == 0.0:
        return np.uint64(0), 0.0
    a = abs(v)
    E = _exp2of(a)
    ue = (E if E > emin else emin) - mb
    y = a * _pow2(-ue)
    q = np.rint(y) if rne else np.trunc(y)
    if q == 0.0:
        return np.uint64(0), 0.0
    bits = ((ue - emin + mb) << mb) + np.int64(q)
    if bits >= infb:
        r = np.inf
        bits = infb
    else:
        r = q * _pow2(ue)
    if v < 0.0:
        return np.uint64(bits) | sbit, -r
    return np.uint64(bits), r


#: the float fast path (warpsim.engine.tensorcore) is specialised to 8 output columns (every m16n8kX
#: form): its inner loops then have a constant trip count and vectorise completely
_NB = 8


@njit(cache=True, nogil=True)
def tc_fast_ok(p, N, Ka):
    """Whether the float fast path (:mod:`warpsim.engine.tensorcore`) handles this recipe and shape
    (else the caller uses tc_dot)."""
    if N != _NB:
        return False
    if p[P_KIND] != KIND_TC_DOT or p[P_ZERO] != ZERO_POSITIVE or p[P_OVF] != OVF_INF:
        return False
    if p[P_SCALE] != SCALE_NONE:
        return False
    if p[P_FRAC] < 0 or p[P_FRAC] > 30 or Ka > (1 << 20):
        return False
    nblk, group = p[P_NBLK], p[P_GROUP]
    if nblk < 1 or group < 1 or Ka % (nblk * group) != 0:
        return False
    for f in (P_A, P_B, P_C, P_ACC, P_D):
        if p[f] - p[f + 3] > 32 or p[f + 1] > 8 or p[f + 1] < 2 or p[f + 2] > 23 or p[f + 2] < 1:
            return False
        if p[f + 2] + p[f + 1] + 1 != p[f] - p[f + 3]:
            return False
    if p[P_OP] != 0 and (p[P_OP + 1] > 8 or p[P_OP + 2] > 23):
        return False
    if p[P_ACC + 4] == 0 or p[P_ACC + 3] != 0:
        return False
    if p[P_CMODE] == CMODE_SEPARATE_ADD:
        for k in range(5):
            if p[P_ACC + k] != p[P_D + k] or p[P_C + k] != p[P_D + k]:
                return False
    elif p[P_CMODE] == CMODE_FUSED:
        for k in range(5):
            if p[P_ACC + k] != p[P_D + k]:
                return False
    else:
        return False
    return True
