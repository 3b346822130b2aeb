"""CUDA C++ and numba-cuda kernels from source on warpsim, no GPU and no CUDA toolkit (``warpsim[cuda]``).

* :class:`RawModule` / :class:`RawKernel` -- CuPy's interface: CUDA C++ compiled by NVRTC (nvcc-style
  options, nvcc's implicit includes), kernels called as ``kernel(grid, block, args, shared_mem=0)``.
* :func:`jit` -- numba-cuda's ``@cuda.jit``: ``kernel[grid, block](*args)``, compiled by numba-cuda.
* :func:`to_device`, :func:`device_array`, ``DeviceArray.copy_to_host()`` -- memory that persists
  across launches; :class:`Stream` / :class:`Event` accepted, work runs in issue order.

Kernels run in warpsim's PTX interpreter (:mod:`warpsim.ptx`), bit for bit as an H100 runs the
same PTX.  The compilers come from pip wheels: ``pip install 'warpsim[cuda]'``.
"""

from .jit import jit
from .nvrtc import CompileError
from .raw import RawKernel, RawModule
from .runtime import (DeviceArray, Event, Stream, device_array, device_array_like, synchronize,
                      to_device)

__all__ = ["RawModule", "RawKernel", "CompileError", "jit", "DeviceArray", "to_device", "device_array",
           "device_array_like", "Stream", "Event", "synchronize", "stream", "event", "default_stream"]


def stream() -> Stream:
    """A new stream (numba-cuda's ``cuda.stream()``).

    Example:

    >>> import warpsim.cuda as wc
    >>> isinstance(wc.stream(), wc.Stream)
    True
    """
    return Stream()


def event(timing=True) -> Event:
    """A new event (numba-cuda's ``cuda.event()``).

    >>> import warpsim.cuda as wc
    >>> isinstance(wc.event(timing=False), wc.Event)
    True
    """
    return Event(timing=timing)


def default_stream() -> Stream:
    """The default (null) stream (numba-cuda's ``cuda.default_stream()``).

    >>> import warpsim.cuda as wc
    >>> isinstance(wc.default_stream(), wc.Stream)
    True
    """
    return Stream(null=True)
