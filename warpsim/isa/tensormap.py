"""The 128-byte ``CUtensorMap`` of Hopper's tensor memory accelerator (TMA): encoder and decoder.

:func:`encode_tiled` takes the arguments of the CUDA driver's ``cuTensorMapEncodeTiled`` and
returns the 128 bytes the driver writes; :func:`decode_tensormap` turns 128 bytes -- written by
the driver (e.g. inside CUTLASS's kernel parameters) or by :func:`encode_tiled` -- back into a
:class:`TensorMap`, which is what ``cp.async.bulk.tensor`` reads.

**Byte layout: fitted to the driver.**  :data:`LAYOUT` was read off 1,014 calls of
``cuTensorMapEncodeTiled`` on an H100 (CUDA 13.0, driver 580; ``tests/golden/tensormaps_sm90.npz``,
made by ``warpsim/hw/device/tensormap_capture.py``): the encoder reproduces the driver's bytes
for all 269 accepted calls, and :func:`make_tensormap` accepts exactly the calls the driver
accepted (CUDA_SUCCESS) and refuses the 745 it refused.  Where the driver differs from ``cuda.h``'s
documentation the driver wins (docs/tma.md lists the differences): on sm_90 it refuses the packed
16U4/16U6 types and the 128B-atom swizzles, it does not insist on swizzle 32B with interleave 32B,
and it refuses boxes of more than :data:`MAX_BOX_BYTES` bytes.  Rules that the capture cannot
distinguish (no call probed them) follow ``cuda.h`` and say so in their message.

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
#: packed sub-byte types (sm_100 and later; the sm_90 driver refuses them)
PACKED_TYPES = {"16u4_align8b": 8, "16u4_align16b": 16, "16u6_align16b": 16}
INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_atom_32B": 4, "128B_atom_32B_flip_8B": 5,
            "128B_atom_64B": 6}
#: swizzle name -> span in bytes the inner box dimension must fit in (0: any)
SWIZZLE_SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128,
                "128B_atom_32B_flip_8B": 128, "128B_atom_64B": 128}
L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
OOB_FILLS = {"none": 0, "nan_request_zero_fma": 1}

#: what the sm_90 driver encodes (the rest of the cuda.h enumerations it refuses on an H100)
SM90_DATA_TYPES = tuple(k for k in DATA_TYPES if k not in PACKED_TYPES)
SM90_SWIZZLES = ("none", "32B", "64B", "128B")

MAX_RANK = 5
TENSORMAP_BYTES = 128
#: the largest box (bytes, after element strides) the driver accepts (captured: 196,608 accepted,
#: 245,760 refused; 227 KiB, the most shared memory a CTA can have, is the bound this uses)
MAX_BOX_BYTES = 227 * 1024


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

    @property
    def encoded_box_bytes(self) -> int:
        """The byte count the driver stores (bytes 64..67): ``prod(box[i] // es[i])`` elements.

        Note the floor: with element strides that do not divide the box this is less than the
        ``ceil`` count the PTX ISA gives for the elements a copy moves (docs/tma.md).
        """
        n = self.elem_bits
        for b, e in zip(self.box_dim, self.element_strides):
            n *= b // e
        return n // 8

    def encode(self) -> np.ndarray:
        """The 128 descriptor bytes (uint8), as the CUDA driver writes them."""
        return _pack(self)


def _row_bytes(dtype: str, n: int) -> int:
    if dtype in PACKED_TYPES:
        return -(-n // 16) * PACKED_TYPES[dtype]
    return n * DATA_TYPES[dtype][1] // 8


def make_tensormap(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                   interleave="none", swizzle="none", l2_promotion="none", oob_fill="none") -> TensorMap:
    """Validate ``cuTensorMapEncodeTiled`` arguments as the sm_90 driver does -> :class:`TensorMap`."""
    dtype = _enum("data type (tensorDataType)", dtype, DATA_TYPES)
    interleave = _enum("interleave", interleave, INTERLEAVES)
    swizzle = _enum("swizzle", swizzle, SWIZZLES)
    l2_promotion = _enum("L2 promotion (l2Promotion)", l2_promotion, L2_PROMOTIONS)
    oob_fill = _enum("out-of-bounds fill (oobFill)", oob_fill, OOB_FILLS)
    if dtype not in SM90_DATA_TYPES:
        raise ValueError(f"data type (tensorDataType) {dtype!r} is refused by the CUDA driver on sm_90 (H100) "
                         f"(packed types need sm_100); allowed: {list(SM90_DATA_TYPES)}")
    if swizzle not in SM90_SWIZZLES:
        raise ValueError(f"swizzle {swizzle!r} is refused by the CUDA driver on sm_90 (H100) (128B atom swizzles "
                         f"need sm_100); allowed: {list(SM90_SWIZZLES)}")
    if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, (int, np.integer)):
        raise TypeError(f"rank (tensorRank) must be an integer, not {type(rank).__name__}")
    rank = int(rank)
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"rank (tensorRank) must be 1 .. {MAX_RANK}, got {rank}")
    if interleave != "none" and rank < 3:
        raise ValueError(f"rank (tensorRank) must be >= 3 with interleave {interleave!r}, got {rank}")
    align32 = interleave == "32B"
    if isinstance(global_address, (bool, np.bool_)) or not isinstance(global_address, (int, np.integer)):
        raise TypeError(f"global address must be an integer, not {type(global_address).__name__}")
    ga = int(global_address)
    need = 32 if align32 else 16
    if ga < 0 or ga >= 1 << 64 or ga % need:
        why = " (interleave 32B)" if align32 else ""
        raise ValueError(f"global address {ga:#x} must be a {need}-byte aligned 64-bit address{why}")
    dims = _ints("global dims (globalDim)", global_dim, rank, 1, 1 << 32, "one per dimension")
    strides = _ints("global strides (globalStrides)", global_strides, rank - 1, 0, (1 << 40) - 1,
                    "byte strides of dimensions 1 .. rank-1")
    smul = 32 if align32 else 16
    for i, s in enumerate(strides):
        if s % smul:
            raise ValueError(f"global strides (globalStrides)[{i}] = {s} must be a multiple of {smul} below 2^40")
    box = _ints("box dims (boxDim)", box_dim, rank, 1, 256, "one per dimension")
    row = _row_bytes(dtype, box[0])
    if row % 16:
        raise ValueError(f"box dims (boxDim)[0] = {box[0]} of {dtype} makes {row} bytes per box row; "
                         "that must be a multiple of 16 bytes (the driver asks it with every interleave)")
    es = _ints("element strides (elementStrides)", element_strides, rank, 1, 8, "one per dimension")
    span = SWIZZLE_SPAN[swizzle]
    if interleave == "none" and span and row > span:
        raise ValueError(f"box dims (boxDim)[0] = {box[0]} of {dtype} makes {row} bytes per box row; "
                         f"swizzle {swizzle!r} allows at most {span}")
    if oob_fill != "none" and not DATA_TYPES[dtype][2]:
        raise ValueError(f"out-of-bounds fill (oobFill) {oob_fill!r} needs a floating-point data type, not {dtype}; "
                         "use 'none'")
    tm = TensorMap(dtype, rank, ga, dims, strides, box, es, interleave, swizzle, l2_promotion, oob_fill)
    if tm.encoded_box_bytes > MAX_BOX_BYTES:
        raise ValueError(f"box dims (boxDim) {box} with element strides {es} make a box of {tm.encoded_box_bytes} "
                         f"bytes of {dtype}; the driver allows at most {MAX_BOX_BYTES}")
    return tm


def encode_tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                 interleave="none", swizzle="none", l2_promotion="none", oob_fill="none") -> np.ndarray:
    """``cuTensorMapEncodeTiled`` on the host: validated arguments -> the driver's 128 bytes (uint8)."""
    return make_tensormap(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                          interleave, swizzle, l2_promotion, oob_fill).encode()


# ----------------------------------------------------------------------------------------------
# byte layout, fitted to the driver's descriptors (see the module docstring)

@dataclass(frozen=True)
class Field:
    """One bit field: it stores bits ``shift .. shift + width - 1`` of ``value - bias``.

    A value wider than one field is split over several fields of the same name (the strides).
    """

    name: str
    bit: int           # first bit, counting from bit 0 of byte 0 (little-endian)
    width: int
    index: int = -1    # element of a per-dimension tuple; -1 for scalars
    bias: int = 0
    shift: int = 0


#: the driver's internal data-type code (bits 71..74) and its tf32 flag (bit 80), per data type
DTYPE_CODES = {"uint8": (0, 0), "uint16": (1, 0), "uint32": (2, 0), "int32": (3, 0), "uint64": (4, 0),
               "int64": (5, 0), "float16": (6, 0), "float32": (7, 0), "float32_ftz": (8, 0), "float64": (9, 0),
               "bfloat16": (10, 0), "tfloat32": (7, 1), "tfloat32_ftz": (8, 1)}
#: bytes 72..73 (bits 576..591) as a function of the swizzle alone (meaning not known: a constant per mode)
SWIZZLE_MARKS = {"none": 0x0010, "32B": 0x0100, "64B": 0x0200, "128B": 0x0400}

#: the CUDA 13 driver's layout on sm_90 (every bit not in a field is zero in all 269 captured descriptors)
LAYOUT = (
    Field("global_address", 0, 64),                                                   # bytes 0..7
    Field("rank", 68, 3, bias=1), Field("dtype_code", 71, 4), Field("interleave", 75, 2),
    Field("swizzle", 77, 2), Field("oob_fill", 79, 1), Field("tf32", 80, 1), Field("l2_promotion", 81, 2),
    *(Field("global_strides", 96 + 32 * i, 32, i, shift=4) for i in range(4)),       # bytes 12..27: bits 4..35
    *(Field("global_strides", 224 + 4 * i, 4, i, shift=36) for i in range(4)),       # bytes 28..29: bits 36..39
    *(Field("global_dim", 256 + 32 * i, 32, i, bias=1) for i in range(5)),           # bytes 32..51
    *(Field("element_strides", 416 + 3 * i, 3, i, bias=1) for i in range(5)),        # bytes 52..53
    *(Field("box_dim", 440 + 8 * i, 8, i, bias=1) for i in range(5)),                # bytes 55..59
    Field("encoded_box_bytes", 512, 32),                                              # bytes 64..67
    Field("swizzle_mark", 576, 16),                                                   # bytes 72..73
)
_ENUM_FIELDS = {"interleave": INTERLEAVES, "swizzle": SWIZZLES, "l2_promotion": L2_PROMOTIONS, "oob_fill": OOB_FILLS}
_PER_DIM = ("global_dim", "global_strides", "box_dim", "element_strides")


def _field_values(tm: TensorMap) -> dict:
    """Every LAYOUT name -> the integer (or tuple of integers) it stores for ``tm``."""
    vals = {"global_address": tm.global_address, "rank": tm.rank, "encoded_box_bytes": tm.encoded_box_bytes,
            "dtype_code": DTYPE_CODES[tm.dtype][0], "tf32": DTYPE_CODES[tm.dtype][1],
            "swizzle_mark": SWIZZLE_MARKS[tm.swizzle]}
    for name, table in _ENUM_FIELDS.items():
        vals[name] = table[getattr(tm, name)]
    for name in _PER_DIM:
        vals[name] = getattr(tm, name)
    return vals


def _pack(tm: TensorMap) -> np.ndarray:
    return _pack_values(_field_values(tm))


def _pack_values(vals: dict) -> np.ndarray:
    word = 0
    for f in LAYOUT:
        v = vals[f.name]
        if f.index >= 0:
            if f.index >= len(v):
                continue               # dimensions beyond the rank stay zero
            v = v[f.index]
        word |= (((int(v) - f.bias) >> f.shift) & ((1 << f.width) - 1)) << f.bit
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


def _unpack(word: int) -> dict:
    raw: dict = {}
    for f in LAYOUT:
        part = ((word >> f.bit) & ((1 << f.width) - 1)) << f.shift
        if f.index >= 0:
            raw.setdefault(f.name, [0] * 5)[f.index] += part
        else:
            raw[f.name] = raw.get(f.name, 0) + part
    return raw


def _reverse(table: dict, field: str, code):
    for k, v in table.items():
        if v == code:
            return k
    raise ValueError(f"tensormap {field} field holds {code}, which the driver never writes; known: {table}")


def decode_tensormap(data, *, derived: str = "check") -> TensorMap:
    """128 descriptor bytes (the driver's, or :func:`encode_tiled`'s) -> :class:`TensorMap`.

    Raises ValueError naming what is wrong for bits outside every field of :data:`LAYOUT`, codes
    the driver does not write, dimensions set beyond the rank, derived fields (box bytes,
    swizzle mark) that disagree with the rest (unless ``derived="ignore"``: ``tensormap.replace``
    leaves them as they were on the GPU, and a descriptor built that way loads there), and
    descriptors the encoder would refuse.
    """
    word = int.from_bytes(_as_bytes(data), "little")
    used = 0
    for f in LAYOUT:
        used |= ((1 << f.width) - 1) << f.bit
    if word & ~used:
        raise ValueError(f"tensormap has bits set outside every known field (mask {word & ~used:#x}); "
                         "the CUDA driver never writes those")
    raw = _unpack(word)
    rank = raw["rank"] + 1
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"tensormap rank field decodes to {rank}; allowed 1 .. {MAX_RANK}")
    per_dim = {}
    for f in LAYOUT:
        if f.index >= 0 and f.name not in per_dim:
            n = rank - 1 if f.name == "global_strides" else rank
            stored = raw[f.name]
            if any(stored[n:]):
                raise ValueError(f"tensormap {f.name} has entries beyond rank {rank}: "
                                 f"{[v + f.bias for v in stored]}")
            per_dim[f.name] = [v + f.bias for v in stored[:n]]
    dtype = _reverse(DTYPE_CODES, "data-type code (bits 71..74, tf32 bit 80)", (raw["dtype_code"], raw["tf32"]))
    names = {k: _reverse(t, k, raw[k]) for k, t in _ENUM_FIELDS.items()}
    tm = make_tensormap(dtype, rank, raw["global_address"], per_dim["global_dim"], per_dim["global_strides"],
                        per_dim["box_dim"], per_dim["element_strides"], **names)
    for name in ("encoded_box_bytes", "swizzle_mark") if derived == "check" else ():
        want = _field_values(tm)[name]
        if raw[name] != want:
            raise ValueError(f"tensormap {name} field holds {raw[name]:#x}, but the other fields make it {want:#x}")
    return tm


# -- tensormap.replace: device-side edits of one field ----------------------------------------------

#: ``tensormap.replace`` field -> (LAYOUT field it writes, value -> stored bits); ``elemtype`` takes the
#: PTX ISA's element-type numbering (u8, u16, u32, s32, u64, s64, f16, f32, f32.ftz, f64, bf16, tf32,
#: tf32.ftz), which is the driver's internal data-type code, tf32 adding bit 80.
REPLACE_FIELDS = {
    "global_address": "global_address", "rank": "rank", "box_dim": "box_dim", "global_dim": "global_dim",
    "global_stride": "global_strides", "element_stride": "element_strides", "elemtype": "dtype_code",
    "interleave_layout": "interleave", "swizzle_mode": "swizzle", "fill_mode": "oob_fill",
}
#: ordinals per per-dimension field (``global_stride`` has rank - 1 entries)
REPLACE_ORDINALS = {"box_dim": 5, "global_dim": 5, "global_stride": 4, "element_stride": 5}
#: the per-dimension fields and the LAYOUT field each writes
REPLACE_PER_DIM = {f: REPLACE_FIELDS[f] for f in REPLACE_ORDINALS}
#: immediates ptxas takes for the enum fields on sm_90a
REPLACE_IMMEDIATES = {"elemtype": range(13), "interleave_layout": range(3), "swizzle_mode": range(4),
                      "fill_mode": range(2)}


def replace_field(data, field: str, value: int, ordinal: int | None = None) -> np.ndarray:
    """The 128 tensormap bytes after ``tensormap.replace.tile.<field>`` writes ``value`` (at ``ordinal``).

    Captured on Hopper (an H200; tests/golden/tma_stores_sm90.npz, 570 cases, every field, global and
    shared tensormaps): only the named field's bits change; the driver's derived fields (box bytes at
    64..67, the swizzle mark at 72..73) keep their old values, so the result may not decode.  Dimensions,
    box sizes and element strides are given as counts (stored minus one, as the driver stores them),
    ``.rank`` as rank - 1 (stored as given), strides in bytes (bits 4..39 kept), the enum fields as the
    PTX ISA numbers them; bits beyond a field are dropped.
    """
    if field not in REPLACE_FIELDS:
        raise ValueError(f"tensormap.replace .{field} is not modelled; modelled: {', '.join(REPLACE_FIELDS)}")
    n = REPLACE_ORDINALS.get(field, 0)
    if n and not (isinstance(ordinal, (int, np.integer)) and 0 <= ordinal < n):
        raise ValueError(f"tensormap.replace .{field}: ordinal {ordinal} outside 0 .. {n - 1}")
    if not n and ordinal is not None:
        raise ValueError(f"tensormap.replace .{field} takes no ordinal")
    if field in REPLACE_IMMEDIATES and int(value) not in REPLACE_IMMEDIATES[field]:
        allowed = REPLACE_IMMEDIATES[field]
        raise ValueError(f"tensormap.replace .{field} takes {allowed.start} .. {allowed.stop - 1}, got {value}")
    word = int.from_bytes(_as_bytes(data), "little")
    value = int(value)
    writes = []
    if field == "elemtype":
        writes = [("dtype_code", -1, value if value < 11 else value - 4), ("tf32", -1, int(value >= 11))]
    else:
        writes = [(REPLACE_FIELDS[field], -1 if ordinal is None else int(ordinal), value)]
    for name, index, v in writes:
        for f in LAYOUT:
            if f.name == name and f.index == index:
                mask = ((1 << f.width) - 1) << f.bit
                bias = 0 if field == "rank" else f.bias      # captured: .rank stores new_val as given (rank - 1)
                word = (word & ~mask) | ((((v - bias) >> f.shift) & ((1 << f.width) - 1)) << f.bit)
    return np.frombuffer(word.to_bytes(TENSORMAP_BYTES, "little"), dtype=np.uint8).copy()


# -- im2col descriptors (cuTensorMapEncodeIm2col) ------------------------------------------------------

#: bit 64 set marks an im2col descriptor (captured: every im2col descriptor the driver wrote has it)
IM2COL_BIT = 64


@dataclass(frozen=True)
class Im2colMap:
    """A decoded im2col tensormap: ``tensor`` holds the tensor (dims, strides, type, swizzle, fill; its box
    is one pixel of ``channels_per_pixel`` channels), plus the pixel bounding box and the pixels per load."""

    tensor: TensorMap
    lower: tuple                 # pixel-box lower corner per spatial dimension (W, H, D)
    upper: tuple                 # pixel-box upper corner offsets per spatial dimension
    channels_per_pixel: int
    pixels_per_column: int


def is_im2col(data) -> bool:
    return bool(int.from_bytes(_as_bytes(data), "little") >> IM2COL_BIT & 1)


def decode_im2col(data) -> Im2colMap:
    """128 bytes of a driver-written im2col descriptor -> :class:`Im2colMap`.

    Layout read off the 10 im2col descriptors of tests/golden/tma_stores_sm90.npz that the H200 ran
    (bit 64 set; the tiled fields elsewhere as in :data:`LAYOUT`): channels per pixel - 1 in box dim 0's
    byte (bits 440..447); the corners in bytes 56..59, lower then upper, each a 16-bit half holding one
    signed field per spatial dimension of 16 // (rank - 2) bits (16, 8 or 5); pixels per column - 1 in
    byte 60.  Not fitted beyond those descriptors (the driver's own limits are not checked here)."""
    word = int.from_bytes(_as_bytes(data), "little")
    if not word >> IM2COL_BIT & 1:
        raise ValueError("not an im2col tensormap (bit 64 is clear): decode it with decode_tensormap")
    raw = _unpack(word)
    rank = raw["rank"] + 1
    if not 3 <= rank <= MAX_RANK:
        raise ValueError(f"an im2col tensormap has rank 3 .. {MAX_RANK}, this one {rank}")
    nsp = rank - 2
    w = 16 // nsp

    def corner(base):
        out = []
        for j in range(nsp):
            v = (word >> (base + w * j)) & ((1 << w) - 1)
            out.append(v - (1 << w) if v >> (w - 1) else v)
        return tuple(out)

    cpp = ((word >> 440) & 0xFF) + 1
    ppc = ((word >> 480) & 0xFF) + 1
    dtype = _reverse(DTYPE_CODES, "data-type code (bits 71..74, tf32 bit 80)", (raw["dtype_code"], raw["tf32"]))
    names = {k: _reverse(t, k, raw[k]) for k, t in _ENUM_FIELDS.items()}
    tm = make_tensormap(dtype, rank, raw["global_address"], [v + 1 for v in raw["global_dim"][:rank]],
                        raw["global_strides"][:rank - 1], [cpp] + [1] * (rank - 1), [1] * rank, **names)
    return Im2colMap(tm, corner(448), corner(464), cpp, ppc)
