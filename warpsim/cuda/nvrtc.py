"""CUDA C++ to PTX with NVRTC (the ``nvidia-cuda-nvrtc`` wheel through ``cuda-bindings``).

NVRTC compiles device code only and, unlike nvcc, includes nothing implicitly: this module adds
the CUDA headers of the ``nvidia-cuda-runtime`` / ``nvidia-cuda-cccl`` wheels to the include path,
translates nvcc's spellings of the options NVRTC shares, and gives NVRTC small stand-ins for the
host headers a ``.cu`` file commonly includes (``<math.h>`` for ``INFINITY``, ``<cstdio>``, ...)
so that a file nvcc builds builds here too.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from ._extra import INSTALL, require

__all__ = ["CompileError", "compile_to_ptx", "nvrtc_version", "include_dirs"]


class CompileError(RuntimeError):
    """NVRTC refused the source; the message holds its log (file, line, error).

    Example:

    >>> import warpsim.cuda as wc
    >>> try:
    ...     wc.RawModule(code='extern "C" __global__ void k() { nope(); }').get_function("k")
    ... except wc.CompileError as err:
    ...     print(str(err).splitlines()[1])
    kernel.cu(1): error: identifier "nope" is undefined
    """

    def __init__(self, log: str, options):
        self.log = log
        self.options = list(options)
        super().__init__(f"NVRTC could not compile the source (options: {' '.join(self.options) or 'none'}):\n"
                         f"{log.strip()}")


# What nvcc's implicit ``cuda_runtime.h`` (and the host C library behind it) makes visible and
# NVRTC does not: the C99 float macros and the usual math constants.
_MATH = """#pragma once
#ifndef INFINITY
#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#endif
#ifndef NAN
#define NAN __builtin_bit_cast(float, 0x7fc00000u)   /* the words nvcc 13 writes for glibc's macros */
#endif
#ifndef HUGE_VALF
#define HUGE_VALF __builtin_bit_cast(float, 0x7f800000u)
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ull)
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
"""
_FLOAT = """#pragma once
#ifndef FLT_MAX
#define FLT_MAX 3.40282347e+38F
#define FLT_MIN 1.17549435e-38F
#define FLT_EPSILON 1.19209290e-07F
#define FLT_MANT_DIG 24
#define DBL_MAX 1.7976931348623157e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#define DBL_MANT_DIG 53
#endif
"""
_LIMITS = """#pragma once
#ifndef INT_MAX
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#endif
"""
_EMPTY = "#pragma once\n"
_STDINT = "#pragma once\n#include <cuda/std/cstdint>\n"
_STDDEF = "#pragma once\n#include <cuda/std/cstddef>\n"
_ASSERT = "#pragma once\n#ifndef assert\n#define assert(e) ((void)0)\n#endif\n"
#: host headers a .cu file includes, as NVRTC sees them: what their device-side use needs
HOST_HEADERS = {
    "math.h": _MATH, "cmath": _MATH, "float.h": _FLOAT, "cfloat": _FLOAT, "limits.h": _LIMITS,
    "climits": _LIMITS, "stdio.h": _EMPTY, "cstdio": _EMPTY, "stdlib.h": _EMPTY, "cstdlib": _EMPTY,
    "assert.h": _ASSERT, "cassert": _ASSERT, "stdint.h": _STDINT, "cstdint": _STDINT,
    "stddef.h": _STDDEF, "cstddef": _STDDEF, "cuda_runtime.h": _MATH, "cuda_runtime_api.h": _EMPTY,
    "cuda.h": _EMPTY, "device_launch_parameters.h": _EMPTY,
}

_ARCH = re.compile(r"(?:sm|compute)_(\d+)([af]?)\Z")


def _out_buffer(size):
    """A fresh bytes object NVRTC writes into.  Never shorter than 2 bytes: CPython shares every 0- and
    1-byte bytes object (``b" " * 1`` is the interpreter's own ``b" "``), and NVRTC writing an empty log's
    NUL into it turned every later ``b" "`` into ``b"\\x00"`` process-wide."""
    return b" " * max(int(size), 2)


def include_dirs() -> list[str]:
    """The CUDA header folders of the installed wheels (CUDA 13 layout first, then CUDA 12's)."""
    found = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/include", "cu13/include/cccl", "cuda_runtime/include", "cuda_cccl/include",
                    "cuda_nvrtc/include"):
            p = Path(root) / sub
            if p.is_dir() and str(p) not in found:
                found.append(str(p))
    return found


def nvrtc_version() -> tuple[int, int]:
    nvrtc = require("cuda.bindings.nvrtc")
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return int(major), int(minor)


def _check(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise RuntimeError(f"{what} failed: {msg.decode() if isinstance(msg, bytes) else msg}")


def translate_options(arch: str, options) -> list[str]:
    """nvcc-style options -> NVRTC's.  Accepted: -D/-U NAME[=V], -I DIR, -std=c++NN, --use_fast_math,
    -O0..-O3 (NVRTC always optimises; -O is accepted and ignored), -lineinfo, -G, --ftz/--prec-div/
    --prec-sqrt/--fmad=true|false, --extra-device-vectorization, -maxrregcount, --restrict,
    -default-device, -rdc, -dopt; anything starting with '--' that NVRTC knows passes through."""
    if isinstance(options, str):
        options = options.split()
    m = _ARCH.match(arch) if isinstance(arch, str) else None
    if not m:
        raise ValueError(f"arch must be an sm_XY[a|f] or compute_XY[a|f] name such as 'sm_90a', got {arch!r}")
    out = [f"--gpu-architecture=compute_{m.group(1)}{m.group(2)}"]
    opts = list(options)
    i = 0
    while i < len(opts):
        o = opts[i]
        if not isinstance(o, str):
            raise TypeError(f"options must be strings, got {o!r}")
        nxt = opts[i + 1] if i + 1 < len(opts) else None
        if o in ("-D", "-U", "-I", "--define-macro", "--undefine-macro", "--include-path", "-maxrregcount",
                 "--maxrregcount"):
            if nxt is None:
                raise ValueError(f"option {o} needs a value")
            short = {"--define-macro": "-D", "--undefine-macro": "-U", "--include-path": "-I",
                     "-maxrregcount": "--maxrregcount"}.get(o, o)
            out.append(f"{short}{nxt}" if short in ("-D", "-U", "-I") else f"{short}={nxt}")
            i += 2
            continue
        if o.startswith(("-D", "-U", "-I")) and len(o) > 2:
            out.append(o)
        elif re.fullmatch(r"-O[0-3]", o):
            pass                                    # NVRTC always optimises device code
        elif o in ("--use_fast_math", "-use_fast_math", "--use-fast-math"):
            out.append("--use_fast_math")
        elif o.startswith(("-std=", "--std=")):
            out.append("--std=" + o.split("=", 1)[1])
        elif o in ("-G", "--device-debug"):
            out.append("--device-debug")
        elif o in ("-lineinfo", "--generate-line-info"):
            out.append("--generate-line-info")
        elif o in ("-rdc=true", "--relocatable-device-code=true", "-dc"):
            out.append("--relocatable-device-code=true")
        elif o.startswith(("-arch", "--gpu-architecture", "-gencode", "-code")):
            raise ValueError(f"option {o!r}: pass the architecture as arch= (e.g. arch='sm_90a'), not as an option")
        elif o.startswith("--") or o.startswith("-maxrregcount="):
            out.append(o if not o.startswith("-maxrregcount=") else "-" + o)
        else:
            raise ValueError(f"unknown option {o!r}: use nvcc spellings such as -DNAME=1, -I dir, -std=c++17, "
                             "--use_fast_math, -lineinfo, or an NVRTC '--' option")
        i += 1
    return out


def compile_to_ptx(code: str, *, arch: str = "sm_90a", options=(), name_expressions=(), name: str = "kernel.cu",
                   headers: dict | None = None, implicit_includes: bool = True):
    """Compile CUDA C++ ``code`` -> (PTX text, {name expression: lowered name}, NVRTC's log)."""
    nvrtc = require("cuda.bindings.nvrtc")
    if not isinstance(code, str) or not code.strip():
        raise ValueError("code must be CUDA C++ source text (a non-empty string)")
    opts = translate_options(arch, options)
    try:
        nvrtc_version()
    except Exception as exc:        # cuda-bindings present, the NVRTC library (nvidia-cuda-nvrtc) not
        raise ImportError(f"NVRTC cannot be loaded ({exc}); it comes with the 'cuda' extra: {INSTALL}") from None
    dirs = include_dirs()
    if implicit_includes:
        opts += [f"-I{d}" for d in dirs]
        # nvcc includes cuda_runtime.h (and through it the math library's macros) before the source
        opts += ["--pre-include=math.h"]
    if not any(o.startswith("--std=") for o in opts):
        opts.append("--std=c++17")
    hdrs = dict(HOST_HEADERS) if implicit_includes else {}
    hdrs.update(headers or {})
    names = [k.encode() for k in hdrs]
    bodies = [v.encode() for v in hdrs.values()]
    err, prog = nvrtc.nvrtcCreateProgram(code.encode(), name.encode(), len(names), bodies, names)
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        exprs = [e for e in name_expressions]
        for e in exprs:
            if not isinstance(e, str):
                raise TypeError(f"name_expressions must be strings such as 'my_kernel<float, 4>', got {e!r}")
            _check(nvrtc, nvrtc.nvrtcAddNameExpression(prog, e.encode())[0], "nvrtcAddNameExpression")
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = _out_buffer(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = log.rstrip(b"\0 ").decode(errors="replace")
        if cerr != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            if implicit_includes and not dirs:
                log += f"\n(no CUDA headers were found: the 'cuda' extra installs them: {INSTALL})"
            raise CompileError(log, [o for o in opts if not o.startswith("-I" + os.sep)])
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize")
        buf = _out_buffer(size)
        _check(nvrtc, nvrtc.nvrtcGetPTX(prog, buf)[0], "nvrtcGetPTX")
        lowered = {}
        for e in exprs:
            err, low = nvrtc.nvrtcGetLoweredName(prog, e.encode())
            _check(nvrtc, err, f"nvrtcGetLoweredName({e!r})")
            lowered[e] = low.decode() if isinstance(low, bytes) else low
        return buf.rstrip(b"\0").decode(), lowered, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
