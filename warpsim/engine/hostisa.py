"""The host's vector ISA, and the one numba generates code for.

Speed figures only compare between runs on the same kind of vector unit: the fast kernels are
LLVM vector code, and a packed operation that AVX-512 has in one instruction (float64 <-> int64
conversions, 64-bit multiplies, mask registers) may take one instruction per lane on an AVX2 host.
``warpsim bench`` records :func:`describe` with every run.  ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` make numba generate code for another CPU than the host (e.g. ``haswell``
with the host's features less every ``avx512*`` one: AVX2 code on an AVX-512 host); numba keys its
on-disk cache by that CPU name and feature string, so the two builds never share a cache slot.
"""

from __future__ import annotations

import os
import platform


def _parse(features: str) -> set:
    """The enabled names of an LLVM feature string ("+avx2,-avx512f,...")."""
    return {f[1:] for f in features.split(",") if f.startswith("+")}


def host_features() -> set:
    """The LLVM features of the CPU this process runs on."""
    from llvmlite import binding

    return {k for k, v in binding.get_host_cpu_features().items() if v}


def codegen_cpu() -> tuple:
    """(CPU name, enabled features) numba's CPU target compiles for."""
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    try:
        return codegen._get_host_cpu_name(), _parse(codegen._get_host_cpu_features())
    except AttributeError:        # a numba without these hooks: it compiles for the host
        from llvmlite import binding

        return binding.get_host_cpu_name(), host_features()


def vector_isa(features: set) -> str:
    """The widest x86 / Arm vector ISA a feature set gives: "AVX-512", "AVX2", "AVX", "SSE4.2", "SVE",
    "NEON", or "scalar"."""
    if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= features:
        return "AVX-512"
    for name, feature in (("AVX2", "avx2"), ("AVX", "avx"), ("SSE4.2", "sse4.2"), ("SVE", "sve"),
                          ("NEON", "neon")):
        if feature in features:
            return name
    return "scalar"


def cpu_model() -> str:
    """The CPU's marketing name (Linux: /proc/cpuinfo), else what the platform module says."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def packed_int64_conversions() -> bool:
    """Whether the code numba generates has packed float64 <-> int64 conversions (AVX-512DQ)."""
    return "avx512dq" in codegen_cpu()[1]


def has_avx512_registers() -> bool:
    """Whether the code numba generates has AVX-512's 32 vector registers of 512 bits (one holds an
    <8 x double>; AVX2's 16 ymm registers take two each)."""
    return "avx512f" in codegen_cpu()[1]


def describe() -> dict:
    """What a benchmark run records about the vector unit: the CPU model, the host's ISA, the CPU and
    ISA numba compiles for, and the environment variables that chose them."""
    host = host_features()
    name, feats = codegen_cpu()
    from llvmlite import binding

    return {"cpu_model": cpu_model(), "host_cpu": binding.get_host_cpu_name(), "host_isa": vector_isa(host),
            "codegen_cpu": name,
            "codegen_isa": vector_isa(feats), "packed_int64_conversions": "avx512dq" in feats,
            "numba_cpu_name": os.environ.get("NUMBA_CPU_NAME"),
            "numba_cpu_features_set": "NUMBA_CPU_FEATURES" in os.environ}


#: the AVX-512 feature names LLVM knows (those --codegen avx2 turns off)
_AVX512_PREFIXES = ("avx512", "avx10", "amx", "evex512")


def avx2_environment() -> dict:
    """NUMBA_CPU_NAME / NUMBA_CPU_FEATURES that make numba generate AVX2 code (haswell's ISA) on
    this host: its own features less every AVX-512 / AMX one.  Refused on a host without AVX2."""
    from llvmlite import binding

    feats = binding.get_host_cpu_features()
    if not feats.get("avx2"):
        raise ValueError(f"this host ({vector_isa(host_features())}) has no AVX2: AVX2 code cannot run here")
    flags = [("-" if (k.startswith(_AVX512_PREFIXES) or not v) else "+") + k for k, v in sorted(feats.items())]
    return {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ",".join(flags)}
