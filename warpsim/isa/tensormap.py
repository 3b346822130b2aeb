"""The 128-byte ``CUtensorMap`` of Hopper's tensor memory accelerator (TMA): encoder and decoder.

:func:`encode_tiled` takes the arguments of the CUDA driver's ``cuTensorMapEncodeTiled`` and
applies the validation rules its documentation (``cuda.h`` of CUDA 13) states; every invalid
field raises a ``ValueError`` naming the field and what is allowed.  :func:`decode_tensormap`
turns 128 bytes back into a :class:`TensorMap`, which is what ``cp.async.bulk.tensor`` reads.

**The byte layout is not published.**  Until descriptors encoded by the driver on an H100 are
captured (``warpsim/hw/device/tensormap_capture.py``) and fitted, :data:`LAYOUT` is warpsim's
own provisional packing: encoder and decoder agree with each other, but a descriptor made by
the real driver does not decode with it.  The table is declarative, so fitting the captured
layout is an edit of :data:`LAYOUT` only.  The tests that compare with driver bytes are xfail
("captures pending").

The enumerations (names and the ``CU_TENSOR_MAP_*`` integer values) follow ``cuda.h``; either
form is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: data type name -> (CUDA enum value, bits per element, is floating point)
DATA_TYPES = {
    "uint8": (0, 8, False), "uint16": (1, 16, False), "uint32": (2, 32, False), "int32": (3, 32, False),
    "uint64": (4, 64, False), "int64": (5, 64, False), "float16": (6, 16, True), "float32": (7, 32, True),
    "float64": (8, 64, True), "bfloat16": (9, 16, True), "float32_ftz": (10, 32, True),
    "tfloat32": (11, 32, True), "tfloat32_ftz": (12, 32, True),
    "16u4_align8b": (13, 4, False), "16u4_align16b": (14, 4, False), "16u6_align16b": (15, 6, False),
}
#: packed sub-byte types: name -> bytes that 16 values occupy in memory
PACKED_TYPES = {"16u4_align8b": 8, "16u4_align16b": 16, "16u6_align16b": 16}
INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_atom_32B": 4, "128B_atom_32B_flip_8B": 5,
            "128B_atom_64B": 6}
#: swizzle name -> span in bytes the inner box dimension must fit in (0: any)
SWIZZLE_SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128,
                "128B_atom_32B_flip_8B": 128, "128B_atom_64B": 128}
L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
OOB_FILLS = {"none": 0, "nan_request_zero_fma": 1}
#: swizzles each packed type allows (cuda.h; loads and stores together)
_PACKED_SWIZZLES = {"16u6_align16b": ("none", "128B", "128B_atom_32B", "128B_atom_64B"),
                    "16u4_align16b": ("none", "128B", "128B_atom_32B")}

MAX_RANK = 5
TENSORMAP_BYTES = 128


def _enum(field: str, value, table: dict) -> str:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{field} must be a name or a CUDA enum value, not a bool")
    if isinstance(value, (int, np.integer)):
        for k, v in table.items():
            if v == int(value) or (isinstance(v, tuple) and v[0] == int(value)):
                return k
    elif isinstance(value, str):
        for k in table:
            if k.lower() == value.lower():
                return k
    allowed = ", ".join(f"{k!r} ({v[0] if isinstance(v, tuple) else v})" for k, v in table.items())
    raise ValueError(f"{field} {value!r} is not one of: {allowed}")


def _ints(field: str, values, n: int, lo: int, hi: int, what: str) -> tuple:
    try:
        vals = list(values)
    except TypeError:
        raise TypeError(f"{field} must be a sequence of {n} integers, not {type(values).__name__}") from None
    if len(vals) != n:
        raise ValueError(f"{field} must hold {n} entries ({what}), got {len(vals)}")
    out = []
    for i, v in enumerate(vals):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{field}[{i}] must be an integer, not {type(v).__name__}")
        if not lo <= int(v) <= hi:
            raise ValueError(f"{field}[{i}] = {int(v)} is out of range: allowed {lo} .. {hi}")
        out.append(int(v))
    return tuple(out)


@dataclass(frozen=True)
class TensorMap:
    """A decoded tiled tensormap: the arguments of ``cuTensorMapEncodeTiled``, validated.

    ``global_strides`` holds the ``rank - 1`` byte strides of dimensions 1.. (dimension 0 is
    contiguous).  Build one with :func:`make_tensormap`, or :func:`decode_tensormap` of bytes.
    """

    dtype: str
    rank: int
    global_address: int
    global_dim: tuple
    global_strides: tuple
    box_dim: tuple
    element_strides: tuple
    interleave: str = "none"
    swizzle: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "none"

    @property
    def elem_bits(self) -> int:
        return DATA_TYPES[self.dtype][1]

    @property
    def is_float(self) -> bool:
        return DATA_TYPES[self.dtype][2]

    def inner_box_bytes(self) -> int:
        """Bytes of one box row (dimension 0) in memory; packed types count their 16-value groups."""
        return _row_bytes(self.dtype, self.box_dim[0])

    def encode(self) -> np.ndarray:
        """The 128 descriptor bytes (uint8), in :data:`LAYOUT`."""
        return _pack(self)


def _row_bytes(dtype: str, n: int) -> int:
    if dtype in PACKED_TYPES:
        return -(-n // 16) * PACKED_TYPES[dtype]
    return n * DATA_TYPES[dtype][1] // 8


def make_tensormap(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                   interleave="none", swizzle="none", l2_promotion="none", oob_fill="none") -> TensorMap:
    """Validate ``cuTensorMapEncodeTiled`` arguments (the rules of ``cuda.h``, CUDA 13) -> :class:`TensorMap`."""
    dtype = _enum("data type (tensorDataType)", dtype, DATA_TYPES)
    interleave = _enum("interleave", interleave, INTERLEAVES)
    swizzle = _enum("swizzle", swizzle, SWIZZLES)
    l2_promotion = _enum("L2 promotion (l2Promotion)", l2_promotion, L2_PROMOTIONS)
    oob_fill = _enum("out-of-bounds fill (oobFill)", oob_fill, OOB_FILLS)
    if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, (int, np.integer)):
        raise TypeError(f"rank (tensorRank) must be an integer, not {type(rank).__name__}")
    rank = int(rank)
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"rank (tensorRank) must be 1 .. {MAX_RANK}, got {rank}")
    if interleave != "none" and rank < 3:
        raise ValueError(f"rank (tensorRank) must be >= 3 with interleave {interleave!r}, got {rank}")
    align32 = interleave == "32B" or dtype in ("16u4_align16b", "16u6_align16b")
    if isinstance(global_address, (bool, np.bool_)) or not isinstance(global_address, (int, np.integer)):
        raise TypeError(f"global address must be an integer, not {type(global_address).__name__}")
    ga = int(global_address)
    need = 32 if align32 else 16
    if ga < 0 or ga >= 1 << 64 or ga % need:
        why = " (interleave 32B or a 16-byte-aligned packed type)" if align32 else ""
        raise ValueError(f"global address {ga:#x} must be a {need}-byte aligned 64-bit address{why}")
    dims = _ints("global dims (globalDim)", global_dim, rank, 1, 1 << 32, "one per dimension")
    if dtype in ("16u4_align16b", "16u6_align16b") and dims[0] % 128:
        raise ValueError(f"global dims (globalDim)[0] = {dims[0]} must be a multiple of 128 for {dtype}")
    if dtype == "16u4_align8b" and dims[0] % 2:
        raise ValueError(f"global dims (globalDim)[0] = {dims[0]} must be a multiple of 2 for {dtype}")
    strides = _ints("global strides (globalStrides)", global_strides, rank - 1, 0, (1 << 40) - 1,
                    "byte strides of dimensions 1 .. rank-1")
    smul = 32 if align32 else 16
    for i, s in enumerate(strides):
        if s == 0 or s % smul:
            raise ValueError(f"global strides (globalStrides)[{i}] = {s} must be a non-zero multiple of {smul} "
                             f"below 2^40")
    box = _ints("box dims (boxDim)", box_dim, rank, 1, 256, "one per dimension")
    row = _row_bytes(dtype, box[0])
    if interleave == "none" and row % 16:
        raise ValueError(f"box dims (boxDim)[0] = {box[0]} of {dtype} makes {row} bytes per box row; "
                         "with interleave 'none' that must be a multiple of 16 bytes")
    if dtype in ("16u4_align16b", "16u6_align16b") and box[0] != 128:
        raise ValueError(f"box dims (boxDim)[0] must be 128 for {dtype}, got {box[0]}")
    es = _ints("element strides (elementStrides)", element_strides, rank, 1, 8, "one per dimension")
    if interleave == "32B" and swizzle != "32B":
        raise ValueError(f"swizzle must be '32B' with interleave '32B', got {swizzle!r}")
    if dtype == "16u6_align16b" and interleave != "none":
        raise ValueError(f"interleave must be 'none' for {dtype}, got {interleave!r}")
    if dtype in _PACKED_SWIZZLES and swizzle not in _PACKED_SWIZZLES[dtype]:
        raise ValueError(f"swizzle {swizzle!r} is not allowed for {dtype}; allowed: {list(_PACKED_SWIZZLES[dtype])}")
    span = SWIZZLE_SPAN[swizzle]
    if interleave == "none" and span and row > span:
        raise ValueError(f"box dims (boxDim)[0] = {box[0]} of {dtype} makes {row} bytes per box row; "
                         f"swizzle {swizzle!r} allows at most {span}")
    if oob_fill != "none" and (not DATA_TYPES[dtype][2] or dtype in PACKED_TYPES):
        raise ValueError(f"out-of-bounds fill (oobFill) {oob_fill!r} needs a floating-point data type, not {dtype}; "
                         "use 'none'")
    return TensorMap(dtype, rank, ga, dims, strides, box, es, interleave, swizzle, l2_promotion, oob_fill)


def encode_tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                 interleave="none", swizzle="none", l2_promotion="none", oob_fill="none") -> np.ndarray:
    """``cuTensorMapEncodeTiled`` on the host: validated arguments -> 128 bytes (uint8, provisional layout)."""
    return make_tensormap(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                          interleave, swizzle, l2_promotion, oob_fill).encode()


# ----------------------------------------------------------------------------------------------
# byte layout (provisional -- see the module docstring)

@dataclass(frozen=True)
class Field:
    """One bit field of the descriptor: ``value`` is stored as ``(value - bias) >> shift``."""

    name: str
    bit: int           # first bit, counting from bit 0 of byte 0 (little-endian)
    width: int
    index: int = -1    # element of a per-dimension tuple; -1 for scalars
    bias: int = 0
    shift: int = 0


#: warpsim's provisional layout (NOT the driver's; replace by the fitted layout once captured)
LAYOUT = (
    Field("global_address", 0, 64),
    *(Field("global_dim", 64 + 32 * i, 32, i, bias=1) for i in range(5)),          # bytes 8..27
    Field("dtype", 224, 4), Field("rank", 228, 3, bias=1), Field("interleave", 231, 2),
    Field("swizzle", 233, 3), Field("l2_promotion", 236, 2), Field("oob_fill", 238, 1),
    *(Field("global_strides", 256 + 64 * i, 36, i, shift=4) for i in range(4)),     # bytes 32..63
    *(Field("box_dim", 512 + 8 * i, 8, i, bias=1) for i in range(5)),              # bytes 64..68
    *(Field("element_strides", 552 + 4 * i, 3, i, bias=1) for i in range(5)),      # bytes 69..71
)
_ENUM_FIELDS = {"dtype": DATA_TYPES, "interleave": INTERLEAVES, "swizzle": SWIZZLES,
                "l2_promotion": L2_PROMOTIONS, "oob_fill": OOB_FILLS}


def _enum_value(table, name):
    v = table[name]
    return v[0] if isinstance(v, tuple) else v


def _pack(tm: TensorMap) -> np.ndarray:
    word = 0
    for f in LAYOUT:
        v = getattr(tm, f.name)
        if f.index >= 0:
            if f.index >= len(v):
                continue
            v = v[f.index]
        if f.name in _ENUM_FIELDS:
            v = _enum_value(_ENUM_FIELDS[f.name], v)
        stored = (int(v) - f.bias) >> f.shift
        assert 0 <= stored < 1 << f.width, (f, v)
        word |= stored << f.bit
    return np.frombuffer(word.to_bytes(TENSORMAP_BYTES, "little"), dtype=np.uint8).copy()


def _as_bytes(data) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        b = bytes(data)
    else:
        a = np.asarray(data)
        if a.dtype.kind not in "ui":
            raise TypeError(f"a tensormap is 128 bytes (bytes, uint8[128] or uint64[16]), not {a.dtype} data")
        b = np.ascontiguousarray(a).tobytes()
    if len(b) != TENSORMAP_BYTES:
        raise ValueError(f"a tensormap is {TENSORMAP_BYTES} bytes, got {len(b)}")
    return b


def decode_tensormap(data) -> TensorMap:
    """128 descriptor bytes -> :class:`TensorMap` (validated as the encoder validates).

    Raises ValueError for bits outside every field of :data:`LAYOUT`, unknown enum values and
    descriptors the encoder would refuse.
    """
    word = int.from_bytes(_as_bytes(data), "little")
    used = 0
    for f in LAYOUT:
        used |= ((1 << f.width) - 1) << f.bit
    if word & ~used:
        raise ValueError(f"tensormap has bits set outside every known field (mask {word & ~used:#x}); "
                         "it was not made by warpsim's encoder (driver-made descriptors: layout pending captures)")
    vals: dict = {}
    for f in LAYOUT:
        v = (((word >> f.bit) & ((1 << f.width) - 1)) << f.shift) + f.bias
        if f.index >= 0:
            vals.setdefault(f.name, [0] * 5)[f.index] = v
        else:
            vals[f.name] = v
    rank = vals["rank"]
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"tensormap rank field decodes to {rank}; allowed 1 .. {MAX_RANK}")
    for name in ("global_dim", "box_dim", "element_strides", "global_strides"):
        n = rank - 1 if name == "global_strides" else rank
        unused = vals[name][n:]
        bias = 1 if name != "global_strides" else 0
        if any(u != bias for u in unused):
            raise ValueError(f"tensormap {name} has entries beyond rank {rank}: {vals[name]}")
        vals[name] = vals[name][:n]
    return make_tensormap(vals["dtype"], rank, vals["global_address"], vals["global_dim"], vals["global_strides"],
                          vals["box_dim"], vals["element_strides"], vals["interleave"], vals["swizzle"],
                          vals["l2_promotion"], vals["oob_fill"])
