"""The translator's reroll pass (warpsim/ptx/native/reroll.py): statements repeated but for their registers and
constants become one loop over tables.  Worked examples of the pass; the kernels it rerolls give the H100's words
in test_ptx_native.py (the Triton flash attention, softmax and layernorm, the GEMMs)."""

from pathlib import Path

import pytest

import warpsim.ptx as wp
from warpsim.ptx.native import reroll as rr

KERNELS = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels"


def _lanes(lines):
    return ["for l in range(32):", "    if act[l]:", "        t = base + l"] + ["        " + x for x in lines]


def _store(row, const, line):
    return _lanes([f"_p = rt_shared_at(status, I{line}, t, SMEMP, SMEM_BYTES, rt_get32(A32, T, 48, t) + K{const}, 2, 2)",
                   "if _p == 0:", "    return 1", f"rt_poke2(_p + 0, rt_get16(A16, T, {row}, t))"])


def test_repeated_lane_loops_become_one_loop_over_tables():
    tables = rr.Tables()
    segments = [("top", _store(64 + 4 * i, 1024 * i, 100 + i)) for i in range(4)]
    out = rr.reroll(segments, tables, _lanes)
    assert out == ["for _rr in range(4):",
                   "    _rv0 = RR0[_rr]",
                   "    _rv2 = RR1[_rr]",
                   "    _rv3 = RR2[_rr]"] + ["    " + x for x in _lanes([
                       "_p = rt_shared_at(status, _rv0, t, SMEMP, SMEM_BYTES, rt_get32(A32, T, 48, t) + _rv2, 2, 2)",
                       "if _p == 0:", "    return 1", "rt_poke2(_p + 0, rt_get16(A16, T, _rv3, t))"])]
    assert tables.defs == ["RR0 = np.array([100, 101, 102, 103], np.int64)",       # the PTX lines
                           "RR1 = np.array([0, 1024, 2048, 3072], np.uint64)",      # K<n>: uint64 constants
                           "RR2 = np.array([64, 68, 72, 76], np.int64)"]             # the registers' rows


def test_statements_differing_in_what_numba_specialises_on_stay_apart():
    """A size (a literal argument numba compiles a callee for) is not a slot: 2-byte and 4-byte stores differ."""
    segments = [("top", _store(64, 0, 100)), ("top", _store(68, 0, 101)),
                ("top", [x.replace(", 2, 2)", ", 4, 4)") for x in _store(72, 0, 102)])]
    tables = rr.Tables()
    out = rr.reroll(segments, tables, _lanes)
    assert out == [x for _, s in segments for x in s] and not tables.defs


def test_fewer_than_min_run_repeats_stay_as_they_are():
    segments = [("top", _store(64 + 4 * i, 0, 100 + i)) for i in range(rr.MIN_RUN - 1)]
    assert rr.reroll(segments, rr.Tables(), _lanes) == [x for _, s in segments for x in s]


def test_a_repeated_block_of_two_statements_is_one_iteration():
    n = rr.LANES_MIN_RUN
    body = [[f"rt_set64(A64, T, {2 * i}, t, np.uint64(rt_get32s(A32, T, {10 + i}, t)))",
             f"rt_set64(A64, T, {2 * i + 1}, t, rt_get64(A64, T, 1, t))"] for i in range(n)]
    tables = rr.Tables()
    out = rr.reroll([("lanes", [[x] for b in body for x in b])], tables, _lanes)
    assert out == [f"for _rr in range({n}):", "    _rv0 = RR0[_rr]", "    _rv1 = RR1[_rr]", "    _rv2 = RR2[_rr]"] + \
        ["    " + x for x in _lanes(["rt_set64(A64, T, _rv0, t, np.uint64(rt_get32s(A32, T, _rv1, t)))",
                                     "rt_set64(A64, T, _rv2, t, rt_get64(A64, T, 1, t))"])]
    assert tables.defs[0] == f"RR0 = np.array([{', '.join(str(2 * i) for i in range(n))}], np.int64)"


def test_a_short_run_of_register_only_statements_keeps_its_vector_loop():
    """Fewer than LANES_MIN_RUN repeats inside a vector run stay in its one lane loop (a hot loop's body)."""
    stmts = [[f"rt_set32(A32, T, {20 + i}, t, rt_get32u(A32, T, 11, t) + np.uint64(K{128 * i}))"]
             for i in range(rr.LANES_MIN_RUN - 1)]
    assert rr.reroll([("lanes", stmts)], rr.Tables(), _lanes) == _lanes([x for s in stmts for x in s])


def test_register_only_statements_keep_one_lane_loop_around_the_unrepeated_ones():
    """A vector run's statements ("lanes"): the ones no run takes share one lane loop, each run gets its own
    lane loop inside its loop over the tables, in the statements' order."""
    stmts = [["rt_set32(A32, T, 1, t, CTAID_x)"]] + \
        [[f"rt_set32(A32, T, {20 + i}, t, rt_get32u(A32, T, 11, t) + np.uint64(K{128 * i}))"]
         for i in range(rr.LANES_MIN_RUN)] + \
        [["rt_set32(A32, T, 2, t, K0)"], ["rt_set32(A32, T, 3, t, K1)"]]
    out = rr.reroll([("lanes", stmts)], rr.Tables(), _lanes)
    assert out == _lanes(["rt_set32(A32, T, 1, t, CTAID_x)"]) + \
        [f"for _rr in range({rr.LANES_MIN_RUN}):", "    _rv0 = RR0[_rr]", "    _rv2 = RR1[_rr]"] + \
        ["    " + x for x in _lanes(["rt_set32(A32, T, _rv0, t, rt_get32u(A32, T, 11, t) + np.uint64(_rv2))"])] + \
        _lanes(["rt_set32(A32, T, 2, t, K0)", "rt_set32(A32, T, 3, t, K1)"])


def test_fixed_segments_are_kept_and_break_a_run():
    a = [("top", _store(64 + 4 * i, 0, 100 + i)) for i in range(2)]
    b = [("top", _store(80 + 4 * i, 0, 110 + i)) for i in range(2)]
    segments = a + [("fixed", ["pass"])] + b
    assert rr.reroll(segments, rr.Tables(), _lanes) == [x for _, s in segments for x in s]


@pytest.mark.parametrize("stem, entry", [("triton_attention_f16_sm90a", "attention"),
                                         ("triton_softmax_f32_sm90a", "softmax")])
def test_the_hardware_checked_kernels_run_rerolled_code(stem, entry):
    """The kernels whose compiled words test_ptx_native.py compares with the H100's / the interpreter's do run
    through rerolled loops (so those tests check the pass), and their source is shorter for it."""
    from warpsim.ptx.native import kernel

    ir = wp.load((KERNELS / f"{stem}.ptx").read_text()).translation(entry).ir
    src = kernel._source(ir)
    assert src.count("for _rr in range(") >= 3
    assert "RR0 = np.array([" in src
    if entry == "attention":        # its three loads of a tile: one group function, called for each
        assert src.count("TOFF, TRK, _gi):") == 1
        assert all(f"TOFF, TRK, I{k})" in src for k in range(3))


def test_groups_equal_but_for_their_values_share_one_function_reading_tables():
    """Two instances of a group: the values that differ (a register's row, a PTX line, the table a rerolled loop
    reads) are read from tables at the instance's number; equal ones stay in the code."""
    tables = rr.Tables()
    bodies = []
    for i in range(2):
        loop = rr.reroll([("top", _store(64 + 4 * k + 100 * i, 0, 100 + k)) for k in range(3)], tables, _lanes)
        bodies.append("\n".join(loop + [f"rt_set32(A32, T, {7 + i}, t, K5)"]))
    tpls = [rr.template(b, tables) for b in bodies]
    assert tpls[0][0] == tpls[1][0]
    reads, body = rr.substituted(tpls, tables, "_gi", "_gv")
    assert reads == [f"_gv{len(tpls[0][1]) - 2} = RR4[_gi]"]          # the rows 7 / 8
    assert tables.defs[2:] == ["RR2 = np.array([164, 168, 172], np.int64)",       # the second instance's loop
                               "RR3 = np.array([[64, 68, 72], [164, 168, 172]], np.int64)",
                               "RR4 = np.array([7, 8], np.int64)"]
    assert "RR0[_rr]" in body and "RR3[_gi, _rr]" in body       # the lines alike, the rows a row of RR3 each
    assert rr.template_text(tpls[1]) == bodies[1]


def test_a_lane_loops_repeated_statements_loop_inside_each_lane():
    """A lane loop of several memory statements (each lane runs them all, in order, before the next lane): a block
    of them repeated LANES_MIN_RUN times becomes a loop inside the lane's iteration, so the lanes' order stays;
    fewer repeats are kept as they are (their run time)."""
    def load(i):
        return [f"_a = rt_get64(A64, T, {68 + i}, t) + K0",
                f"_p = rt_global_at(status, I{191 + 4 * i}, t, BASES, SIZES, PTRS, TRK, TOFF, _a, 2, 1, 2)",
                "if _p == 0:", "    return 1", f"rt_set16(A16, T, {i}, t, rt_peek2(_p + 0))"]

    def stmts(n):
        return [["rt_set16(A16, T, 0, t, K0)"]] + \
            [s for i in range(n) for s in (load(i), [f"rt_set16(A16, T, {i + 1}, t, K0)"])]

    short = stmts(rr.LANES_MIN_RUN - 1)
    assert rr.reroll([("loop", short)], rr.Tables(), _lanes) == _lanes([x for s in short for x in s])
    n = rr.LANES_MIN_RUN
    tables = rr.Tables()
    out = rr.reroll([("loop", stmts(n))], tables, _lanes)
    assert out == _lanes([f"for _rr in range({n}):", "    _rv0 = RR0[_rr]", "    _rv2 = RR1[_rr]", "    _rv4 = RR2[_rr]",
                          "    _rv5 = RR0[_rr]"] + ["    " + x for x in [
        "rt_set16(A16, T, _rv0, t, K0)",
        "_a = rt_get64(A64, T, _rv2, t) + K0",
        "_p = rt_global_at(status, _rv4, t, BASES, SIZES, PTRS, TRK, TOFF, _a, 2, 1, 2)",
        "if _p == 0:", "    return 1", "rt_set16(A16, T, _rv5, t, rt_peek2(_p + 0))"]] + [f"rt_set16(A16, T, {n}, t, K0)"])
    # (the first block that repeats is taken: the mov and the load after it; equal columns share a table)
    assert tables.defs == [f"RR0 = np.array([{', '.join(str(i) for i in range(n))}], np.int64)",
                           f"RR1 = np.array([{', '.join(str(68 + i) for i in range(n))}], np.int64)",
                           f"RR2 = np.array([{', '.join(str(191 + 4 * i) for i in range(n))}], np.int64)"]
