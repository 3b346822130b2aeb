"""CUtensorMap encoder: the validation rules of cuTensorMapEncodeTiled (cuda.h, CUDA 13) and the byte layout."""

import os

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

from warpsim.isa import tensormap as T

GOOD = dict(dtype="float16", rank=2, global_address=0x10000, global_dim=(100, 70), global_strides=(256,),
            box_dim=(64, 32), element_strides=(1, 1))


def enc(**kw):
    return T.encode_tiled(**{**GOOD, **kw})


def test_round_trip_every_enum():
    for sw in ("none", "32B", "64B", "128B"):
        for l2 in T.L2_PROMOTIONS:
            box = (T.SWIZZLE_SPAN[sw] // 2 or 64, 32)
            b = enc(swizzle=sw, l2_promotion=l2, box_dim=box, oob_fill="nan_request_zero_fma")
            tm = T.decode_tensormap(b)
            assert (tm.swizzle, tm.l2_promotion, tm.box_dim, tm.oob_fill) == (sw, l2, box, "nan_request_zero_fma")
    tm = T.decode_tensormap(T.encode_tiled("int64", 5, 1 << 47, (3, 4, 5, 6, 7), (32, 128, 512, 4096),
                                           (2, 3, 4, 5, 6), (1, 2, 8, 3, 1)))
    assert tm.global_dim == (3, 4, 5, 6, 7) and tm.element_strides == (1, 2, 8, 3, 1) and tm.rank == 5


def test_cuda_enum_integers_accepted():
    assert T.decode_tensormap(enc(dtype=9, swizzle=3)).dtype == "bfloat16"


@pytest.mark.parametrize("kw, words", [
    (dict(dtype="int8"), ["tensorDataType", "'uint8'"]),
    (dict(rank=0, global_dim=(), global_strides=(), box_dim=(), element_strides=()), ["tensorRank", "1 .. 5"]),
    (dict(rank=6), ["tensorRank", "1 .. 5"]),
    (dict(global_address=0x10008), ["global address", "16-byte"]),
    (dict(global_dim=(0, 70)), ["globalDim", "[0]", "1 .. 4294967296"]),
    (dict(global_dim=(100,)), ["globalDim", "2 entries"]),
    (dict(global_strides=(200,)), ["globalStrides", "multiple of 16"]),
    (dict(global_strides=(1 << 40,)), ["globalStrides", "out of range"]),
    (dict(box_dim=(64, 257)), ["boxDim", "[1]", "1 .. 256"]),
    (dict(box_dim=(4, 32)), ["boxDim", "8 bytes", "multiple of 16"]),
    (dict(element_strides=(1, 9)), ["elementStrides", "1 .. 8"]),
    (dict(swizzle="256B"), ["swizzle", "'128B'"]),
    (dict(swizzle="64B"), ["swizzle '64B' allows at most 64"]),
    (dict(l2_promotion="512B"), ["l2Promotion", "'256B'"]),
    (dict(oob_fill="inf"), ["oobFill", "'nan_request_zero_fma'"]),
    (dict(dtype="uint16", oob_fill="nan_request_zero_fma"), ["oobFill", "floating-point"]),
    (dict(interleave="16B"), ["tensorRank", ">= 3"]),
    (dict(interleave="8B"), ["interleave", "'32B'"]),
])
def test_invalid_fields_name_field_and_allowed(kw, words):
    with pytest.raises(ValueError) as e:
        enc(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_interleave_and_packed_rules():
    three = dict(rank=3, global_dim=(8, 4, 4), global_strides=(32, 128), box_dim=(8, 4, 4), element_strides=(1, 1, 1))
    with pytest.raises(ValueError, match="swizzle must be '32B' with interleave '32B'"):
        enc(**three, interleave="32B")
    with pytest.raises(ValueError, match="32-byte aligned"):
        enc(**three, interleave="32B", swizzle="32B", global_address=0x10010)
    with pytest.raises(ValueError, match="multiple of 32"):
        enc(**{**three, "global_strides": (48, 192)}, interleave="32B", swizzle="32B")
    assert T.decode_tensormap(enc(**three, interleave="16B")).interleave == "16B"
    packed = dict(dtype="16u4_align16b", global_dim=(256, 4), global_strides=(256,), box_dim=(128, 4))
    assert T.decode_tensormap(enc(**packed, swizzle="128B")).dtype == "16u4_align16b"
    with pytest.raises(ValueError, match="multiple of 128"):
        enc(**{**packed, "global_dim": (200, 4)})
    with pytest.raises(ValueError, match="must be 128"):
        enc(**{**packed, "box_dim": (64, 4)})
    with pytest.raises(ValueError, match="not allowed for 16u4_align16b"):
        enc(**packed, swizzle="64B")
    with pytest.raises(ValueError, match="multiple of 2"):
        enc(dtype="16u4_align8b", global_dim=(101, 4), box_dim=(32, 4))


def test_decoder_rejects_garbage():
    b = enc()
    bad = b.copy(); bad[120] = 1
    with pytest.raises(ValueError, match="outside every known field"):
        T.decode_tensormap(bad)
    with pytest.raises(ValueError, match="128 bytes"):
        T.decode_tensormap(b[:64])
    assert T.decode_tensormap(b.view(np.uint64)) == T.decode_tensormap(bytes(b))


def test_inputs_not_modified():
    dims, box = [100, 70], [64, 32]
    enc(global_dim=dims, box_dim=box)
    assert dims == [100, 70] and box == [64, 32]


CAPTURE = os.path.join(os.path.dirname(__file__), "golden", "tensormaps_sm90.npz")


def capture_case(z, i):
    """Encoder keyword arguments of captured case ``i`` (the CUDA enum integers as captured)."""
    r = int(z["rank"][i])
    return dict(dtype=int(z["dtype"][i]), rank=r, global_address=int(z["addr"][i]),
                global_dim=[int(v) for v in z["dims"][i][:r]], global_strides=[int(v) for v in z["strides"][i][:max(r - 1, 0)]],
                box_dim=[int(v) for v in z["box"][i][:r]], element_strides=[int(v) for v in z["es"][i][:r]],
                interleave=int(z["interleave"][i]), swizzle=int(z["swizzle"][i]), l2_promotion=int(z["l2"][i]),
                oob_fill=int(z["oob"][i]))


def _capture():
    if not os.path.exists(CAPTURE):
        pytest.xfail("captures pending: tests/golden/tensormaps_sm90.npz not yet captured on an H100")
    return open_golden(CAPTURE)


@pytest.mark.xfail(strict=False, reason="captures pending: driver byte layout not yet fitted")
def test_layout_equals_driver_bytes():
    z = _capture()
    ok = np.flatnonzero(z["result"] == 0)
    assert len(ok) >= 100
    bad = [i for i in ok if not (T.encode_tiled(**capture_case(z, i)) == z["bytes"][i]).all()]
    assert not bad, f"{len(bad)} of {len(ok)} driver descriptors differ, first case {bad[0]}"
    for i in ok:
        assert T.decode_tensormap(z["bytes"][i]) == T.make_tensormap(**capture_case(z, i))


@pytest.mark.xfail(strict=False, reason="captures pending: driver return codes not yet compared")
def test_validation_agrees_with_driver_return_codes():
    z = _capture()
    disagree = []
    for i in range(len(z["result"])):
        try:
            T.make_tensormap(**capture_case(z, i))
            mine = True
        except (ValueError, TypeError):
            mine = False
        if mine != (z["result"][i] == 0):
            disagree.append(i)
    assert not disagree, f"{len(disagree)} cases disagree with the driver, first {disagree[0]}"
