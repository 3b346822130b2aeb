"""warpsim accepts exactly the opcode spellings ptxas 13.0 accepts (tests/golden/ptxas/spellings.json.xz).

The table holds, per target, every catalog mma / mma.sp / kind:: / wgmma / wgmma.sp opcode with
seeded candidate spellings (permutations, moved, duplicated, dropped and inserted qualifiers)
and ptxas's verdict on each; ``warpsim.hw.ptxas_grammar`` regenerates it.  Accepted spellings
were shown (on a sample) to assemble to the same cubin as the canonical opcode, so each must
parse to that catalog entry; refused ones must raise a ValueError.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import warpsim
from warpsim.hw.ptxas_grammar import DEFAULT_OUT, load
from warpsim.isa.catalog import BY_OPCODE
from warpsim.ptx import PTXError

TABLE = load(DEFAULT_OUT)


def _verdicts(target):
    for canon, ent in TABLE["targets"][target]["opcodes"].items():
        for sp in ent["ok"]:
            yield canon, sp, ""
        for sp, why in ent["no"].items():
            yield canon, sp, why


@pytest.mark.parametrize("target", sorted(TABLE["targets"]))
def test_parse_accepts_exactly_what_ptxas_accepts(target):
    refused_ok, accepted_bad, wrong_row = [], [], []
    n = 0
    for canon, sp, why in _verdicts(target):
        n += 1
        try:
            ins = warpsim.parse(sp, arch=target)
        except ValueError:
            if not why:
                refused_ok.append(sp)
            continue
        if why:
            accepted_bad.append((sp, why))
        elif ins.opcode != canon or ins.spelling != sp:
            wrong_row.append((sp, ins.opcode))
    assert n >= 1000
    assert not refused_ok, f"{len(refused_ok)} spellings ptxas accepts are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} spellings ptxas refuses are accepted, e.g. {accepted_bad[:5]}"
    assert not wrong_row, f"accepted spellings mapped to another row: {wrong_row[:5]}"


def test_table_covers_every_family_and_both_verdicts():
    t = TABLE["targets"]
    assert {"sm_90a", "sm_100a", "sm_120a"} <= set(t)
    ops = set(t["sm_90a"]["opcodes"]) | set(t["sm_120a"]["opcodes"])
    for prefix in ("mma.sync", "mma.sp.", "mma.sp::ordered_metadata", "wgmma.mma_async.sync", "wgmma.mma_async.sp"):
        assert any(o.startswith(prefix) for o in ops), prefix
    assert any("kind::" in o for o in ops)
    assert ops <= set(BY_OPCODE)
    for target, row in t.items():
        ok = sum(len(e["ok"]) for e in row["opcodes"].values())
        assert 0 < ok < row["candidates"], target
        assert row["cubins_compared"] >= 500, target


def test_issue_24_wgmma_satfinite_after_types():
    for sp in ("wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.u8.satfinite",
               "wgmma.mma_async.sp.sync.aligned.m64n32k64.s32.s8.u8.satfinite"):
        ins = warpsim.parse(sp)
        assert ins.satfinite and ins.spelling == sp and ".satfinite.s32" in ins.opcode


@pytest.mark.parametrize("sp,why", [
    ("mma.sync.aligned.aligned.m16n8k16.row.col.f32.f16.f16.f32", "takes '.aligned' (as in '.sync.aligned') once, got 2"),
    ("mma.sync.aligned.m16n8k16.row.col.row.f32.f16.f16.f32", "layouts ('.row'/'.col') 2 times, got 3"),
    ("mma.aligned.m16n8k16.row.col.f32.f16.f16.f32", "'.sync'"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.rn", "unknown qualifier '.rn'"),
    ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.popc.xor", "'.xor.popc' or '.and.popc'"),
    ("wgmma.mma_async.sp::ordered_metadata.sync.aligned.m64n8k64.s32.s8.u8", "unknown sparse form"),
    ("wgmma.mma_async.aligned.m64n8k16.f32.f16.f16", "'.sync'"),
])
def test_refusals_name_the_qualifier(sp, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        warpsim.parse(sp)


def test_spelling_is_kept_and_canonical_equality_holds():
    sp = "mma.aligned.m16n8k16.sync.row.col.f32.bf16.bf16.f32"
    ins = warpsim.parse(sp)
    canon = warpsim.parse("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
    assert ins == canon and hash(ins) == hash(canon) and ins.opcode == canon.opcode
    assert ins.spelling == sp and canon.spelling == canon.opcode


def test_ptx_statement_with_a_permuted_spelling_computes_the_canonical_result():
    from warpsim.ptx.regfile import Warp, example_statement

    canon = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32"
    spelt = "mma.satfinite.m16n8k32.aligned.row.s32.sync.s8.col.u8.s32"
    stmt = example_statement(canon)
    regs = sorted(set(re.findall(r"%r\d+", stmt)), key=lambda r: int(r[2:]))
    rng = np.random.default_rng(5)
    vals = {r: rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for r in regs}
    outs = []
    for text in (stmt, stmt.replace(canon, spelt)):
        w = Warp(1)
        for r, v in vals.items():
            w.set(r, v)
        w.run(text)
        outs.append(np.stack([w.get(r) for r in regs]))
    assert np.array_equal(outs[0], outs[1])
    with pytest.raises(PTXError, match="takes '.aligned'"):
        Warp(1).run(stmt.replace(canon, "mma.sync.aligned.aligned.m16n8k32.row.col.s32.s8.u8.s32"))
