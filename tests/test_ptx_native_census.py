"""The census of the PTX kernels kept in tests/ and benchmarks/ on the compiled engine (issue 32).

Every entry of every kept .ptx file (linked with what the GPU ran it with: :data:`LINKED`) is in :data:`CENSUS`: it
runs compiled with the interpreter's words --
here, on the inputs its other tests launch it with, every output word also the GPU's where one was captured,
or in the test named -- or it is an expected fallback with its reason (strict: an entry that starts
translating fails the census until it is moved to the runs)."""

import functools
import importlib
from pathlib import Path

import numpy as np
import pytest

import warpsim.ptx as wp
from test_ptx_native import REPEATS_A_PATH

ROOT = Path(__file__).resolve().parents[1]
HERE = "here"        # compared by test_entry_runs_compiled_with_the_interpreters_words


def _fallback(reason):
    return ("falls back", reason)


#: kept .ptx file (relative to the repository) -> HERE, "test_module::test_name" (the test that compares the
#: compiled engine's words), or ("falls back", a fragment of the translator's reason)
CENSUS = {
    "benchmarks/kernels/triton_attention_f16_sm90a.ptx":
        "test_ptx_native::test_triton_flash_attention_equals_the_interpreter",
    "benchmarks/kernels/triton_layernorm_f32_sm90a.ptx": "test_ptx_native::test_triton_kernels_equal_the_interpreter",
    "benchmarks/kernels/triton_softmax_f32_sm90a.ptx": "test_ptx_native::test_triton_kernels_equal_the_interpreter",
    "tests/cuda/numba_ptx/numba_atomic_histogram.ptx": HERE,
    "tests/cuda/numba_ptx/numba_exp_elementwise_f32.ptx": HERE,
    "tests/cuda/numba_ptx/numba_exp_elementwise_f64.ptx": HERE,
    "tests/cuda/numba_ptx/numba_shared_reduce.ptx": HERE,
    "tests/cuda/numba_ptx/numba_stencil_2d.ptx": HERE,
    "tests/cuda/numba_ptx/numba_warp_fp16.ptx": HERE,
    "tests/ptx/compiled/cutlass2/cutlass2_gemm_sm80.ptx": HERE,
    "tests/ptx/compiled/simt_calls.ptx": HERE,
    "tests/ptx/compiled/simt_calls_G.ptx": HERE,
    "tests/ptx/compiled/triton_bf16_f32acc_masked_sm80.ptx":
        "test_ptx_native::test_mma_sync_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/triton_e4m3_f32acc_sm89.ptx":
        "test_ptx_native::test_mma_sync_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/triton_f16_f16acc_sm90.ptx":
        "test_ptx_native::test_triton_sm90a_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/triton_f16_f32acc_masked_sm90.ptx":
        "test_ptx_native::test_triton_sm90a_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/triton_s8_s32acc_masked_sm80.ptx":
        "test_ptx_native::test_mma_sync_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/triton_tf32_masked_sm89.ptx":
        "test_ptx_native::test_mma_sync_gemms_compiled_give_the_h100_words",
    "tests/ptx/compiled/warp_reduce.ptx": HERE,
    "tests/ptx/compiled/warp_reduce_G.ptx": HERE,
    "tests/ptx/compiled/wmma_gemm_epilogue.ptx": HERE,
    "tests/ptx/compiled/wmma_gemm_epilogue_lineinfo.ptx": HERE,
    "tests/ptx/data/match_sync.ptx": "test_ptx_match::test_match_gives_the_gpu_words",
    "tests/ptx/data/native_forms.ptx": "test_ptx_native::test_statement_forms_equal_the_interpreter",
    "tests/ptx/data/native_forms2.ptx": "test_ptx_native::test_scalar_forms_equal_the_interpreter",
    "tests/ptx/data/native_dmma.ptx": "test_ptx_native::test_f64_mma_on_64_bit_registers_equals_the_interpreter",
    "tests/ptx/data/native_mma_sp.ptx": "test_ptx_native::test_sparse_mma_equals_the_interpreter",
    "tests/ptx/data/native_wmma16.ptx": "test_ptx_native::test_wmma_with_f16_c_and_d_equals_the_interpreter",
    "tests/ptx/data/native_halves.ptx": "test_ptx_native::test_half_and_packed_half_arithmetic_equals_the_interpreter",
    "tests/ptx/data/native_specials.ptx": "test_ptx_native::test_special_registers_lane_masks_sms_and_shared_sizes",
    "tests/ptx/data/native_recursion.ptx": "test_ptx_native::test_recursive_functions_run_compiled_with_the_interpreters_words",
    "tests/ptx/data/native_calls.ptx": "test_ptx_native::test_calls_and_generic_addresses_equal_the_interpreter",
    "tests/ptx/data/native_local.ptx": "test_ptx_native::test_local_memory_equals_the_interpreter",
    "tests/ptx/gemm_ldmatrix.ptx": HERE,
    "tests/ptx/gemm_wmma.ptx": HERE,
    "tests/ptx/wgmma_tile.ptx": HERE,
}


@functools.cache
def _numba_shims(name):
    """The PTX of the C++ shims numba-cuda links into a numba-cuda kernel of tests/cuda/numba_ptx (its fp16
    functions: the GPU ran the kernel linked with them), compiled by warpsim.cuda (NVRTC)."""
    import test_cuda  # noqa: F401  (puts tests/cuda on sys.path)
    from numba_kernels import KERNELS
    from warpsim.cuda.jit import Dispatcher

    fn, sig = KERNELS[name]
    return Dispatcher(fn, [sig]).compile(sig).shims


#: kept .ptx files that call functions of other modules -> the PTX texts to link (Module.link), as the GPU ran them
LINKED = {"tests/cuda/numba_ptx/numba_warp_fp16.ptx": lambda: _numba_shims("warp_fp16")}


def _load(path):
    """A kept .ptx file (relative to the repository), linked as LINKED says."""
    mod = wp.load((ROOT / path).read_text())
    return mod.link(*LINKED[path]()) if path in LINKED else mod


def _numba(name):
    """A numba-cuda kernel of tests/cuda/numba_ptx on the inputs the GPU ran (tests/golden/cuda_sm90.npz),
    through warpsim.cuda's argument ABI: (outputs, the captured outputs)."""
    def launch(engine):
        import numba

        from test_cuda import CAPTURE, _inputs
        from numba_kernels import inputs
        from warpsim.cuda.jit import marshal

        args, grid, block, outs = inputs()[name]
        args = _inputs(f"numba_{name}", args)
        abi, _ = marshal(args, [numba.typeof(a) for a in args])
        mod = _load(f"tests/cuda/numba_ptx/numba_{name}.ptx")
        (entry,) = mod.entries
        mod.launch(entry, grid, block, abi, engine=engine, workers=1)
        return {k: args[k] for k in outs}, {k: CAPTURE[f"numba_{name}/out/{k}"] for k in outs}
    return launch


def _wgmma_tile(engine):
    """tests/ptx/wgmma_tile.ptx replaying its numerics-corpus entry, one warpgroup per CTA (test_wgmma's launch)."""
    from test_wgmma import NUMERICS, TILE_PTX, _tile_args, _tile_entry

    e, _ = _tile_entry()
    args, grid = _tile_args(e, 1)
    wp.load(Path(TILE_PTX).read_text()).launch("wgmma_tile", grid=grid, block=128, args=args, engine=engine, workers=1)
    return {"d": args[3].view(np.uint32).reshape(NUMERICS[f"{e}.d"].shape)}, {"d": NUMERICS[f"{e}.dout"]}


def _ptx_kernel(key):
    """A case of tests/ptx/data/kernels.json (tests/ptx/gemm_ldmatrix.ptx, gemm_wmma.ptx) as test_ptx_kernels
    launches it, with the H100's words."""
    def launch(engine):
        from test_ptx_kernels import CASES, KOUT, launch_case

        case = next(c for c in CASES if c["key"] == key)
        outs, _, _ = launch_case(case, engine=engine, workers=1)
        return outs, {k: KOUT[case["key"] + k] for k in outs}
    return launch


def _compiled_case(name):
    """A case of tests/ptx/compiled/cases.py as test_ptx_compiled launches it (its H100 words in
    tests/ptx/data/compiled_kernels.npz)."""
    def launch(engine):
        from test_ptx_compiled import CAPTURE, _run
        from warpsim.hw.golden import open_golden

        bufs, outs = _run(name, engine=engine, workers=1)
        cap = open_golden(CAPTURE)
        return {k: bufs[k] for k in outs}, {k: cap[f"{name}/{k}"] for k in outs}
    return launch


def _cutlass2(engine):
    """tests/ptx/compiled/cutlass2's GEMM on its first dry case (test_cutlass2's launch; its H100 words are
    pending)."""
    from test_cutlass2 import CUTLASS2_CASES, HERE as DRY, PTX, _launch, _read_launch, cutlass3_inputs

    c = CUTLASS2_CASES[0]
    ins = cutlass3_inputs(**{k: c[k] for k in ("dtype", "M", "N", "K", "seed")})
    D = _launch(PTX.read_text(), _read_launch(DRY / "dry_launch0.txt"), (DRY / "dry_params0.bin").read_bytes(),
                ins["A"], ins["B"], ins["C"], c["M"], c["N"], engine=engine, workers=1)
    return {"D": D}, {}


#: how the entries compared here are launched: engine -> (outputs, captured outputs or {})
LAUNCH = {
    "tests/ptx/compiled/cutlass2/cutlass2_gemm_sm80.ptx": _cutlass2,
    "tests/cuda/numba_ptx/numba_atomic_histogram.ptx": _numba("atomic_histogram"),
    "tests/cuda/numba_ptx/numba_exp_elementwise_f32.ptx": _numba("exp_elementwise_f32"),
    "tests/cuda/numba_ptx/numba_exp_elementwise_f64.ptx": _numba("exp_elementwise_f64"),
    "tests/cuda/numba_ptx/numba_shared_reduce.ptx": _numba("shared_reduce"),
    "tests/cuda/numba_ptx/numba_stencil_2d.ptx": _numba("stencil_2d"),
    "tests/cuda/numba_ptx/numba_warp_fp16.ptx": _numba("warp_fp16"),
    "tests/ptx/compiled/simt_calls.ptx": _compiled_case("simt_calls"),
    "tests/ptx/compiled/simt_calls_G.ptx": _compiled_case("simt_calls_G"),
    "tests/ptx/compiled/warp_reduce.ptx": _compiled_case("warp_reduce"),
    "tests/ptx/compiled/warp_reduce_G.ptx": _compiled_case("warp_reduce_G"),
    "tests/ptx/compiled/wmma_gemm_epilogue.ptx": _compiled_case("wmma_gemm_epilogue"),
    "tests/ptx/compiled/wmma_gemm_epilogue_lineinfo.ptx": _compiled_case("wmma_gemm_epilogue_lineinfo"),
    "tests/ptx/gemm_ldmatrix.ptx": _ptx_kernel("ldm_small1"),
    "tests/ptx/gemm_wmma.ptx": _ptx_kernel("wmma1"),
    "tests/ptx/wgmma_tile.ptx": _wgmma_tile,
}


#: entries whose paths other tests compile (each first compile costs seconds to minutes on a 2-core host, and the CI
#: suite must stay under 15 minutes): gemm_ldmatrix (a minute) -- its mma.sync / ldmatrix / stmatrix are the Triton
#: GEMMs' of test_ptx_native, its bfi native_forms2's; gemm_wmma -- its wmma forms are wmma_gemm_epilogue's and the
#: captured forms'; the lineinfo build of wmma_gemm_epilogue is its plain build with line comments; warp_reduce_G
#: the -G build of warp_reduce, its calls inlined (native_calls.ptx has calls); cutlass2 (17 minutes of compiling)
#: the Triton GEMMs', native_forms2's and native_calls' rows; wgmma_tile the wgmma forms' and the sm_90a GEMMs';
#: numba_shared_reduce and numba_stencil_2d native_forms'
REPEATS = {"tests/ptx/gemm_ldmatrix.ptx", "tests/ptx/gemm_wmma.ptx",
           "tests/ptx/compiled/wmma_gemm_epilogue_lineinfo.ptx", "tests/ptx/compiled/warp_reduce_G.ptx", "tests/ptx/compiled/cutlass2/cutlass2_gemm_sm80.ptx",
           "tests/ptx/wgmma_tile.ptx", "tests/cuda/numba_ptx/numba_shared_reduce.ptx",
           "tests/cuda/numba_ptx/numba_stencil_2d.ptx"}


def _kept():
    return sorted(str(p.relative_to(ROOT)) for d in ("tests", "benchmarks") for p in (ROOT / d).rglob("*.ptx"))


def census():
    """(file, entry, its Translation) of every entry of the kept PTX files."""
    out = []
    for f in _kept():
        mod = _load(f)
        out += [(f, e, mod.translation(e)) for e in mod.entries]
    return out


def test_census_names_every_kept_kernel_and_why_it_falls_back():
    rows = census()
    assert sorted({f for f, _, _ in rows}) == sorted(CENSUS), "a kept .ptx file is missing from CENSUS, or gone"
    for f, e, tr in rows:
        how = CENSUS[f]
        if isinstance(how, tuple):
            assert not tr.native, f"{f}:{e} translates now: compare its words (LAUNCH) and make it {HERE!r}"
            assert how[1] in tr.reason, tr.reason
        else:
            assert tr.native, tr.reason
            if how == HERE:
                assert f in LAUNCH
            else:
                module, test = how.split("::")
                assert callable(getattr(importlib.import_module(module), test, None)), how
    assert sum(tr.native for _, _, tr in rows) == 36 and len(rows) == 36


@pytest.mark.parametrize("path", [pytest.param(p, marks=REPEATS_A_PATH) if p in REPEATS else p for p in sorted(LAUNCH)])
def test_entry_runs_compiled_with_the_interpreters_words(path):
    """Both engines on the entry's test inputs: every output word the same, and the GPU's where captured."""
    from warpsim.ptx.native import kernel

    ref, captured = LAUNCH[path]("interpret")
    before = kernel.LAUNCHES[0]
    got, _ = LAUNCH[path]("compiled")       # a fallback warns, an error under the suite's filterwarnings
    assert kernel.LAUNCHES[0] == before + 1
    for k in ref:
        a, b = ref[k].reshape(-1).view(np.uint8), got[k].reshape(-1).view(np.uint8)
        assert a.shape == b.shape and int((a != b).sum()) == 0, f"{path} output {k}: {int((a != b).sum())} bytes differ"
        if k in captured:
            want = captured[k].reshape(-1).view(np.uint8)
            bad = int((b != want).sum())
            assert bad == 0, f"{path} output {k}: {bad} bytes differ from the GPU's"
