"""Relations that hold whatever the hardware rounding is (seeded random cases).

* exact cases: small integers, and powers of two of modest spread, come out exact;
* permuting k inside a block the hardware sums order-independently changes nothing
  (every native HMMA: one fused block; fp8 emulation: the two chained passes);
* a NaN input gives the NaN word the H100 gives (taken from the golden corpus).
"""

import numpy as np
import pytest

import warpsim
from warpsim.isa import catalog as C
from warpsim.hw import inputs as _inputs
from warpsim.isa import sparse as _sparse
from warpsim.isa.layouts import unpack
from warpsim.cli.verify import default_corpus
from warpsim.hw import Corpus

FLOAT = [i for i in C.CATALOG if i.elem("a").is_float and not i.targets]   # sm_120a: test_blackwell.py
ORDER_FREE = [i for i in FLOAT if i.family in ("f16", "bf16", "tf32", "fp8")]


def _operands(ins, A, B, Cm, rng, selector=0):
    """Pack logical matrices; for sparse A pick random valid metadata and keep those A elements."""
    e = None
    if ins.is_sparse:
        e = _inputs.metadata_words(ins, rng, (A.shape[0], 32))
        comp = np.zeros((A.shape[0],) + ins.matrix_shape("a"), dtype=np.float64)
        cols = _sparse.logical_columns(ins, selector, e)
        tab = warpsim.fragment_map(ins.opcode, "a")
        w = np.arange(A.shape[0])[:, None, None]
        comp[w, tab[None, ..., 1], tab[None, ..., 2]] = A[w, tab[None, ..., 1], cols]
        logical = np.zeros_like(A)
        logical[w, tab[None, ..., 1], cols] = comp[w, tab[None, ..., 1], tab[None, ..., 2]]
        A, a = logical, warpsim.pack(ins.opcode, "a", comp)
    else:
        a = warpsim.pack(ins.opcode, "a", A)
    return A, a, warpsim.pack(ins.opcode, "b", B), warpsim.pack(ins.opcode, "c", Cm), e


def _shapes(ins, W):
    P = (ins.products,) if ins.products > 1 else ()
    m, n, k = ins.mnk
    return (W,) + P + (m, k), (W,) + P + (k, n), (W,) + P + (m, n)


@pytest.mark.parametrize("ins", FLOAT, ids=lambda i: i.opcode)
def test_small_integers_are_exact(ins):
    rng = np.random.default_rng(1)
    sa, sb, sc = _shapes(ins, 4)
    A = rng.integers(-3, 4, sa).astype(np.float64)
    B = rng.integers(-3, 4, sb).astype(np.float64)
    Cm = rng.integers(-20, 21, sc).astype(np.float64)
    A, a, b, c, e = _operands(ins, A, B, Cm, rng)
    d = warpsim.mma(ins.opcode, a, b, c, e)
    got = unpack(ins.opcode, "d", d).astype(np.float64)
    assert np.array_equal(got, A @ B + Cm)


@pytest.mark.parametrize("ins", [i for i in FLOAT if i.dtype in ("f32", "f64")], ids=lambda i: i.opcode)
def test_powers_of_two_are_exact(ins):
    rng = np.random.default_rng(2)
    sa, sb, sc = _shapes(ins, 4)
    lo, hi = (-2, 2) if ins.atype in ("e4m3", "e5m2") else (-4, 4)
    A = rng.choice([-1.0, 1.0], sa) * np.exp2(rng.integers(lo, hi + 1, sa))
    B = rng.choice([-1.0, 1.0], sb) * np.exp2(rng.integers(lo, hi + 1, sb))
    Cm = rng.choice([-1.0, 1.0], sc) * np.exp2(rng.integers(-4, 5, sc))
    A, a, b, c, e = _operands(ins, A, B, Cm, rng)
    got = unpack(ins.opcode, "d", warpsim.mma(ins.opcode, a, b, c, e)).astype(np.float64)
    assert np.array_equal(got, A @ B + Cm)


def _blocks(ins):
    """Sets of k indices (dense) that the sm_90 recipe sums as one order-free block."""
    k = ins.k
    if ins.family == "fp8":    # two chained passes: low and high halves of each register pair
        return [[i for i in range(k) if (i // 2) % 2 == h] for h in (0, 1)]
    return [list(range(k))]


@pytest.mark.parametrize("ins", [i for i in ORDER_FREE if not i.is_sparse], ids=lambda i: i.opcode)
def test_permuting_k_inside_a_block_changes_nothing(ins):
    rng = np.random.default_rng(3)
    regs = _inputs.generate(ins, 0, "spread", 4, base_seed=11)
    A = warpsim.unpack(ins.opcode, "a", regs["a"])
    B = warpsim.unpack(ins.opcode, "b", regs["b"])
    d0 = warpsim.mma(ins.opcode, regs["a"], regs["b"], regs["c"])
    perm = np.arange(ins.k)
    for blk in _blocks(ins):
        perm[blk] = rng.permutation(blk)
    a2 = warpsim.pack(ins.opcode, "a", A[..., perm])
    b2 = warpsim.pack(ins.opcode, "b", B[..., perm, :])
    assert np.array_equal(warpsim.mma(ins.opcode, a2, b2, regs["c"]), d0)


def _hardware_nan_words():
    """The NaN words the H100 wrote, per D type, across the whole corpus."""
    cor = Corpus(default_corpus())
    seen = {}
    for ent in cor:
        ins = C.BY_OPCODE[ent["opcode"]]
        t = ins.elem("d")
        if not t.is_float:
            continue
        vals = warpsim.unpack(ins.opcode, "d", ent["d"])
        raw = vals.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits])
        seen.setdefault((ins.family, t.name), set()).update(np.unique(raw[np.isnan(vals.astype(np.float64))]).tolist())
    return seen


NAN_WORDS = _hardware_nan_words()


@pytest.mark.parametrize("ins", [i for i in FLOAT if not i.is_sparse], ids=lambda i: i.opcode)
def test_nan_in_gives_the_hardware_nan_out(ins):
    regs = _inputs.generate(ins, 0, "normal", 2, base_seed=5)
    A = warpsim.unpack(ins.opcode, "a", regs["a"]).copy()
    A[(slice(None),) + (0,) * (A.ndim - 3) + (0, 0)] = np.nan
    a = warpsim.pack(ins.opcode, "a", A)
    D = warpsim.unpack(ins.opcode, "d", warpsim.mma(ins.opcode, a, regs["b"], regs["c"]))
    row = D[(slice(None),) + (0,) * (D.ndim - 3) + (0,)]
    assert np.isnan(row.astype(np.float64)).all()
    t = ins.elem("d")
    raw = row.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[t.bits])
    hw = NAN_WORDS[(ins.family, t.name)]
    assert hw, "the corpus has NaN outputs for every float family"
    assert set(np.unique(raw).tolist()) <= hw
