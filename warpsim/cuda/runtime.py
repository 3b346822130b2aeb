"""Device memory that outlives a launch, streams and events, and the one launch path both front
ends (RawKernel, jit) use.

warpsim has no device: a :class:`DeviceArray` owns a host buffer at a fixed device address, so a
kernel's pointers into it stay valid from launch to launch; every launch maps the live device
arrays, the module's ``__constant__`` / ``__device__`` variables and the launch's numpy arguments
into one :class:`warpsim.ptx.GlobalMemory`.  Work runs when it is issued, so streams and events
only record the order (which is the issue order).
"""

from __future__ import annotations

import itertools
import time
import weakref

import numpy as np

from ..ptx import GlobalMemory

__all__ = ["DeviceArray", "to_device", "device_array", "device_array_like", "Stream", "Event", "synchronize",
           "launch"]

#: persistent allocations live here, below the parameter window; numpy arguments of a launch map above them
_HEAP_BASE = 0x0000_4000_0000_0000
_ALIGN = 256
_next = [_HEAP_BASE]
_live: "weakref.WeakValueDictionary[int, DeviceArray]" = weakref.WeakValueDictionary()


def allocate(nbytes: int) -> int:
    """A fresh device address for ``nbytes`` (never reused: addresses stay unique for the process)."""
    addr = _next[0]
    _next[0] = addr + (max(int(nbytes), 1) + _ALIGN - 1) // _ALIGN * _ALIGN + _ALIGN
    return addr


class DeviceArray:
    """An array in warpsim's device memory: ``copy_to_host()`` / ``get()`` read it, ``copy_to_device()`` /
    ``set()`` write it, and kernels take it in place of a numpy array (as its device pointer).

    Example:

    >>> import warpsim.cuda as wc
    >>> d = wc.to_device(np.arange(6, dtype=np.int16).reshape(2, 3))
    >>> d.shape, d.dtype, d.size
    ((2, 3), dtype('int16'), 6)
    >>> d.copy_to_host()[1]
    array([3, 4, 5], dtype=int16)
    """

    def __init__(self, shape, dtype, *, _storage=None, _address=None, _base=None):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if _storage is None:
            _storage = np.zeros(self.shape, self.dtype)
        self._data = _storage
        self._base = _base              # a view keeps the array it views (and its mapping) alive
        self.address = allocate(self._data.nbytes) if _address is None else _address
        if self.address not in _live:
            _live[self.address] = self

    # numpy-like description
    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def strides(self):
        return self._data.strides

    @property
    def ptr(self) -> int:
        """The device address (CuPy's ``.data.ptr``)."""
        return self.address

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"<warpsim.cuda.DeviceArray shape={self.shape} dtype={self.dtype} at 0x{self.address:x}>"

    def __array__(self, dtype=None, copy=None):
        a = self._data.copy()
        return a if dtype is None else a.astype(dtype)

    def copy_to_host(self, ary=None, stream=None):
        """The contents as a new numpy array, or copied into ``ary`` (numba-cuda's spelling)."""
        if ary is None:
            return self._data.copy()
        if not isinstance(ary, np.ndarray) or ary.shape != self.shape or ary.dtype != self.dtype:
            raise ValueError(f"copy_to_host(ary): ary must be a numpy array of shape {self.shape} and dtype "
                             f"{self.dtype}")
        ary[...] = self._data
        return ary

    get = copy_to_host

    def copy_to_device(self, ary, stream=None):
        """Overwrite the contents with ``ary`` (same shape; cast to this array's dtype if safe)."""
        a = np.asarray(ary)
        if a.shape != self.shape:
            raise ValueError(f"cannot copy an array of shape {a.shape} into a device array of shape {self.shape}")
        if not np.can_cast(a.dtype, self.dtype, casting="same_kind"):
            raise TypeError(f"cannot copy {a.dtype} data into a {self.dtype} device array")
        self._data[...] = a

    set = copy_to_device

    def view(self, dtype) -> "DeviceArray":
        """The same device bytes seen as ``dtype`` (a 1-D view)."""
        flat = self._data.reshape(-1).view(np.uint8).view(dtype)
        return DeviceArray(flat.shape, flat.dtype, _storage=flat, _address=self.address, _base=self)

    def is_c_contiguous(self):
        return True


def to_device(ary, stream=None, copy=True, to=None) -> DeviceArray:
    """Copy a numpy array (or anything numpy converts) to a new device array, or into ``to``.

    Example:

    >>> import warpsim.cuda as wc
    >>> d = wc.to_device([1.0, 2.0])
    >>> d.copy_to_host()
    array([1., 2.])
    """
    if isinstance(ary, DeviceArray):
        ary = ary._data
    a = np.array(ary, copy=True, order="C") if copy else np.ascontiguousarray(ary)
    if to is not None:
        to.copy_to_device(a)
        return to
    return DeviceArray(a.shape, a.dtype, _storage=a)


def device_array(shape, dtype=np.float64, stream=None, order="C") -> DeviceArray:
    """A zero-filled device array (CUDA leaves new memory undefined; warpsim's is zeros).

    Example:

    >>> import warpsim.cuda as wc
    >>> wc.device_array((2, 2), np.float32).copy_to_host()
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    """
    if order != "C":
        raise ValueError("warpsim.cuda device arrays are C-ordered (order='C')")
    return DeviceArray(shape, dtype)


def device_array_like(ary, stream=None) -> DeviceArray:
    """A zero-filled device array of ``ary``'s shape and dtype.

    >>> import warpsim.cuda as wc
    >>> d = wc.device_array_like(np.ones(3, np.uint8))
    >>> d.shape, d.dtype, d.copy_to_host()
    ((3,), dtype('uint8'), array([0, 0, 0], dtype=uint8))
    """
    return device_array(np.shape(ary), np.asarray(ary).dtype if not isinstance(ary, DeviceArray) else ary.dtype)


class Stream:
    """A CUDA stream: accepted everywhere a stream is, and already idle (work ran when issued).

    Example:

    >>> import warpsim.cuda as wc
    >>> s = wc.Stream()
    >>> d = wc.to_device(np.ones(4), stream=s)
    >>> s.synchronize()
    """

    _ids = itertools.count(1)

    def __init__(self, non_blocking=False, null=False):
        self.handle = 0 if null else next(self._ids)

    def synchronize(self):
        return None

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<warpsim.cuda.Stream {self.handle}>"


class Event:
    """A CUDA event: ``record`` notes the host time; ``elapsed_time`` is host milliseconds between two
    records (the simulation's time, not a GPU's).

    Example:

    >>> import warpsim.cuda as wc
    >>> start, end = wc.event(), wc.event()
    >>> start.record(); end.record()
    >>> end.synchronize()
    >>> start.elapsed_time(end) >= 0
    True
    """

    def __init__(self, block=True, disable_timing=False, timing=True):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        return None

    wait = synchronize

    def query(self):
        return True

    def elapsed_time(self, end: "Event") -> float:
        if self.time is None or end.time is None:
            raise RuntimeError("elapsed_time needs both events recorded (Event.record())")
        return (end.time - self.time) * 1e3


def synchronize():
    """Wait for the device: nothing to wait for, every launch has finished when it returns.

    Example:

    >>> import warpsim.cuda as wc
    >>> wc.synchronize()
    """
    return None


def launch(module, entry, grid, block, args, *, shared_mem=0, arch="sm_90a", variables=None, **launch_options):
    """Run ``entry`` of a warpsim.ptx ``module`` with the live device arrays and the module's
    variables (``variables``: name -> (address, uint8 array)) mapped at their addresses.  args: the
    kernel arguments in .param order (numpy arrays are mapped in place; a non-contiguous or
    read-only one goes through a copy written back after the launch)."""
    gm = GlobalMemory()
    variables = variables or {}
    own = {addr for addr, _ in variables.values()}
    for addr, dev in sorted(_live.items()):
        if addr not in own:             # a view of this module's variable (get_global) maps below
            gm.map(dev._data.reshape(-1), address=addr)
    for name, (addr, arr) in variables.items():
        gm.map(arr, address=addr)
        gm.module_symbols[(id(module), name)] = (addr, arr)
    staged, marshalled = [], []
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim > 0 and not (a.flags.c_contiguous and a.flags.writeable):
            c = np.ascontiguousarray(a).copy()
            if a.flags.writeable:
                staged.append((a, c))
            a = c
        marshalled.append(a)
    module.launch(entry, grid, block, marshalled, shared_bytes=int(shared_mem), memory=gm, arch=arch,
                  **launch_options)
    for a, c in staged:
        a[...] = c
