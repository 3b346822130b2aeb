"""Host-side tensor descriptors (``triton.tools.tensor_descriptor.TensorDescriptor``) on the warpsim driver."""

from __future__ import annotations


def kernel_args(desc, meta, mem, what):
    raise NotImplementedError(f"{what}: host-side TensorDescriptor arguments are not run by the warpsim driver yet")


def fill_tma_descriptor(ptr, swizzle, elem_size, elem_type, block_size, shape, strides, padding):
    raise NotImplementedError("TMA descriptors are not filled by the warpsim driver yet")
