"""A Triton driver backed by warpsim: the kernel Triton compiles for a GPU, run as PTX on the CPU.

Triton's ``JITFunction`` asks ``triton.runtime.driver.active`` for the target, compiles with its own
NVIDIA backend (through Triton's cache), then hands the compiled kernel to the driver's launcher.
:class:`WarpsimDriver` answers with a GPU target, loads the PTX Triton emitted into
:mod:`warpsim.ptx` and launches it over global memory made of the arguments' own CPU storage (torch
tensors, numpy arrays), mapped at their host addresses: the kernel's stores land in place.

``with device(arch="sm_90a"):`` makes it the active driver for a block (also a decorator);
``WARPSIM_TRITON=sm_90a`` makes it Triton's driver for the whole process (:mod:`.backend`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import warnings

import numpy as np

from .interpreter import _NUMERICS_ARCH

__all__ = ["WarpsimDriver", "device", "install", "uninstall", "TARGET_CAPABILITY", "KernelLaunchError"]

#: Triton targets the driver compiles for -> the compute capability Triton's NVIDIA backend takes
TARGET_CAPABILITY = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90a": 90, "sm_100a": 100, "sm_120a": 120,
                     "sm_120": 120}
#: sm_100a runs tcgen05 on warpsim's models (no Blackwell capture: its numerics are modelled, not verified)
_NUMERICS = dict(_NUMERICS_ARCH, sm_100a="sm_100", sm_120a="sm_120")

#: what ``driver.utils.get_device_properties`` reports per target: the GPU of that generation that
#: tutorials size their grids for (A100 SXM, RTX 3090 / 4090, H100 SXM, B200, RTX 5090)
_PROPERTY_NAMES = ("max_shared_mem", "multiprocessor_count", "sm_clock_rate", "mem_clock_rate", "mem_bus_width")
_PROPERTIES = {cap: dict(zip(_PROPERTY_NAMES, row)) for cap, row in {
    80: (166912, 108, 1410000, 1215000, 5120),
    86: (101376, 82, 1695000, 9751000, 384),
    89: (101376, 128, 2520000, 10501000, 384),
    90: (232448, 132, 1980000, 2619000, 5120),
    100: (232448, 148, 1965000, 3996000, 8192),
    120: (101376, 170, 2407000, 14001000, 512),
}.items()}


class KernelLaunchError(RuntimeError):
    """A compiled Triton kernel failed while warpsim ran it; names the kernel, the target and the PTX line.

    Example:

    >>> err = warpsim.triton.KernelLaunchError("address 0x10 is outside every mapped tensor", kernel="add", line=42)
    >>> isinstance(err, RuntimeError), err.kernel, err.line
    (True, 'add', 42)
    """

    def __init__(self, message, *, kernel, line=None, statement=None):
        super().__init__(message)
        self.kernel, self.line, self.statement = kernel, line, statement


def _check_arch(arch):
    if arch not in TARGET_CAPABILITY:
        raise ValueError(f"Triton target {arch!r} is not run by the warpsim driver; allowed: "
                         f"{', '.join(TARGET_CAPABILITY)}")
    return arch


# ---------------------------------------------------------------------------------------------------------
# utils: what CompiledKernel and tutorials ask the driver's ``utils`` for


class _Utils:
    """``driver.utils``: device properties of the target's GPU, binaries 'loaded' as warpsim handles."""

    def __init__(self, driver):
        self.driver = driver

    def get_device_properties(self, device=None):
        cap = self.driver.capability
        return dict(_PROPERTIES[cap], max_num_regs=65536, warpSize=32)

    def load_binary(self, name, kernel, shared, device):
        """(module, function, n_regs, n_spills, max threads): the registers read off the cubin ptxas made."""
        return None, 0, _cubin_registers(kernel, name), 0, 1024

    def set_printf_fifo_size(self, size):
        pass

    def fill_tma_descriptor(self, ptr, swizzle, elem_size, elem_type, block_size, shape, strides, padding):
        from . import tensordesc
        return tensordesc.fill_tma_descriptor(ptr, swizzle, elem_size, elem_type, block_size, shape, strides,
                                              padding)


def _cubin_registers(cubin, name):
    """The register count ptxas recorded (EIATTR_REGCOUNT in ``.nv.info``: a Triton cubin holds one kernel), else 0."""
    try:
        data = bytes(cubin)
        if data[:4] != b"\x7fELF" or data[4] != 2:
            return 0
        shoff = int.from_bytes(data[0x28:0x30], "little")
        shentsize, shnum, shstrndx = (int.from_bytes(data[o:o + 2], "little") for o in (0x3A, 0x3C, 0x3E))
        secs = [data[shoff + i * shentsize: shoff + (i + 1) * shentsize] for i in range(shnum)]
        field = lambda s, o, n: int.from_bytes(s[o:o + n], "little")  # noqa: E731
        stroff = field(secs[shstrndx], 0x18, 8)
        for s in secs:
            nm = data[stroff + field(s, 0, 4):].split(b"\0", 1)[0].decode()
            if nm not in (".nv.info", f".nv.info.{name}"):
                continue
            body = data[field(s, 0x18, 8): field(s, 0x18, 8) + field(s, 0x20, 8)]
            i = 0
            while i + 4 <= len(body):
                fmt, attr, size = body[i], body[i + 1], int.from_bytes(body[i + 2:i + 4], "little")
                if fmt == 0x04 and attr == 0x2F:           # EIFMT_SVAL, EIATTR_REGCOUNT: (function, count)
                    return int.from_bytes(body[i + 8:i + 12], "little")
                i += 4 + (size if fmt == 0x04 else 0)
    except (IndexError, UnicodeDecodeError, ValueError):
        return 0
    return 0


# ---------------------------------------------------------------------------------------------------------
# global memory: the arguments' CPU storage mapped at its own host addresses


def _storage_bytes(t):
    """A writable uint8 numpy view of the whole storage behind CPU tensor ``t``, and its host address."""
    import torch

    if t.device.type != "cpu":
        raise ValueError(f"a {t.device.type} tensor was passed to a kernel run by warpsim; pass CPU tensors "
                         "(or numpy arrays)")
    st = t.untyped_storage()
    whole = torch.empty(0, dtype=torch.uint8).set_(st)
    return whole.numpy(), st.data_ptr()


class _Memory:
    """One launch's GlobalMemory: each distinct storage mapped once, at its host address."""

    def __init__(self):
        from ..ptx import GlobalMemory

        self.gm = GlobalMemory()
        self.seen = {}

    def pointer(self, obj, what):
        """The device address of a pointer argument (tensor, buffer with data_ptr, int or None)."""
        import torch

        if obj is None:
            return 0
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            return int(obj)
        if isinstance(obj, torch.Tensor):
            view, base = _storage_bytes(obj)
            if base not in self.seen and view.size:
                self.seen[base] = self.gm.map(view, address=base)
            return obj.data_ptr()
        if hasattr(obj, "data_ptr"):
            return int(obj.data_ptr())
        raise TypeError(f"{what}: a pointer argument must be a CPU torch tensor, a numpy array, an int or None, "
                        f"not {type(obj).__name__}")


    def covers(self, address):
        return any(b <= address < b + v.size for b, v in zip(self.gm.bases, self.gm.buffers))

    def map_pointed(self, tables):
        """Map the CPU tensors whose storage holds an address found in ``tables`` (int64 tensors of device
        pointers, as a grouped GEMM passes): a kernel may reach memory no argument names.  Live tensors are
        found through the garbage collector, only when such an address is not mapped yet."""
        import gc

        import torch

        from ..ptx.memory import PARAM_WINDOW

        wanted = set()
        for t in tables:
            if t.numel() > (1 << 20):
                continue
            vals = t.detach().reshape(-1).numpy().view(np.uint64)
            for v in np.unique(vals[(vals >= 0x10000) & (vals < PARAM_WINDOW)]).tolist():
                if not self.covers(v):
                    wanted.add(v)
        if not wanted:
            return
        with warnings.catch_warnings():          # some objects the collector holds warn when inspected
            warnings.simplefilter("ignore")      # (type(), not isinstance: a dead weak proxy's __class__ raises)
            live = [o for o in gc.get_objects() if issubclass(type(o), torch.Tensor)]
        for obj in live:
            if not wanted:
                break
            if obj.device.type == "cpu" and not obj.is_meta:
                try:
                    st = obj.untyped_storage()
                except (RuntimeError, NotImplementedError):
                    continue
                lo, n = st.data_ptr(), st.nbytes()
                hit = {v for v in wanted if lo <= v < lo + n}
                if hit and lo not in self.seen:
                    self.pointer(obj, "a tensor reached through a pointer table")
                wanted -= hit


# ---------------------------------------------------------------------------------------------------------
# the launcher


_modules: dict = {}          # hash -> (ptx text, warpsim Module)


def _ptx_of(src, metadata):
    """The PTX Triton emitted for this compiled kernel, read back from Triton's cache."""
    from triton.runtime.cache import get_cache_manager

    name = getattr(src, "name", metadata.name)[:150]
    cm = get_cache_manager(metadata.hash)
    for fname in (f"{name}.ptx", f"{metadata.name}.ptx"):
        path = cm.get_file(fname)
        if path:
            with open(path) as f:
                return f.read()
    raise RuntimeError(f"warpsim: the PTX of kernel {metadata.name} is not in Triton's cache "
                       f"(hash {metadata.hash}); TRITON_STORE_BINARY_ONLY must be off for the warpsim driver")


def _module(src, metadata):
    from ..ptx import load

    got = _modules.get(metadata.hash)
    if got is None:
        text = _ptx_of(src, metadata)
        # ptxas contracts only with --fmad=true, which Triton passes unless enable_fp_fusion is off
        got = _modules[metadata.hash] = (text, load(text, fmad=getattr(metadata, "enable_fp_fusion", True)))
    return got


def _float_bits(value, ty):
    """A float scalar argument as the bits of its PTX parameter (fp16 / bf16 travel as .b16)."""
    if ty == "fp16":
        return int(np.array(value, np.float16).view(np.uint16))
    if ty == "bf16":
        return int(np.array(value, np.float32).view(np.uint32)) >> 16
    return float(value)


def _tensors(args):
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _tensors(a)


def _flatten(sig, arg, out):
    if isinstance(sig, tuple):
        for s, a in zip(sig, arg):
            _flatten(s, a, out)
    else:
        out.append((sig, arg))


class Launcher:
    """``driver.launcher_cls(src, metadata)``: called as Triton's CUDA launcher is, runs the PTX on warpsim."""

    def __init__(self, src, metadata):
        self.driver = _current_driver()
        self.src, self.metadata = src, metadata
        self.name = metadata.name
        self.signature = dict(src.signature)
        self.tensordesc_meta = getattr(metadata, "tensordesc_meta", None)
        self.num_ctas = getattr(metadata, "num_ctas", 1)
        self.global_scratch = (metadata.global_scratch_size, metadata.global_scratch_align)
        self.profile_scratch = (metadata.profile_scratch_size, metadata.profile_scratch_align)
        self.ptx, self.module = _module(src, metadata)
        self.entry = self.module.entries[0] if len(self.module.entries) == 1 else self.name

    def _scratch(self, size_align, allocator, grid, stream, mem, what):
        size, align = size_align
        if not size:
            return 0
        buf = allocator.get()(grid * self.num_ctas * size, align, stream)
        return mem.pointer(buf, what)

    def kernel_args(self, bound, mem):
        """The PTX parameters in order: pointers as device addresses, scalars as numbers."""
        from . import tensordesc

        out = []
        desc_i = 0
        for (name, sig), arg in zip(self.signature.items(), bound):
            flat = []
            _flatten(sig, arg, flat)
            for ty, a in flat:
                if ty == "constexpr":
                    continue
                if isinstance(ty, str) and ty.startswith("tensordesc"):
                    meta = self.tensordesc_meta[desc_i] if self.tensordesc_meta else None
                    desc_i += 1
                    out.extend(tensordesc.kernel_args(a, meta, mem, f"argument {name} of {self.name}"))
                elif ty.startswith("*"):
                    out.append(mem.pointer(a, f"argument {name} of {self.name}"))
                elif ty in ("fp16", "bf16", "fp32", "f32", "fp64"):
                    out.append(_float_bits(a, ty))
                else:
                    out.append(int(a))
        return out

    def __call__(self, gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata, enter_hook,
                 exit_hook, *bound):
        import torch
        from triton.runtime import _allocation

        from ..ptx import PTXError

        num_warps, num_ctas, shared = packed_metadata
        if gridX * gridY * gridZ == 0:
            return
        if enter_hook is not None:
            enter_hook(launch_metadata)
        mem = _Memory()
        args = self.kernel_args(bound, mem)
        tables = [t for t in _tensors(bound) if t.dtype in (torch.int64, torch.uint64) and t.device.type == "cpu"]
        mem.map_pointed(tables)
        ncta = gridX * gridY * gridZ
        args.append(self._scratch(self.global_scratch, _allocation._allocator, ncta, stream, mem, "global scratch"))
        args.append(self._scratch(self.profile_scratch, _allocation._profile_allocator, ncta, stream, mem,
                                  "profile scratch"))
        cluster = (num_ctas, 1, 1) if num_ctas != 1 else None
        try:
            self.module.launch(self.entry, (gridX * num_ctas, gridY, gridZ), (32 * num_warps, 1, 1), args, shared,
                               memory=mem.gm, arch=self.driver.numerics, cluster=cluster,
                               max_steps=self.driver.max_steps)
        except PTXError as exc:
            raise KernelLaunchError(
                f"Triton kernel {self.name} ({self.driver.arch}, grid {(gridX, gridY, gridZ)}, num_warps "
                f"{num_warps}) failed on warpsim at PTX line {exc.line}: {exc}",
                kernel=self.name, line=exc.line, statement=exc.statement) from exc
        except (ValueError, RuntimeError, TypeError, NotImplementedError) as exc:
            raise KernelLaunchError(f"Triton kernel {self.name} ({self.driver.arch}) failed on warpsim: {exc}",
                                    kernel=self.name) from exc
        if exit_hook is not None:
            exit_hook(launch_metadata)


# ---------------------------------------------------------------------------------------------------------
# the driver


def _simulator_bench(kernel_call, *, quantiles=None, return_mode="mean", warmup=None, rep=None, **kw):
    """``do_bench`` / the autotuner's benchmarker on warpsim: runs the call once and reports 0 ms.

    A simulator's wall-clock time says nothing of the GPU's, so every config of ``triton.autotune`` ties and
    Triton keeps the first one listed (its ``min`` over the configs in order); each config still runs once.
    The driver's ``autotune=`` pins another (:func:`_autotune_patch`).
    """
    kernel_call()
    if quantiles is not None:
        return [0.0 for _ in quantiles]
    return 0.0


class _CpuDeviceInterface:
    """``driver.get_device_interface()``: what Triton's benchmarking touches of ``torch.cuda``."""

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def device_count():
        return 1

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter()

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

        def synchronize(self):
            pass


try:
    from triton.backends.driver import DriverBase as _DriverBase
except ImportError:              # triton missing: the driver cannot be made, the error says why
    _DriverBase = object


class WarpsimDriver(_DriverBase):
    """Triton's active driver, answering for a GPU of target ``arch`` whose code warpsim runs.

    arch: the Triton target to compile for ("sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a");
    device: the target whose GPU numerics run the code when it is not arch's own (e.g. sm_80 PTX on an
    H100: device="sm_90a"); max_steps: the launch's statement budget (warpsim.ptx's); autotune: which
    ``triton.autotune`` config runs (an index into the configs as listed, a dict of values the config must
    have, e.g. ``{"BLOCK": 128, "num_warps": 4}``, or ``fn(kernel name, configs) -> index``; default the
    environment's ``WARPSIM_TRITON_AUTOTUNE`` -- an index or ``BLOCK=128,num_warps=4`` -- else Triton's tie
    rule, the first listed).

    Example:

    >>> drv = warpsim.triton.WarpsimDriver(arch="sm_90a")
    >>> drv.get_current_target().backend, drv.get_current_target().arch
    ('cuda', 90)
    """

    def __init__(self, arch=None, device=None, max_steps=100_000_000, autotune=None):
        arch = arch or os.environ.get("WARPSIM_TRITON") or "sm_90a"
        self.arch = _check_arch(arch)
        if device is not None and device not in _NUMERICS:
            raise ValueError(f"device {device!r} is not modelled; allowed: {', '.join(TARGET_CAPABILITY)}")
        self.device = device
        self.numerics = _NUMERICS[device or arch]
        self.capability = TARGET_CAPABILITY[arch]
        self.max_steps = max_steps
        self.autotune = _autotune_spec(autotune if autotune is not None else os.environ.get("WARPSIM_TRITON_AUTOTUNE"))
        self.pins_said = set()
        self.utils = _Utils(self)
        self.launcher_cls = Launcher
        _numpy_args_patch()
        _autotune_patch()

    def __repr__(self):
        return f"WarpsimDriver(arch={self.arch!r}, device={self.device!r})"

    @classmethod
    def is_active(cls):
        return bool(os.environ.get("WARPSIM_TRITON"))

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", self.capability, 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_current_device(self):
        # one device per (target, numerics): a JITFunction keeps its compiled kernels per device
        return f"warpsim:{self.arch}:{self.numerics}"

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=None):
        return divmod(self.capability, 10)

    def get_device_interface(self):
        return _CpuDeviceInterface

    def map_python_to_cpp_type(self, ty):
        from triton.backends.nvidia.driver import ty_to_cpp
        return ty_to_cpp(ty)

    def get_benchmarker(self):
        return _simulator_bench

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(16, dtype=torch.int32)

    def clear_cache(self, cache):
        cache.zero_()

    def assemble_tensormap_to_arg(self, tensormaps_info, args):
        return args


# ---------------------------------------------------------------------------------------------------------
# numpy arrays as kernel arguments: converted to CPU tensors sharing their memory, before Triton binds them

_lock = threading.RLock()


def _as_tensor(x):
    import torch

    if not isinstance(x, np.ndarray):
        return x
    name = x.dtype.name
    special = {"bfloat16": (np.int16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
               "float8_e5m2": (np.uint8, torch.float8_e5m2)}
    if name in special:
        store, tdt = special[name]
        return torch.from_numpy(x.view(store)).view(tdt)
    if not x.flags.writeable:
        raise ValueError("a read-only numpy array was passed to a Triton kernel run by warpsim; pass a writeable "
                         "array (np.array(x)): the kernel's stores land in place")
    return torch.from_numpy(x)


def _numpy_args_patch():
    """JITFunction.run takes numpy arrays while a warpsim driver is active (installed again if something,
    e.g. the exact interpreter's uninstall, put another ``run`` back)."""
    with _lock:
        from triton.runtime.driver import driver as _drv
        from triton.runtime.jit import JITFunction

        if getattr(JITFunction.run, "_warpsim_numpy", False):
            return
        orig = JITFunction.run

        def run(self, *args, grid, warmup, **kwargs):
            if isinstance(_drv.active, WarpsimDriver):
                args = tuple(_as_tensor(a) for a in args)
                kwargs = {k: _as_tensor(v) for k, v in kwargs.items()}
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)

        run.__wrapped__ = orig
        run._warpsim_numpy = True
        JITFunction.run = run


# ---------------------------------------------------------------------------------------------------------
# triton.autotune: which config runs, said out loud

_log = logging.getLogger("warpsim.triton")


def _autotune_spec(spec):
    """An ``autotune=`` value checked (int, dict, callable or None); a string (the environment's) parsed."""
    if spec is None or spec == "":
        return None
    if isinstance(spec, str):
        text = spec.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            pairs = [item.split("=", 1) for item in text.split(",")]
            return {k.strip(): int(v) if v.strip().lstrip("-").isdigit() else v.strip() for k, v in pairs}
        except ValueError:
            raise ValueError(f"WARPSIM_TRITON_AUTOTUNE={spec!r}: expected a config index (e.g. 1) or values "
                             "(e.g. BLOCK=128,num_warps=4)") from None
    if isinstance(spec, bool) or not isinstance(spec, (int, dict)) and not callable(spec):
        raise TypeError(f"autotune must be a config index, a dict of config values or a function (kernel name, "
                        f"configs) -> index, not {type(spec).__name__}")
    return spec


def _config_values(cfg):
    return dict(cfg.all_kwargs())


def _pinned(spec, name, configs):
    """The config ``spec`` names among ``configs`` (ValueError listing them when it names none)."""
    listed = "; ".join(f"{i}: {c}" for i, c in enumerate(configs))
    index = spec(name, list(configs)) if callable(spec) else spec
    if isinstance(index, dict):
        hits = [i for i, c in enumerate(configs) if all(_config_values(c).get(k) == v for k, v in index.items())]
        if not hits:
            raise ValueError(f"autotune={index!r} matches no config of {name} (configs: {listed})")
        index = hits[0]
    if not isinstance(index, int) or isinstance(index, bool) or not -len(configs) <= index < len(configs):
        raise ValueError(f"autotune={index!r} is not a config index of {name} (0 .. {len(configs) - 1}: {listed})")
    return configs[index]


def _autotune_patch():
    """Autotuner.run under a warpsim driver: a pinned config is the only one run; otherwise every config runs
    once and ties (Triton keeps the first).  Each new choice is logged (logger ``warpsim.triton``) naming the
    config: as a warning when it fell out of the tie, as info when pinned."""
    with _lock:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.driver import driver as _drv

        if getattr(Autotuner.run, "_warpsim_autotune", False):
            return
        orig = Autotuner.run

        def run(self, *args, **kwargs):
            d = _drv.active
            if not isinstance(d, WarpsimDriver) or len(self.configs) < 2:
                return orig(self, *args, **kwargs)
            name = self.base_fn.__name__
            if d.autotune is not None:
                chosen = _pinned(d.autotune, name, self.configs)
                if (name, id(chosen)) not in d.pins_said:              # once per kernel and driver
                    d.pins_said.add((name, id(chosen)))
                    _log.info("warpsim: triton.autotune of %s runs the pinned config %s", name, chosen)
                with _lock:
                    listed, self.configs = self.configs, [chosen]
                    try:
                        return orig(self, *args, **kwargs)
                    finally:
                        self.configs = listed
            known = len(self.cache)
            out = orig(self, *args, **kwargs)
            if len(self.cache) > known:
                _log.warning("warpsim: triton.autotune of %s chose %s: on a simulator all %d configs tie at 0 ms "
                             "and Triton keeps the first listed (pin another with warpsim.triton.device(..., "
                             "autotune=...) or WARPSIM_TRITON_AUTOTUNE)", name, self.best_config, len(self.configs))
            return out

        run.__wrapped__ = orig
        run._warpsim_autotune = True
        Autotuner.run = run


def _current_driver():
    from triton.runtime.driver import driver as _drv

    d = _drv.active
    if not isinstance(d, WarpsimDriver):
        raise RuntimeError("warpsim's Triton launcher was created while another driver is active")
    return d


# ---------------------------------------------------------------------------------------------------------
# switching it on


_stack: list = []


def install(arch="sm_90a", *, device=None, autotune=None):
    """Make warpsim Triton's active driver for the rest of the process (undo with :func:`uninstall`).

    Example:

    >>> import triton
    >>> warpsim.triton.install(arch="sm_80")
    WarpsimDriver(arch='sm_80', device=None)
    >>> triton.runtime.driver.active.get_current_target().arch
    80
    >>> warpsim.triton.uninstall()
    """
    from triton.runtime.driver import driver as _drv

    d = WarpsimDriver(arch, device, autotune=autotune)
    with _lock:
        _stack.append(_drv._active)
        _drv.set_active(d)
    return d


def uninstall():
    """Give Triton back the driver that was active before the last :func:`install` (a no-op when none).

    Example:

    >>> import triton
    >>> drv = warpsim.triton.install(arch="sm_89")
    >>> triton.runtime.driver.active is drv
    True
    >>> warpsim.triton.uninstall()                  # Triton's own driver again (none without a GPU)
    """
    from triton.runtime.driver import driver as _drv

    with _lock:
        if _stack:
            prev = _stack.pop()
            _drv._active = prev


class device(contextlib.ContextDecorator):
    """Run compiled Triton kernels on warpsim: ``with warpsim.triton.device(arch="sm_90a"): kernel[grid](...)``.

    Inside, ``triton.runtime.driver.active`` is a :class:`WarpsimDriver`: ``@triton.jit`` kernels compile
    with Triton's NVIDIA backend for ``arch`` (sm_80, sm_86, sm_89, sm_90a, sm_100a, sm_120a) and their PTX runs in
    :mod:`warpsim.ptx` on CPU torch tensors / numpy arrays, written back in place.  device: the target whose
    GPU runs the code when it is not arch's own; autotune: the ``triton.autotune`` config to run
    (:class:`WarpsimDriver`).  Also a decorator.

    Example (the README runs a kernel through it):

    >>> import triton
    >>> with warpsim.triton.device(arch="sm_90a"):
    ...     type(triton.runtime.driver.active).__name__, triton.runtime.driver.active.get_current_target().arch
    ('WarpsimDriver', 90)
    """

    def __init__(self, arch="sm_90a", device=None, *, max_steps=100_000_000, autotune=None):
        _check_arch(arch)
        self.arch, self.dev, self.max_steps, self.autotune = arch, device, max_steps, autotune
        WarpsimDriver(arch, device, autotune=autotune)          # argument errors at construction, not at entry

    def __enter__(self):
        from triton.runtime.driver import driver as _drv

        d = WarpsimDriver(self.arch, self.dev, self.max_steps, self.autotune)
        with _lock:
            _stack.append(_drv._active)
            _drv.set_active(d)
        return d

    def __exit__(self, *exc):
        uninstall()
        return False
