"""Fragment layouts: coverage, pack/unpack round trips, and the ISA's printed formulas."""

import numpy as np
import pytest

import warpsim
from warpsim.isa import catalog as C
from warpsim.hw import inputs as _inputs
from warpsim.isa.layouts import layout


@pytest.mark.parametrize("ins", C.CATALOG, ids=lambda i: i.opcode)
def test_every_element_of_every_product_exactly_once(ins):
    for role in "abcd":
        tab = layout(ins.opcode, role).reshape(-1, 3)
        rows, cols = ins.matrix_shape(role)
        assert tab.shape[0] == ins.products * rows * cols
        flat = (tab[:, 0] * rows + tab[:, 1]) * cols + tab[:, 2]
        assert np.array_equal(np.sort(flat), np.arange(ins.products * rows * cols))


@pytest.mark.parametrize("ins", C.CATALOG, ids=lambda i: i.opcode)
def test_pack_unpack_round_trip(ins):
    regs = _inputs.generate(ins, ins.selectors[0], _inputs.distributions(ins)[1], warps=3, base_seed=7)
    regs["d"] = _inputs.generate(ins, ins.selectors[0], "special" if ins.elem("d").is_float else _inputs.distributions(ins)[0], warps=3, base_seed=8)["c"] \
        if ins.ctype == ins.dtype else None
    for role in "abc" + ("d" if regs["d"] is not None else ""):
        words = regs[role]
        before = words.copy()
        mats = warpsim.unpack(ins.opcode, role, words)
        rows, cols = ins.matrix_shape(role)
        assert mats.shape == (3,) + ((ins.products,) if ins.products > 1 else ()) + (rows, cols)
        assert np.array_equal(warpsim.pack(ins.opcode, role, mats), words)
        assert np.array_equal(words, before)
        one = warpsim.unpack(ins.opcode, role, words[1])
        assert np.array_equal(warpsim.pack(ins.opcode, role, one), words[1])


def _ref(lane):
    return lane >> 2, lane % 4


def _assert_formula(opcode, role, n, formula):
    """fragment_map(opcode, role) holds formula(lane, i) = (matrix, row, col) for its n elements a lane."""
    tab = warpsim.fragment_map(opcode, role)
    for lane in range(32):
        for i in range(n):
            assert tuple(tab[lane, i]) == formula(lane, i)


def test_m16n8k16_f16_matches_the_printed_formula():
    _assert_formula("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "a", 8, lambda lane, i: (
        0, _ref(lane)[0] + (0 if (i < 2 or 4 <= i < 6) else 8),
        _ref(lane)[1] * 2 + (i & 1) + (8 if i >= 4 else 0)))


def test_m8n8k4_f32_accumulator_matches_the_printed_formula():
    _assert_formula("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32", "c", 8, lambda lane, i: (
        (lane >> 2) & 3, (lane & 1) + (i & 2) + (0 if lane < 16 else 4), (i & 4) + (lane & 2) + (i & 1)))


def test_m16n8k256_b1_a_fixes_the_printed_typo():
    # The ISA prints col = tid*32 + i for i < 64; elements 32..63 are row g+8, columns tid*32 + (i & 31).
    _assert_formula("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", "a", 128, lambda lane, i: (
        0, _ref(lane)[0] + (0 if (i < 32 or 64 <= i < 96) else 8),
        _ref(lane)[1] * 32 + (i & 31) + (128 if i >= 64 else 0)))


def test_m16n8k16_f64_b_matches_the_printed_formula():
    _assert_formula("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", "b", 4,
                    lambda lane, i: (0, _ref(lane)[1] + 4 * i, _ref(lane)[0]))


def test_pack_rejects_out_of_range_and_bad_shapes():
    op = "mma.sync.aligned.m16n8k32.row.col.s32.s4.s4.s32"
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        warpsim.pack(op, "a", np.full((16, 32), 9))
    with pytest.raises(ValueError, match="16x32"):
        warpsim.pack(op, "a", np.zeros((2, 16, 31)))
    with pytest.raises(ValueError, match="operand must be one of"):
        warpsim.unpack(op, "x", np.zeros((32, 2), np.uint32))
    with pytest.raises(TypeError, match="uint32"):
        warpsim.unpack(op, "a", np.zeros((32, 2), np.int32))
