"""The Triton driver backed by warpsim (issue 30): tutorial-style kernels compiled by Triton for sm_90a and run
under ``warpsim.triton.device`` on CPU tensors give the words a Hopper GPU wrote for the same launches.

tests/golden/triton_driver_sm90.npz: tests/triton_driver_kernels.py's cases run natively on the GPU by
warpsim/hw/device/triton_driver.py (an H200, sm_90: Hopper's numerics, the H100's), with the digest of the
PTX Triton compiled there.  Here the same source compiles through Triton's NVIDIA backend (its cache) and
the PTX must be the same code; then every output word is compared.
"""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("triton", reason="triton is not installed (the optional extra warpsim[triton])")
torch = pytest.importorskip("torch", reason="torch is not installed (the optional extra warpsim[triton])")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import warpsim.triton as wt  # noqa: E402
from warpsim.hw.golden import open_golden  # noqa: E402

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import triton_driver_kernels as tk  # noqa: E402

CAPTURE = os.path.join(HERE, "golden", "triton_driver_sm90.npz")
_Z = open_golden(CAPTURE)
_MANIFEST = _Z.manifest["cases"]
#: issue 29's kernels (normalization, activations, loss, attention; tk.SFU_CASES), captured on an H200
_ZS = open_golden(os.path.join(HERE, "golden", "triton_driver_sfu_sm90.npz"))
_SUITES = {"tutorial": (tk.CASES, _Z), "sfu": (tk.SFU_CASES, _ZS)}

_runs: dict = {}


def _run(name, cases=tk.CASES):
    """Run one case under the driver once per session: (output words by name, compiled kernel).  A case of
    ``tk.TARGET`` compiles for that target and runs with Hopper's numerics (the GPU JIT-compiled its PTX)."""
    if name not in _runs:
        with wt.device(arch=tk.TARGET.get(name, "sm_90a"), device="sm_90a"):
            outs, k = cases[name][0](lambda t: t)
        _runs[name] = ({o: tk.words(t) for o, t in outs.items()}, k)
    return _runs[name]


def _params():
    for suite, (cases, z) in _SUITES.items():
        for name in cases:
            for out in z.manifest["cases"][name]["outputs"]:
                yield pytest.param(suite, name, out, id=f"{name}.{out}")


@pytest.mark.parametrize("suite,name,out", list(_params()))
def test_driver_matches_hopper_words(suite, name, out):
    cases, z = _SUITES[suite]
    cap = z.manifest["cases"][name]
    assert cap["ok"] and cap["deterministic"], cap
    got, k = _run(name, cases)
    assert tk.ptx_digest(k.asm["ptx"]) == cap["ptx_sha256"], \
        "the PTX Triton compiles here is not the code compiled on the GPU (another Triton or ptxas?)"
    want = z[f"{name}.{out}"]
    assert got[out].shape == want.shape
    bad = int((got[out] != want).sum())
    assert bad == 0, f"{bad} of {want.size} words differ"


def test_matmuls_compile_to_the_captured_instructions():
    """On sm_90a the 64-row 4-warp tiles lower to wgmma, the 16-row 2-warp tile to mma.sync (as on the GPU)."""
    for name, cap in _MANIFEST.items():
        if name.startswith("matmul"):
            ptx = _run(name)[1].asm["ptx"]
            assert ("wgmma.mma_async" in ptx, "mma.sync" in ptx) == (cap["wgmma"], cap["mma_sync"]), name


# ---------------------------------------------------------------------------------------------------------
# the launch: numpy arrays, in-place write-back, errors, targets


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + 1, mask=m)


def test_numpy_arrays_and_strided_views_are_written_in_place():
    x = np.arange(300, dtype=np.float32)
    y = np.full(300, -1, np.float32)
    with wt.device("sm_90a"):
        _scale_kernel[(3, )](x, y, 300, 2.0, BLOCK=128)
    assert (y == x * 2 + 1).all()
    big = torch.zeros(2, 400)
    with wt.device("sm_90a"):
        _scale_kernel[(3, )](torch.from_numpy(x), big[1, 50:], 300, 0.5, BLOCK=128)
    assert (big[0] == 0).all() and (big[1, :50] == 0).all() and (big[1, 350:] == 0).all()
    assert (big[1, 50:350].numpy() == x * 0.5 + 1).all()


def test_integer_specialisation():
    """Triton turns n == 1 into a constexpr (no PTX parameter: 5 instead of 6 with the two scratch pointers) and
    16-divisible ints into aligned ones: each launch still gets its arguments in the PTX's order."""
    x = np.arange(1, 65, dtype=np.float32)
    for n in (1, 16, 37):
        y = np.zeros(64, np.float32)
        with wt.device("sm_90a"):
            k = _scale_kernel[(1, )](x, y, n, 0.25, BLOCK=64)
        assert (y[:n] == x[:n] * np.float32(0.25) + 1).all() and (y[n:] == 0).all(), n
        assert ("_scale_kernel_param_5" in k.asm["ptx"]) == (n != 1)


def test_every_target_compiles_and_runs():
    """sm_80 / sm_86 / sm_89 / sm_120a PTX runs with the target's numerics: ``x * alpha + 1`` is contracted to
    one fma.rn.f32 (one rounding of the exact value, which float64 holds here) on every target."""
    x = np.linspace(-3, 3, 200, dtype=np.float32)
    for arch in ("sm_80", "sm_86", "sm_89", "sm_120a"):
        y = np.zeros_like(x)
        with wt.device(arch) as d:
            assert triton.runtime.driver.active is d and d.get_current_target().arch == int(arch[3:6].rstrip("a"))
            _scale_kernel[(2, )](x, y, 200, 3.0, BLOCK=128)
        assert (y == (x.astype(np.float64) * 3 + 1).astype(np.float32)).all(), arch


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    om, on, ok = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + om[:, None] * K + ok[None, :])
    b = tl.load(b_ptr + ok[:, None] * N + on[None, :])
    tl.store(c_ptr + om[:, None] * N + on[None, :], tl.dot(a, b))


def test_sm100a_tl_dot_runs_on_the_tcgen05_models():
    """sm_100a: Triton lowers tl.dot to tcgen05 (tensor-memory accumulator written as ``[%r + 0]``, commit to
    an mbarrier without a state space), which the loader takes as ptxas does.  Numerics are warpsim's models
    (no Blackwell capture): small integers, so every sum is exact and the words are the integer product's."""
    r = np.random.default_rng(100)
    a = torch.from_numpy(r.integers(-4, 5, (128, 64)).astype(np.float16))
    b = torch.from_numpy(r.integers(-4, 5, (64, 64)).astype(np.float16))
    c = torch.zeros((128, 64))
    with wt.device("sm_100a"):
        k = _dot_kernel[(1, )](a, b, c, M=128, N=64, K=64, num_warps=4)
    ptx = k.asm["ptx"]
    assert "tcgen05.mma.cta_group::1.kind::f16 [ %r" in ptx and " + 0 ]" in ptx and "tcgen05.ld" in ptx
    assert (c.numpy() == a.numpy().astype(np.int64) @ b.numpy().astype(np.int64)).all()


def test_the_previous_driver_is_restored_and_bad_arguments_are_named():
    before = triton.runtime.driver._active
    with wt.device("sm_90a"):
        pass
    assert triton.runtime.driver._active is before
    with pytest.raises(ValueError, match="sm_70.*allowed: sm_80"):
        wt.device("sm_70")
    with pytest.raises(ValueError, match="device 'h100'"):
        wt.device("sm_80", device="h100")


@triton.jit
def _oob_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + 1000, tl.load(x_ptr + offs))


def test_a_launch_error_names_the_kernel_and_the_ptx_line():
    x = torch.zeros(64)
    with wt.device("sm_90a"), pytest.raises(wt.KernelLaunchError, match=r"_oob_kernel .*PTX line \d+") as e:
        _oob_kernel[(1, )](x, BLOCK=64)
    assert e.value.kernel == "_oob_kernel" and e.value.line > 0


def test_device_properties_are_the_targets_gpu():
    with wt.device("sm_90a") as d:
        p = triton.runtime.driver.active.utils.get_device_properties(d.get_active_torch_device().index)
        assert p["multiprocessor_count"] == 132 and p["max_shared_mem"] == 232448 and p["warpSize"] == 32
        assert d.get_active_torch_device() == torch.device("cpu")


# ---------------------------------------------------------------------------------------------------------
# a script written for a GPU, unchanged: WARPSIM_TRITON (Triton's backend entry point) and the CLI

ROOT = os.path.dirname(HERE)
TUTORIAL = os.path.join(ROOT, "examples", "triton_tutorial.py")


def test_warpsim_triton_env_runs_a_tutorial_script_unchanged(tmp_path):
    """Under WARPSIM_TRITON=sm_90a Triton's own backend discovery (the ``triton.backends`` entry point, which an
    installed warpsim declares; here a dist-info folder declares it) makes warpsim the active driver."""
    import subprocess

    dist = tmp_path / "warpsim_entry_point-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: warpsim-entry-point\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[triton.backends]\nwarpsim = warpsim_triton\n")
    env = dict(os.environ, WARPSIM_TRITON="sm_90a", PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    env.pop("TRITON_INTERPRET", None)
    probe = ("import runpy, sys, triton; d = triton.runtime.driver.active; print(type(d).__name__, d.arch, "
             "d.get_active_torch_device()); sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", probe, TUTORIAL], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0].split() == ["WarpsimDriver", "sm_90a", "cpu"], r.stdout
    assert "vector add: max difference 0.0" in r.stdout and "softmax: matches torch" in r.stdout


def test_the_entry_point_driver_is_inactive_without_warpsim_triton(monkeypatch):
    from warpsim_triton.compiler import WarpsimNoCompiler
    from warpsim_triton.driver import WarpsimTritonDriver

    monkeypatch.delenv("WARPSIM_TRITON", raising=False)
    assert not WarpsimTritonDriver.is_active()
    assert not WarpsimNoCompiler.supports_target(triton.backends.compiler.GPUTarget("cuda", 90, 32))
    monkeypatch.setenv("WARPSIM_TRITON", "sm_80")
    d = WarpsimTritonDriver()
    assert WarpsimTritonDriver.is_active() and isinstance(d, wt.WarpsimDriver) and d.arch == "sm_80"


def test_cli_runs_a_script_under_the_driver(capsys):
    from warpsim.cli.main import main

    before = triton.runtime.driver._active
    assert main(["triton", TUTORIAL, "--run", "--arch", "sm_90a"]) == 0
    out = capsys.readouterr().out
    assert "vector add: max difference 0.0" in out and "softmax: matches torch" in out
    assert triton.runtime.driver._active is before and "WARPSIM_TRITON" not in os.environ


# ---------------------------------------------------------------------------------------------------------
# device_print / device_assert, autotune, heuristics


def test_device_print_prints_what_the_gpu_printed(capsys):
    """tl.device_print through vprintf: Triton's format, one line per lane; the GPU's lines (captured with the
    kernels) are the same lines (CTAs may interleave differently on a GPU: compared as sorted lines)."""
    x = torch.arange(8, dtype=torch.float32) * 0.5 - 1
    capsys.readouterr()
    with wt.device("sm_90a"):
        tk.print_kernel[(2, )](x, BLOCK=8, num_warps=1)
    got = capsys.readouterr().out.splitlines()
    want = _Z.manifest["device_print"].splitlines()
    assert len(want) == 64 and sorted(got) == sorted(want)


@triton.jit(debug=True)
def _assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < 5, "x too large")


def test_device_assert_names_the_kernel_and_message():
    with wt.device("sm_90a"):
        _assert_kernel[(1, )](torch.zeros(32), BLOCK=32)
        with pytest.raises(wt.KernelLaunchError, match=r"_assert_kernel.*device assertion failed.*x too large"):
            _assert_kernel[(1, )](torch.arange(32, dtype=torch.float32), BLOCK=32)


_autotuned_calls = []


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.heuristics(values={"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        tl.store(y_ptr + offs, x * 2 + BLOCK)
    else:
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2 - BLOCK, mask=m)


def test_autotune_keeps_the_first_config_says_so_and_heuristics_apply(caplog):
    """Every config runs once and ties (0 ms), so Triton's choice is the first listed -- logged, naming it;
    heuristics see BLOCK."""
    x = torch.arange(256, dtype=torch.float32)
    y = torch.zeros(256)
    _tuned_kernel.cache.clear()
    with wt.device("sm_90a"), caplog.at_level("INFO", logger="warpsim.triton"):
        _tuned_kernel[lambda meta: (triton.cdiv(256, meta["BLOCK"]), )](x, y, 256)
        assert _tuned_kernel.best_config.kwargs["BLOCK"] == 64
        said = [r for r in caplog.records if r.name == "warpsim.triton"]
        assert len(said) == 1 and said[0].levelname == "WARNING"
        assert "_tuned_kernel chose BLOCK: 64" in said[0].getMessage() and "all 2 configs tie" in said[0].getMessage()
        assert (y == x * 2 + 64).all()                   # EVEN: 256 % 64 == 0
        y2 = torch.zeros(200)
        _tuned_kernel[lambda meta: (triton.cdiv(200, meta["BLOCK"]), )](x[:200], y2, 200)
        assert (y2 == x[:200] * 2 - 64).all()            # 200 % 64 != 0: the masked branch


@pytest.mark.parametrize("pin", [1, {"BLOCK": 128}, {"num_warps": 4}, lambda name, configs: len(configs) - 1, "env"])
def test_autotune_runs_the_pinned_config_and_names_it(pin, monkeypatch, caplog):
    """autotune= (or WARPSIM_TRITON_AUTOTUNE) pins a config: only it runs (no tie), and the log names it."""
    x = torch.arange(256, dtype=torch.float32)
    y = torch.zeros(200)
    if pin == "env":
        monkeypatch.setenv("WARPSIM_TRITON_AUTOTUNE", "BLOCK=128,num_warps=4")
        pin = None
    _tuned_kernel.cache.clear()
    with wt.device("sm_90a", autotune=pin), caplog.at_level("INFO", logger="warpsim.triton"):
        _tuned_kernel[lambda meta: (triton.cdiv(200, meta["BLOCK"]), )](x[:200], y, 200)
    assert _tuned_kernel.best_config.kwargs["BLOCK"] == 128 and not _tuned_kernel.cache
    assert (y == x[:200] * 2 - 128).all()                # 200 % 128 != 0: the masked branch, BLOCK 128
    said = [r.getMessage() for r in caplog.records if r.name == "warpsim.triton"]
    assert said == ["warpsim: triton.autotune of _tuned_kernel runs the pinned config BLOCK: 128, num_warps: 4, "
                    "num_ctas: 1, num_stages: 3, maxnreg: None"], said


def test_autotune_pins_that_name_no_config_are_refused(monkeypatch):
    x, y = torch.zeros(64), torch.zeros(64)
    with wt.device("sm_90a", autotune={"BLOCK": 32}), pytest.raises(ValueError, match=r"matches no config of "
                                                                      r"_tuned_kernel \(configs: 0: BLOCK: 64"):
        _tuned_kernel[(1, )](x, y, 64)
    with wt.device("sm_90a", autotune=2), pytest.raises(ValueError, match="not a config index of _tuned_kernel"):
        _tuned_kernel[(1, )](x, y, 64)
    with pytest.raises(TypeError, match="autotune must be a config index"):
        wt.device("sm_90a", autotune=1.5)
    monkeypatch.setenv("WARPSIM_TRITON_AUTOTUNE", "BLOCK")
    with pytest.raises(ValueError, match="WARPSIM_TRITON_AUTOTUNE='BLOCK'"):
        wt.device("sm_90a")


def test_sm80_matmul_ptx_on_hopper_numerics_gives_the_captured_words():
    """The same tutorial matmul compiled for sm_80 (mma.sync m16n8k16 throughout) and run with Hopper's numerics
    (device="sm_90a": sm_80 code on an H100) gives the words the GPU wrote for the wgmma lowering: both chain
    the same instruction model over K in order (docs/triton.md)."""
    for name in ("matmul_f16_wgmma", "matmul_bf16_wgmma"):
        with wt.device(arch="sm_80", device="sm_90a"):
            outs, k = tk.CASES[name][0](lambda t: t)
        ptx = k.asm["ptx"]
        assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx
        assert (tk.words(outs["c"]) == _Z[f"{name}.c"]).all(), name


def test_tensormap_replace_from_zeros_builds_the_drivers_descriptor():
    """tensormap.replace's fields (as Triton's make_tensor_descriptor writes them into a zeroed buffer) give the
    bytes cuTensorMapEncodeTiled gives for the same tensor (the driver layout, warpsim.isa.tensormap)."""
    from warpsim.isa.tensormap import encode_tiled, replace_field

    want = encode_tiled("float16", 2, 0x7F00_0000_0040, [64, 96], [192], [32, 64], [1, 1], swizzle="64B")
    d = np.zeros(128, np.uint8)
    for field, value, ordinal in [("global_address", 0x7F00_0000_0040, None), ("rank", 1, None),
                                  ("box_dim", 32, 0), ("box_dim", 64, 1), ("global_dim", 64, 0),
                                  ("global_dim", 96, 1), ("global_stride", 192, 0), ("element_stride", 1, 0),
                                  ("element_stride", 1, 1), ("elemtype", 6, None), ("interleave_layout", 0, None),
                                  ("swizzle_mode", 2, None), ("fill_mode", 0, None)]:
        d = replace_field(d, field, value, ordinal)
    # the GPU leaves the driver's derived fields (box bytes 64..67, swizzle mark 72..73) as they were --
    # zero here (tests/golden/tma_stores_sm90.npz, 570 captured replaces); every other byte is the driver's
    derived = np.r_[64:68, 72:74]
    rest = np.setdiff1d(np.arange(128), derived)
    assert (d[rest] == want[rest]).all() and not d[derived].any()
    from warpsim.isa.tensormap import decode_tensormap

    assert decode_tensormap(d, derived="ignore") == decode_tensormap(want)
    with pytest.raises(ValueError, match="swizzle_atomicity is not modelled"):
        replace_field(d, "swizzle_atomicity", 0)
    with pytest.raises(ValueError, match="ordinal 5 outside 0 .. 4"):
        replace_field(d, "box_dim", 8, 5)


@triton.jit
def _bad_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.undefined_function_of_triton(BLOCK))


def test_compiler_errors_are_tritons_own():
    from triton.compiler.errors import CompilationError

    with wt.device("sm_90a"), pytest.raises(CompilationError, match="undefined_function_of_triton"):
        _bad_kernel[(1, )](torch.zeros(16), BLOCK=16)
