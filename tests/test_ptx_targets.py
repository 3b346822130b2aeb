"""The PTX loader refuses, per ``.target``, exactly the forms ptxas refuses there (issue 33).

tests/golden/ptxas/ptx_targets.json.xz (``python -m warpsim.hw.ptxas_grammar targets``) holds
ptxas's verdict (12.9 for sm_70, 13.0 for the rest) on every canonical form of the PTX-layer
families warpsim implements -- wmma, ldmatrix / stmatrix / movmatrix, cvt, atom / red, mbarrier,
the bulk and tensor copies, cp.async, fence / membar, elect, mapa, barrier.cluster, setmaxnreg --
for each of 12 modelled targets.  ``warpsim.ptx.targets`` must give the same answer on every form
ptxas accepts somewhere (the others ``warpsim.ptx.spellings`` already refuses).
"""

from __future__ import annotations

import lzma
import json
import os
import re

import pytest

import warpsim.ptx as wp
from warpsim.ptx import PTXError, targets

PATH = os.path.join(os.path.dirname(__file__), "golden", "ptxas", "ptx_targets.json.xz")
with lzma.open(PATH, "rt") as _f:
    TABLE = json.load(_f)
FORMS = TABLE["forms"]
SOMEWHERE = [i for i in range(len(FORMS)) if any(str(i) not in r["refused"] for r in TABLE["targets"].values())]


@pytest.mark.parametrize("target", sorted(TABLE["targets"]))
def test_rules_agree_with_ptxas_per_target(target):
    row = TABLE["targets"][target]
    assert row["ptxas"] == ("12.9" if target == "sm_70" else "13.0")
    wrong = []
    for i in SOMEWHERE:
        fam, form = FORMS[i]
        assert targets.family_of(form) == fam
        if targets.available(fam, form, target) != (str(i) not in row["refused"]):
            wrong.append(form)
    assert not wrong, f"{len(wrong)} forms disagree with ptxas on {target}, e.g. {wrong[:5]}"


def test_table_covers_the_families_and_both_verdicts():
    fams = {f for f, _ in FORMS}
    assert len(FORMS) > 30000 and len(SOMEWHERE) > 2800 and len(fams) == 21
    per = {t: len(FORMS) - len(r["refused"]) for t, r in TABLE["targets"].items()}
    assert per["sm_70"] < per["sm_80"] < per["sm_90"] < per["sm_90a"] <= per["sm_100a"]


_KERNEL = """
.version {version}
.target {target}
.address_size 64
.visible .entry k(.param .u64 P)
{{
  .reg .b32 %r<8>;
  .reg .b16 %h<4>;
  .reg .f32 %f<4>;
  .reg .f64 %fd<16>;
  .reg .b64 %rd<4>;
  .shared .align 16 .b8 s[256];
  ld.param.u64 %rd1, [P];
  {stmt}
  ret;
}}
"""


@pytest.mark.parametrize("stmt,low,high", [
    ("stmatrix.sync.aligned.m8n8.x1.shared.b16 [s], {%r0};", "sm_89", "sm_90"),
    ("cvt.rn.bf16.f16 %h1, %h0;", "sm_89", "sm_90"),
    ("cvt.rn.bf16.f32 %h1, %f0;", "sm_75", "sm_80"),
    ("cvt.rn.satfinite.e4m3x2.f32 %h1, %f0, %f1;", "sm_86", "sm_89"),
    ("setmaxnreg.dec.sync.aligned.u32 56;", "sm_90", "sm_90a"),
    ("setmaxnreg.dec.sync.aligned.u32 40;", "sm_120", "sm_120a"),
    ("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%fd0, %fd1, %fd2, %fd3}, {%fd4, %fd5, %fd6, %fd7, %fd8, "
     "%fd9, %fd10, %fd11}, {%fd12, %fd13, %fd14, %fd15}, {%fd0, %fd1, %fd2, %fd3};", "sm_89", "sm_90"),
])
def test_loader_refuses_a_form_below_its_target(stmt, low, high):
    """A module whose .target lacks the form is a PTXError naming the target; one target up it loads and
    runs (the statement executes)."""
    ver = lambda t: "8.8"   # noqa: E731
    with pytest.raises(PTXError, match=re.escape(f"{low}")):
        wp.load(_KERNEL.format(version=ver(low), target=low, stmt=stmt)).launch("k", (1,), (32,), [0])
    mod = wp.load(_KERNEL.format(version=ver(high), target=high, stmt=stmt))
    mod.launch("k", (1,), (32,), [0])


def test_wgmma_needs_sm_90a():
    stmt = ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd1, 1, 1, 1, 0, 0;")
    with pytest.raises(PTXError, match="sm_90a only"):
        wp.load(_KERNEL.format(version="8.8", target="sm_100a", stmt=stmt)).program("k")


def test_sm_100_tf32_satfinite_rounding_runs_there_only():
    """cvt.rn/rz(.relu).satfinite.tf32.f32 exist from sm_100 (ptxas 13.0): refused on sm_90a, run on sm_100a
    (modelled: no capture on sm_100).  1.5 + 2**-12 rounds to 1.5 (rz) / 1.5 (rn: below the tf32 half-ulp),
    inf saturates to the largest finite tf32."""
    import numpy as np

    stmt = "cvt.rz.satfinite.tf32.f32 %r1, %f0;"
    body = _KERNEL.replace("{stmt}", "ld.global.f32 %f0, [%rd1];\n  {stmt}\n  st.global.b32 [%rd1], %r1;")
    with pytest.raises(PTXError, match="sm_90a"):
        wp.load(body.format(version="8.8", target="sm_90a", stmt=stmt)).program("k")
    mod = wp.load(body.format(version="8.8", target="sm_100a", stmt=stmt))
    for x, want in ((1.5 + 2.0 ** -12, 0x3FC00000), (float("inf"), 0x7F7FE000), (-float("inf"), 0xFF7FE000)):
        buf = np.array([x], np.float32).view(np.uint32)
        mod.launch("k", (1,), (32,), [buf])
        assert int(buf[0]) == want, (x, hex(int(buf[0])))
