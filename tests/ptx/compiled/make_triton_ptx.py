"""Regenerate the committed Triton PTX files of this folder (needs triton==3.6.0; no GPU).

    python3 -m venv /tmp/v && /tmp/v/bin/pip install triton==3.6.0 numpy
    /tmp/v/bin/python tests/ptx/compiled/make_triton_ptx.py

Each kernel is a plain tiled matmul C = A @ B (row-major A (M, K), B (K, N), C (M, N)), with or
without bounds masks; the file name says the element types, the masks and the target.  The
signature and launch geometry of every file are in KERNELS (also read by the tests and by
compiled_capture.py, which launches the same PTX on an H100).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from triton_sources import KERNELS  # noqa: E402


def main():
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, MASKED: tl.constexpr, ACC: tl.constexpr, OUT: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TF32: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=ACC)
        for k in range(0, K, BK):
            pa = a_ptr + rm[:, None] * K + (k + rk)[None, :]
            pb = b_ptr + (k + rk)[:, None] * N + rn[None, :]
            if MASKED:
                a = tl.load(pa, mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
                b = tl.load(pb, mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
            else:
                a = tl.load(pa)
                b = tl.load(pb)
            if TF32:
                acc = tl.dot(a, b, acc, input_precision="tf32", out_dtype=ACC)
            else:
                acc = tl.dot(a, b, acc, out_dtype=ACC)
        pc = c_ptr + rm[:, None] * N + rn[None, :]
        if MASKED:
            tl.store(pc, acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))
        else:
            tl.store(pc, acc.to(OUT))

    tl_types = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "e4m3": "fp8e4nv", "s8": "i8", "s32": "i32"}
    dt = {"f16": tl.float16, "f32": tl.float32, "s32": tl.int32}
    for name, k in KERNELS.items():
        sig = {"a_ptr": "*" + tl_types[k["a"]], "b_ptr": "*" + tl_types[k["a"]], "c_ptr": "*" + tl_types[k["out"]],
               "M": "i32", "N": "i32", "K": "i32", "MASKED": "constexpr", "ACC": "constexpr", "OUT": "constexpr",
               "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "TF32": "constexpr"}
        const = {"MASKED": k["masked"], "ACC": dt[k["acc"]], "OUT": dt[k["out"]], "BM": k["bm"], "BN": k["bn"],
                 "BK": k["bk"], "TF32": k["a"] == "f32"}
        src = triton.compiler.ASTSource(matmul, sig, const)
        out = triton.compile(src, target=GPUTarget("cuda", k["arch"], 32),
                             options={"num_warps": k["warps"], "num_stages": k["stages"]})
        (HERE / f"{name}.ptx").write_text(out.asm["ptx"])
        meta = {"shared": out.metadata.shared, "num_warps": out.metadata.num_warps, "name": out.metadata.name}
        print(name, json.dumps(meta))


if __name__ == "__main__":
    main()
