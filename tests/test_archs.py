"""Per-architecture catalogs (against ptxas) and numerics (against the published measurements).

Only sm_90 is captured on hardware; the other targets are modelled from MMA-Sim (arXiv
2511.10909).  The numeric tests here check properties that source states -- how many
fractional bits each architecture keeps below the largest exponent, which shapes Ampere and
Ada compute as two chained halves of k, Ada's fp8 result keeping 13 mantissa bits -- on
hand-made inputs whose expected words follow from those statements alone.
"""

import glob
import json
import lzma
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import warpsim
from warpsim.hw import ptxcheck
from warpsim.isa import archs
from warpsim.isa.catalog import BY_OPCODE, CATALOG

HERE = os.path.dirname(os.path.abspath(__file__))
with lzma.open(os.path.join(HERE, "golden", "ptxas_archs.json.xz"), "rt") as _f:
    TABLE = json.load(_f)
ALL = {i.opcode for i in CATALOG}

# --- the catalog per target ------------------------------------------------------------------


def test_table_covers_every_target():
    assert TABLE["catalog_opcodes"] == len(CATALOG)
    assert set(archs.TARGETS) | set(archs.ALIASES) <= set(TABLE["targets"])
    for row in TABLE["targets"].values():
        assert set(row["rejected"]) <= ALL


@pytest.mark.parametrize("target", sorted(TABLE["targets"]))
def test_ptxas_table_matches_the_catalog_derivation(target):
    """What ptxas accepted for the target (recorded by warpsim/hw/offline/ptxas_archs.py) is exactly the
    catalog's lowest-sm derivation; the ``a`` targets accept the same opcodes as the plain ones."""
    accepted = ALL - set(TABLE["targets"][target]["rejected"])
    lenient = {i.opcode for i in CATALOG if archs.ptxas_also_accepts(i, target)}
    assert accepted == {i.opcode for i in archs.catalog_for(target)} | lenient


def test_ptxas_reasons_agree_with_the_lowest_sm_column():
    """ptxas names, for every rejection, a feature that needs a newer target than the one
    asked and no newer than the catalog's lowest sm for that opcode."""
    for target, row in TABLE["targets"].items():
        for op, reason in row["rejected"].items():
            if BY_OPCODE[op].targets:   # the sm_120a-only kind:: forms: ptxas names the feature instead
                assert re.search(r"not supported on \.target|requires \.target sm_", reason), (target, op, reason)
                continue
            m = re.search(r"requires \.target sm_(\d+)", reason)
            assert m, reason
            assert archs.sm_number(target) < int(m.group(1)) <= BY_OPCODE[op].min_sm, (target, op, reason)


def test_opcode_counts_per_target():
    got = {t: len(archs.catalog_for(t)) for t in archs.TARGETS}
    assert got == {"sm_70": 12, "sm_75": 31, "sm_80": 155, "sm_86": 155, "sm_89": 179,
                   "sm_90": 182, "sm_100": 182, "sm_120": 182, "sm_120a": 182 + 288 + 4}


def _ptxas(target):
    """(ptxas path, why not) for a target: a CUDA 12 ptxas for sm_70 (ptxas 13 dropped it; Triton 3.6's
    bundled ptxas is 12.8, the ``nvidia-cuda-nvcc-cu12`` wheel's 12.9), else ptxas 13 from PATH."""
    from warpsim.hw.ptxas_grammar import find_ptxas12, ptxas_version

    if target == "sm_70":
        found = find_ptxas12()
        return found, None if found else ("sm_70 needs a CUDA 12 ptxas: Triton's (the test extra) or "
                                          "pip install nvidia-cuda-nvcc-cu12")
    found = shutil.which("ptxas")
    if found and ptxas_version(found).startswith("13."):
        return found, None
    found = find_ptxas12()   # Triton's 12.8 knows every target but sm_103a / sm_110a (left out below)
    return found, None if found else "no ptxas: install the test extra (Triton bundles one)"


def _live_targets():
    """Every target, when ptxas 13 is on PATH; else those Triton's bundled ptxas 12.8 knows (not sm_103a,
    sm_110a, sm_121a: the committed tables, tests/golden/ptxas_archs.json.xz and
    tests/golden/ptxas/spellings.json.xz, answer for those)."""
    every = list(archs.TARGETS) + list(archs.ALIASES)
    if _ptxas("sm_80")[0] == shutil.which("ptxas"):
        return every
    return [t for t in every if t not in ("sm_103a", "sm_110a", "sm_121a")]


LIVE_TARGETS = _live_targets()


@pytest.mark.parametrize("target", LIVE_TARGETS)
def test_live_ptxas_agrees_with_the_derivation(target, tmp_path):
    from warpsim.hw.ptxas_grammar import ptxas_version

    ptxas, why = _ptxas(target)
    assert ptxas is not None, why
    release = ptxas_version(ptxas)
    good = archs.catalog_for(target)
    rc, errs, _ = ptxcheck.assemble(ptxas, ptxcheck.ptx_module(good, target, release), target, str(tmp_path), "good")
    assert rc == 0, errs[:5]
    bad = [i for i in CATALOG if not archs.available(i, target) and not archs.ptxas_also_accepts(i, target)]
    if not bad:
        return
    text = ptxcheck.ptx_module(bad, target, release)
    mma_lines = {n for n, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith("mma")}
    rc, errs, _ = ptxcheck.assemble(ptxas, text, target, str(tmp_path), "bad")
    assert rc != 0 and ptxcheck.error_line_numbers(errs) == mma_lines


def test_parse_and_mma_refuse_what_a_target_lacks():
    fp8 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
    with pytest.raises(ValueError, match=r"not available on sm_86.*lowest target that has it is sm_89"):
        warpsim.parse(fp8, arch="sm_86")
    f64 = "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64"
    with pytest.raises(ValueError, match=r"not available on sm_89.*lowest target that has it is sm_90"):
        warpsim.parse(f64, arch="sm_89")
    ins = warpsim.parse(f64)
    a, b, c = (np.zeros((32, ins.words(r)), np.uint32) for r in "abc")
    with pytest.raises(ValueError, match="sm_90"):
        warpsim.mma(f64, a, b, c, arch="sm_80")
    assert warpsim.parse(f64, arch="sm_90a") is ins
    with pytest.raises(ValueError, match="sm_70, sm_75"):
        warpsim.parse(f64, arch="sm_91")
    with pytest.raises(ValueError, match="modelled architectures"):
        warpsim.mma(f64, a, b, c, arch="ampere")


def test_mma_runs_every_opcode_each_target_has():
    """One warp of random register words (NaN, inf, subnormal included) through every opcode of
    every target: each returns D words of the right shape and does not touch its inputs."""
    rng = np.random.default_rng(15)
    for t in archs.TARGETS:
        for ins in archs.catalog_for(t):
            ops = {r: rng.integers(0, 2**32, (1, 32, ins.words(r)), dtype=np.uint32) for r in "abc"}
            e = None
            if ins.is_sparse:
                e = np.full((1, 32), 0x44444444 if ins.atype != "tf32" else 0xEEEEEEEE, np.uint32)
            kw = {}
            if ins.block_scaled:   # sm_120a block-scaled forms: random scale registers
                kw = {f"scale_{r}": rng.integers(0, 2**32, (1, 32), dtype=np.uint32) for r in "ab"}
            keep = {r: v.copy() for r, v in ops.items()}
            d = warpsim.mma(ins.opcode, ops["a"], ops["b"], ops["c"], e, arch=t, **kw)
            assert d.shape == (1, 32, ins.words("d")) and d.dtype == np.uint32
            assert all((ops[r] == keep[r]).all() for r in ops)


# --- numerics: the published per-architecture rules ----------------------------------------

#: MMA-Sim's fractional bits of the fused sum per architecture (Volta 23, Turing 24, Ampere 24,
#: Ada 24, Hopper 25, Blackwell 25, RTX Blackwell 25).
FRAC = {"sm_70": 23, "sm_75": 24, "sm_80": 24, "sm_86": 24, "sm_89": 24, "sm_90": 25, "sm_100": 25, "sm_120": 25}


def _d(op, A, B, C, arch):
    ins = warpsim.parse(op)
    dt = [ins.elem(r).numpy_dtype for r in "abc"]
    a, b, c = (warpsim.pack(op, r, np.asarray(x).astype(t)) for r, x, t in zip("abc", (A, B, C), dt))
    return warpsim.unpack(op, "d", warpsim.mma(op, a, b, c, arch=arch))


def _bits32(x):
    return int(np.float32(x).view(np.uint32))


def _row(op, terms, C=0.0):
    """A, B, C with D[0,0] = C + sum of a*b over ``terms`` = [(k, a, b), ...] (everything else 0)."""
    ins = warpsim.parse(op)
    pre = (ins.products,) if ins.products > 1 else ()
    A = np.zeros(pre + ins.matrix_shape("a"))
    B = np.zeros(pre + ins.matrix_shape("b"))
    Cm = np.zeros(pre + ins.matrix_shape("c"))
    for k, a, b in terms:
        A[(0,) * len(pre) + (0, k)] = a
        B[(0,) * len(pre) + (k, 0)] = b
    Cm[(0,) * len(pre) + (0, 0)] = C
    return A, B, Cm


@pytest.mark.parametrize("arch,f", [(a, f) for a in FRAC for f in (23, 24, 25) if (a, f) != ("sm_70", 25)])
def test_fractional_bits_of_the_fused_sum(arch, f):
    """1 + 2**(f-23) terms of 2**-f: their sum 2**-23 survives (D = 1 + 2**-23) exactly when the
    architecture keeps at least f fractional bits below the largest exponent, else D = 1."""
    n = 2 ** (f - 23)
    op = ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32" if arch == "sm_70"
          else "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32")
    assert n + 1 <= warpsim.parse(op).k   # (m8n8k4 holds 3 small terms: sm_70 is asked up to f = 24)
    half = f // 2
    terms = [(0, 1.0, 1.0)] + [(1 + i, 2.0 ** -half, 2.0 ** -(f - half)) for i in range(n)]
    d = _d(op, *_row(op, terms), arch)
    want = 1.0 + 2.0 ** -23 if f <= FRAC[arch] else 1.0
    assert _bits32(d.reshape(-1)[0]) == _bits32(want)


SPLIT = {"sm_80", "sm_86", "sm_89"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"])
@pytest.mark.parametrize("op,half", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 8),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 8),
    ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4),
])
def test_two_chained_halves_on_ampere_and_ada(arch, op, half):
    """1 + 2**-24 + 2**-24: in one fused pass (24 or 25 bits) D = 1 + 2**-23.  On Ampere and Ada
    these shapes are two passes over the halves of k, the first rounded (RZ) to f32: with the
    second 2**-24 in the second half, 1 + 2**-24 truncates to 1 and D = 1; in the same half it
    does not matter."""
    same = _d(op, *_row(op, [(0, 1.0, 1.0), (1, 2.0 ** -12, 2.0 ** -12), (2, 2.0 ** -12, 2.0 ** -12)]), arch)
    split = _d(op, *_row(op, [(0, 1.0, 1.0), (1, 2.0 ** -12, 2.0 ** -12), (half, 2.0 ** -12, 2.0 ** -12)]), arch)
    assert _bits32(same[0, 0]) == 0x3F800001
    assert _bits32(split[0, 0]) == (0x3F800000 if arch in SPLIT else 0x3F800001)


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90", "sm_120"])
@pytest.mark.parametrize("op", ["mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
                                "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
                                "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32"])
def test_shapes_measured_as_one_pass(arch, op):
    """MMA-Sim's split list leaves these out: the last k term aligns like the first."""
    k = warpsim.parse(op).k
    d = _d(op, *_row(op, [(0, 1.0, 1.0), (1, 2.0 ** -12, 2.0 ** -12), (k - 1, 2.0 ** -12, 2.0 ** -12)]), arch)
    assert _bits32(d[0, 0]) == 0x3F800001


FP8 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"


@pytest.mark.parametrize("arch,same,split", [
    ("sm_89", 2 + 2.0 ** -12, 2.0),            # 13 fractional bits, 13-bit f32 result, two halves
    ("sm_90", 2 + 2.0 ** -12, 2 + 2.0 ** -12),  # f16 emulation (sm_90 recipe, H100-verified)
    ("sm_120", 2 + 2.0 ** -12, 2 + 2.0 ** -12),  # native, 25 fractional bits, one pass
])
def test_ada_fp8_halves_and_13_bit_result(arch, same, split):
    """1.5 + 0.5 + 2**-13 + 2**-13 = 2 + 2**-12.  On Ada the first half (1.5 + 0.5 + 2**-13) is
    rounded to 13 mantissa bits: 2 + 2**-13 truncates to 2, and the second 2**-13 then lies 14
    bits below 2 and is cut off as well."""
    t = [(0, 1.5, 1.0), (1, 0.5, 1.0), (2, 2.0 ** -7, 2.0 ** -6)]
    d_same = _d(FP8, *_row(FP8, t + [(3, 2.0 ** -7, 2.0 ** -6)]), arch)
    d_split = _d(FP8, *_row(FP8, t + [(16, 2.0 ** -7, 2.0 ** -6)]), arch)
    assert _bits32(d_same[0, 0]) == _bits32(same)
    assert _bits32(d_split[0, 0]) == _bits32(split)


def test_ada_fp8_keeps_13_mantissa_bits():
    """Every finite f32 D word of Ada fp8 has its 10 low bits zero (C's included: C = 1 + 2**-23
    with zero products comes back as 1); NaN is still 0x7fffffff.  Not so on sm_120 / sm_90."""
    rng = np.random.default_rng(5)
    for op in ("mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e5m2.f32", FP8):
        ins = warpsim.parse(op)
        a = rng.integers(0, 2**32, (64, 32, ins.words("a")), dtype=np.uint32)
        b = rng.integers(0, 2**32, (64, 32, ins.words("b")), dtype=np.uint32)
        c = rng.integers(0, 2**32, (64, 32, 4), dtype=np.uint32)
        d = warpsim.mma(op, a, b, c, arch="sm_89")
        finite = (d & 0x7F800000) != 0x7F800000
        assert finite.mean() > 0.5 and (d[finite] & 0x3FF == 0).all()
        assert set(np.unique(d[~finite & ((d & 0x7FFFFF) != 0)])) <= {0x7FFFFFFF}
        assert (warpsim.mma(op, a, b, c, arch="sm_120")[finite] & 0x3FF != 0).any()
    A, B, C = _row(FP8, [], C=1 + 2.0 ** -23)
    assert _bits32(_d(FP8, A, B, C, "sm_89")[0, 0]) == 0x3F800000
    for arch in ("sm_90", "sm_120"):
        assert _bits32(_d(FP8, A, B, C, arch)[0, 0]) == 0x3F800001


M8N8K4_F16 = "mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16"


@pytest.mark.parametrize("arch,tail,want", [
    ("sm_70", 23, 0x3C01), ("sm_70", 24, 0x3C00),   # Volta: 23 fractional bits, then RNE to f16
    ("sm_75", 24, 0x3C01),                          # Turing: 24 bits
    ("sm_80", 24, 0x3C00),                          # FFMA-chain emulation: f32 ties-to-even, then f16
])
def test_m8n8k4_native_on_volta_and_turing(arch, tail, want):
    """1 + 2**-11 is a tie for f16 (RNE keeps 1); a third term 2**-tail breaks the tie upward
    only if it survives the fused sum (Volta 23 bits, Turing 24).  From sm_80 on m8n8k4 is an
    f32 FFMA chain: 1 + 2**-11 + 2**-24 rounds to 1 + 2**-11 in f32 (tie, even) and then to 1."""
    t = [(0, 1.0, 1.0), (1, 2.0 ** -6, 2.0 ** -5), (2, 2.0 ** -12, 2.0 ** -(tail - 12))]
    d = _d(M8N8K4_F16, *_row(M8N8K4_F16, t), arch)
    assert int(np.float16(d.reshape(-1)[0]).view(np.uint16)) == want


def test_explain_states_the_status():
    op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    ins = warpsim.parse(op)
    a, b, c = (np.zeros((32, ins.words(r)), np.uint32) for r in "abc")
    s80 = str(warpsim.explain(op, a, b, c, arch="sm_80"))
    assert "modelled from published measurements" in s80 and "MMA-Sim" in s80 and "two halves" in s80
    sp = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    ins = warpsim.parse(sp)
    a, b, c = (np.zeros((32, ins.words(r)), np.uint32) for r in "abc")
    e = np.full(32, 0x44444444, np.uint32)
    assert "no source measured sparse" in str(warpsim.explain(sp, a, b, c, e, arch="sm_89"))
    ins = warpsim.parse(op)
    a, b, c = (np.zeros((32, ins.words(r)), np.uint32) for r in "abc")
    assert "verified on hardware" in str(warpsim.explain(op, a, b, c, arch="sm_90a"))


# --- capture and verify for any target --------------------------------------------------------


def test_verify_takes_the_architecture_from_the_corpus(capsys, tmp_path):
    """A corpus that says it was captured on sm_80 is compared with the sm_80 model: integer words
    (the PTX ISA's exact semantics on every target) agree; f16 m16n8k16 f32 words captured on the
    H100 do not all agree with Ampere's two-halves model, and verify says so."""
    from warpsim.cli.main import main
    from warpsim.cli.verify import default_corpus
    from warpsim.hw import Corpus, save_corpus

    src = Corpus(default_corpus())
    want = ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
    arrays, entries = {}, []
    for i, e in enumerate(src.manifest["entries"]):
        if e["opcode"] in want:
            ent, n = src.entry(i), len(entries)
            arrays.update({f"{n}.{r}": ent[r] for r in "abcde" if r in ent})
            entries.append(e)
    path = tmp_path / "sm80.npz"
    save_corpus(path, arrays, dict(src.manifest, entries=entries, compute_capability="sm_80", target="sm_80"))
    rc = main(["verify", "--corpus", str(path), "-q"])
    out = capsys.readouterr().out
    assert rc == 1 and "model: sm_80 (modelled from published measurements)" in out
    assert re.search(r"int8\s+dense\s+1\s+\d+\s+0\s+bit-exact", out)
    assert re.search(r"f16\s+dense\s+1\s+\d+\s+[1-9]\d*\s+1 entries differ", out)
    assert "not an opcode of sm_80" in out          # the fp8 entry: sm_80 has no fp8 mma
    assert main(["verify", "--corpus", str(path), "-q", "--arch", "sm_90a"]) == 0
    assert "model: sm_90 (verified on hardware)" in capsys.readouterr().out


def test_capture_source_for_another_target(tmp_path):
    from warpsim.hw import main

    out = tmp_path / "k.cu"
    assert main(["source", "--arch", "sm_80", "--out", str(out)]) == 0
    kernels = re.findall(r"^// entry \d+: (\S+) selector", out.read_text(), re.M)
    assert set(kernels) == {i.opcode for i in archs.catalog_for("sm_80")}
    with pytest.raises(SystemExit):
        main(["source", "--arch", "sm_81", "--out", str(out)])


def test_numerics_doc_table_is_generated_from_the_catalog():
    from warpsim.cli.docs import ARCH_BEGIN, ARCH_END, arch_markdown

    with open(os.path.join(HERE, "..", "docs", "numerics.md")) as f:
        text = f.read()
    assert f"{ARCH_BEGIN}\n{arch_markdown()}\n{ARCH_END}" in text
