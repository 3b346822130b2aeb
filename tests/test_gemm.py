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
    return [pytest.param(c, id=_case_id(c)) for c in CASES]


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


def test_split_k_f64_and_saturating_s32():
    """f64: the reduction is f64 additions; .satfinite s32: every reduction addition clamps."""
    rng = np.random.default_rng(2)
    A, B, C = rng.standard_normal((16, 64)), rng.standard_normal((64, 8)), rng.standard_normal((16, 8))
    op = "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"
    P = [warpsim.gemm(A[:, s:s + 32], B[s:s + 32], instruction=op) for s in (0, 32)]
    assert np.array_equal(warpsim.gemm(A, B, C, instruction=op, split_k=2), (C + P[0]) + P[1])
    op = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
    A, B = rng.integers(-128, 128, (16, 64)), rng.integers(-128, 128, (64, 8))
    C = np.full((16, 8), 2**31 - 5)
    P = [warpsim.gemm(A[:, s:s + 32], B[s:s + 32], instruction=op).astype(np.int64) for s in (0, 32)]
    want = np.clip(np.clip(C + P[0], -2**31, 2**31 - 1) + P[1], -2**31, 2**31 - 1)
    assert np.array_equal(warpsim.gemm(A, B, C, instruction=op, split_k=2), want)


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


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
def test_other_architectures_chain_their_recipes(arch):
    """arch selects the per-instruction recipes (modelled targets): two steps = two chained matmuls."""
    A, B, C = _f16_inputs(M=16, N=8, K=32)
    want = warpsim.matmul(F16, A[:, 16:], B[16:], warpsim.matmul(F16, A[:, :16], B[:16], C, arch=arch), arch=arch)
    assert np.array_equal(warpsim.gemm(A, B, C, instruction=F16, arch=arch).view(np.uint32), want.view(np.uint32))


def test_unscaled_sm120a_kind_form_and_block_scaled_refused():
    op = "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e2m1.f32"
    ins = warpsim.parse(op, arch="sm_120a")
    rng = np.random.default_rng(3)
    A = (rng.integers(-4, 5, (16, 64)) / 2).astype(ins.elem("a").numpy_dtype)
    B = (rng.integers(-4, 5, (64, 8)) / 2).astype(ins.elem("b").numpy_dtype)
    want = warpsim.matmul(op, A[:, 32:], B[32:], warpsim.matmul(op, A[:, :32], B[:32], arch="sm_120a"), arch="sm_120a")
    assert np.array_equal(warpsim.gemm(A, B, instruction=op, arch="sm_120a").view(np.uint32), want.view(np.uint32))
    from warpsim.isa.catalog import CATALOG
    scaled = next(i for i in CATALOG if getattr(i, "block_scaled", False))
    with pytest.raises(NotImplementedError, match="block-scaled forms need per-block scale operands"):
        warpsim.gemm(np.zeros((16, 64)), np.zeros((64, 8)), instruction=scaled.opcode, arch="sm_120a")


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
    with pytest.raises(ValueError, match=r"M = 32 is not a multiple of the tile's m of wgmma.*\(64\)"):
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
    tri = [c for c in CASES if c["source"] == "triton"]
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
    # the single-machine call first: its words are what the cluster must reproduce, and it compiles
    # the kernels into numba's on-disk cache (a worker compiling for a minute holds the GIL and
    # starves dask's own communication)
    single = {}
    for c in cases:
        A, B, C, kw = gr.gemm_args(c, ARRAYS)
        single[_case_id(c)] = gr.bits(warpsim.gemm(A, B, C, **kw))
        assert np.array_equal(single[_case_id(c)], gr.expected(c, ARRAYS)), _case_id(c)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for c in cases:
            A, B, C, kw = gr.gemm_args(c, ARRAYS)
            M, N = C.shape
            dA = da.from_array(A, chunks=(M // 2, A.shape[1] // 2))
            dB = da.from_array(B, chunks=(B.shape[0], max(8, N // 2)))
            dC = da.from_array(C, chunks=(M // 4, N))
            D = warpsim.gemm(dA, dB, dC, **kw)
            assert isinstance(D, da.Array)
            got = gr.bits(D.compute())
            assert np.array_equal(got, single[_case_id(c)]), _case_id(c)


def test_dask_argument_checks():
    da = pytest.importorskip("dask.array", reason="dask is an optional extra: pip install 'warpsim[dask]'")
    A, B, C = _f16_inputs()
    with pytest.raises(ValueError, match="N = 12 is not a multiple"):
        warpsim.gemm(da.from_array(A), da.from_array(B[:, :12]), instruction=F16)
    with pytest.raises(ValueError, match="pad=True is not supported for dask"):
        warpsim.gemm(da.from_array(A), B, instruction=F16, pad=True)


# --- the capture kernel generator and the command line ----------------------------------------------

def test_tiled_capture_kernel_is_the_chain():
    """warpsim.hw.gemm packs tiles exactly as its kernel walks them: chaining warpsim.mma over the
    packed words (what the generated kernel does on the GPU) gives warpsim.gemm's words."""
    from warpsim.hw.gemm import gemm_kernel_source, pack_tiles, unpack_tiles
    from warpsim.isa.codec import to_bits

    op = "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32"
    ins = warpsim.parse(op)
    rng = np.random.default_rng(5)
    A = rng.standard_normal((32, 64)).astype(ins.elem("a").numpy_dtype)
    B = rng.standard_normal((64, 16)).astype(ins.elem("b").numpy_dtype)
    C = rng.standard_normal((32, 16)).astype(np.float32)
    pk = pack_tiles(op, *(to_bits(x, ins.elem(r)) for x, r in ((A, "a"), (B, "b"), (C, "c"))))
    Tm, Tn, S = pk["Tm"], pk["Tn"], pk["S"]
    a, b = pk["a"].reshape(Tm, S, 32, -1), pk["b"].reshape(Tn, S, 32, -1)
    t = np.arange(Tm * Tn)
    d = pk["c"]
    for s in range(S):
        d = warpsim.mma(op, np.ascontiguousarray(a[t // Tn, s]), np.ascontiguousarray(b[t % Tn, s]), d)
    D = unpack_tiles(op, d, Tm, Tn)
    assert np.array_equal(D.astype(np.uint32), warpsim.gemm(A, B, C, instruction=op).view(np.uint32))
    src = gemm_kernel_source([(op, 0, 0), (F16, 0, 4)])
    assert src.count("__global__") == 2 and f'asm volatile("{op} ' in src and "__fadd_rn" in src


def test_cli_gemm_report(tmp_path, capsys):
    from warpsim.cli.main import main

    svg = tmp_path / "h.svg"
    out = tmp_path / "d.npy"
    assert main(["gemm", F16, "--m", "32", "--n", "16", "--k", "256", "--dist", "mixed", "--split-k", "2",
                 "--svg", str(svg), "--out", str(out)]) == 0
    cap = capsys.readouterr()
    for text in ("32x16x256", "split_k 2 (serial)", "ulp distance", "relative error", "p99.9",
                 "equal to the exactly rounded result", "bits lost", "of 24 significant bits"):
        assert text in cap.out, text
    assert "100.0%" in cap.err                              # progress on stderr
    assert svg.read_text().startswith("<svg") and "ulp distance" in svg.read_text()
    assert np.load(out).shape == (32, 16)
    np.save(tmp_path / "a.npy", np.ones((16, 32), np.float16))
    np.save(tmp_path / "b.npy", np.ones((32, 8), np.float16))
    assert main(["gemm", F16, "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "equal to the exactly rounded result: 100.00% of 128" in cap.out and cap.err == ""
    assert main(["gemm", F16, "--m", "30", "--no-progress"]) == 2
    assert "pad=True" in capsys.readouterr().err
    assert main(["gemm", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "--no-progress"]) == 0
    assert "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16" in capsys.readouterr().out


def test_report_exact_reference_ties():
    """The exactly rounded reference resolves ties of D's format with the residual's sign."""
    from warpsim.cli.gemm_report import report

    ins = warpsim.parse(F16)
    A = np.zeros((16, 16), np.float16)
    B = np.zeros((16, 8), np.float16)
    A[:, 0], B[0, :] = 1.0, 1.0                         # 1
    A[:, 1], B[1, :] = 2.0 ** -12, 2.0 ** -12           # + 2^-24: exactly half an f32 ulp of 1
    A[:, 2], B[2, :] = 2.0 ** -14, 2.0 ** -14           # + 2^-28: breaks the tie upwards
    C = np.zeros((16, 8), np.float32)
    D = np.full((16, 8), np.float32(1 + 2.0 ** -23))
    st = report(A, B, C, D, ins)
    assert st["equal"] == 1.0 and st["ulp"].max() == 0
    A[:, 2] = 0
    st = report(A, B, C, D, ins)                        # now an exact tie: rounds to even, 1.0
    assert st["equal"] == 0.0 and st["ulp"].max() == 1


@pytest.mark.parametrize("key", ["case0", "case5", "case17", "case23", "case28", "case31", "case35", "case74"])
def test_exact_kernel_replays_captures(key, monkeypatch):
    """The exact reference kernel alone (WARPSIM_GENERIC=1: no fast path) gives the captured words too."""
    from warpsim.engine import kernel

    monkeypatch.setattr(kernel, "FORCE_GENERIC", True)
    c = next(c for c in CASES if c["key"] == key)
    A, B, C, kw = gr.gemm_args(c, ARRAYS)
    assert np.array_equal(gr.bits(warpsim.gemm(A, B, C, **kw)), gr.expected(c, ARRAYS))


_WG_FP8 = ["wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3", "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3",
           "wgmma.mma_async.sync.aligned.m64n16k32.f16.e5m2.e5m2"]


@pytest.mark.parametrize("op", _WG_FP8)
def test_wgmma_fp8_fast_path_equals_exact_kernel(op, monkeypatch):
    """The fp8 wgmma chain (f32: 13 mantissa bits kept, truncated) in the float64 fast path gives the
    exact kernel's words: ordinary values without any panel sent to the exact kernel, and random bit
    patterns (NaN, inf, subnormals) with and without promotion."""
    from warpsim.engine import gemm as eg
    from warpsim.engine import kernel

    ins = warpsim.parse(op)
    ta, tb, tc = (ins.elem(r) for r in "abc")
    rng = np.random.default_rng(7)
    M, N, K = 128, 2 * ins.mnk[1], 256
    calls = []
    real = eg.exact_tasks

    def spy(*a):
        calls.append(len(a[-1]))
        return real(*a)

    monkeypatch.setattr(eg, "exact_tasks", spy)
    for dist in ("normal", "bits", "finite"):
        if dist == "normal":
            A = rng.standard_normal((M, K)).astype(ta.numpy_dtype)
            B = rng.standard_normal((K, N)).astype(tb.numpy_dtype)
            C = (rng.standard_normal((M, N)) * 4).astype(tc.numpy_dtype)
        else:
            A = rng.integers(0, 256, (M, K), dtype=np.uint8).view(ta.numpy_dtype)
            B = rng.integers(0, 256, (K, N), dtype=np.uint8).view(tb.numpy_dtype)
            B[:, :8] = rng.standard_normal((K, 8)).astype(tb.numpy_dtype)       # finite panels too
            w = 32 if tc.bits == 32 else 16
            C = rng.integers(0, 1 << w, (M, N), dtype=np.uint64).astype(f"u{w // 8}").view(tc.numpy_dtype)
            if dist == "finite":        # every exponent, subnormals and zeros, no NaN / inf
                with np.errstate(invalid="ignore"):
                    A, B, C = (np.where(np.isfinite(x.astype(np.float64)), x, x.dtype.type(0)) for x in (A, B, C))
        for kw in ({}, {"promote_every": 64}, {"split_k": 2}):
            if kw.get("promote_every") and ins.dtype != "f32":
                continue
            calls.clear()
            got = warpsim.gemm(A, B, C, instruction=op, **kw)
            if dist == "normal":
                assert sum(calls) == 0          # every panel computed by the fast kernel
            monkeypatch.setattr(kernel, "FORCE_GENERIC", True)
            want = warpsim.gemm(A, B, C, instruction=op, **kw)
            monkeypatch.setattr(kernel, "FORCE_GENERIC", False)
            assert np.array_equal(gr.bits(got), gr.bits(want)), (dist, kw)
