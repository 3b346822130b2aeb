"""Element types that appear in PTX ``mma`` operands.

Each type is described by data only: its width in a register, whether it is a
float (and then its exponent/mantissa split), an integer (and its signedness),
or single bits.  Everything that needs to know about a type (packing, input
generation, the arithmetic) reads these fields instead of naming types.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElemType:
    name: str            # PTX spelling without the dot, e.g. "f16"
    bits: int            # bits the element occupies inside a register
    kind: str            # "float", "int" or "bits"
    signed: bool = False
    exp_bits: int = 0    # floats: exponent field width
    man_bits: int = 0    # floats: stored mantissa bits that take part in arithmetic
    ignored_low_bits: int = 0   # floats: low register bits the hardware ignores (tf32)
    has_inf: bool = True        # floats: e4m3 has no infinities
    numpy_dtype: object = None  # dtype used by pack/unpack for matrices
    has_nan: bool = True        # floats: the finite-only formats (e2m1, e2m3, e3m2) have no NaN either
    fmt_bits: int = 0           # floats: the format's own width when it sits in a wider container
                                # (``bits``); 0 means ``bits``.  Unsigned scale formats (ue8m0) have
                                # no sign bit: their width is ``bits`` and ``signed`` is False.

    @property
    def width(self) -> int:
        """Bits of the encoding itself (a 4-bit e2m1 in an 8-bit container: 4)."""
        return self.fmt_bits or self.bits

    @property
    def finite_only(self) -> bool:
        return self.is_float and not self.has_inf and not self.has_nan

    def in_container(self, bits: int) -> "ElemType":
        """The same format occupying ``bits`` register bits, its encoding in the low bits
        (``.kind::f8f6f4`` puts e2m1/e2m3/e3m2 in 8-bit containers)."""
        from dataclasses import replace

        return self if bits == self.bits else replace(self, bits=bits, fmt_bits=self.width)

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def min_int(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max_int(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1


def _f(name, bits, e, m, dtype, *, ignored=0, inf=True, nan=True, signed=True):
    return ElemType(name, bits, "float", signed, e, m, ignored, inf, np.dtype(dtype), nan)


def _i(name, bits, signed, dtype):
    return ElemType(name, bits, "int", signed, numpy_dtype=np.dtype(dtype))


TYPES: dict[str, ElemType] = {
    t.name: t
    for t in (
        _f("f16", 16, 5, 10, np.float16),
        _f("bf16", 16, 8, 7, ml_dtypes.bfloat16),
        # tf32 lives in a 32-bit register; its 13 low mantissa bits are ignored.
        _f("tf32", 32, 8, 10, np.float32, ignored=13),
        _f("f32", 32, 8, 23, np.float32),
        _f("f64", 64, 11, 52, np.float64),
        _f("e4m3", 8, 4, 3, ml_dtypes.float8_e4m3fn, inf=False),
        _f("e5m2", 8, 5, 2, ml_dtypes.float8_e5m2),
        # sm_120a low-precision types (OCP MX formats): finite-only, no inf and no NaN
        _f("e3m2", 6, 3, 2, ml_dtypes.float6_e3m2fn, inf=False, nan=False),
        _f("e2m3", 6, 2, 3, ml_dtypes.float6_e2m3fn, inf=False, nan=False),
        _f("e2m1", 4, 2, 1, ml_dtypes.float4_e2m1fn, inf=False, nan=False),
        _i("s8", 8, True, np.int8),
        _i("u8", 8, False, np.uint8),
        _i("s4", 4, True, ml_dtypes.int4),
        _i("u4", 4, False, ml_dtypes.uint4),
        _i("s32", 32, True, np.int32),
        ElemType("b1", 1, "bits", numpy_dtype=np.dtype(np.uint8)),
    )
}

#: Block-scale factor types (the ``.stype`` of ``mma ... .block_scale``): not A/B/C/D types.
#: ue8m0: an 8-bit biased exponent, value 2**(e - 127), 0xFF is NaN, no zero and no sign.
#: ue4m3: e4m3 without its sign (bit 7 is not part of the value; warpsim ignores it, as MMA-Sim does).
SCALE_TYPES: dict[str, ElemType] = {
    t.name: t
    for t in (
        _f("ue8m0", 8, 8, 0, ml_dtypes.float8_e8m0fnu, inf=False, signed=False),
        _f("ue4m3", 8, 4, 3, ml_dtypes.float8_e4m3fn, inf=False, signed=False),
    )
}
