"""warpsim.mma's contract: shapes, dtypes, errors that name what is allowed, inputs untouched."""

import numpy as np
import pytest

import warpsim
from warpsim.hw import inputs as _inputs
from warpsim.isa.catalog import BY_OPCODE

S8 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
SP = "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.u8.s32"


def regs(op, warps=2, sel=0):
    ins = BY_OPCODE[op]
    return _inputs.generate(ins, sel, _inputs.distributions(ins)[0], warps, base_seed=3)


def test_single_warp_equals_batch_and_inputs_untouched():
    r = regs(S8, 3)
    before = {k: v.copy() for k, v in r.items()}
    d = warpsim.mma(S8, r["a"], r["b"], r["c"])
    assert d.shape == (3, 32, 4) and d.dtype == np.uint32
    for w in range(3):
        assert np.array_equal(warpsim.mma(S8, r["a"][w], r["b"][w], r["c"][w]), d[w])
    for k in r:
        assert np.array_equal(r[k], before[k])


def test_non_contiguous_input_is_accepted():
    r = regs(S8, 4)
    d = warpsim.mma(S8, r["a"][::2], r["b"][::2], r["c"][::2])
    assert np.array_equal(d, warpsim.mma(S8, *(np.ascontiguousarray(r[k][::2]) for k in "abc")))


def test_zero_warps():
    r = regs(S8, 1)
    assert warpsim.mma(S8, r["a"][:0], r["b"][:0], r["c"][:0]).shape == (0, 32, 4)


def test_sparse_with_selector():
    r = regs(SP, 2)
    d = warpsim.mma(SP, r["a"], r["b"], r["c"], r["e"], selector=0)
    assert d.shape == (2, 32, 4)


@pytest.mark.parametrize(
    "change,exc,words",
    [
        (lambda r: {**r, "a": r["a"].astype(np.int32)}, TypeError, "dtype uint32"),
        (lambda r: {**r, "a": r["a"].tolist()}, TypeError, "numpy.uint32 array"),
        (lambda r: {**r, "a": r["a"][:, :, :3]}, ValueError, "(warps, 32, 4)"),
        (lambda r: {**r, "b": r["b"][:, :16]}, ValueError, "32 lanes"),
        (lambda r: {**r, "c": r["c"][:1]}, ValueError, "different warp counts"),
        (lambda r: {**r, "c": r["c"][0]}, ValueError, "same form"),
    ],
)
def test_bad_operands(change, exc, words):
    r = change(regs(S8, 2))
    with pytest.raises(exc) as info:
        warpsim.mma(S8, r["a"], r["b"], r["c"])
    assert words in str(info.value)


def test_metadata_errors():
    r = regs(SP, 2)
    with pytest.raises(ValueError, match="is sparse: pass its metadata"):
        warpsim.mma(SP, r["a"], r["b"], r["c"])
    with pytest.raises(ValueError, match="takes no metadata"):
        d = regs(S8, 2)
        warpsim.mma(S8, d["a"], d["b"], d["c"], r["e"])
    with pytest.raises(ValueError, match=r"out of range .*allowed: \[0\]"):
        warpsim.mma(SP, r["a"], r["b"], r["c"], r["e"], selector=1)
    with pytest.raises(ValueError, match="selector"):
        d = regs(S8, 2)
        warpsim.mma(S8, d["a"], d["b"], d["c"], selector=2)
    with pytest.raises(TypeError, match="selector must be an integer"):
        warpsim.mma(SP, r["a"], r["b"], r["c"], r["e"], selector=0.0)
    with pytest.raises(ValueError, match="different warp counts"):
        warpsim.mma(SP, r["a"], r["b"], r["c"], r["e"][:1])


def test_unmodelled_arch_and_bad_opcode():
    r = regs(S8, 1)
    with pytest.raises(ValueError, match="not modelled; modelled architectures: sm_70, sm_75, sm_80, sm_86, sm_89, "
                                         "sm_90, sm_100, sm_120"):
        warpsim.mma(S8, r["a"], r["b"], r["c"], arch="sm_87")
    with pytest.raises(ValueError, match="unknown shape"):
        warpsim.mma(S8.replace("k32", "k33"), r["a"], r["b"], r["c"])


def test_errors_after_the_call_is_cached():
    """The small-call fast path (an instruction already seen) keeps every check of the full validation."""
    r = regs(S8, 2)
    warpsim.mma(S8, r["a"], r["b"], r["c"])
    warpsim.mma(S8, r["a"][0], r["b"][0], r["c"][0])
    with pytest.raises(TypeError, match="dtype uint32"):
        warpsim.mma(S8, r["a"][0].astype(">u4"), r["b"][0], r["c"][0])
    with pytest.raises(TypeError, match="selector must be an integer"):
        warpsim.mma(S8, r["a"], r["b"], r["c"], selector=False)
    with pytest.raises(ValueError, match="same form"):
        warpsim.mma(S8, r["a"][0], r["b"], r["c"][0])
    with pytest.raises(ValueError, match="different warp counts"):
        warpsim.mma(S8, r["a"], r["b"][:1], r["c"])
    with pytest.raises(ValueError, match="takes no metadata"):
        warpsim.mma(S8, r["a"], r["b"], r["c"], np.zeros((2, 32), np.uint32))
    with pytest.raises(TypeError, match="numpy.uint32 array"):
        warpsim.mma(S8, list(r["a"]), r["b"], r["c"])
    s = regs(SP, 2)
    warpsim.mma(SP, s["a"][0], s["b"][0], s["c"][0], s["e"][0])
    with pytest.raises(ValueError, match="is sparse: pass its metadata"):
        warpsim.mma(SP, s["a"][0], s["b"][0], s["c"][0])
    with pytest.raises(ValueError, match="same form"):
        warpsim.mma(SP, s["a"][0], s["b"][0], s["c"][0], s["e"])
