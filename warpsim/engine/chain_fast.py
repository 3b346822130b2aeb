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
  C, else (no NaN operand) the invalid-operation NaN, else the first NaN of A's row when no
  inf precedes it, else a host replay of that one chain applying the rule step by step
  (``_nan_replay``).  Nothing falls back to the soft-float :func:`chain_dot`.
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
from ..numerics.fused import _bits_f64 as _as_f64
from ..numerics.softfloat import F64_DEFAULT_NAN, NAN_CANONICAL, U64
from .hostfpu import PROBE32, PROBE64, fma_native, fp_env_ok
from .jitcache import named_copy


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
_QUIET64 = U64(1 << 51)
_Z64 = U64(0)
#: marks the NaN results whose chain is to be replayed: a NaN word, so no finite or infinite result
#: holds it, and a NaN result that happens to hold it is replayed, which gives its word again
_REPLAY = U64(0x7FF0DEADBEEF0001)


@njit(cache=True, nogil=True)
def _nan_words(Au, Bu, Cu, Du, M, N, K, desc, cw, ci, rn, rw, ri):
    """Give every NaN result of one warp's f64 chain DMMA's NaN word (branch-free where it can be).

    What decides it, by chain step (s = 0 first; k = s, or K - 1 - s when desc): per column j of B
    the quieted last NaN (cw, 0 if none) and the step of the first inf (ci, K if none); per row i
    of A the step of the first NaN (rn, K if none), that NaN quieted (rw) and the step of the first
    inf (ri, K if none).  A NaN result is then the last NaN of its B column; else its NaN C; else,
    without any NaN operand, the invalid-operation NaN; else the first NaN of its A row when no inf
    precedes it in the row or the column (nothing invalid can happen before it); else the one
    chain is replayed (_nan_replay)."""
    # min / max reductions over k (branch-free, they vectorise), turned into chain steps
    for j in range(N):
        lon, hin, loi, hii = K, -1, K, -1
        for k in range(K):
            ax = Bu[k * N + j] & _ABS64
            kn = k if ax > _EXP64 else -1
            ki = k if ax == _EXP64 else -1
            hin = max(hin, kn)
            lon = min(lon, K if kn < 0 else kn)
            hii = max(hii, ki)
            loi = min(loi, K if ki < 0 else ki)
        kl = lon if desc else hin                  # the last NaN in chain order
        cw[j] = (Bu[kl * N + j] | _QUIET64) if hin >= 0 else _Z64
        ci[j] = ((K - 1 - hii) if desc else loi) if hii >= 0 else K
    for i in range(M):
        lon, hin, loi, hii = K, -1, K, -1
        for k in range(K):
            ax = Au[i * K + k] & _ABS64
            kn = k if ax > _EXP64 else -1
            ki = k if ax == _EXP64 else -1
            hin = max(hin, kn)
            lon = min(lon, K if kn < 0 else kn)
            hii = max(hii, ki)
            loi = min(loi, K if ki < 0 else ki)
        kf = hin if desc else lon                  # the first NaN in chain order
        rn[i] = ((K - 1 - hin) if desc else lon) if hin >= 0 else K
        rw[i] = (Au[i * K + kf] | _QUIET64) if hin >= 0 else _Z64
        ri[i] = ((K - 1 - hii) if desc else loi) if hii >= 0 else K
    replay = 0
    for i in range(M):
        r = rn[i]
        nonan = r == K
        ok = ri[i] > r
        for j in range(N):
            t = i * N + j
            c = Cu[t]
            v = rw[i] if (ok and ci[j] >= r) else _REPLAY
            v = F64_DEFAULT_NAN if nonan else v
            v = (c | _QUIET64) if (c & _ABS64) > _EXP64 else v
            v = cw[j] if cw[j] != _Z64 else v
            d = Du[t]
            isn = (d & _ABS64) > _EXP64
            Du[t] = v if isn else d
            replay += isn and v == _REPLAY
    if replay:      # an invalid step may precede the NaN A element: replay those chains
        for i in range(M):
            for j in range(N):
                if Du[i * N + j] == _REPLAY:
                    Du[i * N + j] = _nan_replay(Au, Bu, Cu[i * N + j], i, j, N, K, desc)


@njit(cache=True, nogil=True)
def _nan_replay(Au, Bu, c, i, j, N, K, desc):
    """The NaN word of output (i, j) of an f64 chain whose host result is NaN: the chain replayed on
    the host, step by step, with DMMA's rule at each fma(a, b, acc): a NaN operand comes out quieted,
    b before acc before a; an invalid operation (no NaN operand, NaN result) gives the default NaN."""
    acc = _as_f64(c)
    nan = c | _QUIET64
    for s in range(K):
        k = K - 1 - s if desc else s
        x = Au[i * K + k]
        y = Bu[k * N + j]
        if (y & _ABS64) > _EXP64:
            nan = y | _QUIET64
            acc = np.nan
        elif acc != acc:
            pass
        elif (x & _ABS64) > _EXP64:
            nan = x | _QUIET64
            acc = np.nan
        else:
            acc = fma_native(_as_f64(x), _as_f64(y), acc)
            if acc != acc:
                nan = F64_DEFAULT_NAN
    return nan


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
    desc = p[P_KORDER] == 1
    cw = np.empty(N, np.uint64)
    ci = np.empty(N, np.int64)
    rn = np.empty(M, np.int64)
    rw = np.empty(M, np.uint64)
    ri = np.empty(M, np.int64)
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
        # A NaN result (NaN-ness is IEEE, so the host decides it) takes the hardware's NaN word
        nnan = 0
        for t in range(M * N):
            nnan += (Du[t] & _ABS64) > _EXP64
        if nnan:
            _nan_words(Au, Bu, Cu, Du, M, N, K, desc, cw, ci, rn, rw, ri)
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
        out.append(np.ascontiguousarray(flat.ravel(), dtype=np.int64))
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
    if tabs is None or (mode == FAST_F64 and ins.products != 1):
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
