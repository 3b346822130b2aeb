"""Diagnostics for people studying tensor-core numerics: one output element, three ways.

:func:`explain` takes the same register words as :func:`warpsim.mma` and one D
element, and reports the exact real-number result (rational arithmetic on the
decoded inputs), the hardware-model result, the same exact result rounded once
to nearest in D's format, and the model's distance from the exact result in
units in the last place of D's format.

For a PTX ALU opcode (``explain("ex2.approx.f32")``) it returns the row's status instead:
verified against H100 captures, exact by the ISA's rule, or approximate (a special-function unit
warpsim models as the correctly rounded function), with what was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .mma import mma, validate
from ..isa.layouts import layout, unpack
from ..isa.codec import exact_value
from ..isa.types import ElemType


def ulp(x: Fraction, t: ElemType) -> Fraction:
    """Spacing of the format's numbers at |x| (subnormal spacing below the normal range)."""
    p = t.man_bits + 1
    emin = 1 - t.bias
    e = emin if x == 0 else max(emin, math.floor(math.log2(abs(x))))
    if x != 0 and Fraction(2) ** (e + 1) <= abs(x):   # guard against log2 rounding up
        e += 1
    if x != 0 and abs(x) < Fraction(2) ** e and e > emin:
        e -= 1
    return Fraction(2) ** (e - p + 1)


def round_nearest(x: Fraction, t: ElemType) -> float:
    """x rounded once to nearest-even in the float type t (as a Python float; inf on overflow)."""
    if x == 0:
        return 0.0
    u = ulp(x, t)
    q = x / u
    n = math.floor(q)
    r = q - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2):
        n += 1
    v = n * u
    top = (Fraction(2) - Fraction(2) ** (-t.man_bits)) * Fraction(2) ** ((1 << t.exp_bits) - 2 - t.bias)
    if abs(v) > top:
        return math.copysign(math.inf, float(x))
    return float(v)


@dataclass
class Explanation:
    opcode: str
    warp: int
    lane: int
    element: int
    product: int
    row: int
    col: int
    terms: list              # (a, b) exact values of each product term, in k order
    c: object
    exact: object            # Fraction, or float inf/nan when an input is not finite
    model: float             # what warpsim (the H100 model) returns
    model_bits: int
    rounded_once: float      # exact result rounded once to nearest in D's format
    ulps: float | None       # (model - exact) / ulp(exact) in D's format
    arch: str = "sm_90"
    status: str = ""         # the model's status on arch: sources, and the rules nobody measured
    scales: tuple = ()       # block-scaled: (scale of A's row, scale of B's column) per k block

    def __str__(self):
        ex = float(self.exact) if isinstance(self.exact, Fraction) else self.exact
        lines = [
            f"{self.opcode}",
            f"  D[{self.row},{self.col}] of product {self.product} (warp {self.warp}, lane {self.lane}, element {self.element})",
            f"  exact real result     {ex!r}" + (f"  (= {self.exact})" if isinstance(self.exact, Fraction) and self.exact.denominator != 1 and len(str(self.exact)) < 60 else ""),
            f"  rounded once (RNE)    {self.rounded_once!r}",
            f"  hardware model        {self.model!r}  (bits {self.model_bits:#x})",
        ]
        if self.ulps is not None:
            lines.append(f"  model - exact         {self.ulps:+.6g} ulp")
        if self.scales:
            lines.append("  block scales (A row, B column) per k block: "
                         + ", ".join(f"({float(x)!r}, {float(y)!r})" for x, y in self.scales))
        if self.status:
            lines.append("  model status on " + self.status.replace("\n", "\n  "))
        return "\n".join(lines)


@dataclass(frozen=True)
class InstructionStatus:
    """How far warpsim's result of a PTX ALU opcode is trusted (warpsim.ptx.instruction_status)."""
    opcode: str
    status: str              # "verified", "exact" or "approximate"
    note: str

    def __str__(self):
        what = {"verified": "verified: replayed word for word against H100 captures",
                "exact": "exact: the PTX ISA's rule bit for bit (hand-derived examples; H100 capture pending)",
                "approximate": "approximate, not bit-exact",
                "modelled": "modelled: no hardware capture (no B200 was available)"}[self.status]
        return f"{self.opcode}\n  {what}" + (f"\n  {self.note}" if self.note else "")


def tcgen05_status(opcode: str) -> str:
    """What of a ``tcgen05`` form is modelled, and which layout choices are guesses (docs/tcgen05.md)."""
    if not opcode.startswith("tcgen05.mma"):
        return ("the tensor-memory layout and completion as the PTX ISA describes them (ld/st shapes, cp, shift, "
                "commit: one mbarrier arrival at once, since warpsim runs tcgen05 operations synchronously)")
    from ..isa.tcgen05 import parse_tcgen05

    op = parse_tcgen05(opcode)
    notes = [f"kind::{op.kind} arithmetic from MMA-Sim's published Blackwell recipe (warpsim.matmul)",
             "D in tensor memory by the PTX ISA's data-path layout table (M, cta_group, sparsity, .ws -> layouts "
             "A-G: warpsim.ptx.tmem.DATAPATH)"]
    guesses = ["the data-path layouts' lane and column placement beyond M = 128 / 256 (row i in lane i): "
               "B / E fold N's halves onto lanes 64..127, G its quarters onto the warp quarters, C / F put 16 rows "
               "in each warp quarter"]
    if op.ws:
        guesses.append(".ws: the B collector buffers (fill keeps B, use / lastuse read it back) and M 32/64/128 "
                       "layouts G / E / D; the zero-column mask is not run")
    if op.cta_group == 2:
        guesses.append("cta_group::2: the CTA pair splits A's rows and B's columns in halves (even rank first), "
                       "each CTA holding its rows of D, its scale factors and metadata")
    if op.ashift:
        guesses.append(".ashift: A's rows shifted down one tensor-memory lane")
    if op.collector and "::a::" in op.collector:
        guesses.append("collector::a: the A buffer (fill keeps A, use / lastuse read it back)")
    if op.sparse:
        guesses.append("sparse: the metadata's place in tensor memory (row i in lane i, 2-bit indices packed "
                       "along the cells; tf32 nibbles 0b0100 / 0b1110)")
    if op.block_scaled:
        guesses.append("block scale: scale-factor cells in tensor memory (row i at lane i % 128)")
    if op.block_scaled and op.sparse:
        guesses.append("sparse block scale: each factor covers half as many kept products (32 / 16 logical K)")
    if "atmem" in " ".join(op.forms):
        guesses.append("A from tensor memory: A's rows in lanes, K along columns")
    text = "; ".join(notes)
    text += "; layout guesses (not in the PTX ISA's figures as warpsim reads them): " + "; ".join(guesses)
    return text + ("; the PTX tensor-memory row runs every spelling in the form [d], a-desc or [a-tmem], b-desc, "
                   "{[sp-meta]}, idesc, {[scale-A], [scale-B]}, enable-input-d (disable-output-lane, scale-input-d and "
                   "the zero-column mask are not run)")


def explain(instruction, a=None, b=None, c=None, e=None, *, selector=0, warp=0, lane=0, element=0, arch="sm_90",
            scale_a=None, scale_b=None, byte_id_a=0, thread_id_a=0, byte_id_b=0, thread_id_b=0) -> Explanation:
    """Explain D element ``element`` of ``lane`` in ``warp`` (element index as in the D fragment).
    Block-scaled sm_120a forms take the scale operands of :func:`warpsim.mma`.

    Example: the status of a PTX ALU opcode, or one D element of an ``mma`` taken apart.

    >>> print(warpsim.explain("ex2.approx.f32"))         # doctest: +ELLIPSIS
    ex2.approx.f32
      verified: ...
    >>> op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    >>> A, B = np.full((16, 16), 1 / 3, np.float16), np.ones((16, 8), np.float16)
    >>> ex = warpsim.explain(op, warpsim.pack(op, "a", A), warpsim.pack(op, "b", B), warpsim.pack(op, "c", np.zeros((16, 8))))
    >>> ex.row, ex.col, ex.ulps
    (0, 0, 0.0)
    """
    from .mma import validate_scales

    if a is None and b is None and c is None and isinstance(instruction, str) \
            and instruction.strip().startswith("tcgen05"):
        return InstructionStatus(instruction.strip(), "modelled", tcgen05_status(instruction.strip()))
    if a is None and b is None and c is None and isinstance(instruction, str) \
            and not instruction.startswith(("mma", "wgmma")):
        from ..ptx import instruction_status
        return InstructionStatus(instruction, *instruction_status(instruction))
    if a is None or b is None or c is None:
        raise TypeError(f"explain({instruction!r}, a, b, c, ...) needs the register words a, b and c of the mma")
    ins, single, a3, b3, c3, e3 = validate(instruction, a, b, c, e, selector, arch)
    sel4 = (byte_id_a, thread_id_a, byte_id_b, thread_id_b)
    sfs = validate_scales(ins, single, a3.shape[0], scale_a, scale_b, sel4)
    if not ins.elem("d").is_float:
        raise ValueError(f"explain() studies floating-point rounding; {ins.opcode} is an integer MMA (exact)")
    tabd = layout(ins.opcode, "d")
    if not 0 <= lane < 32 or not 0 <= element < tabd.shape[1]:
        raise ValueError(f"lane must be in 0..31 and element in 0..{tabd.shape[1] - 1} for D of {ins.opcode}")
    p, i, j = (int(x) for x in tabd[lane, element])
    sl = slice(warp, warp + 1)
    kw = {}
    if sfs is not None:
        sa_w = (scale_a[None] if single else scale_a)[sl]
        sb_w = (scale_b[None] if single else scale_b)[sl]
        kw = dict(scale_a=sa_w, scale_b=sb_w, byte_id_a=byte_id_a, thread_id_a=thread_id_a,
                  byte_id_b=byte_id_b, thread_id_b=thread_id_b)
    d = mma(ins.opcode, a3[sl], b3[sl], c3[sl], None if e3 is None else e3[sl], selector=selector, arch=arch, **kw)
    from ..isa.bits import words_to_elements
    from ..isa.sparse import logical_columns

    def raw_matrix(role, words):
        t = ins.elem(role)
        el = words_to_elements(words, t.bits)[0]
        tab = layout(ins.opcode, role)
        rows, cols = ins.matrix_shape(role)
        m = np.zeros((ins.products, rows, cols), dtype=object)
        for ln in range(32):
            for k in range(tab.shape[1]):
                m[tuple(tab[ln, k])] = int(el[ln, k])
        return m, t

    A, ta = raw_matrix("a", a3[sl])
    B, tb = raw_matrix("b", b3[sl])
    C, tc = raw_matrix("c", c3[sl])
    D, td = raw_matrix("d", d)
    if ins.is_sparse:
        cols = logical_columns(ins, selector, e3[sl])[0]
        taba = layout(ins.opcode, "a")
        pairs = sorted((int(cols[ln, k]), int(taba[ln, k, 2]), ln, k) for ln in range(32) for k in range(taba.shape[1])
                       if taba[ln, k, 1] == i)
        terms = [(exact_value(A[p, i, cc], ta), exact_value(B[p, lc, j], tb)) for lc, cc, _, _ in pairs]
    else:
        terms = [(exact_value(A[p, i, k], ta), exact_value(B[p, k, j], tb)) for k in range(ins.k)]
    cv = exact_value(C[p, i, j], tc)
    scales = ()
    if sfs is not None:
        st = ins.scale_elem()
        scales = tuple((exact_value(int(sfs[0][warp, i, s]), st), exact_value(int(sfs[1][warp, j, s]), st))
                       for s in range(ins.nscale))
        per = len(terms) // ins.nscale   # terms (kept terms when sparse) per scale block
        terms = [(x * scales[t // per][0], y * scales[t // per][1]) if all(isinstance(v, Fraction) for v in (x, y) + scales[t // per])
                 else (float(x) * float(scales[t // per][0]), float(y) * float(scales[t // per][1]))
                 for t, (x, y) in enumerate(terms)]
    vals = [x for t in terms for x in t] + [cv]
    if all(isinstance(v, Fraction) for v in vals):
        exact = sum((x * y for x, y in terms), Fraction(0)) + cv
        rounded = round_nearest(exact, td)
    else:
        with np.errstate(all="ignore"):
            exact = float(sum(float(x) * float(y) for x, y in terms) + float(cv))
        rounded = exact
    model = float(exact_value(int(D[p, i, j]), td))
    ulps = None
    if isinstance(exact, Fraction) and math.isfinite(model):
        ulps = float((Fraction(model) - exact) / ulp(exact, td))
    from ..numerics.arch import check_arch, describe

    return Explanation(ins.opcode, warp, lane, element, p, i, j, terms, cv, exact, model, int(D[p, i, j]), rounded, ulps,
                       check_arch(arch), describe(ins, arch), scales)
