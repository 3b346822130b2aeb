"""warpsim.cuda: CUDA C++ through NVRTC and numba-cuda kernels, against the words an H100-class GPU wrote.

The hardware truth is tests/golden/cuda_sm90.npz (warpsim/hw/offline/cuda_sources.py, captured on
an H200, sm_90a: the same SM as the H100): every CUDA C++ case built by nvcc 13.0 (-O3 -arch=sm_90a),
every numba-cuda case from the PTX numba-cuda 0.30 wrote (tests/cuda/numba_ptx/), run through CuPy.
Here the same sources are compiled by NVRTC / numba-cuda on the CPU and run by warpsim.
"""

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import warpsim.cuda as wc
from warpsim.hw.golden import open_golden

HERE = Path(__file__).resolve().parent / "cuda"
sys.path.insert(0, str(HERE))
import cu_cases  # noqa: E402
import numba_kernels  # noqa: E402

CAPTURE = open_golden(HERE.parent / "golden" / "cuda_sm90.npz")
CASES = cu_cases.cases()


def _differing(name, k, got):
    want = CAPTURE[f"{name}/out/{k}"]
    assert got.shape == want.shape and got.dtype == want.dtype
    return int((got.reshape(-1).view(np.uint8) != want.reshape(-1).view(np.uint8)).sum())


def _module(case):
    return wc.RawModule(code=(HERE / "kernels" / case["src"]).read_text(), options=case["options"],
                        name_expressions=[case["kernel"]] if "<" in case["kernel"] else ())


def _inputs(name, args):
    return [CAPTURE[f"{name}/in/{k}"].copy() if isinstance(a, np.ndarray) else a for k, a in enumerate(args)]


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_cpp_kernel_reproduces_the_gpu(name):
    case = CASES[name]
    mod = _module(case)
    args = _inputs(name, case["args"])
    for g in case["globals"]:
        mod.get_global(g, CAPTURE[f"{name}/global_in/{g}"].dtype).set(CAPTURE[f"{name}/global_in/{g}"])
    mod.get_function(case["kernel"])(case["grid"], case["block"], tuple(args))
    assert {k: _differing(name, k, args[k]) for k in case["outputs"]} == {k: 0 for k in case["outputs"]}
    for g in case["read_globals"]:
        want = CAPTURE[f"{name}/global_out/{g}"]
        np.testing.assert_array_equal(mod.get_global(g, want.dtype).copy_to_host(), want)


@pytest.mark.parametrize("name", list(numba_kernels.KERNELS))
def test_numba_kernel_reproduces_the_gpu(name):
    fn, _ = numba_kernels.KERNELS[name]
    args, grid, block, outs = numba_kernels.inputs()[name]
    args = _inputs(f"numba_{name}", args)
    wc.jit(fn)[grid, block](*args)
    assert {k: _differing(f"numba_{name}", k, args[k]) for k in outs} == {k: 0 for k in outs}


def test_numba_ptx_as_captured_loads_unedited():
    """The PTX the GPU ran (numba's .common globals, its seven-parameter array ABI) in warpsim.ptx."""
    import warpsim

    text = (HERE / "numba_ptx" / "numba_stencil_2d.ptx").read_text()
    assert ".common .global" in text
    mod = warpsim.ptx.load(text)
    (entry,) = mod.entries
    src = CAPTURE["numba_stencil_2d/in/0"].copy()
    dst = np.zeros_like(src)
    abi = []
    for a in (src, dst):
        abi += [0, 0, a.size, a.itemsize, a, *a.shape, *a.strides]
    assert len(mod.params(entry)) == len(abi) == 18        # 2-D: 5 + 2 shapes + 2 strides each
    mod.launch(entry, (3, 3), (16, 16), abi)
    assert _differing("numba_stencil_2d", 1, dst) == 0


def test_device_arrays_persist_across_launches():
    """Two launches of the captured histogram on device arrays: the bins are twice the GPU's (integer
    atomics), the min/max unchanged; a launch on a stream and events around it."""
    name = "numba_atomic_histogram"
    kernel = wc.jit(numba_kernels.atomic_histogram)
    values = wc.to_device(CAPTURE[f"{name}/in/0"])
    bins = wc.device_array(61, np.int32)
    stats = wc.to_device(np.array([-2**31, 2**31 - 1], np.int32))
    stream = wc.stream()
    start, end = wc.event(), wc.event()
    start.record(stream)
    kernel[12, 256, stream](values, bins, stats)
    assert bins.view(np.uint8).nbytes == 61 * 4       # a view that dies must not unmap the array it views
    gc.collect()
    kernel[12, 256, stream, 0](values, bins, stats)
    end.record(stream)
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    np.testing.assert_array_equal(bins.copy_to_host(), 2 * CAPTURE[f"{name}/out/1"])
    np.testing.assert_array_equal(stats.copy_to_host(), CAPTURE[f"{name}/out/2"])
    np.testing.assert_array_equal(values.copy_to_host(), CAPTURE[f"{name}/in/0"])


def test_device_variable_accumulates_across_launches():
    """__device__ unsigned evaluated: the GPU left 5 + 300 after one launch; two launches leave 605."""
    case = CASES["horner_f32"]
    mod = _module(case)
    mod.get_global("poly_coeffs", np.float32).set(CAPTURE["horner_f32/global_in/poly_coeffs"])
    mod.get_global("evaluated", np.uint32).set(np.array([5], np.uint32))
    x = wc.to_device(CAPTURE["horner_f32/in/0"])
    y = wc.device_array(x.shape, np.float32)
    k = mod.get_function("horner<float, 7>")
    for _ in range(2):
        k((3,), (128,), (x, y, 300), stream=wc.Stream())
    assert CAPTURE["horner_f32/global_out/evaluated"][0] == 305
    assert mod.get_global("evaluated", np.uint32).copy_to_host()[0] == 605
    assert _differing("horner_f32", 1, y.copy_to_host()) == 0


def test_nvcc_implicit_includes_and_options():
    """INFINITY / NAN without an #include (nvcc's cuda_runtime.h brings them; nvcc 13 writes 0x7F800000
    and 0x7FC00000 for them), -D macros, and an integer scalar typed by its parameter (.u8)."""
    src = """extern "C" __global__ void k(float* out, unsigned char bias) {
        out[threadIdx.x] = threadIdx.x == 0 ? INFINITY : threadIdx.x == 1 ? NAN : SCALE * threadIdx.x + bias;
    }"""
    out = np.zeros(32, np.float32)
    wc.RawKernel(src, "k", options=("-DSCALE=3", "-O3", "-std=c++17"))((1,), (32,), (out, 4))
    assert out.view(np.uint32)[:2].tolist() == [0x7F800000, 0x7FC00000]
    assert out[2:].tolist() == [3.0 * t + 4 for t in range(2, 32)]


def test_errors_name_what_is_wrong():
    with pytest.raises(wc.CompileError, match=r"kernel\.cu\(2\): error: identifier \"nope\" is undefined"):
        wc.RawModule(code='extern "C" __global__ void k(float* x) {\n  x[0] = nope;\n}\n')
    mod = wc.RawModule(code='extern "C" __global__ void k(float* x, int n) { x[0] = n; }')
    with pytest.raises(ValueError, match=r"no kernel 'kk'.*\['k'\]"):
        mod.get_function("kk")
    with pytest.raises(ValueError, match="takes 2 argument"):
        mod.get_function("k")((1,), (32,), (np.zeros(1, np.float32),))
    with pytest.raises(TypeError, match=r"argument 1 of k .*got an array.*scalar"):
        mod.get_function("k")((1,), (32,), (np.zeros(1, np.float32), np.zeros(3)))
    with pytest.raises(TypeError, match="non-integral"):
        mod.get_function("k")((1,), (32,), (np.zeros(1, np.float32), 2.5))
    with pytest.raises(ValueError, match="unknown option '-Wfoo'"):
        wc.RawModule(code="__global__ void k() {}", options=["-Wfoo"])
    with pytest.raises(ValueError, match="arch="):
        wc.RawModule(code="__global__ void k() {}", options=["-arch=sm_90a"])
    with pytest.raises(ValueError, match="no __constant__/__device__ variable 'c'"):
        mod.get_global("c")
    with pytest.raises(TypeError, match=r"launch it as .*\[grid, block\]"):
        wc.jit(numba_kernels.shared_reduce)(np.zeros(4, np.float32))


def test_missing_extra_names_the_install():
    from warpsim.cuda._extra import require

    with pytest.raises(ImportError, match=r"pip install 'warpsim\[cuda\]'"):
        require("warpsim_no_such_module")


def test_cli_runs_a_cu_file(tmp_path):
    name = "histogram"
    np.save(tmp_path / "data.npy", CAPTURE[f"{name}/in/0"])
    r = subprocess.run([sys.executable, "-m", "warpsim", "cuda", str(HERE / "kernels" / "histogram.cu"),
                        "--kernel", "histogram256", "--grid", "4", "--block", "256", "--arg", str(tmp_path / "data.npy"),
                        "--arg", "zeros:256:uint32", "--arg", "6000", "--save", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _differing(name, 1, np.load(tmp_path / "histogram256_param_1.npy")) == 0


def test_numba_test_file_runs_unchanged_under_the_switch():
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "warpsim.cuda.numba_sim", "-p", "no:cacheprovider",
                        str(HERE / "numba_user_tests.py")], capture_output=True, text=True, cwd=HERE)
    assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


def test_cvt_sat_clamps_float_results():
    """Found by the softmax kernel (nvcc's expf range reduction runs cvt.sat.f32.f32): the PTX ISA's
    .sat for a float destination clamps to [+0.0, 1.0] and turns NaN into +0.0."""
    import warpsim

    w = warpsim.ptx.Warp(1, undefined="zero")
    w.run(""".reg .f32 %f<12>; .reg .f64 %d<2>;
    mov.b32 %f1, 0fBD9479D5; cvt.sat.f32.f32 %f2, %f1;
    mov.b32 %f3, 0f40000000; cvt.sat.f32.f32 %f4, %f3;
    mov.b32 %f5, 0f3F000000; cvt.sat.f32.f32 %f6, %f5;
    mov.b32 %f7, 0f7FC00000; cvt.sat.f32.f32 %f8, %f7;
    mov.b32 %f9, 0f80000000; cvt.sat.f32.f32 %f10, %f9;
    mov.b64 %d1, 0dBFF0000000000000; cvt.rn.sat.f32.f64 %f11, %d1;""")
    got = [int(w.get(r)[0][0]) for r in ("%f2", "%f4", "%f6", "%f8", "%f10", "%f11")]
    assert got == [0, 0x3F800000, 0x3F000000, 0, 0, 0]


def test_compiling_leaves_python_s_shared_bytes_alone():
    """NVRTC writes its log into the buffer it is given; an empty log's NUL once went into CPython's shared
    one-byte b" " (``b" " * 1``), after which every b" " in the process read as b"\\x00"."""
    wc.RawModule(code="__global__ void k(int *p) { p[0] = 1; }")
    assert bytes([32]) == b"\x20" and bytes([32])[0] == 32 and " ".join("ab") == "a b"
