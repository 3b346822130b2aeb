"""``tcgen05.commit`` as a PTX row (issue 33): an arrival on an mbarrier, modelled (no sm_100a capture)."""

from __future__ import annotations

import numpy as np
import pytest

import warpsim.ptx as wp
from fixtures import ptx_kernel

BODY = """
  ld.param.u64 %rd1, [P];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bar;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra WAIT;
  mbarrier.init.shared::cta.b64 [%r2], {count};
  {commit}
WAIT:
  bar.sync 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  selp.u32 %r3, 1, 0, %p2;
  st.global.u32 [%rd1], %r3;
  ret;
"""


def kernel(**fields):
    return ptx_kernel("sm_100a", (".reg .b32 %r<8>;", ".reg .b64 %rd<4>;", ".reg .pred %p<4>;",
                                  ".shared .align 8 .b64 bar;"), BODY.format(**fields))


@pytest.mark.parametrize("commit", ["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r2];",
                                    "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster"
                                    ".multicast::cluster.b64 [%r2], 1;"])
def test_commit_arrives_once_on_the_mbarrier(commit):
    """With an expected count of 1 the commit completes phase 0; with 2 it leaves it pending."""
    for count, done in ((1, 1), (2, 0)):
        out = np.full(1, 7, np.uint32)
        wp.load(kernel(count=count, commit=commit)).launch("k", (1,), (32,), [out])
        assert out[0] == done, (commit, count)


def test_commit_needs_its_operands():
    out = np.zeros(1, np.uint32)
    bad = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r2];"
    with pytest.raises(wp.PTXError, match="ctaMask"):
        wp.load(kernel(count=1, commit=bad)).launch("k", (1,), (32,), [out])


@pytest.mark.parametrize("op,guess", [
    ("tcgen05.mma.cta_group::1.kind::f16", None),
    ("tcgen05.mma.ws.cta_group::1.kind::tf32", ".ws"),
    ("tcgen05.mma.cta_group::2.kind::f8f6f4.ashift", "cta_group::2"),
    ("tcgen05.mma.sp.cta_group::1.kind::mxf8f6f4.block_scale", "sparse"),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64", None),
])
def test_explain_marks_every_tcgen05_form_modelled(op, guess):
    import warpsim

    text = str(warpsim.explain(op))
    assert "modelled: no hardware capture" in text
    if guess:
        assert "layout guesses" in text and guess in text


def test_a_from_tensor_memory_and_ashift():
    """A placed in tensor memory (row i in lane i, two f16 per 32-bit cell, element 0 low: the modelled
    layout) gives the D that A from a shared-memory descriptor gives; .ashift moves A's rows down one
    lane (row 0 kept: modelled) -- D = shift(A) x B.  Small integers: exact whatever the recipe."""
    from warpsim.api.tcgen05 import tcgen05_mma
    from warpsim.isa import smem as S
    from warpsim.isa import tcgen05 as t5
    from warpsim.ptx.tmem import TensorMemory

    rng = np.random.default_rng(33)
    A = rng.integers(-4, 5, (128, 16)).astype(np.float16)
    B = rng.integers(-4, 5, (16, 32)).astype(np.float16)
    db, sb = S.dense_layout(32, 16, "K", "none", 0, kbytes=32)
    sm = np.zeros((1, sb), np.uint8)
    S.write_operand(sm, db, B.T.copy().view(np.uint16).astype(np.uint64)[None], 16)
    d = S.decode_descriptor(db)
    bdesc = t5.encode_smem_desc(d.start, d.lbo, d.sbo)
    idesc = t5.encode_idesc("f16", "f16", "f16", "f32", 128, 32)
    tm = TensorMemory()
    dcol = tm.alloc(32)
    acol = tm.alloc(32)
    tm.cells[:, acol:acol + 8] = A.view(np.uint32)                     # 16 f16 = 8 cells per lane
    tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, dcol, None, bdesc, idesc, smem=sm[0],
                enable_input_d=False, a_taddr=acol)
    assert (tm.cells[:, dcol:dcol + 32].view(np.float32) == A.astype(np.float64) @ B.astype(np.float64)).all()
    tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16.ashift.collector::a::discard", tm, dcol, None, bdesc, idesc,
                smem=sm[0], enable_input_d=False, a_taddr=acol)
    shifted = np.concatenate([A[:1], A[:-1]]).astype(np.float64)
    assert (tm.cells[:, dcol:dcol + 32].view(np.float32) == shifted @ B.astype(np.float64)).all()
    with pytest.raises(ValueError, match="ashift needs A in tensor memory"):
        tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16.ashift.collector::a::discard", tm, dcol, bdesc, bdesc,
                    idesc, smem=sm[0])
