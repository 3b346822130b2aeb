"""TMA writes and descriptor edits against bytes captured on Hopper (issue 33).

tests/golden/tma_stores_sm90.npz (``warpsim/hw/device/tma_store_capture.py``, packed by
``warpsim/hw/offline/tma_store_replay.py``) holds what an H200 (sm_90a, the H100's chip) left in
memory after the entries of one hand-written PTX module (``warpsim.hw.tma_store_cases``): tensor
stores and every reduction op over ranks 1-5, swizzles and boxes past the far edges; plain and
reducing bulk copies; ``tensormap.replace`` of every field on global and shared tensormaps; im2col
loads, and the launches that faulted (which warpsim refuses).  Each case is replayed by launching the same entry through ``warpsim.ptx`` on the same bytes.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from warpsim.hw.golden import open_golden
from warpsim.hw.offline.tma_store_replay import Capture, replay_case
from warpsim.ptx import PTXError

PATH = os.path.join(os.path.dirname(__file__), "golden", "tma_stores_sm90.npz")
CAP = Capture(open_golden(PATH))
CASES = CAP.cases


def _group(g):
    return [(i, c) for i, c in enumerate(CASES) if c["group"] == g]


def _replay(group):
    ran, differ, faults = 0, [], []
    for i, c in _group(group):
        if CAP.result[i] != 0 or not CAP.has_output[i]:
            continue
        ran += 1
        try:
            mine, gpu = replay_case(CAP, i)
        except PTXError as exc:
            faults.append((i, c["entry"], str(exc)[:200]))
            continue
        if not np.array_equal(mine, gpu):
            differ.append((i, c["entry"], int((mine != gpu).sum())))
    return ran, differ, faults


def test_tensor_stores_and_reductions_replay_bit_for_bit():
    ran, differ, faults = _replay("tensor")
    assert ran >= 150
    assert not faults and not differ, (faults[:3], differ[:5])
    ops = {c["op"] for i, c in _group("tensor") if CAP.has_output[i]}
    assert ops == {"store", "add", "min", "max", "inc", "dec", "and", "or", "xor"}


def test_what_faults_on_the_gpu_is_refused():
    """Every probe the GPU faulted on (a negative start coordinate; .and/.or/.xor on int64) is a PTXError."""
    probes = [(i, c) for i, c in _group("tensor") if c.get("probe")]
    assert probes and all(CAP.result[i] == -1 for i, _ in probes)
    for i, c in probes:
        data = np.zeros(c["gbytes"], np.uint8)
        from warpsim.hw.offline.tma_store_replay import _module
        from warpsim.hw.tma_store_cases import data_bytes
        from warpsim.isa.tensormap import encode_tiled
        import warpsim.ptx as wp

        gm = wp.GlobalMemory()
        addr = gm.map(data)
        names = {2: "uint32", 5: "int64", 6: "float16", 7: "float32"}
        tm = encode_tiled(names[c["dtype"]], c["rank"], addr, c["dims"], c["strides"], c["box"], [1] * c["rank"])
        co = np.array(c["coords"] + [0] * (5 - c["rank"]), np.int32)
        with pytest.raises(PTXError, match="faults on Hopper"):
            _module().launch(c["entry"], (1,), (128,), [bytes(tm), co, data_bytes(1, c["nbytes"]), c["nbytes"]],
                             memory=gm, engine="interpret")     # the interpreter's words (compiled: test_ptx_native_tma)


def test_bulk_copies_and_reductions_replay_bit_for_bit():
    ran, differ, faults = _replay("bulk")
    assert ran >= 50
    assert not faults and not differ, (faults[:3], differ[:5])


def test_tensormap_replace_replays_bit_for_bit():
    ran, differ, faults = _replay("replace")
    assert ran >= 500
    assert not faults and not differ, (faults[:3], differ[:5])


def test_im2col_loads_replay_bit_for_bit():
    """The 10 im2col loads that ran (15 of the plan's coordinates outside the pixel box faulted, 35 were not
    run after the capture's crash limit): every byte of the shared window, 0xA5 left alone included."""
    ran, differ, faults = _replay("im2col")
    assert ran == 10
    assert not faults and not differ, (faults[:3], differ[:5])
    ranks = {c["rank"] for i, c in _group("im2col") if CAP.has_output[i]}
    assert ranks == {3, 4, 5}


def test_im2col_start_outside_the_pixel_box_is_refused():
    """The 15 im2col cases that faulted on the GPU all started outside the pixel box; warpsim refuses that."""
    from warpsim.isa.tensormap import Im2colMap, make_tensormap
    from warpsim.ptx.tma import im2col_load

    crashed = [c for i, c in _group("im2col") if CAP.result[i] == -1]
    assert len(crashed) == 15
    names = {0: "uint8", 1: "uint16", 6: "float16", 7: "float32", 9: "bfloat16"}
    for c in crashed:
        r = c["rank"]
        tm = make_tensormap(names[c["dtype"]], r, 0, c["dims"], c["strides"], [c["channels_per_pixel"]] + [1] * (r - 1),
                            [1] * r)
        im = Im2colMap(tm, tuple(c["lower"]), tuple(c["upper"]), c["channels_per_pixel"], c["pixels_per_column"])
        with pytest.raises(ValueError, match="outside the pixel box"):
            im2col_load(im, lambda a, n: np.zeros(n, np.uint8), c["coords"], c["offsets"])
