"""The wgmma kernels: dense single-pass fused groups on decoded matrices or on D's register words.

Both decode a group once (A by row, B as N/8 row-major (K, 8) panels, C as N/8 (M, 8) panels) and run
every 8-column panel as one _rows_fused call, as an m16n8 warp is; they differ in where C comes from
and D goes (matrices, or the threads' register words)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ...numerics.fused import P_D, P_FRAC
from ..hostfpu import fp_env_ok as _fp_env_ok
from .dot import _decode_abc, _rows_fused


@njit(nogil=True, inline="always")
def _scratch(M, N, K):
    """A group's raw elements (A, B, C) and their decoded values and exponents (AV, AE, BV, BE, CV, CE)."""
    return (np.empty(M * K, np.uint32), np.empty(N * K, np.uint32), np.empty(M * N, np.uint32),
            np.empty(M * K, np.float64), np.empty(M * K, np.float32), np.empty(N * K, np.float64),
            np.empty(N * K, np.float32), np.empty(M * N, np.float64), np.empty(M * N, np.float32))


@njit(nogil=True, inline="always")
def b_place(j, t, K):
    """Where element (j, t) of a group's B^T (N, K) lies in its working array RB: N/8 row-major (K, 8) panels."""
    return (j >> 3) * K * 8 + (j & 7) + t * 8


@njit(nogil=True, inline="always")
def _gather_ab(A, B, RA, RB):
    """A group's A (M, K) by row into RA and B^T (N, K) as panels into RB (b_place)."""
    M, K = A.shape
    for i in range(M):
        for t in range(K):
            RA[i * K + t] = np.uint32(A[i, t])
    for j in range(B.shape[0]):
        for t in range(K):
            RB[b_place(j, t, K)] = np.uint32(B[j, t])


@njit(nogil=True, inline="always")
def _panel(M, K, jc, AV, AE, BV, BE, CV, CE, fracf, rp, VM, DB, finite):
    """8-column panel jc of a decoded group as one fused block: its sums and D bits into VM / DB (M * 8)."""
    bo = jc * K * 8
    co = jc * M * 8
    _rows_fused(M, K, AV, AE, None, False, BV[bo:bo + K * 8], BE[bo:bo + K * 8], CV[co:co + M * 8],
                CE[co:co + M * 8], fracf, rp, VM, DB, finite)


def _wg_kernel(A, B, C, out, p, q, scale, emin, rp, need, q64, q32):
    """Every group of a dense single-pass fused wgmma: out[g, i, j] = D bits of row i, column j.

    A (G, M, K), B^T (G, N, K), C (G, M, N): raw element bits (uint64) as the validated call decodes
    them; N a multiple of 8.  need[g] = 1: the group was left to the exact kernel (a host FPU not in its
    default state); 0: computed here (wg_group)."""
    G, M, K = A.shape
    N = B.shape[1]
    for g in prange(G):
        if not _fp_env_ok(q64, q32):
            need[g] = 1
            continue
        need[g] = 0
        wg_group(A[g], B[g], C[g], out[g], p, q, scale, emin, rp, wg_scratch(M, N, K))


@njit(nogil=True)
def wg_scratch(M, N, K):
    """wg_group's working arrays for groups of M x N x K (made once for many groups): _scratch's, and every
    panel's sums and D bits (VM, DB, in panel order)."""
    return _scratch(M, N, K) + (np.empty(M * N, np.float64), np.empty(M * N, np.uint64))


@njit(nogil=True)
def wg_panels(A, B, p, q, scale, emin, rp, S):
    """D's bits (not yet shifted into place: << p[P_D + 3]) of one group into DB = S[10], in panel order
    ((col // 8) * M * 8 + row * 8 + col % 8), from A (M, K) and B^T (N, K) raw element bits and C's bits, which
    the caller has put in RC = S[2] in panel order.  The group is decoded once (A by row, B as N/8 row-major
    (K, 8) panels) and every 8-column panel is one _rows_fused call, as an m16n8 warp is.  NaN / inf elements are
    decided per element (_decode).  The caller has checked the host FPU's state."""
    M, K = A.shape
    _gather_ab(A, B, S[0], S[1])
    wg_gathered(M, B.shape[0], K, p, q, scale, emin, rp, S)


@njit(nogil=True)
def wg_gathered(M, N, K, p, q, scale, emin, rp, S):
    """wg_panels on a group whose raw elements are in place already (RA = S[0] by row, RB = S[1] as N/8 row-major
    (K, 8) panels, RC = S[2] in panel order): what a caller that gathers A and B straight into that order calls."""
    fracf = np.float64(p[P_FRAC])
    RA, RB, RC, AV, AE, BV, BE, CV, CE, VM, DB = S
    special = _decode_abc(RA, RB, RC, q, scale, emin, AV, AE, BV, BE, CV, CE)
    M8 = M * 8
    for jc in range(N // 8):
        o = jc * M8
        _panel(M, K, jc, AV, AE, BV, BE, CV, CE, fracf, rp, VM[o:o + M8], DB[o:o + M8], not special)


@njit(nogil=True)
def wg_group(A, B, C, out, p, q, scale, emin, rp, S):
    """One group of a dense single-pass fused wgmma on the working arrays S (wg_scratch): out[i, j] = D bits of
    row i, column j from A (M, K), B^T (N, K), C (M, N) raw element bits (wg_panels)."""
    M = A.shape[0]
    N = B.shape[0]
    igd = np.uint64(p[P_D + 3])
    RC, DB = S[2], S[10]
    for i in range(M):
        for j in range(N):
            RC[(j >> 3) * M * 8 + i * 8 + (j & 7)] = np.uint32(C[i, j])
    wg_panels(A, B, p, q, scale, emin, rp, S)
    for i in range(M):
        for j in range(N):
            out[i, j] = DB[(j >> 3) * M * 8 + i * 8 + (j & 7)] << igd


def _wg_words_kernel(A, B, CW, sd, flat, cword, cshift, bits, OW, p, q, scale, emin, rp, need, q64, q32, nchunks):
    """_wg_kernel reading C from D's register words and writing D's words itself (8, 16 or 32-bit
    elements): CW / OW (G, 128, words) uint32, flat (128, elements) each element's place in panel order
    ((col // 8) * M * 8 + row * 8 + col % 8), cword / cshift its word and bit offset in the thread's
    words; sd[g]: scale-d (0: C is zero).  Each 8-column panel is one warp-level fused block
    (_rows_fused: rows side by side, int64 sums where no element is NaN / inf).  The groups run in
    nchunks chunks, each allocating its scratch once (a group's C / D arrays are large enough for
    malloc to map and unmap them every time).  need[g] as _wg_kernel's."""
    G, M, K = A.shape
    N = B.shape[1]
    NC = N // 8
    T, E = flat.shape
    nw = OW.shape[2]
    fracf = np.float64(p[P_FRAC])
    igd = np.uint64(p[P_D + 3])
    mask = np.uint32((1 << bits) - 1) if bits < 32 else np.uint32(0xFFFFFFFF)
    M8 = M * 8
    for ch in prange(nchunks):
        g0 = ch * G // nchunks
        g1 = (ch + 1) * G // nchunks
        RA, RB, RC, AV, AE, BV, BE, CV, CE = _scratch(M, N, K)
        DB = np.empty(M * N, np.uint64)
        VM = np.empty(M * N, np.float64)
        for g in range(g0, g1):
            if not _fp_env_ok(q64, q32):
                need[g] = 1
                continue
            need[g] = 0
            _gather_ab(A[g], B[g], RA, RB)
            if sd[g] == 0:
                RC[:] = 0
            elif bits == 32:
                for th in range(T):
                    for j in range(E):
                        RC[flat[th, j]] = CW[g, th, j]
            else:
                for th in range(T):
                    for j in range(E):
                        RC[flat[th, j]] = (CW[g, th, cword[j]] >> cshift[j]) & mask
            special = _decode_abc(RA, RB, RC, q, scale, emin, AV, AE, BV, BE, CV, CE)
            for jc in range(NC):        # each 8-column panel: C, D and the sums in panel order
                o = jc * M8
                _panel(M, K, jc, AV, AE, BV, BE, CV, CE, fracf, rp, VM[o:o + M8], DB[o:o + M8], not special)
            if bits == 32:
                for th in range(T):
                    for j in range(E):
                        OW[g, th, j] = np.uint32(DB[flat[th, j]] << igd)
            else:
                for th in range(T):
                    for w in range(nw):
                        OW[g, th, w] = 0
                    for j in range(E):
                        OW[g, th, cword[j]] |= (np.uint32(DB[flat[th, j]] << igd) & mask) << cshift[j]
