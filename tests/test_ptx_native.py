"""The PTX-to-native translator (warpsim.ptx.native): compiled kernels give the interpreter's words, and the
hardware's where they were captured.  The interpreter is the reference (engine="interpret").

Each kernel here is compiled once per host (numba's disk cache keeps it: a later run loads it)."""

import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import warpsim.ptx as wp
from warpsim.ptx import workers
from warpsim.ptx.translate import TranslationFallbackWarning

ROOT = Path(__file__).resolve().parents[1]
#: compiled kernels that take a path another test here compiles already (each first compile costs a minute of
#: numba on a 2-core host, and the CI suite must stay under 15 minutes): WARPSIM_NATIVE_ALL=1 runs them too
REPEATS_A_PATH = pytest.mark.skipif(os.environ.get("WARPSIM_NATIVE_ALL") != "1",
                                    reason="repeats a compiled path another test covers; WARPSIM_NATIVE_ALL=1 runs it")
KERNELS = ROOT / "benchmarks" / "kernels"
FORMS = Path(__file__).resolve().parent / "ptx" / "data" / "native_forms.ptx"
COMPILED = Path(__file__).resolve().parent / "ptx" / "compiled"


def _both(mod, entry, grid, block, make_args, shared=0, arch="sm_90"):
    """Output words of the interpreter and of the compiled kernel, for fresh arguments each."""
    words = {}
    for engine in ("interpret", "compiled"):
        args, outs = make_args()
        mod.launch(entry, grid, block, args, shared, engine=engine, workers=1, arch=arch)
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


_ACTIVEMASK = """.version 8.0
.target sm_90
.address_size 64
.visible .entry masks(.param .u64 out)
{
    .reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .pred %p<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r5, 0;
    mov.u32 %r6, 0;
    and.b32 %r2, %r1, 3;
    setp.eq.u32 %p1, %r2, 0;
    setp.lt.u32 %p2, %r1, 40;
    @%p1 bra QUARTER;
    activemask.b32 %r5;
    bra.uni JOIN;
QUARTER:
    @%p2 activemask.b32 %r6;
JOIN:
    activemask.b32 %r7;
    st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r1};
    ret;
}
"""


def test_activemask_gives_the_lanes_executing_it():
    """activemask on the compiled engine: the lanes of a divergent path, of a guarded statement (only the lanes
    whose guard holds), and all lanes again where the paths meet; the interpreter's words, and the masks the
    paths say (test_ptx_simt.py checks the interpreter's against the PTX rules)."""
    mod = wp.load(_ACTIVEMASK)
    assert mod.translation("masks").native, mod.translation("masks").reason

    def make():
        out = np.zeros(64 * 4, np.uint32)
        return [out], [out]

    w = _both(mod, "masks", 1, 64, make)
    assert np.array_equal(w["interpret"][0], w["compiled"][0])
    got = w["compiled"][0].reshape(64, 4)
    lane = np.arange(64) % 32
    quarter = lane % 4 == 0
    assert (got[:, 0] == np.where(quarter, 0, 0xEEEEEEEE)).all()
    assert (got[:, 1] == np.where(quarter & (np.arange(64) < 40), np.where(np.arange(64) < 32, 0x11111111, 0x11),
                                  0)).all()
    assert (got[:, 2] == 0xFFFFFFFF).all()


@pytest.mark.parametrize("reg", ["%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo"])
def test_special_registers_the_translator_lacks_are_refused_not_read_as_registers(reg):
    """The interpreter's clocks count its scheduler steps; the translator does not keep them, so a kernel reading
    one runs on the interpreter, the reason naming the register (the 32-bit clocks were read as ordinary, zeroed
    registers before)."""
    bits = 64 if reg in ("%clock64", "%globaltimer") else 32
    text = _ACTIVEMASK.replace("activemask.b32 %r7;", f"mov.u{bits} %r{'d3' if bits == 64 else '7'}, {reg};")
    text = text.replace(".reg .b64 %rd<4>;", ".reg .b64 %rd<5>;")
    tr = wp.load(text).translation("masks")
    assert not tr.native and f"special register {reg}" in tr.reason, tr.reason


@pytest.mark.parametrize("how", [{}, {"cluster": (2, 1, 1)}, {"cluster": (1, 1, 1)}])
def test_is_explicit_cluster_is_the_launchs(how):
    """%is_explicit_cluster on the compiled engine: 1 when the launch names a cluster (cluster=, even of one CTA),
    0 otherwise, as the interpreter has it (the PTX ISA's rule); a launch argument of the kernel, not compiled
    into it: both launches run one build."""
    text = _ACTIVEMASK.replace("activemask.b32 %r7;", "mov.u32 %r7, %is_explicit_cluster;").replace(
        ".target sm_90", ".target sm_90a")
    mod = wp.load(text)
    assert mod.translation("masks").native, mod.translation("masks").reason
    got = {}
    for engine in ("interpret", "compiled"):
        out = np.zeros(4 * 64 * 2, np.uint32)
        mod.launch("masks", 2, 64, [out], engine=engine, **how)
        got[engine] = out.reshape(-1, 4)
    assert (got["compiled"] == got["interpret"]).all()
    assert (got["compiled"][:64, 2] == (1 if how else 0)).all()      # (both CTAs write rows 0-63)


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


#: f64 words: NaN (quiet, signalling, negative), infinities, zeros, subnormals, the largest, 1, the smallest normal
SPECIALS64 = np.array([0x7FF8000000000000, 0xFFF0000000000001, 0x7FF4000000000123, 0x7FF0000000000000,
                       0xFFF0000000000000, 0x8000000000000000, 0, 1, 0x800FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF,
                       0x3FF0000000000000, 0x0010000000000000, 0x3FEFFFFFFFFFFFFF], np.uint64)


def _special_words64(rng, n):
    """f64 words: ordinary values, random words, SPECIALS64, halves (ties of the integer roundings), values past
    the 32- and 64-bit integer ranges, [0, 1]."""
    w = rng.standard_normal(n).view(np.uint64)
    pick = rng.integers(0, 7, n)
    w = np.where(pick == 1, rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1), w)
    w = np.where(pick == 2, SPECIALS64[rng.integers(0, len(SPECIALS64), n)], w)
    w = np.where(pick == 3, (rng.integers(-20, 20, n) + 0.5).view(np.uint64), w)
    w = np.where(pick == 4, (rng.standard_normal(n) * 2.0 ** rng.integers(20, 70, n)).view(np.uint64), w)
    w = np.where(pick == 5, rng.random(n).view(np.uint64), w)
    return w


def test_scalar_forms_equal_the_interpreter():
    """tests/ptx/data/native_forms2.ptx: bfi, f64 arithmetic, float conversions, directed / .ftz / .sat f32
    arithmetic, narrower loads, shfl.sync with a predicate destination and register membermasks, vote / redux,
    integer atomics (exch / cas / inc / dec with one update for every lane), mul.hi, f16 / bf16 add / sub / mul /
    fma.rn and their widening to f32 / f64."""
    mod = wp.load((FORMS.parent / "native_forms2.ptx").read_text())
    assert mod.translation("forms2").native, mod.translation("forms2").reason
    rng = np.random.default_rng(33)
    n = 2 * 64
    x = np.zeros((n, 4), np.uint64)
    x[:, :2] = _special_words(rng, 4 * n).view(np.uint64).reshape(n, 2)
    x[:, 2:] = _special_words64(rng, 2 * n).reshape(n, 2)
    x[: n // 4, 2:] = SPECIALS64[rng.integers(0, len(SPECIALS64), (n // 4, 2))]     # two specials met (NaN rules)
    counters = np.array([0, 0x80000000, 0xFFFFFFFF, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0, 7, 90, 3, 0, 0],
                        np.uint32)

    def make():
        out, cnt = np.zeros(n * 112, np.uint32), counters.copy()
        return [out, x, cnt], [out, cnt]

    w = _both(mod, "forms2", 2, 64, make)
    for k, name in enumerate(("outputs", "counters")):
        a, b = w["interpret"][k], w["compiled"][k]
        bad = np.nonzero(a != b)[0]
        assert len(bad) == 0, f"{name}: {len(bad)} words differ, first at word {bad[0] % 112} of thread {bad[0] // 112}"
    assert w["compiled"][1][10:14].tolist() == [5, 9, (90 + n) % 101, (3 - n) % 31]
    words = w["compiled"][0].reshape(n, 112)
    halves = words[:, 100:102].view(np.uint16)
    assert (halves == 0x7FFF).any() and (words[:, 102] == 0x7FFFFFFF).any()     # f16 NaN results and widenings
    written = (words != 0).any(axis=0)
    assert np.nonzero(~written)[0].tolist() == [31, 74]     # the zero-extending load's top, MUFU.RCP64H's low word


def test_calls_and_generic_addresses_equal_the_interpreter():
    """tests/ptx/data/native_calls.ptx: .func calls inlined (b32 / b64 parameters, divergence, an early ret, a
    nested call, a widened param0), generic ld / st / red on global and shared memory."""
    mod = wp.load((FORMS.parent / "native_calls.ptx").read_text())
    assert mod.translation("calls").native, mod.translation("calls").reason
    x = _special_words(np.random.default_rng(34), 128)

    def make():
        out = np.zeros(514, np.uint32)
        return [out, x], [out]

    w = _both(mod, "calls", 2, 64, make)
    a, b = w["interpret"][0], w["compiled"][0]
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ, first at {np.nonzero(a != b)[0][:8]}"
    steps = a[:512].reshape(128, 4)[:, 0]
    assert (steps == 777).any() and ((steps != 777) & (steps != 0)).any() and a[512] == (x & 1).sum()
    assert a[513] == 0          # twice(p) == 2p, and cvta.to.shared undoes cvta.shared


def test_local_memory_equals_the_interpreter():
    """tests/ptx/data/native_local.ptx: an entry's .local depot (%SPL / %SP, ld / st.local of bytes, words and
    vectors, generic ld / st in the local window, cvta.local and back), a callee's .local word saved and restored
    around its calls; then an access past the thread's local memory and a misaligned one: the interpreter's
    error, line and words."""
    mod = wp.load((FORMS.parent / "native_local.ptx").read_text())
    assert mod.translation("local_forms").native, mod.translation("local_forms").reason

    def make(bad=0xFFFFFFFF, badoff=0):
        def args():
            out = np.zeros(2 * 64 * 16, np.uint32)
            return [out, bad, badoff], [out]
        return args

    w = _both(mod, "local_forms", 2, 64, make())
    a, b = w["interpret"][0], w["compiled"][0]
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ, first at {np.nonzero(a != b)[0][:8]}"
    t = a.reshape(128, 16)
    assert (t[:, 10] == 32).all() and (t[:, 11] == 32).all()       # the callee's word: 0 before each call
    assert (t[:, 8] == 0).all() and (t[:, 9] == 0x8100).all()       # %SP: the local window's first address
    for badoff, words in ((40, r"local address 0x28 \(lane 5, 4 bytes\) is outside the thread's 40 bytes"),
                          (2, r"address 0x810000000002 of lane 5 is not aligned to 4 bytes")):
        errors = {}
        for engine in ("interpret", "compiled"):
            with pytest.raises(wp.PTXError, match=words) as err:
                args, _ = make(69, badoff)()
                mod.launch("local_forms", 2, 64, args, engine=engine, workers=1)
            errors[engine] = err.value
        assert errors["compiled"].reason == "local_forms (compiled engine): " + errors["interpret"].reason
        assert errors["compiled"].line == errors["interpret"].line == 106


#: wmma.mma forms of tests/ptx/data/cap_wmma_mma.npz (with their wmma.load / wmma.store): each shape, the engine's
#: three mma paths, both layouts, .satfinite, f16 C with f32 D and f32 C with f16 D (bf16 takes the tensor-core path
#: wmma_gemm_epilogue takes, s8 the integer one of u8)
WMMA_CAPTURES = ["row.col.m8n32k16.s32.u8.u8.s32.satfinite", "col.row.m16n16k8.f32.tf32.tf32.f32",
                 "row.col.m16n16k16.f32.f16", "col.row.m8n32k16.f16.f32",
                 pytest.param("col.col.m32n8k16.f32.bf16.bf16.f32", marks=REPEATS_A_PATH),
                 pytest.param("row.row.m16n16k16.s32.s8.s8.s32", marks=REPEATS_A_PATH)]


@pytest.mark.parametrize("form", WMMA_CAPTURES)
def test_wmma_compiled_gives_the_h100_words(form, monkeypatch):
    """test_ptx_captures' replay of a captured wmma.mma form (its kernel, inputs and H100 words) on the compiled
    engine (WARPSIM_PTX_ENGINE=compiled; a fallback warns, an error here)."""
    from test_ptx_captures import _recs, test_wmma_mma_capture
    from warpsim.ptx.native import kernel

    (rec,) = [r.values[0] for r in _recs("wmma_mma") if r.values[0]["op"] == "wmma.mma.sync.aligned." + form]
    monkeypatch.setenv("WARPSIM_PTX_ENGINE", "compiled")
    before = kernel.LAUNCHES[0]
    test_wmma_mma_capture(rec)
    assert kernel.LAUNCHES[0] == before + 1


def test_a_group_that_makes_arrays_unannounced_is_compiled_with_reference_counting(tmp_path):
    """Group functions are compiled without numba's reference counting unless a statement says its code makes
    arrays (Lowered.refcounted, the wmma rows): a row that does not say so fails that compile, and the kernel is
    compiled again with reference counting in every group (remembered beside its key) -- the H100's words.  In
    a fresh interpreter: a runtime function another test compiled first (with reference counting) would not fail."""
    import subprocess
    import sys

    code = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
os.environ["WARPSIM_NATIVE_CACHE"] = {str(tmp_path)!r}
os.environ["WARPSIM_PTX_ENGINE"] = "compiled"
from warpsim.ptx.native import kernel, lower
lower.Operands.refcounted = property(lambda self: False, lambda self, v: None)
from test_ptx_captures import _recs, test_wmma_mma_capture
(rec,) = [r.values[0] for r in _recs("wmma_mma")
          if r.values[0]["op"] == "wmma.mma.sync.aligned.row.col.m8n32k16.s32.u8.u8.s32.satfinite"]
test_wmma_mma_capture(rec)
assert kernel.LAUNCHES[0] == 1
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list(tmp_path.glob("*.refcount"))) == 1


#: what the cached-kernel test runs: a wmma capture and an nvcc mma.sync GEMM (the tensor-core kernel called from
#: the wmma and the mma.sync wrappers)
_BY_SYMBOL = {
    "wmma": """
from test_ptx_captures import _recs, test_wmma_mma_capture
(rec,) = [r.values[0] for r in _recs("wmma_mma")
          if r.values[0]["op"] == "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"]
test_wmma_mma_capture(rec)
""",
    "mma_sync": """
import numpy as np
from test_ptx_kernels import CASES, KOUT, launch_case
(case,) = [c for c in CASES if c["key"] == "ldm_small1"]
outs, _, _ = launch_case(case, engine="compiled", workers=1)
for suffix, got in outs.items():
    assert np.array_equal(got, KOUT[case["key"] + suffix]), suffix
"""}


@pytest.mark.parametrize("form", sorted(_BY_SYMBOL))
def test_a_cached_kernel_finds_the_tensor_core_kernel_it_calls_by_symbol(tmp_path, form):
    """A compiled kernel calls the float tensor-core kernel by its symbol (engine/linking.py), and its built marker
    lists that symbol: a second interpreter loads the cached builds and then the kernel (never compiling it), and
    gives the H100's words; when a listed build is not there (here: a marker naming another), the kernel is
    compiled again instead of loaded (a missing symbol would be a crash, not an error)."""
    import subprocess
    import sys

    code = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
os.environ["WARPSIM_NATIVE_CACHE"] = {str(tmp_path)!r}
os.environ["WARPSIM_PTX_ENGINE"] = "compiled"
from warpsim.ptx.native import kernel
{_BY_SYMBOL[form]}
assert kernel.LAUNCHES[0] == 1
print(sorted(kernel.COMPILED_WHY.values()))
print(sum(kernel.COMPILE_SECONDS.values()))
"""
    whys = []

    def run():
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        whys.append(done.stdout.splitlines()[-2])
        return float(done.stdout.split()[-1])

    first, second = run(), run()
    assert second < first / 3, (first, second)        # loaded from the cache, not compiled again
    assert "not built here before" in whys[0] and whys[1] == "[]", whys        # kernel.COMPILED_WHY
    (marker,) = tmp_path.glob("*.built")
    symbols = marker.read_text().split()
    # the tensor-core kernel and the set-up every kernel runs once a launch (engine/linking.py's callers)
    assert any("tc_one_matrix" in x for x in symbols), symbols
    assert any("launch_state" in x for x in symbols) and any("sync_state" in x for x in symbols), symbols
    marker.write_text("\n".join(x.replace("tc_one_matrix", "tc_one_gone") for x in symbols) + "\n")
    third = run()
    assert third > 3 * second, (second, third)        # compiled again
    assert "a build it calls by symbol is missing" in whys[2], whys
    assert marker.read_text().split() == symbols


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


def test_triton_flash_attention_equals_the_interpreter():
    """benchmarks/kernels' sm_90a flash attention (wgmma from shared-memory descriptors and from registers, the
    online softmax): two query blocks of one head over two key blocks."""
    mod = wp.load((KERNELS / "triton_attention_f16_sm90a.ptx").read_text())
    n, d = 128, 64
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))

    def make():
        out = np.zeros((n, d), np.float32)
        z = [np.zeros(64, np.uint8), np.zeros(64, np.uint8)]
        return [out, q.view(np.uint16), k.view(np.uint16), v.view(np.uint16), n, 1 / np.sqrt(d), *z], [out]

    w = _both(mod, "attention", (n // 64, 1, 1), 128, make, 16384)
    assert np.array_equal(w["interpret"][0], w["compiled"][0])
    s = q.astype(np.float32) @ k.astype(np.float32).T / np.sqrt(d)         # and it is attention
    p = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(w["compiled"][0].view(np.float32), p / p.sum(axis=1, keepdims=True) @ v.astype(np.float32),
                       atol=2e-3)
    args, _ = make()
    with pytest.warns(TranslationFallbackWarning, match="wgmma_strict=True: the wgmma hazard checks are the interp"):
        mod.launch("attention", (n // 64, 1, 1), 128, args, 16384, engine="compiled", wgmma_strict=True, workers=1)
    assert mod.last_engine["engine"] == "interpret"


@pytest.mark.parametrize("name", ["triton_f16_f32acc_masked_sm90",
                                  pytest.param("triton_f16_f16acc_sm90", marks=REPEATS_A_PATH)])
def test_triton_sm90a_gemms_compiled_give_the_h100_words(name):
    """tests/ptx/compiled's sm_90a Triton GEMMs (wgmma from descriptors; the f16 accumulator's kernel packs halves
    with mov and reads D between commit_group and wait_group) on the compiled engine: the words of
    tests/ptx/data/compiled_kernels.npz (an H100)."""
    from warpsim.hw.golden import open_golden

    sys.path.insert(0, str(COMPILED))
    from cases import CASES, inputs

    bufs, make_args, grid, block, shared, outs = inputs(name)
    gm = wp.GlobalMemory()
    addr = {k: gm.map(v) for k, v in bufs.items()}
    mod = wp.load(COMPILED / CASES[name]["ptx"])
    mod.launch(CASES[name]["entry"], grid, block, make_args(addr), shared, memory=gm, engine="compiled", workers=1)
    assert mod.last_engine["engine"] == "compiled", mod.last_engine
    cap = open_golden(Path(__file__).resolve().parent / "ptx" / "data" / "compiled_kernels.npz")
    for o in outs:
        want = cap[f"{name}/{o}"]
        assert int((bufs[o].view(want.dtype) != want).sum()) == 0, o


def _wgmma_descriptors():
    from warpsim.isa import smem

    return np.array([smem.dense_layout(64, 16, "K")[0], smem.dense_layout(16, 16, "K", start=2048)[0],
                     smem.dense_layout(64, 16, "K", "128B", start=4096)[0],
                     smem.dense_layout(16, 16, "K", "64B", start=12288)[0]], np.uint64)


def _wgmma_forms_kernel():
    """One warpgroup: 16 KB of input bytes copied to shared memory, then wgmma forms over them through 4 descriptors
    read from global memory (_wgmma_descriptors) -- f16 (imm-scale -1, MN-major B; chained on a predicate scale-d
    through 128B / 64B-swizzled descriptors), bf16 (MN-major A), tf32, e4m3 x e5m2 -> f16, s8 x u8, f16 with A from
    registers -- each thread's D words stored."""
    copy = "\n".join(f"\tld.global.v4.b32 {{%r10, %r11, %r12, %r13}}, [%rd4+{2048 * i}];\n"
                     f"\tst.shared.v4.b32 [%r4+{2048 * i}], {{%r10, %r11, %r12, %r13}};" for i in range(8))
    regs = lambda a, n: "{" + ", ".join(f"%r{a + i}" for i in range(n)) + "}"      # noqa: E731
    forms = [("m64n16k16.f32.f16.f16", regs(20, 8), "%rd10, %rd11, 0, -1, 1, 0, 1"),
             ("m64n16k16.f32.f16.f16", regs(20, 8), "%rd12, %rd13, %p1, 1, 1, 0, 0"),
             ("m64n16k16.f32.bf16.bf16", regs(30, 8), "%rd10, %rd11, 0, 1, 1, 1, 0"),
             ("m64n16k8.f32.tf32.tf32", regs(40, 8), "%rd10, %rd11, 0, 1, -1"),
             ("m64n16k32.f16.e4m3.e5m2", regs(50, 4), "%rd10, %rd11, 0, 1, 1"),
             ("m64n16k32.s32.s8.u8", regs(60, 8), "%rd10, %rd11, 0"),
             ("m64n16k16.f16.f16.f16", regs(70, 4), "{%r10, %r11, %r12, %r13}, %rd11, 0, 1, 1, 0")]
    mma = "\n".join(f"\twgmma.mma_async.sync.aligned.{op} {d}, {rest};" for op, d, rest in forms)
    words = [r for _, d, _ in forms[1:] for r in d.strip("{}").split(", ")]
    store = "\n".join(f"\tst.global.b32 [%rd6+{4 * i}], {r};" for i, r in enumerate(words))
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry wg(.param .u64 out, .param .u64 inp, .param .u64 dsc)
{{
\t.reg .pred %p<3>;
\t.reg .b32 %r<80>;
\t.reg .b64 %rd<20>;
\t.shared .align 1024 .b8 smem[16384];
\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [inp];
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd3, %r1, 16;
\tadd.s64 %rd4, %rd2, %rd3;
\tmov.u32 %r2, smem;
\tmad.lo.u32 %r4, %r1, 16, %r2;
{copy}
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
\tsetp.ne.u32 %p1, %r1, 999;
\tld.param.u64 %rd7, [dsc];
\tld.global.b64 %rd10, [%rd7];
\tld.global.b64 %rd11, [%rd7+8];
\tld.global.b64 %rd12, [%rd7+16];
\tld.global.b64 %rd13, [%rd7+24];
\twgmma.fence.sync.aligned;
{mma}
\twgmma.commit_group.sync.aligned;
\twgmma.wait_group.sync.aligned 0;
\tmul.wide.u32 %rd5, %r1, {4 * len(words)};
\tadd.s64 %rd6, %rd1, %rd5;
{store}
\tret;
}}
""", len(words)


def test_wgmma_forms_equal_the_interpreter():
    text, nw = _wgmma_forms_kernel()
    mod = wp.load(text)
    assert mod.translation("wg").native, mod.translation("wg").reason
    rng = np.random.default_rng(5)
    x = rng.standard_normal(8192).astype(np.float16).view(np.uint16)

    def make():
        out = np.zeros(128 * nw, np.uint32)
        return [out, x, _wgmma_descriptors()], [out]

    w = _both(mod, "wg", 1, 128, make)
    a, b = w["interpret"][0].reshape(128, nw), w["compiled"][0].reshape(128, nw)
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ, in columns {sorted(set(np.nonzero(a != b)[1]))}"
    assert (a != 0).all(axis=0).sum() > nw // 2          # outputs, not zeros


def test_wgmma_descriptor_outside_shared_memory_names_the_line():
    from warpsim.isa import smem

    text, nw = _wgmma_forms_kernel()
    mod = wp.load(text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "wgmma.mma_async" in x)
    descs = _wgmma_descriptors()
    descs[1] = smem.dense_layout(16, 16, "K", start=16384 - 256)[0]        # B's last core matrices lie past the end
    args = [np.zeros(128 * nw, np.uint32), np.zeros(8192, np.uint16), descs]
    with pytest.raises(wp.PTXError, match=r"reads shared-memory bytes up to 16640, but smem holds 16384") as err:
        mod.launch("wg", 1, 128, args, engine="interpret")
    assert err.value.line == line
    with pytest.raises(wp.PTXError, match=r"address 0x4000 \(thread 0\) lies outside every mapped array / the CTA's "
                                          r"shared memory") as err:
        mod.launch("wg", 1, 128, args, engine="compiled")
    assert err.value.line == line


#: H100 captures of wgmma (tests/golden: file, entry) replayed by one compiled kernel.  Sparse (wgmma_sp_sm90a*.npz):
#: every family and D type, A from registers (16-, 8- and 32-bit elements) and through descriptors, both selectors,
#: imm-trans, imm-scale -1, a scale-d 0 group, N = 8, 16 and 72, special values and random metadata (repeated
#: indices).  Dense (wgmma_sm90a_numerics.npz, wgmma_sm90a.npz): A from registers of tf32, fp8 and 8-bit integer
#: elements (satfinite, imm-scale -1, scale-d 0 groups), b1 (.and.popc) from registers and descriptors
WGMMA_CAPTURES = [("wgmma_sp_sm90a", j) for j in (0, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17, 26, 27, 29, 32, 33, 40, 41,
                                                  60, 69, 75, 77, 97, 104, 105, 110, 111)] + \
    [("wgmma_sp_sm90a_cover", 1), ("wgmma_sp_sm90a_wide", 0), ("wgmma_sp_sm90a_wide", 1)] + \
    [("wgmma_sm90a_numerics", j) for j in (6, 8, 16, 24, 30, 40, 41, 149, 155)] + [("wgmma_sm90a", 608)]


def _wgmma_case(name, j):
    """(spec, kernel arguments but ``which``, G, D words a thread, H100 D words) of a capture entry."""
    import json

    from warpsim.api.wgmma import corpus_call
    from warpsim.hw.golden import open_golden

    z = open_golden(str(ROOT / "tests" / "golden" / f"{name}.npz"))
    spec = json.loads(bytes(z["manifest"]))["entries"][j]["spec"]
    op, d, a, b, kw = corpus_call(z, j, spec)
    G = d.shape[0]
    smem = np.ascontiguousarray(kw["smem"])
    desc = np.stack([z[f"{j}.desc"][:, 0] + np.uint64(int(z[f"{j}.base"][0]) >> 4), b], axis=1).astype(np.uint64)
    regs = np.ascontiguousarray(a if a.dtype == np.uint32 and a.ndim == 3 else np.zeros((G, 128, 4), np.uint32))
    meta = kw.get("e", np.zeros((G, 128), np.uint32))
    args = [smem, smem.shape[1], np.ascontiguousarray(desc), kw["scale_d"].astype(np.uint32), regs,
            np.ascontiguousarray(meta), d.copy()]
    return spec, args, G, z[f"{j}.dout"]


def _wgmma_captures_kernel(specs, smem_bytes):
    """One warpgroup a CTA: its shared-memory image copied in, its A and B descriptors, scale-d, metadata word and
    A registers loaded, then form ``which`` of ``specs``: D loaded, the wgmma (dense or .sp), D stored (valid PTX for
    ptxas)."""
    import warpsim
    from warpsim.hw.wgmma_capture import Spec, immediates

    blocks = []
    for f, spec in enumerate(specs):
        op, a_src, sa, sb, ta, tb, *sel = spec.split("|")
        meta = f"%r11, {sel[0]}, " if sel else ""
        ins = warpsim.parse(op)
        nd, f32 = ins.words("d"), ins.dtype == "f32"
        v = 4 if nd % 4 == 0 else 2         # D in vector loads and stores (fewer statements to compile)
        dregs = [f"%f{i}" if f32 else f"%r{100 + i}" for i in range(nd)]
        ty = "f32" if f32 else "b32"
        imm = "".join(", " + x for x in immediates(Spec(ins, a_src, int(sa), int(sb), int(ta), int(tb))))
        a = "{%r12, %r13, %r14, %r15}" if a_src == "reg" else "%rd20"
        blocks.append("\n".join(
            [f"$F{f}:", f"\tmul.wide.u32 %rd19, %r10, {4 * nd};", "\tadd.s64 %rd22, %rd6, %rd19;"]
            + [f"\tld.global.v{v}.{ty} {{{', '.join(dregs[i:i + v])}}}, [%rd22+{4 * i}];" for i in range(0, nd, v)]
            + ["\twgmma.fence.sync.aligned;",
               f"\t{op} {{{', '.join(dregs)}}}, {a}, %rd21, {meta}%p2{imm};",
               "\twgmma.commit_group.sync.aligned;", "\twgmma.wait_group.sync.aligned 0;"]
            + [f"\tst.global.v{v}.{ty} [%rd22+{4 * i}], {{{', '.join(dregs[i:i + v])}}};" for i in range(0, nd, v)]
            + ["\tbra.uni $Lend;"]))
    pick = "\n".join(f"\tsetp.eq.u32 %p3, %r2, {f};\n\t@%p3 bra.uni $F{f};" for f in range(len(specs)))
    return f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry wgcap(.param .u64 img, .param .u32 nbytes, .param .u64 dsc, .param .u64 sdp, .param .u64 ap,
    .param .u64 ep, .param .u64 cd, .param .u32 which)
{{
\t.reg .pred %p<4>;
\t.reg .b32 %r<200>;
\t.reg .f32 %f<64>;
\t.reg .b64 %rd<32>;
\t.shared .align 1024 .b8 buf[{smem_bytes}];
\tld.param.u64 %rd1, [img];
\tld.param.u32 %r1, [nbytes];
\tld.param.u64 %rd2, [dsc];
\tld.param.u64 %rd3, [sdp];
\tld.param.u64 %rd4, [ap];
\tld.param.u64 %rd5, [ep];
\tld.param.u64 %rd6, [cd];
\tld.param.u32 %r2, [which];
\tcvta.to.global.u64 %rd1, %rd1;
\tcvta.to.global.u64 %rd2, %rd2;
\tcvta.to.global.u64 %rd3, %rd3;
\tcvta.to.global.u64 %rd4, %rd4;
\tcvta.to.global.u64 %rd5, %rd5;
\tcvta.to.global.u64 %rd6, %rd6;
\tmov.u32 %r3, %tid.x;
\tmov.u32 %r4, %ctaid.x;
\tmul.wide.u32 %rd7, %r4, %r1;
\tadd.s64 %rd8, %rd1, %rd7;
\tmov.u32 %r5, buf;
\tshl.b32 %r6, %r3, 2;
$Lcopy:
\tsetp.ge.u32 %p1, %r6, %r1;
\t@%p1 bra.uni $Lcopied;
\tcvt.u64.u32 %rd9, %r6;
\tadd.s64 %rd10, %rd8, %rd9;
\tld.global.b32 %r7, [%rd10];
\tadd.s32 %r8, %r5, %r6;
\tst.shared.b32 [%r8], %r7;
\tadd.s32 %r6, %r6, 512;
\tbra.uni $Lcopy;
$Lcopied:
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
\tmul.wide.u32 %rd11, %r4, 16;
\tadd.s64 %rd12, %rd2, %rd11;
\tld.global.b64 %rd20, [%rd12];
\tld.global.b64 %rd21, [%rd12+8];
\tmul.wide.u32 %rd13, %r4, 4;
\tadd.s64 %rd14, %rd3, %rd13;
\tld.global.b32 %r9, [%rd14];
\tsetp.ne.u32 %p2, %r9, 0;
\tmad.lo.s32 %r10, %r4, 128, %r3;
\tmul.wide.u32 %rd15, %r10, 4;
\tadd.s64 %rd16, %rd5, %rd15;
\tld.global.b32 %r11, [%rd16];
\tmul.wide.u32 %rd17, %r10, 16;
\tadd.s64 %rd18, %rd4, %rd17;
\tld.global.v4.b32 {{%r12, %r13, %r14, %r15}}, [%rd18];
{pick}
\tbra.uni $Lend;
{chr(10).join(blocks)}
$Lend:
\tret;
}}
"""


def test_wgmma_captures_compiled_give_the_h100_words():
    """wgmma.mma_async.sp (rt_wgmma.warp_mma_sparse), b1 wgmma and register A of 8- and 32-bit elements in a
    compiled kernel: every D word of WGMMA_CAPTURES' entries the H100's."""
    cases = [_wgmma_case(name, j) for name, j in WGMMA_CAPTURES]
    size = -(-max(c[1][1] for c in cases) // 1024) * 1024
    mod = wp.load(_wgmma_captures_kernel([c[0] for c in cases], size))
    assert mod.translation("wgcap").native, mod.translation("wgcap").reason
    bad = []
    for f, (spec, args, G, dout) in enumerate(cases):
        mod.launch("wgcap", G, 128, args + [f], engine="compiled", workers=1)
        assert mod.last_engine["engine"] == "compiled", mod.last_engine
        if not np.array_equal(args[6], dout):
            bad.append((spec, int((args[6] != dout).sum()), dout.size))
    assert not bad, bad


#: H100 corpus entries (tests/golden/corpus_sm90.npz) of tf32 mma.sp: the exact generic kernel on the warp (metadata
#: that splices B's halves is the exact kernel's), every selector, both metadata spellings, K = 8 and 16
MMA_SP_TF32 = (130, 131, 132, 133, 134, 137, 138, 139, 140, 141)


def _mma_captures_kernel(entries, target="sm_90"):
    """Each thread loads its A, B, C words, metadata word (%r6) and two scale words (%r7, %r8), runs form ``which``
    of ``entries`` ((opcode, the operands after C, A, B, C, D words a thread)) and stores D (valid PTX for
    ptxas)."""
    blocks = []
    for f, (op, tail, na, nb, nc, nd) in enumerate(entries):
        regs = {}
        for role, n, first in (("a", na, 20), ("b", nb, 30), ("c", nc, 40)):
            regs[role] = [f"%r{first + i}" for i in range(n)]
        dregs = [f"%f{i}" for i in range(nd)]
        lines = [f"$F{f}:"]
        for role, param in (("a", 1), ("b", 2), ("c", 3)):
            n = len(regs[role])
            lines += [f"\tmul.wide.u32 %rd10, %r5, {4 * n};", f"\tadd.s64 %rd11, %rd{param}, %rd10;"]
            lines += [f"\tld.global.b32 {r}, [%rd11+{4 * i}];" for i, r in enumerate(regs[role])]
        lines += [f"\t{op} {{{', '.join(dregs)}}}, {{{', '.join(regs['a'])}}}, {{{', '.join(regs['b'])}}}, "
                  f"{{{', '.join(regs['c'])}}}{tail};",
                  f"\tmul.wide.u32 %rd10, %r5, {4 * nd};", "\tadd.s64 %rd11, %rd5, %rd10;"]
        lines += [f"\tst.global.f32 [%rd11+{4 * i}], {r};" for i, r in enumerate(dregs)] + ["\tbra.uni $Lend;"]
        blocks.append("\n".join(lines))
    pick = "\n".join(f"\tsetp.eq.u32 %p1, %r2, {f};\n\t@%p1 bra.uni $F{f};" for f in range(len(entries)))
    params = ", ".join(f".param .u64 p{i}" for i in range(1, 8))
    loads = "\n".join(f"\tld.param.u64 %rd{i}, [p{i}];\n\tcvta.to.global.u64 %rd{i}, %rd{i};" for i in range(1, 8))
    return f""".version 8.7
.target {target}
.address_size 64
.visible .entry mmacap({params}, .param .u32 which)
{{
\t.reg .pred %p<2>;
\t.reg .b32 %r<64>;
\t.reg .f32 %f<8>;
\t.reg .b64 %rd<16>;
{loads}
\tld.param.u32 %r2, [which];
\tmov.u32 %r3, %tid.x;
\tmov.u32 %r4, %ctaid.x;
\tmad.lo.s32 %r5, %r4, 64, %r3;
\tmul.wide.u32 %rd10, %r5, 4;
\tadd.s64 %rd11, %rd4, %rd10;
\tld.global.b32 %r6, [%rd11];
\tadd.s64 %rd11, %rd6, %rd10;
\tld.global.b32 %r7, [%rd11];
\tadd.s64 %rd11, %rd7, %rd10;
\tld.global.b32 %r8, [%rd11];
{pick}
\tbra.uni $Lend;
{chr(10).join(blocks)}
$Lend:
\tret;
}}
"""


def test_tf32_mma_sp_compiled_gives_the_h100_words():
    """tf32 mma.sp / mma.sp::ordered_metadata in a compiled kernel (rt_tc.mma_generic_sparse): every D word of
    MMA_SP_TF32's corpus entries the H100's (56 warps each: normal, finite, special values, random metadata)."""
    from warpsim.cli import verify
    from warpsim.hw import Corpus

    corpus = Corpus(verify.default_corpus())
    cases = [corpus.entry(i) for i in MMA_SP_TF32]
    mod = wp.load(_mma_captures_kernel([(c["opcode"], f", %r6, {c['selector']}", *(c[r].shape[2] for r in "abcd"))
                                        for c in cases]))
    assert mod.translation("mmacap").native, mod.translation("mmacap").reason
    bad = []
    for f, c in enumerate(cases):
        W = c["a"].shape[0]
        d = np.zeros_like(c["d"])
        none = np.zeros((W, 32), np.uint32)
        args = [np.ascontiguousarray(c["a"]), np.ascontiguousarray(c["b"]), np.ascontiguousarray(c["c"]),
                np.ascontiguousarray(c["e"]), d, none, none, f]
        mod.launch("mmacap", W // 2, 64, args, engine="compiled", workers=1)
        assert mod.last_engine["engine"] == "compiled", mod.last_engine
        if not np.array_equal(d, c["d"]):
            bad.append((c["opcode"], c["selector"], int((d != c["d"]).sum())))
    assert not bad, bad


#: block-scaled mma forms of sm_120a (modelled, not verified on hardware: docs/numerics.md): (opcode, byte-id-a,
#: thread-id-a, byte-id-b, thread-id-b, sparse)
BLOCK_SCALED = [
    ("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.f32.e4m3.e4m3.f32.ue8m0", 1, 1, 2, 0, False),
    ("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.f32.e2m1.e3m2.f32.ue8m0", 3, 0, 0, 3, False),
    ("mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", 2, 1, 0, 2,
     False),
    ("mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3", 0, 1, 0, 1,
     False),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::mxf8f6f4.block_scale.f32.e4m3.e5m2.f32.ue8m0",
     1, 0, 3, 2, True),
]


def test_block_scaled_mma_compiled_equals_the_interpreter():
    """Block-scaled mma.sync / mma.sp (sm_120a) in a compiled kernel (rt_tc.mma_generic_scaled: the exact kernel on the
    warp's scale bits): the interpreter's words, on random operand, metadata and scale words (8 warps a form)."""
    import warpsim

    forms = []
    for op, ba, ta, bb, tb, sparse in BLOCK_SCALED:
        ins = warpsim.parse(op, arch="sm_120a")
        assert ins.block_scaled and ins.is_sparse == sparse, op
        tail = (", %r6, 0" if sparse else "") + f", %r7, {{{ba}, {ta}}}, %r8, {{{bb}, {tb}}}"
        forms.append((op, tail, *(ins.registers(r) for r in "abcd")))
    mod = wp.load(_mma_captures_kernel(forms, "sm_120a"))
    assert mod.translation("mmacap").native, mod.translation("mmacap").reason
    rng = np.random.default_rng(12)
    for f, (op, _, na, nb, nc, nd) in enumerate(forms):
        W = 8
        words = {k: rng.integers(0, 2**32, (W, 32, n), dtype=np.uint64).astype(np.uint32)
                 for k, n in (("a", na), ("b", nb), ("c", nc))}
        words["c"] = rng.standard_normal((W, 32, nc)).astype(np.float32).view(np.uint32)
        e = np.full((W, 32), 0x44444444, np.uint32) if "sp" in op else np.zeros((W, 32), np.uint32)
        sa, sb = (rng.integers(100, 150, (W, 32), dtype=np.uint32) * np.uint32(0x01010101) for _ in range(2))

        def make():
            d = np.zeros((W, 32, nd), np.uint32)
            return [words["a"], words["b"], words["c"], e, d, sa, sb, f], [d]

        w = _both(mod, "mmacap", W // 2, 64, make, arch="sm_120a")
        a, b = w["interpret"][0], w["compiled"][0]
        assert np.array_equal(a, b), (op, int((a != b).sum()))
        assert (a != 0).any()


def test_engine_none_uses_a_built_kernel():
    mod = wp.load(FORMS.read_text())
    x = np.zeros(2 * 64 * 4, np.uint32)
    out = np.zeros(2 * 64 * 48, np.uint32)
    mod.launch("forms", 2, 64, [out, x], engine="compiled")       # built (or loaded) by now
    assert mod.translation("forms").ready()
    mod.launch("forms", 2, 64, [out, x])
    assert mod.last_engine == {"entry": "forms", "requested": None, "engine": "compiled", "reason": None}


RECURSION = Path(__file__).parent / "ptx" / "data" / "native_recursion.ptx"


def test_recursive_functions_run_compiled_with_the_interpreters_words():
    """Lanes recursing to different depths (tri), two functions calling each other (is_even / is_odd), a register
    of the entry live across the calls; 2 CTAs of 2 warps.  The words: the interpreter's, and the closed forms."""
    mod = wp.load(RECURSION.read_text())
    assert mod.translation("recursion").native, mod.translation("recursion").reason
    n = (np.arange(64) * 7 % 41).astype(np.uint32)

    def make():
        out = np.zeros(64 * 3, np.uint32)
        return [out, n.copy()], [out]

    w = _both(mod, "recursion", 2, 64, make)
    a, b = w["interpret"][0].reshape(64, 3), w["compiled"][0].reshape(64, 3)
    assert np.array_equal(a, b)
    want = np.stack([3 * n * (n + 1) // 2, (n % 2 == 0).astype(np.uint32), np.arange(64, dtype=np.uint32) * 7], 1)
    assert np.array_equal(b, want)


def test_special_registers_lane_masks_sms_and_shared_sizes():
    """%lanemask_*, %smid / %nsmid, %gridid and the shared sizes: the interpreter's words, and the values they
    stand for (the masks of the lane, the CTA's SM of 132 round robin, 64 static + 256 dynamic shared bytes)."""
    mod = wp.load((Path(__file__).parent / "ptx" / "data" / "native_specials.ptx").read_text())
    assert mod.translation("specials").native, mod.translation("specials").reason

    def make():
        out = np.zeros(3 * 64 * 10, np.uint32)
        return [out], [out]

    words = {}
    for engine in ("interpret", "compiled"):
        args, outs = make()
        mod.launch("specials", 3, 64, args, 256, engine=engine, workers=1)
        assert mod.last_engine["engine"] == engine
        words[engine] = outs[0].reshape(3 * 64, 10)
    assert np.array_equal(words["interpret"], words["compiled"])
    lane = np.arange(3 * 64, dtype=np.uint64) % 32
    eq = (np.uint64(1) << lane).astype(np.uint32)
    lt = eq - np.uint32(1)
    want = np.stack([eq, lt, lt | eq, ~(lt | eq), ~lt, np.repeat(np.arange(3, dtype=np.uint32), 64),
                     np.full(192, 132, np.uint32), np.full(192, 256, np.uint32), np.full(192, 320, np.uint32),
                     np.ones(192, np.uint32)], 1)
    assert np.array_equal(words["compiled"], want)


def test_half_and_packed_half_arithmetic_equals_the_interpreter():
    """add / sub / mul / fma of f16, bf16, f16x2 and bf16x2 (.ftz, .sat, .relu), min / max (.NaN, .xorsign.abs, .ftz;
    f32 too) and neg / abs on ordinary values,
    random words and the special ones (NaN, infinities, subnormals, signed zeros, the largest finite): every word
    the interpreter's (packed_ops, verified on the H100), and the worked sums of test_ptx_alu2's "packed"."""
    mod = wp.load((Path(__file__).parent / "ptx" / "data" / "native_halves.ptx").read_text())
    assert mod.translation("halves").native, mod.translation("halves").reason
    rng = np.random.default_rng(16)
    n = 256
    h = rng.standard_normal(n * 6).astype(np.float16).view(np.uint16)
    pick = rng.integers(0, 5, n * 6)
    special = np.array([0x7C00, 0xFC00, 0x7E00, 0x7D01, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x7BFF, 0x3C00,
                        0xBC00, 0x7F80, 0xFF81, 0x0080, 0x007F], np.uint16)
    h = np.where(pick == 1, rng.integers(0, 65536, n * 6).astype(np.uint16), h)
    h = np.where(pick == 2, special[rng.integers(0, len(special), n * 6)], h)
    words = h.view(np.uint32).copy()
    words[:3] = (0x40003C00, 0x3C003C00, 0)          # 2, 1 + 1, 1 (f16x2)

    def make():
        out = np.zeros(n * 16, np.uint32)
        return [out, words.copy()], [out]

    w = _both(mod, "halves", 2, 128, make)
    a, b = w["interpret"][0].reshape(n, 16), w["compiled"][0].reshape(n, 16)
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ, columns {sorted(set(np.nonzero(a != b)[1]))}"
    assert b[0, 0] == 0x42004000 and b[0, 8] == 0xC000BC00      # add.rn.f16x2, neg.f16x2


def test_f64_mma_on_64_bit_registers_equals_the_interpreter():
    """mma.sync .f64 (m8n8k4, m16n8k4, m16n8k16; A, B, C, D in 64-bit registers, two words each for the engine)
    on normal values and NaN, infinities, signed zeros, subnormals, the largest finite: the interpreter's words
    (its DMMA chain verified on the H100)."""
    mod = wp.load((Path(__file__).parent / "ptx" / "data" / "native_dmma.ptx").read_text())
    assert mod.translation("dmma").native, mod.translation("dmma").reason
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64 * 8)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1.7976931348623157e308])
    x = np.where(rng.integers(0, 6, x.size) == 0, special[rng.integers(0, len(special), x.size)], x)

    def make():
        out = np.zeros(64 * 10, np.float64)
        return [out, x.copy()], [out]

    w = _both(mod, "dmma", 1, 64, make)
    a, b = w["interpret"][0], w["compiled"][0]
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ"
    assert (np.isfinite(b) & (b != 0)).sum() > 64             # outputs, not only NaN or zeros


def test_sparse_mma_equals_the_interpreter():
    """mma.sp and mma.sp::ordered_metadata (f16 / bf16 / e4m3 / s8 inputs, selectors 0-2) on
    normal values, random words (NaN, infinities, subnormals among them) and metadata of valid 2:4 pairs, with
    random words in some lanes: the interpreter's words (its mma.sp forms verified on the H100, test_golden)."""
    mod = wp.load((Path(__file__).parent / "ptx" / "data" / "native_mma_sp.ptx").read_text())
    assert mod.translation("mma_sp").native, mod.translation("mma_sp").reason
    rng = np.random.default_rng(11)
    h = rng.standard_normal(64 * 32).astype(np.float16).view(np.uint32)
    words = np.where(rng.integers(0, 5, h.size) == 0, rng.integers(0, 2**32, h.size, dtype=np.uint64), h)
    pairs = np.array([0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110], np.uint64)
    meta = np.zeros(128, np.uint64)
    for k in range(8):
        meta |= pairs[rng.integers(0, 6, 128)] << np.uint64(4 * k)
    meta[::7] = rng.integers(0, 2**32, meta[::7].size, dtype=np.uint64)
    inp = np.zeros(2304, np.uint32)
    inp[:1024] = words[:1024]
    inp[2048:2176] = meta

    def make():
        out = np.zeros(64 * 16, np.uint32)
        return [out, inp.copy()], [out]

    w = _both(mod, "mma_sp", 1, 64, make)
    a, b = w["interpret"][0].reshape(64, 16), w["compiled"][0].reshape(64, 16)
    assert np.array_equal(a, b), f"{int((a != b).sum())} words differ, columns {sorted(set(np.nonzero(a != b)[1]))}"
    f = b[:, :4].view(np.float32)
    assert (np.isfinite(f) & (f != 0)).sum() > 64               # outputs, not only NaN or zeros


def test_wmma_with_f16_c_and_d_equals_the_interpreter():
    """wmma.mma m16n16k16 .f16.f16 (the f16-accumulating mma, two 16-bit elements a register) with infinities,
    NaN, subnormals and the largest finite among A and C: the interpreter's words (captured forms, wmma.py)."""
    mod = wp.load((Path(__file__).parent / "ptx" / "data" / "native_wmma16.ptx").read_text())
    assert mod.translation("wmma16").native, mod.translation("wmma16").reason
    rng = np.random.default_rng(7)
    A, B, C = (rng.standard_normal(256).astype(np.float16).view(np.uint16) for _ in range(3))
    C[:8] = [0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8000, 0x7BFF, 0x3C00, 0x0000]
    A[20:24] = [0x7BFF, 0x7BFF, 0xFBFF, 0x0001]

    def make():
        out = np.zeros(256, np.uint16)
        return [out, A.copy(), B.copy(), C.copy()], [out]

    w = _both(mod, "wmma16", 1, 32, make)
    assert np.array_equal(w["interpret"][0], w["compiled"][0])
    assert w["compiled"][0].view(np.uint16)[0] == 0x7C00           # +inf in C stays


def test_recursion_deeper_than_the_compiled_frames_is_an_error_naming_the_limit():
    from warpsim.ptx.native.rt import FRAME_DEPTH

    mod = wp.load(RECURSION.read_text())
    n = np.zeros(64, np.uint32)
    n[37] = FRAME_DEPTH + 5
    with pytest.raises(wp.PTXError, match=rf"nested deeper than {FRAME_DEPTH} frames in the warp of thread 32 "
                                          r"\(the compiled engine's limit; engine='interpret' has none\)"):
        mod.launch("recursion", 1, 64, [np.zeros(64 * 3, np.uint32), n], engine="compiled", workers=1)


def test_untranslatable_kernels_fall_back_with_the_reason():
    # a recursive function with .local variables (the interpreter keeps them per call; the compiled engine does not)
    local = (COMPILED / "simt_calls_G.ptx").read_text().replace(
        "\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<8>;\n", "\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<8>;\n"
        "\t.local .align 4 .b8 \tkeep[4];\n", 1)
    assert "keep[4]" in local
    tr = wp.load(local).translation("simt_calls")
    assert not tr.native and "_Z7gcd_recii is recursive and has .local variables" in tr.reason
    lanes = (FORMS.parent / "native_forms2.ptx").read_text().replace("[%rd3+44], %r53, 9", "[%rd3+44], %r10, 9")
    tr = wp.load(lanes).translation("forms2")       # a cas whose compared word differs from lane to lane
    assert not tr.native and "reads %r10, which is not one constant in every thread" in tr.reason
    sparse = (FORMS.parent / "native_mma_sp.ptx").read_text()
    for old, new, why in (
            ("%r26, 0x1;", "%r26, 0x3;", "the sparsity selector '0x3'"),):     # m16n8k32 takes selectors 0 and 1
        tr = wp.load(sparse.replace(old, new, 1)).translation("mma_sp")
        assert not tr.native and why in tr.reason, tr.reason
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


_SPIN = """.version 8.0
.target sm_80
.address_size 64

.visible .entry spin(.param .u64 out, .param .u32 wait)
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r3, [wait];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, 0;
	setp.ne.u32 %p2, %r3, 0;
	@%p2 bra $L_wait;
$L_top:
	add.u32 %r2, %r2, 1;
	st.global.u32 [%rd1], %r2;
	bra.uni $L_top;
$L_wait:
	setp.gt.u32 %p1, %r3, 1;
	@%p1 bra $L_named;
	bar.sync 0, 96;
	ret;
$L_named:
	setp.lt.u32 %p1, %r1, 32;
	@%p1 bra $L_first;
	bar.sync 2, 64;
	ret;
$L_first:
	bar.sync 1, 64;
	ret;
}
"""


def test_compiled_kernels_that_never_finish_stop_with_the_reason():
    """A kernel's loop over its CTAs leaves through one exit (codegen._one_exit: every failure sets a flag and
    breaks out of each loop around it): an endless loop stops at max_steps, a barrier for more threads than the
    CTA has is refused, two warps waiting at two named barriers each for the other are a deadlock; each is an
    error naming the CTA or the line, and the launch returns."""
    mod = wp.load(_SPIN)
    out = np.zeros(1, np.uint32)
    with pytest.raises(wp.PTXError, match=r"did not finish within max_steps statements in CTA \(cluster\) 0"):
        mod.launch("spin", 2, 32, [out, np.uint32(0)], engine="compiled", max_steps=3_000)
    with pytest.raises(wp.PTXError, match=r"did not finish within max_steps"):
        mod.launch("spin", 2, 32, [out, np.uint32(0)], engine="interpret", max_steps=3_000)
    with pytest.raises(wp.PTXError, match=r"PTX line 23: .*thread count 96: it must be a non-zero multiple of 32 "
                                          r"and at most the CTA's threads"):
        mod.launch("spin", 1, 64, [out, np.uint32(1)], engine="compiled")
    with pytest.raises(wp.PTXError, match=r"deadlock in CTA \(cluster\) 0"):
        mod.launch("spin", 1, 64, [out, np.uint32(2)], engine="compiled")


_ANNOUNCED = """.version 8.0
.target sm_80
.address_size 64

.visible .entry announced(.param .u64 out)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	add.u32 %r2, %r1, 770031;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r2;
	ret;
}
"""


def test_a_first_compile_says_so_on_stderr(tmp_path, monkeypatch, capfd):
    """A first compile takes seconds to a minute: with progress (the default where stderr is a terminal) the
    launch says what it compiles and how long it took; a built kernel's launches say nothing."""
    monkeypatch.setenv("WARPSIM_NATIVE_CACHE", str(tmp_path))
    mod = wp.load(_ANNOUNCED)
    out = np.zeros(64, np.uint32)
    mod.launch("announced", 1, 64, [out], engine="compiled", progress=True)
    err = capfd.readouterr().err
    assert re.search(r"warpsim: compiling announced \(\d+ statements\) for 64 threads a run \(its first launch on "
                     r"this host; cached in .*\) \.\.\. \d+\.\d s\n", err), err
    assert (out == np.arange(64) + 770031).all()
    mod.launch("announced", 1, 64, [out], engine="compiled", progress=True)
    mod.launch("announced", 1, 64, [out], engine="compiled")
    assert capfd.readouterr().err == ""


_LANES = """.version 8.0
.target sm_80
.address_size 64

.visible .entry lanes(.param .u64 out, .param .u64 x, .param .u32 bad, .param .u32 n)
{
	.reg .pred %p<3>;
	.reg .b32 %r<14>;
	.reg .b64 %rd<6>;
	.shared .align 4 .b8 sm[4096];
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [x];
	ld.param.u32 %r10, [bad];
	ld.param.u32 %r11, [n];
	mov.u32 %r1, %tid.x;
	mul.lo.u32 %r2, %r1, -1640531535;
	xor.b32 %r3, %r2, %r1;
	shl.b32 %r4, %r3, 3;
	add.u32 %r5, %r4, %r2;
	setp.lt.u32 %p1, %r1, %r11;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd2, %rd3;
	mov.b32 %r6, %r5;
	@%p1 ld.global.b32 %r6, [%rd4];
	shl.b32 %r7, %r1, 2;
	setp.eq.u32 %p2, %r1, %r10;
	selp.b32 %r8, 2, 0, %p2;
	add.u32 %r7, %r7, %r8;
	mov.u32 %r9, sm;
	add.u32 %r9, %r9, %r7;
	st.shared.b32 [%r9], %r6;
	bar.sync 0;
	mov.u32 %r12, %ntid.x;
	sub.u32 %r12, %r12, %r1;
	shl.b32 %r12, %r12, 2;
	add.u32 %r12, %r12, %r9;
	sub.u32 %r12, %r12, %r7;
	ld.shared.b32 %r13, [%r12+-4];
	add.s64 %rd5, %rd1, %rd3;
	st.global.b32 [%rd5], %r13;
	ret;
}
"""


def test_a_kernel_compiled_per_launch_shape_equals_the_interpreter():
    """A kernel is compiled per number of threads a run (its register rows' length is a constant: LLVM runs the
    runs of register-only statements as vector instructions, codegen._vector_runs).  Words of two block sizes
    equal the interpreter's; a misaligned shared store in lane 5 and a guarded global load past its array in
    thread 40, after such runs, stop both engines at the same line and lane."""
    mod = wp.load(_LANES)
    rng = np.random.default_rng(5)
    for block in (64, 96):
        x = rng.integers(0, 2**32, 80, dtype=np.uint64).astype(np.uint32)

        def make():
            out = np.zeros(block, np.uint32)
            return [out, x, 999, 70], [out]

        w = _both(mod, "lanes", 1, block, make)
        assert np.array_equal(w["interpret"][0], w["compiled"][0])
        assert len(set(w["compiled"][0].tolist())) == block
        assert mod.translation("lanes").ready(block)
    for args, line, interp, comp in (
            ([np.zeros(64, np.uint32), np.zeros(80, np.uint32), 5, 70], 31, "lane 5 is not aligned",
             "lane 5 is not aligned"),
            ([np.zeros(96, np.uint32), np.zeros(40, np.uint32), 999, 70], 24, "lane 8, 4 bytes",
             r"\(thread 40\) lies outside every mapped array")):
        for engine, msg in (("interpret", interp), ("compiled", comp)):
            with pytest.raises(wp.PTXError, match=msg) as err:
                mod.launch("lanes", 1, args[0].size, args, engine=engine, workers=1)
            assert err.value.line == line


def test_sfu_forms_are_the_hardware_words():
    """The translator's table of special-function forms (engine form code, .ftz, tables, fit), run through the
    lane kernel the compiled code calls, gives the words the H200 wrote for the sweep's samples."""
    from warpsim.engine import sfu
    from warpsim.hw.device.sfu_sweep import operands_at
    from warpsim.hw.golden import open_golden
    from warpsim.ptx.native.kernel import _table
    from warpsim.ptx.native.lower import sfu_fit, sfu_forms

    from warpsim.ptx import sfu_ops

    samples = open_golden(ROOT / "tests" / "golden" / "sfu_samples.npz")
    checked = 0
    for form, (code, ftz, t0, t1, n) in sfu_forms().items():
        if form + ".words" in samples.files:
            index, want = samples[form + ".index"], samples[form + ".words"]
            ops = [np.ascontiguousarray(x, np.uint32) for x in operands_at(form, index)]
            checked += 1
        else:   # swept before the samples were kept: the numpy model, 0 words off the H200 over all 2**32
            ops = [_special_words(np.random.default_rng(k), 4096) for k in range(n)]
            index, want = np.arange(4096), sfu_ops.FORMS[form][0](*ops)
        a, b = ops[0], ops[1] if n == 2 else ops[0]
        seg = sfu.table("ex2_seg") if t0 == "ex2_pos" else np.zeros((2, 1))
        got = np.zeros(len(a), np.uint32)
        sfu.f32_range(code, ftz, a, b, got, 0, len(a), sfu.table(t0), sfu.table(t1 or t0), seg,
                      *(_table(t) for t in sfu_fit(code)), np.zeros(32), np.zeros(32, np.int64),
                      np.zeros(32, np.uint8), np.zeros(32, np.int64))
        bad = np.nonzero(got != want)[0]
        assert len(bad) == 0, f"{form}: {len(bad)} of {len(a)} differ, first operand index {int(index[bad[0]]):#x}"
    assert checked >= 6


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


@pytest.mark.parametrize("case", ["layernorm", pytest.param("grouped_gemm", marks=REPEATS_A_PATH)])
def test_triton_tutorial_kernels_compiled_give_the_hopper_words(monkeypatch, case):
    """tests/golden/triton_driver_sm90.npz's layernorm (loops over the columns: uniform branches) and grouped GEMM
    (wgmma from descriptors, a loop over the groups' tiles)."""
    _driver_case_compiled(monkeypatch, "CASES", case, "triton_driver_sm90.npz")


# ---------------------------------------------------------------------------------------------
# the warp-level tensor-core path (warpsim.ptx.native.lower_mma): mma.sync, ldmatrix / stmatrix, cp.async

COMPILED = Path(__file__).resolve().parent / "ptx" / "compiled"
CAPTURE = Path(__file__).resolve().parent / "ptx" / "data" / "compiled_kernels.npz"


#: a kernel's first compile takes about a minute on a 2-core host: bf16 takes the tensor-core path (and
#: ldmatrix .trans), s8 the integer one (8-bit loads, prmt); the tf32 (cp.async.ca) and e4m3 GEMMs of the same
#: directory give their captured words too
GEMMS = ["triton_bf16_f32acc_masked_sm80", "triton_s8_s32acc_masked_sm80",
         pytest.param("triton_tf32_masked_sm89", marks=REPEATS_A_PATH),
         pytest.param("triton_e4m3_f32acc_sm89", marks=REPEATS_A_PATH)]


@pytest.mark.parametrize("name", GEMMS)
def test_mma_sync_gemms_compiled_give_the_h100_words(name):
    """The committed Triton GEMMs of tests/ptx/compiled (mma.sync, ldmatrix, 8-bit loads, prmt) on the compiled
    engine, its CTAs in runs on two threads, as the H100 ran them (arch sm_90): every output word is the GPU's, which the interpreter gives too
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
    mod.launch(case["entry"], grid, block, make_args(addr), shared, memory=gm, arch="sm_90", engine="compiled",
               workers=2)      # runs of CTAs on two threads, merged
    assert mod.last_engine["engine"] == "compiled" and kernel.LAUNCHES[0] == before + 1
    assert workers.LAST == "merged"
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


@pytest.mark.parametrize("name", [pytest.param("flash_attention_sm80", marks=REPEATS_A_PATH), "attention_bwd_dq"])
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


def test_dropping_a_kernels_cached_build_keeps_other_cpus_builds(tmp_path, monkeypatch):
    """linking.drop_cached removes this CPU's builds of a function from numba's index and leaves the others (an
    AVX2 build shares the index with the host's: emptying it made the other build compile again)."""
    import importlib

    from warpsim.engine import linking

    (tmp_path / "dropmod.py").write_text("from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("dropmod")
    assert mod.f(1) == 2
    cache = mod.f._cache._cache_file
    index = cache._load_index()
    (mine,) = index
    other = (mine[0], ("another cpu",) + tuple(mine[1][1:]), mine[2])
    cache._save_index({**index, other: index[mine]})
    linking.drop_cached(mod.f)
    assert list(cache._load_index()) == [other]


def test_a_call_by_symbol_keeps_literal_builds_and_passes_exceptions_on():
    """linking.unlinked(..., literal=True) builds the callee for the caller's literal arguments (as a linked call
    does: the wgmma warp's sizes and flags), each build its own registered name, and an exception the callee
    raises reaches the caller (its status is passed on, not dropped)."""
    from numba import njit, types

    from warpsim.engine import linking

    @njit
    def scaled(x, k):
        if x < 0:
            raise ValueError("negative x")
        return x * k

    by_symbol = linking.unlinked(scaled, literal=True)

    @njit
    def caller(x):
        return by_symbol(x, 3) + by_symbol(x, 5)

    assert caller(2) == 16
    literal_ks = sorted(sig[1].literal_value for sig in scaled.overloads if isinstance(sig[1], types.Literal))
    assert literal_ks == [3, 5]
    names = {linking._name(scaled, sig) for sig in scaled.overloads}
    assert len(names) == 2 and all(n in linking._NAMES for n in names)
    with pytest.raises(ValueError, match="negative x"):
        caller(-1)


def test_a_kernel_source_written_twice_keeps_its_first_file(tmp_path):
    """Two processes compiling one kernel at once write its source file once: a second write of the same text
    would give the file a new time, and numba would then drop the first process's cached build as stale."""
    import time

    from warpsim.ptx.native.kernel import _write_once

    path = tmp_path / "k.py"
    _write_once(str(path), "x = 1\n")
    first = path.stat().st_mtime_ns
    time.sleep(0.02)
    _write_once(str(path), "x = 1\n")
    assert path.stat().st_mtime_ns == first and [p.name for p in tmp_path.iterdir()] == ["k.py"]
    _write_once(str(path), "x = 2\n")
    assert path.read_text() == "x = 2\n" and [p.name for p in tmp_path.iterdir()] == ["k.py"]
