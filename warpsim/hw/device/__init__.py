"""Scripts that run on the GPU machine during a capture (CuPy, nvcc); never imported by the library."""
