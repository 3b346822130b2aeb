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


def compile_kernel_ptx(pyfunc, sig, *, arch="sm_90a", fastmath=False, lineinfo=False, opt=True):
    """Compile a numba-cuda kernel -> (PTX text, entry name, [PTX of each C++ shim it calls])."""
    require("numba.cuda")
    compiler = require("numba.cuda.compiler")
    from numba.cuda.codegen import LinkableCode     # noqa: the extra is present once numba.cuda imported
    from .nvrtc import compile_to_ptx

    cc = _cc_of(arch)
    with _target(cc):
        lib, _ = compiler._compile_pyfunc_with_fixup(
            pyfunc, sig, debug=False, lineinfo=lineinfo, device=False, fastmath=fastmath, cc=cc, opt=opt,
            abi="numba", abi_info=None, forceinline=False, launch_bounds=None, lto=False)
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
