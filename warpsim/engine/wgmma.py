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
