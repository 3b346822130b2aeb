"""CuPy's ``RawModule`` / ``RawKernel`` on warpsim: CUDA C++ compiled by NVRTC, run by warpsim.ptx.

>>> mod = warpsim.cuda.RawModule(code=src, options=("--use_fast_math",))          # doctest: +SKIP
>>> mod.get_function("saxpy")((4,), (128,), (x, y, np.float32(2.0), n))         # doctest: +SKIP

Arguments follow the kernel's parameters: numpy arrays (written back in place) and device arrays
go to pointer parameters, numbers are converted to each parameter's type (a Python float for a
``float`` parameter is rounded to f32, an int is range-checked), ``bytes`` or a numpy structured
scalar fill a by-value struct.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import ptx as _ptx
from .nvrtc import compile_to_ptx
from .runtime import DeviceArray, allocate, launch

__all__ = ["RawModule", "RawKernel"]


def _dims(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)) and 1 <= len(v) <= 3:
        return tuple(v)
    raise ValueError(f"{what} must be an int or a tuple of 1 to 3 ints, got {v!r}")


def convert_argument(value, ptype, pbits, parray, index, kernel):
    """One kernel argument as warpsim.ptx's launch takes it, typed by its .param declaration."""
    where = f"argument {index} of {kernel} (.param .{ptype}{'[%d]' % parray if parray else ''})"
    if isinstance(value, DeviceArray):
        if pbits != 64 or parray:
            raise TypeError(f"{where}: a device array is a 64-bit pointer; this parameter is not one")
        return value.address
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if pbits != 64 or parray:
            raise TypeError(f"{where}: got an array, but the parameter is a .{ptype} scalar")
        return value
    if parray:
        if isinstance(value, (np.void, np.ndarray)):
            value = value.tobytes()
        if not isinstance(value, (bytes, bytearray)) or len(value) != parray:
            raise TypeError(f"{where}: a by-value struct of {parray} bytes: pass bytes or a numpy structured "
                            f"scalar of that size")
        return bytes(value)
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, np.ndarray):                      # a 0-d array: its element
        value = value[()]
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: expected a number, a numpy array or a warpsim.cuda.DeviceArray, got "
                        f"{type(value).__name__}")
    if ptype in ("f16", "bf16"):
        import ml_dtypes

        dt = np.float16 if ptype == "f16" else ml_dtypes.bfloat16
        return int(np.array(value, dtype=dt).view(np.uint16))
    if ptype.startswith("f"):
        return float(value)
    if isinstance(value, (float, np.floating)):
        if float(value) != int(value):
            raise TypeError(f"{where}: an integer parameter got the non-integral number {value!r}")
        value = int(value)
    v = int(value)
    if not -(1 << (pbits - 1)) <= v < (1 << pbits):
        raise ValueError(f"{where}: {v} does not fit {pbits} bits")
    return v


class RawKernel:
    """A kernel of a :class:`RawModule`, called as CuPy calls one: ``kernel(grid, block, args, shared_mem=0)``.

    Example:

    >>> import warpsim.cuda as wc
    >>> k = wc.RawKernel(r'extern "C" __global__ void iota(int* x) { x[threadIdx.x] = threadIdx.x; }', "iota")
    >>> x = np.zeros(32, np.int32)
    >>> k((1,), (32,), (x,))
    >>> x[:5]
    array([0, 1, 2, 3, 4], dtype=int32)
    """

    def __init__(self, code, name, options=(), *, arch="sm_90a", name_expressions=(), **compile_options):
        if isinstance(code, RawModule):
            self.module = code
        else:
            self.module = RawModule(code=code, options=options, arch=arch,
                                    name_expressions=tuple(name_expressions) or ((name,) if "<" in name else ()),
                                    **compile_options)
        self.name = name
        self.entry = self.module._entry_name(name)
        self.params = self.module.ptx.program(self.entry).entry.params
        #: numba-cuda's spelling of the dynamic shared-memory limit; accepted, warpsim has no such limit
        self.max_dynamic_shared_size_bytes = None

    def __repr__(self):
        return f"<warpsim.cuda.RawKernel {self.name}>"

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None, **launch_options):
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args must be a tuple of the kernel's arguments (CuPy's convention), got "
                            f"{type(args).__name__}")
        if len(args) != len(self.params):
            raise ValueError(f"{self.name} takes {len(self.params)} argument(s) "
                             f"({', '.join('.' + p.type for p in self.params)}), got {len(args)}")
        conv = [convert_argument(a, p.type, p.bits, p.array, i, self.name)
                for i, (a, p) in enumerate(zip(args, self.params))]
        launch(self.module.ptx, self.entry, _dims(grid, "grid"), _dims(block, "block"), conv, shared_mem=shared_mem,
               arch=self.module.arch, variables=self.module._variables, **launch_options)

    @property
    def attributes(self):
        return {"num_params": len(self.params)}


class RawModule:
    """CUDA C++ (``code``), a ``.cu`` / ``.ptx`` file (``path``) or PTX text (``ptx``) as a module of kernels.

    options: nvcc spellings (``-DNAME=1``, ``-I dir``, ``-std=c++17``, ``--use_fast_math``, ...);
    name_expressions: template instantiations to compile and look up by that spelling
    (``"horner<float, 7>"``).  ``get_function(name)`` returns a :class:`RawKernel`;
    ``get_global(name, dtype)`` the ``__constant__`` / ``__device__`` variable as a device array.

    Example (NVRTC compiles on the CPU; the kernel runs in :mod:`warpsim.ptx`):

    >>> import warpsim.cuda as wc
    >>> mod = wc.RawModule(code=r'''
    ... __constant__ float scale[1];
    ... template <typename T> __global__ void mul(T* x) { x[threadIdx.x] *= T(scale[0]); }''',
    ...                    options=("-std=c++17",), name_expressions=["mul<float>"])
    >>> mod.get_global("scale", np.float32).set(np.array([0.5], np.float32))
    >>> x = np.arange(32, dtype=np.float32)
    >>> mod.get_function("mul<float>")((1,), (32,), (x,))
    >>> x[:4]
    array([0. , 0.5, 1. , 1.5], dtype=float32)
    """

    def __init__(self, code=None, options=(), *, path=None, ptx=None, arch="sm_90a", name_expressions=(),
                 backend="nvrtc", jitify=False, headers=None, implicit_includes=True):
        if backend not in ("nvrtc", "nvcc"):
            raise ValueError(f"backend must be 'nvrtc' (or CuPy's 'nvcc', compiled with NVRTC here), got {backend!r}")
        if jitify:
            raise ValueError("jitify=True is not supported: warpsim.cuda compiles with NVRTC directly")
        if sum(x is not None for x in (code, path, ptx)) != 1:
            raise ValueError("give exactly one of code= (CUDA C++ source), path= (a .cu or .ptx file) or ptx= "
                             "(PTX text)")
        self.arch = arch
        self.options = tuple(options.split() if isinstance(options, str) else options)
        self.lowered = {}
        self.log = ""
        if path is not None:
            p = Path(path)
            if p.suffix == ".ptx":
                ptx = p.read_text()
            elif p.suffix in (".cu", ".cuh", ".cpp", ".cc", ".cxx"):
                code = p.read_text()
            else:
                raise ValueError(f"path {str(p)!r}: expected a .cu source or a .ptx file (cubins cannot run here)")
        if code is not None:
            ptx, self.lowered, self.log = compile_to_ptx(
                code, arch=arch, options=self.options, name_expressions=name_expressions,
                name=Path(path).name if path is not None else "kernel.cu", headers=headers,
                implicit_includes=implicit_includes)
        elif not isinstance(ptx, str):
            raise TypeError(f"ptx must be PTX text, not {type(ptx).__name__}")
        self.code = ptx
        self.ptx = _ptx.load(ptx)
        # each module variable at a device address of its own, its bytes kept from launch to launch
        self._variables = {}
        for v in self.ptx._mod.variables:
            arr = np.frombuffer(v.data, dtype=np.uint8).copy() if v.data else np.zeros(1, np.uint8)
            self._variables[v.name] = (allocate(arr.size), arr)
        self._kernels = {}

    def __repr__(self):
        return f"<warpsim.cuda.RawModule {self.arch} kernels={self.ptx.entries}>"

    def _entry_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"a kernel name is a string, not {type(name).__name__}")
        entry = self.lowered.get(name, name)
        if entry not in self.ptx.entries:
            hint = (" (a template instantiation needs name_expressions=[...] with that spelling)" if "<" in name
                    else " (declare it extern \"C\" or pass its C++ spelling in name_expressions)")
            raise ValueError(f"no kernel {name!r} in this module; kernels: {self.ptx.entries}"
                             f"{'; name expressions: ' + str(list(self.lowered)) if self.lowered else ''}{hint}")
        return entry

    def get_function(self, name) -> RawKernel:
        if name not in self._kernels:
            self._kernels[name] = RawKernel(self, name)
        return self._kernels[name]

    def get_global(self, name, dtype=np.uint8) -> DeviceArray:
        """A ``__constant__`` or ``__device__`` variable as a device array of ``dtype`` over its bytes;
        writes to it (``.set``/``copy_to_device``) are what the next launch reads."""
        key = self.lowered.get(name, self.lowered.get("&" + name, name)) if isinstance(name, str) else name
        if key not in self._variables:
            raise ValueError(f"no __constant__/__device__ variable {name!r} in this module; variables: "
                             f"{sorted(self._variables)}")
        addr, arr = self._variables[key]
        dt = np.dtype(dtype)
        if arr.size % dt.itemsize:
            raise ValueError(f"{name} has {arr.size} bytes, not a whole number of {dt} elements")
        view = arr.view(dt)
        return DeviceArray(view.shape, dt, _storage=view, _address=addr)
