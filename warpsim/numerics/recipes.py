"""Per-architecture arithmetic recipes for the tensor-core float families, as data.

A recipe says which primitive of :mod:`warpsim.numerics.fused` computes one output
element of an instruction and with which parameters.  ``RECIPES[arch]`` maps a
key derived from the catalog entry to a :class:`Recipe`; keys are tried from
the most to the least specific::

    (family, shape, sparse, atype, btype, dtype)
    (family, shape, sparse, dtype)
    (family, shape, sparse)
    (family, sparse)

where ``sparse`` is a bool.  Element formats are never written here: they are
read from :mod:`warpsim.isa.types` through the catalog entry.

Parameter vector (``numpy.int64``, length ``fused.P_LEN``) returned by
:func:`recipe_params`; a *format* is five ints
``(width, exp_bits, man_bits, ignored_low_bits, has_inf)``::

    p[0]      kind: 1 = tc_dot
    p[1:6]    format of A elements
    p[6:11]   format of B elements
    p[11:16]  format of C
    p[16:21]  format of D
    p[21:26]  format A and B elements are first converted into, exactly
              (sm_90 fp8 -> f16 unpack); all zeros = no conversion
    p[26]     nblk: number of chained tensor-core passes (blocks)
    p[27]     group: term i (in the order the engine passes them) belongs to
              block (i // group) % nblk
    p[28]     frac: fractional bits kept below 2**emax when aligning terms
    p[29]     rounding of each block result: 0 = toward zero, 1 = nearest even
    p[30:35]  format of each block's result (the chained accumulator)
    p[35]     C entry: 0 = C is a term of the first block; 1 = blocks start
              from +0 and D = RNE(last block result + C) in D's format
              (the FADD / HADD2 of the sm_90 fp8 emulation)
    p[36]     block overflow: 0 = inf even under truncation; 1 = IEEE
    p[37]     zero block results: 0 = IEEE signs (-0 when every term is -0,
              a nonzero sum rounded to zero keeps its sign); 1 = always +0
    p[38]     result mantissa bits: D keeps only this many mantissa bits (the rest
              cleared, i.e. truncated; NaN stays canonical); 0 = all (sm_90a wgmma fp8 -> f32: 13)

The engine calls ``fused.tc_dot(a, b, n, c, p)`` per output element with the
A row and the B column in k order (sparse: the ``n = k/2`` kept A elements
with the B elements of their logical rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fused as ar
from ..isa.catalog import BY_OPCODE, Instruction
from ..isa.types import TYPES, ElemType


@dataclass(frozen=True)
class Recipe:
    primitive: str = "tc_dot"
    operand_type: str | None = None  # type A/B are converted into before multiplying (None: as is)
    blocks: int = 1                  # chained tensor-core passes
    group: int = 1                   # consecutive terms per block before switching to the next
    frac: int = 25                   # fractional bits kept below the largest exponent
    rounding: str = "rz"             # block result rounding: "rz" or "rne"
    acc_type: str | None = None      # block result / accumulator type (None: D's type)
    c_entry: str = "fused"           # "fused" (C in the first block) or "add_rne" (separate RNE add)
    overflow: str = "inf"            # "inf" or "ieee"
    zero: str = "positive"           # zero results: "positive" (always +0) or "ieee"
    result_man_bits: int = 0         # D keeps only this many mantissa bits (toward zero); 0 = all


#: HMMA native f32 accumulate (f16 / bf16 / tf32 inputs): one fused pass, 25
#: fractional bits, truncation.
_HMMA_F32 = Recipe(frac=25, rounding="rz", zero="positive")
#: HMMA native f16 accumulate: the same 25-bit fused sum rounded once to f16, nearest even.
_HMMA_F16 = Recipe(frac=25, rounding="rne", zero="positive")


def _fp8(dtype: str) -> Recipe:
    """sm_90 fp8 emulation: F2FP unpack to f16 (exact), two chained f16 HMMAs
    starting from a zero accumulator (first the low halves of each register,
    i.e. k with (k // 2) % 2 == 0), then FADD / HADD2 with C."""
    base = _HMMA_F32 if dtype == "f32" else _HMMA_F16
    return Recipe(operand_type="f16", blocks=2, group=2, frac=base.frac, rounding=base.rounding,
                  c_entry="add_rne", zero=base.zero)


RECIPES: dict[str, dict[tuple, Recipe]] = {
    "sm_90": {
        ("f16", False, "f32"): _HMMA_F32,
        ("f16", False, "f16"): _HMMA_F16,
        ("bf16", False, "f32"): _HMMA_F32,
        ("tf32", False, "f32"): _HMMA_F32,
        ("fp8", False, "f32"): _fp8("f32"),
        ("fp8", False, "f16"): _fp8("f16"),
        ("f16", True, "f32"): _HMMA_F32,
        ("f16", True, "f16"): _HMMA_F16,
        ("bf16", True, "f32"): _HMMA_F32,
        ("tf32", True, "f32"): _HMMA_F32,
        ("fp8", True, "f32"): _fp8("f32"),
    },
}

#: wgmma on sm_90a (keys: ("wgmma", family, dtype)).  f16/bf16/tf32: the HMMA
#: model of the same K (measured: Triton captures and tests/golden/wgmma_sm90a.npz).
#: fp8 is native, not the mma emulation: one fused sum with 13 fractional bits.
WGMMA_RECIPES: dict[tuple, Recipe] = {
    ("wgmma", "f16", "f32"): _HMMA_F32,
    ("wgmma", "f16", "f16"): _HMMA_F16,
    ("wgmma", "bf16", "f32"): _HMMA_F32,
    ("wgmma", "tf32", "f32"): _HMMA_F32,
    ("wgmma", "fp8", "f16"): Recipe(frac=13, rounding="rne", zero="positive"),
    # fitted on H100 captures: the same 13-bit fused sum (C included), truncated to f32, of
    # which only 13 mantissa bits are kept (the low 10 cleared); NaN is the canonical 0x7fffffff.
    ("wgmma", "fp8", "f32"): Recipe(frac=13, rounding="rz", zero="positive", result_man_bits=13),
}
RECIPES["sm_90a"] = {**RECIPES["sm_90"], **WGMMA_RECIPES}

#: families another module handles (warpsim.numerics.chain)
_CHAIN_FAMILIES = ("f64", "f16x4")


def _keys(ins: Instruction):
    if ins.is_wgmma:
        return (("wgmma", ins.family, ins.dtype),)
    sp = ins.is_sparse
    return (
        (ins.family, ins.shape, sp, ins.atype, ins.btype, ins.dtype),
        (ins.family, ins.shape, sp, ins.dtype),
        (ins.family, sp, ins.dtype),
        (ins.family, ins.shape, sp),
        (ins.family, sp),
    )


def find_recipe(ins: Instruction, arch: str = "sm_90") -> Recipe:
    if isinstance(ins, str):
        ins = BY_OPCODE[ins]
    if ins.family in _CHAIN_FAMILIES:
        raise NotImplementedError(
            f"{ins.opcode}: family {ins.family!r} is not a tensor-core dot product recipe; "
            "see warpsim.numerics.chain.chain_params / chain_dot")
    table = RECIPES.get(arch)
    if table is None:
        raise NotImplementedError(f"no float tensor-core recipes for {arch!r} (have: {sorted(RECIPES)})")
    for k in _keys(ins):
        if k in table:
            return table[k]
    raise NotImplementedError(f"{ins.opcode}: no {arch} recipe for family {ins.family!r}"
                              f"{' (sparse)' if ins.is_sparse else ''} with D.{ins.dtype}")


def _fmt(t: ElemType) -> list[int]:
    return [t.bits, t.exp_bits, t.man_bits, t.ignored_low_bits, 1 if t.has_inf else 0]


def recipe_params(ins, arch: str = "sm_90") -> np.ndarray:
    """int64 parameter vector of ``fused.tc_dot`` for a catalog entry (layout: module docstring)."""
    if isinstance(ins, str):
        ins = BY_OPCODE[ins]
    r = find_recipe(ins, arch)
    if r.primitive != "tc_dot":
        raise NotImplementedError(f"primitive {r.primitive!r}")
    p = np.zeros(ar.P_LEN, dtype=np.int64)
    p[ar.P_KIND] = ar.KIND_TC_DOT
    p[ar.P_A:ar.P_A + 5] = _fmt(ins.elem("a"))
    p[ar.P_B:ar.P_B + 5] = _fmt(ins.elem("b"))
    p[ar.P_C:ar.P_C + 5] = _fmt(ins.elem("c"))
    p[ar.P_D:ar.P_D + 5] = _fmt(ins.elem("d"))
    if r.operand_type is not None:
        p[ar.P_OP:ar.P_OP + 5] = _fmt(TYPES[r.operand_type])
    p[ar.P_NBLK] = r.blocks
    p[ar.P_GROUP] = r.group
    p[ar.P_FRAC] = r.frac
    p[ar.P_RND] = {"rz": ar.RND_RZ, "rne": ar.RND_RNE}[r.rounding]
    p[ar.P_ACC:ar.P_ACC + 5] = _fmt(TYPES[r.acc_type or ins.dtype])
    p[ar.P_CMODE] = {"fused": ar.CMODE_FUSED, "add_rne": ar.CMODE_SEPARATE_ADD}[r.c_entry]
    p[ar.P_OVF] = {"inf": ar.OVF_INF, "ieee": ar.OVF_IEEE}[r.overflow]
    p[ar.P_ZERO] = {"ieee": ar.ZERO_IEEE, "positive": ar.ZERO_POSITIVE}[r.zero]
    p[ar.P_RES_MB] = r.result_man_bits
    return p


# --- scalar-chain recipes (warpsim.numerics.chain) ---------------------------------------------

#: What each form computes, per architecture, keyed by (family, D type, C type) of the
#: catalog entry; every shape and layout of a key shares the recipe (k comes from the
#: instruction).  Fitted on the H100 corpus and the deep H200 corpus: see
#: ``docs/numerics_chain.md`` and ``tools/fit_chain.py``.
CHAIN_RECIPES: dict[str, dict[tuple[str, str, str], dict]] = {
    "sm_90": {
        # m8n8k4 f16 -> f16: ptxas emits, per output, FMUL(k0) FFMA(k1) and FMUL(k2) FFMA(k3),
        # then FADD(C, S01), FADD(., S23), then F2FP.F16.F32.PACK_AB.
        ("f16x4", "f16", "f16"): dict(work="f32", group=2, first="fmul", combine="c_first",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        # m8n8k4 f16 -> f32: FFMA(k0, RZ) FFMA(k1) FFMA(k2) FFMA(k3), then FADD with C.
        ("f16x4", "f32", "f16"): dict(work="f32", group=0, first="ffma_zero", combine="c_last",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        ("f16x4", "f32", "f32"): dict(work="f32", group=0, first="ffma_zero", combine="c_last",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        # DMMA (all shapes): acc = C; acc = fma(A[k], B[k], acc) for k = 0, 1, ...
        ("f64", "f64", "f64"): dict(work="f64", group=0, first="from_c", combine="c_last",
                                    korder="asc", nan="bca", nan_bits=0xFFF8000000000000,
                                    d_nan="keep"),
    },
}
