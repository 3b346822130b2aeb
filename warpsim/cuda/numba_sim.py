"""Run code written for ``numba.cuda`` on warpsim, unchanged, as ``NUMBA_ENABLE_CUDASIM=1`` runs it on
numba's own simulator -- but compiled by numba-cuda and executed bit for bit as the GPU would::

    pytest -p warpsim.cuda.numba_sim test_kernels.py
    python -m warpsim.cuda.numba_sim script.py [args...]

or, in a conftest.py or before the kernels are defined, ``warpsim.cuda.numba_sim.install()``.
``numba.cuda.jit`` (kernels and device functions), ``to_device``, ``device_array``,
``device_array_like``, ``synchronize``, ``stream``, ``event``, ``default_stream`` and
``is_available`` become warpsim's; what a kernel body uses (``cuda.grid``, ``cuda.shared.array``,
``cuda.atomic``, ...) stays numba-cuda's, which compiles it.
"""

from __future__ import annotations

import runpy
import sys

from . import default_stream, device_array, device_array_like, event, stream, synchronize, to_device
from ._extra import require
from .jit import jit

__all__ = ["install", "uninstall"]

_SAVED: dict = {}


def install(arch: str = "sm_90a"):
    """Point ``numba.cuda``'s host-side API at warpsim (kernels compile for ``arch``)."""
    cuda = require("numba.cuda")

    def warpsim_jit(func_or_sig=None, device=False, **options):
        options.setdefault("arch", arch)
        return jit(func_or_sig, device=device, **options)

    patch = {"jit": warpsim_jit, "to_device": to_device, "device_array": device_array,
             "device_array_like": device_array_like, "synchronize": synchronize, "stream": stream,
             "event": event, "default_stream": default_stream, "is_available": lambda: True}
    for name, value in patch.items():
        _SAVED.setdefault(name, getattr(cuda, name, None))
        setattr(cuda, name, value)


def uninstall():
    """Give ``numba.cuda`` its own functions back."""
    cuda = require("numba.cuda")
    for name, value in _SAVED.items():
        setattr(cuda, name, value)
    _SAVED.clear()


def pytest_configure(config):
    """``pytest -p warpsim.cuda.numba_sim``: installed before any test module is imported."""
    install()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m warpsim.cuda.numba_sim SCRIPT.py [args...]")
    install()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
