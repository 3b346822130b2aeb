"""The PTX layer accepts exactly the spellings ptxas 13.0 accepts (sm_90a), family by family.

Two committed tables hold ptxas's verdicts (sm_90a, -O0) on every canonical form of their families
that the instruction table implements, and on seeded spellings (permutations, moves, repeats, drops,
conflicting or foreign qualifiers) of every form it accepts: tests/golden/ptxas/ptx_spellings.json.xz
(wmma / ldmatrix / stmatrix / movmatrix / cvt; ``python -m warpsim.hw.ptxas_grammar ptx``) and
tests/golden/ptxas/async_spellings.json.xz (atom / red / mbarrier / bulk-copy / cp.async / fence /
elect / mapa / barrier.cluster / setmaxnreg; ``python -m warpsim.hw.ptxas_grammar async``).  A
sample of 600 accepted spellings of each assembled to the same cubin as their canonical form, so
each accepted spelling must map to its form and every refused one must raise.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import warpsim
from fixtures import ptx_kernel
from warpsim.hw.ptxas_grammar import async_forms, ptx
from warpsim.ptx import PTXError
from warpsim.ptx.instructions import lookup
from warpsim.ptx import targets
from warpsim.ptx.spellings import canonical

PTX = ptx.load(ptx.DEFAULT_OUT)
ASYNC = async_forms.load(async_forms.DEFAULT_OUT)
TABLES = {"ptx": PTX, "async": ASYNC}


def _verdicts(table, fam):
    """(spelling, canonical form or None, ptxas's error) for every verdict of a family."""
    ent, err = table["families"][fam], table["errors"]
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
        from warpsim.ptx.simt import _CLUSTER_BAR
        return _CLUSTER_BAR.match(op) is not None
    return lookup(op) is not None


@pytest.mark.parametrize("name,fam", [(n, f) for n, t in TABLES.items() for f in sorted(t["families"])])
def test_matcher_accepts_exactly_what_ptxas_accepts(name, fam):
    table = TABLES[name]
    refused_ok, accepted_bad, wrong_form, no_row = [], [], [], []
    n = 0
    for sp, want, why in _verdicts(table, fam):
        n += 1
        try:
            got = canonical(sp)
        except ValueError:
            if want is not None:
                refused_ok.append(sp)
            continue
        if want is None:
            # (the ptx table's forms that warpsim.ptx.targets lacks on sm_90a: the loader refuses them)
            if name == "async" or targets.available(fam, got, table["target"]):
                accepted_bad.append((sp, why))
        elif got != want:
            wrong_form.append((sp, got, want))
        elif sp == want and not _has_row(sp):
            no_row.append(sp)
    assert n == table["families"][fam]["tried"]
    assert not refused_ok, f"{len(refused_ok)} spellings ptxas accepts are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} spellings ptxas refuses are accepted, e.g. {accepted_bad[:5]}"
    assert not wrong_form, f"accepted spellings mapped to another form: {wrong_form[:5]}"
    assert not no_row, f"canonical forms ptxas accepts that no table row matches: {no_row[:5]}"


def test_ptx_table_covers_every_family_with_both_verdicts():
    TABLE = PTX
    FAMILIES = sorted(TABLE["families"])
    assert set(FAMILIES) == {"wmma.load", "wmma.store", "wmma.mma", "ldmatrix", "stmatrix", "movmatrix", "cvt"}
    for fam in FAMILIES:
        ent = TABLE["families"][fam]
        assert 0 < ent["accepted"] < ent["tried"], fam
        assert any(v["ok"] for v in ent["forms"].values()), fam        # non-canonical spellings accepted
    assert TABLE["cubins_compared"] >= 500
    cvt = TABLE["families"]["cvt"]["forms"]
    for form in ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.relu.satfinite.f16x2.f32", "cvt.rni.ftz.sat.s32.f32",
                 "cvt.rna.satfinite.tf32.f32", "cvt.sat.s8.s32", "cvt.rz.ftz.sat.f32.f64"):
        assert form in cvt, form


def test_async_table_covers_every_family_with_both_verdicts():
    TABLE = ASYNC
    FAMILIES = sorted(TABLE["families"])
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


def test_wmma_register_counts_agree_with_the_captured_fragments():
    """The generator's operand sizes (PTX ISA) are the captured layouts' sizes: no verdict hinged on them."""
    from warpsim.ptx.wmma import registers

    for op in list(PTX["families"]["wmma.load"]["forms"]) + list(PTX["families"]["wmma.store"]["forms"]):
        q = op.split(".")
        frag, shape, typ = q[2], q[6], q[-1]
        assert ptx.wmma_registers(frag, shape, typ) == registers("c" if frag == "d" else frag, shape, typ), op


#: (the parser that must refuse, spelling, words its error must contain): the PTX layer's and the
#: mma / wgmma catalog's (tests/test_ptxas_spellings.py has the latter's per-target verdicts)
REFUSALS = [
    (canonical, "cvt.rn.rz.f16.f32", "at most 1 rounding qualifier(s)"),
    (canonical, "cvt.ftz.ftz.f32.f32", "at most 1 ftz qualifier(s)"),
    (canonical, "cvt.rn.f32.f16", "cvt.f32.f16 takes the modifiers (none), .ftz, .ftz.sat, .sat; not .rn"),
    (canonical, "cvt.rn.e4m3x2.f32", "not .rn"),
    (canonical, "cvt.rn.bf16.s8", "ptxas has no cvt from .s8 to .bf16"),
    (canonical, "cvt.rn.f16.f32.sync", "unknown qualifier '.sync' for cvt"),
    (canonical, "ldmatrix.sync.aligned.m8n8.x4.x2.b16", "exactly 1 count qualifier(s)"),
    (canonical, "ldmatrix.sync.aligned.m8n8.x4.global.b16", "unknown qualifier '.global'"),
    (canonical, "movmatrix.sync.aligned.m8n8.b16", "exactly 1 trans qualifier(s)"),
    (canonical, "wmma.load.a.sync.aligned.aligned.row.m16n16k16.f16", "exactly 1 aligned qualifier(s)"),
    (canonical, "wmma.load.a.sync.aligned.row.m16n16k8.f16", "not .m16n16k8"),
    (canonical, "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite", "refused since PTX ISA 6.5"),
    (canonical, "wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.u8.s32", "no type list .s32.s8.u8.s32"),
    (canonical, "atom.global.add.add.u32", "'.add' twice"),
    (canonical, "atom.add.s64", "does not accept atom with the qualifiers .add.s64"),
    (canonical, "red.acquire.gpu.global.add.u32", "does not accept red"),
    (canonical, "mbarrier.arrive.release.shared::cta.b64", "does not accept mbarrier.arrive"),
    (canonical, "mbarrier.arrive.noComplete.expect_tx.b64", "unknown qualifier '.expect_tx' for mbarrier.arrive"),
    (canonical, "cp.async.bulk.global.shared::cluster.mbarrier::complete_tx::bytes", "does not accept cp.async.bulk"),
    (canonical, "fence.sc", "does not accept fence"),
    (canonical, "setmaxnreg.inc.sync.aligned.aligned.u32", "'.aligned' twice"),
    (warpsim.parse, "mma.sync.aligned.aligned.m16n8k16.row.col.f32.f16.f16.f32", "takes '.aligned' (as in '.sync.aligned') once, got 2"),
    (warpsim.parse, "mma.sync.aligned.m16n8k16.row.col.row.f32.f16.f16.f32", "layouts ('.row'/'.col') 2 times, got 3"),
    (warpsim.parse, "mma.aligned.m16n8k16.row.col.f32.f16.f16.f32", "'.sync'"),
    (warpsim.parse, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.rn", "unknown qualifier '.rn'"),
    (warpsim.parse, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.popc.xor", "'.xor.popc' or '.and.popc'"),
    (warpsim.parse, "wgmma.mma_async.sp::ordered_metadata.sync.aligned.m64n8k64.s32.s8.u8", "unknown sparse form"),
    (warpsim.parse, "wgmma.mma_async.aligned.m64n8k16.f32.f16.f16", "'.sync'"),
]


@pytest.mark.parametrize("check,sp,why", REFUSALS, ids=[sp for _, sp, _ in REFUSALS])
def test_refusals_name_the_qualifier(check, sp, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        check(sp)


def test_other_instructions_pass_through():
    for op in ("add.s32", "cvta.to.global.u64", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ld.global.u32"):
        assert canonical(op) == op


def test_statements_with_permuted_spellings_compute_the_canonical_result():
    """A Warp runs a reordered cvt / movmatrix like the canonical one, keeps the user's spelling in
    messages, and refuses a spelling ptxas refuses with a PTXError naming it."""
    from warpsim.ptx.regfile import Warp

    rng = np.random.default_rng(24)
    a = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    f = rng.standard_normal(32).astype(np.float32).view(np.uint32)
    pairs = [("movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r0;", "movmatrix.b16.trans.aligned.m8n8.sync %r1, %r0;"),
             ("cvt.rn.satfinite.e4m3x2.f32 %h1, %f0, %f2;", "cvt.e4m3x2.satfinite.f32.rn %h1, %f0, %f2;"),
             ("cvt.rzi.sat.s32.f32 %r1, %f0;", "cvt.s32.sat.sat.f32.rzi %r1, %f0;")]
    for canon, spelt in pairs:
        outs = []
        for text in (canon, spelt):
            w = Warp(1)
            w.set("%r0", a)
            w.set("%f0", f)
            w.set("%f2", f[::-1].copy())
            w.run(text)
            outs.append(w.get("%h1" if "%h1" in text else "%r1"))
        assert np.array_equal(outs[0], outs[1]), spelt
    with pytest.raises(PTXError, match=re.escape("'cvt.rn.rz.f16.f32'")) as exc:
        Warp(1).run("cvt.rn.rz.f16.f32 %h1, %f0;")
    assert exc.value.token == "cvt.rn.rz.f16.f32"


def test_reordered_statements_run_like_the_canonical_ones():
    """A kernel spelling atom / mbarrier / fence / elect qualifiers in another order launches like the canonical one."""
    import warpsim.ptx as wp

    body = """
  ld.param.u64 %rd1, [P];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 1;
  {atom} %r3, [%rd1], %r2;
  {red} [%rd1+4], %r1;
  {fence};
  {elect} %r4|%p1, -1;
  ret;
"""
    decls = (".reg .b32 %r<8>;", ".reg .b64 %rd<8>;", ".reg .pred %p<2>;", ".shared .align 8 .b64 bar;")
    outs = []
    for spell in ({"atom": "atom.global.add.u32", "red": "red.relaxed.gpu.global.max.u32", "fence": "fence.acq_rel.gpu",
                   "elect": "elect.sync"},
                  {"atom": "atom.u32.add.global", "red": "red.max.global.u32.gpu.relaxed", "fence": "fence.gpu.acq_rel",
                   "elect": "elect.sync.sync"}):
        mod = wp.load(ptx_kernel("sm_90a", decls, body.format(**spell)))
        buf = np.zeros(2, np.uint32)
        mod.launch("k", (1,), (64,), [buf])
        outs.append(buf.copy())
    assert outs[0].tolist() == [64, 63] and outs[1].tolist() == outs[0].tolist()


def test_cluster_barrier_spellings_reach_the_scheduler():
    """``barrier.cluster.arrive.aligned.release`` (ptxas takes it) synchronises like the canonical
    spelling; ``barrier.cluster.aligned.arrive`` (ptxas refuses it) is a PTXError naming it."""
    import warpsim.ptx as wp

    body = """
  ld.param.u64 %rd1, [P];
  mov.u32 %r1, %tid.x;
  {arrive};
  barrier.cluster.wait.acquire.aligned;
  st.global.u32 [%rd1], %r1;
  ret;
"""

    def text(arrive):
        return ptx_kernel("sm_90a", (".reg .b32 %r<4>;", ".reg .b64 %rd<4>;"), body.format(arrive=arrive))

    buf = np.zeros(1, np.uint32)
    wp.load(text("barrier.cluster.arrive.aligned.release")).launch("k", (1,), (32,), [buf])
    with pytest.raises(PTXError, match=re.escape("barrier.cluster.aligned.arrive")):
        wp.load(text("barrier.cluster.aligned.arrive")).launch("k", (1,), (32,), [buf])
