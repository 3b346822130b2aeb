"""``tcgen05.commit`` as a PTX row (issue 33): an arrival on an mbarrier, modelled (no sm_100a capture)."""

from __future__ import annotations

import numpy as np
import pytest

import warpsim.ptx as wp

KERNEL = """
.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 P)
{{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
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
}}
"""


@pytest.mark.parametrize("commit", ["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r2];",
                                    "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster"
                                    ".multicast::cluster.b64 [%r2], 1;"])
def test_commit_arrives_once_on_the_mbarrier(commit):
    """With an expected count of 1 the commit completes phase 0; with 2 it leaves it pending."""
    for count, done in ((1, 1), (2, 0)):
        out = np.full(1, 7, np.uint32)
        wp.load(KERNEL.format(count=count, commit=commit)).launch("k", (1,), (32,), [out])
        assert out[0] == done, (commit, count)


def test_commit_needs_its_operands():
    out = np.zeros(1, np.uint32)
    bad = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r2];"
    with pytest.raises(wp.PTXError, match="ctaMask"):
        wp.load(KERNEL.format(count=1, commit=bad)).launch("k", (1,), (32,), [out])


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
