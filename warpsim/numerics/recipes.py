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
    p[38:48]  block scaling (sm_120a ``.block_scale`` forms): see the ``P_SCALE`` ..
              ``P_ZEXP`` constants in :mod:`warpsim.numerics.fused`

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
    source: str = ""                 # where the rule comes from (paper, code, capture)
    unmeasured: str = ""             # what no source measured for this row, and what was chosen
    scale: str = "none"              # block scaling: "none", "product" (ST-FDPA) or "group" (GST-FDPA)
    scale_group: int = 1             # "group": products summed exactly before scaling
    zero_exp: int | None = None      # exponent a zero term takes in emax (None: zeros never set emax)


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

#: wgmma on sm_90a, part of the sm_90 table (keys: ("wgmma", family, dtype)).  f16/bf16/tf32: the HMMA
#: model of the same K (measured: Triton captures and tests/golden/wgmma_sm90a.npz).
#: fp8 is native, not the mma emulation: one fused sum with 13 fractional bits.
WGMMA_RECIPES: dict[tuple, Recipe] = {
    ("wgmma", "f16", "f32"): _HMMA_F32,
    ("wgmma", "f16", "f16"): _HMMA_F16,
    ("wgmma", "bf16", "f32"): _HMMA_F32,
    ("wgmma", "tf32", "f32"): _HMMA_F32,
    ("wgmma", "fp8", "f16"): Recipe(frac=13, rounding="rne", zero="positive"),
    # fitted on H100 captures: the same 13-bit fused sum (C included), truncated to an f32 word
    # that keeps only 13 mantissa bits (the low 10 cleared: the f32e8m13 result format of Ada's fp8
    # rows below); NaN is the canonical 0x7fffffff.
    ("wgmma", "fp8", "f32"): Recipe(frac=13, rounding="rz", zero="positive", acc_type="f32e8m13"),
}
RECIPES["sm_90"].update(WGMMA_RECIPES)     # sm_90a spells the same target (warpsim.isa.archs)

#: families another module handles (warpsim.numerics.chain)
_CHAIN_FAMILIES = ("f64", "f16x4")


def _keys(ins: Instruction):
    if ins.iclass == "tcgen05":
        return (("tcgen05", ins.kind, ins.is_sparse, ins.dtype),)
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
    table = RECIPES.get(arch)
    if table is None:
        raise NotImplementedError(f"no float tensor-core recipes for {arch!r} (have: {sorted(RECIPES)})")
    for k in _keys(ins):
        if k in table:
            return table[k]
    if ins.family in _CHAIN_FAMILIES:
        raise NotImplementedError(
            f"{ins.opcode}: family {ins.family!r} is not a tensor-core dot product recipe on {arch}; "
            "see warpsim.numerics.chain.chain_params / chain_dot")
    raise NotImplementedError(f"{ins.opcode}: no {arch} recipe for family {ins.family!r}"
                              f"{' (sparse)' if ins.is_sparse else ''} with D.{ins.dtype}")


def _fmt(t: ElemType) -> list[int]:
    special = 1 if t.has_inf else (2 if t.finite_only else 0)
    width = t.width if t.signed else t.width + 1   # unsigned formats: a sign bit that is always 0
    return [width, t.exp_bits, t.man_bits, t.ignored_low_bits, special]


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
    p[ar.P_ACC:ar.P_ACC + 5] = _fmt(ACC_TYPES.get(r.acc_type) or TYPES[r.acc_type or ins.dtype])
    p[ar.P_CMODE] = {"fused": ar.CMODE_FUSED, "add_rne": ar.CMODE_SEPARATE_ADD}[r.c_entry]
    p[ar.P_OVF] = {"inf": ar.OVF_INF, "ieee": ar.OVF_IEEE}[r.overflow]
    p[ar.P_ZERO] = {"ieee": ar.ZERO_IEEE, "positive": ar.ZERO_POSITIVE}[r.zero]
    p[ar.P_SCALE] = {"none": ar.SCALE_NONE, "product": ar.SCALE_PRODUCT, "group": ar.SCALE_GROUP}[r.scale]
    if r.scale != "none":
        if not ins.block_scaled:
            raise NotImplementedError(f"{ins.opcode}: a block-scale recipe needs a block-scaled instruction")
        p[ar.P_SF:ar.P_SF + 5] = _fmt(ins.scale_elem())
        p[ar.P_STERMS] = ins.scale_block // (2 if ins.is_sparse else 1)
        p[ar.P_SGROUP] = r.scale_group
    if r.zero_exp is not None:
        p[ar.P_ZEXP_ON] = 1
        p[ar.P_ZEXP] = r.zero_exp
    return p


# --- scalar-chain recipes (warpsim.numerics.chain) ---------------------------------------------

#: What each form computes, per architecture, keyed by (family, D type, C type) of the
#: catalog entry; every shape and layout of a key shares the recipe (k comes from the
#: instruction).  Fitted on the H100 corpus and the deep H200 corpus: see
#: ``docs/numerics_chain.md`` and ``warpsim/hw/offline/fit_chain.py``.
CHAIN_RECIPES: dict[str, dict[tuple[str, str, str], dict]] = {
    "sm_90": {
        # m8n8k4 f16 -> f16: ptxas emits, per output, FMUL(k0) FFMA(k1) and FMUL(k2) FFMA(k3),
        # then FADD(C, S01), FADD(., S23), then F2FP.F16.F32.PACK_AB.
        ("f16x4", "f16", "f16"): dict(work="f32", group=2, first="fmul", combine="c_first",
                                      korder="asc", nan="canonical", nan_bits=0x7FFFFFFF,
                                      d_nan="canonical"),
        # m8n8k4 f16 -> f32: FFMA(k0, RZ) FFMA(k1) FFMA(k2) FFMA(k3), then FADD with C.
        # (C f16 or f32: the same recipe, C converted to f32 exactly)
        **{("f16x4", "f32", c): dict(work="f32", group=0, first="ffma_zero", combine="c_last", korder="asc",
                                     nan="canonical", nan_bits=0x7FFFFFFF, d_nan="canonical") for c in ("f16", "f32")},
        # DMMA (all shapes): acc = C; acc = fma(A[k], B[k], acc) for k = 0, 1, ...
        ("f64", "f64", "f64"): dict(work="f64", group=0, first="from_c", combine="c_last",
                                    korder="asc", nan="bca", nan_bits=0xFFF8000000000000,
                                    d_nan="keep"),
    },
}


# --- the other architectures (issue 15): modelled from published measurements ------------------
#
# Nothing below was captured on the architecture it describes (only sm_90 was).  Each row names
# its source; where no source measured a case, the row says what was chosen instead (field
# ``unmeasured``).  Sources:
#
# * MMA-SIM: Xie, Wang, Yang, Yang, "MMA-Sim: Bit-Accurate Reference Model of Tensor Cores and
#   Matrix Cores", arXiv 2511.10909 (2025), and its reference code (microsoft/MMA-Sim,
#   mmasim/simulator/nv_ptx.py and arithmetic.py).  Per architecture: the fractional bits kept
#   below the largest exponent (Volta 23, Turing 24, Ampere 24, Ada 24, Hopper 25, Blackwell 25,
#   RTX Blackwell 25); every product exact, C a term of the same fused sum, each term truncated
#   toward zero; f32 results truncated (RZ) to 23 bits, f16 results rounded to nearest even;
#   NaN results are the canonical 0x7fffffff / 0x7fff; on Ampere and Ada exactly these mma are
#   two chained passes over the first and second half of k, the first pass's result rounded to D's
#   format and used as the second's C: f16/bf16 m16n8k16, tf32 m16n8k8, fp8 m16n8k32; on Ada
#   fp8 keeps 13 fractional bits and an f32 result keeps 13 mantissa bits (RZ).  MMA-Sim covers
#   dense mma only (no mma.sp), and per architecture only the shapes it lists: Volta m8n8k4;
#   Turing m16n8k8 and m8n8k4; Ampere m16n8k8/k16 f16/bf16, tf32 k4/k8, f64 m8n8k4; Ada also fp8
#   k16/k32; Hopper also f64 m16n8k*; Blackwell (sm_100) the Ampere/Turing shapes; RTX Blackwell
#   (sm_120) the Ada/Ampere/Turing shapes.
# * SASS: what ptxas 13.0 emits for each target (``warpsim/hw/offline/ptxas_archs.py --sass``): the same
#   emulation as on sm_90 where sm_90's recipe was fitted on H100 captures (fp8 on sm_100,
#   m8n8k4 f16 on sm_80 and later), native instructions elsewhere (QMMA fp8 on sm_89 and sm_120,
#   HMMA.884 m8n8k4 on sm_75).
# * Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330
#   (2021) (V100, T4, A100) and Khattak, Mikaitis, "Accurate Models of NVIDIA Tensor Cores",
#   arXiv 2512.07004 (V100, A100, H100, B200): their abstracts name the same features (exact
#   products, truncation, normalisation only at the end, accumulator width); no row below takes a
#   number from them that MMA-Sim does not also give (see docs/numerics.md).

#: Accumulator formats that are not PTX element types: Ada's fp8 f32 result with 13 mantissa bits
#: (an f32 word whose 10 low bits are always zero; its NaN is still the f32 canonical 0x7fffffff).
ACC_TYPES: dict[str, ElemType] = {
    "f32e8m13": ElemType("f32e8m13", 32, "float", True, 8, 13, 10, True, np.dtype(np.float32)),
}

_MMASIM = "MMA-Sim (arXiv 2511.10909; microsoft/MMA-Sim nv_ptx.py)"
_SPARSE_CHOICE = ("mma.sp: no source measured sparse MMAs on this architecture; chosen: the dense rule of "
                  "the same architecture applied to the k/2 kept products")
_SPLIT_SPARSE_CHOICE = ("mma.sp: no source measured sparse MMAs; chosen: the dense rule, with the kept products "
                        "split into two chained halves exactly when their number equals a dense shape that "
                        "MMA-Sim measured as two halves (16 f16/bf16, 8 tf32, 32 fp8 products); the "
                        "alternative (split by logical k) was not tested")


def _fused(frac, dtype, *, source, unmeasured="", blocks=1, group=1, acc_type=None):
    """One or two chained native tensor-core passes; f32 results RZ, f16 results RNE."""
    return Recipe(frac=frac, rounding="rz" if dtype == "f32" else "rne", blocks=blocks, group=group,
                  acc_type=acc_type, zero="positive", source=source, unmeasured=unmeasured)


def _ampere_like(frac, src):
    """Ampere / Ada HMMA rows (f16, bf16, tf32): the MMA-Sim split list, sparse by the chosen rule."""
    rows = {}
    for dt in ("f32", "f16"):
        rows[("f16", "m16n8k8", False, dt)] = _fused(frac, dt, source=src)
        rows[("f16", "m16n8k16", False, dt)] = _fused(frac, dt, blocks=2, group=8, source=src + "; two halves of k")
        rows[("f16", "m16n8k16", True, dt)] = _fused(frac, dt, source=src, unmeasured=_SPLIT_SPARSE_CHOICE)
        rows[("f16", "m16n8k32", True, dt)] = _fused(frac, dt, blocks=2, group=8, source=src,
                                                     unmeasured=_SPLIT_SPARSE_CHOICE)
    rows[("bf16", "m16n8k8", False, "f32")] = _fused(frac, "f32", source=src)
    rows[("bf16", "m16n8k16", False, "f32")] = _fused(frac, "f32", blocks=2, group=8, source=src + "; two halves of k")
    rows[("bf16", "m16n8k16", True, "f32")] = _fused(frac, "f32", source=src, unmeasured=_SPLIT_SPARSE_CHOICE)
    rows[("bf16", "m16n8k32", True, "f32")] = _fused(frac, "f32", blocks=2, group=8, source=src,
                                                     unmeasured=_SPLIT_SPARSE_CHOICE)
    rows[("tf32", "m16n8k4", False, "f32")] = _fused(frac, "f32", source=src)
    rows[("tf32", "m16n8k8", False, "f32")] = _fused(frac, "f32", blocks=2, group=4, source=src + "; two halves of k")
    rows[("tf32", "m16n8k8", True, "f32")] = _fused(frac, "f32", source=src, unmeasured=_SPLIT_SPARSE_CHOICE)
    rows[("tf32", "m16n8k16", True, "f32")] = _fused(frac, "f32", blocks=2, group=4, source=src,
                                                     unmeasured=_SPLIT_SPARSE_CHOICE)
    return rows


def _single_pass(frac, src, families=("f16", "bf16", "tf32")):
    """Hopper / Blackwell HMMA rows: one fused pass for every shape, dense and sparse."""
    rows = {}
    for fam in families:
        for dt in (("f32", "f16") if fam in ("f16", "fp8") else ("f32",)):
            rows[(fam, False, dt)] = _fused(frac, dt, source=src)
            rows[(fam, True, dt)] = _fused(frac, dt, source=src, unmeasured=_SPARSE_CHOICE)
    return rows


def _emulated_fp8(dtype, src):
    """The sm_90 fp8 emulation (F2FP unpack, two f16 HMMAs from zero, FADD/HADD2 with C)."""
    r = _fp8(dtype)
    return Recipe(**{**r.__dict__, "source": src})


_ADA_FP8 = _MMASIM + ": Ada fp8, 13 fractional bits, f32 result keeps 13 mantissa bits (RZ)"
_ADA_FP8_ROWS = {
    ("fp8", "m16n8k16", False, "f32"): _fused(13, "f32", acc_type="f32e8m13", source=_ADA_FP8),
    ("fp8", "m16n8k16", False, "f16"): _fused(13, "f16", source=_ADA_FP8),
    ("fp8", "m16n8k32", False, "f32"): _fused(13, "f32", blocks=2, group=16, acc_type="f32e8m13",
                                              source=_ADA_FP8 + "; two halves of k"),
    ("fp8", "m16n8k32", False, "f16"): _fused(13, "f16", blocks=2, group=16, source=_ADA_FP8 + "; two halves of k"),
    ("fp8", "m16n8k64", True, "f32"): _fused(13, "f32", blocks=2, group=16, acc_type="f32e8m13",
                                             source=_ADA_FP8, unmeasured=_SPLIT_SPARSE_CHOICE),
}

_VOLTA = _MMASIM + ": Volta m8n8k4 (HMMA.884), one fused pass, 23 fractional bits"
_TURING = _MMASIM + ": Turing, one fused pass, 24 fractional bits (m8n8k4 native HMMA.884 on sm_75 per SASS)"
_AMPERE = _MMASIM + ": Ampere, 24 fractional bits"
_ADA = _MMASIM + ": Ada Lovelace, 24 fractional bits"
_BLACKWELL = _MMASIM + ": Blackwell (sm_100), one fused pass, 25 fractional bits"
_RTX_BLACKWELL = _MMASIM + ": RTX Blackwell (sm_120), one fused pass, 25 fractional bits"
_SM86 = ("sm_86: MMA-Sim models one 'Ampere'; that sm_86 (GA10x) computes as sm_80 (GA100) does is assumed, "
         "not measured by any source read")
_SM100_FP8 = ("SASS: ptxas emits the same fp8 emulation for sm_100 as for sm_90 (F2FP unpack, HMMA.1688/16816 "
              "x2, FADD/HADD2), with Blackwell's HMMA = 25 fractional bits as Hopper's (MMA-Sim)")
_SM120_FP8 = _MMASIM + ": RTX Blackwell fp8 (native QMMA per SASS), one fused pass, 25 fractional bits, f32 RZ"


def _with(rows, unmeasured):
    return {k: Recipe(**{**r.__dict__, "unmeasured": "; ".join(x for x in (r.unmeasured, unmeasured) if x)})
            for k, r in rows.items()}


RECIPES.update({
    "sm_70": {
        ("f16x4", False, "f32"): _fused(23, "f32", source=_VOLTA),
        ("f16x4", False, "f16"): _fused(23, "f16", source=_VOLTA),
    },
    "sm_75": {
        ("f16x4", False, "f32"): _fused(24, "f32", source=_TURING),
        ("f16x4", False, "f16"): _fused(24, "f16", source=_TURING),
        ("f16", False, "f32"): _fused(24, "f32", source=_TURING),
        ("f16", False, "f16"): _fused(24, "f16", source=_TURING),
    },
    "sm_80": _ampere_like(24, _AMPERE),
    "sm_86": _with(_ampere_like(24, _AMPERE), _SM86),
    "sm_89": {**_ampere_like(24, _ADA), **_ADA_FP8_ROWS},
    "sm_100": {
        **_single_pass(25, _BLACKWELL),
        ("fp8", False, "f32"): _emulated_fp8("f32", _SM100_FP8),
        ("fp8", False, "f16"): _emulated_fp8("f16", _SM100_FP8),
        ("fp8", True, "f32"): Recipe(**{**_emulated_fp8("f32", _SM100_FP8).__dict__,
                                        "unmeasured": "mma.sp fp8: the sm_90 emulation (HMMA.SP) as on sm_90; "
                                                      "sm_100's sparse HMMA itself is unmeasured"}),
    },
    "sm_120": _single_pass(25, _RTX_BLACKWELL) | _single_pass(25, _SM120_FP8, families=("fp8",)),
})

# --- sm_120a (RTX Blackwell) -------------------------------------------------------------------
# No RTX Blackwell was available: every rule below is MMA-Sim's published model (Xie et al.,
# arXiv 2511.10909, and its code, github.com/microsoft/MMA-Sim), not a warpsim capture.
_KIND_SRC = _MMASIM + ": RTX Blackwell (sm_120a) kind:: / block-scaled mma; not verified on hardware by warpsim"
#: kind::f8f6f4 (and the lenient e4m3/e5m2 kind forms): MMA-Sim's T-FDPA for "RTX Blackwell" with
#: F = 25 fractional bits, L_max = 32 bytes / element size = 32 terms (k32 and sparse k64 in one
#: pass), result RZ to f32 or RNE to f16, C in the same fused sum.  That is the H100 HMMA recipe.
_QMMA_F32 = Recipe(frac=25, rounding="rz", zero="positive", source=_KIND_SRC + "; T-FDPA F=25, RZ-FP32")
_QMMA_F16 = Recipe(frac=25, rounding="rne", zero="positive", source=_KIND_SRC + "; T-FDPA F=25, RNE-FP16")
#: kind::mxf8f6f4: ST-FDPA, F = 25, RZ-FP32; every product carries the exponents of its two ue8m0
#: scales; zero terms take exponent -133 (e_zero of a later MMA-Sim revision's block-scale MXFP8 path).
_MXF8 = Recipe(frac=25, rounding="rz", zero="positive", scale="product", zero_exp=-133,
               source=_KIND_SRC + "; ST-FDPA F=25, RZ-FP32, e_zero=-133")
#: kind::mxf4 / mxf4nvf4: GST-FDPA, groups of G = 16 exact products, F = 35, RZ-FP32; a group's
#: exponent is that of its scales only; e_zero = -139 (a later MMA-Sim revision's nvfp4 case).
_MXF4 = Recipe(frac=35, rounding="rz", zero="positive", scale="group", scale_group=16, zero_exp=-139,
               source=_KIND_SRC + "; GST-FDPA G=16, F=35, RZ-FP32, e_zero=-139")

_SPARSE_KIND = ("sparse kind:: forms: no source models them; chosen: the dense rule on the kept products (one pass; "
                "mxf4: groups of 16 kept products), metadata as the sm_90 8-bit / 4-bit sparse forms")
_SUBBYTE = ("e2m1/e2m3/e3m2: MMA-Sim lists e3m2/e2m3 as TODO; chosen: the same rule (raw exponents, subnormals at "
            "the format's minimum exponent); the container's high bits are ignored (unverified)")
_ZERO_SIGN = "zero results are +0 (H100-measured rule; MMA-Sim's torch arithmetic could give -0 when every term is -0)"
_UE4M3 = "ue4m3: bit 7 ignored (MMA-Sim clears it); scale-factor lanes / bytes for 2X and 4X inferred, not measured"


def _note(r, *notes):
    return Recipe(**{**r.__dict__, "unmeasured": "; ".join(n for n in notes if n)})


RECIPES["sm_120a"] = {
    **RECIPES["sm_120"],
    ("f8f6f4", False, "f32"): _note(_QMMA_F32, _SUBBYTE, _ZERO_SIGN),
    ("f8f6f4", False, "f16"): _note(_QMMA_F16, _SUBBYTE, _ZERO_SIGN),
    ("f8f6f4", True, "f32"): _note(_QMMA_F32, _SUBBYTE, _ZERO_SIGN, _SPARSE_KIND),
    ("f8f6f4", True, "f16"): _note(_QMMA_F16, _SUBBYTE, _ZERO_SIGN, _SPARSE_KIND),
    ("mxf8f6f4", False, "f32"): _note(_MXF8, _SUBBYTE, _ZERO_SIGN),
    ("mxf8f6f4", True, "f32"): _note(_MXF8, _SUBBYTE, _ZERO_SIGN, _SPARSE_KIND),
    ("mxf4", False, "f32"): _note(_MXF4, _ZERO_SIGN, _UE4M3),
    ("mxf4", True, "f32"): _note(_MXF4, _ZERO_SIGN, _UE4M3, _SPARSE_KIND),
}

_DMMA = ("MMA-Sim: f64 mma is a chain of IEEE f64 FMAs in k order starting from C (Ampere m8n8k4, Hopper "
         "m16n8k*); NaN payload rule measured on sm_90 only (H100 captures), chosen for this target")
_F16X4_EMULATED = ("SASS: ptxas emits the same FFMA/FMUL/FADD/HADD2/F2FP instruction counts for m8n8k4 f16 on this "
                   "target as on sm_90 (compiler emulation of IEEE operations; the sm_90 recipe was fitted on H100 "
                   "captures); the dataflow order is assumed equal, not re-derived")
#: f16x4 (m8n8k4) is native HMMA.884 on sm_70/sm_75 (tensor-core rows above), emulated from sm_80 on;
#: f64 runs on DMMA from sm_80 on (sm_100/sm_120: m16n8k* as chains of DMMA.8x8x4).
for _arch in ("sm_80", "sm_86", "sm_89", "sm_100", "sm_120", "sm_120a"):
    CHAIN_RECIPES[_arch] = {
        key: {**row, "source": _F16X4_EMULATED if key[0] == "f16x4" else _DMMA}
        for key, row in CHAIN_RECIPES["sm_90"].items()
    }

# --- sm_100a tcgen05.mma (datacenter Blackwell) ---------------------------------------------------
# No B200 was available: every row is MMA-Sim's published Blackwell tcgen05 model (Xie et al., arXiv
# 2511.10909; microsoft/MMA-Sim mmasim/simulator/nv_ptx.py classes tcgen05mma and tcgen05mma_block_scale,
# arithmetic.py nv_fused_dot_add / nv_fused_dot_add_with_block_scale), not a warpsim capture.  They are
# the same rules MMA-Sim gives RTX Blackwell's kind:: mma (the sm_120a rows above).
_TC05 = "MMA-Sim (arXiv 2511.10909; microsoft/MMA-Sim nv_ptx.py tcgen05mma, arch 'Blackwell')"
_TC05_BS = "MMA-Sim (arXiv 2511.10909; microsoft/MMA-Sim nv_ptx.py tcgen05mma_block_scale, arch 'Blackwell')"
_TC05_SUBBYTE = ("e2m3/e3m2: MMA-Sim lists them as TODO for tcgen05; chosen: the same rule (raw exponents, "
                 "subnormals at the format's minimum exponent)")
_TC05_SPARSE = ("tcgen05.mma.sp: MMA-Sim models dense tcgen05 only; chosen: the dense rule on the K/2 kept products "
                "(block-scaled: one scale factor per 32 / 16 logical K, each covering half as many kept products)")
_TC05_CTA2 = "cta_group::2 and .ws: MMA-Sim models cta_group::1 only; chosen: the same per-element rule"
_TC05_UE4M3 = ("ue4m3: bit 7 ignored (MMA-Sim clears it); the tensor-memory layout of the scale factors (row i in lane i, "
               "bytes from the descriptor's scale id) is modelled from the PTX ISA, not measured")
_TC05_MXF4 = ("kind::mxf4 (K = 64, ue8m0 per 32 K): MMA-Sim's K = 64 block-scale path (groups of 16 exact products, "
              "F = 35), which it applies to every K = 64 block-scaled tcgen05")


def _tc05(base, src, *notes):
    return Recipe(**{**base.__dict__, "source": src, "unmeasured": "; ".join(n for n in notes if n)})


TCGEN05_RECIPES: dict[tuple, Recipe] = {}
for _sp in (False, True):
    _sn = _TC05_SPARSE if _sp else ""
    TCGEN05_RECIPES.update({
        ("tcgen05", "f16", _sp, "f32"): _tc05(_HMMA_F32, _TC05 + ": T-FDPA F=25, RZ-FP32", _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "f16", _sp, "f16"): _tc05(_HMMA_F16, _TC05 + ": T-FDPA F=25, RNE-FP16", _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "tf32", _sp, "f32"): _tc05(_HMMA_F32, _TC05 + ": tf32 inputs (low 13 bits ignored), T-FDPA F=25, "
                                               "RZ-FP32", _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "f8f6f4", _sp, "f32"): _tc05(_QMMA_F32, _TC05 + ": T-FDPA F=25, RZ-FP32", _TC05_SUBBYTE,
                                                 _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "f8f6f4", _sp, "f16"): _tc05(_QMMA_F16, _TC05 + ": T-FDPA F=25, RNE-FP16", _TC05_SUBBYTE,
                                                 _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "mxf8f6f4", _sp, "f32"): _tc05(_MXF8, _TC05_BS + ": ST-FDPA F=25, RZ-FP32, e_zero=-133 (as sm_120a)",
                                                   _TC05_SUBBYTE, _ZERO_SIGN, _TC05_CTA2, _sn),
        ("tcgen05", "mxf4nvf4", _sp, "f32"): _tc05(_MXF4, _TC05_BS + ": GST-FDPA G=16, F=35, RZ-FP32, e_zero=-139 "
                                                   "(as sm_120a)", _ZERO_SIGN, _TC05_UE4M3, _TC05_CTA2, _sn),
        ("tcgen05", "mxf4", _sp, "f32"): _tc05(_MXF4, _TC05_BS + ": GST-FDPA G=16, F=35, RZ-FP32, e_zero=-139 "
                                               "(as sm_120a)", _TC05_MXF4, _ZERO_SIGN, _TC05_CTA2, _sn),
    })
RECIPES["sm_100"].update(TCGEN05_RECIPES)     # sm_100a spells the same target (warpsim.isa.archs)
