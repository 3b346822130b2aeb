"""sm_120a (RTX Blackwell) warp-level kind:: MMAs: kind::f8f6f4, block-scaled kind::mxf8f6f4,
kind::mxf4, kind::mxf4nvf4, and their mma.sp::ordered_metadata forms.

No RTX Blackwell was available to capture on, so nothing here compares with hardware words:

* the catalog is checked against ptxas 13.0 (when ptxas is on PATH; skipped with a reason otherwise):
  every catalog opcode assembles for sm_120a, none for sm_120 or sm_90a, and the forbidden fixtures
  are refused with the message recorded here;
* the arithmetic is checked on cases where the published model (MMA-Sim, arXiv 2511.10909) loses no
  bits, against exact rational arithmetic: every pair of e2m1 values, every ue8m0 scale, every ue4m3
  scale;
* a few properties the model states (f32 results truncate; f16 results round to nearest; NaN scales
  give NaN; zero terms sit at exponent -133 / -139) are tested as *model* properties, not hardware facts.
"""

from __future__ import annotations

import collections
import math
import re
import shutil
import subprocess
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import warpsim
from warpsim.isa import catalog as C
from warpsim.isa.layouts import pack_scales, scale_lanes
from warpsim.ptx.regfile import Warp, example_statement

SM120 = [i for i in C.CATALOG if i.targets]
PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA 13) not on PATH: the ptxas cross-checks need it")
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA 13) not on PATH: compiling the capture kernels needs it")

E2M1 = [float(v) for v in np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)]   # code -> value


def _op(kind, shape="m16n8k32", d="f32", a="e2m1", b="e2m1", sparse=False, scale=None):
    head = "mma.sp::ordered_metadata" if sparse else "mma"
    mid = f"kind::{kind}" + ("" if scale is None else ".block_scale" + (f".scale_vec::{scale[0]}" if scale[0] else ""))
    tail = "" if scale is None else f".{scale[1]}"
    return f"{head}.sync.aligned.{shape}.row.col.{mid}.{d}.{a}.{b}.{d}{tail}"


# --- the catalog against ptxas -----------------------------------------------------------------

def test_sm120a_opcode_counts():
    assert len(SM120) == 292      # 288 kind:: forms + 4 sparse fp8 f16-accumulate forms without .kind (issue 33)
    from warpsim.cli.verify import corpus_arch   # an sm_120a capture on an RTX 50xx replays on sm_120a

    assert corpus_arch({"compute_capability": "sm_120", "target": "sm_120a"}) == "sm_120a"
    assert corpus_arch({"compute_capability": "sm_90", "target": "sm_90a"}) == "sm_90"
    lenient = [i for i in SM120 if i.lenient]
    assert len(lenient) == 80 and all(i.atype in ("e4m3", "e5m2") and i.btype in ("e4m3", "e5m2") for i in lenient)
    strict = collections.Counter((i.kind, i.is_sparse, i.scale_vec, i.stype) for i in SM120 if not i.lenient)
    assert strict == {(None, True, None, None): 4,                                      # e4m3/e5m2 pairs, f16
        ("f8f6f4", False, None, None): 50, ("f8f6f4", True, None, None): 50,            # 25 type pairs x f16/f32
        ("mxf8f6f4", False, None, "ue8m0"): 25, ("mxf8f6f4", False, "1X", "ue8m0"): 25,
        ("mxf8f6f4", True, None, "ue8m0"): 25, ("mxf8f6f4", True, "1X", "ue8m0"): 25,
        ("mxf4", False, None, "ue8m0"): 1, ("mxf4", False, "2X", "ue8m0"): 1,
        ("mxf4", True, None, "ue8m0"): 1, ("mxf4", True, "2X", "ue8m0"): 1,
        ("mxf4nvf4", False, "2X", "ue8m0"): 1, ("mxf4nvf4", False, "4X", "ue4m3"): 1,
        ("mxf4nvf4", True, "2X", "ue8m0"): 1, ("mxf4nvf4", True, "4X", "ue4m3"): 1,
    }
    assert all(i.sparse in (None, "sp::ordered_metadata") and i.selectors == (0,) for i in SM120)
    assert all(i.min_ptx == "8.7" and i.targets == ("sm_120a", "sm_121a") for i in SM120)


def _ptxas_lines(target, lines, version="8.8"):
    """Assemble one kernel with every line; returns the set of line indices ptxas reports an error on."""
    head = (f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n"
            ".reg .b32 %r<16>;\n.reg .f32 %f<12>;\n.reg .b32 h<2>;\n")
    base = head.count("\n") + 1
    src = head + "\n".join(lines) + "\nret;\n}\n"
    r = subprocess.run([PTXAS, f"-arch={target}", "-o", "/dev/null", "-"], input=src, capture_output=True, text=True)
    errs = {}
    for m in re.finditer(r"line (\d+); error\s*:\s*(.*)", r.stderr):
        errs[int(m.group(1)) - base] = errs.get(int(m.group(1)) - base, "") + m.group(2) + "\n"
    return errs, r


@needs_ptxas
def test_ptxas_accepts_every_sm120a_catalog_opcode():
    errs, r = _ptxas_lines("sm_120a", [example_statement(i) for i in SM120])
    assert r.returncode == 0 and not errs, r.stderr[-2000:]


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_120", "sm_90a"])
def test_ptxas_rejects_every_sm120a_opcode_elsewhere(target):
    errs, _ = _ptxas_lines(target, [example_statement(i) for i in SM120])
    assert set(errs) == set(range(len(SM120)))


@needs_ptxas
def test_ptxas_sm100a_takes_only_the_fp8_forms_as_legacy_mma():
    """sm_100a accepts the 80 e4m3/e5m2 forms without .block_scale (except sparse f16 accumulate):
    ptxas ignores the .kind there (warpsim runs them as the opcode without .kind:
    tests/test_ptxas_spellings.py)."""
    errs, _ = _ptxas_lines("sm_100a", [example_statement(i) for i in SM120])
    ok = {n for n, i in enumerate(SM120) if n not in errs}
    want = {n for n, i in enumerate(SM120) if i.atype in ("e4m3", "e5m2") and i.btype in ("e4m3", "e5m2")
            and not i.block_scaled and not (i.is_sparse and i.dtype == "f16")}
    assert ok == want and len(ok) == 80


# Forbidden forms: (PTX statement, message ptxas 13.0 gives for sm_120a, words warpsim's error must contain).
_S = ", %r8, {0, 0}, %r9, {0, 0}"
_D, _A, _B, _C = "{%f4, %f5, %f6, %f7}", "{%r0, %r1, %r2, %r3}", "{%r4, %r5}", "{%f0, %f1, %f2, %f3}"
FORBIDDEN = [
    (f"{_op('f8f6f4', d='f32')[:-4]}.f16 {_D}, {_A}, {_B}, {{%r6, %r7}};",
     "Unexpected instruction types specified for 'mma'", "D type"),
    (f"{_op('mxf4', 'm16n8k64', scale=('4X', 'ue8m0'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Modifier '.scale_vec::4X' cannot be combined with modifier '.kind::mxf4'", "allowed here"),
    (f"{_op('mxf4nvf4', 'm16n8k64', scale=('4X', 'ue8m0'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Illegal modifier '.scale_vec::4X' for instruction 'mma' with type '.ue8m0'", "allowed here"),
    (f"{_op('mxf4nvf4', 'm16n8k64', scale=('2X', 'ue4m3'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Illegal modifier '.scale_vec::2X' for instruction 'mma' with type '.ue4m3'", "allowed here"),
    (f"{_op('mxf4nvf4', 'm16n8k64', scale=(None, 'ue8m0'))} {_D}, {_A}, {_B}, {_C}{_S};",
     ".scale_vec_size modifier required for instruction 'mma'", "allowed here"),
    (f"{_op('mxf8f6f4', d='f16', a='e4m3', b='e4m3', scale=(None, 'ue8m0'))} {{%r6, %r7}}, {_A}, {_B}, {{%r10, %r11}}{_S};",
     "Unexpected instruction types specified for 'mma'", "Closest"),
    (f"{_op('mxf8f6f4', a='e4m3', b='e4m3', scale=(None, 'ue4m3'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Incorrect instruction type specified for mma with shape '.m16n8k32'", "allowed here"),
    (f"{_op('mxf8f6f4', a='e4m3', b='e4m3', scale=('2X', 'ue8m0'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Illegal modifier '.scale_vec::2X' for instruction 'mma'", "allowed here"),
    (f"{_op('mxf4', 'm16n8k64', a='e4m3', b='e4m3', scale=(None, 'ue8m0'))} {_D}, {_A}, {_B}, {_C}{_S};",
     "Incorrect instruction type specified for mma with shape '.m16n8k64'", "Closest"),
    (f"{_op('f8f6f4', 'm16n8k64')} {_D}, {_A}, {_B}, {_C};",
     "Incorrect instruction type specified for mma with shape '.m16n8k64'", "form mma (dense)"),
    (f"{_op('f8f6f4', 'm16n8k16')} {_D}, {{%r0, %r1}}, {{%r4}}, {_C};",
     "Illegal matrix shape '.m16n8k16' for instruction 'mma'", "allowed here"),
    (f"{_op('f8f6f4', 'm16n8k64', sparse=True).replace('sp::ordered_metadata', 'sp')} {_D}, {_A}, {{%r4, %r5, %r6, %r7}}, {_C}, %r8, 0;",
     "Illegal modifier '.sp' for instruction 'mma'", "mma.sp::ordered_metadata"),
    (f"{_op('mxf8f6f4')} {_D}, {_A}, {_B}, {_C};",
     "Illegal modifier '.kind::mxf8f6f4' for instruction 'mma'", "allowed here"),
    (f"{_op('mxf4', 'm16n8k64', d='f16', scale=(None, 'ue8m0'))} {{%r6, %r7}}, {_A}, {_B}, {{%r10, %r11}}{_S};",
     "Unexpected instruction types specified for 'mma'", "Closest"),
    (f"{_op('f8f6f4').replace('kind::f8f6f4', 'kind::f8f6f4.satfinite')} {_D}, {_A}, {_B}, {_C};",
     "Unexpected instruction types specified for 'mma'", "without .satfinite"),
    (f"{_op('f8f6f4').replace('row.col', 'col.row')} {_D}, {_A}, {_B}, {_C};",
     "Illegal alayout '.col' for instruction 'mma'", ".row.col"),
    (f"{_op('f8f6f4').replace('kind::f8f6f4.', '')} {_D}, {_A}, {_B}, {_C};",
     ".kind::f8f6f4 modifier required for instruction 'mma'", ".kind::f8f6f4"),
]


@pytest.mark.parametrize("stmt,ptxas_msg,ours", FORBIDDEN, ids=[f[1][:50] for f in FORBIDDEN])
def test_forbidden_forms_are_refused(stmt, ptxas_msg, ours):
    with pytest.raises(ValueError, match=re.escape(ours)):
        warpsim.parse(stmt.split(" ")[0])
    if PTXAS is None:
        pytest.skip("ptxas (CUDA 13) not on PATH: warpsim's refusal checked, ptxas's message not")
    errs, _ = _ptxas_lines("sm_120a", [stmt])
    assert 0 in errs and ptxas_msg in errs[0]


# Selector immediates that ptxas refuses (message recorded from ptxas 13.0) and warpsim refuses too.
SELECTORS = [
    (_op("mxf8f6f4", scale=(None, "ue8m0")), dict(thread_id_a=2), "value '2' out of range, expected to be in range [0..1]"),
    (_op("mxf4", "m16n8k64", scale=("2X", "ue8m0")), dict(byte_id_a=1), "unexpected value '1', expected to be 0 or 2"),
    (_op("mxf4nvf4", "m16n8k64", scale=("4X", "ue4m3")), dict(byte_id_a=1), "unexpected value '1', expected to be 0"),
]


@pytest.mark.parametrize("op,kw,ptxas_msg", SELECTORS, ids=[s[2][:40] for s in SELECTORS])
def test_scale_selectors_out_of_range(op, kw, ptxas_msg):
    ins = warpsim.parse(op)
    z = lambda r: np.zeros((32, ins.words(r)), np.uint32)
    with pytest.raises(ValueError, match="out of range"):
        warpsim.mma(op, z("a"), z("b"), z("c"), arch="sm_120a", scale_a=np.zeros(32, np.uint32),
                    scale_b=np.zeros(32, np.uint32), **kw)
    if PTXAS is None:
        pytest.skip("ptxas (CUDA 13) not on PATH")
    sel = (kw.get("byte_id_a", 0), kw.get("thread_id_a", 0))
    stmt = example_statement(ins).replace(", {0, 0}", f", {{{sel[0]}, {sel[1]}}}", 1)
    errs, _ = _ptxas_lines("sm_120a", [stmt])
    assert 0 in errs and ptxas_msg in errs[0]


def test_refused_on_other_architectures():
    op = _op("f8f6f4")
    z = lambda r: np.zeros((32, 4 if r != "b" else 2), np.uint32)
    for arch in ("sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120", "sm_89"):
        with pytest.raises(ValueError, match="lowest target that has it is sm_120a"):
            warpsim.mma(op, z("a"), z("b"), z("c"), arch=arch)
    warpsim.mma(op, z("a"), z("b"), z("c"), arch="sm_121a")     # ptxas accepts the same forms there
    # sm_120a is sm_120 plus the kind:: forms: the older opcodes run with sm_120's recipes
    f16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    rng = np.random.default_rng(0)
    w = [rng.integers(0, 1 << 32, size=(32, n), dtype=np.uint32) & np.uint32(0x3BFF3BFF) for n in (4, 2, 4)]
    assert (warpsim.mma(f16, *w, arch="sm_120a") == warpsim.mma(f16, *w, arch="sm_120")).all()
    blk = _op("mxf8f6f4", scale=(None, "ue8m0"))
    with pytest.raises(ValueError, match="scale_a and scale_b"):
        warpsim.mma(blk, z("a"), z("b"), z("c"), arch="sm_120a")
    with pytest.raises(ValueError, match="not block-scaled"):
        warpsim.mma(op, z("a"), z("b"), z("c"), arch="sm_120a", scale_a=np.zeros(32, np.uint32))


# --- exact small cases (the model loses no bits) -----------------------------------------------

def _rz_f32(v: Fraction) -> float:
    """v rounded toward zero into f32 (subnormals kept; beyond the largest finite: inf, as the model)."""
    if v == 0:
        return 0.0
    s = -1.0 if v < 0 else 1.0
    a = abs(v)
    e = max(math.floor(math.log2(a)), -126)
    while Fraction(2) ** e > a and e > -126:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    ulp = Fraction(2) ** (e - 23)
    q = (a // ulp) * ulp
    if q >= Fraction(2) ** 128:
        return s * math.inf
    return s * float(q)


def _pairs_case(op, scale=None):
    """Every pair of e2m1 codes (x at k=0 of A's row, y at k=0 of B's column), 128 pairs per warp."""
    ins = warpsim.parse(op)
    codes = np.array([(x, y) for x in range(16) for y in range(16)])
    W = len(codes) // (ins.m * ins.n)
    A = np.zeros((W, ins.m, ins.k), np.float64)
    B = np.zeros((W, ins.k, ins.n), np.float64)
    want = np.zeros((W, ins.m, ins.n))
    # A row i and B column j of warp w hold one pair each: A[w, i, 0] * B[w, 0, j] covers i*8 + j pairs,
    # so use the outer product: rows take the x codes, columns the y codes
    xs = np.arange(16)
    A[:, :, 0] = np.array(E2M1)[xs][None, :]
    for w in range(W):
        B[w, 0, :] = np.array(E2M1)[8 * w: 8 * w + 8]
    want = A[:, :, :1] * B[:, :1, :]
    return ins, A, B, want


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_every_e2m1_pair_is_exact_f8f6f4(dtype):
    op = _op("f8f6f4", d=dtype)
    ins, A, B, want = _pairs_case(op)
    D = warpsim.matmul(op, A, B, arch="sm_120a")
    assert (np.asarray(D, np.float64) == want).all()
    # zero results are +0 (the H100's measured rule, chosen here; MMA-Sim is silent on the sign)
    zero = want == 0
    assert not np.signbit(np.asarray(D, np.float64)[zero]).any()


def test_every_e2m1_pair_times_every_ue8m0_scale_mxf8f6f4():
    """x*y*2^(ea-127)*2^(eb-127) for every e2m1 pair and every ue8m0 code of A (B's scale 2^0 and 2^-127):
    one product per output, so the model's only rounding is the final RZ to f32."""
    op = _op("mxf8f6f4", scale=(None, "ue8m0"))
    ins, A, B, base = _pairs_case(op)
    W = A.shape[0]
    for eb in (127, 0):
        for ea0 in range(0, 255, 16):
            codes = np.clip(ea0 + np.arange(16), 0, 254)            # one A scale code per row
            sa = np.broadcast_to(codes[None, :, None], (W, 16, 1)).astype(np.uint8)
            sb = np.full((W, 1, 8), eb, np.uint8)
            D = np.asarray(warpsim.matmul(op, A, B, arch="sm_120a", scale_a=sa, scale_b=sb), np.float64)
            for w in range(W):
                for i in range(16):
                    for j in range(8):
                        v = Fraction(base[w, i, j]) * Fraction(2) ** (int(codes[i]) - 127) * Fraction(2) ** (eb - 127)
                        assert D[w, i, j] == _rz_f32(v), (w, i, j, codes[i], eb)


def test_every_e2m1_pair_every_scale_mxf4():
    """kind::mxf4 (2X, ue8m0) and kind::mxf4nvf4 (4X, ue4m3): every e2m1 pair at every k block, every
    ue8m0 code in [127-32, 127+32] and every finite ue4m3 code (bit 7 set or not)."""
    for op in (_op("mxf4", "m16n8k64", scale=("2X", "ue8m0")), _op("mxf4nvf4", "m16n8k64", scale=("4X", "ue4m3"))):
        ins = warpsim.parse(op)
        S, blk = ins.nscale, ins.scale_block
        vals = np.array(E2M1)
        for s in range(S):       # the pair sits in k block s
            A = np.zeros((2, 16, 64))
            B = np.zeros((2, 64, 8))
            A[:, :, s * blk] = vals[None, :]
            for w in range(2):
                B[w, s * blk, :] = vals[8 * w: 8 * w + 8]
            if ins.stype == "ue8m0":
                codes = list(range(127 - 32, 127 + 33, 8))
                sval = lambda c: Fraction(2) ** (c - 127)
            else:
                codes = [c for c in range(256) if c & 0x7F != 0x7F]
                sval = lambda c: Fraction(float(np.uint8(c & 0x7F).view(ml_dtypes.float8_e4m3fn)))
            for start in range(0, len(codes), 16):
                cs = np.array((codes[start:start + 16] * 16)[:16], np.uint8)
                sa = np.zeros((2, 16, S), np.uint8)
                sb = np.zeros((2, S, 8), np.uint8)
                sa[:, :, s] = cs[None, :]
                sb[:, s, :] = cs[None, :8]
                D = np.asarray(warpsim.matmul(op, A, B, arch="sm_120a", scale_a=sa, scale_b=sb), np.float64)
                for w in range(2):
                    for i in range(16):
                        for j in range(8):
                            v = Fraction(A[w, i, s * blk]) * Fraction(B[w, s * blk, j]) * sval(int(cs[i])) * sval(int(cs[j]))
                            assert D[w, i, j] == _rz_f32(v), (op, s, w, i, j, cs[i], cs[j])


def test_sparse_block_scaled_matches_exact_small_integers():
    rng = np.random.default_rng(7)
    for op in (_op("mxf8f6f4", "m16n8k64", a="e3m2", b="e2m3", sparse=True, scale=("1X", "ue8m0")),
               _op("mxf4nvf4", "m16n8k128", sparse=True, scale=("4X", "ue4m3"))):
        ins = warpsim.parse(op)
        A = rng.choice([0.0, 1.0, -2.0, 0.5, 3.0], size=(2, 16, ins.k))
        A.reshape(2, 16, -1, 4)[..., 2:] = 0       # 2:4 sparse
        B = rng.choice([0.0, 1.0, -1.5, 4.0], size=(2, ins.k, 8))
        Cm = rng.choice([0.0, 1.0, -8.0], size=(2, 16, 8))
        sa = 2.0 ** rng.integers(-5, 6, size=(2, 16, ins.nscale))
        sb = 2.0 ** rng.integers(-5, 6, size=(2, ins.nscale, 8))
        D = warpsim.matmul(op, A, B, Cm, arch="sm_120a", scale_a=sa, scale_b=sb)
        blk = ins.scale_block
        want = Cm.copy()
        for s in range(ins.nscale):
            want += (A[..., s * blk:(s + 1) * blk] * sa[..., s:s + 1]) @ (B[:, s * blk:(s + 1) * blk] * sb[:, s:s + 1, :])
        # float64 holds these sums exactly; the model's only rounding is then RZ into f32
        rz = np.vectorize(lambda v: _rz_f32(Fraction(float(v))))(want)
        assert (np.asarray(D, np.float64) == rz).all()


# --- model properties (MMA-Sim's statements; not hardware facts) --------------------------------

def _one_term(op, a_vals, b_vals, c, sa=None, sb=None):
    ins = warpsim.parse(op)
    A = np.zeros((ins.m, ins.k))
    B = np.zeros((ins.k, ins.n))
    A[0, :len(a_vals)] = a_vals
    B[:len(b_vals), 0] = b_vals
    Cm = np.full((ins.m, ins.n), c, dtype=np.float32 if ins.ctype == "f32" else np.float16)
    kw = {} if sa is None else dict(scale_a=np.full((ins.m, ins.nscale), sa), scale_b=np.full((ins.nscale, ins.n), sb))
    return warpsim.matmul(op, A.astype(ml_dtypes.float8_e5m2) if ins.atype == "e5m2" else A, B, Cm,
                          arch="sm_120a", **kw)[0, 0]


def test_f32_accumulate_truncates_f16_rounds_to_nearest():
    """MMA-Sim RTX Blackwell T-FDPA: 25 fractional bits kept, RZ into f32, RNE into f16."""
    op32 = _op("f8f6f4", a="e5m2", b="e5m2")
    # 1 + 2^-23 - 2^-25: RZ gives 1, nearest would give 1 + 2^-23
    d = _one_term(op32, [-2.0 ** -14], [2.0 ** -11], np.float32(1 + 2.0 ** -23))
    assert d == np.float32(1.0)
    op16 = _op("f8f6f4", d="f16", a="e5m2", b="e5m2")
    # 1 + 2^-10 - 2^-12 rounds to nearest in f16: 1 + 2^-10
    d = _one_term(op16, [-2.0 ** -6], [2.0 ** -6], np.float16(1 + 2.0 ** -10))
    assert d == np.float16(1 + 2.0 ** -10)


def test_terms_below_25_fraction_bits_are_cut():
    op = _op("f8f6f4", a="e5m2", b="e5m2")
    # C = 2^0; a product 2^-28 lies below 2^(0-25): dropped, D = 1 exactly
    assert _one_term(op, [2.0 ** -14], [2.0 ** -14], np.float32(1.0)) == np.float32(1.0)
    # 2^-25 is kept: 1 + 2^-25 truncates to 1 in f32 anyway, but -2^-25 makes it 1 - 2^-24 exactly
    assert _one_term(op, [-2.0 ** -13], [2.0 ** -12], np.float32(1.0)) == np.float32(1 - 2.0 ** -24)


def test_nan_scale_gives_the_canonical_nan():
    for op, nan in ((_op("mxf8f6f4", scale=(None, "ue8m0")), 0xFF), (_op("mxf4nvf4", "m16n8k64", scale=("4X", "ue4m3")), 0x7F)):
        ins = warpsim.parse(op)
        sa = np.full((ins.m, ins.nscale), 127 if ins.stype == "ue8m0" else 0x38, np.uint8)
        sb = np.full((ins.nscale, ins.n), 127 if ins.stype == "ue8m0" else 0x38, np.uint8)
        sa[3, 0] = nan
        A, B = np.zeros((ins.m, ins.k)), np.zeros((ins.k, ins.n))
        D = warpsim.matmul(op, A, B, arch="sm_120a", scale_a=sa, scale_b=sb)
        bits = np.asarray(D, np.float32).view(np.uint32)
        assert (bits[3] == 0x7FFFFFFF).all() and (bits[np.arange(16) != 3] == 0).all()


def test_zero_terms_sit_at_exponent_minus_133_mxf8f6f4():
    """MMA-Sim (later revision): zero products and a zero C take exponent -133 in the emax search.
    A product 2^-140 with a zero beside it: emax = -133, the cut is at 2^-158; a second product
    2^-160 is dropped, where without the rule (emax = -140, cut at 2^-165) it would make the RZ result
    one f32 ulp smaller."""
    op = _op("mxf8f6f4", a="e4m3", b="e4m3", scale=(None, "ue8m0"))
    ins = warpsim.parse(op)
    A = np.zeros((16, 32))
    B = np.zeros((32, 8))
    A[0, 0], B[0, 0] = 1.0, 1.0                  # 2^-140 after scaling
    A[0, 1], B[1, 0] = -2.0 ** -9, 2.0 ** -9 * 2 ** -2   # -2^-160 after the same scaling
    sa = np.full((16, 1), 2.0 ** -70)
    sb = np.full((1, 8), 2.0 ** -70)
    d = warpsim.matmul(op, A.astype(ml_dtypes.float8_e4m3fn), B.astype(ml_dtypes.float8_e4m3fn),
                       arch="sm_120a", scale_a=sa, scale_b=sb)[0, 0]
    assert d == np.float32(2.0 ** -140)


# --- front ends agree ---------------------------------------------------------------------------

REPRESENTATIVE = sorted({(i.kind, i.is_sparse, i.scale_vec, i.stype, i.dtype, i.lenient): i for i in SM120}.values(),
                        key=lambda i: i.opcode)


@pytest.mark.parametrize("ins", REPRESENTATIVE, ids=lambda i: i.opcode)
def test_register_file_and_generator_agree_with_mma(ins):
    from warpsim.hw.inputs import generate

    g = generate(ins, 0, "special", 2, 5)
    kw = {}
    if ins.block_scaled:
        kw = dict(scale_a=np.ascontiguousarray(g["s"][..., 0]), scale_b=np.ascontiguousarray(g["s"][..., 1]))
    want = warpsim.mma(ins.opcode, g["a"], g["b"], g["c"], g.get("e"), arch="sm_120a", **kw)
    stmt = example_statement(ins)
    regs = re.findall(r"%[a-z]+\d+", stmt)
    w = Warp(2, arch="sm_120a")
    pos = 0
    names = {}
    for role in "dabc":
        names[role] = regs[pos:pos + ins.registers(role)]
        pos += ins.registers(role)
    for role in "abc":
        for k, n in enumerate(names[role]):
            w.set(n, g[role][..., k])
    if ins.is_sparse:
        w.set(regs[pos], g["e"])
        pos += 1
    if ins.block_scaled:
        w.set(regs[pos], kw["scale_a"])
        w.set(regs[pos + 1], kw["scale_b"])
    w.run(stmt)
    got = np.stack([w.get(n) for n in names["d"]], axis=-1)
    assert (got == want).all()


def test_scale_lanes_and_pack_scales():
    op = _op("mxf4nvf4", "m16n8k64", scale=("4X", "ue4m3"))
    assert list(scale_lanes(op, "a")[:10]) == [0, 4, 8, 12, 16, 20, 24, 28, 1, 5]
    assert list(scale_lanes(op, "b", 3)) == [3, 7, 11, 15, 19, 23, 27, 31]
    sa, sb = pack_scales(op, np.full((16, 4), 1.0), np.full((4, 8), 2.0))
    assert sa[0] == 0x38383838 and sa[2] == 0 and sb[4] == 0x40404040 and sb[1] == 0
    with pytest.raises(ValueError, match="unsigned"):
        pack_scales(op, np.full((16, 4), -1.0), np.full((4, 8), 2.0))


def test_subbyte_pack_unpack_round_trip():
    for op in (_op("f8f6f4", a="e3m2", b="e2m3"), _op("mxf4", "m16n8k64", scale=("2X", "ue8m0"))):
        ins = warpsim.parse(op)
        rng = np.random.default_rng(1)
        for role in "ab":
            t = warpsim.isa.types.TYPES[ins.atype if role == "a" else ins.btype]
            codes = rng.integers(0, 1 << t.width, size=ins.matrix_shape(role)).astype(np.uint8)
            M = codes.view(t.numpy_dtype)
            w = warpsim.pack(op, role, M)
            assert (warpsim.unpack(op, role, w).view(np.uint8) == codes).all()
            if ins.container:   # e3m2 / e2m3 / e2m1 sit in the low bits of a byte; the high bits are 0
                assert not (w & np.uint32(0xC0C0C0C0)).any()


def test_explain_states_the_model_source():
    op = _op("mxf8f6f4", scale=(None, "ue8m0"))
    ins = warpsim.parse(op)
    a = warpsim.pack(op, "a", np.ones((16, 32)))
    b = warpsim.pack(op, "b", np.ones((32, 8)))
    c = warpsim.pack(op, "c", np.zeros((16, 8)))
    sa, sb = pack_scales(op, np.full((16, 1), 2.0), np.full((1, 8), 0.25))
    ex = warpsim.explain(op, a, b, c, arch="sm_120a", scale_a=sa, scale_b=sb)
    assert ex.model == 16.0 and ex.exact == 16
    assert "published measurements" in str(ex) and "MMA-Sim" in str(ex)


@needs_nvcc
def test_capture_kernels_compile_for_sm_120a(tmp_path):
    from warpsim.hw.capture import kernel_source, select_entries

    entries = select_entries(arch="sm_120a")
    assert sum(1 for i, _ in entries if i.targets) == 292 and len(entries) == 246 + 292
    src = tmp_path / "k.cu"
    src.write_text(kernel_source(entries))
    r = subprocess.run([NVCC, "-gencode=arch=compute_120a,code=sm_120a", "-cubin", "-o", str(tmp_path / "k.cubin"),
                        str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_numerics_doc_table_is_current():
    from pathlib import Path

    from warpsim.cli import docs as _docs

    text = (Path(__file__).resolve().parent.parent / "docs" / "numerics.md").read_text()
    block = text.split(_docs.SM120_BEGIN, 1)[1].split(_docs.SM120_END, 1)[0]
    assert block.strip() == _docs.sm120a_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


@pytest.mark.parametrize("pair", [("e2m1", "e2m1"), ("e3m2", "e2m3"), ("e2m3", "e4m3"), ("e5m2", "e3m2")])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_fast_path_equals_the_exact_kernel(pair, dtype):
    """The float fast path (warpsim.engine.tensorcore) takes the unscaled kind::f8f6f4 forms, fp4/fp6
    included; on random register words (every code, random high container bits, NaN/inf e4m3/e5m2,
    any C) it must give the exact per-element kernel's words."""
    from warpsim.engine import kernel

    op = _op("f8f6f4", d=dtype, a=pair[0], b=pair[1])
    ins = warpsim.parse(op)
    pl = kernel.plan(op, 0, "sm_120a")
    assert pl.ftab is not None
    rng = np.random.default_rng(3)
    a, b, c = (rng.integers(0, 2**32, (256, 32, ins.words(r)), dtype=np.uint32) for r in "abc")
    if dtype == "f32":   # keep most C words finite and moderate so the fast path takes most warps
        c = (c & np.uint32(0x81FFFFFF)) | np.uint32(0x3E000000)
    e = np.zeros((1, 32), np.uint32)
    fast = kernel.run(pl, a, b, c, None)
    exact = kernel._generic(pl, a, b, c, e)
    assert (fast == exact).all()
