"""Regenerate the Triton PTX of the whole-kernel rows of ``warpsim bench`` (needs triton==3.6; no GPU).

    python benchmarks/kernels/make_kernels.py

A row-wise softmax and a layer norm (forward, f32), one program per row, and a flash-attention
forward (f16 Q, K, V; f32 out; online softmax over key blocks), compiled for sm_90a with 4 warps.  KERNELS (in kernels.py) holds each file's
signature and launch geometry, read by the bench.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from kernels import KERNELS  # noqa: E402


def main():
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def softmax(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)

    @triton.jit
    def layernorm(out_ptr, in_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / n_cols
        d = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(out_ptr + row * n_cols + cols, d * rstd * w + b, mask=mask)

    @triton.jit
    def attention(out_ptr, q_ptr, k_ptr, v_ptr, n_ctx, scale, D: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr):
        # one program: BM queries of one head (heads stacked along rows: head h at rows h * n_ctx...)
        start = tl.program_id(0) * BM
        head = tl.program_id(1) * n_ctx
        rm = start + tl.arange(0, BM)
        rd = tl.arange(0, D)
        q = tl.load(q_ptr + (head + rm)[:, None] * D + rd[None, :])
        m_i = tl.full((BM,), -float("inf"), tl.float32)
        l_i = tl.zeros((BM,), tl.float32)
        acc = tl.zeros((BM, D), tl.float32)
        for n in range(0, n_ctx, BN):
            rn = n + tl.arange(0, BN)
            k = tl.load(k_ptr + (head + rn)[None, :] * D + rd[:, None])
            s = tl.dot(q, k) * scale
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            p = tl.exp(s - m_new[:, None])
            alpha = tl.exp(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(v_ptr + (head + rn)[:, None] * D + rd[None, :])
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m_i = m_new
        tl.store(out_ptr + (head + rm)[:, None] * D + rd[None, :], acc / l_i[:, None])

    fns = {"softmax": softmax, "layernorm": layernorm, "attention": attention}
    for name, k in KERNELS.items():
        src = triton.compiler.ASTSource(fns[k["fn"]], k["signature"], k["constants"])
        out = triton.compile(src, target=GPUTarget("cuda", k["arch"], 32), options={"num_warps": k["warps"]})
        (HERE / f"{name}.ptx").write_text(out.asm["ptx"])
        print(name, json.dumps({"shared": out.metadata.shared, "num_warps": out.metadata.num_warps,
                                "name": out.metadata.name}))


if __name__ == "__main__":
    main()
