"""Triton kernels in the style of Triton's tutorials, with seeded inputs: one source for the GPU capture
(warpsim/hw/device/triton_driver.py runs them natively on CUDA tensors) and for tests/test_triton_driver.py
(runs them under ``warpsim.triton.device`` on CPU tensors and compares the words).

``CASES[name]`` / ``SFU_CASES[name]`` (issue 29's kernels) are ``(run, outputs)``: ``run(dev)`` launches it, ``dev``
moving each CPU tensor to where the kernel runs (the GPU, or the identity under warpsim); returns the outputs
by name and the compiled kernel (``TARGET``: cases built for sm_80).  Plain numpy / torch / triton only.
"""

import numpy as np
import torch
import triton
import triton.language as tl


# ---------------------------------------------------------------------------------------------------------
# kernels


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACC: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ACC)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator, out_dtype=ACC)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def seeded_dropout_kernel(x_ptr, output_ptr, random_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)
    tl.store(random_ptr + offsets, random, mask=mask)


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, stride_h, stride_m, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Flash attention forward (one head per program along axis 1), online softmax in base 2."""
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_h * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(Out.dtype.element_ty))


@triton.jit
def layer_norm_bwd_dx_fused_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                                   BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def layer_norm_bwd_dwdb_kernel(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                               BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@triton.jit
def grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds, group_size,
                          NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


@triton.jit
def matmul_tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                 BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, NUM_SMS: tl.constexpr):
    """Persistent matmul over host-side TensorDescriptors (b given as N x K, K-major)."""
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=False):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(tl.float16))


@triton.jit
def matmul_device_descriptor_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    """Matmul over descriptors made on the device (tl.make_tensor_descriptor: needs triton.set_allocator)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = a_desc.load([pid_m * BLOCK_SIZE_M, k * BLOCK_SIZE_K])
        b = b_desc.load([pid_n * BLOCK_SIZE_N, k * BLOCK_SIZE_K])
        accumulator = tl.dot(a, b.T, accumulator)
    c_desc.store([pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N], accumulator.to(tl.float16))


@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x=", x)


@triton.jit
def scan_reduce_kernel(x_ptr, cum_ptr, sorted_ptr, stats_ptr, hist_ptr, N: tl.constexpr):
    """Block-wide scans, sort, argmax and integer atomics (warp shuffles and shared-memory exchanges)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + offs)
    tl.store(cum_ptr + pid * N + offs, tl.cumsum(x, axis=0))
    tl.store(sorted_ptr + pid * N + offs, tl.sort(x))
    tl.store(stats_ptr + pid * 3, tl.argmax(x, axis=0))
    tl.store(stats_ptr + pid * 3 + 1, tl.max(x, axis=0))
    tl.store(stats_ptr + pid * 3 + 2, tl.reduce_or(x, axis=0))
    tl.atomic_add(hist_ptr + (x & 15), 1)


@triton.jit
def attn_bwd_dkdv_kernel(Q, K, V, DO, M, Delta, DK, DV, sm_scale, stride_h, stride_m, N_CTX,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Flash attention backward, dK and dV of one key block (the tutorial's inner loop over query blocks)."""
    start_n = tl.program_id(0) * BLOCK_N
    base = tl.program_id(1) * stride_h
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k = tl.load(K + base + offs_n[:, None] * stride_m + offs_d[None, :])
    v = tl.load(V + base + offs_n[:, None] * stride_m + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for start_m in range(0, N_CTX, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        qT = tl.load(Q + base + offs_m[None, :] * stride_m + offs_d[:, None])
        m = tl.load(M + tl.program_id(1) * N_CTX + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - m[None, :])
        do = tl.load(DO + base + offs_m[:, None] * stride_m + offs_d[None, :])
        dv += tl.dot(pT.to(tl.float16), do)
        Di = tl.load(Delta + tl.program_id(1) * N_CTX + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dk += tl.dot(dsT.to(tl.float16), tl.trans(qT))
    dk *= sm_scale
    tl.store(DK + base + offs_n[:, None] * stride_m + offs_d[None, :], dk.to(tl.float16))
    tl.store(DV + base + offs_n[:, None] * stride_m + offs_d[None, :], dv.to(tl.float16))


from triton.language.extra import libdevice  # noqa: E402  (here: the kernels above keep their PTX lines)
@triton.jit
def rms_norm_fwd_kernel(X, Y, W, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    """RMSNorm forward, one row per program: y = x * rsqrt(mean(x^2) + eps) * w."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Rstd + row, rstd)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


@triton.jit
def rms_norm_bwd_dx_kernel(DX, DY, X, W, Rstd, stride, N, BLOCK_SIZE: tl.constexpr):
    """RMSNorm backward dx: rstd * (w*dy - x * rstd^2 * mean(w*dy*x))."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.)
    w = tl.load(W + cols, mask=mask, other=0.)
    rstd = tl.load(Rstd + row)
    wdy = w * dy
    c = tl.sum(wdy * x, axis=0) / N
    dx = (wdy - x * (rstd * rstd * c)) * rstd
    tl.store(DX + row * stride + cols, dx, mask=mask)


@triton.jit
def rms_norm_bwd_dw_kernel(DW, DY, X, Rstd, stride, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """RMSNorm backward dw = sum over rows of dy * x * rstd (a block of columns per program, rows in order)."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * stride + cols[None, :]
        x = tl.load(X + offs, mask=mask, other=0.)
        dy = tl.load(DY + offs, mask=mask, other=0.)
        rstd = tl.load(Rstd + rows, mask=rows < M, other=0.)
        acc += dy * x * rstd[:, None]
    tl.store(DW + cols, tl.sum(acc, axis=0), mask=cols < N)


@triton.jit
def matmul_gelu_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr):
    """Matmul with a GELU epilogue: "gelu_tanh" (libdevice tanh), "gelu_tanh_approx" (tanh.approx.f32, inline),
    "gelu_erf" (libdevice erf)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    if ACTIVATION == "gelu_tanh":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        out = 0.5 * acc * (1 + libdevice.tanh(inner))
    elif ACTIVATION == "gelu_tanh_approx":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        th = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [inner], dtype=tl.float32, is_pure=True,
                                       pack=1)
        out = 0.5 * acc * (1 + th)
    else:
        out = 0.5 * acc * (1 + libdevice.erf(acc * 0.7071067811865476))
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], out)


@triton.jit
def swiglu_matmul_kernel(a_ptr, w1_ptr, w3_ptr, c_ptr, K, stride_am, stride_wk, stride_cm, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """SwiGLU: silu(a @ W1) * (a @ W3), two accumulators, the epilogue in f32 (tl.sigmoid), stored f16."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc3 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :])
        w1 = tl.load(w1_ptr + (k + offs_k)[:, None] * stride_wk + offs_n[None, :])
        w3 = tl.load(w3_ptr + (k + offs_k)[:, None] * stride_wk + offs_n[None, :])
        acc1 = tl.dot(a, w1, acc1)
        acc3 = tl.dot(a, w3, acc3)
    out = acc1 * tl.sigmoid(acc1) * acc3
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], out.to(tl.float16))


@triton.jit
def cross_entropy_fwd_kernel(logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, V, BLOCK_V: tl.constexpr):
    """Cross-entropy forward per row: lse = max + log(sum(exp(x - max))), loss = lse - x[target]."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_V)
    x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    t = tl.load(target_ptr + row)
    x_t = tl.load(logits_ptr + row * stride + t)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, lse - x_t)


@triton.jit
def cross_entropy_bwd_kernel(dlogits_ptr, logits_ptr, target_ptr, lse_ptr, dloss_ptr, stride, V,
                             BLOCK_V: tl.constexpr):
    """Cross-entropy backward: dlogits = (exp(x - lse) - onehot(target)) * dloss."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_V)
    mask = cols < V
    x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=0.)
    lse = tl.load(lse_ptr + row)
    t = tl.load(target_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    p = tl.exp(x - lse)
    d = tl.where(cols == t, p - 1.0, p) * dloss
    tl.store(dlogits_ptr + row * stride + cols, d, mask=mask)


@triton.jit
def flash_attn_fwd_kernel(Q, K, V, Out, LSE, sm_scale, stride_h, stride_m, N_CTX, HEAD_DIM: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash attention forward as in the tutorial: blocks below the diagonal unmasked, the diagonal block masked
    (CAUSAL), online softmax in base 2; stores the output and the row's log-sum-exp (base 2)."""
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_h * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, k)
        if CAUSAL:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(LSE + off_h * N_CTX + offs_m, m_i)
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(Out.dtype.element_ty))


@triton.jit
def attn_bwd_dq_kernel(Q, K, V, DO, M, Delta, DQ, sm_scale, stride_h, stride_m, N_CTX,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Flash attention backward, dQ of one query block (the tutorial's loop over key blocks)."""
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1) * stride_h
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :])
    do = tl.load(DO + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m = tl.load(M + tl.program_id(1) * N_CTX + offs_m)
    Di = tl.load(Delta + tl.program_id(1) * N_CTX + offs_m)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kT = tl.load(K + base + offs_n[None, :] * stride_m + offs_d[:, None])
        vT = tl.load(V + base + offs_n[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m[:, None])
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        dq += tl.dot(ds.to(tl.float16), tl.trans(kT))
    dq *= sm_scale
    tl.store(DQ + base + offs_m[:, None] * stride_m + offs_d[None, :], dq.to(tl.float16))


@triton.jit
def special_functions_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Triton's math on one block of operands, one output row per function (special values among them)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    tl.store(out_ptr + 0 * n + offs, tl.exp(x), mask=mask)
    tl.store(out_ptr + 1 * n + offs, tl.exp2(x), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.log(x), mask=mask)
    tl.store(out_ptr + 3 * n + offs, tl.log2(x), mask=mask)
    tl.store(out_ptr + 4 * n + offs, tl.sqrt(x), mask=mask)
    tl.store(out_ptr + 5 * n + offs, tl.rsqrt(x), mask=mask)
    tl.store(out_ptr + 6 * n + offs, tl.sigmoid(x), mask=mask)
    tl.store(out_ptr + 7 * n + offs, x / y, mask=mask)
    tl.store(out_ptr + 8 * n + offs, libdevice.exp(x), mask=mask)
    tl.store(out_ptr + 9 * n + offs, libdevice.log(x), mask=mask)
    tl.store(out_ptr + 10 * n + offs, libdevice.tanh(x), mask=mask)
    tl.store(out_ptr + 11 * n + offs, libdevice.erf(x), mask=mask)


# ---------------------------------------------------------------------------------------------------------
# cases: seeded inputs (numpy's PCG64: the same words on every machine), launches, outputs


def _rng(name):
    return np.random.default_rng(abs(hash_name(name)) % (2 ** 32))


def hash_name(name):
    """A stable seed from a case name (Python's hash() is salted per process)."""
    import zlib
    return zlib.crc32(name.encode())


def _t(a, dtype=None):
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.to(dtype) if dtype is not None else t


def vadd(dev):
    r = _rng("vadd")
    n = 5000
    x, y = dev(_t(r.standard_normal(n, dtype=np.float32))), dev(_t(r.standard_normal(n, dtype=np.float32)))
    out = dev(torch.zeros(n, dtype=torch.float32))
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']), )  # noqa: E731
    k = add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return {"out": out}, k


def softmax(dev):
    r = _rng("softmax")
    x = dev(_t(r.standard_normal((48, 333), dtype=np.float32) * 4))
    y = dev(torch.zeros_like(x))
    k = softmax_kernel[(16, 1, 1)](y, x, x.stride(0), y.stride(0), 48, 333, BLOCK_SIZE=512, num_stages=2, num_warps=4)
    return {"y": y}, k


def _matmul(name, dtype, M, N, K, BM, BN, BK, warps, out_dtype, acc="fp32"):
    def run(dev):
        r = _rng(name)
        if dtype == torch.int8:
            a, b = r.integers(-128, 128, (M, K)).astype(np.int8), r.integers(-128, 128, (K, N)).astype(np.int8)
            a, b = _t(a), _t(b)
        else:
            a = _t(r.standard_normal((M, K), dtype=np.float32), dtype)
            b = _t(r.standard_normal((K, N), dtype=np.float32), dtype)
        a, b = dev(a), dev(b)
        c = dev(torch.zeros((M, N), dtype=out_dtype))
        grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )  # noqa
        ACC = {"fp32": tl.float32, "int32": tl.int32}[acc]
        k = matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                            c.stride(1), BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=2, ACC=ACC,
                            num_warps=warps, num_stages=3)
        return {"c": c}, k
    return run


def layernorm(dev):
    r = _rng("layernorm")
    M, N = 24, 300
    x = dev(_t(r.standard_normal((M, N), dtype=np.float32) * 2 + 0.5))
    w = dev(_t(r.random(N, dtype=np.float32) + 0.5))
    b = dev(_t(r.standard_normal(N, dtype=np.float32)))
    y = dev(torch.zeros((M, N), dtype=torch.float32))
    mean = dev(torch.zeros(M, dtype=torch.float32))
    rstd = dev(torch.zeros(M, dtype=torch.float32))
    k = layer_norm_fwd_kernel[(M, )](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK_SIZE=128, num_warps=4)
    return {"y": y, "mean": mean, "rstd": rstd}, k


def dropout(dev):
    r = _rng("dropout")
    n = 3000
    x = dev(_t(r.standard_normal(n, dtype=np.float32)))
    out = dev(torch.zeros(n, dtype=torch.float32))
    rnd = dev(torch.zeros(n, dtype=torch.float32))
    k = seeded_dropout_kernel[(triton.cdiv(n, 1024), )](x, out, rnd, n, 0.3, 123, BLOCK_SIZE=1024)
    return {"out": out, "random": rnd}, k


def attention(dev):
    r = _rng("attention")
    H, S, D = 2, 128, 64
    q, k, v = (dev(_t(r.standard_normal((H, S, D), dtype=np.float32), torch.float16)) for _ in range(3))
    o = dev(torch.zeros((H, S, D), dtype=torch.float16))
    k = attn_fwd_kernel[(S // 64, H)](q, k, v, o, 0.125, q.stride(0), q.stride(1), S, HEAD_DIM=D, BLOCK_M=64,
                                  BLOCK_N=32, num_warps=4)
    return {"o": o}, k


def layernorm_bwd(dev):
    r = _rng("layernorm_bwd")
    M, N, G = 12, 200, 12
    x = dev(_t(r.standard_normal((M, N), dtype=np.float32)))
    dy = dev(_t(r.standard_normal((M, N), dtype=np.float32)))
    w = dev(_t(r.random(N, dtype=np.float32) + 0.5))
    mean = dev(_t(r.standard_normal(M, dtype=np.float32) * 0.1))
    rstd = dev(_t(r.random(M, dtype=np.float32) + 0.5))
    dx = dev(torch.zeros((M, N), dtype=torch.float32))
    lock = dev(torch.zeros(2 * G, dtype=torch.int32))
    _dw = dev(torch.zeros((G, N), dtype=torch.float32))
    _db = dev(torch.zeros((G, N), dtype=torch.float32))
    dw = dev(torch.zeros(N, dtype=torch.float32))
    db = dev(torch.zeros(N, dtype=torch.float32))
    # GROUP_SIZE_M == M: every row owns its lock, so the partial sums are the same whatever order CTAs run in
    layer_norm_bwd_dx_fused_kernel[(M, )](dx, dy, _dw, _db, x, w, mean, rstd, lock, x.stride(0), N,
                                          BLOCK_SIZE_N=256, GROUP_SIZE_M=G, num_warps=4)
    k = layer_norm_bwd_dwdb_kernel[(triton.cdiv(N, 32), )](_dw, _db, dw, db, min(G, M), N, BLOCK_SIZE_M=32,
                                                            BLOCK_SIZE_N=32)
    return {"dx": dx, "dw": dw, "db": db}, k


def grouped_gemm(dev):
    r = _rng("grouped_gemm")
    shapes = [(64, 64, 32), (128, 64, 64), (64, 128, 32)]
    As, Bs, Cs = [], [], []
    for m, n, kk in shapes:
        As.append(dev(_t(r.standard_normal((m, kk), dtype=np.float32), torch.float16)))
        Bs.append(dev(_t(r.standard_normal((kk, n), dtype=np.float32), torch.float16)))
        Cs.append(dev(torch.zeros((m, n), dtype=torch.float16)))
    a_ptrs = dev(torch.tensor([a.data_ptr() for a in As], dtype=torch.int64))
    b_ptrs = dev(torch.tensor([b.data_ptr() for b in Bs], dtype=torch.int64))
    c_ptrs = dev(torch.tensor([c.data_ptr() for c in Cs], dtype=torch.int64))
    sizes = dev(torch.tensor([x for s in shapes for x in s], dtype=torch.int32))
    lds = dev(torch.tensor([x for a, b, c in zip(As, Bs, Cs) for x in (a.stride(0), b.stride(0), c.stride(0))],
                           dtype=torch.int32))
    k = grouped_matmul_kernel[(4, )](a_ptrs, b_ptrs, c_ptrs, sizes, lds, len(shapes), NUM_SM=4, BLOCK_SIZE_M=64,
                                     BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, num_warps=4)
    return {f"c{i}": c for i, c in enumerate(Cs)}, k


def tma_persistent(dev):
    from triton.tools.tensor_descriptor import TensorDescriptor

    r = _rng("tma_persistent")
    M, N, K = 128, 128, 96
    a = dev(_t(r.standard_normal((M, K), dtype=np.float32), torch.float16))
    b = dev(_t(r.standard_normal((N, K), dtype=np.float32), torch.float16))
    c = dev(torch.zeros((M, N), dtype=torch.float16))
    BM, BN, BK = 64, 64, 32
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BN, BK])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    k = matmul_tma_persistent_kernel[(3, )](a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
                                            BLOCK_SIZE_K=BK, NUM_SMS=3, num_warps=4, num_stages=3)
    return {"c": c}, k


def device_descriptors(dev):
    r = _rng("device_descriptors")
    M, N, K = 128, 64, 64
    a = dev(_t(r.standard_normal((M, K), dtype=np.float32), torch.float16))
    b = dev(_t(r.standard_normal((N, K), dtype=np.float32), torch.float16))
    c = dev(torch.zeros((M, N), dtype=torch.float16))
    triton.set_allocator(lambda size, align, stream: dev(torch.empty(size, dtype=torch.int8)))
    k = matmul_device_descriptor_kernel[(M // 64, N // 64)](a, b, c, M, N, K, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                                                             BLOCK_SIZE_K=32, num_warps=4)
    return {"c": c}, k


def scan_reduce(dev):
    r = _rng("scan_reduce")
    x = dev(_t(r.integers(-1000, 1000, (4, 256)).astype(np.int32)))
    cum = dev(torch.zeros((4, 256), dtype=torch.int32))
    srt = dev(torch.zeros((4, 256), dtype=torch.int32))
    stats = dev(torch.zeros((4, 3), dtype=torch.int32))
    hist = dev(torch.zeros(16, dtype=torch.int32))
    k = scan_reduce_kernel[(4, )](x, cum, srt, stats, hist, N=256, num_warps=4)
    return {"cum": cum, "sorted": srt, "stats": stats, "hist": hist}, k


def attention_bwd(dev):
    r = _rng("attention_bwd")
    H, S, D = 2, 64, 64
    q, k_, v, do = (dev(_t(r.standard_normal((H, S, D), dtype=np.float32), torch.float16)) for _ in range(4))
    m = dev(_t(r.standard_normal((H, S), dtype=np.float32) + 6))
    delta = dev(_t(r.standard_normal((H, S), dtype=np.float32) * 0.1))
    dk, dv = dev(torch.zeros((H, S, D), dtype=torch.float16)), dev(torch.zeros((H, S, D), dtype=torch.float16))
    k = attn_bwd_dkdv_kernel[(S // 32, H)](q, k_, v, do, m, delta, dk, dv, 0.125, q.stride(0), q.stride(1), S,
                                           HEAD_DIM=D, BLOCK_M=32, BLOCK_N=32, num_warps=4)
    return {"dk": dk, "dv": dv}, k


def vadd_clusters(dev):
    r = _rng("vadd_clusters")
    n = 3000
    x, y = dev(_t(r.standard_normal(n, dtype=np.float32))), dev(_t(r.standard_normal(n, dtype=np.float32)))
    out = dev(torch.zeros(n, dtype=torch.float32))
    k = add_kernel[(triton.cdiv(n, 512), )](x, y, out, n, BLOCK_SIZE=512, num_ctas=2)
    return {"out": out}, k


def _matmul_opts(name, dtype, M, N, K, BM, BN, BK, warps, out_dtype, **opts):
    def run(dev):
        r = _rng(name)
        a = dev(_t(r.standard_normal((M, K), dtype=np.float32), dtype))
        b = dev(_t(r.standard_normal((K, N), dtype=np.float32), dtype))
        c = dev(torch.zeros((M, N), dtype=out_dtype))
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), )
        k = matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                                c.stride(1), BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=2,
                                ACC=tl.float32, num_warps=warps, **opts)
        return {"c": c}, k
    return run


#: name -> (run, outputs whose words depend on the special-function unit (ex2, rcp, rsqrt, sqrt, div))
CASES = {
    "vadd": (vadd, ()),
    "softmax": (softmax, ("y",)),
    "matmul_f16_wgmma": (_matmul("matmul_f16_wgmma", torch.float16, 160, 96, 96, 64, 64, 32, 4, torch.float16), ()),
    "matmul_f16_mma": (_matmul("matmul_f16_mma", torch.float16, 48, 40, 80, 16, 32, 32, 2, torch.float16), ()),
    "matmul_bf16_wgmma": (_matmul("matmul_bf16_wgmma", torch.bfloat16, 64, 128, 64, 64, 64, 32, 4, torch.bfloat16), ()),
    "matmul_tf32_wgmma": (_matmul("matmul_tf32_wgmma", torch.float32, 128, 64, 64, 64, 64, 32, 4, torch.float32), ()),
    "matmul_e4m3_wgmma": (_matmul("matmul_e4m3_wgmma", torch.float8_e4m3fn, 64, 64, 128, 64, 64, 64, 4,
                                  torch.float32), ()),
    "matmul_int8_wgmma": (_matmul("matmul_int8_wgmma", torch.int8, 64, 64, 128, 64, 64, 64, 4, torch.int32,
                                  acc="int32"), ()),
    "layernorm": (layernorm, ("y", "mean", "rstd")),
    "dropout": (dropout, ("out",)),
    "attention": (attention, ("o",)),
    "layernorm_bwd": (layernorm_bwd, ("dx",)),
    "grouped_gemm": (grouped_gemm, ()),
    "tma_persistent": (tma_persistent, ()),
    "device_descriptors": (device_descriptors, ()),
    "scan_reduce": (scan_reduce, ()),
    "attention_bwd": (attention_bwd, ()),
    "vadd_clusters": (vadd_clusters, ()),
    "matmul_f16_maxnreg": (_matmul_opts("matmul_f16_maxnreg", torch.float16, 128, 64, 64, 64, 64, 32, 4,
                                        torch.float16, maxnreg=128, num_stages=2), ()),
    "matmul_e5m2_wgmma": (_matmul_opts("matmul_e5m2_wgmma", torch.float8_e5m2, 64, 64, 128, 64, 64, 64, 4,
                                       torch.float32), ()),
    "matmul_e5m2_mma": (_matmul_opts("matmul_e5m2_mma", torch.float8_e5m2, 32, 32, 64, 16, 32, 32, 2,
                                     torch.float32), ()),
    "matmul_f16_8warps": (_matmul_opts("matmul_f16_8warps", torch.float16, 128, 128, 64, 128, 64, 32, 8,
                                       torch.float32, num_stages=4), ()),
}



# ---------------------------------------------------------------------------------------------------------
# issue 29's kernels: normalization, activations, loss and attention around the special-function unit
# (tests/golden/triton_driver_sfu_sm90.npz)


def rmsnorm(dev):
    r = _rng("rmsnorm")
    M, N = 16, 300
    x = dev(_t(r.standard_normal((M, N), dtype=np.float32) * 2 + 0.25))
    w = dev(_t(r.random(N, dtype=np.float32) + 0.5))
    y = dev(torch.zeros((M, N), dtype=torch.float32))
    rstd = dev(torch.zeros(M, dtype=torch.float32))
    k = rms_norm_fwd_kernel[(M, )](x, y, w, rstd, x.stride(0), N, 1e-6, BLOCK_SIZE=512, num_warps=4)
    return {"y": y, "rstd": rstd}, k


def rmsnorm_bwd(dev):
    r = _rng("rmsnorm_bwd")
    M, N = 16, 300
    x = dev(_t(r.standard_normal((M, N), dtype=np.float32)))
    dy = dev(_t(r.standard_normal((M, N), dtype=np.float32)))
    w = dev(_t(r.random(N, dtype=np.float32) + 0.5))
    rstd = dev(_t(r.random(M, dtype=np.float32) + 0.5))
    dx = dev(torch.zeros((M, N), dtype=torch.float32))
    dw = dev(torch.zeros(N, dtype=torch.float32))
    rms_norm_bwd_dx_kernel[(M, )](dx, dy, x, w, rstd, x.stride(0), N, BLOCK_SIZE=512, num_warps=4)
    k = rms_norm_bwd_dw_kernel[(triton.cdiv(N, 64), )](dw, dy, x, rstd, x.stride(0), M, N, BLOCK_M=8, BLOCK_N=64)
    return {"dx": dx, "dw": dw}, k


def _matmul_gelu(activation):
    def run(dev):
        r = _rng("matmul_" + activation)
        M, N, K = 64, 64, 64
        a = dev(_t(r.standard_normal((M, K), dtype=np.float32) * 0.5, torch.float16))
        b = dev(_t(r.standard_normal((K, N), dtype=np.float32) * 0.5, torch.float16))
        c = dev(torch.zeros((M, N), dtype=torch.float32))
        k = matmul_gelu_kernel[(M // 64, N // 32)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                                                   BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, ACTIVATION=activation,
                                                   num_warps=4)
        return {"c": c}, k
    return run


def swiglu(dev):
    r = _rng("swiglu")
    M, N, K = 64, 64, 64
    a = dev(_t(r.standard_normal((M, K), dtype=np.float32) * 0.5, torch.float16))
    w1 = dev(_t(r.standard_normal((K, N), dtype=np.float32) * 0.5, torch.float16))
    w3 = dev(_t(r.standard_normal((K, N), dtype=np.float32) * 0.5, torch.float16))
    c = dev(torch.zeros((M, N), dtype=torch.float16))
    k = swiglu_matmul_kernel[(M // 64, N // 32)](a, w1, w3, c, K, a.stride(0), w1.stride(0), c.stride(0),
                                                 BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, num_warps=4)
    return {"c": c}, k


def cross_entropy(dev):
    r = _rng("cross_entropy")
    M, V = 16, 500
    logits = dev(_t(r.standard_normal((M, V), dtype=np.float32) * 3))
    target = dev(_t(r.integers(0, V, M).astype(np.int32)))
    loss, lse = dev(torch.zeros(M, dtype=torch.float32)), dev(torch.zeros(M, dtype=torch.float32))
    cross_entropy_fwd_kernel[(M, )](logits, target, loss, lse, logits.stride(0), V, BLOCK_V=512, num_warps=4)
    dloss = dev(torch.full((M, ), 1.0 / M, dtype=torch.float32))
    dlogits = dev(torch.zeros((M, V), dtype=torch.float32))
    k = cross_entropy_bwd_kernel[(M, )](dlogits, logits, target, lse, dloss, logits.stride(0), V, BLOCK_V=512,
                                        num_warps=4)
    return {"loss": loss, "lse": lse, "dlogits": dlogits}, k


def _flash_attention(causal):
    def run(dev):
        r = _rng("flash_attention_causal" if causal else "flash_attention")     # the same inputs on every target
        H, S, D = 2, 128, 64
        q, k_, v = (dev(_t(r.standard_normal((H, S, D), dtype=np.float32), torch.float16)) for _ in range(3))
        o = dev(torch.zeros((H, S, D), dtype=torch.float16))
        lse = dev(torch.zeros((H, S), dtype=torch.float32))
        k = flash_attn_fwd_kernel[(S // 64, H)](q, k_, v, o, lse, 0.125, q.stride(0), q.stride(1), S, HEAD_DIM=D,
                                                BLOCK_M=64, BLOCK_N=32, CAUSAL=causal, num_warps=4)
        return {"o": o, "lse": lse}, k
    return run


def attention_bwd_dq(dev):
    r = _rng("attention_bwd_dq")
    H, S, D = 2, 64, 64
    # q pre-scaled by sm_scale * log2(e) as the tutorial's backward takes it: exp2(q.k - m) stays finite
    q = dev(_t(r.standard_normal((H, S, D), dtype=np.float32) * 0.18, torch.float16))
    k_, v, do = (dev(_t(r.standard_normal((H, S, D), dtype=np.float32), torch.float16)) for _ in range(3))
    m = dev(_t(r.standard_normal((H, S), dtype=np.float32) + 6))
    delta = dev(_t(r.standard_normal((H, S), dtype=np.float32) * 0.1))
    dq = dev(torch.zeros((H, S, D), dtype=torch.float16))
    k = attn_bwd_dq_kernel[(S // 32, H)](q, k_, v, do, m, delta, dq, 0.125, q.stride(0), q.stride(1), S,
                                         HEAD_DIM=D, BLOCK_M=32, BLOCK_N=32, num_warps=4)
    return {"dq": dq}, k


#: the operands of special_functions: IEEE edge words, the thresholds where exp / exp2 / tanh / erf saturate
#: or go subnormal, then ordinary values over many binades
_EDGE_OPERANDS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, -1.1754944e-38,
                  3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-30, -1e-30, 1e-8, -1e-8, 88.72, 88.73,
                  -87.33, -87.34, -103.97, -104.0, 127.99, 128.0, -126.0, -126.5, -149.0, -150.0, 0.0039, 0.0040,
                  8.0, -8.0, 9.01, 3.92, 3.93, -3.93, 10.0, -10.0, 0.693147, 1.4426950, 0.6931472, 2.3e-10, 6e-39]


def special_functions(dev):
    r = _rng("special_functions")
    n = 1024
    edge = np.array(_EDGE_OPERANDS, np.float32)
    ordinary = np.concatenate([r.standard_normal(400).astype(np.float32) * 4,
                               np.exp2(r.uniform(-140, 127, n - 400 - edge.size)).astype(np.float32)
                               * r.choice(np.float32([-1, 1]), n - 400 - edge.size)])
    x = np.concatenate([edge, ordinary]).astype(np.float32)
    y = np.roll(x, 7) * np.where(np.arange(n) % 2 == 1, 1, -1).astype(np.float32)
    xd, yd = dev(_t(x)), dev(_t(y))
    out = dev(torch.zeros((12, n), dtype=torch.float32))
    k = special_functions_kernel[(triton.cdiv(n, 256), )](xd, yd, out, n, BLOCK=256, num_warps=4)
    return {"out": out}, k


#: name -> (run, outputs): kernels of issue 29 whose words pass through the special-function unit
SFU_CASES = {
    "rmsnorm": (rmsnorm, ("y", "rstd")),
    "rmsnorm_bwd": (rmsnorm_bwd, ("dx", "dw")),
    "matmul_gelu_tanh": (_matmul_gelu("gelu_tanh"), ("c",)),
    "matmul_gelu_tanh_approx": (_matmul_gelu("gelu_tanh_approx"), ("c",)),
    "matmul_gelu_erf": (_matmul_gelu("gelu_erf"), ("c",)),
    "swiglu": (swiglu, ("c",)),
    "cross_entropy": (cross_entropy, ("loss", "lse", "dlogits")),
    "flash_attention": (_flash_attention(False), ("o", "lse")),
    "flash_attention_causal": (_flash_attention(True), ("o", "lse")),
    "flash_attention_sm80": (_flash_attention(False), ("o", "lse")),
    "flash_attention_causal_sm80": (_flash_attention(True), ("o", "lse")),
    "attention_bwd_dq": (attention_bwd_dq, ("dq",)),
    "special_functions": (special_functions, ("out",)),
}

#: the Triton target a case compiles for when it is not sm_90a (the GPU runs that target's PTX through its
#: driver's JIT, as it runs an sm_80 binary's embedded PTX)
TARGET = {"flash_attention_sm80": "sm_80", "flash_attention_causal_sm80": "sm_80"}

def words(t):
    """A tensor's elements as unsigned integer words (numpy), wherever it lives."""
    t = t.detach().contiguous().cpu()
    w = t.element_size()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[w]).numpy().view(
        {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[w]).copy()


def ptx_digest(ptx):
    """sha256 of a PTX text's code: without ``.file`` lines and the ``.section .debug_*`` blocks after it (they
    carry the source file's path, which differs per machine)."""
    import hashlib
    code = ptx.split("\t.section\t.debug", 1)[0].split("\n.section .debug", 1)[0]
    body = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(".file"))
    return hashlib.sha256(body.encode()).hexdigest()
