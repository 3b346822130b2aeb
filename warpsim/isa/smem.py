"""Shared-memory operands of ``wgmma``: matrix descriptors, canonical layouts, swizzles.

A ``wgmma`` reads B (and A in its descriptor form) from shared memory through
a 64-bit *matrix descriptor*.  Its fields (PTX ISA, "Matrix Descriptor Format")::

    bits  0-13  start address >> 4          (byte address in the CTA's shared window)
    bits 16-29  leading dimension byte offset (LBO) >> 4
    bits 32-45  stride dimension byte offset (SBO) >> 4
    bits 49-51  matrix base offset
    bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte

Everything else is reserved (warpsim refuses descriptors with reserved bits
set).  The operand is a ``rows x K`` matrix (A: rows = M = 64; B: rows = N,
its K x N matrix read column by column) whose K extent is always 32 bytes
(f16/bf16 k16, tf32 k8, 8-bit k32, b1 k256).  Its elements live in *core
matrices* of 8 rows x 16 bytes.  Where element (row, k) sits, with ``W`` the
swizzle width in bytes:

K-major (K contiguous; the only form for tf32, fp8, int8, b1)::

    none     start + (row // 8) * SBO + (kb // 16) * LBO + (row % 8) * 16 + kb % 16
    W bytes  start + (row // 8) * SBO + (row % 8) * W + kb           (LBO unused)

MN-major (rows contiguous; 16-bit types with imm-trans = 1), ``rb = row * 2``::

    none     start + (rb // 16) * SBO + (k // 8) * LBO + (k % 8) * 16 + rb % 16
    W bytes  start + (rb // W) * LBO + (k // 8) * SBO + (k % 8) * W + rb % W

where ``kb`` is the byte offset of element k inside the row's 32 K bytes (b1:
bit ``k % 8`` of byte ``k // 8``).  A swizzled layout then exchanges 16-byte
chunks inside each W-byte row: bits 4.. of the address are XORed with the
same number of bits starting at bit 7 (``addr ^ (((addr >> 7) & (W/16 - 1)) << 4)``),
on the shared-memory address itself, so a swizzled operand's pattern is
anchored at multiples of ``8 * W`` bytes of the shared window.

Every formula here was checked on an H100 by capture (``tests/golden/wgmma_sm90a.npz``,
round-trip entries): a known matrix placed with :func:`write_operand` and read
back through a real ``wgmma`` equals :func:`read_operand` of the same bytes.
``smem`` arrays passed to warpsim hold the shared window from address 0.
A non-zero base-offset field is refused (not modelled).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: swizzle mode name -> descriptor field value
SWIZZLE_MODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
_MODE_NAMES = {v: k for k, v in SWIZZLE_MODES.items()}
#: swizzle mode name -> swizzle width W in bytes (0: no swizzle)
SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
MAJORS = ("K", "MN")
#: bytes of K one wgmma reads per row of an operand, for every type
K_BYTES = 32

_RESERVED = ~np.uint64((0x3FFF) | (0x3FFF << 16) | (0x3FFF << 32) | (0x7 << 49) | (0x3 << 62))


@dataclass(frozen=True)
class Descriptor:
    """A decoded matrix descriptor (byte quantities, not the >>4 field values)."""

    start: int
    lbo: int
    sbo: int
    swizzle: str = "none"
    base_offset: int = 0

    def encode(self) -> int:
        return encode_descriptor(self.start, self.lbo, self.sbo, self.swizzle, self.base_offset)

    @property
    def width(self) -> int:
        return SWIZZLE_BYTES[self.swizzle]


def _field(name, v, limit):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"descriptor {name} must be an integer number of bytes, not {type(v).__name__}")
    v = int(v)
    if v < 0 or v % 16 or v >= limit:
        raise ValueError(f"descriptor {name} must be a multiple of 16 in [0, {limit}), got {v}")
    return v >> 4


def encode_descriptor(start: int, lbo: int, sbo: int, swizzle: str = "none", base_offset: int = 0) -> int:
    """The 64-bit descriptor word (a Python int) for byte quantities ``start``, ``lbo``, ``sbo``."""
    if swizzle not in SWIZZLE_MODES:
        raise ValueError(f"swizzle must be one of {list(SWIZZLE_MODES)}, not {swizzle!r}")
    if not isinstance(base_offset, (int, np.integer)) or not 0 <= int(base_offset) < 8:
        raise ValueError(f"base_offset must be an integer in [0, 8), got {base_offset!r}")
    s = _field("start address", start, 1 << 18)
    lo = _field("leading byte offset (LBO)", lbo, 1 << 18)
    so = _field("stride byte offset (SBO)", sbo, 1 << 18)
    return s | (lo << 16) | (so << 32) | (int(base_offset) << 49) | (SWIZZLE_MODES[swizzle] << 62)


def decode_descriptor(desc) -> Descriptor:
    """Fields of a 64-bit descriptor; ValueError if reserved bits are set."""
    if isinstance(desc, (bool, np.bool_)) or not isinstance(desc, (int, np.integer)):
        raise TypeError(f"a matrix descriptor is a 64-bit integer (numpy.uint64 or int), not {type(desc).__name__}")
    if int(desc) < 0 or int(desc) >= 1 << 64:
        raise ValueError(f"a matrix descriptor is a 64-bit unsigned integer, got {desc}")
    d = np.uint64(int(desc))
    if d & _RESERVED:
        raise ValueError(f"matrix descriptor {int(desc):#018x} has reserved bits set "
                         f"({int(d & _RESERVED):#018x}); fields: start 0-13, LBO 16-29, SBO 32-45, base offset 49-51, swizzle 62-63")
    x = int(d)
    return Descriptor(start=(x & 0x3FFF) << 4, lbo=((x >> 16) & 0x3FFF) << 4, sbo=((x >> 32) & 0x3FFF) << 4,
                      swizzle=_MODE_NAMES[x >> 62], base_offset=(x >> 49) & 7)


def _as_desc(desc) -> Descriptor:
    return desc if isinstance(desc, Descriptor) else decode_descriptor(desc)


def swizzle(addr, mode: str):
    """Apply a swizzle mode to shared-memory byte addresses (numpy int arrays or ints)."""
    w = SWIZZLE_BYTES[mode]
    if not w:
        return addr
    return addr ^ (((addr >> 7) & (w // 16 - 1)) << 4)


def operand_addresses(desc, rows: int, k: int, elem_bits: int, major: str = "K"):
    """Where each element of a ``rows x k`` operand lives: (byte address, bit offset), int64 arrays (rows, k).

    ``rows``: 64 for A, N for B.  ``k``: the instruction's K.  ``major``: "K" or "MN"
    (MN-major: 16-bit elements only).  The bit offset is non-zero only for b1.
    """
    d = _as_desc(desc)
    if major not in MAJORS:
        raise ValueError(f"major must be 'K' or 'MN', not {major!r}")
    if d.base_offset:
        raise NotImplementedError(f"descriptor base offset {d.base_offset}: only 0 is modelled "
                                  "(place swizzled operands at multiples of 8 x the swizzle width)")
    if k * elem_bits not in (K_BYTES * 8, 2 * K_BYTES * 8):
        raise ValueError(f"a wgmma operand row holds {K_BYTES} bytes of K ({2 * K_BYTES} for B of a sparse wgmma); "
                         f"k={k} of {elem_bits}-bit elements does not")
    if major == "MN" and elem_bits != 16:
        raise ValueError(f"MN-major (transposed) operands exist for 16-bit types only, not {elem_bits}-bit")
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    a = element_address(d.start, d.lbo, d.sbo, d.width, r, kk, elem_bits, major == "MN")
    bit = (kk * elem_bits) % 8 if major == "K" else np.zeros((rows, k), dtype=np.int64)
    return np.broadcast_to(a, (rows, k)), np.broadcast_to(bit, (rows, k))


def element_address(start, lbo, sbo, w, r, kk, elem_bits, mn_major):
    """The swizzled byte address of element (row ``r``, k ``kk``) (ints or numpy arrays; also compiled by numba
    for the native translator): the formulas of the module docstring, W = ``w`` bytes (0: no swizzle).  Every
    width is a power of two (SWIZZLE_BYTES: 32, 64, 128), so its quotients and remainders are shifts and masks
    (a division by a width known only at run time costs tens of cycles, and the compiled wgmma computes an
    address for every 16-byte chunk it gathers)."""
    lw = 5 + (w >= 64) + (w >= 128)      # log2(w) for a swizzle width
    if not mn_major:
        kb = (kk * elem_bits) >> 3
        if w:   # K beyond the swizzle width (sparse B, 32B swizzle): the next K atom sits LBO further
            a = start + (r >> 3) * sbo + (r & 7) * w + (kb & (w - 1)) + (kb >> lw) * lbo
        else:
            a = start + (r >> 3) * sbo + (kb >> 4) * lbo + (r & 7) * 16 + (kb & 15)
    else:
        rb = r * 2
        if w:
            a = start + (rb >> lw) * lbo + (kk >> 3) * sbo + (kk & 7) * w + (rb & (w - 1))
        else:
            a = start + (rb >> 4) * sbo + (kk >> 3) * lbo + (kk & 7) * 16 + (rb & 15)
    if w:
        a = a ^ (((a >> 7) & ((w >> 4) - 1)) << 4)
    return a


def _gather_bytes(elem_bits):
    return max(1, elem_bits // 8)


def read_operand(smem, desc, rows: int, k: int, elem_bits: int, major: str = "K") -> np.ndarray:
    """Raw element bit patterns (uint64, shape (..., rows, k)) a descriptor reads from ``smem``.

    ``smem``: uint8 array (bytes,) or (groups, bytes); ``desc`` one descriptor
    (the same for every group).  Raises ValueError for reads outside ``smem``.
    """
    smem = np.asarray(smem)
    addr, bit = operand_addresses(desc, rows, k, elem_bits, major)
    nb = _gather_bytes(elem_bits)
    top = int(addr.max()) + nb
    if top > smem.shape[-1] or int(addr.min()) < 0:
        d = _as_desc(desc)
        raise ValueError(f"descriptor (start {d.start}, LBO {d.lbo}, SBO {d.sbo}, swizzle {d.swizzle}, {major}-major) "
                         f"reads shared-memory bytes up to {top}, but smem holds {smem.shape[-1]} bytes")
    if elem_bits == 8 and smem.dtype == np.uint8:     # whole bytes: one gather
        return smem[..., addr].astype(np.uint64, order="C")     # (the gather's own layout is not C)
    if nb in (2, 4, 8) and smem.dtype == np.uint8 and smem.shape[-1] % nb == 0 and not (addr % nb).any():
        # aligned 16/32/64-bit elements: one gather of whole little-endian words
        words = np.ascontiguousarray(smem).view(np.dtype(f"<u{nb}"))
        return words[..., addr // nb].astype(np.uint64, order="C")
    out = np.zeros(smem.shape[:-1] + (rows, k), dtype=np.uint64)
    for i in range(nb):   # little-endian element bytes
        out |= smem[..., addr + i].astype(np.uint64) << np.uint64(8 * i)
    if elem_bits < 8:
        out = (out >> bit.astype(np.uint64)) & np.uint64((1 << elem_bits) - 1)
    return out


def write_operand(smem, desc, bits, elem_bits: int, major: str = "K") -> None:
    """Store raw element bit patterns ``bits`` (rows, k) where ``desc`` reads them (in place)."""
    bits = np.asarray(bits, dtype=np.uint64)
    rows, k = bits.shape[-2:]
    addr, bit = operand_addresses(desc, rows, k, elem_bits, major)
    nb = _gather_bytes(elem_bits)
    if int(addr.max()) + nb > smem.shape[-1]:
        raise ValueError(f"operand needs {int(addr.max()) + nb} bytes of shared memory, smem holds {smem.shape[-1]}")
    if elem_bits == 1:   # b1 rows: bit k % 8 of byte k // 8 -> write the bytes as 8-bit elements
        if major != "K":
            raise ValueError("b1 operands are K-major only")
        packed = np.packbits(bits.astype(np.uint8).reshape(bits.shape[:-1] + (k // 8, 8)), axis=-1, bitorder="little")
        return write_operand(smem, desc, packed[..., 0].astype(np.uint64), 8, major)
    for i in range(nb):
        smem[..., addr + i] = ((bits >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)


def footprint(desc, rows: int, k: int, elem_bits: int, major: str = "K") -> int:
    """One past the highest shared-memory byte a descriptor reads."""
    addr, _ = operand_addresses(desc, rows, k, elem_bits, major)
    return int(addr.max()) + _gather_bytes(elem_bits)


def dense_layout(rows: int, elem_bits: int, major: str = "K", swizzle: str = "none", start: int = 0,
                 kbytes: int = K_BYTES):
    """A descriptor and its byte size for a densely packed ``rows x K`` operand (K = ``kbytes`` bytes per
    row: 32, or 64 for B of a sparse wgmma).

    K-major: no swizzle -- core matrices of one 8-row group adjacent along K (LBO 128, SBO 256);
    swizzled -- rows of W bytes, 8-row atoms 8W apart (SBO 8W, LBO unused: 16).
    MN-major (16-bit): no swizzle -- the rows' 16-byte groups adjacent (SBO 128), the two k groups
    after all of them (LBO); swizzled -- two k atoms of 8 x W bytes per W-byte block of rows
    (SBO 8W, LBO 16W).  ``start`` must be a multiple of 8W for a swizzled layout.
    Returns (descriptor, bytes).
    """
    w = SWIZZLE_BYTES[swizzle] if swizzle in SWIZZLE_BYTES else None
    if w is None:
        raise ValueError(f"swizzle must be one of {list(SWIZZLE_MODES)}, not {swizzle!r}")
    if major not in MAJORS:
        raise ValueError(f"major must be 'K' or 'MN', not {major!r}")
    if rows % 8:
        raise ValueError(f"rows must be a multiple of 8, got {rows}")
    if w and start % (8 * w):
        raise ValueError(f"a {swizzle}-swizzled operand starts at a multiple of {8 * w} bytes, not {start}")
    if kbytes not in (K_BYTES, 2 * K_BYTES):
        raise ValueError(f"kbytes must be {K_BYTES} or {2 * K_BYTES}, not {kbytes}")
    nk = kbytes // 16                       # core matrices along K (MN-major: blocks of 8 k)
    if major == "K":
        na = -(-kbytes // w) if w else 1    # swizzle atoms along K: 2 only for 64 bytes with 32B swizzle
        if not w:
            lbo, sbo, size = 128, nk * 128, rows // 8 * nk * 128
        elif na == 1:
            lbo, sbo, size = 16, 8 * w, rows // 8 * 8 * w
        else:                               # the second K atom LBO after the first (measured, sparse B)
            lbo, sbo, size = rows // 8 * 8 * w, 8 * w, na * rows // 8 * 8 * w
    else:
        if elem_bits != 16:
            raise ValueError("MN-major operands exist for 16-bit types only")
        rb = rows * 2
        if w:
            nb = -(-rb // w)
            lbo, sbo, size = nk * 8 * w, 8 * w, nb * nk * 8 * w
        else:
            lbo, sbo, size = rb // 16 * 128, 128, nk * rb // 16 * 128
    return encode_descriptor(start, lbo, sbo, swizzle), size
