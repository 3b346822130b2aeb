"""tcgen05.mma (sm_100a): the ptxas acceptance table, the descriptors and the modelled numerics.

Expected values are worked out by hand from the published rules (the PTX ISA's descriptor tables;
MMA-Sim's Blackwell tcgen05 model: exact products, terms truncated to F fractional bits below the
largest exponent, F = 25 -- 35 for the K = 64 block-scaled path in groups of 16 products --, f32
results truncated, f16 results rounded to nearest even), never from a second copy of the model.
"""

from __future__ import annotations

import itertools
import json
import lzma
import os
import random
import shutil

import ml_dtypes
import numpy as np
import pytest

import warpsim
from warpsim.isa import tcgen05 as t5
from warpsim.isa.catalog import TCGEN05_CATALOG
from warpsim.hw.offline import ptxas_tcgen05 as probe

TABLE = os.path.join(os.path.dirname(__file__), "golden", "ptxas", "tcgen05_sm100a.json.xz")
F16 = "tcgen05.mma.cta_group::1.kind::f16"


def _table():
    with lzma.open(TABLE, "rt") as f:
        return json.load(f)


def _f32(bits):
    return np.array([bits], np.uint32).view(np.float32)[0]


def _bits(x):
    return int(np.asarray(x, np.float32).view(np.uint32))


# --- acceptance table ----------------------------------------------------------------------------

def test_catalog_is_exactly_the_ptxas_table():
    doc = _table()
    assert doc["arch"] == "sm_100a" and "13.0" in doc["ptxas"]
    mine = {op.opcode: list(op.forms) for op in TCGEN05_CATALOG}
    assert mine == doc["accepted"]
    assert len(mine) == 464


@pytest.mark.parametrize("arch", ["sm_103a", "sm_110a"])
def test_other_targets_are_exactly_their_ptxas_tables(arch):
    from warpsim.isa.catalog import tcgen05_forms_on

    with lzma.open(TABLE.replace("sm100a", arch.replace("_", "")), "rt") as f:
        doc = json.load(f)
    assert doc["arch"] == arch
    mine = {op.opcode: list(tcgen05_forms_on(op, arch)) for op in TCGEN05_CATALOG if tcgen05_forms_on(op, arch)}
    assert mine == doc["accepted"]
    assert all((arch in op.targets) == bool(tcgen05_forms_on(op, arch)) for op in TCGEN05_CATALOG)


def test_parser_accepts_exactly_the_table():
    accepted = set(_table()["accepted"])
    for s in accepted:
        assert warpsim.parse(s).opcode == s
    # every spelling the probe could write: accepted ones parse, a seeded sample of the others is refused
    everything = {probe.spelling(ws, sp, cta, kind, bs, ash, coll)
                  for ws, sp, cta, kind, bs, ash, coll in itertools.product(
                      (0, 1), (0, 1), (1, 2), probe.KINDS, probe.BLOCK_SCALE, (False, True),
                      (None,) + probe.COLLECTORS_A + probe.COLLECTORS_B)}
    assert accepted < everything
    refused = sorted(everything - accepted)
    for s in random.Random(5).sample(refused, 400):
        with pytest.raises(ValueError):
            warpsim.parse(s)


@pytest.mark.parametrize("spelling, blamed", [
    ("tcgen05.mma.ws.cta_group::2.kind::f16", "'.cta_group::2'"),
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale", "'.block_scale'"),
    ("tcgen05.mma.cta_group::1.kind::mxf8f6f4", "needs a .block_scale"),
    ("tcgen05.mma.cta_group::1.kind::f16.collector::b0::fill", "'.collector::b0::fill'"),
    ("tcgen05.mma.cta_group::1.kind::f17", "'.kind::f17'"),
    ("tcgen05.mma.kind::f16", ".cta_group is required"),
])
def test_parser_names_the_refused_qualifier(spelling, blamed):
    with pytest.raises(ValueError, match="allowed|required") as e:
        warpsim.parse(spelling)
    assert blamed in str(e.value)


def test_tcgen05_only_on_sm100a():
    assert warpsim.parse(F16, arch="sm_100a").kind == "f16"
    with pytest.raises(ValueError, match="exists on sm_100a, sm_103a, sm_110a only"):
        warpsim.parse(F16, arch="sm_90a")
    with pytest.raises(ValueError, match="exists on sm_100a, sm_110a only"):
        warpsim.parse("tcgen05.mma.cta_group::1.kind::i8", arch="sm_103a")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH: the committed table is checked above")
def test_live_ptxas_agrees_on_a_sample():
    doc = _table()["accepted"]
    ops = random.Random(2).sample(sorted(doc), 6)
    cands, want = [], []
    for op in ops:
        o = warpsim.parse(op)
        for form, text in probe.operand_forms(o.ws, o.sparse, o.cta_group, o.block_scaled):
            if o.ashift and form.startswith("adesc"):
                continue
            cands.append(f"{op} {text}")
            want.append(form in doc[op])
    got = probe.verdicts(cands, "sm_100a", "8.8")
    assert [i in got for i in range(len(cands))] == want


# --- instruction descriptor ----------------------------------------------------------------------

def test_idesc_worked_example():
    # f16 x f16 -> f32, M = 128, N = 256, K-major: D type 1 << 4, N >> 3 = 32 at bit 17, M >> 4 = 8 at bit 24
    assert t5.encode_idesc("f16", "f16", "f16", "f32", 128, 256) == (1 << 4) | (32 << 17) | (8 << 24) == 0x08400010
    # e2m1 x e3m2 -> f16, M = 64, N = 8, negate A, transpose B
    w = (5 << 7) | (4 << 10) | (1 << 13) | (1 << 16) | (1 << 17) | (4 << 24)
    assert t5.encode_idesc("f8f6f4", "e2m1", "e3m2", "f16", 64, 8, negate_a=True, transpose_b=True) == w
    # mxf4nvf4 with ue4m3 scales (bit 23 = 0), scale ids A = 3 (bits 29-30), B = 2 (bits 4-5), sparse selector 1
    w = 1 | (1 << 2) | (2 << 4) | (1 << 7) | (1 << 10) | (16 << 17) | (8 << 24) | (3 << 29)
    assert t5.encode_idesc("mxf4nvf4", "e2m1", "e2m1", "f32", 128, 128, sparse=True, selector=1,
                           scale_type="ue4m3", scale_id_a=3, scale_id_b=2) == w
    assert t5.decode_idesc(w, "mxf4nvf4").scale_type == "ue4m3"


def test_idesc_round_trips():
    rng = random.Random(0)
    n = 0
    for kind, codes in t5.TYPE_CODES.items():
        for a, b, d in itertools.product(codes, codes, t5.D_TYPES[kind]):
            if kind == "f16" and d == "f16" and (a, b) != ("f16", "f16"):
                continue
            for _ in range(4):
                kw = dict(m=rng.choice((64, 128, 256)), n=rng.randrange(8, 257, 8), sparse=rng.random() < .5,
                          negate_a=kind != "i8" and rng.random() < .5, transpose_a=rng.random() < .5,
                          transpose_b=rng.random() < .5)
                kw["selector"] = rng.randrange(4) if kw["sparse"] else 0
                if kind in t5.BLOCK_SCALED_KINDS:
                    kw.update(scale_type=rng.choice(("ue8m0", "ue4m3") if kind == "mxf4nvf4" else ("ue8m0",)),
                              scale_id_a=rng.randrange(4), scale_id_b=rng.randrange(4))
                else:
                    kw.update(saturate=kind == "i8" and rng.random() < .5, max_shift=rng.choice(t5.MAX_SHIFTS))
                d0 = t5.InstrDesc(kind=kind, atype=a, btype=b, dtype=d, **kw)
                w = d0.encode()
                assert 0 <= w < 1 << 32 and t5.decode_idesc(w, kind) == d0
                n += 1
    assert n > 300


@pytest.mark.parametrize("word, kind, msg", [
    (0x08400010 | 1 << 6, "f16", "reserved bits 0x00000040"),
    (0x08400010 | 1 << 23, "f16", "reserved bits"),
    ((2 << 7) | (1 << 4) | (4 << 17) | (8 << 24), "f8f6f4", "A type code 2"),
    ((3 << 4) | (4 << 17) | (8 << 24), "f16", "D type code 3"),
    ((1 << 7) | (1 << 10) | (2 << 4) | (1 << 13) | (4 << 17) | (8 << 24), "i8", "cannot negate"),
    ((1 << 7) | (1 << 10) | (4 << 17) | (8 << 24), "mxf4", "scale type 'ue4m3'"),
])
def test_idesc_refuses_invalid_words(word, kind, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        t5.decode_idesc(word, kind)


def test_idesc_refuses_invalid_fields():
    with pytest.raises(ValueError, match="M must be"):
        t5.encode_idesc("f16", "f16", "f16", "f32", 48 + 1, 64)
    with pytest.raises(ValueError, match="N must be"):
        t5.encode_idesc("f16", "f16", "f16", "f32", 128, 12)
    with pytest.raises(ValueError, match="selector"):
        t5.encode_idesc("f16", "f16", "f16", "f32", 128, 64, selector=1)
    with pytest.raises(ValueError, match="saturate exists for kind::i8 only"):
        t5.encode_idesc("tf32", "tf32", "tf32", "f32", 128, 64, saturate=True)
    with pytest.raises(ValueError, match="bf16 accumulates in f32"):
        t5.encode_idesc("f16", "bf16", "bf16", "f16", 128, 64)
    with pytest.raises(ValueError, match="allowed N: 16..256 step 16"):
        t5.check_shape("f16", 128, 24)
    with pytest.raises(ValueError, match="allowed M"):
        t5.check_shape("mxf8f6f4", 64, 64)
    op = warpsim.parse("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale")
    with pytest.raises(ValueError, match="sparse bit"):
        t5.check_idesc(t5.InstrDesc("mxf8f6f4", "e4m3", "e4m3", "f32", 128, 64, sparse=True, scale_type="ue8m0"), op)


# --- sm_100 shared-memory descriptor -------------------------------------------------------------

def test_smem_desc_worked_example_and_round_trip():
    # start 0x400 >> 4 = 0x40, LBO 16 >> 4 = 1 at bit 16, SBO 1024 >> 4 = 64 at bit 32, version 1 at bit 46,
    # 128-byte swizzle = 2 at bit 61
    w = t5.encode_smem_desc(0x400, 16, 1024, "128B")
    assert w == 0x40 | 1 << 16 | 64 << 32 | 1 << 46 | 2 << 61 == 0x4000404000010040
    rng = random.Random(1)
    for sw in t5.SMEM_SWIZZLES:
        for _ in range(20):
            d = t5.SmemDesc(start=16 * rng.randrange(1 << 14), lbo=16 * rng.randrange(1 << 14),
                            sbo=16 * rng.randrange(1 << 14), swizzle=sw, base_offset=rng.randrange(8),
                            lbo_mode=rng.randrange(2))
            assert t5.decode_smem_desc(d.encode()) == d
    assert t5.encode_smem_desc(0, 0, 0, "128B_base32B") >> 61 == 1
    assert t5.encode_smem_desc(0, 0, 0, "32B") >> 61 == 6


def test_smem_desc_refusals():
    good = t5.encode_smem_desc(0x400, 16, 1024, "64B")
    with pytest.raises(ValueError, match="version field"):
        t5.decode_smem_desc(good & ~(1 << 46))        # an sm_90 wgmma descriptor has 0 there
    with pytest.raises(ValueError, match="swizzle field 3"):
        t5.decode_smem_desc((good & ~(7 << 61)) | 3 << 61)
    with pytest.raises(ValueError, match="must be 0"):
        t5.decode_smem_desc(good | 1 << 55)
    with pytest.raises(ValueError, match="multiple of 16"):
        t5.encode_smem_desc(8, 16, 1024)
    with pytest.raises(ValueError, match="swizzle"):
        t5.encode_smem_desc(0, 16, 1024, "16B")


# --- numerics (matmul), worked from MMA-Sim's published rules -------------------------------------

def _row(vals, k, dtype):
    x = np.zeros(k)
    x[:len(vals)] = vals
    return x.astype(dtype)


def _mm(op, a_row, b_col, c=0.0, *, m=128, n=16, cdtype=np.float32, **kw):
    """D[0, 0] of a tcgen05 matmul whose first row of A and first column of B are given (zeros elsewhere)."""
    k = len(a_row)
    A = np.zeros((m, k), a_row.dtype)
    A[0] = a_row
    B = np.zeros((k, n), b_col.dtype)
    B[:, 0] = b_col
    C = np.zeros((m, n), cdtype)
    C[0, 0] = c
    return warpsim.matmul(op, A, B, C, arch="sm_100a", **kw)[0, 0]


def test_f16_terms_truncated_to_25_fractional_bits():
    # 1*1 + 8 products of 1.5 * 2^-25: each truncated to 2^-25 below 2^0 -> 1 + 2^-22 (exact sum: 1 + 3 * 2^-23)
    a = _row([1] + [1.5 * 2**-13] * 8, 16, np.float16)
    b = _row([1] + [2**-12] * 8, 16, np.float16)
    assert _mm(F16, a, b) == np.float32(1 + 2**-22)


def test_f16_result_truncated_to_f32_and_c_fused():
    # 1 + 2^-24 + 2^-25 keeps every bit (F = 25), then RZ to f32 drops 0.75 ulp -> 1.0 (RN would give 1 + 2^-23)
    a = _row([1, 2**-12, 2**-13], 16, np.float16)
    b = _row([1, 2**-12, 2**-12], 16, np.float16)
    assert _mm(F16, a, b) == np.float32(1.0)
    # C = 3 * 2^-24 is a term of the same sum: 1 + 1.5 ulp, truncated -> 1 + 2^-23 (RN-even would give 1 + 2^-22)
    one = _row([1], 16, np.float16)
    assert _mm(F16, one, one, 3 * 2**-24) == np.float32(1 + 2**-23)


def test_f16_accumulator_rounds_to_nearest_even():
    # 1 + 2^-11 + 2^-12 = 1 + 0.75 ulp(f16) -> RNE 1 + 2^-10 (truncation would give 1.0)
    a = _row([1, 2**-6, 2**-6], 16, np.float16)
    b = _row([1, 2**-5, 2**-6], 16, np.float16)
    d = _mm(F16, a, b, cdtype=np.float16)
    assert d.dtype == np.float16 and d == np.float16(1 + 2**-10)


def test_f16_special_values():
    one = _row([1], 16, np.float16)
    nan = _row([np.nan], 16, np.float16)
    assert _bits(_mm(F16, nan, one)) == 0x7FFFFFFF                     # canonical NaN
    inf = _row([np.inf, np.inf], 16, np.float16)
    assert _mm(F16, _row([np.inf], 16, np.float16), one) == np.inf
    assert _bits(_mm(F16, inf, one)) == 0x7FFFFFFF                     # inf * 0
    assert _bits(_mm(F16, inf, _row([1, -1], 16, np.float16))) == 0x7FFFFFFF   # inf - inf
    negz = _row([-0.0], 16, np.float16)
    assert _bits(_mm(F16, negz, one, -0.0)) == 0                       # zero results are +0
    # the descriptor's negate bits: (-A) x B
    m, n = 128, 16
    A = np.zeros((m, 16), np.float16)
    A[0, :2] = [3, 5]
    B = np.zeros((16, n), np.float16)
    B[:2, 0] = [2, 7]
    from warpsim.api.tcgen05 import matmul_tcgen05
    assert matmul_tcgen05(F16, A, B, negate_a=True)[0, 0] == -41.0
    assert matmul_tcgen05(F16, A, B, negate_a=True, negate_b=True)[0, 0] == 41.0


def test_tf32_ignores_the_low_13_bits():
    op = "tcgen05.mma.cta_group::1.kind::tf32"
    a = _row([_f32(0x3F800000 | 0x1FFF), 2.0], 8, np.float32)      # 1 + 8191 * 2^-23 reads as 1.0
    b = _row([1.0, 0.5], 8, np.float32)
    assert _mm(op, a, b) == np.float32(2.0)


def test_f8f6f4_mixed_types_and_truncation():
    op = "tcgen05.mma.cta_group::1.kind::f8f6f4"
    # e5m2 x e5m2: the f16 truncation case with fp8 operands -> 1 + 2^-22
    a = _row([1] + [1.5 * 2**-13] * 8, 32, ml_dtypes.float8_e5m2)
    b = _row([1] + [2**-12] * 8, 32, ml_dtypes.float8_e5m2)
    assert _mm(op, a, b) == np.float32(1 + 2**-22)
    # e2m1 x e4m3 (6 * 448 + 0.5 * -0.001953125): exact products, one fused sum, all representable
    a = _row([6, 0.5], 32, ml_dtypes.float4_e2m1fn)
    b = _row([448, -2**-9], 32, ml_dtypes.float8_e4m3fn)
    assert _mm(op, a, b) == np.float32(2688 - 2**-10)
    # e3m2 x e2m3 into an f16 accumulator: 28 * 7.5 = 210
    a = _row([28], 32, ml_dtypes.float6_e3m2fn)
    b = _row([7.5], 32, ml_dtypes.float6_e2m3fn)
    assert _mm(op, a, b, cdtype=np.float16) == np.float16(210)


def test_i8_wraps_or_saturates():
    op = "tcgen05.mma.cta_group::1.kind::i8"
    a = np.full(32, 127, np.int8)
    b = np.full(32, 127, np.int8)
    c = 2**31 - 100
    total = c + 32 * 127 * 127
    wrapped = total - 2**32
    assert _mm(op, a, b, c, cdtype=np.int32, m=64, n=8) == wrapped
    A = np.zeros((64, 32), np.int8)
    A[0] = a
    B = np.zeros((32, 8), np.int8)
    B[:, 0] = b
    C = np.zeros((64, 8), np.int32)
    C[0, 0] = c
    from warpsim.api.tcgen05 import matmul_tcgen05
    assert matmul_tcgen05(op, A, B, C, saturate=True)[0, 0] == 2**31 - 1
    # u8 x s8
    assert _mm(op, np.full(32, 255, np.uint8), np.full(32, -128, np.int8), 0, cdtype=np.int32, m=64, n=8) == -32 * 255 * 128


def test_mxf8f6f4_scales_every_product():
    op = "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale"
    # 8 products 1.5 * 1 scaled by 2^-25 (scale_a) * 1 (scale_b), plus C = 1: each truncated to 2^-25 -> 1 + 2^-22
    k, m, n = 32, 128, 8
    A = np.zeros((m, k), ml_dtypes.float8_e4m3fn)
    A[0, :8] = 1.5
    B = np.zeros((k, n), ml_dtypes.float8_e4m3fn)
    B[:8, 0] = 1
    C = np.zeros((m, n), np.float32)
    C[0, 0] = 1
    sa = np.full((m, 1), 2.0**-25).astype(ml_dtypes.float8_e8m0fnu)
    sb = np.ones((1, n)).astype(ml_dtypes.float8_e8m0fnu)
    assert warpsim.matmul(op, A, B, C, arch="sm_100a", scale_a=sa, scale_b=sb)[0, 0] == np.float32(1 + 2**-22)
    # raw ue8m0 bits: 130 = 2^3 for row 1, 124 = 2^-3 for column 1: 1.5 * 2^3 * 2^-3 * 8 = 12
    A[1, :8] = 1.5
    B[:8, 1] = 1
    sa_raw = np.full((m, 1), 127, np.uint8)
    sa_raw[1] = 130
    sb_raw = np.full((1, n), 127, np.uint8)
    sb_raw[0, 1] = 124
    D = warpsim.matmul(op, A, B, None, arch="sm_100a", scale_a=sa_raw, scale_b=sb_raw)
    assert D[1, 1] == 12.0 and D[1, 0] == 8 * 1.5 * 8 and D[0, 1] == 8 * 1.5 / 8


def test_mxf4_groups_of_16_keep_35_fractional_bits():
    op = "tcgen05.mma.cta_group::1.kind::mxf4.block_scale"
    # C = 1; four groups of 16 products summing (before scaling) to 1.75, 1.75, 1.75, 0.75, each scaled by
    # 2^-25: F = 35 keeps all 6 * 2^-25 = 1.5 ulp -> RZ 1 + 2^-23.  (F = 25 per group would keep 3 * 2^-25 -> 1.0)
    k, m, n = 64, 128, 8
    A = np.zeros((m, k), ml_dtypes.float4_e2m1fn)
    B = np.zeros((k, n), ml_dtypes.float4_e2m1fn)
    for g in range(3):
        A[0, 16 * g:16 * g + 2] = [1, 0.5]
        B[16 * g:16 * g + 2, 0] = [1, 1.5]
    A[0, 48] = 0.5
    B[48, 0] = 1.5
    C = np.zeros((m, n), np.float32)
    C[0, 0] = 1
    sa = np.full((m, 2), 2.0**-25).astype(ml_dtypes.float8_e8m0fnu)
    sb = np.ones((2, n)).astype(ml_dtypes.float8_e8m0fnu)
    assert warpsim.matmul(op, A, B, C, arch="sm_100a", scale_a=sa, scale_b=sb)[0, 0] == np.float32(1 + 2**-23)


def test_mxf4nvf4_ue4m3_block16():
    op = "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16"
    k, m, n = 64, 128, 8
    A = np.zeros((m, k), ml_dtypes.float4_e2m1fn)
    B = np.zeros((k, n), ml_dtypes.float4_e2m1fn)
    A[0, [0, 16, 32, 48]] = [1, 2, 3, 6]
    B[[0, 16, 32, 48], 0] = [1, 1, 0.5, -1]
    sa = np.array([[0.5, 3, 1.5, 0.25]] * m).astype(ml_dtypes.float8_e4m3fn)   # one ue4m3 per 16 K
    sb = np.array([[2] * n, [1] * n, [4] * n, [0.5] * n]).astype(ml_dtypes.float8_e4m3fn)
    want = 1 * 0.5 * 2 + 2 * 3 * 1 + 1.5 * 1.5 * 4 - 6 * 0.25 * 0.5   # 1 + 6 + 9 - 0.75
    D = warpsim.matmul(op, A, B, arch="sm_100a", scale_a=sa, scale_b=sb)
    assert D[0, 0] == np.float32(want)
    # ue4m3: bit 7 is not part of the value (raw bits 0x80 | x read as x)
    raw_a = sa.view(np.uint8) | np.uint8(0x80)
    D2 = warpsim.matmul(op, A, B, arch="sm_100a", scale_a=raw_a, scale_b=sb.view(np.uint8), types=None)
    assert D2[0, 0] == np.float32(want)
    # ue8m0 factors on 16-element blocks (descriptor scale type 1): 2^(e - 127)
    from warpsim.api.tcgen05 import matmul_tcgen05
    e8 = np.array([[126, 128, 127, 125]] * m, np.uint8)     # 0.5, 2, 1, 0.25
    D3 = matmul_tcgen05(op, A, B, scale_a=e8, scale_b=np.full((4, n), 127, np.uint8), scale_type="ue8m0")
    assert D3[0, 0] == np.float32(1 * 0.5 + 2 * 2 + 1.5 * 1 - 6 * 0.25)


def test_matmul_argument_errors():
    A = np.zeros((128, 16), np.float16)
    B = np.zeros((16, 24), np.float16)
    with pytest.raises(ValueError, match="allowed N: 16..256 step 16"):
        warpsim.matmul(F16, A, B, arch="sm_100a")
    with pytest.raises(ValueError, match=r"sm_110a only \(ptxas 13.0\), not on 'sm_90'"):
        warpsim.matmul(F16, A, B[:, :16])
    with pytest.raises(ValueError, match="block-scaled: pass scale_a"):
        warpsim.matmul("tcgen05.mma.cta_group::1.kind::mxf4.block_scale", np.zeros((128, 64), ml_dtypes.float4_e2m1fn),
                       np.zeros((64, 16), ml_dtypes.float4_e2m1fn), arch="sm_100a")
    with pytest.raises(ValueError, match="A type 'e4m3' is not allowed for kind::f16"):
        warpsim.matmul(F16, A.astype(ml_dtypes.float8_e4m3fn), B[:, :16], arch="sm_100a")
    with pytest.raises(ValueError, match=r"A of .* must have shape"):
        warpsim.matmul(F16, np.zeros((128, 32), np.float16), np.zeros((32, 16), np.float16), arch="sm_100a")
    with pytest.raises(NotImplementedError, match="block-scaled sparse"):
        warpsim.matmul("tcgen05.mma.sp.cta_group::1.kind::mxf4.block_scale", np.zeros((128, 128), ml_dtypes.float4_e2m1fn),
                       np.zeros((128, 16), ml_dtypes.float4_e2m1fn), arch="sm_100a")
    with pytest.raises(ValueError, match="2:4 sparse along K.*row 0, K 0..3 has 4"):
        warpsim.matmul("tcgen05.mma.sp.cta_group::1.kind::f16", np.ones((128, 32), np.float16), B[:32, :16],
                       arch="sm_100a")
    A0, B0 = A.copy(), B.copy()
    warpsim.matmul(F16, A, B[:, :16], arch="sm_100a", types=("f16", "f16", "f32"))
    assert (A == A0).all() and (B == B0).all()


def test_explain_says_modelled():
    from warpsim.numerics.recipes import TCGEN05_RECIPES

    for key, r in TCGEN05_RECIPES.items():
        assert "MMA-Sim" in r.source and r.unmeasured, key
    assert "modelled" in warpsim.parse(F16).describe()


def test_register_level_entry_points_refuse_tcgen05():
    w = np.zeros((32, 4), np.uint32)
    for call in (lambda: warpsim.mma(F16, w, w[:, :2], w), lambda: warpsim.explain(F16, w, w[:, :2], w),
                 lambda: warpsim.wgmma(F16, np.zeros((128, 4), np.uint32), 0, 0, smem=np.zeros(16, np.uint8)),
                 lambda: warpsim.compress("tcgen05.mma.sp.cta_group::1.kind::f16", np.zeros((128, 16)))):
        with pytest.raises(ValueError, match="tcgen05.mma spelling .*use warpsim.matmul"):
            call()
    with pytest.raises(ValueError, match="not in register fragments"):
        warpsim.pack(F16, "a", np.zeros((128, 16)))
    with pytest.raises(NotImplementedError, match="runs tcgen05 main loops for dense kind::f16"):
        warpsim.gemm(np.zeros((128, 64), np.int8), np.zeros((64, 64), np.int8),
                     instruction="tcgen05.mma.cta_group::1.kind::i8", arch="sm_100a")


def test_cta_group_2_m256_and_batches():
    op = "tcgen05.mma.cta_group::2.kind::f16"
    rng = np.random.default_rng(7)
    A = rng.integers(-3, 4, (2, 256, 16)).astype(np.float16)
    B = rng.integers(-3, 4, (16, 32)).astype(np.float16)
    D = warpsim.matmul(op, A, B, arch="sm_100a")
    assert D.shape == (2, 256, 32) and (D == np.einsum("gmk,kn->gmn", A.astype(np.float64), B.astype(np.float64))).all()
    with pytest.raises(ValueError, match="allowed M"):
        warpsim.matmul(op, A[0, :64], B, arch="sm_100a")


def test_sparse_f16_sums_the_kept_products():
    # logical K = 32, 2 of every 4 kept: 1 * 1 at k = 0 and 8 products 1.5 * 2^-25 each truncated to 2^-25:
    # the same truncation as dense -> 1 + 2^-22; the descriptor carries the sparse bit
    op = "tcgen05.mma.sp.cta_group::1.kind::f16"
    a = np.zeros(32, np.float16)
    b = np.zeros(32, np.float16)
    a[0] = b[0] = 1
    small = [1, 4, 5, 8, 9, 12, 13, 16]          # at most 2 of every 4
    a[small], b[small] = 1.5 * 2**-13, 2**-12
    assert _mm(op, a, b) == np.float32(1 + 2**-22)
    # tf32 1:2
    op = "tcgen05.mma.sp.cta_group::1.kind::tf32"
    a = _row([3.0, 0, 0, 5.0], 16, np.float32)
    b = _row([2.0, 7.0, 1.0, 0.5], 16, np.float32)
    assert _mm(op, a, b) == np.float32(8.5)


@pytest.mark.parametrize("op, dt, k", [(F16, np.float16, 16), ("tcgen05.mma.cta_group::1.kind::tf32", np.float32, 8)])
def test_gemm_is_the_chain_of_tcgen05_mmas(op, dt, k):
    """A main loop: D_0 = 0, D_{s+1} = tcgen05.mma(A[:, Ks], B[Ks], D_s) in K order (plumbing: the chain and the
    twin mma's recipe; the arithmetic of one MMA is checked above)."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((128, 64)).astype(dt)
    B = rng.standard_normal((64, 32)).astype(dt)
    G = warpsim.gemm(A, B, instruction=op, arch="sm_100a")
    D = np.zeros((128, 32), np.float32)
    for k0 in range(0, 64, k):
        D = warpsim.matmul(op, A[:, k0:k0 + k], B[k0:k0 + k], D, arch="sm_100a")
    assert G.dtype == np.float32 and (G.view(np.uint32) == D.view(np.uint32)).all()
