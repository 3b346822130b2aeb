"""The special-function unit against hardware words: samples of the exhaustive sweep (H200 = GH100
SM), every word of the 16-bit forms, and the exact points the PTX ISA fixes."""

import json
from pathlib import Path

import numpy as np
import pytest

from warpsim.hw.device.sfu_sweep import operands_at
from warpsim.hw.golden import open_golden
from warpsim.numerics import sfu
from warpsim.ptx import Warp, instruction_status, sfu_ops

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = open_golden(ROOT / "tests/golden/sfu_samples.npz")
FORMS = sorted({k.rsplit(".", 1)[0] for k in SAMPLES.files})


def test_every_exact_form_has_samples():
    # the f32 forms without samples here are replayed from the H100 capture tests/ptx/data/cap_alu2.npz
    # (2048 operands each, special values first; tests/test_ptx_alu2.py)
    in_cap_alu2 = {"rcp.approx.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32", "sqrt.approx.f32",
                   "sqrt.approx.ftz.f32", "ex2.approx.ftz.f32"}
    assert set(FORMS) == set(sfu_ops.FORMS) - in_cap_alu2


@pytest.mark.parametrize("form", FORMS)
def test_samples_equal_hardware(form):
    index, want = SAMPLES[form + ".index"], SAMPLES[form + ".words"]
    got = np.asarray(sfu_ops.FORMS[form][0](*operands_at(form, index))).astype(want.dtype)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{form}: {bad.size} of {want.size} words differ; first operand index "
                           f"{int(index[bad[0]]):#x}: GPU {int(want[bad[0]]):#x}, warpsim {int(got[bad[0]]):#x}")


def test_sweep_report_is_exhaustive_and_clean():
    rep = json.loads((ROOT / "docs/sfu_sweep.json").read_text())
    assert set(rep["forms"]) == set(sfu_ops.FORMS)
    for form, r in rep["forms"].items():
        full = 1 << (16 if sfu_ops.FORMS[form][1] == (16,) else 32)
        assert instruction_status(form)[0] == "verified"
        assert r["operands"] == full and r["differing"] == 0, form
        assert "exhaustive" in instruction_status(form)[1]


@pytest.mark.parametrize("ptx,reg,want", [
    ("ex2.approx.f32 %f1, 0f00000000;", "%f1", 0x3F800000),         # 2^0 = 1
    ("ex2.approx.ftz.f32 %f1, 0f40400000;", "%f1", 0x41000000),     # 2^3 = 8 (integer operands are exact)
    ("ex2.approx.f32 %f1, 0fFF800000;", "%f1", 0),                  # 2^-inf = +0
    ("ex2.approx.f32 %f1, 0f7F800000;", "%f1", 0x7F800000),
    ("rcp.approx.f32 %f1, 0f40000000;", "%f1", 0x3F000000),         # powers of two are exact
    ("rcp.approx.ftz.f32 %f1, 0f80000000;", "%f1", 0xFF800000),     # 1/-0 = -inf
    ("sqrt.approx.f32 %f1, 0f40800000;", "%f1", 0x40000000),
    ("rsqrt.approx.f32 %f1, 0fBF800000;", "%f1", 0x7FFFFFFF),       # negative: NaN
    ("div.full.f32 %f1, 0f3F800000, 0f40800000;", "%f1", 0x3E800000),
    ("div.approx.ftz.f32 %f1, 0f3F800000, 0f7F000000;", "%f1", 0),  # |b| > 2^126: 0 (the ISA's rule)
    ("sin.approx.f32 %f1, 0f00000000;", "%f1", 0),                  # sin 0 = +0, cos 0 = 1
    ("cos.approx.ftz.f32 %f1, 0f00000000;", "%f1", 0x3F800000),
])
def test_exact_points(ptx, reg, want):
    w = Warp()
    w.run(ptx)
    assert int(w.get(reg).flat[0]) == want


def test_tables_are_committed_and_small():
    names = sfu.available()
    assert set(names) == set(sfu.TABLES)
    assert (ROOT / "warpsim/numerics/sfu_data/tables.npz").stat().st_size < 4_500_000


def test_units_refuse_missing_tables(tmp_path):
    np.savez(tmp_path / "empty.npz", nothing=np.zeros(1))
    try:
        sfu.load(tmp_path / "empty.npz")
        with pytest.raises(NotImplementedError, match="rcp"):
            sfu.rcp(np.array([0x3F800000], np.uint32))
    finally:
        sfu.load()


def test_a_table_decodes_alone_on_first_use():
    """Before load(), table(name) decodes only that table (all of them take tens of seconds, sin most)."""
    saved = dict(sfu._LOADED)
    try:
        sfu._LOADED.clear()
        assert sfu.tanh(np.array([0x3F000000], np.uint32)).dtype == np.uint32
        assert set(sfu._LOADED) == {"tanh_e126"}
    finally:
        sfu._LOADED.clear()
        sfu._LOADED.update(saved)
