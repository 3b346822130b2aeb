"""Fuzzing every surface a user reaches: bad input is a clear error, inputs stay as given, nothing hangs.

Hypothesis with a fixed seed (``derandomize``) and a CI budget of a few hundred to a few thousand
cases per surface; ``WARPSIM_FUZZ=N`` (or ``pytest --fuzz N``) multiplies every budget by N for a
longer local run.  A case passes if the call returns, or raises ValueError / TypeError /
PTXError (NotImplementedError for forms documented as not modelled) with a message; anything
else (IndexError, ZeroDivisionError, SystemError, ...), a changed input or a case running
longer than its time limit fails.  The regression cases of issue 24 are at the end.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import warpsim
import warpsim.ptx as wp
from warpsim.isa.smem import decode_descriptor
from warpsim.ptx import PTXError

SCALE = max(1, int(os.environ.get("WARPSIM_FUZZ", "1") or 1))
CLEAR = (ValueError, TypeError, PTXError, NotImplementedError)
TIME_LIMIT_S = 20


def fuzz(n):
    """Hypothesis settings: ``n`` cases (times WARPSIM_FUZZ), fixed seed, no per-case deadline."""
    return settings(max_examples=n * SCALE, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds=TIME_LIMIT_S):
    def alarm(*_):
        raise Hang(f"no result within {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _snapshot(x):
    if isinstance(x, np.ndarray):
        return ("nd", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_snapshot(v) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, _snapshot(v)) for k, v in x.items()))
    return ("obj", repr(x))


def check(fn, *args, _writes=(), _also=(), **kw):
    """Call ``fn``; a clear error is fine; anything else, a mutated argument or a hang fails the case.

    _writes: positions of arguments the call writes by contract (a kernel's output arrays)."""
    keep = lambda: _snapshot(([a for i, a in enumerate(args) if i not in _writes], kw))  # noqa: E731
    before = keep()
    try:
        with time_limit():
            out = fn(*args, **kw)
    except CLEAR + tuple(_also) as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        out = exc
    assert keep() == before, "an input was modified"
    return out


# --- strategies ---------------------------------------------------------------------------------

def arrays(max_side=70):
    """Arrays of odd shapes and dtypes, values of all signs and sizes."""
    dtypes = st.sampled_from([np.uint32, np.int32, np.int64, np.uint64, np.float16, np.float32, np.float64,
                              np.uint8, np.bool_, np.int8])
    shapes = st.lists(st.integers(0, max_side), min_size=0, max_size=3).map(tuple)

    def build(dt, shape, seed, special):
        rng = np.random.default_rng(seed)
        x = rng.integers(-2**31, 2**32, size=shape, dtype=np.int64) if np.dtype(dt).kind in "iub" else \
            rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 6)
        if special and x.size and np.dtype(dt).kind == "f":
            x.flat[0] = [np.nan, np.inf, -np.inf, -0.0][seed % 4]
        with np.errstate(all="ignore"):
            return x.astype(dt)
    return st.builds(build, dtypes, shapes, st.integers(0, 2**16), st.booleans())


JUNK_CHARS = "abcxyz019 .:_-{}[]%\t\n\x00\u00e9\u03bb\u20ac\U0001f600"   # an explicit alphabet: newer hypothesis warns on its default one
junk = st.one_of(st.none(), st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(alphabet=JUNK_CHARS, max_size=8),
                 st.booleans(), st.just([1, 2]), st.just(np.zeros(0)), st.just(object()))
ARCHS = st.one_of(st.sampled_from(["sm_90", "sm_90a", "sm_80", "sm_120a", "sm_70", "sm_100"]), junk)

MMA_OPS = ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
           "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
           "mma.sp.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
           "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"]
WG_OP = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
OPS = st.one_of(st.sampled_from(MMA_OPS), st.sampled_from(MMA_OPS).map(lambda s: s.replace("sync.aligned", "aligned.sync")),
                st.text(alphabet="mwgas.ync0123456789kfrolbu:_", max_size=60), junk)


def _words(ins, role, warps=1, threads=32):
    rng = np.random.default_rng(1)
    return rng.integers(0, 2**32, (warps, threads, ins.words(role)), dtype=np.uint64).astype(np.uint32)


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """Compile the kernels the fuzzers call before any time limit runs (a compile is not a hang)."""
    for op in MMA_OPS:
        ins = warpsim.parse(op)
        e = np.zeros((1, 32), np.uint32) if ins.is_sparse else None
        warpsim.mma(op, *(_words(ins, r) for r in "abc"), e)
    ins = warpsim.parse(WG_OP)
    warpsim.matmul(WG_OP, np.ones((64, 16), np.float16), np.ones((16, 8), np.float16))
    warpsim.gemm(np.ones((16, 16), np.float32), np.ones((16, 16), np.float32),
                 instruction="mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")


# --- the surfaces -------------------------------------------------------------------------------

@fuzz(300)
@given(op=OPS, a=arrays(), b=arrays(), c=arrays(), e=st.one_of(st.none(), arrays()),
       selector=st.one_of(st.integers(-3, 5), junk), arch=ARCHS)
def test_fuzz_mma_arguments(op, a, b, c, e, selector, arch):
    check(warpsim.mma, op, a, b, c, e, selector=selector, arch=arch)


@fuzz(200)
@given(op=st.sampled_from(MMA_OPS), warps=st.integers(1, 3), which=st.sampled_from("abce"),
       mutate=st.sampled_from(["shape", "dtype", "list", "scalar", "none"]), selector=st.integers(0, 3))
def test_fuzz_mma_one_operand_off(op, warps, which, mutate, selector):
    """Valid calls with one operand made wrong: the error names it; valid ones return D's shape."""
    ins = warpsim.parse(op)
    ops = {r: _words(ins, r, warps) for r in "abc"}
    ops["e"] = np.zeros((warps, 32), np.uint32) if ins.is_sparse else None
    x = ops[which]
    if x is not None:
        ops[which] = {"shape": x[..., :-1] if x.shape[-1] > 1 else x[:, :16], "dtype": x.astype(np.float32),
                      "list": x.tolist(), "scalar": 7, "none": x}[mutate]
    out = check(warpsim.mma, op, ops["a"], ops["b"], ops["c"], ops["e"], selector=selector)
    if not isinstance(out, Exception):
        assert out.shape == (warps, 32, ins.words("d"))


@fuzz(150)
@given(d=arrays(), a=st.one_of(arrays(), st.integers(-2, 2**64 + 2), junk), b=st.one_of(st.integers(-2, 2**64 + 2), junk),
       smem=arrays(), scale_d=st.one_of(st.integers(-1, 2), junk), trans=st.integers(-1, 2), arch=ARCHS)
def test_fuzz_wgmma_arguments(d, a, b, smem, scale_d, trans, arch):
    check(warpsim.wgmma, WG_OP, d, a, b, smem=smem, scale_d=scale_d, trans_a=trans, arch=arch)


@fuzz(150)
@given(desc_a=st.integers(0, 2**64 - 1), desc_b=st.integers(0, 2**64 - 1), groups=st.integers(1, 2),
       smem_bytes=st.sampled_from([0, 16, 4096, 70000]))
def test_fuzz_wgmma_descriptors(desc_a, desc_b, groups, smem_bytes):
    ins = warpsim.parse(WG_OP)
    d = np.zeros((groups, 128, ins.words("d")), np.uint32)
    smem = np.arange(smem_bytes, dtype=np.uint64).astype(np.uint8)
    out = check(warpsim.wgmma, WG_OP, d, desc_a, desc_b, smem=smem)
    if not isinstance(out, Exception):
        assert out.shape == d.shape


@fuzz(3000)
@given(desc=st.one_of(st.integers(-2**65, 2**66), st.floats(), st.booleans(), st.text(alphabet=JUNK_CHARS, max_size=4),
                      st.integers(0, 2**64 - 1).map(np.uint64)))
def test_fuzz_descriptor_decoding(desc):
    out = check(decode_descriptor, desc)
    if not isinstance(out, Exception):
        assert out.encode() == int(desc)


@fuzz(150)
@given(op=st.one_of(st.sampled_from(MMA_OPS[:2] + [WG_OP]), junk), A=arrays(40), B=arrays(40),
       C=st.one_of(st.none(), arrays(40)), selector=st.integers(-1, 4))
def test_fuzz_matmul(op, A, B, C, selector):
    check(warpsim.matmul, op, A, B, C, selector=selector)


@fuzz(200)
@given(M=st.integers(0, 40), N=st.integers(0, 40), K=st.integers(0, 70), split_k=st.one_of(st.integers(-1, 9), junk),
       promote=st.one_of(st.none(), st.integers(-8, 64)), pad=st.booleans(),
       op=st.sampled_from(["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", MMA_OPS[0], MMA_OPS[1]]),
       reduce=st.sampled_from(["serial", "tree", "x"]), dtype=st.sampled_from([np.float16, np.float32, np.int8, np.int64]))
def test_fuzz_gemm(M, N, K, split_k, promote, pad, op, reduce, dtype):
    rng = np.random.default_rng(M * 10000 + N * 100 + K)
    A = (rng.standard_normal((M, K)) * 4).astype(dtype)
    B = (rng.standard_normal((K, N)) * 4).astype(dtype)
    out = check(warpsim.gemm, A, B, instruction=op, split_k=split_k, promote_every=promote, pad=pad,
                split_k_reduce=reduce)
    if not isinstance(out, Exception):
        assert out.shape == (M, N)


BASE_KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n)
{
.reg .b32 %r<16>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.shared .align 16 .b8 sm[256];
ld.param.u64 %rd1, [out];
ld.param.u32 %r9, [n];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ctaid.x;
mad.lo.s32 %r3, %r2, 64, %r1;
div.u32 %r4, %r3, %r9;
rem.u32 %r5, %r3, %r9;
shl.b32 %r6, %r1, 2;
st.shared.u32 [%r6], %r3;
bar.sync 0;
ld.shared.u32 %r7, [%r6];
mov.u32 %r8, 0;
LOOP:
add.s32 %r8, %r8, 1;
setp.lt.u32 %p1, %r8, 3;
@%p1 bra LOOP;
add.s32 %r7, %r7, %r8;
mul.wide.u32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r7;
ret;
}
"""
_TOKEN = re.compile(r"%?[\w$.:]+|\s+|\S")
_SPARE = [" ", "0", "-1", "4294967295", "%r99", "%rd1", "[%rd1]", "{", "}", ";", ",", ".u32", "bra", "LOOP", "ret",
          "0x7fffffff", "1e9", "%p1", "@%p1", ".reg", "\n", ":", "div.s32", "rem.s32", "/", "0.5"]


@fuzz(250)
@given(cuts=st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap", "replace", "insert", "line"]),
                               st.integers(0, 10**6), st.sampled_from(_SPARE)), min_size=1, max_size=4),
       grid=st.sampled_from([1, 2, (2, 1), 0, -1, (1, 1, 1, 1), 70000]), block=st.sampled_from([32, 64, 33, 0, 2048]),
       n=st.sampled_from([1, 0, 7, -1]))
def test_fuzz_ptx_mutated_programs(cuts, grid, block, n):
    toks = _TOKEN.findall(BASE_KERNEL)
    for how, at, spare in cuts:
        i = at % len(toks)
        if how == "drop":
            del toks[i]
        elif how == "dup":
            toks.insert(i, toks[i])
        elif how == "swap" and i + 1 < len(toks):
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
        elif how == "replace":
            toks[i] = spare
        elif how == "insert":
            toks.insert(i, spare)
        elif how == "line":     # drop a whole line
            lines = "".join(toks).split("\n")
            del lines[at % len(lines)]
            toks = _TOKEN.findall("\n".join(lines))
    text = "".join(toks)
    out = np.zeros(256, np.uint32)
    mod = check(wp.load, text, _also=(FileNotFoundError,))   # text without a newline may name a file
    if isinstance(mod, Exception):
        return
    check(mod.launch, "k", grid, block, [out, n], max_steps=20_000, _writes=(3,))


@fuzz(300)
@given(name=st.one_of(st.sampled_from(["%r1", "%rd2", "%p1", "%f3", "%fd0", "%r", "r1", "%r-1", "%tid.x", ""]),
                      st.text(alphabet=JUNK_CHARS, max_size=6), junk),
       value=st.one_of(arrays(40), junk), stmt=st.one_of(st.sampled_from([
           "add.s32 %r1, %r2, 3;", "mov.u32 %r1, %laneid;", "div.u32 %r1, %r2, 0;", "rem.s32 %r1, %r2, %r3;",
           "shfl.sync.idx.b32 %r1, %r2, 40, 31, -1;", "ld.global.u32 %r1, [%rd1];", "bra L;", "setp.eq.s32 %p1, %r1, 1;",
           "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0,%f1,%f2,%f3}, {%r0,%r1,%r2,%r3}, {%r4,%r5}, {%f0,%f1,%f2,%f3};"]),
           st.text(alphabet="%r0123456789.,;{} admovslu", max_size=40)),
       group=st.sampled_from(["warp", "warpgroup"]))
def test_fuzz_register_files(name, value, stmt, group):
    rf = warpsim.Warp(1) if group == "warp" else warpsim.Warpgroup(1)
    check(rf.set, name, value)
    check(rf.run, stmt)
    check(rf.get, name)


# (verify and gemm run for seconds on valid input: their argument checks are in tests/test_cli.py)
_CLI_WORDS = ["list", "show", "run", "layout", "ptx", "--arch", "sm_90", "sm_120a", "--m", "16",
              "--n", "0", "--k", "-5", MMA_OPS[0], MMA_OPS[1].replace("sync.aligned", "aligned.sync"), WG_OP, "bogus",
              "--svg", "--grid", "1000000", "--block", "32", "--arg", "x", "--seed", "-1", "--family", "f16", "--help",
              "", "--json", "/nonexistent.ptx", "mma.sync"]


@fuzz(150)
@given(argv=st.lists(st.sampled_from(_CLI_WORDS), min_size=0, max_size=6))
def test_fuzz_cli(argv, tmp_path_factory):
    from warpsim.cli.main import main

    argv = [a if a != "--svg" else "--svg=" + str(tmp_path_factory.mktemp("svg") / "x.svg") for a in argv]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        with time_limit():
            rc = main(list(argv))
    assert isinstance(rc, int)
    assert "Traceback" not in err.getvalue()


# --- regressions from issue 24 ------------------------------------------------------------------

def test_load_of_an_empty_string_is_a_value_error():
    for text in ("", "   ", "\n"):
        with pytest.raises(ValueError, match="empty"):
            wp.load(text)


def test_load_of_a_directory_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not a file"):
        wp.load(str(tmp_path))


def test_integer_division_by_zero_in_ptx_is_defined_not_a_crash():
    # PTX leaves x / 0 unspecified; warpsim gives a value and never raises ZeroDivisionError
    out = np.zeros(32, np.uint32)
    src = BASE_KERNEL
    wp.load(src).launch("k", 1, 32, [out, 0])
    assert out.dtype == np.uint32


def test_align_zero_is_a_ptx_error_not_a_zero_division():
    for decl in (".shared .align 0 .b8 sm[256];", ".shared .align 3 .b8 sm[256];"):
        with pytest.raises(PTXError, match="power of two"):
            wp.load(BASE_KERNEL.replace(".shared .align 16 .b8 sm[256];", decl)).launch(
                "k", 1, 32, [np.zeros(64, np.uint32), 1])


def test_one_line_ptx_text_is_read_as_text():
    with pytest.raises(PTXError):
        wp.load("mov.u32 %r1, 1; " * 400)


def test_a_grid_larger_than_max_ctas_is_refused_with_the_limit_named():
    mod = wp.load(BASE_KERNEL)
    out = np.zeros(4, np.uint32)
    with pytest.raises(ValueError, match=r"1000000 CTAs, more than max_ctas=65536: pass a larger max_ctas="):
        mod.launch("k", (1000000,), 32, [out, 1])
    assert not out.any()


def test_a_grid_runs_in_batches_like_one_launch():
    mod = wp.load(BASE_KERNEL)
    outs = []
    for per in (1, 3, 256):
        out = np.zeros(7 * 64, np.uint32)
        mod.launch("k", 7, 64, [out, 5], ctas_per_batch=per)
        outs.append(out)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
    t = np.arange(7 * 64)
    assert np.array_equal(outs[0], t + 3)


def test_max_steps_error_says_where_the_program_was():
    src = BASE_KERNEL.replace("@%p1 bra LOOP;", "bra LOOP;")
    with pytest.raises(PTXError, match=r"(?s)line 25.*max_steps=500.*CTAs 0..2.*CTA 0 warp 0, CTA 1 warp 0.*bra LOOP"):
        wp.load(src).launch("k", 3, 32, [np.zeros(96, np.uint32), 1], max_steps=500)


def test_gemm_with_k_zero_and_huge_split_k_is_a_value_error():
    op = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
    with pytest.raises(ValueError, match="K must be at least 1"):
        warpsim.gemm(np.zeros((16, 0), np.float16), np.zeros((0, 16), np.float16), instruction=op, split_k=1000000)
    with pytest.raises(ValueError, match="split_k = 3 exceeds the 2 k step"):
        warpsim.gemm(np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float16), instruction=op, split_k=3,
                     pad=True)
