"""CUtensorMap encoder/decoder: the byte layout and validation rules of the CUDA 13 driver on an H100.

The driver truth is tests/golden/tensormaps_sm90.npz: 1,014 cuTensorMapEncodeTiled calls (269 accepted)
made on an H100 by warpsim/hw/device/tensormap_capture.py.
"""

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
    (dict(box_dim=(64, 32), global_dim=(100, 70), dtype="float32", swizzle="128B"), ["256 bytes per box row", "at most 128"]),
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
    three = dict(rank=3, global_dim=(8, 4, 4), global_strides=(32, 128), box_dim=(16, 4, 4), element_strides=(1, 1, 1))
    # the driver takes any sm_90 swizzle with interleave 32B (cuda.h asks for 32B; captured cases 293..296)
    for sw in ("none", "32B", "64B", "128B"):
        assert T.decode_tensormap(enc(**three, interleave="32B", swizzle=sw)).swizzle == sw
    with pytest.raises(ValueError, match="32-byte aligned"):
        enc(**three, interleave="32B", swizzle="32B", global_address=0x10010)
    with pytest.raises(ValueError, match="multiple of 32"):
        enc(**{**three, "global_strides": (48, 192)}, interleave="32B", swizzle="32B")
    with pytest.raises(ValueError, match="multiple of 16 bytes"):      # captured case 725 (8-byte rows, interleave 32B)
        enc(**{**three, "box_dim": (4, 4, 4)}, interleave="32B")
    assert T.decode_tensormap(enc(**three, interleave="16B")).interleave == "16B"
    for packed in T.PACKED_TYPES:                                       # refused by the sm_90 driver
        with pytest.raises(ValueError, match="refused by the CUDA driver on sm_90"):
            enc(dtype=packed, global_dim=(256, 4), global_strides=(256,), box_dim=(128, 4))
    for sw in ("128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B"):
        with pytest.raises(ValueError, match="refused by the CUDA driver on sm_90"):
            enc(swizzle=sw)


def test_box_bytes_limit_and_zero_stride():
    box5 = dict(dtype="float16", rank=5, global_address=0x7F1234560000, global_dim=(64, 5, 6, 7, 8),
                global_strides=(128, 640, 3840, 26880))
    assert T.make_tensormap(**box5, box_dim=(32, 2, 3, 4, 128), element_strides=(1,) * 5).encoded_box_bytes == 196608     # accepted (case 188)
    with pytest.raises(ValueError, match="box of 245760 bytes"):                                  # refused (case 100)
        T.make_tensormap(**box5, box_dim=(32, 64, 3, 4, 5), element_strides=(1,) * 5)
    # element strides shrink the stored box bytes by floor(box / es) (captured case 77: es[0] = 3 -> 10 of 32)
    assert T.make_tensormap(**box5, box_dim=(32, 2, 3, 4, 5), element_strides=(3, 1, 1, 1, 1)).encoded_box_bytes == 2400
    # a zero stride (CUTLASS's batch stride for a batch of one) is accepted by the driver
    assert T.decode_tensormap(enc(rank=3, global_dim=(100, 70, 1), global_strides=(256, 0), box_dim=(64, 32, 1),
                                  element_strides=(1, 1, 1))).global_strides == (256, 0)


def test_worked_example_bytes():
    """The base case of the capture, byte by byte as the driver wrote it (case 0)."""
    b = T.encode_tiled("float16", 2, 0x7F1234560000, (1000, 300), (2048,), (64, 32), (1, 1))
    want = np.zeros(128, np.uint8)
    want[0:8] = list((0x7F1234560000).to_bytes(8, "little"))
    want[8], want[9] = 0x10, 0x03          # rank-1 = 1 at bit 68; float16 code 6 at bits 71..74
    want[12] = 2048 >> 4                   # stride[0] / 16
    want[32:34] = [0xE7, 0x03]             # 1000 - 1
    want[36:38] = [0x2B, 0x01]             # 300 - 1
    want[55], want[56] = 63, 31            # box - 1
    want[65] = 0x10                        # 64 * 32 * 2 = 4096 box bytes
    want[72] = 0x10                        # the swizzle-none mark
    assert (b == want).all()


def test_decoder_rejects_garbage():
    b = enc()
    bad = b.copy(); bad[120] = 1
    with pytest.raises(ValueError, match="outside every known field"):
        T.decode_tensormap(bad)
    bad = b.copy(); bad[64] ^= 0x10                                   # box bytes disagree with the box
    with pytest.raises(ValueError, match="encoded_box_bytes"):
        T.decode_tensormap(bad)
    bad = b.copy(); bad[58] = 3                                       # box dim 5 set in a rank-2 descriptor
    with pytest.raises(ValueError, match="beyond rank 2"):
        T.decode_tensormap(bad)
    bad = b.copy(); bad[9] |= 0x06                                    # data-type code 15 is never written
    with pytest.raises(ValueError, match="data-type code"):
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
    return open_golden(CAPTURE)


def test_layout_equals_driver_bytes():
    z = _capture()
    ok = np.flatnonzero(z["result"] == 0)
    assert len(ok) == 269 and len(z["result"]) == 1014
    bad = [i for i in ok if not (T.encode_tiled(**capture_case(z, i)) == z["bytes"][i]).all()]
    assert not bad, f"{len(bad)} of {len(ok)} driver descriptors differ, first case {bad[0]}"
    for i in ok:
        assert T.decode_tensormap(z["bytes"][i]) == T.make_tensormap(**capture_case(z, i))


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
