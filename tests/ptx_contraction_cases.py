"""PTX kernels for ptxas' merge of a product / quotient into the add reading it (warpsim.ptx.contraction), with
seeded operands: one source for the GPU capture (warpsim/hw/device/contraction_capture.py loads each kernel with
the CUDA driver) and for tests/test_ptx_contraction.py (runs them in warpsim.ptx).  numpy only.

Each thread reads a[i], b[i], c[i] into %f4, %f5, %f6, runs the variant's body and stores %f8 to out[i] (and
%f7, the product / quotient, to side[i], which makes it a second reader, in the variants that say so).
"""

import numpy as np

N = 1024

#: name -> (first statement, second statement, how the second reads %f7 -- "ac": %f7 op c, "ca": c op %f7 --,
#: a second reader of %f7, merged by ptxas): the body computes %f8 from %f4 (a), %f5 (b), %f6 (c)
_ROWS = {
    "div_full_add": ("div.full.f32", "add.f32", "ac", False, True),
    "div_full_add_swapped": ("div.full.f32", "add.f32", "ca", False, True),
    "div_full_sub": ("div.full.f32", "sub.f32", "ac", False, True),
    "div_full_rsub": ("div.full.f32", "sub.f32", "ca", False, True),
    "div_full_ftz_add_ftz": ("div.full.ftz.f32", "add.ftz.f32", "ac", False, True),
    "div_approx_add": ("div.approx.f32", "add.f32", "ac", False, True),
    "div_approx_ftz_sub_ftz": ("div.approx.ftz.f32", "sub.ftz.f32", "ac", False, True),
    "div_full_add_second_reader": ("div.full.f32", "add.f32", "ac", True, False),
    "div_full_add_rn": ("div.full.f32", "add.rn.f32", "ac", False, False),
    "div_full_ftz_add": ("div.full.ftz.f32", "add.f32", "ac", False, False),
    "mul_add": ("mul.f32", "add.f32", "ac", False, True),
    "mul_sub": ("mul.f32", "sub.f32", "ac", False, True),
    "mul_rsub": ("mul.f32", "sub.f32", "ca", False, True),
    "mul_ftz_add_ftz": ("mul.ftz.f32", "add.ftz.f32", "ac", False, True),
    "mul_add_second_reader": ("mul.f32", "add.f32", "ac", True, False),
    "mul_rn_add": ("mul.rn.f32", "add.f32", "ac", False, False),
}


def _body(first, second, order, second_reader):
    srcs = "%f7, %f6" if order == "ac" else "%f6, %f7"
    return (f"{first} %f7, %f4, %f5;\n{second} %f8, {srcs};"
            + ("\nst.global.f32 [%rd6], %f7;" if second_reader else ""))


#: name -> (body, merged by ptxas)
VARIANTS = {name: (_body(*row[:4]), row[4]) for name, row in _ROWS.items()}


def ptx(body):
    """The variant's kernel ``k(out, side, a, b, c)`` (PTX 8.7, sm_90a)."""
    return (".version 8.7\n.target sm_90a\n.address_size 64\n"
            ".visible .entry k(.param .u64 out, .param .u64 side, .param .u64 pa, .param .u64 pb, .param .u64 pc)\n"
            "{\n.reg .f32 %f<12>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<12>;\n"
            "mov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\nmov.u32 %r3, %tid.x;\nmad.lo.s32 %r1, %r1, %r2, %r3;\n"
            "mul.wide.u32 %rd1, %r1, 4;\n"
            "ld.param.u64 %rd2, [out];\nadd.s64 %rd2, %rd2, %rd1;\nld.param.u64 %rd6, [side];\n"
            "add.s64 %rd6, %rd6, %rd1;\nld.param.u64 %rd3, [pa];\nadd.s64 %rd3, %rd3, %rd1;\n"
            "ld.param.u64 %rd4, [pb];\nadd.s64 %rd4, %rd4, %rd1;\nld.param.u64 %rd5, [pc];\nadd.s64 %rd5, %rd5, %rd1;\n"
            "ld.global.f32 %f4, [%rd3];\nld.global.f32 %f5, [%rd4];\nld.global.f32 %f6, [%rd5];\n"
            + body + "\nst.global.f32 [%rd2], %f8;\nret;\n}\n")


def operands():
    """(a, b, c) float32 arrays of N: edge words first (zeros, infinities, NaN, subnormals, divisors beyond
    2**126 and below 2**-126), then c close to -(a / b) and -(a * b) (where one rounding and two differ),
    then ordinary values."""
    r = np.random.default_rng(29)
    edge = np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 1.2e-38, 3e38, -2e38, 1e-40, 9e37, 1, -1,
                       3, 0.1])
    k = edge.size
    a = r.standard_normal(N).astype(np.float32)
    b = r.standard_normal(N).astype(np.float32)
    a[:k], b[:k] = edge, np.roll(edge, 5)
    a[k:2 * k] = edge
    b[k:2 * k] = np.float32([3e38, 2e-39, 1e-38, 8.6e37, -9e37, 5e-39, 3, 7, -1e-40, 2.5e38, 1e-45, 1.1e-38, 3e-39,
                             1e38, 0.5, 6])
    third = (N - 2 * k) // 3
    eps = r.standard_normal(N).astype(np.float32) * np.float32(2.0 ** -20)
    with np.errstate(all="ignore"):
        q = (a.astype(np.float64) / b).astype(np.float32)
        p = (a.astype(np.float64) * b).astype(np.float32)
        c = r.standard_normal(N).astype(np.float32)
        c[2 * k:2 * k + third] = -q[2 * k:2 * k + third] * (1 + eps[2 * k:2 * k + third])
        c[2 * k + third:2 * k + 2 * third] = -p[2 * k + third:2 * k + 2 * third] * (1 + eps[2 * k + third:
                                                                                          2 * k + 2 * third])
        c[:k] = np.roll(edge, 9)
    return a, b, c.astype(np.float32)
