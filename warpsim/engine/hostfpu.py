"""The host FPU as an exact IEEE machine, and the check that it is in the state we rely on.

The fast paths compute IEEE operations (nearest even, gradual underflow) on the host's
own floats.  That is exact only while the FPU rounds to nearest and keeps subnormals
(no flush-to-zero / denormals-are-zero); :func:`fp_env_ok` checks exactly that, on the
thread that is about to compute, against probe operands passed as data (so that LLVM
cannot fold them).  :func:`fma_native` is ``llvm.fma``: correctly rounded by definition.
Never fast-math: numba marks nothing ``contract`` here, so LLVM neither fuses nor
reorders anything else.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from llvmlite import ir
from numba import types as _nbt
from numba.core import cgutils
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def fma_native(typingctx, x, y, z):
    """Correctly rounded x * y + z on host floats (``llvm.fma``); all three of one float type."""
    if not (isinstance(x, _nbt.Float) and x == y and y == z and x in (_nbt.float32, _nbt.float64)):
        return None
    sig = x(x, y, z)

    def codegen(context, builder, signature, args):
        ty = args[0].type
        fnty = ir.FunctionType(ty, [ty, ty, ty])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma." + ("f64" if ty == ir.DoubleType() else "f32"))
        return builder.call(fn, args)

    return sig, codegen


#: probe operands for fp_env_ok (passed as data so that LLVM cannot fold them)
PROBE64 = np.array([2.0 ** -1022, 0.5, 0.0, 2.0 ** -1023, 2.0, 1.0, 2.0 ** -53, 3 * 2.0 ** -54],
                    dtype=np.float64)
PROBE32 = PROBE64.astype(np.float32)
PROBE32[:5] = np.array([2.0 ** -126, 0.5, 0.0, 2.0 ** -127, 2.0], dtype=np.float32)
PROBE32[6:] = np.array([2.0 ** -24, 3 * 2.0 ** -25], dtype=np.float32)


@njit(cache=True, nogil=True)
def fp_env_ok(q64, q32):
    """Whether the host rounds to nearest even and keeps subnormals (no FTZ / DAZ), f64 and f32."""
    return _probe_ok(q64) and _probe_ok(q32)


@njit(cache=True, nogil=True)
def _probe_ok(q):
    """One format (q: tiny normal, 1/2, 0, tiny/2, 2, 1, half an ulp of 1, 3/4 ulp of 1)."""
    tiny, half, zero, sub, two, one, tie, above = q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]
    if fma_native(tiny, half, zero) != sub:          # FTZ flushes the subnormal result
        return False
    if fma_native(sub, two, zero) != tiny:           # DAZ flushes the subnormal input
        return False
    if sub * two != tiny or tiny * half != sub or sub + sub != tiny:
        return False
    if fma_native(one, one, tie) != one or one + tie != one:        # tie -> even (not up)
        return False
    if fma_native(one, one, above) == one or one + above == one:    # above half -> up (not RZ/RD)
        return False
    if fma_native(-one, one, -above) == -one or -one - above == -one:  # not RU / RZ
        return False
    return True
