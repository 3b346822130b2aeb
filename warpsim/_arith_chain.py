"""Exact scalar chains: the ``mma`` forms whose arithmetic is a sequence of IEEE operations.

Two families are computed this way on sm_90 (see ``docs/numerics_chain.md``):

* ``f16x4`` (``m8n8k4`` with f16 inputs) is emulated by ptxas with scalar f32
  instructions: every f16 element is widened to f32 exactly, the four products
  of one output are formed with FMUL / FFMA (each rounded to nearest even in
  f32), C (widened to f32 if it is f16) is added with FADD, and an f16 D is
  narrowed with one round-to-nearest-even conversion.
* ``f64`` runs natively on ``DMMA``; its result is what a chain of correctly
  rounded f64 fused multiply-adds produces (order in ``CHAIN_RECIPES``).

The reference path (:func:`chain_dot`) works on raw bit patterns held in ``uint64``;
it has no floating-point operations at all, so the host's rounding mode, flush-to-zero
setting or fused-multiply-add contraction cannot change a result.  The batched fast
path (:func:`run_fast`, used by the engine) computes the same IEEE operations on the
host FPU (``llvm.fma``, f32 add/multiply) and defers to :func:`chain_dot` wherever the
host cannot reproduce the hardware word (f64 NaN payloads), or everywhere if the FPU is
not in its default state (see the section "fast path" below).  One generic
routine, :func:`fma_bits`, computes ``round(a * b + c)`` exactly for any binary
format of at most 64 bits (given by exponent and mantissa widths): the product
is formed as a 128-bit integer held in two ``uint64`` words, ``c`` is aligned
with a sticky bit, and the sum is rounded once to nearest, ties to even, with
gradual underflow and overflow to infinity.  Addition is ``a * 1 + c`` and a
plain product is ``a * b + (-0)``, both exact identities including signed zeros.

Parameter vector ``p`` (int64) consumed by :func:`chain_dot`; build it with
:func:`chain_params`:

====  ==============  ===========================================================
idx   name            meaning
====  ==============  ===========================================================
0     P_KIND          1 = chain of scalar FMAs (the only kind so far)
1,2   P_AB_E, P_AB_M  exponent / mantissa bits of the A and B elements
3,4   P_C_E, P_C_M    exponent / mantissa bits of C
5,6   P_D_E, P_D_M    exponent / mantissa bits of D
7,8   P_W_E, P_W_M    exponent / mantissa bits of the working (accumulator) format
9     P_GROUP         products per partial chain (n means one chain over all k)
10    P_FIRST         first product of a partial chain: 0 = ``a*b`` (FMUL, keeps
                      the sign of an exact-zero product), 1 = ``fma(a, b, +0)``,
                      2 = ``fma(a, b, C)``: the chain starts from C itself
11    P_COMBINE       how partial chains and C meet when P_FIRST != 2:
                      0 = ``((C + S_0) + S_1) + ...``,
                      1 = ``((S_0 + S_1) + ...) + C``
                      (S_g: partial chain g, over products g*GROUP .. g*GROUP+GROUP-1)
12    P_KORDER        0 = products in ascending k, 1 = descending k
13    P_NAN           NaN results of every operation: 0 = always P_NAN_BITS;
                      otherwise a three-digit operand priority (1 = a, 2 = b,
                      3 = c of ``fma(a, b, c)``; 231 = b, then c, then a): the
                      first NaN operand in that order comes out quieted, and an
                      invalid operation (inf * 0, inf - inf) gives P_NAN_BITS
14    P_NAN_BITS      the NaN an invalid operation creates, raw bits in the
                      working format (as int64: 0xfff8000000000000 is negative)
15    P_DNAN          NaN when narrowing to D: 0 = D's canonical NaN (all ones
                      but the sign), 1 = keep the sign and the top mantissa bits
====  ==============  ===========================================================
"""

from __future__ import annotations

import sys
import types

import numpy as np
from numba import njit, prange

from ._catalog import Instruction
from ._types import TYPES

U64 = np.uint64
_Z = U64(0)
_ONE = U64(1)
_M32 = U64(0xFFFFFFFF)
_TOP = 124          # bit where normalised 128-bit significands keep their leading one

(P_KIND, P_AB_E, P_AB_M, P_C_E, P_C_M, P_D_E, P_D_M, P_W_E, P_W_M,
 P_GROUP, P_FIRST, P_COMBINE, P_KORDER, P_NAN, P_NAN_BITS, P_DNAN) = range(16)
N_PARAMS = 16

KIND_FMA_CHAIN = 1
FIRST_FMUL, FIRST_FFMA_ZERO, FIRST_FROM_C = 0, 1, 2
COMBINE_C_FIRST, COMBINE_C_LAST = 0, 1
NAN_CANONICAL = 0
NAN_PROPAGATE_ABC, NAN_PROPAGATE_BCA = 123, 231   # NaN operand priority, 1=a 2=b 3=c
NAN_PROPAGATE = NAN_PROPAGATE_ABC
F64_DEFAULT_NAN = U64(0xFFF8000000000000)


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
    if x >> U64(32):
        x >>= U64(32)
        n += 32
    if x >> U64(16):
        x >>= U64(16)
        n += 16
    if x >> U64(8):
        x >>= U64(8)
        n += 8
    if x >> U64(4):
        x >>= U64(4)
        n += 4
    if x >> U64(2):
        x >>= U64(2)
        n += 2
    if x >> U64(1):
        n += 1
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
        if guard and (sticky or (q & _ONE) != _Z):
            q += _ONE
    if top >= emin:
        field = np.int64(top + bias)
        bits = (U64(field - 1) << U64(mb)) + q      # a carry out of q bumps the exponent
    else:
        bits = q                                    # subnormal; q == 2**mb is the least normal
    if bits >= (_emask(eb) << U64(mb)):
        bits = _emask(eb) << U64(mb)                # overflow: infinity
    return bits | (sign << U64(eb + mb))


# --- the one fused operation ---------------------------------------------------------------

@njit(cache=True, nogil=True)
def fma_bits(a, b, c, eb, mb, nan_mode, dnan):
    """Correctly rounded (nearest even) a * b + c on raw bits of one binary format.

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
        return _round_pack(sp, ph, pl, pe, eb, mb)
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
        return _Z                                   # exact cancellation: +0 to nearest
    return _round_pack(s, rh, rl, e, eb, mb)


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


# --- the per-element entry point -----------------------------------------------------------

@njit(cache=True, nogil=True)
def _widen(x, e1, m1, e2, m2):
    """Exact widening into the working format (raw bits pass through when equal)."""
    if e1 == e2 and m1 == m2:
        return U64(x)
    return convert_bits(x, e1, m1, e2, m2, NAN_PROPAGATE)


@njit(cache=True, nogil=True)
def chain_dot(a, b, n, c, p):
    """One output element: D = C + sum_k A[k] * B[k] as the recipe p computes it.

    a, b: uint64 arrays of raw element bits (A row, B column, in k order, length >= n);
    c: raw bits of the C element; p: int64 parameter vector (module docstring).
    Returns the uint64 raw bits of D.
    """
    c = U64(c)
    abe, abm = p[P_AB_E], p[P_AB_M]
    we, wm = p[P_W_E], p[P_W_M]
    nm = p[P_NAN]
    dn = U64(p[P_NAN_BITS])
    group = p[P_GROUP]
    if group <= 0 or group > n:
        group = n
    first = p[P_FIRST]
    desc = p[P_KORDER] == 1
    wc = _widen(c, p[P_C_E], p[P_C_M], we, wm)
    if first == FIRST_FROM_C:
        acc = wc
        for i in range(n):
            k = n - 1 - i if desc else i
            x = _widen(a[k], abe, abm, we, wm)
            y = _widen(b[k], abe, abm, we, wm)
            acc = fma_bits(x, y, acc, we, wm, nm, dn)
    else:
        ngroups = (n + group - 1) // group
        acc = _Z
        for g in range(ngroups):
            s = _Z
            for j in range(group):
                i = g * group + j
                if i >= n:
                    break
                k = n - 1 - i if desc else i
                x = _widen(a[k], abe, abm, we, wm)
                y = _widen(b[k], abe, abm, we, wm)
                if j == 0:
                    if first == FIRST_FMUL:
                        s = mul_bits(x, y, we, wm, nm, dn)
                    else:
                        s = fma_bits(x, y, _Z, we, wm, nm, dn)
                else:
                    s = fma_bits(x, y, s, we, wm, nm, dn)
            if p[P_COMBINE] == COMBINE_C_FIRST:
                acc = add_bits(wc if g == 0 else acc, s, we, wm, nm, dn)
            else:
                acc = s if g == 0 else add_bits(acc, s, we, wm, nm, dn)
        if p[P_COMBINE] != COMBINE_C_FIRST:
            acc = add_bits(acc, wc, we, wm, nm, dn)
    de, dm = p[P_D_E], p[P_D_M]
    if de == we and dm == wm:
        return acc
    return convert_bits(acc, we, wm, de, dm, p[P_DNAN])


# --- recipes -------------------------------------------------------------------------------

#: What each form computes, per architecture, keyed by (family, D type, C type) of the
#: catalog entry; every shape and layout of a key shares the recipe (k comes from the
#: instruction).  Fitted on the H100 corpus and the deep H200 corpus: see
#: ``docs/numerics_chain.md`` and ``tools/fit_chain.py``.
CHAIN_RECIPES: dict[str, dict[tuple[str, str, str], dict]] = {
    "sm_90": {
        # m8n8k4 f16 -> f16: ptxas emits, per output, FMUL(k0) FFMA(k1) and FMUL(k2) FFMA(k3),
        # then FADD(C, S01), FADD(., S23), then F2FP.F16.F32.PACK_AB.
        ("f16x4", "f16", "f16"): dict(work="f32", group=2, first="fmul", combine="c_first",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        # m8n8k4 f16 -> f32: FFMA(k0, RZ) FFMA(k1) FFMA(k2) FFMA(k3), then FADD with C.
        ("f16x4", "f32", "f16"): dict(work="f32", group=0, first="ffma_zero", combine="c_last",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        ("f16x4", "f32", "f32"): dict(work="f32", group=0, first="ffma_zero", combine="c_last",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        # DMMA (all shapes): acc = C; acc = fma(A[k], B[k], acc) for k = 0, 1, ...
        ("f64", "f64", "f64"): dict(work="f64", group=0, first="from_c", combine="c_last",
                                    korder="asc", nan="bca", nan_bits=0xFFF8000000000000,
                                    d_nan="keep"),
    },
}

_FIRST = {"fmul": FIRST_FMUL, "ffma_zero": FIRST_FFMA_ZERO, "from_c": FIRST_FROM_C}
_COMBINE = {"c_first": COMBINE_C_FIRST, "c_last": COMBINE_C_LAST}
_KORDER = {"asc": 0, "desc": 1}
_DNAN = {"canonical": NAN_CANONICAL, "keep": 1}


def _nan_mode(name: str) -> int:
    if name == "canonical":
        return NAN_CANONICAL
    if sorted(name) != ["a", "b", "c"]:
        raise ValueError(f"NaN policy must be 'canonical' or a permutation of 'abc', not {name!r}")
    return int("".join(str("abc".index(ch) + 1) for ch in name))


def _as_int64(bits: int) -> int:
    return bits - (1 << 64) if bits >= 1 << 63 else bits


def chain_params(ins: Instruction, arch: str = "sm_90") -> np.ndarray:
    """The int64 parameter vector of :func:`chain_dot` for one catalog instruction."""
    if arch not in CHAIN_RECIPES:
        raise NotImplementedError(
            f"no scalar-chain recipes for {arch}; known: {sorted(CHAIN_RECIPES)}")
    key = (ins.family, ins.dtype, ins.ctype)
    recipe = CHAIN_RECIPES[arch].get(key)
    if recipe is None or ins.is_sparse:
        raise NotImplementedError(
            f"{ins.opcode} (family {ins.family}, D {ins.dtype}, C {ins.ctype}) is not computed by a "
            f"scalar chain on {arch}; chain recipes exist for {sorted(CHAIN_RECIPES[arch])}")
    if ins.atype != ins.btype:
        raise NotImplementedError(f"{ins.opcode}: mixed A/B types are not a chain form")
    ab, c, d, w = TYPES[ins.atype], TYPES[ins.ctype], TYPES[ins.dtype], TYPES[recipe["work"]]
    p = np.zeros(N_PARAMS, dtype=np.int64)
    p[P_KIND] = KIND_FMA_CHAIN
    p[P_AB_E], p[P_AB_M] = ab.exp_bits, ab.man_bits
    p[P_C_E], p[P_C_M] = c.exp_bits, c.man_bits
    p[P_D_E], p[P_D_M] = d.exp_bits, d.man_bits
    p[P_W_E], p[P_W_M] = w.exp_bits, w.man_bits
    p[P_GROUP] = recipe["group"] if recipe["group"] > 0 else ins.k
    p[P_FIRST] = _FIRST[recipe["first"]]
    p[P_COMBINE] = _COMBINE[recipe["combine"]]
    p[P_KORDER] = _KORDER[recipe["korder"]]
    p[P_NAN] = _nan_mode(recipe["nan"])
    p[P_NAN_BITS] = _as_int64(recipe["nan_bits"])
    p[P_DNAN] = _DNAN[recipe["d_nan"]]
    return p


# --- fast path: the host's own IEEE arithmetic ---------------------------------------------
#
# Every chain recipe is a sequence of correctly rounded IEEE operations (nearest even,
# gradual underflow, overflow to infinity).  The host FPU computes exactly those, given
# round-to-nearest and no flush-to-zero / denormals-are-zero -- the state numpy and numba
# leave the FPU in, checked at every call by ``_fp_env_ok`` (any other state takes the
# exact integer path).  ``llvm.fma`` is correctly rounded by definition (x86 FMA3, or a
# libm call without it); numba never marks operations ``contract``/fast-math here, so
# LLVM neither fuses nor reorders anything else.  What the host does *not* reproduce is
# the hardware's NaN words, so:
#
# * f64 (NaN payloads propagate, b > c > a; invalid gives 0xfff8...): an element whose
#   fast result is not finite is recomputed by :func:`chain_dot`.  A finite result is
#   exact: with finite inputs every step is an IEEE fma on finite values, and once an
#   intermediate is infinite (or NaN, from a non-finite input) it never becomes finite.
# * f32 work with canonical NaNs (f16x4): NaN-ness itself is IEEE, so a NaN result is
#   replaced by the canonical word; no fallback is needed.  Inputs are widened exactly
#   (f16 -> f32 via a table), an f16 D is narrowed with integer nearest-even rounding.

from llvmlite import ir
from numba import types as _nbt
from numba.core import cgutils
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def fma_native(typingctx, x, y, z):
    """Correctly rounded x * y + z on host floats (``llvm.fma``); all three of one float type."""
    if not (isinstance(x, _nbt.Float) and x == y and y == z and x in (_nbt.float32, _nbt.float64)):
        return None
    sig = x(x, y, z)

    def codegen(context, builder, signature, args):
        ty = args[0].type
        fnty = ir.FunctionType(ty, [ty, ty, ty])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma." + ("f64" if ty == ir.DoubleType() else "f32"))
        return builder.call(fn, args)

    return sig, codegen


#: probe operands for _fp_env_ok (passed as data so that LLVM cannot fold them)
_PROBE64 = np.array([2.0 ** -1022, 0.5, 0.0, 2.0 ** -1023, 2.0, 1.0, 2.0 ** -53, 3 * 2.0 ** -54],
                    dtype=np.float64)
_PROBE32 = _PROBE64.astype(np.float32)
_PROBE32[:5] = np.array([2.0 ** -126, 0.5, 0.0, 2.0 ** -127, 2.0], dtype=np.float32)
_PROBE32[6:] = np.array([2.0 ** -24, 3 * 2.0 ** -25], dtype=np.float32)


@njit(cache=True, nogil=True)
def _fp_env_ok(q64, q32):
    """Whether the host rounds to nearest even and keeps subnormals (no FTZ / DAZ), f64 and f32."""
    return _probe_ok(q64) and _probe_ok(q32)


@njit(cache=True, nogil=True)
def _probe_ok(q):
    """One format (q: tiny normal, 1/2, 0, tiny/2, 2, 1, half an ulp of 1, 3/4 ulp of 1)."""
    tiny, half, zero, sub, two, one, tie, above = q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]
    if fma_native(tiny, half, zero) != sub:          # FTZ flushes the subnormal result
        return False
    if fma_native(sub, two, zero) != tiny:           # DAZ flushes the subnormal input
        return False
    if sub * two != tiny or tiny * half != sub or sub + sub != tiny:
        return False
    if fma_native(one, one, tie) != one or one + tie != one:        # tie -> even (not up)
        return False
    if fma_native(one, one, above) == one or one + above == one:    # above half -> up (not RZ/RD)
        return False
    if fma_native(-one, one, -above) == -one or -one - above == -one:  # not RU / RZ
        return False
    return True


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


@njit(cache=True, nogil=True)
def _chain_f64(a, b, c, d, w0, w1, M, N, K, ta, tb, tc, td, p):
    """Warps w0..w1-1 of a DMMA chain (P_FIRST = from C): fast fma chain, exact fallback.

    a, b, c, d: (W, 32 * elements) uint64 views of the register words, one element each;
    ta .. td: matrix position of each (A row-major, B row-major, C/D row-major)."""
    Au = np.empty(M * K, np.uint64)
    Bu = np.empty(K * N, np.uint64)
    Cu = np.empty(M * N, np.uint64)
    Du = np.empty(M * N, np.uint64)
    Af = Au.view(np.float64)
    Bf = Bu.view(np.float64)
    Cf = Cu.view(np.float64)
    Df = Du.view(np.float64)
    Bcol = np.empty(K, np.uint64)
    desc = p[P_KORDER] == 1
    for w in range(w0, w1):
        for t in range(ta.shape[0]):
            Au[ta[t]] = a[w, t]
        for t in range(tb.shape[0]):
            Bu[tb[t]] = b[w, t]
        for t in range(tc.shape[0]):
            Cu[tc[t]] = c[w, t]
        if N == 8 and not desc:
            for i in range(M):
                o = i * 8
                c0, c1, c2, c3 = Cf[o], Cf[o + 1], Cf[o + 2], Cf[o + 3]
                c4, c5, c6, c7 = Cf[o + 4], Cf[o + 5], Cf[o + 6], Cf[o + 7]
                for k in range(K):
                    x = Af[i * K + k]
                    q = k * 8
                    c0 = fma_native(x, Bf[q], c0)
                    c1 = fma_native(x, Bf[q + 1], c1)
                    c2 = fma_native(x, Bf[q + 2], c2)
                    c3 = fma_native(x, Bf[q + 3], c3)
                    c4 = fma_native(x, Bf[q + 4], c4)
                    c5 = fma_native(x, Bf[q + 5], c5)
                    c6 = fma_native(x, Bf[q + 6], c6)
                    c7 = fma_native(x, Bf[q + 7], c7)
                Df[o], Df[o + 1], Df[o + 2], Df[o + 3] = c0, c1, c2, c3
                Df[o + 4], Df[o + 5], Df[o + 6], Df[o + 7] = c4, c5, c6, c7
        else:
            for i in range(M):
                for j in range(N):
                    Df[i * N + j] = Cf[i * N + j]
                for kk in range(K):
                    k = K - 1 - kk if desc else kk
                    x = Af[i * K + k]
                    for j in range(N):
                        Df[i * N + j] = fma_native(x, Bf[k * N + j], Df[i * N + j])
        for t in range(M * N):
            if (Du[t] & _EXP64) == _EXP64:          # inf or NaN: the hardware's NaN rules decide
                i = t // N
                j = t - i * N
                for k in range(K):
                    Bcol[k] = Bu[k * N + j]
                Du[t] = chain_dot(Au[i * K:(i + 1) * K], Bcol, K, Cu[t], p)
        for t in range(td.shape[0]):
            d[w, t] = Du[td[t]]


@njit(cache=True, nogil=True)
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


def _chain_fast(mode, a, b, c, d, P, M, N, K, ta, tb, tc, td, c16, d16, p, tab, q64, q32, chunk, ok):
    W = a.shape[0]
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        # the FPU state is per thread: check it on the thread that runs the chunk
        ok[ch] = _fp_env_ok(q64, q32)
        if not ok[ch]:
            continue
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if mode == FAST_F64:
            _chain_f64(a, b, c, d, w0, w1, M, N, K, ta, tb, tc, td, p)
        else:
            _chain_f32(a, b, c, d, w0, w1, P, M, N, K, ta, tb, tc, td, c16, d16, p, tab)


def _named(fn, name):
    """A copy of ``fn`` under another name (distinct numba cache slots; see ``_engine._named``)."""
    f = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    f.__qualname__ = name
    return f


_fast_serial = njit(cache=True, nogil=True)(_named(_chain_fast, "_chain_fast_serial"))
_fast_parallel = njit(cache=True, nogil=True, parallel=True)(_named(_chain_fast, "_chain_fast_parallel"))

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
        out.append(np.ascontiguousarray(flat.ravel(), dtype=np.int64))
    return tuple(out)


_ELEM = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _elements(x: np.ndarray, bits: int) -> np.ndarray:
    """(W, 32, words) uint32 -> (W, 32 * words * 32 / bits) view of the elements (little-endian)."""
    x = np.ascontiguousarray(x, dtype=np.uint32)
    return x.reshape(x.shape[0], -1).view(_ELEM[bits])


_FAST_CACHE: dict = {}


def run_fast(ins: Instruction, params, tables, a, b, c, d, parallel: bool, chunk: int) -> bool:
    """Compute D with the host-float fast path; False (D to be computed otherwise) if none applies."""
    if not FAST or sys.byteorder != "little":
        return False
    key = (ins.opcode, params.tobytes())
    ent = _FAST_CACHE.get(key)
    if ent is None:
        mode = fast_mode(params)
        tabs = _fast_tables(ins, tables) if mode != FAST_NONE else None
        if tabs is None or (mode == FAST_F64 and ins.products != 1):
            mode = FAST_NONE
        ent = (mode, tabs)
        _FAST_CACHE[key] = ent
    mode, tabs = ent
    if mode == FAST_NONE:
        return False
    m, n, k = ins.mnk
    bits = [t[3] for t in tables]
    av, bv, cv = (_elements(x, bt) for x, bt in zip((a, b, c), bits))
    dv = d.reshape(d.shape[0], -1).view(_ELEM[bits[3]])      # d is a fresh C-contiguous array
    fn = _fast_parallel if parallel else _fast_serial
    ok = np.zeros((a.shape[0] + chunk - 1) // chunk, np.bool_)
    fn(mode, av, bv, cv, dv, ins.products, m, n, k, *tabs, bits[2] == 16, bits[3] == 16, params, F16_TO_F32,
       _PROBE64, _PROBE32, chunk, ok)
    return bool(ok.all())     # False: some thread's FPU is not in its default state; caller redoes all
