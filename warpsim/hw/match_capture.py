"""Capture of ``tests/ptx/data/match_sync.ptx`` on the GPU: match.any / match.all over warps of chosen values.

``python -m warpsim.hw.match_capture OUT.npz`` (on the GPU machine, with CuPy): the inputs (:func:`inputs`) and the
words the GPU wrote, in the compact golden format (``hw.golden``); ``tests/test_ptx_match.py`` replays them on
both engines."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

PTX = Path(__file__).resolve().parents[2] / "tests" / "ptx" / "data" / "match_sync.ptx"
THREADS = 160


def inputs():
    """v32, v64 for 5 warps: groups of equal values (b64: words equal in the low half only); lanes 0-15 all
    equal and the others not; random values from a few; all distinct; all equal."""
    rng = np.random.default_rng(2718)
    lane = np.arange(32)
    v32 = np.concatenate([lane % 3, np.where(lane < 16, 42, 43 + lane), rng.integers(0, 4, 32), lane * 977 + 5,
                          np.full(32, 0x12345678)])
    hi = np.concatenate([lane % 2, np.zeros(32, np.int64), rng.integers(0, 2, 32), lane, np.full(32, 0x9ABC)])
    lo = np.concatenate([np.full(32, 7), np.where(lane < 16, 42, lane), rng.integers(0, 2, 32), ~lane & 0xFFFF,
                         np.full(32, 0xDEF0)])
    v64 = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
    return v32.astype(np.uint32), v64


def main(out):
    import cupy as cp

    v32, v64 = inputs()
    mod = cp.RawModule(path=str(PTX))         # the driver compiles the PTX as it is
    fn = mod.get_function("match_sync")
    d_out = cp.zeros(THREADS * 8, cp.uint32)
    fn((1,), (THREADS,), (d_out, cp.asarray(v32), cp.asarray(v64)))
    cp.cuda.Device().synchronize()
    from .golden import save_golden

    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    save_golden(out, {"v32": v32, "v64": v64, "out": cp.asnumpy(d_out), "device": np.array(name)},
                info={"capture": "python -m warpsim.hw.match_capture", "device": str(name)})


if __name__ == "__main__":
    main(sys.argv[1])
