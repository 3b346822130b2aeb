"""numba-cuda kernels on warpsim: ``@warpsim.cuda.jit`` compiles with numba-cuda's own compiler
(its NVVM, from the ``nvidia-nvvm`` wheel) to PTX and launches that PTX in warpsim.

numba-cuda needs no GPU to compile, except in two places this module bridges: a call of a
``@cuda.jit(device=True)`` function asks the current device for its compute capability (answered
with the target's), and the C++ shims behind ``cuda.fp16`` are compiled with NVRTC (here through
:mod:`warpsim.cuda.nvrtc`) and linked into the kernel's module the way nvJitLink links them.
The kernel ABI is numba's: each array argument is seven-plus parameters (meminfo, parent, nitems,
itemsize, data, shape..., strides...), each scalar one.
"""

from __future__ import annotations

import contextlib
import re
import threading

import numpy as np

from ._extra import require

__all__ = ["jit", "compile_kernel_ptx", "link_cubin", "Dispatcher"]

_LOCK = threading.RLock()
_ENTRY = re.compile(r"^\s*\.visible\s+\.entry\s+([\w$]+)", re.M)


class _TargetDevice:
    """What numba-cuda's device-function compiler asks of the current device: its compute capability."""

    def __init__(self, cc):
        self.compute_capability = cc


@contextlib.contextmanager
def _target(cc):
    dispatcher = require("numba.cuda.dispatcher")
    with _LOCK:
        saved = dispatcher.get_current_device
        dispatcher.get_current_device = lambda: _TargetDevice(cc)
        try:
            yield
        finally:
            dispatcher.get_current_device = saved


def _cc_of(arch):
    m = re.fullmatch(r"sm_(\d+)(\d)[af]?", arch) if isinstance(arch, str) else None
    if not m:
        raise ValueError(f"arch must be a name such as 'sm_90a', got {arch!r}")
    return int(m.group(1)), int(m.group(2))


def compile_kernel_ptx(pyfunc, sig, *, arch="sm_90a", fastmath=False, lineinfo=False, opt=True, launch_bounds=None):
    """Compile a numba-cuda kernel -> (PTX text, entry name, [PTX of each C++ shim it calls])."""
    require("numba.cuda")
    compiler = require("numba.cuda.compiler")
    from numba.cuda.codegen import LinkableCode     # noqa: the extra is present once numba.cuda imported
    from .nvrtc import compile_to_ptx

    cc = _cc_of(arch)
    with _target(cc):
        lib, _ = compiler._compile_pyfunc_with_fixup(
            pyfunc, sig, debug=False, lineinfo=lineinfo, device=False, fastmath=fastmath, cc=cc, opt=opt,
            abi="numba", abi_info=None, forceinline=False, launch_bounds=launch_bounds, lto=False)
        ptxs = lib.get_asm_strs(cc=cc)
    if len(ptxs) != 1:
        raise RuntimeError(f"numba-cuda wrote {len(ptxs)} PTX modules for {pyfunc.__name__}; expected one")
    shims = []
    for item in lib._linking_files:
        obj = LinkableCode.from_path_or_obj(item)
        if obj.kind != "cu":
            raise NotImplementedError(f"{pyfunc.__name__} links a {obj.kind!r} file ({obj.name}); warpsim.cuda.jit "
                                      "links CUDA C++ sources (numba's shims) only")
        ptx, _, _ = compile_to_ptx(obj.data.decode() if isinstance(obj.data, bytes) else obj.data,
                                   arch=f"sm_{cc[0]}{cc[1]}", name=obj.name or "shim.cu", options=["-rdc=true"])
        shims.append(ptx)
    entries = _ENTRY.findall(ptxs[0])
    if len(entries) != 1:
        raise RuntimeError(f"expected one .entry in numba's PTX for {pyfunc.__name__}, found {entries}")
    return ptxs[0], entries[0], shims


def link_cubin(ptxs, arch="sm_90a") -> bytes:
    """Link PTX modules into one cubin with nvJitLink (as numba-cuda links a kernel and its shims)."""
    nvjitlink = require("cuda.bindings.nvjitlink")
    h = nvjitlink.create(2, [f"-arch={arch}", "-O3"])
    try:
        for i, p in enumerate(ptxs):
            data = p.encode()
            nvjitlink.add_data(h, nvjitlink.InputType.PTX, data, len(data), f"m{i}.ptx")
        nvjitlink.complete(h)
        size = nvjitlink.get_linked_cubin_size(h)
        buf = bytearray(size)
        nvjitlink.get_linked_cubin(h, buf)
        return bytes(buf)
    finally:
        nvjitlink.destroy(h)


def _numba_type(value):
    """numba's type of one argument (a DeviceArray as the array it holds)."""
    numba = require("numba")
    from .runtime import DeviceArray

    if isinstance(value, DeviceArray):
        value = value._data
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)            # marshalled through a contiguous copy
    try:
        return numba.typeof(value)
    except ValueError:
        raise TypeError(f"a numba-cuda kernel cannot take a {type(value).__name__} argument") from None


def marshal(args, types):
    """Kernel arguments -> warpsim.ptx launch arguments in numba's ABI (one array: meminfo, parent,
    nitems, itemsize, data, shape..., strides...; a scalar: its value as its numba type)."""
    numba_types = require("numba.core.types")
    from .runtime import DeviceArray

    out, writeback = [], []
    for a, t in zip(args, types):
        if isinstance(t, numba_types.Array):
            if isinstance(a, DeviceArray):
                data, ptr = a._data, a.address
            else:
                data = np.asarray(a)
                if not (data.flags.c_contiguous and data.flags.writeable):
                    c = np.ascontiguousarray(data).copy()
                    if data.flags.writeable:
                        writeback.append((data, c))
                    data = c
                ptr = data
            if data.ndim != t.ndim:
                raise TypeError(f"the kernel was compiled for a {t.ndim}-d array, got {data.ndim}-d")
            out += [0, 0, data.size, data.itemsize, ptr, *data.shape, *data.strides]
        elif isinstance(t, (numba_types.Integer, numba_types.Boolean)):
            out.append(int(a))
        elif isinstance(t, numba_types.Float):
            out.append(float(np.array(a, dtype=str(t))) if str(t) != "float16"
                       else int(np.array(a, dtype=np.float16).view(np.uint16)))
        else:
            raise TypeError(f"warpsim.cuda.jit passes arrays, integers, booleans and floats; got {t}")
    return out, writeback


class _Compiled:
    """One specialisation: its PTX (shims linked), entry and argument types."""

    def __init__(self, pyfunc, types, arch, options):
        from .. import ptx as _ptx

        numba = require("numba")
        sig = numba.core.typing.signature(numba.types.void, *types)
        self.ptx, self.entry, self.shims = compile_kernel_ptx(pyfunc, sig, arch=arch, **options)
        self.types = types
        self.module = _ptx.load(self.ptx)
        if self.shims:
            self.module.link(*self.shims)


class Dispatcher:
    """A ``@warpsim.cuda.jit`` kernel: ``kernel[grid, block](*args)`` or ``kernel[grid, block, stream,
    dynamic_shared_bytes](*args)``; specialised per argument types like numba-cuda's dispatcher."""

    def __init__(self, pyfunc, signatures=(), *, arch="sm_90a", fastmath=False, lineinfo=False, opt=True,
                 launch_bounds=None):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "kernel")
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.arch = arch
        self.options = dict(fastmath=fastmath, lineinfo=lineinfo, opt=opt, launch_bounds=launch_bounds)
        self.overloads = {}
        for sig in signatures:
            self.compile(sig)

    def __repr__(self):
        return f"<warpsim.cuda.jit kernel {self.__name__} ({len(self.overloads)} specialisation(s))>"

    def compile(self, sig):
        """Compile for a numba signature (``"void(float32[::1], int32)"`` or argument types)."""
        numba = require("numba")
        sigutils = require("numba.cuda.core.sigutils")
        if isinstance(sig, tuple):
            types, ret = sig, None
        else:
            types, ret = sigutils.normalize_signature(sig)
        if ret not in (None, numba.types.void, numba.types.none):
            raise TypeError(f"a kernel returns nothing (void); {self.__name__} was given {sig}")
        types = tuple(types)
        if types not in self.overloads:
            self.overloads[types] = _Compiled(self.py_func, types, self.arch, self.options)
        return self.overloads[types]

    def _specialisation(self, args):
        types = tuple(_numba_type(a) for a in args)
        if types in self.overloads:
            return self.overloads[types]
        for have, comp in self.overloads.items():          # an explicit signature that takes these arrays
            if len(have) == len(types) and all(_accepts(h, t) for h, t in zip(have, types)):
                return comp
        return self.compile(types)

    def inspect_asm(self, signature=None) -> str:
        """The PTX of a specialisation (the only one when there is one)."""
        if signature is None:
            if len(self.overloads) != 1:
                raise ValueError(f"{self.__name__} has {len(self.overloads)} specialisations: name one")
            return next(iter(self.overloads.values())).ptx
        return self.compile(signature).ptx

    def __getitem__(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ValueError("launch a kernel as kernel[grid, block](...), kernel[grid, block, stream] or "
                             "kernel[grid, block, stream, dynamic_shared_bytes]")
        grid, block = config[0], config[1]
        shared = config[3] if len(config) > 3 else 0
        return lambda *args: self._launch(grid, block, shared, args)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.__name__} is a kernel: launch it as {self.__name__}[grid, block](...)")

    def _launch(self, grid, block, shared, args):
        from .raw import _dims
        from .runtime import launch

        comp = self._specialisation(args)
        conv, writeback = marshal(args, comp.types)
        launch(comp.module, comp.entry, _dims(grid, "grid"), _dims(block, "block"), conv, shared_mem=shared,
               arch=self.arch)
        for host, copy in writeback:
            host[...] = copy


def _accepts(have, got):
    """Whether a compiled argument type ``have`` takes an argument of type ``got`` without recompiling."""
    numba_types = require("numba.core.types")
    if isinstance(have, numba_types.Array) and isinstance(got, numba_types.Array):
        return have.dtype == got.dtype and have.ndim == got.ndim and (have.layout == "A" or have.layout == got.layout)
    if isinstance(have, numba_types.Number) and isinstance(got, numba_types.Number):
        return True
    return have == got


def jit(func_or_sig=None, device=False, *, arch="sm_90a", fastmath=False, lineinfo=False, opt=True,
        launch_bounds=None, **options):
    """numba-cuda's ``@cuda.jit`` running on warpsim: ``@jit``, ``@jit("void(float32[::1])")``,
    ``@jit(device=True)`` (a device function: numba-cuda's own, callable from warpsim kernels).
    fastmath, lineinfo, opt, launch_bounds: as numba-cuda's; debug, cache, inline, forceinline and
    max_registers are accepted and change nothing warpsim computes.

    Example:

    >>> from numba import cuda
    >>> import warpsim.cuda as wc
    >>> @wc.jit
    ... def square(x):
    ...     i = cuda.grid(1)
    ...     if i < x.size:
    ...         x[i] = x[i] * x[i]
    >>> x = np.arange(40, dtype=np.float32)
    >>> square[1, 64](x)
    >>> x[:5]
    array([ 0.,  1.,  4.,  9., 16.], dtype=float32)
    """
    numba_jit = require("numba.cuda.decorators").jit     # numba-cuda's own, also while numba_sim patches numba.cuda
    unknown = set(options) - {"debug", "cache", "link", "inline", "forceinline", "max_registers"}
    if unknown:
        raise TypeError(f"unknown jit option(s) {sorted(unknown)}")
    if options.get("link"):
        raise NotImplementedError("jit(link=...) is not supported by warpsim.cuda.jit yet")
    if device:
        wrap = lambda f: numba_jit(device=True, fastmath=fastmath)(f)   # noqa: E731
        return wrap if func_or_sig is None or not callable(func_or_sig) else wrap(func_or_sig)
    kw = dict(arch=arch, fastmath=fastmath, lineinfo=lineinfo, opt=opt, launch_bounds=launch_bounds)
    if callable(func_or_sig):
        return Dispatcher(func_or_sig, **kw)
    sigs = [] if func_or_sig is None else (list(func_or_sig) if isinstance(func_or_sig, (list, tuple))
                                           else [func_or_sig])
    return lambda f: Dispatcher(f, sigs, **kw)
