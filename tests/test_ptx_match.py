"""match.any.sync / match.all.sync (.b32, .b64; whole warps and the lanes of a branch) against the H200's words
(``tests/ptx/data/cap_match.npz``, captured by ``python -m warpsim.hw.match_capture``), on both engines, and the
forms the rules refuse."""

from pathlib import Path

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.hw.golden import open_golden
from warpsim.hw.match_capture import PTX, THREADS, inputs

CAP = Path(__file__).resolve().parent / "ptx" / "data" / "cap_match.npz"


@pytest.fixture(scope="module")
def captured():
    return open_golden(CAP)


def test_the_capture_is_of_these_inputs(captured):
    v32, v64 = inputs()
    assert (captured["v32"] == v32).all() and (captured["v64"] == v64).all()


@pytest.mark.parametrize("engine", ["interpret", "compiled"])
def test_match_gives_the_gpu_words(captured, engine):
    mod = wp.load(PTX.read_text())
    if engine == "compiled":
        assert mod.translation("match_sync").native, mod.translation("match_sync").reason
    out = np.zeros(THREADS * 8, np.uint32)
    v32, v64 = inputs()
    mod.launch("match_sync", (1, 1, 1), (THREADS, 1, 1), [out, v32, v64], engine=engine)
    want = captured["out"]
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, f"thread {bad[0] // 8} word {bad[0] % 8}: {out[bad[0]]:#x}, the GPU {want[bad[0]]:#x}"
    # the capture exercises what it is meant to: both modes' masks, an all-equal warp, a b64 difference in the
    # high word only, the branch's lanes
    o = want.reshape(THREADS, 8)
    assert o[0, 0] == 0x49249249 and o[0, 3] == 0x55555555           # b32 groups of 3; b64 by the high word
    assert o[128, 1] == 0xFFFFFFFF and o[128, 2] == 1 and o[0, 2] == 0
    assert o[32, 6] == 0xFFFF and o[32, 7] == 0xFFFF and o[32, 1] == 0   # lanes 0-15 equal, the warp not
    assert (o[np.arange(THREADS) % 32 >= 16, 6] == 0xDEADBEEF).all()


_BODY = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {stmt}
    st.global.u32 [%rd1], %r2;
    ret;
}}
"""


@pytest.mark.parametrize("stmt, why", [
    ("match.any.sync.b32 %r2|%p1, %r1, -1;", "no predicate destination"),
    ("match.all.sync.b32 %r2, %r1;", "takes d"),
    ("match.any.sync.b32 %r2, %r1, 0xffff;", "membermask"),
])
def test_match_refuses_what_the_rules_do_not_allow(stmt, why):
    mod = wp.load(_BODY.format(stmt=stmt))
    out = np.zeros(1, np.uint32)
    with pytest.raises(wp.PTXError, match=why):
        mod.launch("k", (1, 1, 1), (32, 1, 1), [out], engine="interpret")
