"""The PTX layer accepts exactly the wmma / ldmatrix / stmatrix / movmatrix / cvt spellings ptxas 13.0 accepts.

tests/golden/ptxas/ptx_spellings.json.xz (``python -m warpsim.hw.ptxas_grammar ptx``) holds ptxas's
verdict (sm_90a, -O0) on every canonical form of these families that the instruction table
implements, and on seeded spellings (permutations, moves, repeats, drops, conflicting or foreign
qualifiers) of every form it accepts.  A sample of the accepted spellings assembled to the same
cubin as their canonical form, so each must map to that form; every refused one must raise.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from warpsim.hw.ptxas_grammar.ptx import DEFAULT_OUT, load, wmma_registers
from warpsim.ptx import PTXError
from warpsim.ptx.instructions import lookup
from warpsim.ptx import targets
from warpsim.ptx.spellings import canonical

TABLE = load(DEFAULT_OUT)
FAMILIES = sorted(TABLE["families"])


def _verdicts(fam):
    """(spelling, canonical form or None, ptxas's error) for every verdict of a family."""
    ent = TABLE["families"][fam]
    err = TABLE["errors"]
    for op, v in ent["forms"].items():
        yield op, op, ""
        for sp in v["ok"]:
            yield sp, op, ""
        for sp, i in v["no"].items():
            yield sp, None, err[i]
    for op, i in ent["refused_forms"].items():
        yield op, None, err[i]


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
            if targets.available(fam, got, TABLE["target"]):   # else the loader refuses it on sm_90a
                accepted_bad.append((sp, why))
            continue
        elif got != want:
            wrong_form.append((sp, got, want))
        elif sp == want and lookup(sp) is None:
            no_row.append(sp)
    assert n == TABLE["families"][fam]["tried"]
    assert not refused_ok, f"{len(refused_ok)} spellings ptxas accepts are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} spellings ptxas refuses are accepted, e.g. {accepted_bad[:5]}"
    assert not wrong_form, f"accepted spellings mapped to another form: {wrong_form[:5]}"
    assert not no_row, f"canonical forms ptxas accepts that no table row matches: {no_row[:5]}"


def test_table_covers_every_family_with_both_verdicts():
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


def test_wmma_register_counts_agree_with_the_captured_fragments():
    """The generator's operand sizes (PTX ISA) are the captured layouts' sizes: no verdict hinged on them."""
    from warpsim.ptx.wmma import registers

    for op in list(TABLE["families"]["wmma.load"]["forms"]) + list(TABLE["families"]["wmma.store"]["forms"]):
        q = op.split(".")
        frag, shape, typ = q[2], q[6], q[-1]
        assert wmma_registers(frag, shape, typ) == registers("c" if frag == "d" else frag, shape, typ), op


@pytest.mark.parametrize("sp,why", [
    ("cvt.rn.rz.f16.f32", "at most 1 rounding qualifier(s)"),
    ("cvt.ftz.ftz.f32.f32", "at most 1 ftz qualifier(s)"),
    ("cvt.rn.f32.f16", "cvt.f32.f16 takes the modifiers (none), .ftz, .ftz.sat, .sat; not .rn"),
    ("cvt.rn.e4m3x2.f32", "not .rn"),
    ("cvt.rn.bf16.s8", "ptxas has no cvt from .s8 to .bf16"),
    ("cvt.rn.f16.f32.sync", "unknown qualifier '.sync' for cvt"),
    ("ldmatrix.sync.aligned.m8n8.x4.x2.b16", "exactly 1 count qualifier(s)"),
    ("ldmatrix.sync.aligned.m8n8.x4.global.b16", "unknown qualifier '.global'"),
    ("movmatrix.sync.aligned.m8n8.b16", "exactly 1 trans qualifier(s)"),
    ("wmma.load.a.sync.aligned.aligned.row.m16n16k16.f16", "exactly 1 aligned qualifier(s)"),
    ("wmma.load.a.sync.aligned.row.m16n16k8.f16", "not .m16n16k8"),
    ("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite", "refused since PTX ISA 6.5"),
    ("wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.u8.s32", "no type list .s32.s8.u8.s32"),
])
def test_refusals_name_the_qualifier(sp, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        canonical(sp)


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
