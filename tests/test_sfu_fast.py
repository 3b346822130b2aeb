"""The jitted special-function path (warpsim.engine.sfu) against the numpy model on many words.

The hardware is the oracle: tests/test_sfu.py and tests/test_ptx_alu2.py replay GPU words through
``sfu_ops.FORMS``, which is this fast path.  Here it must also equal the readable numpy model word for
word on random operands with every exponent class, serial and parallel."""

import numpy as np
import pytest

from warpsim.engine import sfu as fast
from warpsim.ptx import sfu_ops

N = 1 << 16

#: f32 edge words: zeros, infinities, NaNs, subnormals, the 2**+-126 scaling bounds of the SASS wrappers,
#: ex2's -126 and +-64 bounds (the fast path's limit), 1, the largest finite
SPECIAL32 = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x00000001,
                      0x807FFFFF, 0x00800000, 0x80800000, 0x007FFFFF, 0x7E800000, 0x7E800001, 0x7E000000, 0xFE800001,
                      0xC2FC0000, 0xC2FC0001, 0x42800000, 0xC2800000, 0x427FFFFF, 0x3F800000, 0xBF800000,
                      0x7F7FFFFF, 0xFF7FFFFF, 0x33800000, 0x4B800000], np.uint32)


def _operands(widths, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k, w in enumerate(widths):
        if w == 16:
            out.append(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16))      # every 16-bit word
            continue
        x = rng.integers(0, 1 << 64, N, dtype=np.uint64)
        if w == 64:
            ex = rng.choice([0, 1, 2, 3, 1022, 1023, 1024, 2044, 2045, 2046, 2047], N // 2).astype(np.uint64)
            x[: N // 2] = (x[: N // 2] & np.uint64(0x800FFFFFFFFFFFFF)) | (ex << np.uint64(52))
        else:
            x = x.astype(np.uint32)
            ex = rng.choice([0, 1, 2, 24, 100, 126, 127, 128, 130, 150, 252, 253, 254, 255], N // 2).astype(np.uint32)
            x[: N // 2] = (x[: N // 2] & np.uint32(0x807FFFFF)) | (ex << np.uint32(23))
            n = SPECIAL32.size
            x[N // 2: N // 2 + n * n] = np.repeat(SPECIAL32, n) if k == 0 else np.tile(SPECIAL32, n)   # every pair
        out.append(x)
    return out


def test_forms_take_the_fast_path_where_it_has_them():
    assert set(fast.FORMS) <= set(sfu_ops.REFERENCE)
    for form, (fn, widths) in sfu_ops.FORMS.items():
        assert fn is fast.FORMS.get(form, sfu_ops.REFERENCE[form][0]) and widths == sfu_ops.REFERENCE[form][1]


@pytest.mark.parametrize("form", sorted(fast.FORMS))
def test_fast_equals_the_numpy_model(form):
    ref, widths = sfu_ops.REFERENCE[form]
    xs = _operands(widths, seed=len(form))
    want = np.asarray(ref(*xs))
    got = fast.FORMS[form](*xs)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{form}: {bad.size} words differ; operand {[hex(int(x[bad[0]])) for x in xs]}: "
                           f"model {int(want[bad[0]]):#x}, fast {int(got[bad[0]]):#x}")


def test_parallel_kernels_and_shapes(monkeypatch):
    monkeypatch.setattr(fast, "PARALLEL_THRESHOLD", 0)
    for form in ("div.full.f32", "rsqrt.approx.f64", "tanh.approx.f16x2"):
        ref, widths = sfu_ops.REFERENCE[form]
        xs = [x.reshape(-1, 64) if x.size % 64 == 0 else x for x in _operands(widths, seed=3)]
        np.testing.assert_array_equal(fast.FORMS[form](*xs), ref(*xs))
    # broadcasting and 0-d operands, as the PTX rows pass them
    a = np.uint32(0x40400000)
    assert fast.FORMS["div.full.f32"](a, np.full((2, 3), 0x40000000, np.uint32)).shape == (2, 3)
    assert int(fast.FORMS["rcp.approx.f32"](np.uint32(0x40000000))) == 0x3F000000


def test_missing_table_is_a_clear_error(tmp_path, monkeypatch):
    np.savez(tmp_path / "tables.npz", nothing=np.zeros(1))
    monkeypatch.setattr(fast._ref, "DATA_DIR", str(tmp_path))
    monkeypatch.setattr(fast, "_TABLES", {})
    with pytest.raises(NotImplementedError, match="'rsq_odd'"):
        fast.FORMS["rsqrt.approx.f32"](np.array([0x3F800000], np.uint32))


def test_a_wrong_fpu_state_is_refused(monkeypatch):
    """Every chunk checks the FPU state on its thread; here the probe operands are made to fail the check."""
    monkeypatch.setattr(fast, "PROBE64", np.ones(8))
    with pytest.raises(FloatingPointError, match="round-to-nearest"):
        fast.FORMS["ex2.approx.f32"](np.array([0x3F800000], np.uint32))


@pytest.mark.parametrize("unit", sorted(fast.FITTED))
def test_fits_are_exact_on_every_table_entry(unit):
    """The fast path uses a fitted prediction only where it passes its test; here every entry of the unit's
    tables (the hardware words) is checked: no passing prediction differs from its word."""
    assert fast.fit_errors(unit) == 0


def test_fits_leave_few_entries_to_the_table():
    # the point of the fits: most random operands never read the 8 MiB table (a regression guard, not timing)
    for unit in fast.FITTED:
        c0, c12 = fast.table("fit:" + unit)
        lim = (c12 & 0xFF) / fast._LIM_STEPS
        assert 1 - 2 * (0.5 - lim).mean() > 0.85, unit


def test_derived_tables_are_kept_on_disk_and_derived_again_when_unreadable(tmp_path, monkeypatch):
    """engine.sfu keeps each derived table under ~/.cache/warpsim/sfu (the ex2 ones cost ~2.8 s a process to
    derive): the copy read back is the derived table, and a damaged file is derived and written again."""
    from warpsim.engine import sfu

    monkeypatch.setenv("HOME", str(tmp_path))
    want = sfu._derive("rcp")
    first = sfu._disk_cached("rcp", sfu._derive)
    (path,) = (tmp_path / ".cache" / "warpsim" / "sfu").glob("rcp-*.npy")
    assert np.array_equal(first, want) and first.dtype == want.dtype
    assert np.array_equal(sfu._disk_cached("rcp", lambda name: 1 / 0), want)      # read back, not derived
    path.write_bytes(b"not an array")
    assert np.array_equal(sfu._disk_cached("rcp", sfu._derive), want)
    assert np.array_equal(np.load(path), want)


def test_a_table_read_from_the_disk_has_the_numba_type_of_a_derived_one(tmp_path, monkeypatch):
    """The compiled kernels take the tables as arguments: a table read back from ~/.cache/warpsim/sfu was writeable
    where the derived one was read-only, so a kernel built in the process that derived the tables was compiled again
    (two numba signatures) by the next process, which read them -- 7-36 s in the Xeon bench's timed runs."""
    from numba import typeof

    from warpsim.engine import sfu

    monkeypatch.setenv("HOME", str(tmp_path))
    derived = sfu._disk_cached("rcp", sfu._derive)
    read = sfu._disk_cached("rcp", lambda name: 1 / 0)
    assert typeof(read) == typeof(derived) and not read.flags.writeable
