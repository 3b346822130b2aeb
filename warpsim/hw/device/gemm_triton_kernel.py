import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                ACC16: tl.constexpr, PREC: tl.constexpr, IMPRECISE: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        if ACC16:
            acc = tl.dot(a, b, acc, input_precision=PREC, max_num_imprecise_acc=IMPRECISE, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc, input_precision=PREC, max_num_imprecise_acc=IMPRECISE, out_dtype=tl.float32)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)
