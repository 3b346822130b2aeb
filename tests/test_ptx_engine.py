"""launch(..., engine=): the interpreter is the reference; "compiled" says why it cannot run a kernel
natively and gives the interpreter's words (warpsim.ptx.translate; the compiled engine's own tests:
tests/test_ptx_native.py)."""

import warnings
from pathlib import Path

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx.translate import Translation, TranslationFallbackWarning, statement_class

from test_ptx_workers import OWN

SOFTMAX = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels" / "triton_softmax_f32_sm90a.ptx"


def test_statement_classes():
    assert statement_class("add.s32") == "alu" and statement_class("fma.rn.f32") == "alu"
    assert statement_class("ld.global.v4.b32") == "memory" and statement_class("st.shared.b32") == "memory"
    assert statement_class("ex2.approx.f32") == "special-function" and statement_class("div.full.f32") == "special-function"
    assert statement_class("div.s32") == "alu"
    assert statement_class("shfl.sync.bfly.b32") == "warp" and statement_class("bar.sync") == "barrier"
    assert statement_class("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == "tensor-core"
    assert statement_class("wgmma.fence.sync.aligned") == "tensor-core"
    assert statement_class("bra.uni") == "branch" and statement_class("ret") == "branch"
    assert statement_class("setp.lt.s32") == "compare-select" and statement_class("cvt.rn.f16.f32") == "convert"


def test_compiled_falls_back_to_the_interpreter_with_a_reason():
    # the softmax with one statement the translator does not take (popc; its result is overwritten)
    text = SOFTMAX.read_text().replace("\tand.b32 \t%r62, %r28, 3;", "\tpopc.b32 \t%r62, %r28;\n\tand.b32 \t%r62, %r28, 3;")
    mod = wp.load(text)
    tr = mod.translation("softmax")
    assert isinstance(tr, Translation) and not tr.native
    assert "no native form of 'popc.b32'" in tr.reason and "line " in tr.reason
    assert tr.classes["special-function"] >= 1 and tr.classes["warp"] >= 1 and tr.classes["memory"] >= 2
    assert sum(tr.classes.values()) == len(mod.program("softmax").code)
    rows, cols = 4, 1024
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    z = np.zeros(64, np.uint8)
    outs = {}
    for engine in ("interpret", None, "compiled"):
        out = np.zeros_like(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mod.launch("softmax", rows, 128, [out, x, cols, z, z.copy()], 16, engine=engine, workers=1)
        fell = [w for w in caught if issubclass(w.category, TranslationFallbackWarning)]
        assert len(fell) == (engine == "compiled")
        assert mod.last_engine["engine"] == "interpret" and mod.last_engine["requested"] == engine
        assert mod.last_engine["reason"] == ("asked for" if engine == "interpret" else tr.reason)
        outs[engine] = out.view(np.uint32)
    assert np.array_equal(outs[None], outs["interpret"]) and np.array_equal(outs["compiled"], outs["interpret"])
    # the words are a softmax (the interpreter's own exactness is tested elsewhere)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert np.allclose(outs["interpret"].view(np.float32), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-9)


def test_bad_engine_is_refused():
    mod = wp.load(OWN)
    with pytest.raises(ValueError, match=r"engine must be one of \(None, 'interpret', 'compiled'\), got 'native'"):
        mod.launch("k", 1, 32, [np.zeros(32, np.uint32), np.zeros(1, np.uint32)], engine="native")
