"""Jitted cores of ``wgmma``: every output element of every group, on decoded matrices.

The front end (:mod:`warpsim.api.wgmma`) gathers A (groups, 64, K), B^T (groups, N, K)
and C (groups, 64, N) raw element bits with vectorised index tables (registers:
:mod:`warpsim.isa.layouts`; shared memory: :mod:`warpsim.isa.smem`); one kernel
computes D through the engine's dot registry, the same primitives as ``mma`` (exact fused dot,
integer dot) and no Python per group or element.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jitcache import named_copy
from .kernel import DOT_KINDS, _dot
from .tc.wgmma import wg_gathered, wg_scratch

#: wgmma has no block scales: the dot's scale operands are empty
_NOSCALE = np.zeros(1, np.uint64)


def _matrix(kind, A, B, C, p, out):
    """out[g, i, j] = dot(A[g, i], B[g, i, j], K, C[g, i, j], p) for the engine's dot kind.

    B holds, per output row, the k-ordered column each output multiplies: dense wgmma passes B^T
    broadcast over the rows (no copy), sparse wgmma B gathered at the row's kept k."""
    G, M, K = A.shape
    N = B.shape[2]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = _dot(kind, A[g, i], B[g, i, j], K, C[g, i, j], p, _NOSCALE, _NOSCALE)


# distinct cache slots per version of the inlined arithmetic (see warpsim.engine.jitcache)
_matrix_jit = njit(cache=True, parallel=True)(named_copy(_matrix, "_wgmma_matrix"))


def matrix(kind: str, A, B, C, p, out) -> None:
    """D element bits into ``out`` (G, 64, N) from decoded A (G, 64, K), C (G, 64, N) and B: dense
    B^T (G, N, K) or sparse per-row columns (G, 64, N, K/2).  kind: a name of ``DOT_KINDS``."""
    if kind not in DOT_KINDS:
        raise NotImplementedError(f"dot kind {kind!r} has no wgmma kernel (have: {sorted(DOT_KINDS)})")
    if B.ndim == 3:
        B = np.broadcast_to(B[:, None], (B.shape[0], A.shape[1]) + B.shape[1:])
    _matrix_jit(DOT_KINDS[kind], A, B, C, np.asarray(p, dtype=np.int64), out)


def _dot_rows(kind, A, B, C, p, out):
    """out[i, j] = dot(A[i], B[j], K, C[i, j], p): some rows of one dense wgmma (A (R, K), B^T (N, K), C and out
    (R, N) element bits), serially."""
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j] = _dot(kind, A[i], B[j], A.shape[1], C[i, j], p, _NOSCALE, _NOSCALE)


#: _dot_rows for a caller already in jitted code (the native translator's warps, each computing its 16 rows of D)
dot_rows = njit(cache=True, nogil=True)(named_copy(_dot_rows, "_dot_rows"))


def _gathered_rows(kind, A, B, C, p, out):
    """out[i, j] = dot(A[i], B[i, j], K, C[i, j], p): some rows of one sparse wgmma (A (R, K/2) compressed, B
    (R, N, K/2) gathered at each row's kept columns, C and out (R, N) element bits) -- :func:`_matrix`'s sum for
    one group, serially."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            out[i, j] = _dot(kind, A[i], B[i, j], A.shape[1], C[i, j], p, _NOSCALE, _NOSCALE)


#: _gathered_rows for the native translator's warps (a sparse wgmma's 16 rows of each warp)
gathered_rows = njit(cache=True, nogil=True)(named_copy(_gathered_rows, "_gathered_rows"))
#: the float tensor-core kernel of single-pass fused wgmma recipes (engine.tensorcore.wgmma_runner's) on one group
#: of any number of rows M (a multiple of 4) whose raw A, B and C the caller has put in its working arrays (A by
#: row, B and C in panel order: tc.wgmma.wg_gathered), serially: for a caller already in jitted code
fused_rows = njit(cache=True, nogil=True, _nrt=False)(named_copy(wg_gathered.py_func, "_wg_gathered"))
fused_scratch = njit(cache=True, nogil=True)(named_copy(wg_scratch.py_func, "_wg_scratch"))


# --- D / C register words <-> the (G, 64, N) element matrix ---------------------------------------

@njit(cache=True, nogil=True, parallel=True)
def _words_to_matrix(words, flat, bits, out):
    """out[g, flat[t, j]] = element j of thread t's words (bits wide, element 0 in the low bits)."""
    G, T, _ = words.shape
    E = flat.shape[1]
    per = 32 // bits
    mask = np.uint64((1 << bits) - 1)
    for g in prange(G):
        for t in range(T):
            for j in range(E):
                w = np.uint64(words[g, t, j // per])
                out[g, flat[t, j]] = (w >> np.uint64((j % per) * bits)) & mask


@njit(cache=True, nogil=True, parallel=True)
def _matrix_to_words(D, flat, bits, out):
    """The inverse of _words_to_matrix: out[g, t, :] = thread t's words of the element matrix D (G, M*N)."""
    G, T, nw = out.shape
    E = flat.shape[1]
    per = 32 // bits
    mask = np.uint64((1 << bits) - 1)
    for g in prange(G):
        for t in range(T):
            for k in range(nw):
                v = np.uint64(0)
                for q in range(per):
                    j = k * per + q
                    if j < E:
                        v |= (D[g, flat[t, j]] & mask) << np.uint64(q * bits)
                out[g, t, k] = np.uint32(v)


def words_to_matrix(words, flat, bits: int, rows: int, cols: int):
    """(G, threads, words) uint32 register words -> (G, rows, cols) uint64 element bits; flat (threads,
    elements): each element's row * cols + col, every position once.  Elements of 8, 16 or 32 bits."""
    out = np.empty((words.shape[0], rows * cols), np.uint64)
    _words_to_matrix(np.ascontiguousarray(words), flat, bits, out)
    return out.reshape(words.shape[0], rows, cols)


def matrix_to_words(D, flat, bits: int, nwords: int):
    """(G, rows, cols) element bits -> (G, threads, nwords) uint32 register words (see words_to_matrix)."""
    G = D.shape[0]
    out = np.empty((G, flat.shape[0], nwords), np.uint32)
    _matrix_to_words(np.ascontiguousarray(D.reshape(G, -1), dtype=np.uint64), flat, bits, out)
    return out
