"""The PTX-to-native translator (warpsim.ptx.native): compiled kernels give the interpreter's words, and the
hardware's where they were captured.  The interpreter is the reference (engine="interpret").

Each kernel here is compiled once per host (numba's disk cache keeps it: a later run loads it)."""

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx.translate import TranslationFallbackWarning

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "benchmarks" / "kernels"
FORMS = Path(__file__).resolve().parent / "ptx" / "data" / "native_forms.ptx"


def _both(mod, entry, grid, block, make_args, shared=0):
    """Output words of the interpreter and of the compiled kernel, for fresh arguments each."""
    words = {}
    for engine in ("interpret", "compiled"):
        args, outs = make_args()
        mod.launch(entry, grid, block, args, shared, engine=engine, workers=1)
        assert mod.last_engine["engine"] == engine, mod.last_engine
        words[engine] = [o.view(np.uint32).copy() for o in outs]
    return words


def _special_words(rng, n):
    """f32 words: ordinary values, random words, NaN / inf / zero / subnormal / max, small integers."""
    w = rng.standard_normal(n).astype(np.float32).view(np.uint32)
    pick = rng.integers(0, 6, n)
    specials = np.array([0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000, 0x80000000, 0, 0x00000001, 0x807FFFFF,
                         0x7F7FFFFF, 0x3F800000, 0x00800000], np.uint32)
    w = np.where(pick == 1, rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32), w)
    w = np.where(pick == 2, specials[rng.integers(0, len(specials), n)], w)
    w = np.where(pick == 3, rng.integers(-40, 40, n).astype(np.int32).view(np.uint32), w)
    return w


def test_statement_forms_equal_the_interpreter():
    mod = wp.load(FORMS.read_text())
    tr = mod.translation("forms")
    assert tr.native, tr.reason
    rng = np.random.default_rng(32)
    x = _special_words(rng, 2 * 64 * 4)

    def make():
        out = np.zeros(2 * 64 * 48, np.uint32)
        return [out, x], [out]

    w = _both(mod, "forms", 2, 64, make)
    a, b = w["interpret"][0], w["compiled"][0]
    bad = np.nonzero(a != b)[0]
    assert len(bad) == 0, f"{len(bad)} words differ, first at word {bad[0] % 48} of thread {bad[0] // 48}"
    col = a.reshape(128, 48)[:, 37]        # the guarded ret left some threads' word 37 unwritten
    assert (col == 0).any() and (col != 0).any()
    forms = wp.load(FORMS.read_text()).program("forms").code
    assert sum(st.opcode.startswith("contracted.") for st in forms) == 3


@pytest.mark.parametrize("stem", ["triton_softmax_f32_sm90a", "triton_layernorm_f32_sm90a"])
def test_triton_kernels_equal_the_interpreter(stem):
    fn = stem.split("_")[1]
    mod = wp.load((KERNELS / f"{stem}.ptx").read_text())
    rows, cols = 4, 1024
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[1, 5] = np.inf if fn == "layernorm" else x[1, 5]
    wts = rng.standard_normal(cols).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)

    def make():
        out = np.zeros_like(x)
        z = [np.zeros(64, np.uint8), np.zeros(64, np.uint8)]
        args = [out, x, cols, *z] if fn == "softmax" else [out, x, wts, bias, cols, 1e-5, *z]
        return args, [out]

    w = _both(mod, fn, rows, 128, make, 16)
    assert np.array_equal(w["interpret"][0], w["compiled"][0])
    if fn == "softmax":          # and it is a softmax (the interpreter's exactness is tested elsewhere)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        assert np.allclose(w["compiled"][0].view(np.float32), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_engine_none_uses_a_built_kernel():
    mod = wp.load(FORMS.read_text())
    x = np.zeros(2 * 64 * 4, np.uint32)
    out = np.zeros(2 * 64 * 48, np.uint32)
    mod.launch("forms", 2, 64, [out, x], engine="compiled")       # built (or loaded) by now
    assert mod.translation("forms").ready()
    mod.launch("forms", 2, 64, [out, x])
    assert mod.last_engine == {"entry": "forms", "requested": None, "engine": "compiled", "reason": None}


def test_untranslatable_kernels_fall_back_with_the_reason():
    mod = wp.load((KERNELS / "triton_attention_f16_sm90a.ptx").read_text())
    tr = mod.translation("attention")
    assert not tr.native and "fence.proxy.async.shared::cta" in tr.reason and "line 724" in tr.reason
    text = FORMS.read_text().replace("\tbar.sync 0;\n", "\tbar.sync 0;\n\tpopc.b32 %r63, %r62;\n")
    mod = wp.load(text)
    x = np.zeros(2 * 64 * 4, np.uint32)
    out = np.zeros(2 * 64 * 48, np.uint32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod.launch("forms", 2, 64, [out, x], engine="compiled")
    fell = [w for w in caught if issubclass(w.category, TranslationFallbackWarning)]
    assert len(fell) == 1 and "popc.b32" in str(fell[0].message)
    assert mod.last_engine["engine"] == "interpret"


_OOB = """.version 8.0
.target sm_90
.address_size 64
.visible .entry oob(.param .u64 p)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd2, %rd1, %rd2;
	ld.global.b32 %r2, [%rd2+64];
	st.global.b32 [%rd2], %r2;
	ret;
}
"""


def test_compiled_errors_name_the_line():
    mod = wp.load(_OOB)
    with pytest.raises(wp.PTXError, match=r"address 0x[0-9a-f]+ \(thread 16\) lies outside every mapped array") as err:
        mod.launch("oob", 1, 32, [np.zeros(32, np.uint32)], engine="compiled")
    assert err.value.line == 12


def test_sfu_forms_are_the_engines():
    """The translator's table of special-function forms (engine form code, .ftz, tables) computes, through the
    unit's range kernel the compiled code calls, what warpsim.ptx.sfu_ops.FORMS does."""
    from warpsim.engine import sfu
    from warpsim.ptx import sfu_ops
    from warpsim.ptx.native.lower import sfu_forms

    x = _special_words(np.random.default_rng(3), 64)
    y = _special_words(np.random.default_rng(4), 64)
    for form, (code, ftz, t0, t1, n) in sfu_forms().items():
        want = sfu_ops.FORMS[form][0](*((x, y) if n == 2 else (x,)))
        seg = sfu.table("ex2_seg") if t0 == "ex2_pos" else np.zeros((2, 1))
        got = np.zeros(64, np.uint32)
        sfu.f32_exact_range(code, ftz, x, y if n == 2 else x, got, 0, 64, sfu.table(t0), sfu.table(t1 or t0), seg)
        assert np.array_equal(got, want), form


def _driver_case_compiled(monkeypatch, suite, name, capture):
    """A case of tests/triton_driver_kernels.py (``suite``: its CASES or SFU_CASES) run under the Triton driver
    for its target (``tk.TARGET``, else sm_90a) with Hopper's numerics, on the compiled engine
    (WARPSIM_PTX_ENGINE=compiled makes it the default; no fallback allowed): every output word is the one an
    H200 wrote (tests/golden/``capture``)."""
    pytest.importorskip("triton", reason="triton is not installed (the optional extra warpsim[triton])")
    pytest.importorskip("torch", reason="torch is not installed (the optional extra warpsim[triton])")
    import warpsim.triton as wt
    from warpsim.hw.golden import open_golden
    from warpsim.ptx.native import kernel

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import triton_driver_kernels as tk

    monkeypatch.setenv("WARPSIM_PTX_ENGINE", "compiled")
    before = kernel.LAUNCHES[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TranslationFallbackWarning)
        with wt.device(arch=tk.TARGET.get(name, "sm_90a"), device="sm_90a"):
            outs, k = getattr(tk, suite)[name][0](lambda t: t)
    assert kernel.LAUNCHES[0] > before                # the compiled engine ran it
    z = open_golden(os.path.join(os.path.dirname(__file__), "golden", capture))
    cap = z.manifest["cases"][name]
    assert tk.ptx_digest(k.asm["ptx"]) == cap["ptx_sha256"]
    for out in cap["outputs"]:
        want, got = z[f"{name}.{out}"], tk.words(outs[out])
        assert got.shape == want.shape and int((got != want).sum()) == 0, out


def test_triton_tutorial_layernorm_compiled_gives_the_hopper_words(monkeypatch):
    """tests/golden/triton_driver_sm90.npz's layernorm (loops over the columns: uniform branches)."""
    _driver_case_compiled(monkeypatch, "CASES", "layernorm", "triton_driver_sm90.npz")


# ---------------------------------------------------------------------------------------------
# the warp-level tensor-core path (warpsim.ptx.native.lower_mma): mma.sync, ldmatrix / stmatrix, cp.async

COMPILED = Path(__file__).resolve().parent / "ptx" / "compiled"
CAPTURE = Path(__file__).resolve().parent / "ptx" / "data" / "compiled_kernels.npz"


#: a kernel's first compile takes about a minute on a 2-core host: bf16 takes the tensor-core path (and
#: ldmatrix .trans), s8 the integer one (8-bit loads, prmt); the tf32 (cp.async.ca) and e4m3 GEMMs of the same
#: directory give their captured words too (run them with WARPSIM_NATIVE_ALL_GEMMS=1)
GEMMS = ["triton_bf16_f32acc_masked_sm80", "triton_s8_s32acc_masked_sm80"] + \
    (["triton_tf32_masked_sm89", "triton_e4m3_f32acc_sm89"] if os.environ.get("WARPSIM_NATIVE_ALL_GEMMS") else [])


@pytest.mark.parametrize("name", GEMMS)
def test_mma_sync_gemms_compiled_give_the_h100_words(name):
    """The committed Triton GEMMs of tests/ptx/compiled (mma.sync, ldmatrix, 8-bit loads, prmt) on the compiled
    engine, as the H100 ran them (arch sm_90): every output word is the GPU's, which the interpreter gives too
    (tests/test_ptx_compiled.py::test_compiled_case_matches_h100)."""
    from warpsim.hw.golden import open_golden
    from warpsim.ptx.native import kernel

    sys.path.insert(0, str(COMPILED))
    from cases import CASES, inputs

    case = CASES[name]
    mod = wp.load(COMPILED / case["ptx"])
    assert mod.translation(case["entry"]).native, mod.translation(case["entry"]).reason
    bufs, make_args, grid, block, shared, outs = inputs(name)
    gm = wp.GlobalMemory()
    addr = {k: gm.map(v) for k, v in bufs.items()}
    before = kernel.LAUNCHES[0]
    mod.launch(case["entry"], grid, block, make_args(addr), shared, memory=gm, arch="sm_90", engine="compiled")
    assert mod.last_engine["engine"] == "compiled" and kernel.LAUNCHES[0] == before + 1
    cap = open_golden(CAPTURE)
    for o in outs:
        want = cap[f"{name}/{o}"]
        got = bufs[o].view(want.dtype)
        assert got.shape == want.shape and int((got != want).sum()) == 0, o


def test_mma_sync_on_an_arch_without_its_recipe_runs_on_the_interpreter():
    """The kernel is compiled for the mma's engine path; a launch arch whose plan differs (here: e4m3 does not
    exist on sm_80) runs on the interpreter, which names the error."""
    sys.path.insert(0, str(COMPILED))
    from cases import CASES, inputs

    name = "triton_e4m3_f32acc_sm89"
    mod = wp.load(COMPILED / CASES[name]["ptx"])
    bufs, make_args, grid, block, shared, outs = inputs(name)
    gm = wp.GlobalMemory()
    addr = {k: gm.map(v) for k, v in bufs.items()}
    with pytest.warns(TranslationFallbackWarning, match=r"e4m3.*on sm_80: .* is not available on sm_80"):
        with pytest.raises(wp.PTXError, match="not available on sm_80"):
            mod.launch("matmul", grid, block, make_args(addr), shared, memory=gm, arch="sm_80", engine="compiled")


@pytest.mark.parametrize("name", ["flash_attention_sm80", "attention_bwd_dq"])
def test_mma_sync_attention_compiled_gives_the_hopper_words(name, monkeypatch):
    """tests/golden/triton_driver_sfu_sm90.npz's attention kernels of mma.sync (f16; ldmatrix, cp.async, the
    softmax's ex2 / div / fma.ftz, cvt.rn.f16x2.f32; the backward's stmatrix): the forward built for sm_80, the
    backward (dq) for sm_90a, where Triton keeps mma.sync for it."""
    _driver_case_compiled(monkeypatch, "SFU_CASES", name, "triton_driver_sfu_sm90.npz")


@pytest.mark.parametrize("word,f16,bf16", [
    (0x3F800000, 0x3C00, 0x3F80),          # 1.0
    (0x477FEFFF, 0x7BFF, 0x4780),          # just below 65520: 65504 (f16's largest)
    (0x477FF000, 0x7C00, 0x4780),          # 65520, halfway to 2^16: to even, which overflows to inf
    (0x33000000, 0x0000, 0x3300),          # 2^-25, half f16's smallest subnormal: to even (zero)
    (0x33000001, 0x0001, 0x3300),          # just above it: the smallest subnormal
    (0xB87FC000, 0x83FF, 0xB880),          # -1023 * 2^-24: f16's largest subnormal, negative
    (0x3F808000, 0x3C04, 0x3F80),          # bf16 halfway, even below
    (0x3F818000, 0x3C0C, 0x3F82),          # bf16 halfway, even above
    (0x00000001, 0x0000, 0x0000),          # f32's smallest subnormal
    (0x807FFFFF, 0x8000, 0x8080),          # the largest negative f32 subnormal (bf16: rounds up to -2^-126)
    (0xFF800000, 0xFC00, 0xFF80),          # -inf
    (0xFFC00001, 0x7FFF, 0x7FFF),          # a NaN: the canonical NaN
])
def test_f32_to_half_rounds_to_nearest_even(word, f16, bf16):
    """Worked examples of IEEE 754 round-to-nearest-even from f32 words (the helper of cvt.rn.{f16,bf16}x2.f32)."""
    from warpsim.ptx.native.rt_tc import f32_to_half

    assert (int(f32_to_half(word, 5, 10, 0x7FFF)), int(f32_to_half(word, 8, 7, 0x7FFF))) == (f16, bf16)
