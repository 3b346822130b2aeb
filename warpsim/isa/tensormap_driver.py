"""Decoding ``CUtensorMap`` bytes as the CUDA driver (13.0, H100, driver 580) writes them.

Minimal and separate on purpose: the full encoder/decoder is :mod:`warpsim.isa.tensormap` (its
``LAYOUT`` is provisional until driver captures are fitted).  This module reads only what the
sixteen driver-encoded descriptors inside ``tests/golden/cutlass3_sm90a.npz`` show -- rank-3
tiles of uint8 / float16 / float32 with a 128B swizzle -- and refuses any descriptor with bits
it has not seen, instead of guessing.  Fields as fitted (bit 0 = bit 0 of byte 0, little-endian):

==================  ======================  =================================================
field               where                   observed
==================  ======================  =================================================
global address      bytes 0..7
data type           bits 71..73             0 uint8, 1 float16, 7 float32 (an internal code,
                                            not the ``CU_TENSOR_MAP_DATA_TYPE`` value)
(constant)          bit 69                  always 1 (L2 promotion 128B?  not separable yet)
swizzle             bits 77..78             3 = 128B (only value seen)
rank - 1            bits 81..83             2 (only value seen)
stride[0] >> 4      bytes 12..15            dimension 1's byte stride
global dim - 1      u32 at bytes 32 + 4 i
box dim - 1         byte 55 + i
box bytes           u32 at bytes 64..67     the transaction count of one copy
(constant)          byte 73                 always 0x04
==================  ======================  =================================================

Every other byte was zero in all sixteen, including where stride[1] (the batch stride; CUTLASS
passes 0 for a batch of one) must live: a rank-3 descriptor here decodes with stride[1] = 0,
which is harmless while dimension 2 has extent 1 and is refused otherwise.  Element strides are
1 and the OOB fill is 'none' in every observed descriptor.
"""

from __future__ import annotations

from .tensormap import TENSORMAP_BYTES, TensorMap, _as_bytes

#: internal data-type code (bits 71..73) -> tensormap data type name, as observed
DRIVER_DTYPES = {0: "uint8", 1: "float16", 7: "float32"}
_ELEM_BYTES = {"uint8": 1, "float16": 2, "float32": 4}


def _bits(word, lo, n):
    return (word >> lo) & ((1 << n) - 1)


def _known_mask(rank):
    m = (1 << 64) - 1                                          # address
    m |= 0x7 << 71 | 1 << 69 | 0x3 << 77 | 0x7 << 81          # dtype, constant, swizzle, rank
    m |= 0xFFFFFFFF << 96                                      # stride[0] >> 4
    for i in range(rank):
        m |= 0xFFFFFFFF << (8 * (32 + 4 * i))                  # dims
        m |= 0xFF << (8 * (55 + i))                            # box
    m |= 0xFFFFFFFF << (8 * 64)                                # box bytes
    m |= 0xFF << (8 * 73)                                      # constant 0x04
    return m


def decode_driver_tensormap(data) -> TensorMap:
    """128 bytes written by ``cuTensorMapEncodeTiled`` -> :class:`TensorMap` (the observed subset only).

    Raises ValueError naming the field for anything outside what the captured descriptors show.
    """
    raw = _as_bytes(data)
    word = int.from_bytes(raw, "little")
    rank = _bits(word, 81, 3) + 1
    if rank != 3:
        raise ValueError(f"driver tensormap: rank field decodes to {rank}; only rank-3 descriptors have been "
                         "captured from the driver (warpsim.isa.tensormap_driver)")
    stray = word & ~_known_mask(rank)
    if stray:
        raise ValueError(f"driver tensormap has bits set where no captured descriptor had any (mask {stray:#x}); "
                         "their meaning is not known yet")
    if not _bits(word, 69, 1) or _bits(word, 8 * 73, 8) != 0x04:
        raise ValueError("driver tensormap: the constant bits every captured descriptor has (bit 69, byte 73 = 0x04) "
                         "differ; not a descriptor of the observed kind")
    code = _bits(word, 71, 3)
    if code not in DRIVER_DTYPES:
        raise ValueError(f"driver tensormap: data-type code {code} was not observed; known {DRIVER_DTYPES}")
    dtype = DRIVER_DTYPES[code]
    sw = _bits(word, 77, 2)
    if sw != 3:
        raise ValueError(f"driver tensormap: swizzle code {sw} was not observed (only 3 = 128B)")
    address = _bits(word, 0, 64)
    dims = tuple(_bits(word, 8 * (32 + 4 * i), 32) + 1 for i in range(rank))
    box = tuple(_bits(word, 8 * (55 + i), 8) + 1 for i in range(rank))
    strides = (_bits(word, 96, 32) << 4, 0)
    if dims[2] != 1:
        raise ValueError(f"driver tensormap: dimension 2 has extent {dims[2]}, but where its stride is stored is "
                         "not known (only extent-1 batches were captured)")
    nbytes = _bits(word, 8 * 64, 32)
    want = box[0] * box[1] * box[2] * _ELEM_BYTES[dtype]
    if nbytes != want:
        raise ValueError(f"driver tensormap: box-bytes field {nbytes} disagrees with box {box} of {dtype} ({want})")
    if address % 16 or strides[0] % 16 == 0 and strides[0] == 0:
        raise ValueError(f"driver tensormap: global address {address:#x} / stride {strides[0]} is invalid")
    return TensorMap(dtype, rank, address, dims, strides, box, (1,) * rank, "none", "128B", "none", "none")


__all__ = ["decode_driver_tensormap", "DRIVER_DTYPES", "TENSORMAP_BYTES"]
