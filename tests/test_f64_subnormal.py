"""The f64 chain's shortcuts around subnormal operations equal the exact kernel, word for word.

``engine/chain_fast.py`` never hands the host FPU a subnormal operand where an exact replacement exists
(scaled operand pairs, negligible products, a subnormal accumulator against a coarse product, warps whose
every product is negligible; the proofs are in the module).  These inputs aim at each rule's edges: subnormal
products, products just above and below 2^-1075 and ties on it, the 2^-958 bound of the scaled pairs, signed
zeros (D = -0 with tiny positive products), ties a subnormal C decides, NaN / inf mixed in.
"""

import zlib

import numpy as np
import pytest

from warpsim.engine import kernel

OPS = ("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
       "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64", "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64")


def _f(x):
    return np.float64(x).view(np.uint64)


def _bits(sign, field, frac):
    return np.uint64((sign << 63) | (field << 52) | frac)


def _pools():
    big = (1 << 52) - 1
    sub = [_bits(0, 0, 1), _bits(0, 0, big), _bits(0, 0, 1 << 51), _bits(0, 0, 3), _bits(0, 0, 0x8000000001)]
    tiny = [_bits(0, 1, 0), _bits(0, 1, big), _bits(0, 64, 0), _bits(0, 64, big), _bits(0, 65, 0), _bits(0, 66, 5),
            _f(2.0 ** -537), _f(2.0 ** -538), _f(3 * 2.0 ** -540), _f(2.0 ** -1000)]
    ordinary = [_f(1.0), _f(1.5), _f(3.0), _f(0.75), _f(float((2 ** 53 + 1) // 3)),
                _f(float((2 ** 53 + 1) // 3) * 2.0 ** -60), _f(2.0 ** 60), _f(2.0 ** 950), _f(2.0 ** -100)]
    special = [_f(0.0), _f(np.inf), _bits(0, 2047, 1), _bits(0, 2047, 1 << 51), _f(np.finfo(np.float64).max)]
    return {"sub": np.array(sub), "tiny": np.array(tiny), "ord": np.array(ordinary), "special": np.array(special),
            "nonzero_special": np.array(special[1:])}


POOLS = _pools()
SIGN = np.uint64(1 << 63)


def _draw(rng, shape, mix):
    """Elements from the named pools with the given weights, random signs."""
    names = list(mix)
    p = np.array([mix[n] for n in names], float)
    which = rng.choice(len(names), size=shape, p=p / p.sum())
    out = np.empty(shape, np.uint64)
    for k, n in enumerate(names):
        pool = POOLS[n]
        sel = which == k
        out[sel] = pool[rng.integers(0, len(pool), size=int(sel.sum()))]
    return out | (rng.integers(0, 2, size=shape).astype(np.uint64) << np.uint64(63))


def _words(elements):
    """(W, 32, e) uint64 elements -> (W, 32, 2e) uint32 register words (little-endian pairs)."""
    return np.ascontiguousarray(elements).view(np.uint32)


MIXES = {
    # every product negligible: D = C, C = ±0 gives the IEEE sign of the zero chain
    "all_negligible": ({"sub": 1, "tiny": 1}, {"sub": 1, "tiny": 1}, {"sub": 1, "tiny": 1, "special": 1}),
    "all_negligible_no_zero_c": ({"sub": 1, "tiny": 1}, {"sub": 1, "tiny": 1},
                                 {"sub": 4, "tiny": 4, "ord": 1, "nonzero_special": 0.02}),
    "zero_c_tiny_products": ({"sub": 1, "tiny": 2}, {"sub": 1, "tiny": 2}, {"special": 1}),
    # subnormal operands against ordinary ones (scaled pairs), tiny against subnormal (surrogates)
    "scaled_pairs": ({"sub": 1, "tiny": 1, "ord": 2}, {"sub": 1, "tiny": 1, "ord": 2}, {"ord": 1, "special": 1}),
    # subnormal C against every kind of product (careful steps: keep, coarse, in between)
    "subnormal_c": ({"sub": 1, "tiny": 1, "ord": 2, "special": 0.3}, {"sub": 1, "tiny": 1, "ord": 2},
                    {"sub": 3, "special": 1}),
    "everything": ({"sub": 1, "tiny": 1, "ord": 1, "special": 1}, {"sub": 1, "tiny": 1, "ord": 1, "special": 1},
                   {"sub": 1, "tiny": 1, "ord": 1, "special": 1}),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mix", list(MIXES))
def test_fast_chain_equals_exact_on_subnormal_edges(op, mix):
    pl = kernel.plan(op, 0, "sm_90")
    ins = pl.ins
    rng = np.random.default_rng(zlib.crc32(f"{op} {mix}".encode()))
    W = 72                          # above the parallel threshold (64): the prange build
    ops = [_words(_draw(rng, (W, 32, ins.words(r) // 2), m)) for r, m in zip("abc", MIXES[mix])]
    fast = kernel.runner(op, 0, "sm_90")(*ops, None)
    exact = kernel._generic(pl, *ops, kernel._NO_META)
    bad = np.argwhere(fast != exact)
    assert bad.size == 0, f"{len(bad)} words differ, first at {bad[0]}"


def test_ties_and_signed_zeros_decided_by_a_subnormal_c():
    """C = ±2^-1074 (or ±0) against an exact tie 3 * (2^53 + 1) / 3 at several scales: the sign of C decides the
    rounding; C = -0 with products below 2^-1075 of either sign gives the IEEE zero."""
    op = OPS[1]                                    # m8n8k4: A 8x4, B 4x8
    pl = kernel.plan(op, 0, "sm_90")
    ins = pl.ins
    rng = np.random.default_rng(7)
    W = 64
    third = (2 ** 53 + 1) // 3                     # 3 * third == 2^53 + 1: a tie between 2^53 and 2^53 + 2
    a = rng.choice(np.array([_f(3.0), _f(3.0 * 2.0 ** -1040), _f(0.0), _f(2.0 ** -537), _bits(0, 0, 1)]),
                   size=(W, 32, ins.words("a") // 2))
    b = rng.choice(np.array([_f(float(third)), _f(float(third) * 2.0 ** -40), _f(2.0 ** -538), _bits(0, 0, 7)]),
                   size=(W, 32, ins.words("b") // 2))
    c = rng.choice(np.array([_bits(0, 0, 1), _bits(1, 0, 1), _f(0.0), _f(-0.0), _bits(1, 0, (1 << 52) - 1)]),
                   size=(W, 32, ins.words("c") // 2))
    signs = [rng.integers(0, 2, size=x.shape).astype(np.uint64) << np.uint64(63) for x in (a, b)]
    ops = [_words(a | signs[0]), _words(b | signs[1]), _words(c)]
    fast = kernel.runner(op, 0, "sm_90")(*ops, None)
    exact = kernel._generic(pl, *ops, kernel._NO_META)
    assert np.array_equal(fast, exact)
