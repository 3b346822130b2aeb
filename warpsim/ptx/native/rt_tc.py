"""The jitted runtime of the tensor-core rows (:mod:`.lower_mma`): one warp's register words in and out of an
``mma`` call, and ``ldmatrix`` / ``stmatrix`` between registers and shared memory.

Helpers rather than generated lines: a kernel's statements then compile to calls (numba's compile time
grows with a function's size).  ``R`` is the generated kernel's file of 32-bit registers (registers,
threads); ``regs`` a tuple of register rows (int64, not literals: one compiled helper for every
statement); ``base`` the warp's first thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...engine import warp_mma_jit as _j
from .rt import peek2, peek4, poke2, poke4


def _on_registers(fn):
    """``fn`` (a path of :mod:`warpsim.engine.warp_mma_jit`) on the warp's registers: the operands' words
    gathered, D's scattered back."""
    @njit(nogil=True)
    def call(plan, R, base, ra, rb, rc, rd):
        a = np.empty((1, 32, len(ra)), np.uint32)
        b = np.empty((1, 32, len(rb)), np.uint32)
        c = np.empty((1, 32, len(rc)), np.uint32)
        d = np.empty((1, 32, len(rd)), np.uint32)
        for l in range(32):
            for i in range(len(ra)):
                a[0, l, i] = R[ra[i], base + l]
            for i in range(len(rb)):
                b[0, l, i] = R[rb[i], base + l]
            for i in range(len(rc)):
                c[0, l, i] = R[rc[i], base + l]
        fn(plan, a, b, c, d)
        for l in range(32):
            for i in range(len(rd)):
                R[rd[i], base + l] = d[0, l, i]
    return call


#: mma_<path>(plan, R, base, A rows, B rows, C rows, D rows) for each path of the engine
mma_int, mma_tc, mma_generic = (_on_registers(f) for f in (_j.mma_int, _j.mma_tc, _j.mma_generic))


@njit(nogil=True)
def ldmatrix(R, base, regs, smem, rows, trans):
    """Matrix k of ``regs`` (8x8 b16) from the shared-memory rows rows[8k..8k+7] (host addresses): lane l
    takes row l/4, columns 2(l%4), 2(l%4)+1, of the matrix or (``trans``) of its transpose."""
    for k in range(len(regs)):
        for l in range(32):
            if trans:
                r0 = smem + np.int64(rows[8 * k + 2 * (l & 3)]) + 2 * (l >> 2)
                r1 = smem + np.int64(rows[8 * k + 2 * (l & 3) + 1]) + 2 * (l >> 2)
                v = peek2(r0) | (peek2(r1) << np.uint64(16))
            else:
                v = peek4(smem + np.int64(rows[8 * k + (l >> 2)]) + 4 * (l & 3))
            R[regs[k], base + l] = np.uint32(v)


@njit(nogil=True)
def stmatrix(R, base, regs, smem, rows, trans):
    """The inverse of :func:`ldmatrix`: each lane's word of matrix k to the rows rows[8k..8k+7]."""
    for k in range(len(regs)):
        for l in range(32):
            v = R[regs[k], base + l]
            if trans:
                poke2(smem + np.int64(rows[8 * k + 2 * (l & 3)]) + 2 * (l >> 2), v & np.uint32(0xFFFF))
                poke2(smem + np.int64(rows[8 * k + 2 * (l & 3) + 1]) + 2 * (l >> 2), v >> np.uint32(16))
            else:
                poke4(smem + np.int64(rows[8 * k + (l >> 2)]) + 4 * (l & 3), v)
