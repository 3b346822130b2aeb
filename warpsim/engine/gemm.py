"""Whole-matrix GEMM kernels: every output element's accumulator runs through an instruction's model,
k step by k step, as a kernel's main loop drives the tensor core.

The register layout does not change a whole-matrix result, so these kernels work on matrix elements
(raw bit patterns, or their exact float64 values), never on register words.  Two kernels:

* :func:`exact_tasks` -- the reference, for every recipe kind: per output element and k step it
  calls the per-instruction dot of :mod:`warpsim.engine.kernel` (``tc_dot`` / ``chain_dot`` /
  ``int_dot``, the exact integer implementations) with the A row slice, the B column slice and the
  running accumulator; split-K slices, promotion partials and their reduction on raw bits with
  :mod:`warpsim.numerics.softfloat` (IEEE nearest-even additions).
* :func:`fast_rows` -- the float tensor-core recipes (f16, bf16, tf32, fp8; dense and sparse) in
  float64 where it is provably exact, through the dot core of :mod:`warpsim.engine.tensorcore`
  (``_row8``: 8 output columns a call, the accumulator carried in float64; ``_round8_common``: the
  one rounding of each block).  Any output panel with a NaN / inf input, or a block result that is
  zero, subnormal or overflowing (``_round8_common`` flags them), or a host FPU not in its default
  state, is left to :func:`exact_tasks`.
* :func:`int_rows` -- integers and b1: exact per-instruction sums on widened values.
* :func:`exact_products` -- not a tensor-core model: the exact sum of a GEMM output (an expansion of
  float64 values), for the numerics report of ``warpsim gemm``.
* :func:`f64_rows` -- the DMMA chain (f64): ``llvm.fma`` in k order from C; a non-finite result is
  left to :func:`exact_tasks` (the hardware's NaN payload rules).

Structure vector ``g`` (int64, built by :func:`warpsim.api.gemm`), the same for every kernel:

====  =========  ==========================================================================
idx   name       meaning
====  =========  ==========================================================================
0     G_KS       logical k of one instruction (the k step)
1     G_KA       A terms per instruction (k, or k/2 for sparse A)
2     G_STEPS    instructions per output element (K / k)
3     G_SPLIT    split-K slices (contiguous, equal)
4     G_PROMOTE  instructions per promotion partial (0: no promotion)
5     G_SERIAL   1: D = ((C + P0) + P1) + ...;  0: D = ((P0 + P1) + ...) + C
6     G_RED      reduction arithmetic: 0 integer wrap-around, 1 integer saturating, 2 float
7,8   G_REB/RMB  reduction format: exponent / mantissa bits (float)
9,10  G_AEB/AMB  accumulator (C / D of one instruction) format
11    G_SPARSE   1: A is compressed (k/2 kept terms per instruction, RI gives their B rows)
12    G_RNAN     NaN rule of the reduction additions (softfloat nan_mode)
13    G_RDNAN    the NaN an invalid reduction addition creates (raw bits, int64)
====  =========  ==========================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..numerics.fused import _bits_f32, _f64_bits
from ..numerics.softfloat import add_bits, convert_bits
from .hostfpu import fma_native, fp_env_ok
from .kernel import _dot
from .tensorcore import _ZEXP, _round8_common, _row8, make_chain
from .linking import link_only

(G_KS, G_KA, G_STEPS, G_SPLIT, G_PROMOTE, G_SERIAL, G_RED, G_REB, G_RMB, G_AEB, G_AMB, G_SPARSE, G_RNAN,
 G_RDNAN) = range(14)
G_LEN = 14
RED_WRAP, RED_SAT, RED_FLOAT = 0, 1, 2

#: block scales of the per-instruction dot: gemm takes no block-scaled forms (refused in warpsim.api.gemm)
_NOSCALE = np.zeros(1, np.uint64)

#: output columns per task of every kernel (every tile width n is a multiple of 8)
PANEL = 8


# --- the exact reference ----------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _steps(kind, p, arow, BT, j, ri, sparse, s0, s1, ks, ka, acc, bs):
    """Instructions s0..s1-1 of one output element, from accumulator ``acc`` (raw bits)."""
    for s in range(s0, s1):
        a = arow[s * ka:(s + 1) * ka]
        if sparse:
            for t in range(ka):
                bs[t] = BT[j, ri[s * ka + t]]
            acc = _dot(kind, a, bs, ka, acc, p, _NOSCALE, _NOSCALE)
        else:
            acc = _dot(kind, a, BT[j, s * ks:(s + 1) * ks], ka, acc, p, _NOSCALE, _NOSCALE)
    return acc


@njit(cache=True, nogil=True)
def red_add(x, y, g):
    """One reduction addition (split-K sum / promotion): IEEE nearest even in the reduction format,
    or s32 wrap-around / saturation."""
    if g[G_RED] == RED_FLOAT:
        return add_bits(x, y, g[G_REB], g[G_RMB], g[G_RNAN], np.uint64(g[G_RDNAN]))
    v = np.int64(np.int32(np.uint32(x & np.uint64(0xFFFFFFFF)))) + np.int64(np.int32(np.uint32(y & np.uint64(0xFFFFFFFF))))
    if g[G_RED] == RED_SAT:
        v = min(max(v, -2147483648), 2147483647)
    return np.uint64(v & 0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _widen(x, g):
    if g[G_RED] != RED_FLOAT or (g[G_AEB] == g[G_REB] and g[G_AMB] == g[G_RMB]):
        return x
    return convert_bits(x, g[G_AEB], g[G_AMB], g[G_REB], g[G_RMB], 0)


@njit(cache=True, nogil=True)
def _narrow(x, g):
    if g[G_RED] != RED_FLOAT or (g[G_AEB] == g[G_REB] and g[G_AMB] == g[G_RMB]):
        return x
    return convert_bits(x, g[G_REB], g[G_RMB], g[G_AEB], g[G_AMB], 0)


@njit(cache=True, nogil=True, inline="always")
def _fold(acc, part, started, g):
    """The running sum acc with the partial sum part folded in (red_add once acc has started, else
    part itself), and True: it has started."""
    return (red_add(acc, part, g) if started else part), True


@njit(cache=True, nogil=True)
def element(kind, p, g, arow, BT, j, ri, c, bs):
    """D[i, j] (raw bits) for the A row ``arow`` (raw bits, compressed when sparse), column j of B
    (``BT`` is B transposed), C[i, j] = ``c``; ``bs``: scratch of at least k/2 words."""
    ks, ka, S, q, P = g[G_KS], g[G_KA], g[G_STEPS], g[G_SPLIT], g[G_PROMOTE]
    sparse = g[G_SPARSE] != 0
    if q == 1 and P == 0:
        return _steps(kind, p, arow, BT, j, ri, sparse, 0, S, ks, ka, np.uint64(c), bs)
    serial = g[G_SERIAL] != 0
    zero = np.uint64(0)                      # +0 / integer 0 in every format
    per = S // q
    seg = P if P > 0 else per
    main = _widen(np.uint64(c), g) if serial else zero
    have = serial
    for sl in range(q):
        sacc = zero
        shave = False
        for s0 in range(sl * per, (sl + 1) * per, seg):
            part = _widen(_steps(kind, p, arow, BT, j, ri, sparse, s0, s0 + seg, ks, ka, zero, bs), g)
            if serial:
                main = red_add(main, part, g)
            else:
                sacc, shave = _fold(sacc, part, shave, g)
        if not serial:
            main, have = _fold(main, sacc, have, g)
    if not serial:
        main = red_add(main, _widen(np.uint64(c), g), g)
    return _narrow(main, g)


@njit(cache=True, nogil=True, parallel=True)
def exact_tasks(kind, p, g, A, RI, BT, C, D, ti, tj):
    """D[i, j0:j0+PANEL] for every task (i, j0) = (ti[t], tj[t]); raw uint64 bits throughout.
    A (M, Kc), RI (M, Kc) B rows of the compressed terms (sparse) or a dummy, BT (N, K), C / D (M, N)."""
    N = D.shape[1]
    sparse = g[G_SPARSE] != 0
    for t in prange(ti.shape[0]):
        i = ti[t]
        bs = np.empty(max(g[G_KA], 1), np.uint64)
        ri = RI[i] if sparse else RI[0]
        for j in range(tj[t], min(tj[t] + PANEL, N)):
            D[i, j] = element(kind, p, g, A[i], BT, j, ri, C[i, j], bs)


# --- the float64 fast path of the tensor-core recipes -------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _set_acc(OV, rv, re, emino):
    """Accumulator values and alignment exponents (max(floor(log2|v|), emin); zero: _ZEXP) from OV."""
    for j in range(PANEL):          # branch-free: vectorises
        v = OV[j]
        rv[j] = v
        ex = max(np.float32(np.int64((_f64_bits(v) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023), emino)
        re[j] = ex if v != 0.0 else _ZEXP


@njit(cache=True, nogil=True)
def _chain8(AV, AE, oa, RI, oi, BV, BE, s0, s1, ka, fracf, sep, rv, re, w, rpb, rpa, emino):
    """Instructions s0..s1-1 of one row and 8 columns, the accumulator in rv / re (values, exponents).
    sep: the two-block recipe with a separately rounded addition of C (sm_90 fp8), terms of each
    instruction in block order.  w: scratch (8 x 8 float64: VV, OV, ZV, TV; then OB as uint64 view
    is separate).  Returns True if some block result needs the exact kernel."""
    VV, OV, ZV, TV = w[0], w[1], w[2], w[3]
    ZE, TE = w[4].view(np.float32)[:PANEL], w[5].view(np.float32)[:PANEL]
    OB = w[6].view(np.uint64)
    rare = False
    zero = np.int64(0)
    for s in range(s0, s1):
        lo = s * ka
        if not sep:
            _row8(AV, AE, oa, RI, oi, lo, lo + ka, BV, BE, rv, re, zero, fracf, VV)
            rare |= _round8_common(VV, OB, OV, rpb)
            _set_acc(OV, rv, re, emino)
        else:
            h = lo + ka // 2
            for j in range(PANEL):
                ZV[j] = 0.0
                ZE[j] = _ZEXP
            _row8(AV, AE, oa, RI, oi, lo, h, BV, BE, ZV, ZE, zero, fracf, VV)
            rare |= _round8_common(VV, OB, OV, rpb)
            _set_acc(OV, TV, TE, emino)
            _row8(AV, AE, oa, RI, oi, h, lo + ka, BV, BE, TV, TE, zero, fracf, VV)
            rare |= _round8_common(VV, OB, OV, rpb)
            for j in range(PANEL):
                VV[j] = OV[j] + rv[j]          # exact for f16; one correct rounding chain for f32
            rare |= _round8_common(VV, OB, OV, rpa)
            _set_acc(OV, rv, re, emino)
    return rare


@njit(cache=True, nogil=True, inline="always")
def _plain2(AV, AE, oa, RI, oi, BVa, BEa, BVb, BEb, S, ka, fracf, rva, rea, rvb, reb, wa, wb, rpb, emino):
    """The plain fused chain (one block per instruction) of two panels of one row, interleaved step
    by step: two independent dependency chains the CPU overlaps.  Returns (rare a, rare b)."""
    VA, OA = wa[0], wa[1]
    VB, OBv = wb[0], wb[1]
    BA = wa[6].view(np.uint64)
    BB = wb[6].view(np.uint64)
    ra = False
    rb = False
    zero = np.int64(0)
    for s in range(S):
        lo = s * ka
        _row8(AV, AE, oa, RI, oi, lo, lo + ka, BVa, BEa, rva, rea, zero, fracf, VA)
        _row8(AV, AE, oa, RI, oi, lo, lo + ka, BVb, BEb, rvb, reb, zero, fracf, VB)
        ra |= _round8_common(VA, BA, OA, rpb)
        rb |= _round8_common(VB, BB, OBv, rpb)
        _set_acc(OA, rva, rea, emino)
        _set_acc(OBv, rvb, reb, emino)
    return ra, rb


@njit(cache=True, nogil=True, inline="always")
def _red8(MV, PV, w, rpr):
    """MV = round(MV + PV) in the reduction format (nearest even); True if rare."""
    VV, OV = w[0], w[1]
    OB = w[6].view(np.uint64)
    for j in range(PANEL):
        VV[j] = MV[j] + PV[j]
    r = _round8_common(VV, OB, OV, rpr)
    for j in range(PANEL):
        MV[j] = OV[j]
    return r


@njit(cache=True, nogil=True, inline="always")
def _fold8(MV, PV, started, w, rpr):
    """Fold the partial PV into the running MV: _red8 once MV has started, else MV = PV.  Returns
    (rare, started)."""
    if started:
        return _red8(MV, PV, w, rpr), True
    for j in range(PANEL):
        MV[j] = PV[j]
    return False, True


@njit(cache=True, nogil=True, parallel=True)
def fast_rows(g, AV, AE, RI, BV, BE, CV, CE, rowbad, panelbad, cbad, fracf, sep, rpb, rpa, rpr, rpd,
              emino, r0, r1, D, rare, q64, q32, cbits, Cb, ctab, cmask, CTV, CTE, CTF, cemin):
    """Rows r0..r1-1 of D (bits, uint64) with the float64 dot core; rare[i, jp] = True where a panel
    is left to exact_tasks.  AV / AE (M, Kc) A values / exponents (terms of an instruction in block
    order when sep), RI (M, Kc) or (1, Kc) the B row of each term, BV / BE (N/8, K, 8) B in panels,
    CV / CE (M, N); rowbad / panelbad / cbad: non-finite inputs.  rpb / rpa: round_params of the
    block results and of the C addition; rpr / rpd: of the reduction format and of D (nearest even).
    cbits: the chain without split-K or promotion, dense (one block, or sep with A and B rows in block
    order: RI unused), reading C's raw bits Cb and
    decoding them row block by row block (decode_rows' table arguments: ctab ... cemin) instead of
    CV / CE / cbad, which are then unused (saves the whole decoded C)."""
    S, ka, q, P = g[G_STEPS], g[G_KA], g[G_SPLIT], g[G_PROMOTE]
    serial = g[G_SERIAL] != 0
    NP = BV.shape[0]
    Kc = AV.shape[1]
    sparse = RI.shape[0] > 1
    RIf = RI.ravel()
    AVi = AV.ravel()
    AEi = AE.ravel()
    nblocks = (r1 - r0 + ROW_BLOCK - 1) // ROW_BLOCK
    for blk in prange(nblocks):
        b0 = r0 + blk * ROW_BLOCK
        b1 = min(r1, b0 + ROW_BLOCK)
        if not fp_env_ok(q64, q32):
            for i in range(b0, b1):
                for jp in range(NP):
                    rare[i, jp] = True
            continue
        if cbits:
            _plain_block(AVi, AEi, Kc, BV, BE, Cb, ctab, cmask, CTV, CTE, CTF, cemin, rowbad, panelbad, fracf, S,
                         ka, rpb, emino, b0, b1, D, rare, sep, rpa)
        else:
            _rows_block(g, AVi, AEi, RIf, Kc, sparse, BV, BE, CV, CE, rowbad, panelbad, cbad, fracf, sep, rpb, rpa,
                        rpr, rpd, emino, b0, b1, D, rare)


#: rows per task of fast_rows: their A rows stay in cache while the B panels stream past
ROW_BLOCK = 32


@link_only
@njit(nogil=True)
def _rows_block(g, AVi, AEi, RIf, Kc, sparse, BV, BE, CV, CE, rowbad, panelbad, cbad, fracf, sep, rpb, rpa, rpr,
                rpd, emino, b0, b1, D, rare):
    S, ka, q, P = g[G_STEPS], g[G_KA], g[G_SPLIT], g[G_PROMOTE]
    serial = g[G_SERIAL] != 0
    NP = BV.shape[0]
    w = np.zeros((8, PANEL), np.float64)
    w2 = np.zeros((8, PANEL), np.float64)
    rv = np.empty(PANEL, np.float64)
    re = np.empty(PANEL, np.float32)
    rv2 = np.empty(PANEL, np.float64)
    re2 = np.empty(PANEL, np.float32)
    MV = np.empty(PANEL, np.float64)
    SV = np.empty(PANEL, np.float64)
    OB = w[6].view(np.uint64)
    OB2 = w2[6].view(np.uint64)
    plain2 = q == 1 and P == 0 and not sep
    for jp in range(NP):
        BVp = BV[jp].ravel()
        BEp = BE[jp].ravel()
        j0 = jp * PANEL
        if plain2 and jp % 2 == 1:
            continue            # done with the panel before
        for i in range(b0, b1):
            oa = np.int64(i * Kc)
            oi = oa if sparse else np.int64(0)
            if rowbad[i] or panelbad[jp] or cbad[i, jp]:
                rare[i, jp] = True
                if not (plain2 and jp + 1 < NP):
                    continue
            if plain2 and jp + 1 < NP:
                for j in range(PANEL):
                    rv[j] = CV[i, j0 + j]
                    re[j] = CE[i, j0 + j]
                    rv2[j] = CV[i, j0 + PANEL + j]
                    re2[j] = CE[i, j0 + PANEL + j]
                ra, rb = _plain2(AVi, AEi, oa, RIf, oi, BVp, BEp, BV[jp + 1].ravel(), BE[jp + 1].ravel(), S, ka, fracf,
                                 rv, re, rv2, re2, w, w2, rpb, emino)
                if ra or rowbad[i] or panelbad[jp] or cbad[i, jp]:
                    rare[i, jp] = True
                else:
                    for j in range(PANEL):
                        D[i, j0 + j] = OB[j]
                if rb or rowbad[i] or panelbad[jp + 1] or cbad[i, jp + 1]:
                    rare[i, jp + 1] = True
                else:
                    for j in range(PANEL):
                        D[i, j0 + PANEL + j] = OB2[j]
                continue
            r = False
            if q == 1 and P == 0:
                for j in range(PANEL):
                    rv[j] = CV[i, j0 + j]
                    re[j] = CE[i, j0 + j]
                r = _chain8(AVi, AEi, oa, RIf, oi, BVp, BEp, 0, S, ka, fracf, sep, rv, re, w, rpb, rpa, emino)
            else:
                per = S // q
                seg = P if P > 0 else per
                have = serial
                if serial:
                    for j in range(PANEL):
                        MV[j] = CV[i, j0 + j]
                for sl in range(q):
                    shave = False
                    for s0 in range(sl * per, (sl + 1) * per, seg):
                        for j in range(PANEL):
                            rv[j] = 0.0
                            re[j] = _ZEXP
                        r |= _chain8(AVi, AEi, oa, RIf, oi, BVp, BEp, s0, s0 + seg, ka, fracf, sep, rv, re, w,
                                     rpb, rpa, emino)
                        if serial:
                            r |= _red8(MV, rv, w, rpr)
                        else:
                            folded, shave = _fold8(SV, rv, shave, w, rpr)
                            r |= folded
                    if not serial:
                        folded, have = _fold8(MV, SV, have, w, rpr)
                        r |= folded
                if not serial:
                    for j in range(PANEL):
                        SV[j] = CV[i, j0 + j]
                    r |= _red8(MV, SV, w, rpr)
                if rpd[0] != rpr[0]:       # narrow the reduction format into D's
                    r |= _round8_common(MV, OB, w[1], rpd)
            if r:
                rare[i, jp] = True
                continue
            for j in range(PANEL):
                D[i, j0 + j] = OB[j]


# --- the plain fused chain, several panels of one row at once (tensorcore.make_chain) ------------

#: panels per chain call, and the fallback for the rest
PANEL_GROUP = 4
_chain4 = make_chain(PANEL_GROUP)
_chain1 = make_chain(1)
_chain4s = make_chain(PANEL_GROUP, True)
_chain1s = make_chain(1, True)
#: instructions per pass over a block of rows (their B panels' slice stays in L1 / L2 meanwhile)
STEP_CHUNK = 4


@njit(cache=True, nogil=True)
def _plain_block(AVi, AEi, Kc, BV, BE, Cb, ctab, cmask, CTV, CTE, CTF, cemin, rowbad, panelbad, fracf, S, ka, rpb,
                 emino, b0, b1, D, rare, sep, rpa):
    """Rows b0..b1-1 of the chain without split-K or promotion, dense (sep: the two-block recipe, A and B
    rows in block order), PANEL_GROUP panels a chain call; C decoded here from its raw bits Cb (a panel
    with a NaN / inf C is left to exact_tasks)."""
    NP, K8 = BV.shape[0], BV.shape[1] * PANEL
    R = b1 - b0
    BVf = BV.ravel()
    BEf = BE.ravel()
    W = PANEL_GROUP * PANEL
    ACCV = np.empty((R, W), np.float64)
    ACCE = np.empty((R, W), np.float32)
    OB = np.empty((R, W), np.uint64)
    CF = np.empty((R, PANEL_GROUP), np.bool_)
    for jg in range(0, NP, PANEL_GROUP):
        npg = min(PANEL_GROUP, NP - jg)
        c0 = jg * PANEL
        for r in range(R):
            for p in range(npg):
                fin = True
                for j in range(p * PANEL, (p + 1) * PANEL):
                    v, e, f = _dec(Cb[b0 + r, c0 + j], ctab, cmask, CTV, CTE, CTF, cemin)
                    ACCV[r, j] = v
                    ACCE[r, j] = e
                    fin &= f
                CF[r, p] = fin
        for s0 in range(0, S, STEP_CHUNK):
            s1 = min(S, s0 + STEP_CHUNK)
            for r in range(R):
                oa = np.int64((b0 + r) * Kc)
                if npg == PANEL_GROUP and sep:
                    _chain4s(AVi, AEi, oa, BVf, BEf, np.int64(jg * K8), np.int64(K8), s0, s1, ka, ACCV[r], ACCE[r],
                             OB[r], fracf, rpb, emino, rpa)
                elif npg == PANEL_GROUP:
                    _chain4(AVi, AEi, oa, BVf, BEf, np.int64(jg * K8), np.int64(K8), s0, s1, ka, ACCV[r], ACCE[r],
                            OB[r], fracf, rpb, emino, rpa)
                else:
                    for p in range(npg):
                        o = np.int64((jg + p) * K8)
                        if sep:
                            _chain1s(AVi, AEi, oa, BVf, BEf, o, np.int64(K8), s0, s1, ka, ACCV[r, p * PANEL:],
                                     ACCE[r, p * PANEL:], OB[r, p * PANEL:], fracf, rpb, emino, rpa)
                        else:
                            _chain1(AVi, AEi, oa, BVf, BEf, o, np.int64(K8), s0, s1, ka, ACCV[r, p * PANEL:],
                                    ACCE[r, p * PANEL:], OB[r, p * PANEL:], fracf, rpb, emino, rpa)
        for r in range(R):
            i = b0 + r
            for p in range(npg):
                jp = jg + p
                if rowbad[i] or panelbad[jp] or not CF[r, p]:
                    rare[i, jp] = True
                else:
                    for j in range(PANEL):
                        D[i, jp * PANEL + j] = OB[r, p * PANEL + j]


# --- f64 (DMMA): the host's fma in k order -------------------------------------------------------

_EXP64 = np.uint64(0x7FF0000000000000)


@njit(cache=True, nogil=True, parallel=True)
def f64_rows(A, BV, C, D, r0, r1, rare, q64, q32):
    """acc = C; acc = fma(A[i, k], B[k, j], acc) for k = 0, 1, ... (the DMMA chain of every shape);
    A (M, K), C / D (M, N) float64, BV (N/8, K, 8) B in panels of 8 columns.  A non-finite result
    (NaN payload rules) or a host FPU not in its default state: rare[i, jp] = True, left to
    exact_tasks."""
    NP = BV.shape[0]
    K = A.shape[1]
    for i in prange(r0, r1):
        if not fp_env_ok(q64, q32):
            for jp in range(NP):
                rare[i, jp] = True
            continue
        a = A[i]
        acc = np.empty(PANEL, np.float64)
        for jp in range(NP):
            b = BV[jp]
            for j in range(PANEL):
                acc[j] = C[i, jp * PANEL + j]
            for k in range(K):
                x = a[k]
                for j in range(PANEL):
                    acc[j] = fma_native(x, b[k, j], acc[j])
            for j in range(PANEL):
                D[i, jp * PANEL + j] = acc[j]
                if (_f64_bits(acc[j]) & _EXP64) == _EXP64:
                    rare[i, jp] = True


# --- integers and b1: exact sums on widened values ----------------------------------------------

INT_MUL, INT_XOR = 0, 1


@njit(cache=True, nogil=True, parallel=True)
def int_rows(A, BT, C, D, r0, r1, ks, sat, op):
    """D = C + A @ B as the integer recipes compute it (:func:`warpsim.numerics.integer.int_dot` per
    instruction): A (M, K), BT (N, K) int16 values (b1: 0 / 1), C / D (M, N) int64 holding s32 values.
    Each instruction's sum is exact; the accumulator wraps to s32, or with ``sat`` (.satfinite) is
    clamped after every instruction.  op: INT_MUL (products; b1 .and.popc) or INT_XOR (b1 .xor.popc)."""
    N = D.shape[1]
    K = A.shape[1]
    S = K // ks
    nblocks = (r1 - r0 + ROW_BLOCK - 1) // ROW_BLOCK
    for blk in prange(nblocks):
        b0 = r0 + blk * ROW_BLOCK
        b1 = min(r1, b0 + ROW_BLOCK)
        for j in range(N):
            b = BT[j]
            for i in range(b0, b1):
                a = A[i]
                acc = C[i, j]
                for s in range(S):
                    av = a[s * ks:(s + 1) * ks]    # slices: provably in range, the loops vectorise
                    bv = b[s * ks:(s + 1) * ks]
                    part = np.int32(0)
                    if op == INT_XOR:
                        for t in range(ks):
                            part = np.int32(part + np.int32(av[t] ^ bv[t]))
                    else:
                        for t in range(ks):
                            part = np.int32(part + np.int32(av[t]) * np.int32(bv[t]))
                    acc += np.int64(part)
                    if sat:
                        acc = min(max(acc, -2147483648), 2147483647)
                acc = acc & 0xFFFFFFFF
                D[i, j] = acc - (np.int64(1) << 32) if acc >= (np.int64(1) << 31) else acc


# --- decoding matrices into the fast path's float64 values and alignment exponents -------------

@njit(cache=True, nogil=True, inline="always")
def _dec(x, table, mask, TV, TE, TF, emin):
    """(value, exponent, finite) of raw element bits x: by table (8 / 16-bit formats), or as f32
    bits with ``mask`` clearing the ignored low bits (tf32, f32)."""
    if table:
        return TV[x], TE[x], TF[x]
    u = np.uint32(np.uint64(x) & np.uint64(mask))
    v = np.float64(_bits_f32(u))
    mag = np.uint32(u & np.uint32(0x7FFFFFFF))
    if mag >= np.uint32(0x7F800000):
        return 0.0, _ZEXP, False
    if mag == 0:
        return v, _ZEXP, True
    ex = np.float32(np.int64((_f64_bits(v) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023)
    return v, max(ex, emin), True


@njit(cache=True, nogil=True, parallel=True)
def decode_rows(bits, table, mask, TV, TE, TF, emin, V, E, ok):
    """V, E (M, K) from raw bits (M, K); ok[i] = every element of row i finite."""
    M, K = bits.shape
    for i in prange(M):
        good = True
        for k in range(K):
            v, e, f = _dec(bits[i, k], table, mask, TV, TE, TF, emin)
            V[i, k] = v
            E[i, k] = e
            good &= f
        ok[i] = good


@njit(cache=True, nogil=True, parallel=True)
def decode_panels(bits, table, mask, TV, TE, TF, emin, V, E, ok):
    """V, E (N/8, K, 8) from raw bits (K, N): B in panels of 8 columns; ok[jp] = panel finite."""
    K, N = bits.shape
    NP = N // PANEL
    for jp in prange(NP):
        good = True
        for k in range(K):
            for j in range(PANEL):
                v, e, f = _dec(bits[k, jp * PANEL + j], table, mask, TV, TE, TF, emin)
                V[jp, k, j] = v
                E[jp, k, j] = e
                good &= f
        ok[jp] = good


# --- the exactly rounded reference of warpsim gemm's report -------------------------------------

_NPART = 256


@njit(cache=True, nogil=True)
def _grow(p, n, x):
    """Add x to the non-overlapping expansion p[0:n] (increasing magnitude); returns the new length."""
    j = 0
    for i in range(n):
        y = p[i]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[j] = lo
            j += 1
        x = hi
    if x != 0.0 or j == 0:
        p[j] = x
        j += 1
    return j


@njit(cache=True, nogil=True)
def _round_expansion(p, n):
    """The expansion's sum rounded to nearest-even float64 (Python's math.fsum finish)."""
    if n == 0:
        return 0.0
    n -= 1
    hi = p[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = p[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


@njit(cache=True, nogil=True, parallel=True)
def exact_products(A, BT, C, X, R):
    """X[i, j]: S rounded to float64; R[i, j]: the sign of S - X[i, j] (-1, 0, 1).  A, BT (B
    transposed), C: float64 values, finite."""
    M, N = X.shape
    K = A.shape[1]
    for i in prange(M):
        p = np.empty(_NPART, np.float64)
        q = np.empty(_NPART, np.float64)
        for j in range(N):
            n = 0
            for k in range(K):
                x = A[i, k] * BT[j, k]
                e = fma_native(A[i, k], BT[j, k], -x)
                n = _grow(p, n, x)
                if e != 0.0:
                    n = _grow(p, n, e)
            n = _grow(p, n, C[i, j])
            h = _round_expansion(p, n)
            X[i, j] = h
            for t in range(n):
                q[t] = p[t]
            m = _grow(q, n, -h)
            top = q[m - 1]
            R[i, j] = 1 if top > 0.0 else (-1 if top < 0.0 else 0)
