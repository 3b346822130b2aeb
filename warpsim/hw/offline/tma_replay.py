"""Replay of TMA boxes captured by ``warpsim/hw/device/tma_capture.py`` through ``warpsim.ptx.tma``."""

from __future__ import annotations

import hashlib

import numpy as np

from ...isa.tensormap import make_tensormap
from ...ptx import tma


def _data(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def captured_inputs(z, i):
    """What case ``i`` ran on and left: (the tensor's bytes, regenerated and checked against the captured
    SHA-256; the shared offset the captured window starts at; the box's shared destination; the window the
    GPU left, 0xA5 where nothing landed)."""
    data = _data(int(z["seed"][i]), int(z["gbytes"][i]))
    if hashlib.sha256(data.tobytes()).hexdigest() != str(z["sha256"][i]):
        raise ValueError(f"case {i}: regenerated tensor bytes do not match the captured SHA-256")
    lo, hi = z["window_offsets"][i], z["window_offsets"][i + 1]
    return data, int(z["status"][i][1]), int(z["status"][i][2]), z["windows"][lo:hi]


def model_window(z, i) -> np.ndarray:
    """The shared window warpsim predicts for captured case ``i`` (0xA5 where nothing landed)."""
    r = int(z["rank"][i])
    data, base, dst, captured = captured_inputs(z, i)
    gaddr = int(z["gaddr"][i])
    tm = model_tensormap(z, i)
    win = np.full(captured.size, 0xA5, np.uint8)
    addr, got = tma.tile_load(tm, tma.array_reader(data, gaddr), [int(v) for v in z["coords"][i][:r]], dst)
    at = addr - base
    inside = at < win.size        # the capture copied out only its window; bytes beyond it are unseen
    win[at[inside]] = got[inside]
    return win


def landed(z, i) -> bool:
    """Whether captured case ``i`` ran and its box landed (status 1, or 2: completed after the pending bytes)."""
    return bool(z["result"][i] == 0 and int(z["status"][i][0]) in (1, 2))


def hardware_tx_bytes(z, i) -> int:
    """The transaction bytes the H100's copy completed on the mbarrier in case ``i``.

    The kernel expects ``nbytes`` (warpsim's count at capture time); when the phase did not flip it
    completed the rest by hand, 16 bytes at a time, and recorded how many it took (status[3]).
    """
    missing = int(z["status"][i][3]) if int(z["status"][i][0]) == 2 else 0
    return int(z["nbytes"][i]) - missing


def model_tensormap(z, i):
    r = int(z["rank"][i])
    return make_tensormap(int(z["dtype"][i]), r, int(z["gaddr"][i]), [int(v) for v in z["dims"][i][:r]],
                          [int(v) for v in z["strides"][i][:r - 1]], [int(v) for v in z["box"][i][:r]],
                          [int(v) for v in z["es"][i][:r]], swizzle=int(z["swizzle"][i]), oob_fill=int(z["oob"][i]))


def replay_case(z, i) -> bool:
    """True when the captured window equals warpsim's (the box must have landed on the GPU)."""
    if not landed(z, i):
        raise ValueError(f"case {i} did not land on the GPU (result {int(z['result'][i])}, status {z['status'][i]})")
    return bool((model_window(z, i) == captured_inputs(z, i)[3]).all())
