"""Batched fast path of the scalar-chain recipes (f64 DMMA, m8n8k4 f16): the host's own IEEE arithmetic.

Every chain recipe is a sequence of correctly rounded IEEE operations (nearest even,
gradual underflow, overflow to infinity).  The host FPU computes exactly those, given
round-to-nearest and no flush-to-zero / denormals-are-zero -- the state numpy and numba
leave the FPU in, checked at every call by ``fp_env_ok`` (any other state takes the
exact integer path).  ``llvm.fma`` is correctly rounded by definition (x86 FMA3, or a
libm call without it); numba never marks operations ``contract``/fast-math here, so
LLVM neither fuses nor reorders anything else.  What the host does *not* reproduce is
the hardware's NaN words, so:

* f64 (NaN payloads propagate, b > c > a; invalid gives 0xfff8...): finite and infinite
  results are the host's (every step is an IEEE fma; overflow gives the IEEE inf, subnormals
  are kept).  Whether a result is NaN is IEEE too; only its word is the hardware's, decided
  per output element: the last NaN of B's column in chain order if there is one, else a NaN
  C, else the first NaN of A's row if the chain was not NaN just before it (the accumulators
  are kept at that step), else the invalid-operation NaN.  Nothing falls back to the
  soft-float :func:`chain_dot`.  No fma is given a subnormal operand where an exact
  replacement exists (they are microcode-assisted on the host; see the proofs below).
* f32 work with canonical NaNs (f16x4): NaN-ness itself is IEEE, so a NaN result is
  replaced by the canonical word; no fallback is needed.  Inputs are widened exactly
  (f16 -> f32 via a table), an f16 D is narrowed with integer nearest-even rounding.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit, prange

from ..isa.catalog import Instruction
from ..numerics.chain import (COMBINE_C_FIRST, FIRST_FFMA_ZERO, FIRST_FMUL, FIRST_FROM_C, KIND_FMA_CHAIN, P_COMBINE, P_GROUP, P_AB_E, P_AB_M, P_C_E, P_C_M, P_D_E, P_D_M, P_DNAN,
                              P_FIRST, P_KIND, P_KORDER, P_NAN, P_NAN_BITS, P_W_E, P_W_M)
from ..numerics.fused import _bits_f64 as _as_f64, _f64_bits
from ..numerics.softfloat import F64_DEFAULT_NAN, NAN_CANONICAL, U64
from .hostfpu import PROBE32, PROBE64, first_nan_steps, fma_native, fma_row8c, fma_rows8, fma_rows8m, fma_rows8s, fp_env_ok, nan_words8
from .jitcache import named_copy
from .linking import link_only


def _f16_table() -> np.ndarray:
    """f16 bits -> exact f32 value (every f16 is an f32; NaNs stay NaN)."""
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


F16_TO_F32 = _f16_table()


@njit(cache=True, nogil=True)
def f32_to_f16_rne(u):
    """f32 bits -> f16 bits, nearest even, overflow to inf, f16 subnormals; NaN -> 0x7fff."""
    u = np.uint32(u)
    s = (u >> np.uint32(16)) & np.uint32(0x8000)
    x = u & np.uint32(0x7FFFFFFF)
    if x > np.uint32(0x7F800000):
        return np.uint32(0x7FFF)
    if x >= np.uint32(0x477FF000):                       # >= 65520 rounds to infinity
        return s | np.uint32(0x7C00)
    if x >= np.uint32(0x38800000):                       # f16 normal
        r = x + np.uint32(0xFFF) + ((x >> np.uint32(13)) & np.uint32(1))
        return s | ((r >> np.uint32(13)) - np.uint32(0x1C000))
    e = x >> np.uint32(23)
    if e < np.uint32(102):                               # below 2**-25: rounds to zero
        return s
    m = (x & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
    sh = np.uint32(126) - e                              # 14 .. 24
    q = m >> sh
    rem = m & ((np.uint32(1) << sh) - np.uint32(1))
    half = np.uint32(1) << (sh - np.uint32(1))
    if rem > half or (rem == half and (q & np.uint32(1)) != np.uint32(0)):
        q += np.uint32(1)
    return s | q


FAST_NONE, FAST_F64, FAST_F32 = 0, 1, 2


def fast_mode(p: np.ndarray) -> int:
    """Which fast path (if any) computes recipe p exactly."""
    p = [int(x) for x in p]
    if p[P_KIND] != KIND_FMA_CHAIN or p[P_KORDER] not in (0, 1):
        return FAST_NONE
    ab, c, d, w = (p[P_AB_E], p[P_AB_M]), (p[P_C_E], p[P_C_M]), (p[P_D_E], p[P_D_M]), (p[P_W_E], p[P_W_M])
    if ab == c == d == w == (11, 52) and p[P_FIRST] == FIRST_FROM_C:
        return FAST_F64
    if (ab == (5, 10) and w == (8, 23) and c in ((5, 10), (8, 23)) and d in ((5, 10), (8, 23))
            and p[P_NAN] == NAN_CANONICAL and p[P_NAN_BITS] == 0x7FFFFFFF
            and (d == w or p[P_DNAN] == NAN_CANONICAL)):
        return FAST_F32
    return FAST_NONE


_EXP64 = U64(0x7FF0000000000000)
_ABS64 = U64(0x7FFFFFFFFFFFFFFF)
_MANT64 = U64(0x000FFFFFFFFFFFFF)
_SIGN64 = U64(0x8000000000000000)
_MINNORM64 = U64(0x0010000000000000)      # 2^-1022, the smallest normal
_E64 = U64(64 << 52)                       # 64 in the exponent field
_QUIET64 = U64(1 << 51)
_Z64 = U64(0)
_TWO_M1010 = 2.0 ** -1010
_TWO_M64 = 2.0 ** -64
_TWO_M958 = 2.0 ** -958
#: exponent-field sums of two normal (or zero) operands X, Y.  |XY| < 2^(fX + fY - 2044), below 2^-1075 when
#: fX + fY <= _NEGL; XY is a multiple of 2^(fX + fY - 2150), at least 2^-1021 when fX + fY >= _COARSE.
_NEGL = 969
_COARSE = 1129
#: field bound of the "tiny" operands, below 2^-958: they times 2^-64 would not be exact normals
_TINYF = 64
_TINY64 = U64((_TINYF + 1) << 52)           # |u| below it: exponent field at most _TINYF

# Why the f64 chain avoids subnormal operations, and why that is exact.
#
# The host FPU (Intel) computes an fma with a subnormal input, or a subnormal result, through a microcode assist
# (~100+ cycles instead of 4).  FTZ / DAZ would change results, so instead no fma is given a subnormal operand
# where it can be avoided, with the same IEEE result:
#
# (P) Products.  An fma sees only its exact product X*Y, so (X, Y) may replace (a, b) whenever X*Y == a*b
#     exactly.  A subnormal a is m * 2^-1074 (m < 2^52): X = a * 2^64 = m * 2^-1010 is a normal computed from
#     the integer m, and Y = b * 2^-64 is exact and normal when b's exponent field is at least 65 (or b is
#     zero, inf, NaN: the same zero / inf / NaN).  Likewise a subnormal b times 2^64 with a * 2^-64.
# (N) Negligible products.  If 0 < |p| < 2^-1075 then RN(acc + p) = acc for every nonzero finite acc (acc is a
#     multiple of 2^-1074, and acc + p lies strictly within half a spacing of it), ±0 with p's sign when acc is
#     a zero (a nonzero exact result that rounds to zero keeps its sign), and acc itself when acc is inf or NaN.
#     So p may be replaced by any other product of the same sign below 2^-1075: when a and b are both below
#     2^-958 in magnitude and one is subnormal, |ab| < 2^-1980 and (X, Y) = (a or a * 2^64, ±2^-1022) has
#     |XY| < 2^-1980, the same sign and no subnormal operand.
# (C) Subnormal accumulators (a subnormal C, or a chain that stays tiny).  For a subnormal acc and normal X, Y
#     (exponent fields fX, fY): a zero product (both finite) leaves acc; a product below 2^-1075 (fX + fY <= 969)
#     leaves acc (N); an inf / NaN operand gives the same inf / NaN for any finite acc; and when
#     fX + fY >= 1129, XY is a multiple of g = 2^(fX + fY - 2150) >= 2^-1021 while every rounding boundary
#     (midpoint, overflow threshold) near XY is a multiple of 2^(eX + eY - 54), so XY + acc and XY + acc' lie
#     in the same open interval between boundaries (or XY is one and both lie on acc's side of it) for any acc'
#     of acc's sign with |acc'| < g: acc' = ±2^-1022 (normal) gives RN(XY + acc) exactly.  Products in between
#     are computed as they are (assisted, rare).
# (Z) A warp whose every product is below 2^-1075 (max fields fA + fB <= 969) leaves every nonzero C unchanged
#     (N): its subnormal C elements run as ±2^-1022 and are put back afterwards; without a zero C, D = C at once.
#
# How the steps are laid out (all of a warp's fmas are vector fmas of one row's eight lanes):
# (R) Rows are independent.  A warp without a NaN of A or a subnormal C runs in one pass (fma_rows8 / fma_rows8s,
#     four rows' chains interleaved).  Otherwise rows differ: row i takes chain steps lo[i] <= s < hi[i] in one
#     pass (hostfpu.fma_rows8m), a row at a time (masking steps inside an interleaved pass costs more than the
#     interleaving gains).
# (A) A NaN of A at chain step rn makes the row's accumulators NaN for good: the row stops before step rn
#     (hi = rn), and the accumulators there (SN) are what the NaN words need (see the end of _chain_f64).
# (S) A row with a subnormal C first takes branch-free vector steps that apply (C) lane by lane
#     (hostfpu.fma_row8c) while some accumulator is subnormal; the pass starts after them (lo).  Later subnormal
#     accumulators (cancellation) are computed as they are.


@njit(cache=True, nogil=True, inline="always")
def _field(u):
    return np.int64((u >> U64(52)) & U64(0x7FF))


@njit(cache=True, nogil=True, inline="always")
def _is_sub(u):
    return ((u & _EXP64) == _Z64) & ((u & _MANT64) != _Z64)


@njit(cache=True, nogil=True, inline="always")
def _up64(u):
    """2^64 times the subnormal (or zero) word u, from its integer mantissa: exact, no subnormal operation."""
    v = np.float64(np.int64(u & _MANT64)) * _TWO_M1010
    return -v if (u & _SIGN64) != _Z64 else v


@njit(cache=True, nogil=True, inline="always")
def _up64b(u):
    """:func:`_up64` as a word, by integer operations and one exact subtraction: the word 65 << 52 | m is
    2^-958 + m 2^-1010, and taking 2^-958 away leaves m 2^-1010 exactly (Sterbenz), a normal for m > 0."""
    v = _as_f64((U64(65) << U64(52)) | (u & _MANT64)) - _TWO_M958
    return _f64_bits(v) | (u & _SIGN64)


@link_only
@njit(nogil=True)
def _chain_f64(a, b, c, d, w0, w1, M, N, K, ta, tb, tc, td, p):
    """Warps w0..w1-1 of a DMMA chain (P_FIRST = from C): the host's fma chain without subnormal operations
    where they can be avoided (see above), and DMMA's NaN words.

    a, b, c, d: (W, 32 * elements) uint64 views of the register words, one element each;
    ta .. td: matrix position of each (A row-major, B row-major, C/D row-major).
    Everything is written out in this one function: a call, or an inlined helper, that takes arrays costs
    atomic reference counts per call, more than a row's arithmetic."""
    KN = K * N
    Au = np.empty(M * K, np.uint64)
    Bu = np.empty(KN, np.uint64)
    Cu = np.empty(M * N, np.uint64)
    C2 = np.empty(M * N, np.uint64)            # C with subnormals as ±2^-1022 (Z)
    Du = np.empty(M * N, np.uint64)
    Af, Bf, Cf, C2f, Df = (Au.view(np.float64), Bu.view(np.float64), Cu.view(np.float64), C2.view(np.float64),
                           Du.view(np.float64))
    XS = np.empty(M * K, np.float64)           # the A operands, subnormals times 2^64 (P)
    XSu = XS.view(np.uint64)
    VI = np.zeros(M * K, np.int64)             # the B version each A element pairs with: at 0, KN, 2 KN
    BVu = np.zeros(3 * KN, np.uint64)          # B against a normal a / a tiny a / a subnormal a
    BV = BVu.view(np.float64)
    SA = np.ones(3 * KN, np.float64)           # factor of a in each lane (2^-64 against a subnormal b)
    lo = np.empty(M, np.int64)                 # the chain steps each row takes in the pass
    hi = np.empty(M, np.int64)
    SN = np.empty(M * N, np.float64)           # the accumulators before each row's first NaN of A
    SNu = SN.view(np.uint64)
    desc = p[P_KORDER] == 1
    rn = np.empty(M, np.int64)
    STEP = np.empty(K, np.int64)               # the chain step of each k
    for k in range(K):
        STEP[k] = K - 1 - k if desc else k
    rw = np.empty(M, np.uint64)
    for w in range(w0, w1):
        for t in range(ta.shape[0]):
            Au[ta[t]] = a[w, t]
        for t in range(tb.shape[0]):
            Bu[tb[t]] = b[w, t]
        for t in range(tc.shape[0]):
            Cu[tc[t]] = c[w, t]
        # what the warp holds, by unsigned min / max reductions (they vectorise): the largest magnitude word
        # (its exponent field; above _EXP64: a NaN) and the smallest |u| - 1 (below _MANT64: a subnormal)
        xa, ma = _Z64, ~_Z64
        for t in range(M * K):
            u = Au[t] & _ABS64
            xa = u if u > xa else xa
            ma = u - U64(1) if u - U64(1) < ma else ma
        xb, mb = _Z64, ~_Z64
        for t in range(KN):
            u = Bu[t] & _ABS64
            xb = u if u > xb else xb
            mb = u - U64(1) if u - U64(1) < mb else mb
        mc, mz = ~_Z64, ~_Z64
        for t in range(M * N):
            u = Cu[t] & _ABS64
            mc = u - U64(1) if u - U64(1) < mc else mc
            mz = u if u < mz else mz
        rep = min(ma, mb) < _MANT64
        subc = mc < _MANT64
        nana = xa > _EXP64
        allneg = max(_field(xa), 1) + max(_field(xb), 1) <= _NEGL
        careful = subc and not allneg
        subst = subc and allneg
        rep = rep or nana or careful          # rows that differ run on the pairs (ranges of steps below)
        if rep:       # integer compares on |u| (no branches, no int -> float conversion): these loops vectorise
            for t in range(M * K):
                u = Au[t]
                mag = u & _ABS64
                sub = (mag != _Z64) & (mag < _MINNORM64)
                XSu[t] = _up64b(u) if sub else u
                VI[t] = 2 * KN if sub else (KN if (mag >= _MINNORM64) & (mag < _TINY64) else 0)
            for t in range(KN):
                u = Bu[t]
                mag = u & _ABS64
                sub = (mag != _Z64) & (mag < _MINNORM64)
                sur = (u & _SIGN64) | _MINNORM64
                BVu[t] = _up64b(u) if sub else u
                SA[t] = _TWO_M64 if sub else 1.0
                BVu[KN + t] = sur if sub else u
                small = (mag < _TINY64) & (mag != _Z64)
                BVu[2 * KN + t] = (u - _E64) if (mag >= _TINY64) & (mag < _EXP64) else (sur if small else u)
        if subst:
            for t in range(M * N):
                u = Cu[t]
                C2[t] = ((u & _SIGN64) | _MINNORM64) if _is_sub(u) else u
        # each row's first NaN of A in chain order: step rn (K if none), and that NaN quieted
        if nana:
            first_nan_steps(Au, STEP, rn, M, K)
        else:
            rn[:] = K
        for i in range(M):
            r = rn[i]
            rw[i] = Au[i * K + min(max(K - 1 - r if desc else r, 0), K - 1)] | _QUIET64
        plain = not (rep or subc)      # the ordinary warp: no replacement, no NaN of A, no subnormal C
        if plain:
            fma_rows8(Df, Cf, Af, Bf, 0, M, K, 0, K, desc)   # C to D in one call
        elif subst:
            for t in range(M * N):
                Df[t] = C2f[t]
        else:
            for t in range(M * N):
                Df[t] = Cf[t]
        # Every product negligible and no zero C: D = C (Z), no step to take.
        if plain or (allneg and mz != _Z64):
            pass
        elif not (nana or careful):
            if rep:
                fma_rows8s(Df, XS, VI, SA, BV, 0, M, K, 0, K, desc)
            else:
                fma_rows8(Df, Df, Af, Bf, 0, M, K, 0, K, desc)
        else:
            # rows that differ (R): careful steps first (S), then one pass in which row i takes its steps
            # lo[i] <= s < hi[i] (A: none from its first NaN of A on)
            for i in range(M):
                o = i * N
                e = rn[i]
                s = 0
                if careful:
                    nsub = 0
                    for j in range(N):
                        nsub += _is_sub(Du[o + j])
                    while nsub and s < e:
                        k = K - 1 - s if desc else s
                        nsub = fma_row8c(Df, o, XS[i * K + k], SA, BV, VI[i * K + k] + k * 8, _NEGL, _COARSE)
                        s += 1
                lo[i] = s
                hi[i] = e
            fma_rows8m(Df, XS, VI, SA, BV, 0, M, K, lo, hi, desc)
            if nana:
                for i in range(M):
                    if rn[i] < K:      # keep the accumulators before the row's first NaN of A; the row is NaN
                        o = i * N
                        for j in range(N):
                            SN[o + j] = Df[o + j]
                            Du[o + j] = F64_DEFAULT_NAN
        xd = _Z64
        for t in range(M * N):
            u = Du[t] & _ABS64
            xd = u if u > xd else xd
        if subst:
            for t in range(M * N):
                Du[t] = Cu[t] if _is_sub(Cu[t]) else Du[t]
        if xd > _EXP64:
            # A NaN result (NaN-ness is IEEE, so the host decides it) takes DMMA's NaN word.  DMMA's
            # fma(a, b, acc) gives b's NaN (quieted) if b is NaN, else acc if acc is NaN, else a's NaN, else the
            # default NaN if the operation is invalid.  So a NaN result holds the last NaN of its B column in chain
            # order (cw, 0 if none); else its NaN C; else, at the row's first NaN of A (step rn), that NaN (rw)
            # if the chain was not NaN before it, which SN (the host's accumulators before step rn) tells; else
            # the default NaN (an invalid operation, the only other way to a NaN).  One vector per row.
            nan_words8(Du, SNu, Cu, Bu, rw, rn, M, K, desc, _QUIET64, F64_DEFAULT_NAN)
        for t in range(td.shape[0]):
            d[w, t] = Du[td[t]]


@link_only
@njit(nogil=True)
def _chain_f32(a, b, c, d, w0, w1, P, M, N, K, ta, tb, tc, td, c16, d16, p, tab):
    """Warps w0..w1-1 of an f16-input chain worked in f32 with canonical NaNs (f16x4).

    a, b: (W, 32 * elements) uint16 views of the register words; c, d likewise, uint16
    (c16 / d16) or uint32; ta .. td: matrix position of each element."""
    R = P * M
    A = np.empty(R * K, np.float32)
    B = np.empty(P * K * N, np.float32)     # row-major B per product
    Cw = np.empty(R * N, np.float32)
    Cb = Cw.view(np.uint32)
    Df = np.empty(R * N, np.float32)
    Db = Df.view(np.uint32)
    S = np.empty(N, np.float32)
    group = p[P_GROUP]
    if group <= 0 or group > K:
        group = K
    ngroups = (K + group - 1) // group
    first = p[P_FIRST]
    cfirst = p[P_COMBINE] == COMBINE_C_FIRST
    desc = p[P_KORDER] == 1
    zero = np.float32(0.0)
    nanw = np.uint32(p[P_NAN_BITS] & 0xFFFFFFFF)
    for w in range(w0, w1):
        for t in range(ta.shape[0]):
            A[ta[t]] = tab[a[w, t]]
        for t in range(tb.shape[0]):
            B[tb[t]] = tab[b[w, t]]
        if c16:
            for t in range(tc.shape[0]):
                Cw[tc[t]] = tab[c[w, t]]
        else:
            for t in range(tc.shape[0]):
                Cb[tc[t]] = c[w, t]
        for r in range(R):
            pb = (r // M) * K * N
            o = r * N
            if N == 8 and not desc and first == FIRST_FFMA_ZERO and group == K and not cfirst:
                # the f32-D recipe, eight outputs in registers: fma chain from +0, then + C
                x = A[r * K]
                s0, s1, s2, s3 = (fma_native(x, B[pb], zero), fma_native(x, B[pb + 1], zero),
                                  fma_native(x, B[pb + 2], zero), fma_native(x, B[pb + 3], zero))
                s4, s5, s6, s7 = (fma_native(x, B[pb + 4], zero), fma_native(x, B[pb + 5], zero),
                                  fma_native(x, B[pb + 6], zero), fma_native(x, B[pb + 7], zero))
                for k in range(1, K):
                    x = A[r * K + k]
                    q = pb + k * 8
                    s0 = fma_native(x, B[q], s0)
                    s1 = fma_native(x, B[q + 1], s1)
                    s2 = fma_native(x, B[q + 2], s2)
                    s3 = fma_native(x, B[q + 3], s3)
                    s4 = fma_native(x, B[q + 4], s4)
                    s5 = fma_native(x, B[q + 5], s5)
                    s6 = fma_native(x, B[q + 6], s6)
                    s7 = fma_native(x, B[q + 7], s7)
                Df[o], Df[o + 1], Df[o + 2], Df[o + 3] = s0 + Cw[o], s1 + Cw[o + 1], s2 + Cw[o + 2], s3 + Cw[o + 3]
                Df[o + 4], Df[o + 5], Df[o + 6], Df[o + 7] = (s4 + Cw[o + 4], s5 + Cw[o + 5], s6 + Cw[o + 6],
                                                              s7 + Cw[o + 7])
                continue
            if first == FIRST_FROM_C:
                for j in range(N):
                    Df[o + j] = Cw[o + j]
                for kk in range(K):
                    k = K - 1 - kk if desc else kk
                    x = A[r * K + k]
                    for j in range(N):
                        Df[o + j] = fma_native(x, B[pb + k * N + j], Df[o + j])
                continue
            for g in range(ngroups):
                for t in range(group):
                    i = g * group + t
                    if i >= K:
                        break
                    k = K - 1 - i if desc else i
                    x = A[r * K + k]
                    bo = pb + k * N
                    if t == 0 and first == FIRST_FMUL:
                        for j in range(N):
                            S[j] = x * B[bo + j]
                    elif t == 0:
                        for j in range(N):
                            S[j] = fma_native(x, B[bo + j], zero)
                    else:
                        for j in range(N):
                            S[j] = fma_native(x, B[bo + j], S[j])
                if g == 0:
                    if cfirst:
                        for j in range(N):
                            Df[o + j] = Cw[o + j] + S[j]
                    else:
                        for j in range(N):
                            Df[o + j] = S[j]
                else:
                    for j in range(N):
                        Df[o + j] = Df[o + j] + S[j]
            if not cfirst:
                for j in range(N):
                    Df[o + j] = Df[o + j] + Cw[o + j]
        if d16:
            for t in range(td.shape[0]):
                d[w, t] = f32_to_f16_rne(Db[td[t]])
        else:
            for t in range(td.shape[0]):
                v = Db[td[t]]
                if (v & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
                    v = nanw
                d[w, t] = v


def _chain_fast(mode, a3, b3, c3, d3, P, M, N, K, ta, tb, tc, td, c16, d16, p, tab, q64, q32, chunk, ok):
    """a3 .. d3: (W, 32, elements) views of the register words as elements (C-contiguous)."""
    W = a3.shape[0]
    a = a3.reshape(W, a3.shape[1] * a3.shape[2])
    b = b3.reshape(W, b3.shape[1] * b3.shape[2])
    c = c3.reshape(W, c3.shape[1] * c3.shape[2])
    d = d3.reshape(W, d3.shape[1] * d3.shape[2])
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        # the FPU state is per thread: check it on the thread that runs the chunk
        ok[ch] = fp_env_ok(q64, q32)
        if not ok[ch]:
            continue
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if mode == FAST_F64:
            _chain_f64(a, b, c, d, w0, w1, M, N, K, ta, tb, tc, td, p)
        else:
            _chain_f32(a, b, c, d, w0, w1, P, M, N, K, ta, tb, tc, td, c16, d16, p, tab)


_fast_serial = njit(cache=True, nogil=True)(named_copy(_chain_fast, "_chain_fast_serial"))
_fast_parallel = njit(cache=True, nogil=True, parallel=True)(named_copy(_chain_fast, "_chain_fast_parallel"))

#: set to False to force the exact integer path everywhere (cross-checks)
FAST = True


def _fast_tables(ins: Instruction, tables):
    """Per operand: the matrix position of every register element, in register order.

    Element j of a lane sits in word j // (32 / bits) at bit (j % (32 / bits)) * bits (64-bit
    elements: words 2j, 2j + 1), so on a little-endian host a lane's words viewed as an array of
    elements hold element j at index j, and the whole warp at lane * elements + j.  B's position
    is made row-major per product (p*K*N + k*N + j)."""
    m, n, k = ins.mnk
    out = []
    for role, (flat, word, shift, bits) in zip("abcd", tables):
        j = np.arange(flat.shape[1])
        if bits == 64:
            ok = (word == 2 * j).all() and (shift == 0).all()
        else:
            per = 32 // bits
            ok = (word == j // per).all() and (shift == (j % per) * bits).all()
        if not ok:
            return None
        if role == "b":
            prod, rem = np.divmod(flat, k * n)
            col, row = np.divmod(rem, k)
            flat = prod * k * n + row * n + col
        out.append(np.ascontiguousarray(flat.ravel(), dtype=np.uint64))   # unsigned: no negative-index wraparound in the loops
    return tuple(out)


_ELEM = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _elements(x: np.ndarray, bits: int) -> np.ndarray:
    """(W, 32, words) uint32 -> (W, 32 * words * 32 / bits) view of the elements (little-endian)."""
    x = np.ascontiguousarray(x, dtype=np.uint32)
    return x.reshape(x.shape[0], -1).view(_ELEM[bits])


def chain_runner(ins: Instruction, params, tables, chunk: int, threshold: int):
    """A function (a, b, c, d) -> True when it computed D with the host-float fast path (False: some
    thread's FPU is not in its default state, D to be computed otherwise); None if no fast path
    applies to this recipe.  a, b, c, d: C-contiguous uint32 (W, 32, words)."""
    if not FAST or sys.byteorder != "little":
        return None
    mode = fast_mode(params)
    tabs = _fast_tables(ins, tables) if mode != FAST_NONE else None
    # DMMA: n = 8 (one vector a row), k a multiple of 4 (hostfpu.first_nan_steps)
    if tabs is None or (mode == FAST_F64 and (ins.products != 1 or ins.mnk[1] != 8 or ins.mnk[2] % 4)):
        return None
    m, n, k = ins.mnk
    bits = [t[3] for t in tables]
    ta, tb, tc, td = (np.dtype(_ELEM[x]) for x in bits)
    consts = (ins.products, m, n, k, *tabs, bits[2] == 16, bits[3] == 16, params, F16_TO_F32, PROBE64, PROBE32, chunk)

    def go(a, b, c, d):
        W = a.shape[0]
        fn = _fast_parallel if W >= threshold else _fast_serial
        ok = np.zeros((W + chunk - 1) // chunk, np.bool_)
        fn(mode, a.view(ta), b.view(tb), c.view(tc), d.view(td), *consts, ok)
        return bool(ok.all())

    return go
