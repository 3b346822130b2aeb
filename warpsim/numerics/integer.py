"""Integer and single-bit dot products, exact as the H100 computes them.

Verified against every captured word of the 54 dense integer/b1 opcodes and
all sparse integer entries: the sum of exact products plus C, then either
wrapped to s32 (two's complement) or, with ``.satfinite``, clamped to the s32
range.  sm_90 emulates s4/u4 with two IMMA halves and a separate add, and b1
``.xor.popc`` from ``.and.popc``; neither changes a single word of this model.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

# parameter vector
P_A_BITS, P_A_SIGNED, P_B_BITS, P_B_SIGNED, P_SAT, P_BITOP = range(6)
BITOP_NONE, BITOP_XOR, BITOP_AND = 0, 1, 2
S32_MIN, S32_MAX = -(1 << 31), (1 << 31) - 1


def int_params(ins) -> np.ndarray:
    a, b = ins.elem("a"), ins.elem("b")
    bitop = {None: BITOP_NONE, "xor": BITOP_XOR, "and": BITOP_AND}[ins.bitop]
    return np.array([a.bits, a.signed, b.bits, b.signed, ins.satfinite, bitop], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def to_signed(x, bits, signed):
    """Raw bit pattern -> integer value."""
    v = np.int64(x)
    if signed and v >= (np.int64(1) << (bits - 1)):
        v -= np.int64(1) << bits
    return v


@njit(cache=True, nogil=True)
def int_dot(a, b, n, c, p):
    """sum_t a[t]*b[t] + c on raw bit patterns; returns the s32 result's raw bits."""
    bitop = p[P_BITOP]
    acc = to_signed(c, 32, True)
    if bitop == BITOP_XOR:
        for t in range(n):
            acc += np.int64(a[t] ^ b[t])
    elif bitop == BITOP_AND:
        for t in range(n):
            acc += np.int64(a[t] & b[t])
    else:
        ab, asg, bb, bsg = p[P_A_BITS], p[P_A_SIGNED], p[P_B_BITS], p[P_B_SIGNED]
        for t in range(n):
            acc += to_signed(a[t], ab, asg) * to_signed(b[t], bb, bsg)
    if p[P_SAT]:
        if acc > S32_MAX:
            acc = S32_MAX
        elif acc < S32_MIN:
            acc = S32_MIN
    return np.uint64(acc & 0xFFFFFFFF)


@intrinsic
def _ctpop(typingctx, x):
    """LLVM ctpop on an integer (one POPCNT instruction where the CPU has it)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@njit(cache=True, nogil=True, inline="always")
def popcount32(x):
    """Number of set bits of a 32-bit word, as int64."""
    return np.int64(_ctpop(np.uint32(x)))
