"""ptxas' merge of a product or quotient into the add / sub reading it (warpsim.ptx.contraction).

Which pairs merge was read off the SASS ptxas 13 writes for sm_90a (docs/sfu.md); the hardware words of the
Triton RMSNorm capture (tests/test_triton_driver.py, rmsnorm.rstd) need it.  Here: the rewrite follows the
SASS for each variant, a worked example where one rounding and two differ, and 16 variants run on an H200
(tests/golden/ptx_contraction_sm90.npz, tests/ptx_contraction_cases.py) replayed word for word.
"""

import os
import sys

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.hw.golden import open_golden
from warpsim.ptx.sfu_ops import FORMS

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import ptx_contraction_cases as cases  # noqa: E402

HEAD = ".version 8.7\n.target sm_90a\n.address_size 64\n"


def _module(body):
    return wp.load(HEAD + ".visible .entry k(.param .u64 out, .param .f32 pa, .param .f32 pb, .param .f32 pc)\n{\n"
                   ".reg .f32 %f<12>;\n.reg .b64 %rd<4>;\n.reg .pred %p<3>;\n"
                   "ld.param.u64 %rd1, [out];\nld.param.f32 %f4, [pa];\nld.param.f32 %f5, [pb];\n"
                   "ld.param.f32 %f6, [pc];\n" + body + "\nret;\n}\n")


_STORE = "st.global.f32 [%rd1], %f8;"


@pytest.mark.parametrize("body,merged", [
    ("div.full.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;", "contracted.div.full.f32.add.f32"),
    ("div.full.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f6, %f7;", "contracted.div.full.f32.add.f32"),
    ("div.full.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f7, %f6;", "contracted.div.full.f32.sub.f32"),
    ("div.full.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f6, %f7;", "contracted.div.full.f32.rsub.f32"),
    ("div.full.ftz.f32 %f7, %f4, %f5;\nadd.ftz.f32 %f8, %f7, %f6;", "contracted.div.full.ftz.f32.add.f32"),
    ("div.approx.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;", "contracted.div.approx.f32.add.f32"),
    # SASS: FMUL then FADD -- a second reader, a rounding modifier, .ftz on one side only, another block
    ("div.full.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;\nst.global.f32 [%rd1+4], %f7;", None),
    ("div.full.f32 %f7, %f4, %f5;\nadd.rn.f32 %f8, %f7, %f6;", None),
    ("div.full.ftz.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;", None),
    ("div.full.f32 %f7, %f4, %f5;\nsetp.gt.f32 %p1, %f6, 0f00000000;\n@%p1 bra L1;\n"
     "st.global.f32 [%rd1+8], %f6;\nL1:\nadd.f32 %f8, %f7, %f6;", None),
    # the dividend rewritten between them: the merged FFMA would read another value
    ("div.full.f32 %f7, %f4, %f5;\nmov.f32 %f4, 0f40000000;\nadd.f32 %f8, %f7, %f6;", None),
    # a product: FFMA when its only reader is the add, FMUL + FADD with a second reader
    ("mul.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;", "contracted.mul.f32.add.f32"),
    ("mul.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f6, %f7;", "contracted.mul.f32.rsub.f32"),
    ("mul.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;\nst.global.f32 [%rd1+4], %f7;", None),
    ("mul.rn.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;", None),
])
def test_merged_where_ptxas_merges(body, merged):
    prog = _module(body + "\n" + _STORE).program("k")
    adds = [st.opcode for st in prog.code if st.opcode.startswith(("add", "sub", "contracted"))]
    assert adds[-1] == (merged or adds[-1]) and (merged is not None) == adds[-1].startswith("contracted")


def test_nothing_merges_without_fmad_or_in_a_debug_module():
    """ptxas --fmad=false (Triton's enable_fp_fusion=False) and -G (``.target sm_90a, debug``): FMUL + FADD."""
    body = "div.full.f32 %f7, %f4, %f5;\nadd.f32 %f8, %f7, %f6;\n" + _STORE
    assert any(st.opcode.startswith("contracted") for st in _module(body).program("k").code)
    text = _module(body).text
    assert not any(st.opcode.startswith("contracted") for st in wp.load(text, fmad=False).program("k").code)
    debug = wp.load(text.replace(".target sm_90a", ".target sm_90a, debug"))
    assert not any(st.opcode.startswith("contracted") for st in debug.program("k").code)


def test_one_rounding_where_two_differ():
    """3 / 3 - 1: MUFU.RCP(3) is 0x3eaaaaab (the exhaustively verified table), 3 * that is 1 + 2**-25
    exactly; FMUL rounds it to 1 (then 1 - 1 = 0), the merged FFMA keeps it: 2**-25."""
    assert int(FORMS["rcp.approx.ftz.f32"][0](np.array([np.float32(3).view(np.uint32)]))[0]) == 0x3EAAAAAB
    out = np.zeros(2, np.float32)
    _module("div.full.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f7, %f6;\n" + _STORE + "\n"
            "div.full.f32 %f9, %f4, %f5;\nsub.rn.f32 %f10, %f9, %f6;\nst.global.f32 [%rd1+4], %f10;").launch(
        "k", 1, 32, [out, 3.0, 3.0, 1.0])
    assert out[0] == np.float32(2.0 ** -25) and out[1] == 0.0
    assert wp.instruction_status("contracted.div.full.f32.sub.f32")[0] == "verified"
    # 3 * (1 + 2**-23) - 3: FFMA keeps 3 * 2**-23, FMUL rounds the product to 3 + 2**-21 first
    _module("mul.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f7, %f6;\n" + _STORE).launch(
        "k", 1, 32, [out, 3.0, float(np.float32(1 + 2.0 ** -23)), 3.0])
    assert out[0] == np.float32(3 * 2.0 ** -23)


def test_fmad_false_holds_in_worker_processes_and_linked_modules():
    """A grid run in worker processes re-reads the module there: fmad=False must travel with it."""
    body = ("mov.u32 %r1, %ctaid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd1, %rd1, %rd2;\n"
            "div.full.f32 %f7, %f4, %f5;\nsub.f32 %f8, %f7, %f6;\n" + _STORE)
    text = _module(body).text.replace(".reg .pred", ".reg .b32 %r<2>;\n.reg .pred")
    want = {True: np.float32(2.0 ** -25), False: np.float32(0.0)}
    for fmad in (True, False):
        out = np.zeros(4, np.float32)
        wp.load(text, fmad=fmad).launch("k", 4, 32, [out, 3.0, 3.0, 1.0], ctas_per_batch=1, workers=2)
        assert (out == want[fmad]).all(), (fmad, out)
    linked = wp.load(text, fmad=False).link(".version 8.7\n.target sm_90a\n.address_size 64\n")
    assert linked.fmad is False and not any(st.opcode.startswith("contracted") for st in linked.program("k").code)


_CAPTURE = open_golden(os.path.join(HERE, "golden", "ptx_contraction_sm90.npz"))


@pytest.mark.parametrize("name", list(cases.VARIANTS))
def test_variants_replay_the_h200_words(name):
    """Each variant as the CUDA driver compiled it (ptxas -O3, --fmad=true) on an H200: every output word;
    the merged variants differ from two roundings in 200 to 545 of the 1,024 words."""
    body, merged = cases.VARIANTS[name]
    v = _CAPTURE.manifest["variants"][name]
    assert v["ok"] and v["deterministic"] and v["merged_by_ptxas"] == merged
    a, b, c = cases.operands()
    out, side = np.zeros(cases.N, np.float32), np.zeros(cases.N, np.float32)
    mod = wp.load(cases.ptx(body))
    assert any(st.opcode.startswith("contracted") for st in mod.program("k").code) == merged
    mod.launch("k", cases.N // 128, 128, [out, side, a, b, c])
    assert (out.view(np.uint32) == _CAPTURE[f"{name}.out"]).all()
    if f"{name}.side" in _CAPTURE.files:
        assert (side.view(np.uint32) == _CAPTURE[f"{name}.side"]).all()
