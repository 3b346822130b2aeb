"""warpsim.gemm against whole GEMMs captured on an H100 (tests/golden/gemm_sm90_*.npz), its dask path
on a LocalCluster of worker processes, and its argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import warpsim

import gemm_replay as gr

CASES, ARRAYS = gr.load()
F16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _case_id(c):
    if c["source"] == "mma_kernel":
        pe = f"-promote{c['promote_every']}" if c["promote_every"] else ""
        return f"{c['key']}-mma-{c['instruction'].split('.aligned.')[1]}-{c['set']}{pe}"
    imp = f"-imprecise{c['max_num_imprecise_acc']}" if c["max_num_imprecise_acc"] else ""
    return f"{c['key']}-triton-{c['path']}-{c['elem']}-{c['acc']}-bk{c['BLOCK_K']}{imp}-{c['set']}"


def _params():
    out = []
    for c in CASES:
        marks = ()
        if not gr.modelled(c):
            marks = pytest.mark.xfail(strict=True, raises=NotImplementedError, reason=(
                "native wgmma fp8 (Triton's wgmma path for e4m3/e5m2) has no per-instruction model yet: the "
                "catalog has no wgmma rows and the f32-accumulate wgmma fp8 arithmetic is not fitted"))
        out.append(pytest.param(c, id=_case_id(c), marks=marks))
    return out


def test_captures_present():
    srcs = {(c["source"], c.get("path")) for c in CASES}
    assert {("mma_kernel", None), ("triton", "mma"), ("triton", "wgmma")} <= srcs
    assert len(CASES) == 119
    assert max(c["set_meta"]["K"] for c in CASES) == 4096


@pytest.mark.parametrize("case", _params())
def test_replay_capture(case):
    """Every captured word, bit for bit."""
    A, B, C, kw = gr.gemm_args(case, ARRAYS)
    A0, B0, C0 = A.copy(), B.copy(), C.copy()
    D = warpsim.gemm(A, B, C, **kw)
    want = gr.expected(case, ARRAYS)
    got = gr.bits(D)
    assert got.shape == want.shape
    bad = np.argwhere(got != want)
    assert bad.size == 0, (f"{len(bad)} of {want.size} words differ; first at {tuple(bad[0])}: "
                           f"got {got[tuple(bad[0])]:#x}, the H100 wrote {want[tuple(bad[0])]:#x}")
    for x, x0 in ((A, A0), (B, B0), (C, C0)):
        assert np.array_equal(gr.bits(x), gr.bits(x0))        # inputs never modified


def test_split_k_serial_is_promotion_on_hardware():
    """Serial split-K into S slices is the same arithmetic as promotion every K/S elements: both
    reproduce the captured promotion kernel (partials from zero, one f32 __fadd_rn each)."""
    for c in CASES:
        if c["source"] == "mma_kernel" and c["promote_every"]:
            A, B, C, kw = gr.gemm_args(c, ARRAYS)
            K = A.shape[1]
            kw = dict(kw, promote_every=None, split_k=K // c["promote_every"])
            assert np.array_equal(gr.bits(warpsim.gemm(A, B, C, **kw)), gr.expected(c, ARRAYS)), c["key"]


def _f16_inputs(M=32, N=16, K=128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16),
            rng.standard_normal((M, N)).astype(np.float32) * 8)


def test_split_k_parallel_reduction():
    """parallel: each slice chained from +0 (a gemm of its own without C), then ((P0 + P1) + ...) + C,
    every addition one f32 rounding to nearest even (numpy float32 arithmetic)."""
    A, B, C = _f16_inputs()
    D = warpsim.gemm(A, B, C, instruction=F16, split_k=4, split_k_reduce="parallel")
    parts = [warpsim.gemm(A[:, s:s + 32], B[s:s + 32], instruction=F16) for s in range(0, 128, 32)]
    acc = parts[0]
    for p in parts[1:]:
        acc = acc + p
    assert np.array_equal(D.view(np.uint32), (acc + C).view(np.uint32))
    serial = warpsim.gemm(A, B, C, instruction=F16, split_k=4)
    acc = C
    for p in parts:
        acc = acc + p
    assert np.array_equal(serial.view(np.uint32), acc.view(np.uint32))
    assert not np.array_equal(serial.view(np.uint32), D.view(np.uint32))   # the order is visible


def test_f16_accumulator_split_k_reduces_in_f32():
    A, B, _ = _f16_inputs()
    C = np.zeros((32, 16), np.float16)
    op = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
    D = warpsim.gemm(A, B, C, instruction=op, split_k=2)
    parts = [warpsim.gemm(A[:, s:s + 64], B[s:s + 64], instruction=op).astype(np.float32) for s in (0, 64)]
    assert D.dtype == np.float16
    assert np.array_equal(D.view(np.uint16), ((C.astype(np.float32) + parts[0]) + parts[1]).astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("op", [
    F16,
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
    "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
    "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
    "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc",
    "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
    "mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32",
])
def test_one_step_is_matmul(op):
    """Consistency (the proof is the captures): with K == k, gemm is warpsim.matmul of one instruction."""
    ins = warpsim.parse(op)
    rng = np.random.default_rng(1)
    m, n, k = ins.mnk
    ta, tb, tc = (ins.elem(r) for r in "abc")

    def mat(t, shape):
        if t.is_float:
            return rng.standard_normal(shape).astype(t.numpy_dtype)
        return rng.integers(t.min_int, t.max_int + 1, size=shape)
    A, B, C = mat(ta, (m, k)), mat(tb, (k, n)), mat(tc, (m, n))
    if ins.is_sparse:
        keep = 1 if ins.atype == "tf32" else 2
        per = 2 if ins.atype == "tf32" else 4
        g = A.reshape(m, k // per, per)
        g[..., keep:] = 0
    want = warpsim.matmul(op, A, B, C)
    got = warpsim.gemm(A, B, C, instruction=op)
    assert got.dtype == want.dtype
    assert np.array_equal(gr.bits(got), gr.bits(want))


def test_batch_and_progress():
    A, B, C = _f16_inputs()
    calls = []
    D = warpsim.gemm(np.stack([A, -A]), B, C, instruction=F16, progress=lambda done, total: calls.append((done, total)))
    assert D.shape == (2, 32, 16)
    assert np.array_equal(D[0].view(np.uint32), warpsim.gemm(A, B, C, instruction=F16).view(np.uint32))
    assert calls and calls[-1] == (32, 32)


def test_pad_equals_zero_filled_kernel():
    A, B, C = _f16_inputs()
    a, b, c = A[:30, :100], B[:100, :13], C[:30, :13]
    with pytest.raises(ValueError, match=r"M = 30 is not a multiple .* \(16\).*pad=True"):
        warpsim.gemm(a, b, c, instruction=F16)
    with pytest.raises(ValueError, match=r"K = 100 is not a multiple"):
        warpsim.gemm(A[:, :100], B[:100], instruction=F16)
    D = warpsim.gemm(a, b, c, instruction=F16, pad=True)
    Ap = np.zeros((32, 112), np.float16)
    Ap[:30, :100] = a
    Bp = np.zeros((112, 16), np.float16)
    Bp[:100, :13] = b
    Cp = np.zeros((32, 16), np.float32)
    Cp[:30, :13] = c
    assert D.shape == (30, 13)
    assert np.array_equal(D.view(np.uint32), warpsim.gemm(Ap, Bp, Cp, instruction=F16)[:30, :13].view(np.uint32))


def test_bad_arguments():
    A, B, C = _f16_inputs()
    with pytest.raises(NotImplementedError, match="wgmma"):
        warpsim.gemm(A, B, instruction="wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16")
    with pytest.raises(ValueError, match="not an mma opcode|unknown|malformed"):
        warpsim.gemm(A, B, instruction="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f99")
    with pytest.raises(TypeError, match="split_k must be an integer"):
        warpsim.gemm(A, B, instruction=F16, split_k=2.0)
    with pytest.raises(ValueError, match="split_k must be >= 1"):
        warpsim.gemm(A, B, instruction=F16, split_k=0)
    with pytest.raises(ValueError, match=r"K = 128 is not a multiple .* split_k"):
        warpsim.gemm(A, B, instruction=F16, split_k=3)
    with pytest.raises(ValueError, match="split_k_reduce must be one of"):
        warpsim.gemm(A, B, instruction=F16, split_k=2, split_k_reduce="tree")
    with pytest.raises(ValueError, match="promote_every = 24 must be a multiple of the k step"):
        warpsim.gemm(A, B, instruction=F16, promote_every=24)
    with pytest.raises(ValueError, match="promote_every needs an f32 accumulator"):
        warpsim.gemm(A, B, instruction="mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", promote_every=32)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        warpsim.gemm(A, B[:64], instruction=F16)
    with pytest.raises(ValueError, match=r"C must have shape \(M, N\) = \(32, 16\)"):
        warpsim.gemm(A, B, C[:16], instruction=F16)
    with pytest.raises(ValueError, match="k_order must be a permutation"):
        warpsim.gemm(A, B, instruction=F16, k_order=np.zeros(128, int))
    sp = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    with pytest.raises(ValueError, match=r"A is not 2:4 .* row 0, columns 0..3 hold 4 nonzero"):
        warpsim.gemm(A, B, instruction=sp)


def test_sparse_ignores_dropped_positions():
    """Sparse A: the 2:4 compression of warpsim.compress; values are kept, zeros dropped."""
    A, B, C = _f16_inputs()
    sp = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    A2 = A.copy()
    A2.reshape(32, 32, 4)[..., 2:] = 0
    D = warpsim.gemm(A2, B, C, instruction=sp)
    want = C.copy()
    for s in range(0, 128, 32):
        for i in range(0, 32, 16):
            for j in range(0, 16, 8):
                want[i:i + 16, j:j + 8] = warpsim.matmul(sp, A2[i:i + 16, s:s + 32], B[s:s + 32, j:j + 8], want[i:i + 16, j:j + 8])
    assert np.array_equal(D.view(np.uint32), want.view(np.uint32))


# --- dask -------------------------------------------------------------------------------------

_DASK_KEYS = ("case0", "case7", "case23", "case28", "case34", "case35")   # f16, f16 acc, s8 sat, f64, sparse fp8, promote


def _dask_cases():
    mma = [c for c in CASES if c["source"] == "mma_kernel" and c["key"] in _DASK_KEYS]
    tri = [c for c in CASES if c["source"] == "triton" and gr.modelled(c)]
    picked = {}
    for c in tri:      # one per (path, elem, acc)
        picked.setdefault((c["path"], c["elem"], c["acc"]), c)
    return mma + list(picked.values())


def test_dask_local_cluster_replays_captures():
    """The dask path on a LocalCluster of worker processes: the same words as the H100 (and so as the
    single-machine call), for chunked M and N."""
    da = pytest.importorskip("dask.array", reason="dask is an optional extra: pip install 'warpsim[dask]'")
    distributed = pytest.importorskip("distributed", reason="dask.distributed is part of the 'dask' extra")
    cases = _dask_cases()
    assert len(cases) >= 12
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        for c in cases:
            A, B, C, kw = gr.gemm_args(c, ARRAYS)
            M, N = C.shape
            dA = da.from_array(A, chunks=(M // 2, A.shape[1] // 2))
            dB = da.from_array(B, chunks=(B.shape[0], max(8, N // 2)))
            dC = da.from_array(C, chunks=(M // 4, N))
            D = warpsim.gemm(dA, dB, dC, **kw)
            assert isinstance(D, da.Array)
            got = gr.bits(D.compute())
            assert np.array_equal(got, gr.expected(c, ARRAYS)), _case_id(c)


def test_dask_argument_checks():
    da = pytest.importorskip("dask.array", reason="dask is an optional extra: pip install 'warpsim[dask]'")
    A, B, C = _f16_inputs()
    with pytest.raises(ValueError, match="N = 12 is not a multiple"):
        warpsim.gemm(da.from_array(A), da.from_array(B[:, :12]), instruction=F16)
    with pytest.raises(ValueError, match="pad=True is not supported for dask"):
        warpsim.gemm(da.from_array(A), B, instruction=F16, pad=True)
