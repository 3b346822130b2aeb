"""CUDA C++ (NVRTC) and numba-cuda kernels from source on warpsim (the ``warpsim[cuda]`` extra)."""
