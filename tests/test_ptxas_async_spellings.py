"""The PTX layer accepts exactly the atom / red / mbarrier / bulk-copy / cp.async / fence / elect /
mapa / barrier.cluster / setmaxnreg spellings ptxas 13.0 accepts (sm_90a).

tests/golden/ptxas/async_spellings.json.xz (``python -m warpsim.hw.ptxas_grammar async``) holds
ptxas's verdict on every canonical form of these families that the instruction table implements
and on seeded spellings of each accepted form; 600 accepted spellings assembled to their canonical
form's cubin, so each accepted spelling must map to its form and every refused one must raise.
"""

from __future__ import annotations

import re

import pytest

from warpsim.hw.ptxas_grammar.async_forms import DEFAULT_OUT, load
from warpsim.ptx.instructions import lookup
from warpsim.ptx.spellings import canonical

TABLE = load(DEFAULT_OUT)
FAMILIES = sorted(TABLE["families"])


def _verdicts(fam):
    ent, err = TABLE["families"][fam], TABLE["errors"]
    for op, v in ent["forms"].items():
        yield op, op, ""
        for sp in v["ok"]:
            yield sp, op, ""
        for sp, i in v["no"].items():
            yield sp, None, err[i]
    for op, i in ent["refused_forms"].items():
        yield op, None, err[i]


def _has_row(op):
    if op.startswith("barrier.cluster."):       # the scheduler's own statement (warpsim.ptx.module)
        from warpsim.ptx.module import _CLUSTER_BAR
        return _CLUSTER_BAR.match(op) is not None
    return lookup(op) is not None


@pytest.mark.parametrize("fam", FAMILIES)
def test_matcher_accepts_exactly_what_ptxas_accepts(fam):
    refused_ok, accepted_bad, wrong_form, no_row = [], [], [], []
    n = 0
    for sp, want, why in _verdicts(fam):
        n += 1
        try:
            got = canonical(sp)
        except ValueError:
            if want is not None:
                refused_ok.append(sp)
            continue
        if want is None:
            accepted_bad.append((sp, why))
        elif got != want:
            wrong_form.append((sp, got, want))
        elif sp == want and not _has_row(sp):
            no_row.append(sp)
    assert n == TABLE["families"][fam]["tried"]
    assert not refused_ok, f"{len(refused_ok)} spellings ptxas accepts are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} spellings ptxas refuses are accepted, e.g. {accepted_bad[:5]}"
    assert not wrong_form, f"accepted spellings mapped to another form: {wrong_form[:5]}"
    assert not no_row, f"canonical forms ptxas accepts that no table row matches: {no_row[:5]}"


def test_table_covers_every_family_with_both_verdicts():
    assert set(FAMILIES) == {"atom", "red", "mbarrier", "cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor",
                             "cp.async.bulk", "cp.reduce.async.bulk", "cp.async", "fence", "membar", "elect", "mapa",
                             "barrier.cluster", "setmaxnreg"}
    for fam in FAMILIES:
        ent = TABLE["families"][fam]
        assert 0 < ent["accepted"] < ent["tried"], fam
        assert any(v["ok"] for v in ent["forms"].values()) or fam == "membar", fam
    assert TABLE["cubins_compared"] >= 500
    mb = TABLE["families"]["mbarrier"]["forms"]
    for form in ("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64", "mbarrier.arrive.expect_tx.release.cta"
                 ".shared::cluster.b64", "mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64"):
        assert form in mb, form


@pytest.mark.parametrize("sp,why", [
    ("atom.global.add.add.u32", "'.add' twice"),
    ("atom.add.s64", "does not accept atom with the qualifiers .add.s64"),
    ("red.acquire.gpu.global.add.u32", "does not accept red"),
    ("mbarrier.arrive.release.shared::cta.b64", "does not accept mbarrier.arrive"),
    ("mbarrier.arrive.noComplete.expect_tx.b64", "unknown qualifier '.expect_tx' for mbarrier.arrive"),
    ("cp.async.bulk.global.shared::cluster.mbarrier::complete_tx::bytes", "does not accept cp.async.bulk"),
    ("fence.sc", "does not accept fence"),
    ("setmaxnreg.inc.sync.aligned.aligned.u32", "'.aligned' twice"),
])
def test_refusals_name_the_qualifier(sp, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        canonical(sp)


def test_reordered_statements_run_like_the_canonical_ones():
    """A kernel spelling atom / mbarrier / fence / elect qualifiers in another order launches like the canonical one."""
    import numpy as np

    import warpsim.ptx as wp

    body = """
.version 8.8
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 P)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [P];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 1;
  {atom} %r3, [%rd1], %r2;
  {red} [%rd1+4], %r1;
  {fence};
  {elect} %r4|%p1, -1;
  ret;
}}
"""
    outs = []
    for spell in ({"atom": "atom.global.add.u32", "red": "red.relaxed.gpu.global.max.u32", "fence": "fence.acq_rel.gpu",
                   "elect": "elect.sync"},
                  {"atom": "atom.u32.add.global", "red": "red.max.global.u32.gpu.relaxed", "fence": "fence.gpu.acq_rel",
                   "elect": "elect.sync.sync"}):
        mod = wp.load(body.format(**spell))
        buf = np.zeros(2, np.uint32)
        mod.launch("k", (1,), (64,), [buf])
        outs.append(buf.copy())
    assert outs[0].tolist() == [64, 63] and outs[1].tolist() == outs[0].tolist()


def test_cluster_barrier_spellings_reach_the_scheduler():
    """``barrier.cluster.arrive.aligned.release`` (ptxas takes it) synchronises like the canonical
    spelling; ``barrier.cluster.aligned.arrive`` (ptxas refuses it) is a PTXError naming it."""
    import numpy as np

    import warpsim.ptx as wp
    from warpsim.ptx import PTXError

    text = """
.version 8.8
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 P)
{{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [P];
  mov.u32 %r1, %tid.x;
  {arrive};
  barrier.cluster.wait.acquire.aligned;
  st.global.u32 [%rd1], %r1;
  ret;
}}
"""
    buf = np.zeros(1, np.uint32)
    wp.load(text.format(arrive="barrier.cluster.arrive.aligned.release")).launch("k", (1,), (32,), [buf])
    with pytest.raises(PTXError, match=re.escape("barrier.cluster.aligned.arrive")):
        wp.load(text.format(arrive="barrier.cluster.aligned.arrive")).launch("k", (1,), (32,), [buf])
