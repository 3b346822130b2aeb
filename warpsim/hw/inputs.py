"""Seeded input generators for register operands, derived from type metadata.

Every generator produces raw element bit patterns for one operand role; the
values that matter (zeros, infinities, NaN payloads, subnormal limits, type
extremes) are computed from each :class:`~warpsim.isa.types.ElemType`'s fields,
never typed in by hand.  Generation never needs the fragment layout: all of an
operand's elements share a type, so any element slot may hold any value.
"""

from __future__ import annotations

import zlib

import numpy as np

from ..isa.bits import elements_to_words
from ..isa.catalog import Instruction
from ..isa.types import ElemType

FLOAT_DISTS = ("normal", "finite", "special", "mixed", "spread", "tiny")
INT_DISTS = ("uniform", "extreme", "near_limit")
BIT_DISTS = ("sparse", "dense", "uniform")
#: Sparse entries also get arbitrary (possibly invalid) metadata under this name.
RANDOM_METADATA = "meta_random"
#: Matrix-level edge cases for dense float entries (they need the fragment layout):
#: "zeros" -- rows and columns of signed zeros, sums of zeros and of one +-1 product;
#: "cancel" -- two large products that cancel exactly, leaving small terms that the
#: hardware aligned (and truncated) against the large exponent, plus C = +-0 or tiny.
EDGE_DISTS = ("zeros", "cancel")


# --- floats -----------------------------------------------------------------

def _frac_bits(t: ElemType) -> int:
    return t.width - 1 - t.exp_bits


def _exp_max(t: ElemType) -> int:
    return (1 << t.exp_bits) - 1


def _compose(t, sign, exp, frac):
    f = _frac_bits(t)
    return (sign.astype(np.uint64) << np.uint64(t.width - 1)) | (exp.astype(np.uint64) << np.uint64(f)) | frac.astype(np.uint64)


def _is_nonfinite(t: ElemType, p: np.ndarray) -> np.ndarray:
    f = _frac_bits(t)
    exp = (p >> np.uint64(f)) & np.uint64(_exp_max(t))
    frac = p & np.uint64((1 << f) - 1)
    if t.has_inf:
        return exp == _exp_max(t)
    if not t.has_nan:                                      # e2m1 / e2m3 / e3m2: every pattern is finite
        return np.zeros(p.shape, dtype=bool)
    return (exp == _exp_max(t)) & (frac == (1 << f) - 1)   # e4m3: only S.1111.111 is NaN


def max_finite_exp_field(t: ElemType) -> int:
    return _exp_max(t) - (1 if t.has_inf else 0)


def float_specials(t: ElemType) -> np.ndarray:
    """Bit patterns of the special values of a float type, both signs."""
    f = _frac_bits(t)
    fmask = (1 << f) - 1
    top = _exp_max(t)
    pos = [
        0,                                       # +0
        1,                                       # smallest subnormal
        fmask,                                   # largest subnormal
        1 << f,                                  # smallest normal
        t.bias << f,                             # one
        (max_finite_exp_field(t) << f) | (fmask if t.has_inf or not t.has_nan else fmask - 1),  # largest finite
    ]
    if t.has_inf:
        pos += [top << f,                        # inf
                (top << f) | (1 << (f - 1)),     # canonical quiet NaN
                (top << f) | 1,                  # signalling NaN, payload 1
                (top << f) | fmask]              # all-ones NaN
    elif t.has_nan:
        pos += [(top << f) | fmask]              # the only NaN
    sign = 1 << (t.width - 1)
    return np.array(pos + [p | sign for p in pos], dtype=np.uint64)


def _ordinary(t, rng, n, lo, hi):
    """Random sign and mantissa, exponent (unbiased) uniform in [lo, hi], clipped to normals."""
    f = _frac_bits(t)
    e = rng.integers(lo, hi + 1, size=n) + t.bias
    e = np.clip(e, 1, max_finite_exp_field(t))
    frac = rng.integers(0, 1 << f, size=n, dtype=np.uint64)
    p = _compose(t, rng.integers(0, 2, size=n), e, frac)
    bad = _is_nonfinite(t, p)
    p[bad] &= ~np.uint64(1)                       # e4m3 S.1111.111 -> S.1111.110
    return p


def _finite(t, rng, n):
    p = rng.integers(0, 1 << t.width, size=n, dtype=np.uint64) if t.bits < 64 else rng.integers(
        0, 1 << 63, size=n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=n, dtype=np.uint64)
    while True:
        bad = _is_nonfinite(t, p)
        if not bad.any():
            return p
        p[bad] = _finite(t, rng, int(bad.sum())) if bad.sum() < n else p[bad] ^ np.uint64(1 << (t.width - 2))


def _tiny(t, rng, n):
    f = _frac_bits(t)
    sub = rng.integers(0, 2, size=n).astype(bool)
    p = _ordinary(t, rng, n, 1 - t.bias, 9 - t.bias)
    frac = rng.integers(1, 1 << f, size=n, dtype=np.uint64)
    p[sub] = _compose(t, rng.integers(0, 2, size=int(sub.sum())), np.zeros(int(sub.sum()), int), frac[sub])
    return p


def float_elements(t: ElemType, dist: str, role: str, rng, n: int) -> np.ndarray:
    emax = max_finite_exp_field(t) - t.bias
    if dist == "normal":
        p = _ordinary(t, rng, n, -3, 3)
    elif dist == "finite":
        p = _finite(t, rng, n)
    elif dist == "special":
        p = _ordinary(t, rng, n, -3, 3)
        pick = rng.random(n) < 0.2
        sp = float_specials(t)
        p[pick] = sp[rng.integers(0, len(sp), size=int(pick.sum()))]
    elif dist == "mixed":
        # products of similar size; accumulators 2^-12 .. 2^24 times larger
        p = _ordinary(t, rng, n, -2, 2) if role != "c" else _ordinary(t, rng, n, -12, min(24, emax))
    elif dist == "spread":
        half = max(2, emax // 2)
        p = _ordinary(t, rng, n, -half, half) if role != "c" else _ordinary(t, rng, n, -3, 3)
    elif dist == "tiny":
        p = _tiny(t, rng, n)
    else:
        raise ValueError(f"unknown float distribution {dist!r}; allowed: {FLOAT_DISTS}")
    if t.ignored_low_bits:   # tf32: random bits in the mantissa bits the hardware ignores
        p = p | rng.integers(0, 1 << t.ignored_low_bits, size=n, dtype=np.uint64)
    return p


# --- integers and bits ------------------------------------------------------

def int_extremes(t: ElemType) -> np.ndarray:
    vals = {t.min_int, t.max_int, 0, 1, t.min_int + 1, t.max_int - 1}
    if t.signed:
        vals.add(-1)
    return np.array(sorted(vals), dtype=np.int64)


def _to_pattern(t, v):
    return (np.asarray(v, dtype=np.int64) & ((1 << t.bits) - 1)).astype(np.uint64)


def int_elements(t: ElemType, dist: str, role: str, rng, n: int) -> np.ndarray:
    if dist not in INT_DISTS + BIT_DISTS:
        raise ValueError(f"unknown integer distribution {dist!r}; allowed: {INT_DISTS + BIT_DISTS}")
    if t.bits == 32:   # the s32 accumulator
        v = rng.integers(t.min_int, t.max_int + 1, size=n, dtype=np.int64)
        if dist in ("extreme", "dense"):
            ex = int_extremes(t)
            pick = rng.random(n) < 0.5
            v[pick] = ex[rng.integers(0, len(ex), size=int(pick.sum()))]
        elif dist in ("near_limit", "sparse"):   # within 2^21 of either s32 limit
            off = rng.integers(0, 1 << 21, size=n)
            v = np.where(rng.random(n) < 0.5, t.max_int - off, t.min_int + off)
        return _to_pattern(t, v)
    if t.kind == "bits":
        density = {"sparse": 0.1, "dense": 0.9}.get(dist, 0.5)
        return (rng.random(n) < density).astype(np.uint64)
    v = rng.integers(t.min_int, t.max_int + 1, size=n, dtype=np.int64)
    if dist in ("extreme", "near_limit"):
        pick = rng.random(n) < (0.8 if dist == "extreme" else 0.5)
        ex = int_extremes(t)
        v[pick] = ex[rng.integers(0, len(ex), size=int(pick.sum()))]
    return _to_pattern(t, v)


# --- sparse metadata --------------------------------------------------------

#: 4-bit metadata nibbles (two 2-bit indices, first in the low bits) that pick
#: two distinct positions of a group of four in increasing order.
VALID_NIBBLES_2_4 = np.array([i0 | (i1 << 2) for i0 in range(4) for i1 in range(4) if i0 < i1], dtype=np.uint64)
#: tf32 (1:2): the kept element is either the first (halves 0,1) or the second (halves 2,3).
VALID_NIBBLES_TF32 = np.array([0b0100, 0b1110], dtype=np.uint64)


def metadata_words(ins: Instruction, rng, shape, valid: bool = True) -> np.ndarray:
    if not valid:
        return rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32)
    table = VALID_NIBBLES_TF32 if ins.atype == "tf32" else VALID_NIBBLES_2_4
    nib = table[rng.integers(0, len(table), size=tuple(shape) + (8,))]
    return elements_to_words(nib, 4)[..., 0]


# --- per entry --------------------------------------------------------------

def edge_distributions(ins: Instruction) -> tuple[str, ...]:
    """The matrix-level edge distributions that apply to an entry (dense floats only)."""
    return EDGE_DISTS if ins.elem("a").is_float and not ins.is_sparse else ()


def distributions(ins: Instruction) -> tuple[str, ...]:
    t = ins.elem("a")
    base = FLOAT_DISTS if t.is_float else (BIT_DISTS if t.kind == "bits" else INT_DISTS)
    return base + ((RANDOM_METADATA,) if ins.is_sparse else ())


def entry_seed(base_seed: int, ins: Instruction, selector: int, dist: str) -> int:
    return zlib.crc32(f"{base_seed}:{ins.opcode}:{selector}:{dist}".encode())


def _raw(t: ElemType, sign, exp, frac_top=0):
    """Raw bits of +-2^exp * (1 + frac_top / 2^man_bits) in type t (normal range)."""
    f = _frac_bits(t)
    frac = np.asarray(frac_top, dtype=np.uint64) << np.uint64(f - t.man_bits)
    e = np.clip(np.asarray(exp) + t.bias, 1, max_finite_exp_field(t))
    return _compose(t, np.asarray(sign), e, frac)


def edge_matrices(ins: Instruction, dist: str, rng, warps: int):
    """Raw-bit matrices A (W,P,m,k), B (W,P,k,n), C (W,P,m,n) for an edge distribution."""
    P, (m, k), (_, n) = ins.products, ins.matrix_shape("a"), ins.matrix_shape("b")
    ta, tb, tc = ins.elem("a"), ins.elem("b"), ins.elem("c")
    sa, sb, sc = (warps, P, m, k), (warps, P, k, n), (warps, P, m, n)
    sign = lambda shape: rng.integers(0, 2, size=shape)
    zero = lambda t, s: np.asarray(s, dtype=np.uint64) << np.uint64(t.bits - 1)
    if dist == "zeros":
        mode = rng.integers(0, 4, size=sa[:-1] + (1,))
        A = np.where(mode == 0, zero(ta, np.zeros(sa, int)), np.where(mode == 1, zero(ta, np.ones(sa, int)), zero(ta, sign(sa))))
        one = rng.integers(0, k, size=sa[:-1])
        hot = (np.arange(k) == one[..., None]) & (mode == 3)
        A = np.where(hot, _raw(ta, sign(sa), 0), A)
        B = np.where(rng.random(sb) < 0.5, _raw(tb, sign(sb), 0), zero(tb, sign(sb)))
        C = zero(tc, sign(sc))
    elif dist == "cancel":
        big = rng.integers(2, 5, size=sa[:-1])
        A = _raw(ta, sign(sa), -rng.integers(3, 9, size=sa), rng.integers(0, 1 << ta.man_bits, size=sa, dtype=np.uint64))
        A[..., 0] = A[..., 1] = _raw(ta, sign(sa[:-1]), big, rng.integers(0, 1 << ta.man_bits, size=sa[:-1], dtype=np.uint64))
        B = _raw(tb, sign(sb), -rng.integers(0, 4, size=sb), rng.integers(0, 1 << tb.man_bits, size=sb, dtype=np.uint64))
        y = _raw(tb, sign(sb[:-2] + (n,)), 2, rng.integers(0, 1 << tb.man_bits, size=sb[:-2] + (n,), dtype=np.uint64))
        B[..., 0, :] = y
        B[..., 1, :] = y ^ np.uint64(1 << (tb.bits - 1))
        C = np.where(rng.random(sc) < 0.5, zero(tc, sign(sc)), _raw(tc, sign(sc), -rng.integers(4, 12, size=sc)))
    else:
        raise ValueError(f"unknown edge distribution {dist!r}; allowed: {EDGE_DISTS}")
    return A, B, C


def _pack_raw(ins, role, M):
    from ..isa.layouts import layout

    tab = layout(ins.opcode, role)
    el = M[:, tab[..., 0], tab[..., 1], tab[..., 2]]
    return elements_to_words(el, ins.elem(role).bits)


def generate(ins: Instruction, selector: int, dist: str, warps: int, base_seed: int = 0) -> dict:
    """Register words for one entry and distribution: {'a','b','c'[,'e']} of shape (warps, 32, words)."""
    rng = np.random.default_rng(entry_seed(base_seed, ins, selector, dist))
    if dist in EDGE_DISTS:
        if ins.is_sparse or not ins.elem("a").is_float:
            raise ValueError(f"edge distribution {dist!r} is for dense floating-point entries only")
        A, B, C = edge_matrices(ins, dist, rng, warps)
        return {"a": _pack_raw(ins, "a", A), "b": _pack_raw(ins, "b", B), "c": _pack_raw(ins, "c", C)}
    elem_dist = distributions(ins)[0] if dist == RANDOM_METADATA else dist
    out = {}
    for role in "abc":
        t = ins.elem(role)
        n = warps * 32 * ins.elements_per_lane(role)
        gen = float_elements if t.is_float else int_elements
        p = gen(t, elem_dist, role, rng, n)
        out[role] = elements_to_words(p.reshape(warps, 32, -1), t.bits)
    if ins.is_sparse:
        out["e"] = metadata_words(ins, rng, (warps, 32), valid=dist != RANDOM_METADATA)
    if ins.block_scaled:
        out["s"] = scale_words(ins, elem_dist, rng, warps)
    return out


def scale_words(ins: Instruction, dist: str, rng, warps: int) -> np.ndarray:
    """Block-scale registers (warps, 32, 2): word 0 is scale-a-data, word 1 scale-b-data of each lane.

    Every byte of every lane is filled (the selectors pick which ones are read): scale exponents
    within 2^+-8 for "normal"/"mixed", the whole range for "finite"/"spread", plus NaN and the
    extremes for "special", the smallest scales for "tiny".  ue4m3 bytes get a random bit 7
    (which the model ignores: a capture tells whether the hardware does too).
    """
    t = ins.scale_elem()
    shape = (warps, 32, 2, 4)
    if t.man_bits == 0:   # ue8m0: a biased exponent
        lo, hi = {"finite": (0, 254), "spread": (0, 254), "tiny": (0, 16)}.get(dist, (119, 135))
        b = rng.integers(lo, hi + 1, size=shape, dtype=np.uint64)
        if dist == "special":
            b = np.where(rng.random(shape) < 0.1, rng.choice(np.array([0, 1, 254, 255], np.uint64), size=shape), b)
    else:                 # ue4m3: exponent field 1..15 (or 0: subnormal / zero), 3 mantissa bits
        lo, hi = {"finite": (0, 15), "spread": (0, 15), "tiny": (0, 2)}.get(dist, (3, 11))
        b = (rng.integers(lo, hi + 1, size=shape, dtype=np.uint64) << np.uint64(3)) | rng.integers(0, 8, size=shape, dtype=np.uint64)
        b = np.where(b == 0x7F, np.uint64(0x7E), b) if dist != "special" else b
        b |= rng.integers(0, 2, size=shape, dtype=np.uint64) << np.uint64(7)
        if dist == "special":
            b = np.where(rng.random(shape) < 0.1, rng.choice(np.array([0, 1, 0x7E, 0x7F, 0x80], np.uint64), size=shape), b)
    return (b[..., 0] | (b[..., 1] << np.uint64(8)) | (b[..., 2] << np.uint64(16)) | (b[..., 3] << np.uint64(24))).astype(np.uint32)


def corpus_entry(opcode: str, selector: int, distributions, warps: int, seed: int, arch: str | None = None) -> dict:
    """The inputs of one corpus entry as the capture tool made them: each distribution's
    :func:`generate` words, concatenated along the warp axis (registered with
    :mod:`warpsim.hw.golden` as ``mma_entry``)."""
    from ..isa.parse import parse

    try:
        ins = parse(opcode)                  # the generated words depend on types and layout only
    except ValueError:
        if not arch:
            raise
        ins = parse(opcode, arch=arch)       # opcodes of another target's catalog (sm_120a kind::)
    parts = [generate(ins, selector, d, warps, seed) for d in distributions]
    return {r: np.concatenate([p[r] for p in parts]) for r in parts[0]}
