"""CUDA's math library in kernels (issue 29 item 3), against the words an H200 wrote.

tests/golden/cuda_math_sm90.npz: every function of tests/cuda/kernels/math_funcs.cu (f32 expf ... erff,
the __ intrinsics, division; f16 / bf16 hexp ... h2tanh; f64 exp, log, sin, cos) over the operands
of tests/cuda/math_cases.py, built by nvcc 13.0 -O3 -arch=sm_90a with the default options,
--use_fast_math, --ftz=true and --prec-div=false --prec-sqrt=false and run through CuPy.  Here NVRTC
builds the same source and warpsim runs the PTX: the libraries' range reductions, polynomials and
Payne-Hanek paths compose from the ALU and MUFU models, word for word.
"""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import warpsim.cuda as wc
from warpsim.hw.golden import open_golden

HERE = Path(__file__).resolve().parent / "cuda"
sys.path.insert(0, str(HERE))
import math_cases  # noqa: E402

GOLDEN = HERE.parent / "golden" / "cuda_math_sm90.npz"
CAPTURE = open_golden(GOLDEN)
CASES = math_cases.cases()
#: 'build.kernel' -> words that differ from the GPU's (measured; each an open gap)
KNOWN_GAPS = {}


@functools.lru_cache(maxsize=None)
def _module(build):
    return wc.RawModule(code=(HERE / "kernels" / math_cases.SRC).read_text(), options=math_cases.BUILDS[build])


def _param(name):
    gap = KNOWN_GAPS.get(name)
    marks = [pytest.mark.xfail(strict=True, reason=f"{gap} of {CASES[name]['args'][0].size} words differ")] \
        if gap else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(n) for n in CASES])
def test_math_function_reproduces_the_gpu(name):
    case = CASES[name]
    args = [CAPTURE[f"{name}/in/{k}"].copy() if isinstance(a, np.ndarray) else a for k, a in enumerate(case["args"])]
    _module(name.split(".")[0]).get_function(case["kernel"])((case["grid"],), (case["block"],), tuple(args))
    (k,) = case["outputs"]
    want = CAPTURE[f"{name}/out/{k}"]
    got = args[k]
    assert got.dtype == want.dtype and got.shape == want.shape
    words = {"operand": _hex_words(args[0]), "GPU": _hex_words(want), "warpsim": _hex_words(got)}
    differing = [i for i, (g, w) in enumerate(zip(words["warpsim"], words["GPU"])) if g != w]
    assert not differing, (f"{len(differing)} words differ; the first: " +
                           ", ".join(f"{k} {v[differing[0]]}" for k, v in words.items()))


def _hex_words(a):
    return [bytes(r[::-1]).hex() for r in np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)]


def test_operands_cover_the_edges():
    """The operand arrays start with the special words (a changed generator would silently weaken the
    capture's reach): zeros, subnormals, infinities, NaN, and sin's large multiples of pi."""
    x = CAPTURE["default.f_sinf/in/0"]
    w = x.view(np.uint32)
    assert {0, 0x80000000, 1, 0x7F800000, 0xFF800000, 0x7FC00000} <= set(w[:20].tolist())
    assert np.isclose(x, np.float32(1e20) * np.float32(np.pi)).any()
    np.testing.assert_array_equal(x, math_cases.operands()["f"][0])
