"""What the tensor-core kernels are given: per plan, the decoded formats, gathering places,
rounding parameters and block-scale indices (the kernels themselves read no recipe vector)."""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ...numerics import fused as ar
from ...numerics.fused import (CMODE_FUSED, P_ACC, P_C, P_CMODE, P_D, P_FRAC, P_GROUP, P_NBLK, P_OP, P_RND, RND_RNE,
                               _bits_f64, _f64_bits, tc_fast_ok)

#: alignment exponent of a zero element (float32; far below any real one, see fused._ZEXP)
_ZEXP = np.float32(-4096.0)

def _exact_conversion(fmt: tuple, op: tuple) -> bool:
    """Whether every finite value of format fmt is a value of format op (fp8 -> f16: yes)."""
    width, eb, mb, ign, hinf = fmt
    _, oeb, omb, _, _ = op
    bias, obias = (1 << (eb - 1)) - 1, (1 << (oeb - 1)) - 1
    top = (1 << eb) - 1 - bias - (1 if hinf == 1 else 0)  # largest finite exponent (e4m3: S.1111.110)
    lsb = 1 - bias - mb                                  # the smallest subnormal's exponent
    return omb >= mb and top <= (1 << oeb) - 2 - obias and lsb >= 1 - obias - omb


def _decode_params(fmt):
    """(ignored bits, magnitude mask, sign position, mantissa shift into f32, smallest special
    magnitude, the infinity's magnitude or -1) and 2^(127 - bias) of a format, for _decode.
    hinf: 1 IEEE (inf and NaN), 0 e4m3-like (NaN only), 2 finite-only (e2m1 / e2m3 / e3m2)."""
    width, eb, mb, ign, hinf = fmt
    mm = (1 << (width - ign - 1)) - 1
    # the smallest magnitude that is inf / NaN: IEEE formats (1) the all-ones exponent, e4m3 (0) the
    # all-ones pattern; the finite-only e2m1 / e2m3 / e3m2 (2) have none (past every magnitude)
    lim = ((1 << eb) - 1) << mb if hinf == 1 else (mm if hinf == 0 else mm + 1)
    return [ign, mm, width - 1, 23 - mb, lim, lim if hinf == 1 else -1], 2.0 ** (127 - ((1 << (eb - 1)) - 1))


def _fmt(p, f):
    return tuple(int(x) for x in p[f:f + 5])


def _emin(fmt) -> float:
    return float(2 - (1 << (fmt[1] - 1)))


_DTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def truncated_acc(p) -> bool:
    """Whether a fused recipe's result format is D's format with low mantissa bits always zero (the
    f32e8m13 of Ada's and wgmma's fp8 -> f32: an f32 word whose 10 low bits are cleared).  Rounding
    into it is rounding to fewer mantissa bits; its words, inf and canonical NaN are D's words."""
    acc, d = _fmt(p, P_ACC), _fmt(p, P_D)
    return (int(p[P_CMODE]) == CMODE_FUSED and acc[3] > 0 and d[3] == 0 and acc[0] == d[0] and acc[1] == d[1]
            and acc[4] == d[4] == 1 and acc[2] + acc[3] == d[2])


def _power_of_two_scales(p) -> bool:
    """Whether a block-scaled recipe is one this kernel computes: each product times its two ue8m0
    scales (powers of two: an exact shift of the element's value and exponent), one fused pass."""
    return (int(p[ar.P_SCALE]) == ar.SCALE_PRODUCT and int(p[ar.P_SF + 2]) == 0 and int(p[P_NBLK]) == 1
            and int(p[P_CMODE]) == CMODE_FUSED)


def _as_checked(p):
    """The parameter vector tc_fast_ok is to judge: a truncated result format (truncated_acc) is
    judged as D's own, which the rounding with ignored bits (round_params) then narrows; ue8m0 block
    scales (_power_of_two_scales) as no scales, the kernel applying them to the decoded elements."""
    if not truncated_acc(p) and not _power_of_two_scales(p):
        return p
    q = p.copy()
    if truncated_acc(p):
        q[P_ACC:P_ACC + 5] = p[P_D:P_D + 5]
    if _power_of_two_scales(p):
        q[ar.P_SCALE] = ar.SCALE_NONE
    return q


def tc_tables(ins, params, tables, sp):
    """Everything the kernel needs for one plan, or None if the plan is not one it handles."""
    if sys.byteorder != "little" or ins.products != 1:
        return None
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    p = np.asarray(params, dtype=np.int64)
    if p[ar.P_SCALE] == ar.SCALE_GROUP:
        return group_tables(ins, p, tables, sp)
    if n != 8 or not tc_fast_ok(_as_checked(p), n, ka):
        return None
    nblk, group = int(p[P_NBLK]), int(p[P_GROUP])
    nb = ka // nblk
    bits = [t[3] for t in tables]
    if any(b not in (8, 16, 32) for b in bits) or bits[2] != bits[3]:
        return None
    pos = []
    for role, (flat, word, shift, b) in zip("abcd", tables):
        j = np.arange(flat.shape[1])
        per = 32 // b
        if not ((word == j // per).all() and (shift == (j % per) * b).all()):
            return None
        flat = np.asarray(flat, dtype=np.int64)
        if role == "a":          # row-major (M, Ka) -> the term's place in block order
            i, t = np.divmod(flat, ka)
            c = t // group
            tt = (c % nblk) * nb + (c // nblk) * group + (t - c * group)
            flat = i * ka + tt
        elif role == "b":        # B^T (column-major B) -> row-major B (K, 8); dense: rows in block order
            col, row = np.divmod(flat, k)
            if not ins.is_sparse:
                c = row // group
                row = (c % nblk) * nb + (c // nblk) * group + (row - c * group)
            flat = row * n + col
        pos.append(np.ascontiguousarray(flat.ravel(), dtype=np.int64))
    # B row of each term (dense: the identity, B's rows being in block order too; sparse builds
    # it per warp from the metadata)
    ri0 = np.arange(ka, dtype=np.int64)
    if ins.is_sparse:
        spr = np.asarray(sp, dtype=np.int64).reshape(-1, 5)
        spt = np.stack([pos[0], spr[:, 0], spr[:, 1], spr[:, 2] + spr[:, 4], spr[:, 3]], axis=1)
    else:
        spt = np.zeros((1, 5), np.int64)
    op = _fmt(p, P_OP) if p[P_OP] != 0 else ()
    fa, fb, fc = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C)
    if op and not (_exact_conversion(fa, op) and _exact_conversion(fb, op)):
        return None
    dp = [_decode_params(f) for f in (fa, fb, fc)]
    emin = [_emin(op or fa), _emin(op or fb), _emin(fc)]
    if emin[0] > _emin(fa) or emin[1] > _emin(fb):
        return None     # exponents clamped above A's / B's own emin: dot._lsb_floor would not hold
    # block scales: the scale index of each A term (block order is k order: one pass) and of each
    # B row (sparse: logical rows, twice as many per scale as kept terms); the exponent of zero terms
    if ins.block_scaled:
        st = int(p[ar.P_STERMS])
        sta = np.arange(ka, dtype=np.int64) // st
        srb = np.arange(k, dtype=np.int64) // (st * (2 if ins.is_sparse else 1))
        zexp = float(p[ar.P_ZEXP]) if p[ar.P_ZEXP_ON] else float(_ZEXP)
    else:
        sta = srb = np.zeros(1, np.int64)
        zexp = float(_ZEXP)
    # A, B, C (and D, the other way) are gathered in runs: where aligned runs of r register elements
    # land on r consecutive matrix places (f16 pairs of a row, fp8 quadruples), whole r-element
    # words move at once
    gpos, wide = [], []
    for x, (flat, word, shift, b) in zip(pos, tables):
        r = _run(x, b, flat.shape[1] * b // 8)
        gpos.append(np.ascontiguousarray(x[::r] // r, dtype=np.uint32))
        wide.append(np.dtype(_DTYPE[b * r]))
    return dict(bits=bits, pos=tuple(pos), gpos=tuple(gpos), wide=tuple(wide), ri0=ri0, spt=np.ascontiguousarray(spt), ka=ka,
                q=np.array([x[0] for x in dp], np.int64), scale=np.array([x[1] for x in dp], np.float64),
                emin=np.array(emin, np.float32), rpb=round_params(_fmt(p, P_ACC), p[P_RND] == RND_RNE),
                rpa=round_params(_fmt(p, P_ACC), True), sta=sta, srb=srb, zexp=np.float32(zexp))


def _run(pos, bits: int, lane_bytes: int) -> int:
    """The longest run r (1, 2, 4 or 8 elements, at most 64 bits, dividing a lane's bytes) such that
    every aligned run of r consecutive register elements goes to r consecutive matrix places, the
    first at a multiple of r."""
    best = 1
    for r in (2, 4, 8):
        if bits * r > 64 or (lane_bytes * 8) % (bits * r) or pos.size % r:
            break
        g = pos.reshape(-1, r)
        if not ((g == g[:, :1] + np.arange(r)).all() and (g[:, 0] % r == 0).all()):
            break
        best = r
    return best

def round_params(fmt, rne):
    """The rp vector of _gen_round8 for a result format: mantissa bits, smallest normal exponent,
    +inf bits and sign bit position (both without ignored bits), 1 for ties-to-even (0: truncation),
    canonical NaN word (every bit of the register word but the sign), ignored low bits (the rounded
    bits are shifted up by them: f32e8m13 gives an f32 word whose 10 low bits are zero), and which
    vector rounding applies (ir._gen_round8): 1 f32 with ties to even, the host's double -> float
    conversion; 2 f32 with truncation, that conversion corrected by one unit; 0 any other."""
    width, eb, mb, ign, hinf = fmt
    assert hinf != 0
    bias = (1 << (eb - 1)) - 1
    infb = ((1 << eb) - 1) << mb
    hw = (1 if rne else 2) if tuple(int(x) for x in fmt) == (32, 8, 23, 0, 1) else 0
    return np.array([mb, 1 - bias, infb, width - ign - 1, 1 if rne else 0, (1 << (width - 1)) - 1, ign, hw],
                    np.int64)

@njit(cache=True, nogil=True, inline="always")
def _pow2f(k):
    """2.0 ** k for -1022 <= k <= 1023, exactly (a ue8m0 scale's value)."""
    return _bits_f64(np.uint64(k + 1023) << np.uint64(52))

# --- block-scaled groups (kind::mxf4 / mxf4nvf4: GST-FDPA) ----------------------------------------
#
# The model (fused.block_scaled_dot, SCALE_GROUP): G consecutive products are summed exactly; the
# group's sum times the values of its two scales is one term, whose alignment exponent is the two
# scales' exponents alone (zexp for a group with no nonzero product or a zero scale); C is a term
# (zexp when zero); every term is truncated to frac bits below the largest exponent and the sum
# rounded once.  In float64 every step is exact for these formats (checked in group_tables):
# a group sum of G products of e2m1 values lies on a 2^-2 grid below 2^10; times two scale values
# of at most 4 significant bits; scaled by 2^(frac - emax) each term is below 2^(frac + 12) and the
# sum of all terms and C below 2^53.

def group_tables(ins, params, tables, sp):
    """What the block-scaled group kernel needs for one plan, or None where it is not exact."""
    p = np.asarray(params, dtype=np.int64)
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    G = int(p[ar.P_SGROUP])
    fa, fb, fc, fd = _fmt(p, ar.P_A), _fmt(p, ar.P_B), _fmt(p, P_C), _fmt(p, P_D)
    if (sys.byteorder != "little" or ins.products != 1 or n != 8 or p[ar.P_SCALE] != ar.SCALE_GROUP
            or ka % G or G > 32 or int(p[P_FRAC]) > 40 or p[ar.P_OVF] != ar.OVF_INF
            or p[ar.P_ZERO] != ar.ZERO_POSITIVE or fc != (32, 8, 23, 0, 1) or fd != (32, 8, 23, 0, 1)
            or any(f[0] > 8 or f[2] > 3 or f[1] > 3 for f in (fa, fb))):
        return None
    if [t[3] for t in tables][2:] != [32, 32] or int(p[ar.P_SF + 2]) > 3:
        return None
    # element values by code (every code of these formats is finite: NaN / inf codes refuse)
    luts = []
    for f in (fa, fb):
        vals = np.zeros(1 << f[0], np.float64)
        for x in range(1 << f[0]):
            cls, s, e, sig = ar.decode(np.uint64(x), *f)
            if cls in (ar.CLS_NAN, ar.CLS_INF):
                return None
            vals[x] = 0.0 if cls == ar.CLS_ZERO else (-1.0) ** s * float(sig) * 2.0 ** (int(e) - f[2])
        luts.append(vals)
    # scale factors by byte: NaN flag, exponent (as the model decodes it), value (0 for a zero scale)
    fs = int(p[ar.P_SF + 2])
    snan = np.zeros(256, np.bool_)
    sexp = np.zeros(256, np.int64)
    sval = np.zeros(256, np.float64)
    for x in range(256):
        isnan, e, sig = ar._scale(np.uint64(x), p)
        snan[x], sexp[x] = isnan, e
        sval[x] = float(sig) * 2.0 ** (int(e) - fs)
    zon = bool(p[ar.P_ZEXP_ON])
    return dict(group=True, G=G, ka=ka, st=int(p[ar.P_STERMS]), frac=int(p[P_FRAC]), rne=int(p[P_RND]) == RND_RNE,
                lut_a=luts[0], lut_b=luts[1], snan=snan, sexp=sexp, sval=sval, zon=zon,
                zexp=float(p[ar.P_ZEXP]) if zon else -1e300)

@njit(cache=True, nogil=True, inline="always")
def _exp2of_f(v):
    """floor(log2 |v|) of a normal nonzero float64."""
    return np.int64((_f64_bits(v) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023
