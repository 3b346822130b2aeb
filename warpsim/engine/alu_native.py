"""PTX ALU rows on the host's own IEEE unit, where it computes exactly what the GPU does.

``fma.rn.f32`` is IEEE fusedMultiplyAdd in binary32 with ties to even and subnormals kept: the
host's ``llvm.fma.f32`` is that operation by definition, on a thread whose FPU rounds to nearest
without FTZ / DAZ (checked per call, :func:`hostfpu.fp_env_ok`).  Only the NaN word differs: the
GPU writes the canonical ``0x7fffffff``.  Where the check fails the caller uses the soft-float
kernel (``numerics.softfloat.fma_f32``), which is exact on any host.
"""

from __future__ import annotations

from numba import njit

from .hostfpu import PROBE32, PROBE64, fma_native, fp_env_ok


@njit(cache=True, nogil=True)
def _fma_f32_words(a, b, c, out, out_bits, q64, q32):
    if not fp_env_ok(q64, q32):
        return False
    for i in range(a.size):
        r = fma_native(a[i], b[i], c[i])
        out[i] = r
        if r != r:
            out_bits[i] = 0x7FFFFFFF
    return True


def fma_f32_words(a, b, c, out) -> bool:
    """out = fma.rn.f32(a, b, c) on float32 arrays (1-D, C-contiguous, out uint32 words); False (out
    untouched) when this thread's FPU is not in the IEEE default state."""
    return _fma_f32_words(a.view("f4"), b.view("f4"), c.view("f4"), out.view("f4"), out, PROBE64, PROBE32)
