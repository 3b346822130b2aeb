"""Element values <-> their raw bit patterns, for every element type of :mod:`warpsim.isa.types`.

The one place where a number becomes the bits a register holds and back.  Raw patterns are
unsigned integers whose low ``t.bits`` bits are the element as it sits in a register (a 4-bit
e2m1 in an 8-bit ``.kind::f8f6f4`` container: its encoding in the low bits).  Values are numpy /
ml_dtypes arrays of the type's ``numpy_dtype`` (b1: uint8 0/1).

Conversion rules, which the front ends (``pack``/``unpack``, ``matmul``, ``wgmma``'s matrix path,
``gemm``) all inherit from here:

* float types: values are cast with numpy / ml_dtypes rounding (nearest even; ml_dtypes'
  saturation and NaN rules for the narrow formats); tf32 keeps all 32 bits of the f32 it is
  given (the hardware ignores the 13 low ones; :func:`exact_value` clears them);
* integer types: values must be integers within the type's range, else ValueError (no wrap, no
  clamp); decoding sign-extends signed types (s4 0xF -> -1);
* b1: only 0 and 1.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .types import SCALE_TYPES, TYPES, ElemType

#: unsigned numpy container of one element's bits, by register width
STORAGE = {4: np.dtype(np.uint8), 6: np.dtype(np.uint8), 8: np.dtype(np.uint8), 16: np.dtype(np.uint16),
           32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


def element_type(t) -> ElemType:
    """An :class:`ElemType`, or the type of that PTX name (operand types and block-scale types)."""
    if isinstance(t, ElemType):
        return t
    if isinstance(t, str):
        found = TYPES.get(t.lstrip(".")) or SCALE_TYPES.get(t.lstrip("."))
        if found is not None:
            return found
    raise ValueError(f"unknown element type {t!r}; known: {', '.join([*TYPES, *SCALE_TYPES])}")


def storage_dtype(t) -> np.dtype:
    """The unsigned numpy dtype that holds one raw element of ``t`` (uint8 for 1- to 8-bit types)."""
    t = element_type(t)
    return STORAGE.get(t.bits, np.dtype(np.uint8))


def to_values(raw, t) -> np.ndarray:
    """Raw bit patterns (any unsigned integer array) -> values in ``t.numpy_dtype``.

    Integers are sign-extended from ``t.bits``; narrow floats in a wider container read only
    their encoding's low bits; b1 gives uint8."""
    t = element_type(t)
    raw = np.asarray(raw)
    if t.kind == "bits":
        return raw.astype(np.uint8)
    if t.kind == "int":
        v = raw.astype(np.int64)
        if t.signed:
            v = np.where(v >= (1 << (t.bits - 1)), v - (1 << t.bits), v)
        return v.astype(t.numpy_dtype)
    if t.width < 8:   # e2m1 / e2m3 / e3m2: the encoding in the low bits of a byte (container bits ignored)
        raw = raw & np.uint64((1 << t.width) - 1)
    return raw.astype(STORAGE[t.bits]).view(t.numpy_dtype)


def to_bits(values, t) -> np.ndarray:
    """Values -> raw bit patterns as uint64 (the inverse of :func:`to_values`).

    Floats are cast to ``t.numpy_dtype`` (rounding as numpy / ml_dtypes do); integers must be
    integral and within [t.min_int, t.max_int]; b1 accepts 0 and 1 only.  Raises ValueError
    naming the type and the allowed range otherwise.  The input is never modified."""
    t = element_type(t)
    m = np.asarray(values)
    if t.kind == "bits":
        if not np.isin(m, (0, 1)).all():
            raise ValueError("b1 matrices may only hold 0 and 1")
        return m.astype(np.uint64)
    if t.kind == "int":
        v = m.astype(np.int64) if m.dtype.kind in "iub" or str(m.dtype) in ("int4", "uint4") else m
        if np.asarray(v).dtype.kind not in "iu":
            if not np.all(m == np.round(np.asarray(m, dtype=np.float64))):
                raise ValueError(f"{t.name} matrices need integer values")
            v = np.asarray(m, dtype=np.float64).astype(np.int64)
        if v.min(initial=0) < t.min_int or v.max(initial=0) > t.max_int:
            raise ValueError(f"{t.name} values must lie in [{t.min_int}, {t.max_int}]")
        return (v & ((1 << t.bits) - 1)).astype(np.uint64)
    bits = m.astype(t.numpy_dtype).view(STORAGE[t.bits]).astype(np.uint64)
    return bits & np.uint64((1 << t.width) - 1) if t.width < 8 else bits


def to_storage(values, t) -> np.ndarray:
    """Values -> raw bits in the cheapest container: floats as their C-contiguous unsigned storage
    integers (no copy when ``values`` already has the type), integers and b1 as :func:`to_bits`."""
    t = element_type(t)
    if t.is_float:
        return np.ascontiguousarray(np.asarray(values).astype(t.numpy_dtype, copy=False)).view(STORAGE[t.bits])
    return to_bits(values, t)


def exact_value(raw: int, t):
    """The exact value of one raw element: a Fraction, or a float for inf and NaN.

    tf32's ignored low bits are cleared, ue4m3's bit 7 (not part of the value) is dropped."""
    t = element_type(t)
    raw = int(raw)
    if t.kind != "float":
        v = raw
        if t.kind == "int" and t.signed and raw >= 1 << (t.bits - 1):
            v -= 1 << t.bits
        return Fraction(v)
    if t.ignored_low_bits:
        raw &= ~((1 << t.ignored_low_bits) - 1)
    if t.width < t.bits or t.width < 8:   # e2m1 / e2m3 / e3m2: the encoding in the low bits
        raw &= (1 << t.width) - 1
    if t.name == "ue4m3":                  # unsigned: bit 7 is not part of the value
        raw &= 0x7F
    x = float(np.array([raw], dtype=STORAGE[t.bits]).view(t.numpy_dtype)[0])
    return x if not math.isfinite(x) else Fraction(x)
