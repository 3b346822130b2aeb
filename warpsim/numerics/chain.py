"""Exact scalar chains: the ``mma`` forms whose arithmetic is a sequence of IEEE operations.

Two families are computed this way on sm_90 (see ``docs/numerics_chain.md``):

* ``f16x4`` (``m8n8k4`` with f16 inputs) is emulated by ptxas with scalar f32
  instructions: every f16 element is widened to f32 exactly, the four products
  of one output are formed with FMUL / FFMA (each rounded to nearest even in
  f32), C (widened to f32 if it is f16) is added with FADD, and an f16 D is
  narrowed with one round-to-nearest-even conversion.
* ``f64`` runs natively on ``DMMA``; its result is what a chain of correctly
  rounded f64 fused multiply-adds produces (order in the recipe table).

:func:`chain_dot` is the exact per-element reference, built on
:mod:`warpsim.numerics.softfloat`; the batched host-FPU fast path is
:mod:`warpsim.engine.chain_fast`.  The recipe tables themselves are data in
:mod:`warpsim.numerics.recipes` (``CHAIN_RECIPES``).

Parameter vector ``p`` (int64) consumed by :func:`chain_dot`; build it with
:func:`chain_params`:

====  ==============  ===========================================================
idx   name            meaning
====  ==============  ===========================================================
0     P_KIND          1 = chain of scalar FMAs (the only kind so far)
1,2   P_AB_E, P_AB_M  exponent / mantissa bits of the A and B elements
3,4   P_C_E, P_C_M    exponent / mantissa bits of C
5,6   P_D_E, P_D_M    exponent / mantissa bits of D
7,8   P_W_E, P_W_M    exponent / mantissa bits of the working (accumulator) format
9     P_GROUP         products per partial chain (n means one chain over all k)
10    P_FIRST         first product of a partial chain: 0 = ``a*b`` (FMUL, keeps
                      the sign of an exact-zero product), 1 = ``fma(a, b, +0)``,
                      2 = ``fma(a, b, C)``: the chain starts from C itself
11    P_COMBINE       how partial chains and C meet when P_FIRST != 2:
                      0 = ``((C + S_0) + S_1) + ...``,
                      1 = ``((S_0 + S_1) + ...) + C``
                      (S_g: partial chain g, over products g*GROUP .. g*GROUP+GROUP-1)
12    P_KORDER        0 = products in ascending k, 1 = descending k
13    P_NAN           NaN results of every operation: 0 = always P_NAN_BITS;
                      otherwise a three-digit operand priority (1 = a, 2 = b,
                      3 = c of ``fma(a, b, c)``; 231 = b, then c, then a): the
                      first NaN operand in that order comes out quieted, and an
                      invalid operation (inf * 0, inf - inf) gives P_NAN_BITS
14    P_NAN_BITS      the NaN an invalid operation creates, raw bits in the
                      working format (as int64: 0xfff8000000000000 is negative)
15    P_DNAN          NaN when narrowing to D: 0 = D's canonical NaN (all ones
                      but the sign), 1 = keep the sign and the top mantissa bits
====  ==============  ===========================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..isa.catalog import Instruction
from ..isa.types import TYPES
from .recipes import CHAIN_RECIPES
from .softfloat import (U64, _Z, NAN_CANONICAL, NAN_PROPAGATE, add_bits, convert_bits, fma_bits, mul_bits)

(P_KIND, P_AB_E, P_AB_M, P_C_E, P_C_M, P_D_E, P_D_M, P_W_E, P_W_M,
 P_GROUP, P_FIRST, P_COMBINE, P_KORDER, P_NAN, P_NAN_BITS, P_DNAN) = range(16)
N_PARAMS = 16

KIND_FMA_CHAIN = 1
FIRST_FMUL, FIRST_FFMA_ZERO, FIRST_FROM_C = 0, 1, 2
COMBINE_C_FIRST, COMBINE_C_LAST = 0, 1

# --- the per-element entry point -----------------------------------------------------------

@njit(cache=True, nogil=True)
def _widen(x, e1, m1, e2, m2):
    """Exact widening into the working format (raw bits pass through when equal)."""
    if e1 == e2 and m1 == m2:
        return U64(x)
    return convert_bits(x, e1, m1, e2, m2, NAN_PROPAGATE)


@njit(cache=True, nogil=True)
def chain_dot(a, b, n, c, p):
    """One output element: D = C + sum_k A[k] * B[k] as the recipe p computes it.

    a, b: uint64 arrays of raw element bits (A row, B column, in k order, length >= n);
    c: raw bits of the C element; p: int64 parameter vector (module docstring).
    Returns the uint64 raw bits of D.
    """
    c = U64(c)
    abe, abm = p[P_AB_E], p[P_AB_M]
    we, wm = p[P_W_E], p[P_W_M]
    nm = p[P_NAN]
    dn = U64(p[P_NAN_BITS])
    group = p[P_GROUP]
    if group <= 0 or group > n:
        group = n
    first = p[P_FIRST]
    desc = p[P_KORDER] == 1
    wc = _widen(c, p[P_C_E], p[P_C_M], we, wm)
    if first == FIRST_FROM_C:
        acc = wc
        for i in range(n):
            k = n - 1 - i if desc else i
            x = _widen(a[k], abe, abm, we, wm)
            y = _widen(b[k], abe, abm, we, wm)
            acc = fma_bits(x, y, acc, we, wm, nm, dn)
    else:
        ngroups = (n + group - 1) // group
        acc = _Z
        for g in range(ngroups):
            s = _Z
            for j in range(group):
                i = g * group + j
                if i >= n:
                    break
                k = n - 1 - i if desc else i
                x = _widen(a[k], abe, abm, we, wm)
                y = _widen(b[k], abe, abm, we, wm)
                if j == 0:
                    if first == FIRST_FMUL:
                        s = mul_bits(x, y, we, wm, nm, dn)
                    else:
                        s = fma_bits(x, y, _Z, we, wm, nm, dn)
                else:
                    s = fma_bits(x, y, s, we, wm, nm, dn)
            if p[P_COMBINE] == COMBINE_C_FIRST:
                acc = add_bits(wc if g == 0 else acc, s, we, wm, nm, dn)
            else:
                acc = s if g == 0 else add_bits(acc, s, we, wm, nm, dn)
        if p[P_COMBINE] != COMBINE_C_FIRST:
            acc = add_bits(acc, wc, we, wm, nm, dn)
    de, dm = p[P_D_E], p[P_D_M]
    if de == we and dm == wm:
        return acc
    return convert_bits(acc, we, wm, de, dm, p[P_DNAN])


# --- recipe rows -> parameter vectors -------------------------------------------------------------------------------

_FIRST = {"fmul": FIRST_FMUL, "ffma_zero": FIRST_FFMA_ZERO, "from_c": FIRST_FROM_C}
_COMBINE = {"c_first": COMBINE_C_FIRST, "c_last": COMBINE_C_LAST}
_KORDER = {"asc": 0, "desc": 1}
_DNAN = {"canonical": NAN_CANONICAL, "keep": 1}


def _nan_mode(name: str) -> int:
    if name == "canonical":
        return NAN_CANONICAL
    if sorted(name) != ["a", "b", "c"]:
        raise ValueError(f"NaN policy must be 'canonical' or a permutation of 'abc', not {name!r}")
    return int("".join(str("abc".index(ch) + 1) for ch in name))


def _as_int64(bits: int) -> int:
    return bits - (1 << 64) if bits >= 1 << 63 else bits


def chain_params(ins: Instruction, arch: str = "sm_90") -> np.ndarray:
    """The int64 parameter vector of :func:`chain_dot` for one catalog instruction."""
    if arch not in CHAIN_RECIPES:
        raise NotImplementedError(
            f"no scalar-chain recipes for {arch}; known: {sorted(CHAIN_RECIPES)}")
    key = (ins.family, ins.dtype, ins.ctype)
    recipe = CHAIN_RECIPES[arch].get(key)
    if recipe is None or ins.is_sparse:
        raise NotImplementedError(
            f"{ins.opcode} (family {ins.family}, D {ins.dtype}, C {ins.ctype}) is not computed by a "
            f"scalar chain on {arch}; chain recipes exist for {sorted(CHAIN_RECIPES[arch])}")
    if ins.atype != ins.btype:
        raise NotImplementedError(f"{ins.opcode}: mixed A/B types are not a chain form")
    ab, c, d, w = TYPES[ins.atype], TYPES[ins.ctype], TYPES[ins.dtype], TYPES[recipe["work"]]
    p = np.zeros(N_PARAMS, dtype=np.int64)
    p[P_KIND] = KIND_FMA_CHAIN
    p[P_AB_E], p[P_AB_M] = ab.exp_bits, ab.man_bits
    p[P_C_E], p[P_C_M] = c.exp_bits, c.man_bits
    p[P_D_E], p[P_D_M] = d.exp_bits, d.man_bits
    p[P_W_E], p[P_W_M] = w.exp_bits, w.man_bits
    p[P_GROUP] = recipe["group"] if recipe["group"] > 0 else ins.k
    p[P_FIRST] = _FIRST[recipe["first"]]
    p[P_COMBINE] = _COMBINE[recipe["combine"]]
    p[P_KORDER] = _KORDER[recipe["korder"]]
    p[P_NAN] = _nan_mode(recipe["nan"])
    p[P_NAN_BITS] = _as_int64(recipe["nan_bits"])
    p[P_DNAN] = _DNAN[recipe["d_nan"]]
    return p
