"""Two CUDA kernels (tests/ptx/*.cu), compiled by nvcc 13 for sm_90 (``nvcc -arch=sm_90 -ptx -O3``),
run from their PTX in warpsim and compared with the cubin's output on an H100 for the same inputs
(ordinary values, and a set with infinities, NaN, subnormals, signed zeros and large values)."""

import json
from pathlib import Path

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

import warpsim.ptx as wp

HERE = Path(__file__).parent / "ptx"
CASES = json.loads((HERE / "data" / "kernels.json").read_text())
KIN = open_golden(HERE / "data" / "kernels_in.npz")
KOUT = open_golden(HERE / "data" / "kernels_out.npz")


def launch_case(case, **kw):
    """Run a case of kernels.json on its captured inputs: (outputs by capture suffix, the inputs, their copies
    from before the launch)."""
    M, N, K = case["M"], case["N"], case["K"]
    mod = wp.load(HERE / f"{case['kernel']}.ptx")
    A = KIN[case["key"] + "_A"].copy()
    B = KIN[case["key"] + "_B"].copy()
    A0, B0 = A.copy(), B.copy()
    if case["kernel"] == "gemm_ldmatrix":
        C32 = np.zeros(M * N, np.uint32)
        C16 = np.zeros(M * N, np.uint16)
        mod.launch("gemm_ldmatrix", (N // 32, M // 32), 128, [A, B, C32, C16, M, N, K], **kw)
        outs = {"_C32": C32, "_C16": C16}
    else:
        C0 = KIN[case["key"] + "_C0"].copy()
        C = np.zeros(M * N, np.uint32)
        mod.launch("gemm_wmma", (N // 32, M // 16), 64, [A, B, C0, C, M, N, K], **kw)
        outs = {"_C": C}
    return outs, (A, B), (A0, B0)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["key"]) for c in CASES])
def test_kernel_matches_h100(case):
    outs, (A, B), (A0, B0) = launch_case(case)
    for suffix, got in outs.items():
        want = KOUT[case["key"] + suffix]
        assert np.array_equal(got, want), f"{suffix}: {int((got != want).sum())} of {want.size} words differ"
    assert np.array_equal(A, A0) and np.array_equal(B, B0)          # inputs untouched


def test_special_value_inputs_are_special():
    a = KIN["ldm1_A"].astype(np.uint32)
    assert ((a & 0x7C00) == 0x7C00).any() and ((a & 0x7C00) == 0).any() and (a == 0x8000).any()
