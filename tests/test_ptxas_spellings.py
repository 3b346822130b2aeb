"""warpsim accepts exactly the opcode spellings ptxas accepts, per target (tests/golden/ptxas/spellings.json.xz).

The table holds, for every modelled target (sm_70 from ptxas 12.9, the others from ptxas 13.0):
ptxas's verdict on every canonical catalog mma / mma.sp / kind:: / wgmma / wgmma.sp opcode; for
the opcodes it accepts (wgmma: on sm_90a), seeded candidate spellings (permutations, moved,
duplicated, dropped and inserted qualifiers) with ptxas's verdict on each; and its verdict on the
catalog's one-step neighbours (other D/C types, sparse forms, layouts, ``.satfinite``, no
``.kind``), where a form the catalog misses would show as accepted.  ``python -m warpsim.hw.ptxas_grammar mma``
regenerates it.  Accepted spellings were shown (on a sample) to assemble to the same cubin as the
canonical opcode, so each must parse to that catalog entry; refused ones must raise a ValueError.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import warpsim
from warpsim.hw.ptxas_grammar.mma import DEFAULT_OUT, load
from warpsim.isa.catalog import BY_OPCODE, CATALOG, WGMMA_CATALOG, WGMMA_SP_CATALOG
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
    assert n == TABLE["targets"][target]["candidates"] >= 100
    assert not refused_ok, f"{len(refused_ok)} spellings ptxas accepts are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} spellings ptxas refuses are accepted, e.g. {accepted_bad[:5]}"
    assert not wrong_row, f"accepted spellings mapped to another row: {wrong_row[:5]}"


EVERY = list(CATALOG) + list(WGMMA_CATALOG) + list(WGMMA_SP_CATALOG)
TARGETS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120",
           "sm_120a")


@pytest.mark.parametrize("target", TARGETS)
def test_every_catalog_opcode_per_target_as_ptxas_decides(target):
    """parse(opcode, arch=target) accepts exactly the catalog opcodes ptxas assembles for the target."""
    row = TABLE["targets"][target]
    assert row["ptxas"] == ("12.9" if target == "sm_70" else "13.0")
    refused = row["refused"]
    assert set(refused) <= {i.opcode for i in EVERY}
    refused_ok, accepted_bad = [], []
    for ins in EVERY:
        try:
            warpsim.parse(ins.opcode, arch=target)
            if ins.opcode in refused:
                accepted_bad.append((ins.opcode, refused[ins.opcode]))
        except ValueError:
            if ins.opcode not in refused:
                refused_ok.append(ins.opcode)
    assert not refused_ok, f"{len(refused_ok)} opcodes ptxas accepts on {target} are refused, e.g. {refused_ok[:5]}"
    assert not accepted_bad, f"{len(accepted_bad)} opcodes ptxas refuses on {target} are accepted: {accepted_bad[:5]}"


def test_neighbours_of_the_catalog_as_ptxas_decides():
    """The one-step variants of every catalog row that are not catalog opcodes: ptxas refuses each on
    every target (before sm_120a's sparse fp8 f16-accumulate row was added it accepted 4 of them), and
    warpsim refuses them (a seeded sample through the public parse; the whole set structurally)."""
    import random

    rows = [TABLE["targets"][t]["neighbours"] for t in TARGETS]
    every = set(rows[0]["no"]) | set(rows[0]["ok"])
    assert len(every) >= 3000 and all(set(r["no"]) | set(r["ok"]) == every for r in rows)
    accepted = {op for r in rows for op in r["ok"]}
    assert not accepted, f"ptxas accepts forms the catalog lacks: {sorted(accepted)[:5]}"
    assert not every & set(BY_OPCODE)
    for op in random.Random(33).sample(sorted(every), 400):
        with pytest.raises(ValueError):
            warpsim.parse(op)


def test_issue_33_sparse_fp8_with_f16_accumulator_on_sm_120a():
    """ptxas 12.9 / 13.0 assemble the sparse fp8 m16n8k64 with an f16 accumulator (no .kind) for sm_120a
    only; it runs there (D = A x B + C on small integers, exact in f16)."""
    op = "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f16.e4m3.e5m2.f16"
    for t in TARGETS:
        assert (op in TABLE["targets"][t]["refused"]) == (t != "sm_120a"), t
    assert warpsim.parse(op, arch="sm_121a").dtype == "f16"
    with pytest.raises(ValueError, match="lowest target that has it is sm_120a"):
        warpsim.parse(op, arch="sm_90a")
    rng = np.random.default_rng(33)
    A = rng.integers(-3, 4, (16, 64)).astype(float)
    A.reshape(16, 16, 4)[:, :, 2:] = 0                  # 2:4 sparse: the first two of every four kept
    B = rng.integers(-3, 4, (64, 8)).astype(float)
    C = rng.integers(-8, 9, (16, 8)).astype(float)
    assert np.array_equal(warpsim.matmul(op, A, B, C, arch="sm_120a"), A @ B + C)


def test_sm_100a_kind_spellings_run_as_their_legacy_twin():
    """sm_100a / sm_103a / sm_110a assemble a .kind:: fp8 spelling without block scale to the same cubin
    as the opcode without .kind (checked when the table was made), so it computes what that opcode does."""
    op = "mma.sync.aligned.m16n8k16.row.col.kind::mxf4.f16.e5m2.e4m3.f16"
    twin = "mma.sync.aligned.m16n8k16.row.col.f16.e5m2.e4m3.f16"
    for t in ("sm_100a", "sm_103a", "sm_110a"):
        assert op in TABLE["targets"][t]["opcodes"] and op not in TABLE["targets"][t]["refused"], t
    assert op in TABLE["targets"]["sm_120"]["refused"]
    rng = np.random.default_rng(7)
    ins = warpsim.parse(op, arch="sm_100a")
    a, b, c = (rng.integers(0, 2**32, (4, 32, ins.words(r)), dtype=np.uint32) for r in "abc")
    for t in ("sm_100a", "sm_103a", "sm_110a"):
        assert np.array_equal(warpsim.mma(op, a, b, c, arch=t), warpsim.mma(twin, a, b, c, arch="sm_100"))
    with pytest.raises(ValueError, match="not available on sm_100"):
        warpsim.mma(op, a, b, c, arch="sm_100")


def test_table_covers_every_family_and_both_verdicts():
    t = TABLE["targets"]
    assert set(TARGETS) <= set(t)
    ops = set(t["sm_90a"]["opcodes"]) | set(t["sm_120a"]["opcodes"])
    for prefix in ("mma.sync", "mma.sp.", "mma.sp::ordered_metadata", "wgmma.mma_async.sync", "wgmma.mma_async.sp"):
        assert any(o.startswith(prefix) for o in ops), prefix
    assert any("kind::" in o for o in ops)
    assert ops <= set(BY_OPCODE)
    for target, row in t.items():
        ok = sum(len(e["ok"]) for e in row["opcodes"].values())
        assert 0 < ok < row["candidates"], target
        assert row["cubins_compared"] >= min(500, ok - len(row["opcodes"])), target


def test_issue_24_wgmma_satfinite_after_types():
    for sp in ("wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.u8.satfinite",
               "wgmma.mma_async.sp.sync.aligned.m64n32k64.s32.s8.u8.satfinite"):
        ins = warpsim.parse(sp)
        assert ins.satfinite and ins.spelling == sp and ".satfinite.s32" in ins.opcode


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
