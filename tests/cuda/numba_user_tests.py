"""A test file as a numba-cuda user writes it (for NUMBA_ENABLE_CUDASIM=1 or a GPU), nothing warpsim in it.

tests/test_cuda.py runs it with ``pytest -p warpsim.cuda.numba_sim``; its results are integers, so
numpy's own arithmetic is the reference.
"""

import numpy as np
from numba import cuda, int32


@cuda.jit(device=True)
def bucket(v, n):
    return v % n


@cuda.jit
def count(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, bucket(values[i], bins.size), 1)


@cuda.jit("void(int32[::1], int32[::1])")
def block_totals(x, out):
    buf = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    buf[t] = x[cuda.blockIdx.x * 64 + t]
    cuda.syncthreads()
    if t == 0:
        s = 0
        for k in range(64):
            s += buf[k]
        out[cuda.blockIdx.x] = s


def test_histogram_through_device_arrays():
    values = np.arange(1000, dtype=np.int64) * 7
    d_values = cuda.to_device(values)
    d_bins = cuda.device_array(13, dtype=np.int64)
    s = cuda.stream()
    count[4, 256, s](d_values, d_bins)
    cuda.synchronize()
    np.testing.assert_array_equal(d_bins.copy_to_host(), np.bincount(values % 13, minlength=13))


def test_shared_memory_block_totals():
    x = np.arange(256, dtype=np.int32) - 100
    out = np.zeros(4, np.int32)
    block_totals[4, 64](x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 64).sum(axis=1))


def test_running_on_warpsim():
    assert cuda.jit.__module__ == "warpsim.cuda.numba_sim" and cuda.is_available()
