"""A Triton 3.6 matmul fed by host-side tensor descriptors, run from its PTX with the H100 launch's bytes.

The capture (warpsim/hw/device/triton_tma_capture.py) records Triton's PTX, every kernel parameter's
bytes (the three CUtensorMaps as Triton's launcher passed them), the device addresses and the f32
words the H100 wrote; the replay maps the buffers at those addresses and compares every word.
"""

from pathlib import Path

import numpy as np
import pytest

from warpsim.hw.golden import open_golden
from warpsim.isa.tensormap import decode_tensormap

CAPTURE = Path(__file__).parent / "golden" / "triton_tma_sm90.npz"


@pytest.fixture(scope="module")
def capture():
    if not CAPTURE.exists():
        pytest.xfail("captures pending: tests/golden/triton_tma_sm90.npz not yet captured on an H100 "
                     "(OUT=... python3 warpsim/hw/device/triton_tma_capture.py)")
    return open_golden(CAPTURE)


def _params(z, case):
    """The launch's parameters in PTX order: tensormaps as their 128 bytes, scalars as integers."""
    raw = np.asarray(z[f"{case}.params"]).tobytes()
    ends = np.cumsum(z[f"{case}.param_sizes"])
    out = []
    for size, end, kind in zip(z[f"{case}.param_sizes"], ends, z[f"{case}.param_kinds"]):
        b = raw[end - size:end]
        out.append(b if kind == "tensormap" else int.from_bytes(b, "little", signed=kind.startswith("i")))
    return out


def test_triton_tensormaps_are_the_driver_encoding(capture):
    """The launch's tensormaps decode to the buffers and tiles, and warpsim re-encodes them byte for byte."""
    for case, (M, N, K) in enumerate(np.asarray(capture["shapes"])):
        params = _params(capture, case)
        # Triton 3.6 splits the f32 C tile's 256-byte rows into 128-byte (32-element) boxes for the 128B swizzle
        for j, (addr, dims, box) in enumerate(zip(capture[f"{case}.addr"], [(K, M), (K, N), (N, M)],
                                                  [(64, 64), (64, 64), (32, 64)])):
            raw = params[5 * j]
            tm = decode_tensormap(raw)
            assert tm.global_address == int(addr) and tm.global_dim == dims and tm.box_dim == box
            assert tm.l2_promotion == "128B" and tm.encode().tobytes() == raw


@pytest.mark.parametrize("case", [0, 1])
def test_triton_tma_matmul_replays_h100_words(capture, case):
    from warpsim.ptx import GlobalMemory, load
    z = capture
    gm = GlobalMemory()
    addr = [int(a) for a in z[f"{case}.addr"]]
    gm.map(np.asarray(z[f"{case}.A"]).copy(), address=addr[0])
    gm.map(np.asarray(z[f"{case}.B"]).copy(), address=addr[1])
    want = np.asarray(z[f"{case}.C"])
    C = np.full_like(want, 0x7FC00000)
    gm.map(C, address=addr[2])
    mod = load(np.asarray(z[f"{case}.ptx"]).tobytes().decode())
    mod.launch(str(z[f"{case}.name"]), grid=tuple(int(v) for v in z[f"{case}.grid"]),
               block=tuple(int(v) for v in z[f"{case}.block"]), args=_params(z, case),
               shared_bytes=int(z[f"{case}.shared"]), memory=gm)
    assert int((C != want).sum()) == 0
