"""Jitted core of ``tcgen05.mma``: every output element of every group, on decoded matrices.

The front end (:mod:`warpsim.api.tcgen05`) hands over raw element bits A (G, M, K), B^T (G, N, K),
C (G, M, N) and, for block-scaled kinds, each row's / column's scale-factor bits (G, M, nscale) and
(G, N, nscale); one kernel computes D through the engine's dot registry -- the same exact fused dot
and integer dot as ``mma`` and ``wgmma`` -- with no Python per group or element.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .jitcache import named_copy
from .kernel import DOT_KINDS, _dot


def _matrix(kind, A, B, C, p, SA, SB, out):
    G, M, K = A.shape
    N = B.shape[1]
    for gi in prange(G * M):
        g = gi // M
        i = gi % M
        for j in range(N):
            out[g, i, j] = _dot(kind, A[g, i], B[g, j], K, C[g, i, j], p, SA[g, i], SB[g, j])


# its own cache slot (see warpsim.engine.jitcache.named_copy)
_matrix_jit = njit(cache=True, parallel=True)(named_copy(_matrix, "_tcgen05_matrix"))


def matrix(kind: str, A, B, C, p, SA=None, SB=None) -> np.ndarray:
    """D element bits (G, M, N) from A (G, M, K), B^T (G, N, K), C (G, M, N) and optional scale bits
    SA (G, M, nscale), SB (G, N, nscale); kind: a name of ``DOT_KINDS``."""
    if kind not in DOT_KINDS:
        raise NotImplementedError(f"dot kind {kind!r} has no tcgen05 kernel (have: {sorted(DOT_KINDS)})")
    G, M, _ = A.shape
    N = B.shape[1]
    if SA is None:
        SA = np.zeros((G, M, 1), np.uint64)
        SB = np.zeros((G, N, 1), np.uint64)
    out = np.zeros((G, M, N), dtype=np.uint64)
    _matrix_jit(DOT_KINDS[kind], np.ascontiguousarray(A, np.uint64), np.ascontiguousarray(B, np.uint64),
                np.ascontiguousarray(C, np.uint64), np.asarray(p, dtype=np.int64),
                np.ascontiguousarray(SA, np.uint64), np.ascontiguousarray(SB, np.uint64), out)
    return out


def compute(ins, A, B, C, SA=None, SB=None) -> np.ndarray:
    """D element bits (G, M, N) of a tcgen05 catalog ``Instruction`` (``warpsim.isa.tcgen05.instruction``):
    the integer dot for kind::i8, the sm_100 tcgen05 recipe of the exact fused dot otherwise."""
    if ins.kind == "i8":
        from ..numerics.integer import int_params

        return matrix("int", A, B, C, int_params(ins))
    from ..numerics.recipes import recipe_params

    return matrix("tc", A, B, C, recipe_params(ins, "sm_100"), SA, SB)
