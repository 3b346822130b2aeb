"""warpsim.isa.codec against worked bit patterns from the format definitions (IEEE 754 binary16 /
binary32 / binary64, bfloat16, OCP FP8 e4m3/e5m2, OCP MX e2m1/e2m3/e3m2/e8m0, two's complement)."""

from fractions import Fraction

import numpy as np
import pytest

from warpsim.isa import codec
from warpsim.isa.codec import element_type, exact_value, storage_dtype, to_bits, to_storage, to_values
from warpsim.isa.types import TYPES

F = np.float64

# (type, value, raw bits): each a worked example of the format's encoding
WORKED = [
    ("f64", 1.0, 0x3FF0000000000000), ("f64", -2.0, 0xC000000000000000),
    ("f32", 1.0, 0x3F800000), ("f32", -0.0, 0x80000000), ("f32", 2.0 ** -149, 0x00000001),
    ("f16", 1.0, 0x3C00), ("f16", -2.0, 0xC000), ("f16", 65504.0, 0x7BFF), ("f16", 2.0 ** -24, 0x0001),
    ("f16", np.inf, 0x7C00),
    ("bf16", 1.0, 0x3F80), ("bf16", -1.5, 0xBFC0), ("bf16", np.inf, 0x7F80),
    ("tf32", 1.0, 0x3F800000),
    ("e4m3", 1.0, 0x38), ("e4m3", 448.0, 0x7E), ("e4m3", -448.0, 0xFE), ("e4m3", 2.0 ** -9, 0x01),
    ("e5m2", 1.0, 0x3C), ("e5m2", 57344.0, 0x7B), ("e5m2", np.inf, 0x7C), ("e5m2", 2.0 ** -16, 0x01),
    ("e2m1", 1.0, 0x2), ("e2m1", 6.0, 0x7), ("e2m1", -0.5, 0x9),
    ("e2m3", 7.5, 0x1F), ("e2m3", 0.125, 0x01),
    ("e3m2", 28.0, 0x1F), ("e3m2", 0.0625, 0x01),
    ("ue8m0", 1.0, 0x7F), ("ue8m0", 2.0, 0x80), ("ue8m0", 2.0 ** -127, 0x00),
    ("ue4m3", 1.0, 0x38), ("ue4m3", 448.0, 0x7E),
    ("s32", -1, 0xFFFFFFFF), ("s32", 2 ** 31 - 1, 0x7FFFFFFF), ("s32", -2 ** 31, 0x80000000),
    ("s8", -128, 0x80), ("s8", 127, 0x7F), ("u8", 255, 0xFF),
    ("s4", -1, 0xF), ("s4", -8, 0x8), ("s4", 7, 0x7), ("u4", 15, 0xF),
    ("b1", 1, 1), ("b1", 0, 0),
]


@pytest.mark.parametrize("name, value, raw", WORKED, ids=[f"{t}:{v}" for t, v, _ in WORKED])
def test_worked_patterns_both_ways(name, value, raw):
    t = element_type(name)
    bits = to_bits(np.array([value]), t)
    assert bits.dtype == np.uint64 and int(bits[0]) == raw, (name, value, hex(int(bits[0])))
    back = to_values(np.array([raw], np.uint64), t)
    assert back.dtype == (np.uint8 if t.kind == "bits" else t.numpy_dtype)
    assert float(back[0]) == value and np.signbit(float(back[0])) == np.signbit(value)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_float_rounding_is_nearest_even():
    # f16: 65520 is halfway between 65504 and 2^16 -> even -> overflows to inf; 1 + 2^-11 ties to 1.0
    assert to_bits(np.array([65520.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11]), "f16").tolist() == [0x7C00, 0x3C00, 0x3C02]
    # bf16: 1 + 2^-8 ties to 1.0, 1 + 3 * 2^-8 ties up to the even 0x3F82
    assert to_bits(np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8]), "bf16").tolist() == [0x3F80, 0x3F82]
    # e4m3: 464 is halfway between 448 (0x7E, mantissa 110) and 480 (0x7F would be NaN): even -> 448
    assert to_bits(np.array([464.0]), "e4m3").tolist() == [0x7E]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_nan_and_infinity_rules():
    nan = np.array([np.nan])
    assert to_bits(nan, "f16").tolist() == [0x7E00]           # quiet NaN, payload's top bits
    assert to_bits(nan, "bf16").tolist() == [0x7FC0]
    assert to_bits(nan, "f32").tolist() == [0x7FC00000]
    # e4m3 has no infinity: S.1111.111 is its only NaN; inf and overflow become NaN
    assert to_bits(np.array([np.inf, np.nan, 1e6]), "e4m3").tolist() == [0x7F, 0x7F, 0x7F]
    assert np.isnan(to_values(np.array([0x7F, 0xFF], np.uint64), "e4m3").astype(F)).all()
    assert to_values(np.array([0x7E], np.uint64), "e4m3").astype(F)[0] == 448
    # e5m2 keeps IEEE rules: 0x7C inf, 0x7D..0x7F NaN
    v = to_values(np.array([0x7C, 0x7D, 0x7E, 0x7F], np.uint64), "e5m2").astype(F)
    assert v[0] == np.inf and np.isnan(v[1:]).all()
    # ue8m0: 0xFF is its NaN
    assert np.isnan(float(to_values(np.array([0xFF], np.uint64), "ue8m0")[0]))
    assert to_bits(nan, "ue8m0").tolist() == [0xFF]
    # finite-only MX formats have neither: every pattern is a number
    for name in ("e2m1", "e2m3", "e3m2"):
        t = element_type(name)
        assert np.isfinite(to_values(np.arange(1 << t.width, dtype=np.uint64), t).astype(F)).all()


def test_narrow_formats_in_a_wide_container_read_the_low_bits():
    t8 = TYPES["e2m1"].in_container(8)
    assert to_values(np.array([0xF2, 0x02], np.uint64), t8).astype(F).tolist() == [1.0, 1.0]
    assert to_bits(np.array([-6.0]), t8).tolist() == [0xF]


def test_sign_extension_and_integer_ranges():
    assert to_values(np.array([0xF, 0x8, 0x7, 0x0], np.uint64), "s4").astype(int).tolist() == [-1, -8, 7, 0]
    assert to_values(np.array([0xF], np.uint64), "u4").astype(int).tolist() == [15]
    assert to_values(np.array([0x80, 0xFF], np.uint64), "s8").tolist() == [-128, -1]
    assert to_values(np.array([0x80000000], np.uint64), "s32").tolist() == [-2 ** 31]
    for name, bad, msg in (("s8", 128, r"s8 values must lie in \[-128, 127\]"),
                           ("u8", -1, r"u8 values must lie in \[0, 255\]"),
                           ("s4", 8, r"s4 values must lie in \[-8, 7\]"),
                           ("u4", 16, r"u4 values must lie in \[0, 15\]"),
                           ("s32", 2 ** 31, r"s32 values must lie in \[-2147483648, 2147483647\]")):
        with pytest.raises(ValueError, match=msg):
            to_bits(np.array([bad]), name)
    assert to_bits(np.array([3.0, -2.0]), "s8").tolist() == [3, 0xFE]          # integral floats are fine
    with pytest.raises(ValueError, match="s8 matrices need integer values"):
        to_bits(np.array([2.5]), "s8")
    with pytest.raises(ValueError, match="b1 matrices may only hold 0 and 1"):
        to_bits(np.array([0, 2]), "b1")


def test_tf32_keeps_the_ignored_bits_and_exact_value_clears_them():
    x = np.array([0x3F800001], np.uint32).view(np.float32)
    assert to_bits(x, "tf32").tolist() == [0x3F800001]
    assert exact_value(0x3F800001, "tf32") == 1
    assert exact_value(0x3F802000, "tf32") == 1 + Fraction(1, 2 ** 10)


def test_exact_value():
    assert exact_value(0x3C00, "f16") == 1 and exact_value(0x0001, "f16") == Fraction(1, 2 ** 24)
    assert exact_value(0xB8, "ue4m3") == 1                 # bit 7 is not part of an unsigned e4m3
    assert exact_value(0xF, "s4") == -1 and exact_value(0xF, "u4") == 15
    assert exact_value(0x7C00, "f16") == np.inf and np.isnan(exact_value(0x7F, "e4m3"))


def test_storage_is_a_view_when_the_type_matches():
    x = np.array([1.0, -2.0], np.float16)
    s = to_storage(x, "f16")
    assert s.dtype == np.uint16 and s.tolist() == [0x3C00, 0xC000] and np.shares_memory(s, x)
    assert to_storage(np.array([-1]), "s8").tolist() == [0xFF]
    assert storage_dtype("e2m1") == np.uint8 and storage_dtype("f64") == np.uint64 and storage_dtype("b1") == np.uint8


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_every_16_bit_pattern_round_trips():
    raw = np.arange(1 << 16, dtype=np.uint64)
    for name in ("f16", "bf16"):
        v = to_values(raw, name)
        with np.errstate(invalid="ignore"):       # casting NaN payloads to float64
            keep = ~np.isnan(v.astype(F))
        assert (to_bits(v, name)[keep] == raw[keep]).all(), name


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_inputs_are_not_modified_and_names_are_checked():
    x = np.array([1.5, -3.0, 1e9])
    before = x.copy()
    to_bits(x, "f16"), to_storage(x, "bf16"), to_bits(x[:2], "e4m3")
    assert np.array_equal(x, before)
    with pytest.raises(ValueError, match="unknown element type 'f7'; known: f16, bf16"):
        element_type("f7")
    assert element_type(".ue8m0") is codec.SCALE_TYPES["ue8m0"]
