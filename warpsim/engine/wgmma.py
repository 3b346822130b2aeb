"""Jitted cores of ``wgmma``: every output element of every group, on decoded matrices.

The front end (:mod:`warpsim._wgmma`) gathers A (groups, 64, K), B^T (groups, N, K)
and C (groups, 64, N) raw element bits with vectorised index tables (registers:
:mod:`warpsim.isa.layouts`; shared memory: :mod:`warpsim.isa.smem`); these kernels
compute D with the same dot-product primitives as ``mma`` (exact fused dot,
integer dot) and no Python per group or element.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..numerics.fused import tc_dot
from ..numerics.integer import int_dot
from .kernel import _named

#: wgmma has no block scales: the dot's scale operands are empty
_NOSCALE = np.zeros(1, np.uint64)


def _tc_matrix(A, B, C, p, out):
    """out[g, i, j] = tc_dot(A[g, i], B[g, j], K, C[g, i, j], p)."""
    G, M, K = A.shape
    N = B.shape[1]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = tc_dot(A[g, i], B[g, j], K, C[g, i, j], p, _NOSCALE, _NOSCALE)


def _int_matrix(A, B, C, p, out):
    """out[g, i, j] = int_dot(A[g, i], B[g, j], K, C[g, i, j], p)."""
    G, M, K = A.shape
    N = B.shape[1]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = int_dot(A[g, i], B[g, j], K, C[g, i, j], p)


# distinct cache slots per version of the inlined arithmetic (see warpsim.engine.kernel._named)
tc_matrix = njit(cache=True, parallel=True)(_named(_tc_matrix, "_wgmma_tc_matrix"))
int_matrix = njit(cache=True, parallel=True)(_named(_int_matrix, "_wgmma_int_matrix"))


def _tc_matrix_sp(A, BS, C, p, out):
    """Sparse A: out[g, i, j] = tc_dot(A[g, i], BS[g, i, j], K/2, C[g, i, j], p), BS = B at the kept columns."""
    G, M, K = A.shape
    N = BS.shape[2]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = tc_dot(A[g, i], BS[g, i, j], K, C[g, i, j], p, _NOSCALE, _NOSCALE)


def _int_matrix_sp(A, BS, C, p, out):
    """Sparse A, integer: out[g, i, j] = int_dot(A[g, i], BS[g, i, j], K/2, C[g, i, j], p)."""
    G, M, K = A.shape
    N = BS.shape[2]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = int_dot(A[g, i], BS[g, i, j], K, C[g, i, j], p)


tc_matrix_sp = njit(cache=True, parallel=True)(_named(_tc_matrix_sp, "_wgmma_tc_matrix_sp"))
int_matrix_sp = njit(cache=True, parallel=True)(_named(_int_matrix_sp, "_wgmma_int_matrix_sp"))
