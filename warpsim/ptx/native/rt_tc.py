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


@njit(nogil=True)
def f32_to_half(w, eb, mb, nan):
    """The f32 word ``w`` rounded to nearest even in a 16-bit float of ``eb`` exponent and ``mb`` mantissa bits
    (f16: 5, 10; bf16: 8, 7) with infinities: overflow gives infinity, NaN the word ``nan`` (the
    interpreter's ``convert.float_to_float``)."""
    w = np.uint32(w)
    sign = np.int64(w >> np.uint32(31)) << (eb + mb)
    e = np.int64((w >> np.uint32(23)) & np.uint32(0xFF))
    m = np.int64(w & np.uint32(0x7FFFFF))
    inf = sign | (((np.int64(1) << eb) - 1) << mb)
    if e == 255:
        return np.uint64(nan) if m != 0 else np.uint64(inf)
    full, lsb = (m, -149) if e == 0 else (m | 0x800000, e - 150)
    if full == 0:
        return np.uint64(sign)
    top = lsb + 63 - _clz64(np.uint64(full))          # the exponent of the leading bit
    bias = (np.int64(1) << (eb - 1)) - 1
    te = max(top, 1 - bias)
    shift = te - mb - lsb                               # > 0 for these targets
    if shift > 40:                                      # below half the smallest subnormal: zero
        return np.uint64(sign)
    r = full >> shift
    rem = full - (r << shift)
    half = np.int64(1) << (shift - 1)
    if rem > half or (rem == half and (r & 1) == 1):
        r += 1
    if r == 0:
        return np.uint64(sign)
    if r >= np.int64(1) << (mb + 1):                    # the rounding carried into a new binade
        r >>= 1
        te += 1
    if r < np.int64(1) << mb:                           # subnormal
        return np.uint64(sign | r)
    biased = te + bias
    if biased >= (np.int64(1) << eb) - 1:
        return np.uint64(inf)
    return np.uint64(sign | (biased << mb) | (r - (np.int64(1) << mb)))


@njit(nogil=True)
def _clz64(x):
    n = 0
    while n < 64 and (x >> np.uint64(63 - n)) & np.uint64(1) == np.uint64(0):
        n += 1
    return n


@njit(nogil=True)
def flush32(w):
    """.ftz: an f32 subnormal word becomes the zero of its sign."""
    w = np.uint32(w)
    if (w & np.uint32(0x7F800000)) == np.uint32(0) and (w & np.uint32(0x7FFFFF)) != np.uint32(0):
        return w & np.uint32(0x80000000)
    return w
