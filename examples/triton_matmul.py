"""A Triton matmul run on the CPU with tl.dot computed as the kernel compiled for an H100 computes it.

    python3 examples/triton_matmul.py                   # D as the H100 computes it, against float64
    warpsim triton examples/triton_matmul.py --arch sm_80   # the numerics report of the sm_80 lowering

Needs the extra warpsim[triton].
"""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")          # before the kernel is defined

import numpy as np
import torch
import triton
import triton.language as tl

import warpsim.triton


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(M=64, N=64, K=256):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(M, K, generator=g).half()
    B = torch.randn(K, N, generator=g).half()
    C = torch.empty(M, N)
    matmul[(triton.cdiv(M, 64), triton.cdiv(N, 64))](A, B, C, M, N, K, BM=64, BN=64, BK=64, num_warps=4)
    return A, B, C


if __name__ == "__main__":
    with warpsim.triton.exact(arch="sm_90a"):      # wgmma path: BLOCK_M = 64, 4 warps
        A, B, exact = run()
    ref = A.double().numpy() @ B.double().numpy()
    D = exact.numpy()
    print(f"D[0, :4] as the H100 writes it: {[hex(w) for w in D[0, :4].view(np.uint32)]}")
    print(f"max |D - A@B| / max |A@B| = {np.abs(D - ref).max() / np.abs(ref).max():.2e}; "
          f"{int((D == ref.astype(np.float32)).sum())} of {D.size} equal the f32 rounding of the exact product")
