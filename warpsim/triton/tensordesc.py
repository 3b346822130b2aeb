"""Host-side tensor descriptors (``triton.tools.tensor_descriptor.TensorDescriptor``) on the warpsim driver.

Triton passes a descriptor argument in one of two forms (its CUDA launcher's): where the kernel was lowered
to TMA, a 128-byte ``CUtensorMap`` then the shape (i32) and strides (i64); otherwise the base pointer, shape
and strides (i64), the NaN-padding flag, then shape (i32) and strides (i64) again.  The CUtensorMap is the
CUDA driver's byte layout, encoded by :mod:`warpsim.isa.tensormap` from the arguments Triton gives
``cuTensorMapEncodeTiled``.
"""

from __future__ import annotations

from ..isa.tensormap import DATA_TYPES, SWIZZLES, encode_tiled

_DTYPE_OF_CODE = {code: name for name, (code, _, _) in DATA_TYPES.items()}
_SWIZZLE_OF_CODE = {code: name for name, code in SWIZZLES.items()}


def fill_tma_descriptor(ptr, swizzle, elem_size, elem_type, block_size, shape, strides, padding):
    """The 128 bytes Triton's ``fill_tma_descriptor`` asks the CUDA driver for (outermost dimension first in,
    innermost first in the map; byte strides of dimensions 1 .. rank-1; L2 promotion 128B)."""
    rank = len(block_size)
    if elem_type not in _DTYPE_OF_CODE or swizzle not in _SWIZZLE_OF_CODE:
        raise ValueError(f"tensor descriptor: element type code {elem_type} / swizzle code {swizzle} is not a "
                         "CUtensorMap enumeration value")
    dims = [int(s) for s in reversed(list(shape))]
    box = [int(b) for b in reversed(list(block_size))]
    gstrides = [int(elem_size) * int(s) for s in reversed(list(strides)[:-1])]
    return bytes(encode_tiled(_DTYPE_OF_CODE[elem_type], rank, int(ptr), dims, gstrides, box, [1] * rank,
                              "none", _SWIZZLE_OF_CODE[swizzle], "128B",
                              "nan_request_zero_fma" if padding == 1 else "none"))


def kernel_args(desc, meta, mem, what):
    """The PTX parameters of one TensorDescriptor argument (the base tensor mapped into ``mem``)."""
    from triton.backends.nvidia.driver import TMA_DTYPE_DEVICE_TO_HOST

    if not hasattr(desc, "base") or not hasattr(desc, "block_shape"):
        raise TypeError(f"{what}: the kernel takes a tensor descriptor, got {type(desc).__name__} "
                        "(pass triton.tools.tensor_descriptor.TensorDescriptor)")
    base = mem.pointer(desc.base, what)
    shape, strides = [int(s) for s in desc.shape], [int(s) for s in desc.strides]
    if meta is None:
        return [base, *shape, *strides, int(desc.padding == "nan"), *shape, *strides]
    if strides[-1] != 1:
        raise ValueError(f"{what}: the innermost stride of a TMA descriptor must be 1, got {strides[-1]}")
    tma_shape = list(shape)
    if meta["fp4_padded"]:
        tma_shape[-1] *= 2
    tmap = fill_tma_descriptor(base, meta["swizzle"], meta["elem_size"], TMA_DTYPE_DEVICE_TO_HOST[meta["elem_type"]],
                               meta["block_size"], tma_shape, strides, 1 if desc.padding == "nan" else 0)
    return [tmap, *tma_shape, *strides]
