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


def _f(name, bits, e, m, dtype, *, ignored=0, inf=True):
    return ElemType(name, bits, "float", True, e, m, ignored, inf, np.dtype(dtype))


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
        _i("s8", 8, True, np.int8),
        _i("u8", 8, False, np.uint8),
        _i("s4", 4, True, ml_dtypes.int4),
        _i("u4", 4, False, ml_dtypes.uint4),
        _i("s32", 32, True, np.int32),
        ElemType("b1", 1, "bits", numpy_dtype=np.dtype(np.uint8)),
    )
}
