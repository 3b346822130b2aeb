"""Replay of TMA boxes captured by ``warpsim/hw/device/tma_capture.py`` through ``warpsim.ptx.tma``."""

from __future__ import annotations

import hashlib

import numpy as np

from ...isa.tensormap import make_tensormap
from ...ptx import tma


def _data(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def model_window(z, i) -> np.ndarray:
    """The shared window warpsim predicts for captured case ``i`` (0xA5 where nothing landed)."""
    r = int(z["rank"][i])
    data = _data(int(z["seed"][i]), int(z["gbytes"][i]))
    if hashlib.sha256(data.tobytes()).hexdigest() != str(z["sha256"][i]):
        raise ValueError(f"case {i}: regenerated tensor bytes do not match the captured SHA-256")
    gaddr = int(z["gaddr"][i])
    tm = make_tensormap(int(z["dtype"][i]), r, gaddr, [int(v) for v in z["dims"][i][:r]],
                        [int(v) for v in z["strides"][i][:r - 1]], [int(v) for v in z["box"][i][:r]],
                        [int(v) for v in z["es"][i][:r]], swizzle=int(z["swizzle"][i]), oob_fill=int(z["oob"][i]))
    base, dst = int(z["status"][i][1]), int(z["status"][i][2])
    lo, hi = z["window_offsets"][i], z["window_offsets"][i + 1]
    win = np.full(hi - lo, 0xA5, np.uint8)
    addr, got = tma.tile_load(tm, tma.array_reader(data, gaddr), [int(v) for v in z["coords"][i][:r]], dst)
    win[addr - base] = got
    return win


def replay_case(z, i) -> bool:
    """True when the captured window equals warpsim's (and the copy completed on the GPU)."""
    if z["result"][i] != 0 or z["status"][i][0] != 1:
        return False
    lo, hi = z["window_offsets"][i], z["window_offsets"][i + 1]
    return bool((model_window(z, i) == z["windows"][lo:hi]).all())
