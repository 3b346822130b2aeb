"""The instruction catalog: every ``mma``/``mma.sp`` opcode that ptxas accepts for sm_90.

This module is the spine of warpsim.  ``ROWS`` is the one declarative table;
every other module (parser, fragment layouts, engine, capture kernels, tests,
docs) derives what it needs from the :class:`Instruction` entries expanded from
it.  Adding a variant means adding a row.

A row names one shape of one family; every combination of its A.B type pairs,
(D, C) type pairs, layouts, ``.satfinite`` choices and bit operations is one
opcode.  A sparse row yields each opcode twice, as ``mma.sp`` and as
``mma.sp::ordered_metadata``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property

from .types import TYPES, ElemType

F8 = ("e4m3", "e5m2")
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
I8 = ("s8", "u8")
I4 = ("s4", "u4")
ROW_COL = (("row", "col"),)
ANY_LAYOUT = tuple(itertools.product(("row", "col"), repeat=2))
S32 = (("s32", "s32"),)
NO_SAT, ANY_SAT = (False,), (False, True)
SPARSE_FORMS = ("sp", "sp::ordered_metadata")
ORDERED = ("sp::ordered_metadata",)
F16_F32 = (("f16", "f16"), ("f32", "f32"))
#: rows that exist only on the arch-specific RTX Blackwell targets (ptxas 13.0 also accepts sm_121a)
SM120A = dict(targets=("sm_120a", "sm_121a"))


def _mix(types):
    return tuple(itertools.product(types, repeat=2))


def _same(t):
    return ((t, t),)


@dataclass(frozen=True)
class Row:
    family: str                  # groups variants that share arithmetic and layout rules
    shape: str                   # "m16n8k16"
    ab: tuple                    # (A type, B type) pairs
    dc: tuple                    # (D type, C type) pairs
    sm: int                      # lowest sm that has these opcodes
    ptx: str                     # lowest PTX ISA version
    layouts: tuple = ROW_COL     # (A layout, B layout) pairs
    satfinite: tuple = NO_SAT
    bitops: tuple = (None,)
    selectors: int = 0           # sparse rows: how many sparsity-selector values (0 = dense)
    kind: str | None = None      # sm_120a ``.kind::`` qualifier (f8f6f4, mxf8f6f4, mxf4, mxf4nvf4)
    scales: tuple = ()           # block-scaled rows: (scale_vec as spelled or None, scales per row, .stype)
    container: int = 0           # bits each A/B element occupies in its register (kind::f8f6f4: 8); 0 = its own
    forms: tuple | None = None   # sparse rows: the sparse forms (None: both mma.sp and ::ordered_metadata)
    targets: tuple = ()          # arch-specific targets that have the row ("sm_120a", ...); () = sm >= row.sm
    lenient: bool = False        # accepted by ptxas 13.0 but not defined by the PTX ISA (see docs/numerics.md)
    iclass: str = "mma"          # instruction class: "mma" (a warp, 32 threads) or "wgmma" (a warpgroup, 128)
    ns: tuple = ()               # wgmma rows: the N values of shape "m64nNk.."
    imm_scale: bool = False      # wgmma: takes imm-scale-a / imm-scale-b (+1 / -1)
    imm_trans: bool = False      # wgmma: takes imm-trans-a / imm-trans-b (MN-major shared-memory operands)


# fmt: off
ROWS: tuple[Row, ...] = (
    # family      shape        A.B pairs          (D, C) pairs                            sm  ptx    options
    Row("f16x4",  "m8n8k4",    _same("f16"),      (("f16", "f16"), ("f32", "f16"), ("f32", "f32")), 70, "6.4", layouts=ANY_LAYOUT),
    Row("f16",    "m16n8k8",   _same("f16"),      (("f16", "f16"), ("f32", "f32")),       75, "6.5"),
    Row("f16",    "m16n8k16",  _same("f16"),      (("f16", "f16"), ("f32", "f32")),       80, "7.0"),
    Row("bf16",   "m16n8k8",   _same("bf16"),     (("f32", "f32"),),                      80, "7.0"),
    Row("bf16",   "m16n8k16",  _same("bf16"),     (("f32", "f32"),),                      80, "7.0"),
    Row("tf32",   "m16n8k4",   _same("tf32"),     (("f32", "f32"),),                      80, "7.0"),
    Row("tf32",   "m16n8k8",   _same("tf32"),     (("f32", "f32"),),                      80, "7.0"),
    Row("f64",    "m8n8k4",    _same("f64"),      (("f64", "f64"),),                      80, "7.0"),
    Row("f64",    "m16n8k4",   _same("f64"),      (("f64", "f64"),),                      90, "7.8"),
    Row("f64",    "m16n8k8",   _same("f64"),      (("f64", "f64"),),                      90, "7.8"),
    Row("f64",    "m16n8k16",  _same("f64"),      (("f64", "f64"),),                      90, "7.8"),
    Row("fp8",    "m16n8k16",  _mix(F8),          (("f16", "f16"), ("f32", "f32")),       89, "8.7"),
    Row("fp8",    "m16n8k32",  _mix(F8),          (("f32", "f32"),),                      89, "8.4"),
    Row("fp8",    "m16n8k32",  _mix(F8),          (("f16", "f16"),),                      89, "8.7"),
    Row("int8",   "m8n8k16",   _mix(I8),          S32,                                    75, "6.5", satfinite=ANY_SAT),
    Row("int8",   "m16n8k16",  _mix(I8),          S32,                                    80, "7.0", satfinite=ANY_SAT),
    Row("int8",   "m16n8k32",  _mix(I8),          S32,                                    80, "7.0", satfinite=ANY_SAT),
    Row("int4",   "m8n8k32",   _mix(I4),          S32,                                    75, "6.5", satfinite=ANY_SAT),
    Row("int4",   "m16n8k32",  _mix(I4),          S32,                                    80, "7.0", satfinite=ANY_SAT),
    Row("int4",   "m16n8k64",  _mix(I4),          S32,                                    80, "7.0", satfinite=ANY_SAT),
    Row("b1",     "m8n8k128",  _same("b1"),       S32,                                    75, "6.5", bitops=("xor",)),
    Row("b1",     "m8n8k128",  _same("b1"),       S32,                                    80, "7.1", bitops=("and",)),
    Row("b1",     "m16n8k128", _same("b1"),       S32,                                    80, "7.0", bitops=("xor",)),
    Row("b1",     "m16n8k128", _same("b1"),       S32,                                    80, "7.1", bitops=("and",)),
    Row("b1",     "m16n8k256", _same("b1"),       S32,                                    80, "7.0", bitops=("xor",)),
    Row("b1",     "m16n8k256", _same("b1"),       S32,                                    80, "7.1", bitops=("and",)),
    # structured-sparse A (2:4; tf32 1:2); selectors = number of allowed sparsity-selector values
    Row("f16",    "m16n8k16",  _same("f16"),      (("f16", "f16"), ("f32", "f32")),       80, "7.1", selectors=4),
    Row("f16",    "m16n8k32",  _same("f16"),      (("f16", "f16"), ("f32", "f32")),       80, "7.1", selectors=2),
    Row("bf16",   "m16n8k16",  _same("bf16"),     (("f32", "f32"),),                      80, "7.1", selectors=4),
    Row("bf16",   "m16n8k32",  _same("bf16"),     (("f32", "f32"),),                      80, "7.1", selectors=2),
    Row("tf32",   "m16n8k8",   _same("tf32"),     (("f32", "f32"),),                      80, "7.1", selectors=4),
    Row("tf32",   "m16n8k16",  _same("tf32"),     (("f32", "f32"),),                      80, "7.1", selectors=2),
    Row("fp8",    "m16n8k64",  _mix(F8),          (("f32", "f32"),),                      89, "8.4", selectors=1),
    Row("int8",   "m16n8k32",  _mix(I8),          S32,                                    80, "7.1", satfinite=ANY_SAT, selectors=2),
    Row("int8",   "m16n8k64",  _mix(I8),          S32,                                    80, "7.1", satfinite=ANY_SAT, selectors=1),
    Row("int4",   "m16n8k64",  _mix(I4),          S32,                                    80, "7.1", satfinite=ANY_SAT, selectors=2),
    Row("int4",   "m16n8k128", _mix(I4),          S32,                                    80, "7.1", satfinite=ANY_SAT, selectors=1),
    # --- sm_120a (RTX Blackwell): kind:: forms, found with ptxas 13.0 (tests/test_blackwell.py keeps the fixtures)
    Row("f8f6f4", "m16n8k32",  _mix(F8F6F4),      F16_F32,                               120, "8.7", **SM120A, kind="f8f6f4", container=8),
    Row("mxf8f6f4", "m16n8k32", _mix(F8F6F4),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf8f6f4", container=8,
        scales=((None, 1, "ue8m0"), ("1X", 1, "ue8m0"))),
    Row("mxf4",   "m16n8k64",  _same("e2m1"),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf4",
        scales=((None, 2, "ue8m0"), ("2X", 2, "ue8m0"))),
    Row("mxf4",   "m16n8k64",  _same("e2m1"),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf4nvf4",
        scales=(("2X", 2, "ue8m0"), ("4X", 4, "ue4m3"))),
    Row("f8f6f4", "m16n8k64",  _mix(F8F6F4),      F16_F32,                               120, "8.7", **SM120A, kind="f8f6f4", container=8,
        selectors=1, forms=ORDERED),
    Row("mxf8f6f4", "m16n8k64", _mix(F8F6F4),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf8f6f4", container=8,
        selectors=1, forms=ORDERED, scales=((None, 1, "ue8m0"), ("1X", 1, "ue8m0"))),
    Row("mxf4",   "m16n8k128", _same("e2m1"),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf4",
        selectors=1, forms=ORDERED, scales=((None, 2, "ue8m0"), ("2X", 2, "ue8m0"))),
    Row("mxf4",   "m16n8k128", _same("e2m1"),     (("f32", "f32"),),                     120, "8.7", **SM120A, kind="mxf4nvf4",
        selectors=1, forms=ORDERED, scales=(("2X", 2, "ue8m0"), ("4X", 4, "ue4m3"))),
    # sparse fp8 with an f16 accumulator and no .kind: ptxas 12.9 and 13.0 assemble it for sm_120a / sm_121a only
    # (and refuse it for sm_89 .. sm_110a; tests/golden/ptxas/spellings.json.xz, "neighbours")
    Row("fp8",    "m16n8k64",  _mix(F8),          (("f16", "f16"),),                     120, "8.7", **SM120A, selectors=1,
        forms=ORDERED),
    # ptxas 13.0 also accepts these, which the PTX ISA does not define: a kind qualifier without
    # .block_scale on e4m3/e5m2 operands.  nvdisasm shows the same QMMA as kind::f8f6f4 (k16: QMMA.16816).
    *(Row("f8f6f4", "m16n8k16", _mix(F8), F16_F32, 120, "8.7", **SM120A, kind=kd, container=8, lenient=True)
      for kd in ("f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4")),
    *(Row("f8f6f4", "m16n8k32", _mix(F8), F16_F32, 120, "8.7", **SM120A, kind=kd, container=8, lenient=True)
      for kd in ("mxf8f6f4", "mxf4", "mxf4nvf4")),
    *(Row("f8f6f4", "m16n8k64", _mix(F8), F16_F32, 120, "8.7", **SM120A, kind=kd, container=8, lenient=True,
          selectors=1, forms=ORDERED)
      for kd in ("mxf8f6f4", "mxf4", "mxf4nvf4")),
)
# fmt: on

#: N of ``wgmma`` m64nNk.. shapes: every multiple of 8 for floats; integers and b1 skip the odd multiples above 32.
WG_N_FLOAT = tuple(range(8, 257, 8))
WG_N_INT = (8, 16, 24) + tuple(range(32, 257, 16))

#: Hopper warpgroup MMA (``wgmma.mma_async``; sm_90a only).  D is both the
#: accumulator and the result (C type = D type).  A comes from registers or a
#: shared-memory descriptor, B from a descriptor.  Checked with ptxas 13.0 for
#: sm_90a: exactly these 546 opcodes are accepted, each with either A form (mixed
#: s8/u8 needs PTX ISA 8.4, everything else 8.0).
# fmt: off
WGMMA_ROWS: tuple[Row, ...] = (
    Row("f16",  "m64nNk16",  _same("f16"),  (("f16", "f16"), ("f32", "f32")), 90, "8.0", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, imm_trans=True),
    Row("bf16", "m64nNk16",  _same("bf16"), (("f32", "f32"),),                90, "8.0", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, imm_trans=True),
    Row("tf32", "m64nNk8",   _same("tf32"), (("f32", "f32"),),                90, "8.0", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True),
    Row("fp8",  "m64nNk32",  _mix(F8),      (("f16", "f16"), ("f32", "f32")), 90, "8.0", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True),
    Row("int8", "m64nNk32",  (("s8", "s8"), ("u8", "u8")), S32,               90, "8.0", iclass="wgmma", ns=WG_N_INT, satfinite=ANY_SAT),
    Row("int8", "m64nNk32",  (("s8", "u8"), ("u8", "s8")), S32,               90, "8.4", iclass="wgmma", ns=WG_N_INT, satfinite=ANY_SAT),
    Row("b1",   "m64nNk256", _same("b1"),   S32,                              90, "8.0", iclass="wgmma", ns=WG_N_INT, bitops=("and",)),
)
# fmt: on

#: Structured-sparse warpgroup MMA (``wgmma.mma_async.sp``; A 2:4 sparse, tf32 1:2): 528 opcodes,
#: exactly what ptxas 13.0 accepts for sm_90a (both A forms); ``selectors``: the sparsity-selector
#: values ptxas allows (f16/bf16/tf32: 0-1; fp8, int8: 0).  PTX ISA 8.2 (mixed s8/u8: 8.4), as ptxas
#: requires.  Modelled and checked on H100 captures (docs/wgmma_sparse.md).
# fmt: off
WGMMA_SP_ROWS: tuple[Row, ...] = (
    Row("f16",  "m64nNk32",  _same("f16"),  (("f16", "f16"), ("f32", "f32")), 90, "8.2", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, imm_trans=True, selectors=2),
    Row("bf16", "m64nNk32",  _same("bf16"), (("f32", "f32"),),                90, "8.2", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, imm_trans=True, selectors=2),
    Row("tf32", "m64nNk16",  _same("tf32"), (("f32", "f32"),),                90, "8.2", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, selectors=2),
    Row("fp8",  "m64nNk64",  _mix(F8),      (("f16", "f16"), ("f32", "f32")), 90, "8.2", iclass="wgmma", ns=WG_N_FLOAT, imm_scale=True, selectors=1),
    Row("int8", "m64nNk64",  (("s8", "s8"), ("u8", "u8")), S32,               90, "8.2", iclass="wgmma", ns=WG_N_INT, satfinite=ANY_SAT, selectors=1),
    Row("int8", "m64nNk64",  (("s8", "u8"), ("u8", "s8")), S32,               90, "8.4", iclass="wgmma", ns=WG_N_INT, satfinite=ANY_SAT, selectors=1),
)
# fmt: on

#: PTX ISA version that introduced ``mma.sp::ordered_metadata``.
ORDERED_METADATA_PTX = "8.5"


def _parse_shape(shape: str) -> tuple[int, int, int]:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


@dataclass(frozen=True)
class Instruction:
    """One catalog entry: an opcode and everything derived from it.

    >>> ins = warpsim.parse("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32")
    >>> ins.family, ins.shape, ins.atype, ins.btype, ins.satfinite, ins.min_sm
    ('int8', 'm16n8k32', 's8', 'u8', True, 80)
    """

    opcode: str
    family: str
    shape: str
    atype: str
    btype: str
    ctype: str
    dtype: str
    alayout: str
    blayout: str
    satfinite: bool
    bitop: str | None
    sparse: str | None           # None, "sp" or "sp::ordered_metadata"
    selectors: tuple[int, ...]   # allowed sparsity-selector values; (0,) when dense
    min_sm: int
    min_ptx: str
    mnk: tuple[int, int, int] = field(repr=False)
    kind: str | None = None       # ``.kind::`` qualifier, or None
    scale_vec: str | None = None  # ``.scale_vec::`` as spelled ("1X", "2X", "4X"), or None (default / unscaled)
    nscale: int = 0               # block-scaled: scale factors per row of A (column of B); 0 = not scaled
    stype: str | None = None      # block-scaled: ``.ue8m0`` or ``.ue4m3``
    container: int = 0            # register bits per A/B element when wider than the type (kind::f8f6f4: 8)
    targets: tuple = ()           # arch-specific targets that have it; () = every sm >= min_sm
    lenient: bool = False         # ptxas accepts it, the PTX ISA does not define it

    @property
    def block_scaled(self) -> bool:
        return self.nscale > 0

    @property
    def scale_block(self) -> int:
        """Logical k elements that share one scale factor."""
        return self.k // self.nscale if self.nscale else 0

    def scale_elem(self) -> ElemType:
        from .types import SCALE_TYPES

        return SCALE_TYPES[self.stype]

    def scale_selectors(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Allowed immediates (byte-id, thread-id for A, thread-id for B), as ptxas 13.0 checks them."""
        return tuple(range(0, 4, self.nscale)), (0, 1), (0, 1, 2, 3)

    iclass: str = "mma"          # instruction class: "mma" or "wgmma"
    imm_scale: bool = False      # wgmma: imm-scale-a / imm-scale-b operands
    imm_trans: bool = False      # wgmma: imm-trans-a / imm-trans-b operands
    #: the opcode as the user wrote it (ptxas accepts qualifiers in many orders); for messages only,
    #: so it takes no part in equality or hashing: every spelling is the same catalog entry
    spelling: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        if not self.spelling:
            object.__setattr__(self, "spelling", self.opcode)

    @property
    def threads(self) -> int:
        """Threads that execute the instruction together: 32 (a warp) or 128 (a warpgroup)."""
        return 128 if self.iclass == "wgmma" else 32

    @property
    def is_wgmma(self) -> bool:
        return self.iclass == "wgmma"

    @property
    def m(self) -> int:
        return self.mnk[0]

    @property
    def n(self) -> int:
        return self.mnk[1]

    @property
    def k(self) -> int:
        return self.mnk[2]

    @property
    def is_sparse(self) -> bool:
        return self.sparse is not None

    @property
    def products(self) -> int:
        """Independent matrix products per warp (four for the m8n8k4 quad-pair form)."""
        return 4 if self.family == "f16x4" else 1

    def elem(self, operand: str) -> ElemType:
        t = TYPES[{"a": self.atype, "b": self.btype, "c": self.ctype, "d": self.dtype}[operand]]
        if self.container and operand in "ab":
            return t.in_container(self.container)
        return t

    def matrix_shape(self, operand: str) -> tuple[int, int]:
        """(rows, cols) of one product's matrix; sparse A is the compressed matrix."""
        m, n, k = self.mnk
        if operand == "a":
            return (m, k // 2) if self.is_sparse else (m, k)
        if operand == "b":
            return (k, n)
        return (m, n)

    def elements_per_lane(self, operand: str) -> int:
        r, c = self.matrix_shape(operand)
        return self.products * r * c // self.threads

    def words(self, operand: str) -> int:
        """32-bit words one lane holds for an operand ('a', 'b', 'c', 'd' or 'e').

        wgmma: 'a' counts the register form of A; B always comes from shared memory (0 words)."""
        if self.is_wgmma and operand == "b":
            return 0
        if operand == "e":
            return 1 if self.is_sparse else 0
        return self.elements_per_lane(operand) * self.elem(operand).bits // 32

    def registers(self, operand: str) -> int:
        """PTX registers in the operand's vector (a .f64 register is two words)."""
        w = self.words(operand)
        return w // 2 if self.elem(operand).bits == 64 and operand != "e" else w

    @cached_property
    def entries(self) -> tuple[tuple["Instruction", int], ...]:
        return tuple((self, s) for s in self.selectors)

    def describe(self) -> str:
        if self.is_wgmma:
            return _describe_wgmma(self)
        kind = f"sparse ({self.sparse})" if self.sparse else "dense"
        lines = [
            self.opcode,
            f"  family {self.family}, shape {self.shape} ({kind}), lowest sm_{self.min_sm}, PTX ISA {self.min_ptx}",
            f"  D.{self.dtype} = A.{self.atype} ({self.alayout}) x B.{self.btype} ({self.blayout}) + C.{self.ctype}",
        ]
        for op in "abcd":
            r, c = self.matrix_shape(op)
            lines.append(
                f"  {op.upper()}: {r}x{c} per product, {self.registers(op)} register(s) = {self.words(op)} word(s) per lane"
            )
        if self.is_sparse:
            lines.append(f"  E: 1 metadata word per lane; sparsity selector in {list(self.selectors)}")
        if self.products > 1:
            lines.append(f"  {self.products} independent products per warp (quad pairs)")
        if self.satfinite:
            lines.append("  .satfinite: results clamp to the s32 range instead of wrapping")
        if self.bitop:
            lines.append(f"  bit product: popcount(a {self.bitop.upper()} b)")
        if self.container:
            lines.append(f"  A/B elements sit in {self.container}-bit containers (encoding in the low bits)")
        if self.block_scaled:
            sv = self.scale_vec or f"default = {self.nscale}X"
            lines.append(f"  block scale: {self.nscale} .{self.stype} factor(s) per row of A and column of B "
                         f"(one per {self.scale_block} k; scale_vec {sv}); operands scale_a/scale_b with "
                         f"byte-id in {list(self.scale_selectors()[0])}, thread-id-a in [0, 1], thread-id-b in [0..3]")
        if self.targets:
            lines.append(f"  only on {', '.join(self.targets)}; numerics modelled from published measurements "
                         "(MMA-Sim), not verified on hardware")
        if self.lenient:
            lines.append("  accepted by ptxas 13.0 but not defined by the PTX ISA (compiles to the kind::f8f6f4 QMMA)")
        return "\n".join(lines)


def _describe_wgmma(ins: Instruction) -> str:
    m, n, k = ins.mnk
    imms = (["metadata (register)", "sparsity selector"] if ins.is_sparse else []) + ["scale-d (predicate)"]
    imms += ["imm-scale-a", "imm-scale-b"] if ins.imm_scale else []
    imms += ["imm-trans-a (descriptor A only)", "imm-trans-b"] if ins.imm_trans else []
    lines = [
        ins.opcode,
        f"  warpgroup MMA (128 threads), family {ins.family}, shape m{m}n{n}k{k}, sm_90a only, PTX ISA {ins.min_ptx}",
        f"  D.{ins.dtype} = A.{ins.atype} x B.{ins.btype} + D (scale-d = 0: D = A x B)",
        f"  A: {m}x{k}" + (f" logical, {m}x{k // 2} compressed" if ins.is_sparse else "")
        + f", from registers ({ins.registers('a')} word(s) per thread) or a shared-memory descriptor",
        f"  B: {k}x{n}, from a shared-memory descriptor",
        f"  D: {m}x{n}, {ins.words('d')} word(s) per thread",
        f"  operands after the descriptors: {', '.join(imms)}",
        "  shared-memory operands: K-major" + (" or MN-major (transposed)" if ins.imm_trans else " only"),
    ]
    if ins.satfinite:
        lines.append("  .satfinite: results clamp to the s32 range instead of wrapping")
    if ins.bitop:
        lines.append(f"  bit product: popcount(a {ins.bitop.upper()} b)")
    if ins.is_sparse:
        lines.insert(2, f"  structured-sparse A ({'1:2' if ins.atype == 'tf32' else '2:4'}), metadata register and "
                        f"sparsity selector in {list(ins.selectors)}")
        lines.append("  E: 1 metadata word per thread; each warp gives the metadata of its 16 rows of A")
    return "\n".join(lines)


def _wg_opcode(shape, sat, d, a, b, bitop, sparse=False) -> str:
    parts = ["wgmma", "mma_async"] + (["sp"] if sparse else []) + ["sync", "aligned", shape] + (["satfinite"] if sat else []) + [d, a, b]
    return ".".join(parts + ([bitop, "popc"] if bitop else []))


def _expand_wgmma(rows) -> tuple[Instruction, ...]:
    out = []
    for row in rows:
        for (d, c), (a, b), sat, bitop, n in itertools.product(row.dc, row.ab, row.satfinite, row.bitops, row.ns):
            shape = row.shape.replace("N", str(n))
            sp = bool(row.selectors)
            out.append(Instruction(
                opcode=_wg_opcode(shape, sat, d, a, b, bitop, sp), family=row.family, shape=shape,
                atype=a, btype=b, ctype=c, dtype=d, alayout="row", blayout="col",
                satfinite=sat, bitop=bitop, sparse="sp" if sp else None,
                selectors=tuple(range(row.selectors)) if sp else (0,), min_sm=row.sm, min_ptx=row.ptx,
                mnk=_parse_shape(shape), iclass="wgmma", imm_scale=row.imm_scale, imm_trans=row.imm_trans))
    return tuple(out)


def _opcode(row: Row, sparse, alay, blay, sat, d, a, b, c, bitop, scale=None) -> str:
    head = "mma" if sparse is None else f"mma.{sparse}"
    parts = [head, "sync", "aligned", row.shape, alay, blay]
    if row.kind:
        parts.append(f"kind::{row.kind}")
    if scale is not None:
        parts.append("block_scale")
        if scale[0]:
            parts.append(f"scale_vec::{scale[0]}")
    if sat:
        parts.append("satfinite")
    parts += [d, a, b, c]
    if scale is not None:
        parts.append(scale[2])
    if bitop:
        parts += [bitop, "popc"]
    return ".".join(parts)


def _max_version(a: str, b: str) -> str:
    return max(a, b, key=lambda v: tuple(int(x) for x in v.split(".")))


def _expand(rows) -> tuple[Instruction, ...]:
    out = []
    for row in rows:
        forms = (row.forms or SPARSE_FORMS) if row.selectors else (None,)
        for sparse, scale, (alay, blay), sat, (d, c), (a, b), bitop in itertools.product(
            forms, row.scales or (None,), row.layouts, row.satfinite, row.dc, row.ab, row.bitops
        ):
            ptx = row.ptx if sparse != "sp::ordered_metadata" else _max_version(row.ptx, ORDERED_METADATA_PTX)
            out.append(
                Instruction(
                    opcode=_opcode(row, sparse, alay, blay, sat, d, a, b, c, bitop, scale),
                    family=row.family,
                    shape=row.shape,
                    atype=a, btype=b, ctype=c, dtype=d,
                    alayout=alay, blayout=blay,
                    satfinite=sat, bitop=bitop, sparse=sparse,
                    selectors=tuple(range(row.selectors)) if row.selectors else (0,),
                    min_sm=row.sm, min_ptx=ptx,
                    mnk=_parse_shape(row.shape),
                    kind=row.kind,
                    scale_vec=scale[0] if scale else None,
                    nscale=scale[1] if scale else 0,
                    stype=scale[2] if scale else None,
                    container=row.container,
                    targets=row.targets,
                    lenient=row.lenient,
                )
            )
    return tuple(out)


#: Every warp-level ``mma`` opcode, in table order.
CATALOG: tuple[Instruction, ...] = _expand(ROWS)
#: Every warpgroup ``wgmma.mma_async`` opcode, in table order.
WGMMA_CATALOG: tuple[Instruction, ...] = _expand_wgmma(WGMMA_ROWS)
#: Every sparse ``wgmma.mma_async.sp`` opcode.
WGMMA_SP_CATALOG: tuple[Instruction, ...] = _expand_wgmma(WGMMA_SP_ROWS)
#: Lookup by opcode string (every class).
BY_OPCODE: dict[str, Instruction] = {ins.opcode: ins for ins in CATALOG + WGMMA_CATALOG + WGMMA_SP_CATALOG}


def entries():
    """Every (instruction, selector) pair: sparse opcodes once per allowed selector.

    >>> pairs = list(warpsim.entries())
    >>> pairs[0][0].opcode, pairs[0][1]
    ('mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16', 0)
    """
    for ins in CATALOG:
        yield from ins.entries


def select(*, family=None, shape=None, atype=None, sparse=None, sm=None):
    """Catalog entries filtered by the given fields (None means any)."""
    for ins in CATALOG:
        if family is not None and ins.family != family:
            continue
        if shape is not None and ins.shape != shape:
            continue
        if atype is not None and atype not in (ins.atype, ins.btype):
            continue
        if sparse is not None and ins.is_sparse != bool(sparse):
            continue
        if sm is not None and ins.min_sm > sm:
            continue
        yield ins


# --- datacenter Blackwell: tcgen05.mma (sm_100a) ------------------------------------------------
#
# A tcgen05.mma spelling names no shape and no element type: M, N, the A/B/D types, negation,
# transposition and sparsity selector are fields of the runtime 32-bit instruction descriptor
# (warpsim.isa.tcgen05).  A spelling is its qualifiers; each accepts a set of operand forms:
#   adesc / atmem  A through a shared-memory descriptor / from tensor memory ([a-tmem])
#   +dol           the disable-output-lane vector (4 words for cta_group::1, 8 for ::2)
#   +sid           the scale-input-d immediate
#   +sf            the [scale-A-tmem], [scale-B-tmem] operands of .block_scale
#   +zcm           the zero-column-mask descriptor of .ws
# Found with ptxas 13.0 for sm_100a (warpsim/hw/offline/ptxas_tcgen05.py); the acceptance
# table is tests/golden/ptxas/tcgen05_sm100a.json.xz and tests/test_tcgen05.py checks that these
# rows expand to exactly it.  PTX ISA 8.6.

#: K of one tcgen05.mma per kind (dense; .sp doubles it)
TCGEN05_K = {"f16": 16, "tf32": 8, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
TCGEN05_COLLECTOR_OPS = ("fill", "use", "lastuse", "discard")
#: collector-usage hints: A's collector (non-.ws) and the four B collector buffers (.ws)
TCGEN05_COLLECTORS_A = tuple(f"collector::a::{op}" for op in TCGEN05_COLLECTOR_OPS)
TCGEN05_COLLECTORS_B = tuple(f"collector::b{i}::{op}" for i in range(4) for op in TCGEN05_COLLECTOR_OPS)
#: with .ashift (A from tensor memory, shifted down one row) ptxas allows only these A-collector hints
TCGEN05_COLLECTORS_ASHIFT = ("collector::a::discard", "collector::a::lastuse")


@dataclass(frozen=True)
class Tcgen05Row:
    kind: str                    # .kind:: qualifier
    ws: bool = False             # weight-stationary .ws spellings (cta_group::1 only)
    block_scale: tuple = ()      # block-scaled kinds: (suffix as spelled, K elements per scale factor)
    sid: bool = False            # non-.ws: takes the scale-input-d immediate
    ashift: bool = False         # non-.ws: has .ashift spellings (A from tensor memory)
    sp_refuses: tuple = ()       # operand forms ptxas 13.0 refuses on the .sp spelling only


# fmt: off
TCGEN05_ROWS: tuple[Tcgen05Row, ...] = (
    Tcgen05Row("f16",    sid=True, ashift=True),
    Tcgen05Row("tf32",   sid=True, ashift=True),
    Tcgen05Row("f8f6f4", ashift=True),
    # ptxas 13.0 also takes scale-input-d on kind::i8 (the PTX ISA defines it for f16/tf32 only),
    # but not together with disable-output-lane on .sp
    Tcgen05Row("i8",     sid=True, ashift=True, sp_refuses=("adesc+dol+sid", "atmem+dol+sid")),
    Tcgen05Row("mxf8f6f4", block_scale=(("block_scale", 32), ("block_scale.scale_vec::1X", 32),
                                        ("block_scale.block32", 32))),
    Tcgen05Row("mxf4",     block_scale=(("block_scale", 32), ("block_scale.scale_vec::2X", 32),
                                        ("block_scale.block32", 32))),
    Tcgen05Row("mxf4nvf4", block_scale=(("block_scale.scale_vec::2X", 32), ("block_scale.block32", 32),
                                        ("block_scale.scale_vec::4X", 16), ("block_scale.block16", 16))),
    Tcgen05Row("f16",    ws=True),
    Tcgen05Row("tf32",   ws=True),
    Tcgen05Row("f8f6f4", ws=True),
    Tcgen05Row("i8",     ws=True),
)
# fmt: on


@dataclass(frozen=True)
class Tcgen05Opcode:
    """One accepted ``tcgen05.mma`` spelling and the operand forms ptxas takes with it."""

    opcode: str
    kind: str
    ws: bool
    sparse: bool
    cta_group: int
    block_scale: str | None      # the .block_scale suffix as spelled, or None
    scale_block: int             # block-scaled: K elements per scale factor (32 or 16); 0 otherwise
    ashift: bool
    collector: str | None
    forms: tuple[str, ...]       # accepted operand forms (names above), sorted
    min_ptx: str = "8.6"
    targets: tuple = ("sm_100a", "sm_103a", "sm_110a")   # where ptxas 13.0 has the spelling (TCGEN05_TARGETS)
    iclass: str = "tcgen05"

    @property
    def k(self) -> int:
        """K of one MMA (sparse: the logical K, twice the dense one)."""
        return TCGEN05_K[self.kind] * (2 if self.sparse else 1)

    @property
    def block_scaled(self) -> bool:
        return self.block_scale is not None

    @property
    def nscale(self) -> int:
        """Scale factors per row of A / column of B of one (dense) MMA."""
        return TCGEN05_K[self.kind] // self.scale_block if self.scale_block else 0

    def describe(self) -> str:
        lines = [self.opcode,
                 f"  tcgen05.mma ({'weight-stationary .ws, ' if self.ws else ''}cta_group::{self.cta_group}), "
                 f"kind::{self.kind}, K = {self.k}{' (sparse A)' if self.sparse else ''}; sm_100a, PTX ISA {self.min_ptx}",
                 "  M, N, element types, negate/transpose: in the 32-bit instruction descriptor (warpsim.isa.tcgen05)",
                 f"  operand forms ptxas accepts: {', '.join(self.forms)}"]
        if self.block_scaled:
            lines.append(f"  block scale: one factor per {self.scale_block} K elements ({self.nscale} per row of a dense MMA)")
        if self.ashift:
            lines.append("  .ashift: A from tensor memory, its rows shifted down by one")
        if self.collector:
            lines.append(f"  collector-usage hint .{self.collector} (a hint: no effect on the result)")
        lines.append("  numerics modelled from published measurements (MMA-Sim), not verified on hardware")
        return "\n".join(lines)


#: Where the other tcgen05 targets differ from sm_100a (ptxas 13.0, PTX ISA 9.0; tables
#: tests/golden/ptxas/tcgen05_sm103a.json.xz and _sm110a.json.xz): sm_103a has no kind::i8 spellings;
#: sm_110a has every spelling, but kind::f16 / kind::tf32 take no scale-input-d there (kind::i8, where the
#: PTX ISA does not define it, still does).
TCGEN05_TARGETS: dict[str, dict] = {
    "sm_100a": {},
    "sm_103a": {"without_kinds": ("i8",)},
    "sm_110a": {"without_sid_kinds": ("f16", "tf32")},
}


def tcgen05_forms_on(op: "Tcgen05Opcode", arch: str) -> tuple[str, ...]:
    """The operand forms ptxas accepts for ``op`` on a tcgen05 target; () where the target lacks the spelling."""
    rule = TCGEN05_TARGETS[arch]
    if op.kind in rule.get("without_kinds", ()):
        return ()
    if op.kind in rule.get("without_sid_kinds", ()):
        return tuple(f for f in op.forms if "+sid" not in f)
    return op.forms


def _tcgen05_forms(row: Tcgen05Row, sparse: bool, ashift: bool) -> tuple[str, ...]:
    heads = ("atmem",) if ashift else ("adesc", "atmem")
    if row.block_scale:
        tails = ("+sf",)
    elif row.ws:
        tails = ("", "+zcm")
    else:
        tails = ("", "+dol") + (("+sid", "+dol+sid") if row.sid else ())
    forms = {h + t for h in heads for t in tails}
    if sparse:
        forms -= set(row.sp_refuses)
    return tuple(sorted(forms))


def _expand_tcgen05(rows) -> tuple[Tcgen05Opcode, ...]:
    out = []
    for row in rows:
        for sparse, cta in itertools.product((False, True), (1,) if row.ws else (1, 2)):
            for bs, block in row.block_scale or ((None, 0),):
                variants = [(False, c) for c in (None,) + (TCGEN05_COLLECTORS_B if row.ws else TCGEN05_COLLECTORS_A)]
                if row.ashift:
                    variants += [(True, c) for c in (None,) + TCGEN05_COLLECTORS_ASHIFT]
                for ashift, coll in variants:
                    parts = ["tcgen05", "mma"] + (["ws"] if row.ws else []) + (["sp"] if sparse else [])
                    parts += [f"cta_group::{cta}", f"kind::{row.kind}"] + ([bs] if bs else [])
                    parts += (["ashift"] if ashift else []) + ([coll] if coll else [])
                    targets = tuple(a for a, rule in TCGEN05_TARGETS.items()
                                    if row.kind not in rule.get("without_kinds", ()))
                    out.append(Tcgen05Opcode(
                        opcode=".".join(parts), kind=row.kind, ws=row.ws, sparse=sparse, cta_group=cta,
                        block_scale=bs, scale_block=block, ashift=ashift, collector=coll,
                        forms=_tcgen05_forms(row, sparse, ashift), targets=targets))
    return tuple(out)


#: Every ``tcgen05.mma`` spelling ptxas 13.0 accepts for sm_100a.
TCGEN05_CATALOG: tuple[Tcgen05Opcode, ...] = _expand_tcgen05(TCGEN05_ROWS)
TCGEN05_BY_OPCODE: dict[str, Tcgen05Opcode] = {t.opcode: t for t in TCGEN05_CATALOG}
