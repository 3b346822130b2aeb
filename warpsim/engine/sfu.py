"""The special-function unit, jitted: every PTX form of :mod:`warpsim.ptx.sfu_ops` as one scalar
numba function per element over the same hardware tables, word for word the numpy model of
:mod:`warpsim.numerics.sfu` (the readable reference) and ptxas's SASS sequence around it.

Why it is fast: for ``RCP``, ``RSQ``, ``SQRT`` and ``EX2`` a fitted quadratic per 1024 table entries
predicts the table word, used only where it provably is the word (see "the fitted tables" below): most
operands never read a table, and the prediction loop vectorises.  The rest, and every special operand,
take the exact scalar path, whose f32 tables are kept as the *difference* to a cheap IEEE reference
(int8, 8 MiB a table instead of 32 MiB of words): ``RCP``,
``RSQ``, ``SQRT`` use the committed differences to ``1/x``, ``1/sqrt(x)``, ``sqrt(x)`` in float64
directly; ``EX2`` gets differences to a 256-entry table times a degree-5 polynomial, computed once
here by the same jitted code that evaluates them.  Everything is IEEE float64 +, *, /, sqrt (never
fastmath; numba contracts nothing), exact only while the host rounds to nearest and keeps
subnormals, which every chunk checks (:func:`~warpsim.engine.hostfpu.fp_env_ok`).  The wrappers'
FMUL is the float64 product of two f32 (exact) rounded once to f32; ``rsqrt.approx.f64``'s DFMA is
``llvm.fma`` (correctly rounded) with the canonical NaN.

``LG2``, ``SIN``, ``COS``, ``TANH`` (f32) read the numpy model's word tables one element at a time.

Adding a unit: a scalar ``_mufu_*`` function, a code in the form kernel of its operand kind
(``_f32_kernel`` / ``_table_kernel`` / ``_f64_kernel`` / ``_half_kernel``) and its rows in :data:`FORMS`
(a fitted one: its entry in :data:`FITTED`, then :func:`build_fits`).  Forms not listed stay on the
numpy model (``sfu_ops.FORMS`` falls back to it).
"""

from __future__ import annotations

import os
import threading

import numpy as np
from numba import njit, prange

from llvmlite import ir
from numba import types as _nbt
from numba.core import cgutils
from numba.extending import intrinsic

from ..numerics import sfu as _ref
from .hostfpu import PROBE32, PROBE64, fma_native, fp_env_ok
from .jitcache import named_copy
from .linking import link_only, unlinked

#: elements per call above which the parallel kernels run; elements per chunk
PARALLEL_THRESHOLD = int(os.environ.get("WARPSIM_SFU_PARALLEL_THRESHOLD", str(1 << 16)))
CHUNK = 1 << 14

_U = np.uint32
_NAN = _U(0x7FFFFFFF)
_SIGN = _U(0x80000000)
_INF = _U(0x7F800000)
_MANT = _U(0x7FFFFF)

# f32 form codes (the kernel's dispatch table)
RCP, RSQRT, SQRT, EX2, DIV_FULL, DIV_APPROX = range(6)
# f64 form codes
RCP64, RSQRT64 = range(2)


@intrinsic
def _prefetch(typingctx, arr, i):
    """Ask for the cache line of arr[i] (``llvm.prefetch``, read); no bounds check, never faults."""
    if not (isinstance(arr, _nbt.Array) and isinstance(i, _nbt.Integer)):
        return None

    def codegen(context, builder, signature, args):
        a = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return _nbt.void(arr, _nbt.intp), codegen


# ----------------------------------------------------------------------------------------------
# scalar helpers on f32 words

@njit(cache=True, nogil=True, inline="always")
def _val(u):
    """The f32 word as float64 (exact, subnormals kept)."""
    return np.float64(_U(u).view(np.float32))


@njit(cache=True, nogil=True, inline="always")
def _word(x):
    """float64 -> f32 word, rounded to nearest once."""
    return np.float32(x).view(np.uint32)


@njit(cache=True, nogil=True, inline="always")
def _flush(u):
    return _U(u & _SIGN) if (u & _INF) == 0 else _U(u)


@njit(cache=True, nogil=True, inline="always")
def _fmul(a, b, ftz):
    """FMUL: the product of two f32 is exact in float64, one rounding to f32; NaN 0x7fffffff."""
    if ftz:
        a = _flush(a)
        b = _flush(b)
    p = _val(a) * _val(b)
    if p != p:
        return _NAN
    r = _word(p)
    return _flush(r) if ftz else _U(r)


@njit(cache=True, nogil=True, inline="always")
def _shift(t, k, bits):
    """Add k to the exponent field (at bit ``bits``) of a table word, as integer arithmetic."""
    return _U((np.int64(t) + (np.int64(k) << bits)) & 0xFFFFFFFF)


# ----------------------------------------------------------------------------------------------
# the MUFU operations on f32 words (each as numerics/sfu.py's numpy version)

@njit(cache=True, nogil=True, inline="always")
def _mufu_rcp(u, d):
    s = u & _SIGN
    e = np.int64((u >> _U(23)) & _U(0xFF))
    m = u & _MANT
    if e == 0:
        return _U(s | _INF)
    if e == 255:
        return _NAN if m != 0 else _U(s)
    if e >= 253:
        return _flush(_word(1.0 / _val(u)))
    t = np.int64(_word(1.0 / _val(m | _U(0x3F800000)))) + np.int64(d[m])
    return _U(_shift(t, 127 - e, 23) | s)


@njit(cache=True, nogil=True, inline="always")
def _mufu_root(u, d_odd, d_even, rsq):
    s = u & _SIGN
    e = np.int64((u >> _U(23)) & _U(0xFF))
    m = u & _MANT
    if e == 255 and m != 0:
        return _NAN
    if s == 0 and e == 255:
        return _U(0) if rsq else _INF
    if s != 0 and e != 0:
        return _NAN
    if e == 0:
        return _U(s | _INF) if rsq else _U(s)
    if e & 1:
        c = _val(m | _U(0x3F800000))
        t = np.int64(d_odd[m])
        k = (127 - e) // 2
    else:
        c = _val(m | _U(0x40000000))
        t = np.int64(d_even[m])
        k = (128 - e) // 2
    if rsq:
        t += np.int64(_word(1.0 / np.sqrt(c)))
    else:
        t += np.int64(_word(np.sqrt(c)))
        k = -k
    return _shift(t, k, 23)


_LN2 = 0.6931471805599453


@njit(cache=True, nogil=True, inline="always")
def _ex2_ref(fr, neg, seg):
    """The reference EX2 word for fraction bits fr of +-(1 + f): 2**(+-(1 + f)) in float64 as
    seg[j] * p(r) (j the top 8 fraction bits, p degree 5), rounded to f32.  Deterministic."""
    j = fr >> 15
    t = np.float64(fr & 0x7FFF) * (1.0 / 8388608.0) * _LN2
    if neg:
        t = -t
    p = 1.0 + t * (1.0 + t * (0.5 + t * (1.0 / 6.0 + t * (1.0 / 24.0 + t * (1.0 / 120.0)))))
    if neg:
        return _word(0.5 * (seg[1, j] * p))
    return _word(2.0 * (seg[0, j] * p))


@njit(cache=True, nogil=True, inline="always")
def _ex2_fixed(u):
    """|x| in fixed point with 23 fraction bits, truncated (the exponent clamped: larger saturate anyway)."""
    e = np.int64((u >> _U(23)) & _U(0xFF))
    sh = e - 127
    sig = np.int64(u & _MANT) | (1 << 23)
    if e == 0:
        return np.int64(0)
    if sh >= 0:
        return sig << min(sh, 30)
    return sig >> min(-sh, 63)


@njit(cache=True, nogil=True, inline="always")
def _mufu_ex2(u, d_pos, d_neg, seg):
    s = u >> _U(31)
    e = np.int64((u >> _U(23)) & _U(0xFF))
    m = u & _MANT
    if e == 255:
        if m != 0:
            return _NAN
        return _INF if s == 0 else _U(0)
    fixed = _ex2_fixed(u)
    ip = min(fixed >> 23, 200)
    fr = fixed & 0x7FFFFF
    if s == 0:
        if ip >= 128:
            return _INF
        t = np.int64(_ex2_ref(fr, False, seg)) + np.int64(d_pos[fr])
        return _shift(t, ip - 1, 23)
    t = np.int64(_ex2_ref(fr, True, seg)) + np.int64(d_neg[fr])
    if ((t >> 23) & 0xFF) + 1 - ip < 1:
        return _U(0)                                  # results below 2**-126 flush to +0
    return _shift(t, 1 - ip, 23)


# ----------------------------------------------------------------------------------------------
# the PTX forms: ptxas's SASS around the MUFU (as sfu_ops' numpy functions)

_TWO24 = _U(0x4B800000)        # 2**24
_QUARTER = _U(0x3E800000)      # 0.25
_HALF = _U(0x3F000000)
_M126 = _U(0x00800000)         # 2**-126
_P126 = _U(0x7E800000)         # 2**126


@njit(cache=True, nogil=True, inline="always")
def _small(x):
    """not FSETP.GEU |x|, 2**-126 (false for NaN)."""
    return (x & _NAN) < _M126


@njit(cache=True, nogil=True, inline="always")
def _big(x):
    """FSETP.GT |x|, 2**126 (ordered)."""
    mag = x & _NAN
    return mag > _P126 and mag <= _INF


@njit(cache=True, nogil=True, inline="always")
def _rcp_form(a, ftz, d):
    if ftz or not (_small(a) or _big(a)):
        return _mufu_rcp(a, d)
    s = _QUARTER if _big(a) else (_TWO24 if _small(a) else _U(0x3F800000))
    return _fmul(s, _mufu_rcp(_fmul(a, s, False), d), False)


@njit(cache=True, nogil=True, inline="always")
def _root_form(a, ftz, d0, d1, rsq):
    if ftz or not _small(a):
        return _mufu_root(a, d0, d1, rsq)
    back = _U(0x45800000) if rsq else _U(0x39800000)          # 4096 or 2**-12
    return _fmul(_mufu_root(_fmul(a, _TWO24, False), d0, d1, rsq), back, False)


@njit(cache=True, nogil=True, inline="always")
def _ex2_form(a, ftz, d0, d1, seg):
    if ftz or not (_val(a) < -126.0):
        return _mufu_ex2(a, d0, d1, seg)
    r = _mufu_ex2(_fmul(a, _HALF, False), d0, d1, seg)        # halve, square the result
    return _fmul(r, r, False)


@njit(cache=True, nogil=True, inline="always")
def _div_form(a, b, ftz, full, d):
    big = full and _big(b)
    small = (not ftz) and (not big) and _small(b)
    if big:
        a = _fmul(a, _QUARTER, ftz)
        b = _fmul(b, _QUARTER, ftz)
    elif small:
        a = _fmul(a, _TWO24, False)
        b = _fmul(b, _TWO24, False)
    return _fmul(_mufu_rcp(b, d), a, ftz)


# ----------------------------------------------------------------------------------------------
# the fitted tables: what makes the f32 forms fast
#
# A quadratic per segment of 2**FIT_BITS table entries predicts each hardware table word (as an integer);
# where the prediction lies further than ``lim`` (per segment) from a rounding boundary it is the word,
# and the fast loop computes the result from it without touching the 8 MiB table.  ``lim`` comes from
# comparing the prediction with every entry of the table at load time (:func:`_fit`), with the very
# function the kernel runs, so a prediction used is never a wrong one.  The rest (5-10% of random
# operands, and every special, subnormal or out-of-range operand) goes down the exact scalar path.

FIT_BITS = 10
_FIT_ENTRIES = 1 << FIT_BITS
_BLOCK = 512                   # elements per pass (the buffers stay in L1)
_LIM_STEPS = 256.0             # lim is stored in 1/256ths, rounded down


@njit(cache=True, nogil=True, inline="always")
def _fit_index(code, u):
    """The fitted table entry the fast path reads for operand word u: the significand, with the
    exponent's parity (RSQ, SQRT: tables [1, 2) then [2, 4)) or the sign (EX2: + then -) above it."""
    if code == EX2:
        return (_ex2_fixed(u) & 0x7FFFFF) | (np.int64(u >> _U(31)) << 23)
    m = np.int64(u & _MANT)
    if code == RSQRT or code == SQRT:
        return m | (np.int64(((u >> _U(23)) & _U(1)) ^ _U(1)) << 23)
    return m


@njit(cache=True, nogil=True, inline="always")
def _predict(i, c0, c12):
    """(predicted table word, distance to the nearest integer boundary test passed) for entry i of its
    segment's fit: c0 float64, c12 the int64 of (c1 f32 bits) << 32 | (c2 f32 bits with lim in the low
    8 bits)."""
    t = np.float64(i & (_FIT_ENTRIES - 1)) * (1.0 / _FIT_ENTRIES)
    c1 = np.uint32(c12 >> 32).view(np.float32)
    lo = np.uint32(c12 & 0xFFFFFFFF)
    c2 = np.uint32(lo & np.uint32(0xFFFFFF00)).view(np.float32)
    lim = np.float64(lo & np.uint32(0xFF)) * (1.0 / _LIM_STEPS)
    q = c0 + t * (np.float64(c1) + t * np.float64(c2))
    w = np.floor(q + 0.5)
    return np.int64(w), abs(q - w) < lim


@njit(cache=True, nogil=True)
def _fit_scan(c0, c12, words, out_word, out_dist):
    """The prediction of every entry (for the load-time fit): word and |q - word|."""
    for i in range(words.size):
        s = i >> FIT_BITS
        t = np.float64(i & (_FIT_ENTRIES - 1)) * (1.0 / _FIT_ENTRIES)
        c1 = np.uint32(c12[s] >> 32).view(np.float32)
        c2 = np.uint32(np.uint32(c12[s] & 0xFFFFFFFF) & np.uint32(0xFFFFFF00)).view(np.float32)
        q = c0[s] + t * (np.float64(c1) + t * np.float64(c2))
        w = np.floor(q + 0.5)
        out_word[i] = np.int64(w)
        out_dist[i] = abs(q - w)


@njit(cache=True, nogil=True)
def _fit_check(c0, c12, words):
    """Entries whose prediction passes its test and is not the hardware word (must be none)."""
    bad = 0
    for i in range(words.size):
        w, ok = _predict(i, c0[i >> FIT_BITS], c12[i >> FIT_BITS])
        if ok and w != np.int64(words[i]):
            bad += 1
    return bad


@njit(cache=True, nogil=True)
def _canonical_words(code, d0, d1, seg, out):
    """The hardware word of every fitted entry: the scalar MUFU on the canonical operand of the entry."""
    half = 1 << 23
    for i in range(out.size):
        m = _U(i & 0x7FFFFF)
        if code == RCP:
            out[i] = _mufu_rcp(m | _U(0x3F800000), d0)
        elif code == EX2:
            out[i] = _mufu_ex2(m | (_U(0x3F800000) if i < half else _U(0xBF800000)), d0, d1, seg)
        else:
            out[i] = _mufu_root(m | (_U(0x3F800000) if i < half else _U(0x40000000)), d0, d1, code == RSQRT)


def _fit(code, d0, d1, seg):
    """The per-segment quadratics of one unit and their ``lim``, from every word of its tables."""
    n = (1 << 23) if code == RCP else (1 << 24)
    words = np.empty(n, np.uint32)
    _canonical_words(code, d0, d1, seg, words)
    nseg = n >> FIT_BITS
    t = np.arange(_FIT_ENTRIES, dtype=np.float64) / _FIT_ENTRIES
    vand = np.stack([np.ones_like(t), t, t * t], axis=1)
    coef = np.linalg.solve(vand.T @ vand, vand.T @ words.astype(np.float64).reshape(nseg, _FIT_ENTRIES).T)
    c0 = np.ascontiguousarray(coef[0])
    c1 = coef[1].astype(np.float32).view(np.uint32).astype(np.int64)
    c2 = (coef[2].astype(np.float32).view(np.uint32) & np.uint32(0xFFFFFF00)).astype(np.int64)
    c12 = (c1 << 32) | c2
    pw, dist = np.empty(n, np.int64), np.empty(n, np.float64)
    _fit_scan(c0, c12, words, pw, dist)
    wrong = pw != words.astype(np.int64)
    lim = np.where(wrong, dist, 0.5).reshape(nseg, _FIT_ENTRIES).min(axis=1)
    steps = np.clip(np.floor(lim * _LIM_STEPS), 0, 255).astype(np.int64)
    c12 = c12 | steps
    bad = _fit_check(c0, c12, words)
    if bad:
        raise AssertionError(f"MUFU fit (code {code}): {bad} predictions pass their test and are wrong")
    return c0, c12


@njit(cache=True, nogil=True, inline="always")
def _f32_fast(code, ftz, u, v, c0, c12):
    """(word, exact) of one f32 form on operand words u (v: the dividend of a division) from the
    fitted prediction; exact is False where the scalar path must decide."""
    e = np.int64((u >> _U(23)) & _U(0xFF))
    i = _fit_index(code, u)
    w, ok = _predict(i, c0, c12)
    if code == RCP:
        r = ((w + ((127 - e) << 23)) & 0xFFFFFFFF) | np.int64(u & _SIGN)
        return _U(r), ok & (e >= 1) & (e <= 252)
    if code == RSQRT or code == SQRT:
        k = (127 - e) >> 1 if (e & 1) == 1 else (128 - e) >> 1
        k = k if code == RSQRT else -k
        r = (w + (k << 23)) & 0xFFFFFFFF
        return _U(r), ok & ((u >> _U(31)) == 0) & (e >= 1) & (e <= 254)
    if code == EX2:
        ip = _ex2_fixed(u) >> 23
        sh = ip - 1 if (u >> _U(31)) == 0 else 1 - ip
        r = (w + (sh << 23)) & 0xFFFFFFFF
        return _U(r), ok & (e < 133)
    # division: a * RCP(b), b the operand u, the dividend v
    r = _U(((w + ((127 - e) << 23)) & 0xFFFFFFFF) | np.int64(u & _SIGN))
    ea = np.int64((v >> _U(23)) & _U(0xFF))
    p = _val(r) * _val(v)
    q = _word(p)
    eq = np.int64((q >> _U(23)) & _U(0xFF))
    return q, ok & (e >= 1) & (e <= 252) & (ea >= 1) & (ea <= 254) & (eq >= 1) & (eq <= 254)


@link_only
@njit(nogil=True)
def _f32_exact(code, ftz, a, b, d0, d1, seg):
    if code == RCP:
        return _rcp_form(a, ftz, d0)
    if code == RSQRT:
        return _root_form(a, ftz, d0, d1, True)
    if code == SQRT:
        return _root_form(a, ftz, d0, d1, False)
    if code == EX2:
        return _ex2_form(a, ftz, d0, d1, seg)
    return _div_form(a, b, ftz, code == DIV_FULL, d0)


@njit(cache=True, nogil=True, _nrt=False)
def f32_range(code, ftz, a, b, out, lo, hi, d0, d1, seg, c0, c12, p0, p1, slow, left):
    """out[lo:hi] of one form in blocks of p0.size (scratch p0 .. left, of one size): the fit's
    coefficients loaded per element (scalar loads: faster than vector gathers here), the prediction as
    one vectorised loop, then the exact scalar path for the elements it left (their table entries
    prefetched together first).  One compiled body for the bulk kernel and the native translator's
    lanes (a warp's active lanes: one call per warp and statement, scratch of 32 entries): it inlines
    every unit, which takes numba a minute to compile.  Without numba's reference counting
    (``_nrt=False``: it allocates nothing; its callers hold the arrays): the counts on its sixteen
    arrays cost ~60 ns a call, a fifth of a warp's lanes."""
    x = b if code == DIV_FULL or code == DIV_APPROX else a       # the MUFU's operand
    blk = p0.size
    for s in range(lo, hi, blk):
        n = min(hi, s + blk) - s
        for j in range(n):
            g = _fit_index(code, x[s + j]) >> FIT_BITS
            p0[j] = c0[g]
            p1[j] = c12[g]
        if _f32_block(code, ftz, x, a, out, s, n, p0, p1, slow) == 0:
            continue
        nleft = 0
        for j in range(n):
            left[nleft] = s + j
            nleft += slow[j]
        _touch(code, x, left, nleft, d0, d1)
        for k in range(nleft):
            i = left[k]
            out[i] = _f32_exact(code, ftz, a[i], b[i], d0, d1, seg)


@njit(cache=True, nogil=True, inline="always")
def _touch(code, x, left, nleft, d0, d1):
    """Prefetch the table entries of the elements left to the exact path: each is a cache miss, and
    here they are all in flight at once rather than one at a time (plain loads in this loop became
    vector gathers, which keep few misses in flight)."""
    for k in range(nleft):
        i = _fit_index(code, x[left[k]])
        _prefetch(d1 if i >> 23 else d0, i & 0x7FFFFF)


@njit(cache=True, nogil=True, inline="always")
def _block_loop(code, ftz, x, a, out, s, n, p0, p1, slow):
    nslow = 0
    for j in range(n):
        w, ok = _f32_fast(code, ftz, x[s + j], a[s + j], p0[j], p1[j])
        out[s + j] = w
        bad = np.uint8(1) - np.uint8(ok)
        slow[j] = bad
        nslow += bad
    return nslow


@njit(cache=True, nogil=True, inline="always")
def _f32_block(code, ftz, x, a, out, s, n, p0, p1, slow):
    """The prediction loop, one per unit (a constant code: the loop vectorises)."""
    if code == RCP:
        return _block_loop(RCP, ftz, x, a, out, s, n, p0, p1, slow)
    if code == RSQRT:
        return _block_loop(RSQRT, ftz, x, a, out, s, n, p0, p1, slow)
    if code == SQRT:
        return _block_loop(SQRT, ftz, x, a, out, s, n, p0, p1, slow)
    if code == EX2:
        return _block_loop(EX2, ftz, x, a, out, s, n, p0, p1, slow)
    return _block_loop(DIV_FULL, ftz, x, a, out, s, n, p0, p1, slow)


def _f32_kernel(code, ftz, a, b, out, d0, d1, seg, c0, c12, q64, q32, ok):
    n = a.size
    nch = (n + CHUNK - 1) // CHUNK
    for ch in prange(nch):
        ok[ch] = fp_env_ok(q64, q32)            # the FPU state is per thread
        f32_range(code, ftz, a, b, out, ch * CHUNK, min(n, (ch + 1) * CHUNK), d0, d1, seg, c0, c12,
                   np.empty(_BLOCK, np.float64), np.empty(_BLOCK, np.int64), np.empty(_BLOCK, np.uint8),
                   np.empty(_BLOCK, np.int64))


# ----------------------------------------------------------------------------------------------
# LG2, SIN, COS, TANH (f32): not fitted yet (their words are not smooth enough in the table index for
# a quadratic to decide most of them): the numpy model's word tables, one element at a time

LG2, SIN, COS, TANH = range(4)
_SC_HALF = 1 << 24              # sin_half entries: the half turn in 2**-25 steps
_INV_2PI32 = _U(0x3E22F983)     # 1/(2 pi) as ptxas's f32 constant


@njit(cache=True, nogil=True, inline="always")
def _fmul_rz(a, b):
    """FMUL.RZ: the exact float64 product rounded to nearest, then one step towards zero where that
    went away from it; NaN 0x7fffffff."""
    p = _val(a) * _val(b)
    if p != p:
        return _NAN
    r = _word(p)
    return _U(r - _U(1)) if abs(np.float64(_U(r).view(np.float32))) > abs(p) else _U(r)


@njit(cache=True, nogil=True, inline="always")
def _turn_index(y):
    """floor(frac(|y|) * 2**25): the operand's fraction of a turn as MUFU.SIN / COS read it."""
    a = abs(_val(y))
    if (y & _INF) == _INF:
        return np.int64(0)
    return np.int64(np.floor((a - np.floor(a)) * 33554432.0))


@njit(cache=True, nogil=True, inline="always")
def _sin_turns(k, t):
    v = t[k & (_SC_HALF - 1)]
    return _U(v ^ _SIGN) if k >= _SC_HALF else v


@njit(cache=True, nogil=True, inline="always")
def _mufu_sincos(y, cos, t):
    if (y & _INF) == _INF:
        return _NAN
    k = _turn_index(y)
    if cos:
        return _sin_turns((k + (1 << 23)) & ((1 << 25) - 1), t)
    v = _sin_turns(k, t)
    return _U(v ^ _SIGN) if y >> _U(31) else v


@njit(cache=True, nogil=True, inline="always")
def _mufu_tanh(u, t, first, dropped):
    """MUFU.TANH: the identity below 2**-8, +-1 from 8 on, between them binade e's table (from
    first[e - 119]) at the significand bits the unit reads."""
    e = np.int64((u >> _U(23)) & _U(0xFF))
    m = u & _MANT
    if e == 255 and m != 0:
        return _NAN
    s = u & _SIGN
    if e < 119:
        return _U(u)
    if e >= 130:
        return _U(s | _U(0x3F800000))
    return _U(t[first[e - 119] + np.int64(m >> _U(dropped[e - 119]))] | s)


@njit(cache=True, nogil=True, inline="always")
def _rz32(v):
    """float64 -> f32 word rounded towards zero (v normal in f32)."""
    mag = np.float64(abs(v)).view(np.uint64) & ~np.uint64((1 << 29) - 1)
    w = np.float32(np.uint64(mag).view(np.float64)).view(np.uint32)
    return _U(w | _SIGN) if v < 0 else _U(w)


@njit(cache=True, nogil=True, inline="always")
def _mufu_lg2(u, t127, t126):
    s = u >> _U(31)
    e = np.int64((u >> _U(23)) & _U(0xFF))
    m = u & _MANT
    if e == 255 and m != 0:
        return _NAN
    if s == 0 and e == 255:
        return _INF
    if s == 1 and e != 0:
        return _NAN
    if e == 0:
        return _U(0xFF800000)                     # +-0 and subnormals: -inf
    ei = e - 127
    if ei == 0:
        return t127[m]
    if ei == -1:
        return t126[m]
    l0 = _val(t127[m])
    if ei >= 1:
        return _rz32(np.float64(ei) + l0)
    fixed = np.float64(ei) * 8388608.0 + np.floor(l0 * 8388608.0)
    return _rz32(-(-fixed - 1.0) / 8388608.0)


@njit(cache=True, nogil=True, inline="always")
def _lg2_form(a, ftz, t127, t126):
    if ftz or not _small(a):
        return _mufu_lg2(a, t127, t126)
    r = _mufu_lg2(_fmul(a, _TWO24, False), t127, t126)        # then FADD r, -24
    v = _val(r) - 24.0
    return _NAN if v != v else _word(v)


@njit(cache=True, nogil=True, inline="always")
def _table_form(code, ftz, a, t0, t1, first, dropped):
    if code == LG2:
        return _lg2_form(a, ftz, t0, t1)
    if code == TANH:
        return _mufu_tanh(a, t0, first, dropped)
    return _mufu_sincos(_fmul_rz(a, _INV_2PI32), code == COS, t0)


@link_only
@njit(nogil=True)
def _table_range(code, ftz, a, out, lo, hi, t0, t1, first, dropped):
    """out[lo:hi] one element at a time (loading each block's entries ahead, as the fitted units do,
    made this 3x slower: the loads became vector gathers that keep few misses in flight)."""
    for i in range(lo, hi):
        out[i] = _table_form(code, ftz, a[i], t0, t1, first, dropped)


def _table_kernel(code, ftz, a, out, t0, t1, first, dropped, q64, q32, ok):
    n = a.size
    nch = (n + CHUNK - 1) // CHUNK
    for ch in prange(nch):
        ok[ch] = fp_env_ok(q64, q32)
        _table_range(code, ftz, a, out, ch * CHUNK, min(n, (ch + 1) * CHUNK), t0, t1, first, dropped)


# ----------------------------------------------------------------------------------------------
# f64 forms: MUFU.RCP64H / RSQ64H on the upper word, the DFMA refinement of rsqrt.approx.f64

@njit(cache=True, nogil=True, inline="always")
def _mufu_rcp64h(h, t):
    s = h & _SIGN
    e = np.int64((h >> _U(20)) & _U(0x7FF))
    m = h & _U(0xFFFFF)
    if e == 2047 and m != 0:
        return _NAN
    if e == 0:
        return _U(s | _U(0x7FF00000))
    if e >= 2045:
        return _U(s | _U(0x00100000)) if (h & _NAN) == _U(0x7FD00000) else _U(s)
    return _U(_shift(t[m], 1023 - e, 20) | s)


@njit(cache=True, nogil=True, inline="always")
def _mufu_rsq64h(h, t_odd, t_even):
    s = h & _SIGN
    e = np.int64((h >> _U(20)) & _U(0x7FF))
    m = h & _U(0xFFFFF)
    if e == 2047 and m != 0:
        return _NAN
    if s == 0 and e == 2047:
        return _U(0)
    if s != 0 and e != 0:
        return _NAN
    if e == 0:
        return _U(s | _U(0x7FF00000))
    if e & 1:
        return _shift(t_odd[m], (1023 - e) // 2, 20)
    return _shift(t_even[m], (1024 - e) // 2, 20)


_U64 = np.uint64
_DNAN = _U64(0xFFF8000000000000)


@njit(cache=True, nogil=True, inline="always")
def _d(w):
    return _U64(w).view(np.float64)


@njit(cache=True, nogil=True, inline="always")
def _dfma(a, b, c):
    """DFMA (round to nearest, canonical NaN) on float64 values; returns the word."""
    r = fma_native(a, b, c)
    return _DNAN if r != r else np.float64(r).view(np.uint64)


@njit(cache=True, nogil=True, inline="always")
def _rsqrt_newton(x, y):
    """e = 1 - x*y*y; y + (3/8 e + 1/2) * (y e), as ptxas's DFMA chain (x, y: words)."""
    xv, yv = _d(x), _d(y)
    e = _dfma(xv, _d(np.float64(yv * yv).view(np.uint64) ^ _U64(1 << 63)), 1.0)
    h = _dfma(_d(e), 0.375, 0.5)
    return _dfma(_d(h), yv * _d(e), yv)


@njit(cache=True, nogil=True, inline="always")
def _f64_form(code, ftz, a, t0, t1):
    hi = _U(a >> _U64(32))
    if code == RCP64:
        return _U64(_mufu_rcp64h(hi, t0)) << _U64(32)
    if ftz:
        return _U64(_mufu_rsq64h(hi, t0, t1)) << _U64(32)
    if _U(hi - _U(0x00100000)) < _U(0x7FE00000):
        return _rsqrt_newton(a, _U64(_mufu_rsq64h(hi, t0, t1)) << _U64(32))
    sign = a >> _U64(63)
    mag = a & _U64(0x7FFFFFFFFFFFFFFF)
    if mag == 0:
        return (sign << _U64(63)) | _U64(0x7FF0000000000000)
    if mag > _U64(0x7FF0000000000000):
        return a | _U64(1 << 51)                                  # DADD a, a: quieted
    if sign == 1:
        return _DNAN
    if mag == _U64(0x7FF0000000000000):
        return _U64(0)
    xs = np.float64(_d(a) * 18014398509481984.0).view(np.uint64)           # * 2**54
    y = _rsqrt_newton(xs, _U64(_mufu_rsq64h(_U(xs >> _U64(32)), t0, t1)) << _U64(32))
    return np.float64(_d(y) * 134217728.0).view(np.uint64)                  # * 2**27


def _f64_kernel(code, ftz, a, out, t0, t1, q64, q32, ok):
    n = a.size
    nch = (n + CHUNK - 1) // CHUNK
    for ch in prange(nch):
        ok[ch] = fp_env_ok(q64, q32)
        for i in range(ch * CHUNK, min(n, (ch + 1) * CHUNK)):
            out[i] = _f64_form(code, ftz, a[i], t0, t1)


def _half_kernel(packed, a, out, t):
    """16-bit EX2 / TANH: a table of all 2**16 words; packed x2 words through it half by half."""
    n = a.size
    nch = (n + CHUNK - 1) // CHUNK
    for ch in prange(nch):
        for i in range(ch * CHUNK, min(n, (ch + 1) * CHUNK)):
            w = np.uint32(a[i])
            r = t[w & 0xFFFF]
            if packed:
                r |= t[(w >> 16) & 0xFFFF] << 16
            out[i] = r


def _builds(fn, name):
    return (njit(cache=True, nogil=True)(named_copy(fn, name + "_serial")),
            njit(cache=True, nogil=True, parallel=True)(named_copy(fn, name + "_parallel")))


_F32 = _builds(_f32_kernel, "_sfu_f32_kernel")
_F64 = _builds(_f64_kernel, "_sfu_f64_kernel")
_HALF16 = _builds(_half_kernel, "_sfu_half_kernel")
_TABLE32 = _builds(_table_kernel, "_sfu_table_kernel")


# ----------------------------------------------------------------------------------------------
# tables

_TABLES: dict = {}
_NO_SEG = np.zeros((2, 1), np.float64)
_LOCK = threading.RLock()


@njit(cache=True, nogil=True)
def _ex2_refs(neg, seg, out):
    for fr in range(out.size):
        out[fr] = _ex2_ref(fr, neg, seg)


def _ex2_segments():
    """2**(+-j/256), j < 256, float64 (rows + and -), by numerics.sfu's deterministic series."""
    j = np.arange(256, dtype=np.float64) / 256.0
    return np.ascontiguousarray(np.stack([_ref._exp2_frac(j), _ref._exp2_frac(-j)]))


def _disk_cached(name, build):
    """``build()``'s array for table ``name``, kept on disk (``~/.cache/warpsim/sfu``, a file per table, named
    by a digest of the captured tables and of the code that derives from them): decoding the ex2 tables costs
    ~2.8 s in every process that runs an ex2 (a Triton softmax's first launch), loading them ~10 ms.  Best effort:
    a directory that cannot be written only means deriving again.  Read-only either way: a table read from the disk
    was writeable where a derived one was not, so the compiled kernels that take it as an argument had two numba
    signatures, and the first process to read the file compiled every such kernel again."""
    import hashlib

    h = hashlib.sha1()
    for path in (os.path.join(_ref.DATA_DIR, "tables.npz"), _ref.__file__, __file__):
        with open(path, "rb") as f:
            h.update(f.read())
    d = os.path.join(os.path.expanduser("~"), ".cache", "warpsim", "sfu")
    path = os.path.join(d, f"{name}-{h.hexdigest()[:16]}.npy")
    try:
        out = np.load(path, allow_pickle=False)
        out.setflags(write=False)
        return out
    except (OSError, ValueError):
        pass
    out = build(name)
    out.setflags(write=False)
    try:
        os.makedirs(d, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npy"
        np.save(tmp, out, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        pass
    return out


def _load(name):
    return _disk_cached(name, _derive)


def _derive(name):
    path = os.path.join(_ref.DATA_DIR, "tables.npz")
    with np.load(path) as z:
        if name not in z.files:
            raise NotImplementedError(f"the MUFU table {name!r} is not in {path}")
        if name in ("rcp", "rsq_odd", "rsq_even", "sqrt_odd", "sqrt_even"):
            d = _ref.deltas(name, z)          # against 1/x, 1/sqrt(x), sqrt(x) in float64: the kernels' own
            if d.dtype != np.int8:
                raise ValueError(f"MUFU table {name!r}: differences of {d.dtype}, the fast path needs int8")
            return np.ascontiguousarray(d)
        words = _ref.decode(name, z)
    if name in ("ex2_pos", "ex2_neg"):
        ref = np.empty(words.size, np.uint32)
        _ex2_refs(name == "ex2_neg", table("ex2_seg"), ref)
        d = words.astype(np.int64) - ref
        if d.min() < -128 or d.max() > 127:
            raise ValueError(f"MUFU table {name!r}: hardware differs from the fast reference by {d.min()}..{d.max()}")
        return d.astype(np.int8)
    return np.ascontiguousarray(words)


#: fitted unit -> (code, its tables)
FITTED = {"rcp": (RCP, ("rcp", None)), "rsq": (RSQRT, ("rsq_odd", "rsq_even")),
          "sqrt": (SQRT, ("sqrt_odd", "sqrt_even")), "ex2": (EX2, ("ex2_pos", "ex2_neg"))}
FITS_PATH = os.path.join(_ref.DATA_DIR, "fits.npz")


def _unit_tables(unit):
    code, (t0, t1) = FITTED[unit]
    d0 = table(t0)
    return code, d0, (table(t1) if t1 else d0), (table("ex2_seg") if code == EX2 else _NO_SEG)


def build_fits(path=FITS_PATH):
    """Fit every unit from its tables and write the fits (run after new tables: ``python -c "from
    warpsim.engine.sfu import build_fits; build_fits()"``); the fits are derived data, checked entry by entry by tests/test_sfu_fast.py."""
    out = {}
    for unit in FITTED:
        out[unit + ".c0"], out[unit + ".c12"] = _fit(*_unit_tables(unit))
    np.savez_compressed(path, **out)
    return path


def fit_errors(unit):
    """Table entries of ``unit`` whose prediction passes its test and is not the hardware word: the
    fast path's exactness condition, checked over every entry (0 for committed fits)."""
    code, d0, d1, seg = _unit_tables(unit)
    c0, c12 = table("fit:" + unit)
    words = np.empty(c0.size << FIT_BITS, np.uint32)
    _canonical_words(code, d0, d1, seg, words)
    return int(_fit_check(c0, c12, words))


def _load_fit(unit):
    with np.load(FITS_PATH) as z:
        if unit + ".c0" not in z.files:
            raise NotImplementedError(f"the MUFU fit {unit!r} is not in {FITS_PATH}")
        return np.ascontiguousarray(z[unit + ".c0"], np.float64), np.ascontiguousarray(z[unit + ".c12"], np.int64)


def table(name):
    """A table as the kernels read it (loaded once, thread-safe): int8 differences for the f32 units,
    uint32 words for the f64 and 16-bit ones, ``ex2_seg`` the EX2 reference's float64 segments, ``fit:rcp``
    (``rsq``, ``sqrt``, ``ex2``) a unit's fitted quadratics."""
    t = _TABLES.get(name)
    if t is None:
        with _LOCK:
            t = _TABLES.get(name)
            if t is None:
                t = _ex2_segments() if name == "ex2_seg" else (_load_fit(name[4:]) if name.startswith("fit:") else _load(name))
                _TABLES[name] = t
    return t


# ----------------------------------------------------------------------------------------------
# the Python side

def _launch(builds, n, args, with_ok=True):
    par = n > PARALLEL_THRESHOLD
    kern = builds[1] if par else builds[0]
    if not with_ok:
        kern(*args)
        return
    ok = np.ones(max(1, (n + CHUNK - 1) // CHUNK), np.bool_)
    kern(*args, PROBE64, PROBE32, ok)
    if not ok.all():
        raise FloatingPointError("the host FPU is not in round-to-nearest with subnormals kept (FTZ/DAZ or another "
                                 "rounding mode is set); warpsim's special-function unit needs IEEE defaults")


def _f32_run(code, ftz, tabs, fit, *xs):
    if len(xs) > 1:
        xs = np.broadcast_arrays(*(np.asarray(x, np.uint32) for x in xs))
    x0 = np.asarray(xs[0], np.uint32)
    shape = x0.shape
    a = np.ascontiguousarray(x0).reshape(-1)
    b = np.ascontiguousarray(xs[1]).reshape(-1) if len(xs) > 1 else a
    d0 = table(tabs[0])
    d1 = table(tabs[1]) if tabs[1] else d0
    seg = table("ex2_seg") if code == EX2 else _NO_SEG
    c0, c12 = table("fit:" + fit)
    out = np.empty(a.size, np.uint32)
    _launch(_F32, a.size, (code, ftz, a, b, out, d0, d1, seg, c0, c12))
    return out.reshape(shape)


def _f64_run(code, ftz, tabs, x):
    x = np.asarray(x, np.uint64)
    a = np.ascontiguousarray(x).reshape(-1)
    t0 = table(tabs[0])
    t1 = table(tabs[1]) if tabs[1] else t0
    out = np.empty(a.size, np.uint64)
    _launch(_F64, a.size, (code, ftz, a, out, t0, t1))
    return out.reshape(x.shape)


def _half_run(name, packed, x):
    dt = np.uint32 if packed else np.uint16
    x = np.asarray(x)
    a = np.ascontiguousarray(x.astype(dt, copy=False)).reshape(-1)
    out = np.empty(a.size, dt)
    _launch(_HALF16, a.size, (packed, a, out, table(name)), with_ok=False)
    return out.reshape(x.shape)


def fit_name(code):
    """The fit (``table("fit:" + name)``: c0, c12) a fitted f32 form of this unit code predicts with."""
    return {RSQRT: "rsq", SQRT: "sqrt", EX2: "ex2"}.get(code, "rcp")


def _f32(code, ftz, t0, t1=None):
    fit = fit_name(code)
    return lambda *xs: _f32_run(code, ftz, (t0, t1), fit, *xs)


_TANH_E = tuple(sorted(_ref.TANH_DROPPED))
_NO_INDEX = np.zeros(1, np.int64)


def _word_tables(code):
    """The numpy model's word tables of a table unit (loaded once): (t0, t1, first, dropped)."""
    key = ("words", code)
    t = _TABLES.get(key)
    if t is None:
        with _LOCK:
            if code == LG2:
                t = (_ref.table("lg2_e127"), _ref.table("lg2_e126"), _NO_INDEX, _NO_INDEX)
            elif code == TANH:
                parts = [_ref.table(f"tanh_e{e}") for e in _TANH_E]
                first = np.cumsum([0] + [p.size for p in parts[:-1]]).astype(np.int64)
                words = np.ascontiguousarray(np.concatenate(parts))
                t = (words, words, first, np.array([_ref.TANH_DROPPED[e] for e in _TANH_E], np.int64))
            else:
                w = _ref.table("sin_half")
                t = (w, w, _NO_INDEX, _NO_INDEX)
            _TABLES[key] = t
    return t


def _table_run(code, ftz, x):
    x = np.asarray(x, np.uint32)
    a = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(a.size, np.uint32)
    _launch(_TABLE32, a.size, (code, ftz, a, out) + _word_tables(code))
    return out.reshape(x.shape)


def _table(code, ftz):
    return lambda x: _table_run(code, ftz, x)


def _f64(code, ftz, t0, t1=None):
    return lambda x: _f64_run(code, ftz, (t0, t1), x)


def _half(name, packed):
    return lambda x: _half_run(name, packed, x)


#: PTX form -> its fast function on raw words (same operands and result as sfu_ops' numpy functions)
FORMS = {
    "rcp.approx.f32": _f32(RCP, False, "rcp"),
    "rcp.approx.ftz.f32": _f32(RCP, True, "rcp"),
    "rsqrt.approx.f32": _f32(RSQRT, False, "rsq_odd", "rsq_even"),
    "rsqrt.approx.ftz.f32": _f32(RSQRT, True, "rsq_odd", "rsq_even"),
    "sqrt.approx.f32": _f32(SQRT, False, "sqrt_odd", "sqrt_even"),
    "sqrt.approx.ftz.f32": _f32(SQRT, True, "sqrt_odd", "sqrt_even"),
    "ex2.approx.f32": _f32(EX2, False, "ex2_pos", "ex2_neg"),
    "ex2.approx.ftz.f32": _f32(EX2, True, "ex2_pos", "ex2_neg"),
    "lg2.approx.f32": _table(LG2, False),
    "lg2.approx.ftz.f32": _table(LG2, True),
    "sin.approx.f32": _table(SIN, False),
    "sin.approx.ftz.f32": _table(SIN, True),
    "cos.approx.f32": _table(COS, False),
    "cos.approx.ftz.f32": _table(COS, True),
    "tanh.approx.f32": _table(TANH, False),
    "div.full.f32": _f32(DIV_FULL, False, "rcp"),
    "div.full.ftz.f32": _f32(DIV_FULL, True, "rcp"),
    "div.approx.f32": _f32(DIV_APPROX, False, "rcp"),
    "div.approx.ftz.f32": _f32(DIV_APPROX, True, "rcp"),
    "rcp.approx.ftz.f64": _f64(RCP64, True, "rcp64h"),
    "rsqrt.approx.f64": _f64(RSQRT64, False, "rsq64h_odd", "rsq64h_even"),
    "rsqrt.approx.ftz.f64": _f64(RSQRT64, True, "rsq64h_odd", "rsq64h_even"),
    "ex2.approx.f16": _half("ex2_f16", False),
    "ex2.approx.f16x2": _half("ex2_f16", True),
    "ex2.approx.ftz.bf16": _half("ex2_bf16", False),
    "ex2.approx.ftz.bf16x2": _half("ex2_bf16", True),
    "tanh.approx.f16": _half("tanh_f16", False),
    "tanh.approx.f16x2": _half("tanh_f16", True),
    "tanh.approx.bf16": _half("tanh_bf16", False),
    "tanh.approx.bf16x2": _half("tanh_bf16", True),
}


#: the compiled PTX kernels call the range kernel by its symbol (engine/linking.py): each build is compiled once
#: and cached by numba, not optimised and compiled again inside every kernel
f32_range_by_symbol = unlinked(f32_range)
