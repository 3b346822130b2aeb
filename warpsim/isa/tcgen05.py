"""tcgen05 (sm_100a) descriptors: the 32-bit instruction descriptor and the sm_100 shared-memory descriptor.

A ``tcgen05.mma`` spelling (:data:`warpsim.isa.catalog.TCGEN05_CATALOG`) carries no shape and no
element type: they come from a runtime 32-bit *instruction descriptor*.  Its fields, as the PTX
ISA's tcgen05 "Instruction descriptor" tables give them (two layouts: the plain kinds and the
block-scaled kinds)::

    bits   plain kinds (f16, tf32, f8f6f4, i8)     block-scaled kinds (mxf8f6f4, mxf4, mxf4nvf4)
    0-1    sparsity selector                       sparsity selector
    2      sparse (1 = .sp)                        sparse
    3      saturate (kind::i8 only)                reserved
    4-5    D type: f16 0, f32 1, s32 2             scale-factor id of B
    6      reserved                                reserved
    7-9    A type                                  A type
    10-12  B type                                  B type
    13/14  negate A / negate B (not kind::i8)      negate A / negate B
    15/16  transpose A / B (1 = MN-major)          transpose A / B
    17-22  N >> 3                                  N >> 3
    23     reserved                                scale-factor type: ue4m3 0, ue8m0 1
    24-28  M >> 4                                  M >> 4
    29     reserved                                \\ 29-30 scale-factor id of A
    30-31  maximum shift (.ws only): 0 none, 1 8,   / 31 reserved
           2 16, 3 32

Type codes: kind::f16 f16 0, bf16 1; kind::tf32 tf32 2; kind::f8f6f4 / mxf8f6f4 e4m3 0, e5m2 1,
e2m3 3, e3m2 4, e2m1 5; kind::i8 u8 0, s8 1; kind::mxf4 / mxf4nvf4 e2m1 1.
The valid (M, N) pairs per kind, cta_group and .ws are in :data:`SHAPES`.  ptxas cannot check a
runtime descriptor, so none of this is in the ptxas acceptance table: it is modelled from the PTX
ISA, and no B200 has confirmed it (docs/tcgen05.md).

The sm_100 shared-memory descriptor (64 bits) differs from sm_90's (:mod:`warpsim.isa.smem`)::

    bits  0-13  start address >> 4
    bits 16-29  leading dimension byte offset >> 4 (LBO mode 1: an absolute address >> 4)
    bits 32-45  stride dimension byte offset >> 4
    bits 46-48  version: fixed 0b001 on sm_100
    bits 49-51  matrix base offset
    bit  52     LBO mode: 0 = relative byte offset, 1 = absolute byte address
    bits 53-60  fixed 0
    bits 61-63  swizzle: 0 none, 1 128-byte with 32-byte atoms, 2 128-byte, 4 64-byte, 6 32-byte
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .catalog import TCGEN05_BY_OPCODE, TCGEN05_K, Tcgen05Opcode

BLOCK_SCALED_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")
#: A/B type codes of the instruction descriptor, per kind
TYPE_CODES: dict[str, dict[str, int]] = {
    "f16": {"f16": 0, "bf16": 1},
    "tf32": {"tf32": 2},
    "f8f6f4": {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5},
    "i8": {"u8": 0, "s8": 1},
    "mxf8f6f4": {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5},
    "mxf4": {"e2m1": 1},
    "mxf4nvf4": {"e2m1": 1},
}
D_CODES = {"f16": 0, "f32": 1, "s32": 2}
#: D types each kind allows, given (A type, B type); block-scaled kinds always write f32
D_TYPES = {"f16": ("f16", "f32"), "tf32": ("f32",), "f8f6f4": ("f16", "f32"), "i8": ("s32",),
           "mxf8f6f4": ("f32",), "mxf4": ("f32",), "mxf4nvf4": ("f32",)}
SCALE_TYPE_CODES = {"ue4m3": 0, "ue8m0": 1}
#: .ws maximum shift field -> rows
MAX_SHIFTS = (0, 8, 16, 32)

# (field, lowest bit, width) of each layout; every bit not listed is reserved and must be 0
_PLAIN_FIELDS = (("selector", 0, 2), ("sparse", 2, 1), ("saturate", 3, 1), ("dtype", 4, 2), ("atype", 7, 3),
                 ("btype", 10, 3), ("negate_a", 13, 1), ("negate_b", 14, 1), ("transpose_a", 15, 1),
                 ("transpose_b", 16, 1), ("n", 17, 6), ("m", 24, 5), ("max_shift", 30, 2))
_SCALED_FIELDS = (("selector", 0, 2), ("sparse", 2, 1), ("scale_id_b", 4, 2), ("atype", 7, 3), ("btype", 10, 3),
                  ("negate_a", 13, 1), ("negate_b", 14, 1), ("transpose_a", 15, 1), ("transpose_b", 16, 1),
                  ("n", 17, 6), ("scale_type", 23, 1), ("m", 24, 5), ("scale_id_a", 29, 2))


def _mask(layout) -> int:
    return sum(((1 << w) - 1) << lo for _, lo, w in layout)


def shapes(kind: str, cta_group: int, ws: bool) -> dict[int, tuple[int, ...]]:
    """M -> the N values the PTX ISA's shape tables allow (as read; modelled)."""
    if ws:
        return {m: (64, 128, 256) for m in (32, 64, 128)}
    if kind in BLOCK_SCALED_KINDS:
        return {128: tuple(range(8, 257, 8))} if cta_group == 1 else {m: tuple(range(16, 257, 16)) for m in (128, 256)}
    if cta_group == 1:
        return {64: tuple(range(8, 257, 8)), 128: tuple(range(16, 257, 16))}
    return {128: tuple(range(32, 257, 32)), 256: tuple(range(16, 257, 16))}


#: (kind, cta_group, ws) -> M -> allowed N: the shape table, as data
SHAPES = {(k, c, w): shapes(k, c, w) for k in TCGEN05_K for c in (1, 2) for w in (False, True)
          if not (w and (c == 2 or k in BLOCK_SCALED_KINDS))}


@dataclass(frozen=True)
class InstrDesc:
    """A decoded instruction descriptor (types by name, M and N as numbers)."""

    kind: str
    atype: str
    btype: str
    dtype: str
    m: int
    n: int
    sparse: bool = False
    selector: int = 0
    saturate: bool = False
    negate_a: bool = False
    negate_b: bool = False
    transpose_a: bool = False
    transpose_b: bool = False
    max_shift: int = 0            # .ws only: rows (0, 8, 16, 32)
    scale_type: str | None = None  # block-scaled kinds: "ue8m0" or "ue4m3"
    scale_id_a: int = 0
    scale_id_b: int = 0

    @property
    def k(self) -> int:
        return TCGEN05_K[self.kind] * (2 if self.sparse else 1)

    def encode(self) -> int:
        return encode_idesc(**{f.name: getattr(self, f.name) for f in fields(self)})


def _choice(name, v, allowed, why=""):
    if v not in allowed:
        raise ValueError(f"instruction descriptor: {name} {v!r} is not allowed{why}; allowed: {list(allowed)}")
    return v


def _flag(name, v):
    if isinstance(v, (bool, int)) and int(v) in (0, 1):
        return int(v)
    raise ValueError(f"instruction descriptor: {name} must be 0/1 or a bool, got {v!r}")


def check_shape(kind, m, n, cta_group=1, ws=False):
    table = SHAPES.get((kind, cta_group, bool(ws)))
    if table is None:
        raise ValueError(f"kind::{kind} has no {'.ws ' if ws else ''}cta_group::{cta_group} form")
    if m not in table:
        raise ValueError(f"M = {m} is not a tcgen05.mma shape for kind::{kind}, cta_group::{cta_group}"
                         f"{', .ws' if ws else ''}; allowed M: {sorted(table)}")
    if n not in table[m]:
        ns = table[m]
        allowed = f"{ns[0]}..{ns[-1]} step {ns[1] - ns[0]}" if len({b - a for a, b in zip(ns, ns[1:])}) == 1 else str(list(ns))
        raise ValueError(f"N = {n} is not allowed with M = {m} for kind::{kind}, cta_group::{cta_group}"
                         f"{', .ws' if ws else ''}; allowed N: {allowed}")


def encode_idesc(kind, atype, btype, dtype, m, n, *, sparse=False, selector=0, saturate=False, negate_a=False,
                 negate_b=False, transpose_a=False, transpose_b=False, max_shift=0, scale_type=None, scale_id_a=0,
                 scale_id_b=0) -> int:
    """The 32-bit instruction descriptor; ValueError naming the field and what is allowed."""
    _choice("kind", kind, TYPE_CODES)
    codes = TYPE_CODES[kind]
    _choice("A type", atype, codes, f" for kind::{kind}")
    _choice("B type", btype, codes, f" for kind::{kind}")
    _choice("D type", dtype, D_TYPES[kind], f" for kind::{kind}")
    if kind == "f16" and dtype == "f16" and (atype, btype) != ("f16", "f16"):
        raise ValueError("instruction descriptor: kind::f16 with D type f16 needs A and B f16 (bf16 accumulates in f32)")
    if not isinstance(m, int) or m % 16 or not 0 < m < 32 * 16:
        raise ValueError(f"instruction descriptor: M must be a positive multiple of 16 below 512, got {m!r}")
    if not isinstance(n, int) or n % 8 or not 0 < n < 64 * 8:
        raise ValueError(f"instruction descriptor: N must be a positive multiple of 8 below 512, got {n!r}")
    sp = _flag("sparse", sparse)
    if not isinstance(selector, int) or not 0 <= selector <= 3 or (selector and not sp):
        raise ValueError(f"instruction descriptor: sparsity selector must be 0..3 and 0 when dense, got {selector!r}")
    w = sp << 2 | selector
    w |= codes[atype] << 7 | codes[btype] << 10
    w |= _flag("negate_a", negate_a) << 13 | _flag("negate_b", negate_b) << 14
    w |= _flag("transpose_a", transpose_a) << 15 | _flag("transpose_b", transpose_b) << 16
    w |= (n >> 3) << 17 | (m >> 4) << 24
    if kind == "i8" and (negate_a or negate_b):
        raise ValueError("instruction descriptor: kind::i8 cannot negate A or B (negate bits must be 0)")
    if kind in BLOCK_SCALED_KINDS:
        st = _choice("scale type", scale_type, ("ue8m0", "ue4m3") if kind == "mxf4nvf4" else ("ue8m0",),
                     f" for kind::{kind}")
        for name, v in (("scale_id_a", scale_id_a), ("scale_id_b", scale_id_b)):
            _choice(name, v, (0, 1, 2, 3))
        if saturate or max_shift:
            raise ValueError(f"instruction descriptor: kind::{kind} has no saturate or max-shift field")
        w |= scale_id_b << 4 | SCALE_TYPE_CODES[st] << 23 | scale_id_a << 29
    else:
        if scale_type is not None or scale_id_a or scale_id_b:
            raise ValueError(f"instruction descriptor: kind::{kind} is not block-scaled: no scale type or scale ids")
        sat = _flag("saturate", saturate)
        if sat and kind != "i8":
            raise ValueError(f"instruction descriptor: saturate exists for kind::i8 only, not kind::{kind}")
        _choice("max_shift", max_shift, MAX_SHIFTS)
        w |= sat << 3 | D_CODES[dtype] << 4 | MAX_SHIFTS.index(max_shift) << 30
    return w


def decode_idesc(word, kind) -> InstrDesc:
    """Decode a 32-bit instruction descriptor for ``kind`` (a kind name or a tcgen05.mma spelling)."""
    if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < 1 << 32:
        raise ValueError(f"an instruction descriptor is a 32-bit unsigned integer, got {word!r}")
    if kind in TCGEN05_BY_OPCODE:
        kind = TCGEN05_BY_OPCODE[kind].kind
    _choice("kind", kind, TYPE_CODES)
    scaled = kind in BLOCK_SCALED_KINDS
    layout = _SCALED_FIELDS if scaled else _PLAIN_FIELDS
    extra = word & ~_mask(layout) & 0xFFFFFFFF
    if extra:
        raise ValueError(f"instruction descriptor {word:#010x}: reserved bits {extra:#010x} are set (kind::{kind})")
    f = {name: (word >> lo) & ((1 << w) - 1) for name, lo, w in layout}
    names = {v: k for k, v in TYPE_CODES[kind].items()}
    for op in ("atype", "btype"):
        if f[op] not in names:
            raise ValueError(f"instruction descriptor {word:#010x}: {op[0].upper()} type code {f[op]} is not defined "
                             f"for kind::{kind}; codes: {TYPE_CODES[kind]}")
    if scaled:
        dtype = "f32"
        extra_f = dict(scale_type={v: k for k, v in SCALE_TYPE_CODES.items()}[f["scale_type"]],
                       scale_id_a=f["scale_id_a"], scale_id_b=f["scale_id_b"])
    else:
        dn = {v: k for k, v in D_CODES.items()}
        if f["dtype"] not in dn:
            raise ValueError(f"instruction descriptor {word:#010x}: D type code {f['dtype']} is not defined; "
                             f"codes: {D_CODES}")
        dtype = dn[f["dtype"]]
        extra_f = dict(saturate=bool(f["saturate"]), max_shift=MAX_SHIFTS[f["max_shift"]])
    d = InstrDesc(kind=kind, atype=names[f["atype"]], btype=names[f["btype"]], dtype=dtype, m=f["m"] << 4,
                  n=f["n"] << 3, sparse=bool(f["sparse"]), selector=f["selector"], negate_a=bool(f["negate_a"]),
                  negate_b=bool(f["negate_b"]), transpose_a=bool(f["transpose_a"]),
                  transpose_b=bool(f["transpose_b"]), **extra_f)
    d.encode()   # the same field checks as encoding (type/D combination, i8 negation, ...)
    return d


def check_idesc(desc: InstrDesc, op: Tcgen05Opcode) -> None:
    """ValueError when a decoded descriptor does not fit the spelling it is issued with."""
    if desc.kind != op.kind:
        raise ValueError(f"descriptor is for kind::{desc.kind}, the instruction is {op.opcode}")
    if desc.sparse != op.sparse:
        raise ValueError(f"descriptor sparse bit is {int(desc.sparse)} but {op.opcode} is "
                         f"{'sparse' if op.sparse else 'dense'}")
    if desc.max_shift and not op.ws:
        raise ValueError(f"descriptor max-shift {desc.max_shift} is for .ws spellings only ({op.opcode})")
    if op.block_scaled and desc.scale_type == "ue4m3" and op.scale_block != 16:
        raise ValueError(f"ue4m3 scale factors need 16-element blocks (.scale_vec::4X / .block16), not {op.opcode}")
    check_shape(desc.kind, desc.m, desc.n, op.cta_group, op.ws)


# --- sm_100 shared-memory descriptor ------------------------------------------------------------

#: swizzle name -> field value (bits 61-63); "128B_base32B": 128-byte swizzle with 32-byte atoms
SMEM_SWIZZLES = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
_SWIZZLE_NAMES = {v: k for k, v in SMEM_SWIZZLES.items()}
SMEM_VERSION = 1
_SMEM_FIELDS = (("start", 0, 14), ("lbo", 16, 14), ("sbo", 32, 14), ("version", 46, 3), ("base_offset", 49, 3),
                ("lbo_mode", 52, 1), ("swizzle", 61, 3))


@dataclass(frozen=True)
class SmemDesc:
    """A decoded sm_100 shared-memory descriptor (byte quantities, not the >> 4 field values)."""

    start: int
    lbo: int
    sbo: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_mode: int = 0      # 0: LBO is a byte offset; 1: an absolute byte address

    def encode(self) -> int:
        return encode_smem_desc(self.start, self.lbo, self.sbo, self.swizzle, self.base_offset, self.lbo_mode)

    def to_sm90(self) -> int:
        """The sm_90 descriptor with the same layout, for the shared-memory readers of :mod:`warpsim.isa.smem`."""
        from . import smem

        if self.lbo_mode or self.base_offset or self.swizzle == "128B_base32B":
            raise NotImplementedError(
                f"reading shared memory through an sm_100 descriptor with LBO mode {self.lbo_mode}, base offset "
                f"{self.base_offset}, swizzle {self.swizzle!r} is not modelled (modelled: LBO mode 0, base offset 0, "
                f"swizzles none/32B/64B/128B)")
        return smem.encode_descriptor(self.start, self.lbo, self.sbo, self.swizzle)


def _bytes16(name, v, bits=14):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v % 16 or v >> 4 >= 1 << bits:
        raise ValueError(f"shared-memory descriptor: {name} must be a multiple of 16 in [0, {16 << bits}), got {v!r}")
    return v >> 4


def encode_smem_desc(start, lbo, sbo, swizzle="none", base_offset=0, lbo_mode=0) -> int:
    """The 64-bit sm_100 shared-memory descriptor (version field 1); ValueError naming a bad field."""
    _choice("swizzle", swizzle, SMEM_SWIZZLES)
    if not isinstance(base_offset, int) or isinstance(base_offset, bool) or not 0 <= base_offset < 8:
        raise ValueError(f"shared-memory descriptor: base offset must be 0..7, got {base_offset!r}")
    if lbo_mode not in (0, 1):
        raise ValueError(f"shared-memory descriptor: LBO mode must be 0 (relative) or 1 (absolute), got {lbo_mode!r}")
    w = _bytes16("start", start) | _bytes16("LBO", lbo) << 16 | _bytes16("SBO", sbo) << 32
    return w | SMEM_VERSION << 46 | base_offset << 49 | lbo_mode << 52 | SMEM_SWIZZLES[swizzle] << 61


def decode_smem_desc(word) -> SmemDesc:
    if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < 1 << 64:
        raise ValueError(f"a shared-memory descriptor is a 64-bit unsigned integer, got {word!r}")
    extra = word & ~_mask(_SMEM_FIELDS) & ((1 << 64) - 1)
    if extra:
        raise ValueError(f"shared-memory descriptor {word:#018x}: bits {extra:#018x} must be 0")
    f = {name: (word >> lo) & ((1 << w) - 1) for name, lo, w in _SMEM_FIELDS}
    if f["version"] != SMEM_VERSION:
        raise ValueError(f"shared-memory descriptor {word:#018x}: version field (bits 46-48) is {f['version']}, "
                         f"sm_100 requires {SMEM_VERSION} (an sm_90 wgmma descriptor has 0 there)")
    if f["swizzle"] not in _SWIZZLE_NAMES:
        raise ValueError(f"shared-memory descriptor {word:#018x}: swizzle field {f['swizzle']} is not defined; "
                         f"values: {SMEM_SWIZZLES}")
    return SmemDesc(start=f["start"] << 4, lbo=f["lbo"] << 4, sbo=f["sbo"] << 4, swizzle=_SWIZZLE_NAMES[f["swizzle"]],
                    base_offset=f["base_offset"], lbo_mode=f["lbo_mode"])


def instruction(op, desc: InstrDesc):
    """The catalog :class:`~warpsim.isa.catalog.Instruction` one (spelling, descriptor) pair executes.

    It carries what the numerics need (element types, M/N/K, block scaling, saturation); its
    ``iclass`` is ``"tcgen05"`` and its opcode the spelling.  ValueError if they do not fit together."""
    from .catalog import Instruction

    if isinstance(op, str):
        op = parse_tcgen05(op)
    check_idesc(desc, op)
    k = desc.k
    return Instruction(
        opcode=op.opcode, family=op.kind, shape=f"m{desc.m}n{desc.n}k{k}", atype=desc.atype, btype=desc.btype,
        ctype=desc.dtype, dtype=desc.dtype, alayout="row", blayout="col", satfinite=desc.saturate, bitop=None,
        sparse="sp" if op.sparse else None, selectors=(desc.selector,), min_sm=100, min_ptx=op.min_ptx,
        mnk=(desc.m, desc.n, k), kind=op.kind, nscale=k // op.scale_block if op.block_scaled else 0,
        stype=desc.scale_type, targets=op.targets, iclass="tcgen05")


_GROUPS = ("ws", "sp", "cta_group", "kind", "block_scale", "ashift", "collector")


def _split_tcgen05(s: str) -> dict:
    toks = s.split(".")
    if toks[:2] != ["tcgen05", "mma"]:
        raise ValueError(f"{s!r} is not a tcgen05.mma spelling: it must start with 'tcgen05.mma'")
    out = dict.fromkeys(_GROUPS)
    i = 2
    for name, test in (("ws", lambda t: t == "ws"), ("sp", lambda t: t == "sp"),
                       ("cta_group", lambda t: t.startswith("cta_group")), ("kind", lambda t: t.startswith("kind"))):
        if i < len(toks) and test(toks[i]):
            out[name] = toks[i]
            i += 1
    if i < len(toks) and toks[i] == "block_scale":
        out["block_scale"] = "block_scale"
        i += 1
        if i < len(toks) and (toks[i].startswith("scale_vec") or toks[i].startswith("block")):
            out["block_scale"] += "." + toks[i]
            i += 1
    if i < len(toks) and toks[i] == "ashift":
        out["ashift"] = "ashift"
        i += 1
    if i < len(toks) and toks[i].startswith("collector"):
        out["collector"] = toks[i]
        i += 1
    if i != len(toks):
        raise ValueError(f"{s!r}: unexpected qualifier '.{toks[i]}' (order: tcgen05.mma{{.ws}}{{.sp}}.cta_group::N"
                         ".kind::K{.block_scale{.scale_vec::NX|.blockNN}}{.ashift}{.collector::..})")
    return out


def _groups(op: Tcgen05Opcode) -> dict:
    return {"ws": "ws" if op.ws else None, "sp": "sp" if op.sparse else None,
            "cta_group": f"cta_group::{op.cta_group}", "kind": f"kind::{op.kind}", "block_scale": op.block_scale,
            "ashift": "ashift" if op.ashift else None, "collector": op.collector}


def parse_tcgen05(spelling: str) -> Tcgen05Opcode:
    """A ``tcgen05.mma`` spelling -> its catalog entry; ValueError naming the qualifier ptxas refuses."""
    if isinstance(spelling, Tcgen05Opcode):
        return spelling
    if not isinstance(spelling, str):
        raise TypeError(f"a tcgen05.mma spelling is a string, not {type(spelling).__name__}")
    s = spelling.strip()
    if s in TCGEN05_BY_OPCODE:
        return TCGEN05_BY_OPCODE[s]
    got = _split_tcgen05(s)
    from .catalog import TCGEN05_CATALOG

    # blame the first qualifier group whose value no accepted spelling with the others' values has
    for name in ("collector", "ashift", "block_scale", "cta_group", "ws", "sp", "kind"):   # the kind is blamed last
        others = [op for op in TCGEN05_CATALOG
                  if all(_groups(op)[g] == got[g] for g in ("kind", "cta_group", "ws", "sp", "block_scale", "ashift",
                                                             "collector") if g != name)]
        allowed = sorted({str(_groups(op)[name]) for op in others})
        if got[name] is None and name in ("kind", "cta_group"):
            raise ValueError(f"{s!r}: .{name} is required; e.g. {allowed[:4] or ['cta_group::1', 'kind::f16']}")
        if others and str(got[name]) not in allowed:
            show = ["(none)" if a == "None" else "." + a for a in allowed]
            raise ValueError(f"{s!r}: '.{got[name]}' is not accepted here (ptxas 13.0, sm_100a); allowed in its place: "
                             f"{', '.join(show)}" if got[name] else
                             f"{s!r}: needs a .{name} qualifier here; allowed: {', '.join(show)}")
    raise ValueError(f"{s!r} is not a tcgen05.mma spelling ptxas 13.0 accepts for sm_100a "
                     "(see warpsim.isa.catalog.TCGEN05_CATALOG)")
