"""The warp-level (mma / mma.sp) float tensor-core kernel: every warp's elements gathered, decoded and
run through the dot core's recipe for its block structure."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ...numerics.fused import CMODE_FUSED, P_ACC, P_CMODE, P_D, P_FRAC, P_NBLK
from ..hostfpu import fp_env_ok as _fp_env_ok
from ..linking import link_only
from .dot import _accexp8, _decode_abc, _lsb_floor, _round8_common, _row8, _rows_chain2, _rows_fused, _rows_sep
from .tables import _ZEXP, _pow2f

@njit(nogil=True, inline="always")
def _by_warp(x):
    """A (W, 32, runs) view as (W, 32 * runs): a warp's runs in one row."""
    return x.reshape(x.shape[0], x.shape[1] * x.shape[2])


@njit(nogil=True, inline="always")
def _gather(dst, src, places):
    """dst[places[t]] = src[t]: a warp's runs of elements into matrix order."""
    for t in range(places.shape[0]):
        dst[places[t]] = src[t]


@njit(nogil=True, inline="always")
def _scaled(V, E, x, sf):
    """Element x (value V[x], alignment exponent E[x]) times its ue8m0 block scale sf, exactly; a NaN
    scale (0xFF) makes it NaN.  Returns whether it did."""
    if sf == 255:
        V[x] = np.nan
        return True
    V[x] *= _pow2f(np.int64(sf) - 127)
    E[x] += np.float32(np.int64(sf) - 127)
    return False


@njit(nogil=True)
def tc_scratch(M, K, Ka, a, b, c, d):
    """The working arrays of :func:`tc_warps` (a .. d: the register words as runs, (W, runs) views): made once
    for many warps -- a chunk of a batch, or every call of a compiled PTX kernel's run (ten allocations cost
    more than one warp's arithmetic).  The warps leave them as they found them (what a chunk relies on)."""
    N = 8
    F = np.zeros(M * Ka + K * N + 2 * M * N + 3 * N + (M + 1) * N, np.float64)
    G = np.empty(M * Ka + K * N + M * N + N + (M + 1) * N, np.float32)
    G[M * Ka + K * N + M * N + N:] = _ZEXP         # RSE: _rows_sep's accumulator exponents
    U = np.empty(N + M * N, np.uint64)
    RI = np.empty(M * Ka, np.int64)
    return F, G, U, np.empty_like(d[0]), RI, np.empty_like(a[0]), np.empty_like(b[0]), np.empty_like(c[0])


# not cached by itself: its code lives in the _tc_kernel builds, whose cache names carry the stamp
# of the intrinsics it inlines (jitcache.named_copy); no machine code of its own (linking.link_only)
@link_only
@njit(nogil=True)
def _tc_chunk(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
              q, scale, emin, rpb, rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed):
    """Warps w0..w1-1 (tc_warps) on scratch of their own."""
    tc_warps(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta, q, scale, emin, rpb,
             rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed, tc_scratch(M, K, Ka, a, b, c, d))


@njit(nogil=True, inline="always")
def tc_warp(p, e, w, M, K, Ka, ri0, spt, sparse, tf32meta, q, scale, emin, rpb, rpa, SFA, SFB, scaled, sta, srb,
            zexp, ea, eb, ec, ed, S):
    """Warp w, its raw A, B and C elements already in matrix order in S's RAw, RBw, RCw (tc_scratch): D's words
    in matrix order to S's DBw.  Returns what tc_warps records in need[w] (2: DBw not set).  Inlined into
    each caller: the batch kernel, and the compiled PTX kernels' one-warp build, which gathers the elements
    from its registers itself (engine/warp_mma_jit.py)."""
    N = 8
    nblk, frac = p[P_NBLK], p[P_FRAC]
    nb = Ka // nblk
    fused = p[P_CMODE] == CMODE_FUSED
    ebo = p[P_ACC + 1]
    emino = np.float32(2 - (1 << (ebo - 1)))
    igd = np.uint64(p[P_D + 3])
    fracf = np.float64(frac)
    F, G, U, DBw, RI, RAw, RBw, RCw = S
    # the working arrays cut from one allocation per element type (slices are views)
    f1 = M * Ka
    f2 = f1 + K * N
    f3 = f2 + M * N
    f4 = f3 + M * N
    AV, BV, CV, VM = F[:f1], F[f1:f2], F[f2:f3], F[f3:f4]
    RV, VV, OV = F[f4:f4 + N], F[f4 + N:f4 + 2 * N], F[f4 + 2 * N:f4 + 3 * N]
    RS = F[f4 + 3 * N:]             # _rows_sep's accumulators; the first 8: +0
    AE, BE, CE, RE = G[:f1], G[f1:f2], G[f2:f3], G[f3:f3 + N]
    RSE = G[f3 + N:]
    OB = U[:N]
    DB = U[N:]
    DBe = DBw.view(ed.dtype)         # D's words in matrix order, as runs (d: register words as runs)
    RA = RAw.view(ea.dtype)          # the raw elements in matrix order
    RB = RBw.view(eb.dtype)
    RC = RCw.view(ec.dtype)
    special = _decode_abc(RA, RB, RC, q, scale, emin, AV, AE, BV, BE, CV, CE)
    if scaled:
        tiny = False
        for x in range(M * N):
            if CE[x] == _ZEXP and CV[x] == 0.0:
                CE[x] = zexp
            elif CE[x] < zexp and CV[x] - CV[x] == 0.0:
                tiny = True
        if tiny:
            return 2
        for i in range(M):
            for t in range(Ka):
                special |= _scaled(AV, AE, i * Ka + t, SFA[w, i, sta[t]])
        for r in range(K):
            for j in range(N):
                special |= _scaled(BV, BE, r * N + j, SFB[w, j, srb[r]])
    splice = False
    if sparse:
        ew = e[w]
        for x in range(spt.shape[0]):
            word = np.int64(ew[spt[x, 1]]) >> spt[x, 2]
            if tf32meta:
                # valid tf32 nibbles 0b0100 / 0b1110 pick element 0 / 1; others splice B halves
                nib = word & 15
                splice |= nib != 0b0100 and nib != 0b1110
                idx = nib >> 3
            else:
                idx = word & 3
            RI[spt[x, 0]] = spt[x, 3] + spt[x, 4] * idx
    if splice:
        return 2
    # the two-block recipes' bound on the terms' last bits; -inf (every term truncated) where some
    # element is NaN or inf (seldom uncut) or block-scaled (exponents past the format's range)
    lsb = _lsb_floor(AE, BE, q, scale) if nblk == 2 and not (special or scaled) else -np.inf
    if fused and nblk == 1:
        if sparse:
            _rows_fused(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, VM, DB, not special)
        else:   # B row t for term t: no row index
            _rows_fused(M, Ka, AV, AE, None, sparse, BV, BE, CV, CE, fracf, rpb, VM, DB, not special)
    elif fused and nblk == 2:
        if sparse:
            _rows_chain2(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RS, RSE, DB,
                         not special, lsb)
        else:
            _rows_chain2(M, Ka, AV, AE, None, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RS, RSE, DB,
                         not special, lsb)
    elif not fused and nblk == 2:
        if sparse:
            _rows_sep(M, Ka, AV, AE, RI, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RS, RSE, DB, not special,
                      lsb)
        else:
            _rows_sep(M, Ka, AV, AE, None, sparse, BV, BE, CV, CE, fracf, rpb, rpa, emino, RS, RSE, DB,
                      not special, lsb)
    else:
        # any other chain of blocks: one row at a time, the accumulator rounded after each block
        ri = RI if sparse else ri0
        for i in range(M):
            o = i * Ka if sparse else 0
            if fused:
                rv, re, ro = CV, CE, i * N
            else:
                rv, re, ro = RV, RE, 0
                rv[:] = 0.0
                re[:] = _ZEXP
            for blk in range(nblk):
                lo = blk * nb
                _row8(AV, AE, i * Ka, ri, o, lo, lo + nb, BV, BE, rv, re, ro, fracf, VV)
                _round8_common(VV, OB, OV, rpb)
                if fused and blk == nblk - 1:
                    for j in range(N):
                        DB[i * N + j] = OB[j]
                else:
                    if fused:   # the next block's accumulator (C's slot is this row's own)
                        for j in range(N):
                            rv[ro + j] = OV[j]
                        _accexp8(OV, emino, re[ro:ro + N])
                    else:
                        for j in range(N):
                            rv[j] = OV[j]
                        _accexp8(OV, emino, re)
            if not fused:
                # D = RNE(acc + C), an IEEE addition of two values of D's format (the float64
                # sum is exact for f16 and a harmless double rounding for f32; acc is never -0)
                for j in range(N):
                    VV[j] = rv[j] + CV[i * N + j]
                _round8_common(VV, OB, OV, rpa)
                for j in range(N):
                    DB[i * N + j] = OB[j]
    for x in range(M * N):
        DBe[x] = DB[x] << igd
    return 1 if special else 0


@link_only
@njit(nogil=True)
def tc_warps(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
             q, scale, emin, rpb, rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed, S):
    """Warps w0..w1-1 on the working arrays S (tc_scratch).  need[w]: 0 computed here, ordinary elements; 1
    computed here, some element (or block scale) NaN or inf (their outputs decided per element, see _decode);
    2 not computed (d left unset): tf32 sparse metadata that splices B halves, or a block-scaled warp whose C
    holds a nonzero value below the zero-term exponent, for the exact kernel.

    Block scales (scaled; ue8m0 only, see _power_of_two_scales): every decoded A / B element is
    multiplied by 2^(its scale's exponent) and its alignment exponent raised by it -- exact, as the
    model's term a*b*SA*SB with exponent ea+eb+esa+esb; a NaN scale makes its elements NaN.  A zero
    C takes the zero-term exponent zexp; the zero products' zexp then never exceeds an output's
    largest exponent, unless a tiny nonzero C (then the warp goes to the exact kernel)."""
    DBw, RAw, RBw, RCw = S[3], S[5], S[6], S[7]
    for w in range(w0, w1):
        # raw elements in matrix order (every element is in a register once), gathered in runs of
        # elements (a, b, c: the register words viewed as runs; pa, pb, pc: the runs' places)
        _gather(RAw, a[w], pa)
        _gather(RBw, b[w], pb)
        _gather(RCw, c[w], pc)
        need[w] = tc_warp(p, e, w, M, K, Ka, ri0, spt, sparse, tf32meta, q, scale, emin, rpb, rpa, SFA, SFB, scaled,
                          sta, srb, zexp, ea, eb, ec, ed, S)
        if need[w] != 2:
            for t in range(pd.shape[0]):
                d[w, t] = DBw[pd[t]]


def _tc_kernel(a3, b3, c3, d3, e, need, p, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
               q, scale, emin, rpb, rpa, chunk, q64, q32, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed):
    """Every warp (need: see _tc_chunk); returns the number of warps left to the exact kernel.
    a3 .. d3: (W, 32, runs) views of the register words as runs of elements (C-contiguous);
    ea .. ed: empty arrays of A's, B's, C's and D's element types."""
    W = a3.shape[0]
    a, b, c, d = _by_warp(a3), _by_warp(b3), _by_warp(c3), _by_warp(d3)
    nchunks = (W + chunk - 1) // chunk
    nslow = 0
    for ch in prange(nchunks):
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if not _fp_env_ok(q64, q32):      # rounding mode / FTZ / DAZ are per thread
            for w in range(w0, w1):
                need[w] = 2
            nslow += w1 - w0
            continue
        _tc_chunk(p, a, b, c, d, e, w0, w1, M, K, Ka, pa, pb, pc, pd, ri0, spt, sparse, tf32meta,
                  q, scale, emin, rpb, rpa, need, SFA, SFB, scaled, sta, srb, zexp, ea, eb, ec, ed)
        n = 0
        for w in range(w0, w1):
            n += need[w] == 2
        nslow += n
    return nslow
