"""Inputs of the PTX capture runs (tests/ptx/data), made again from their seeded scripts.

The three capture-plan scripts beside this module -- ``ptx_caps_cases.py`` (ldmatrix, stmatrix,
movmatrix, cvt, wmma), ``ptx_alu_cases.py`` (integer/float ALU, setp, shfl) and
``ptx_kernel_cases.py`` (the two compiled GEMM kernels) -- write a CUDA file, a launch manifest and
their inputs into the current directory (see ``ptx_capture.md``).  :func:`capture_inputs` runs one
of them in a scratch directory and returns its input arrays, so the committed captures keep only
the GPU's words.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import runpy
import shutil
import sys
import tempfile
import warnings

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = {"caps": ("ptx_caps_cases.py", ["--skip"]), "alu": ("ptx_alu_cases.py", []),
           "kernels": ("ptx_kernel_cases.py", [])}


@functools.lru_cache(maxsize=4)
def _run(script: str) -> dict:
    fname, argv = SCRIPTS[script]
    cwd, old_argv = os.getcwd(), sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(_HERE, "ptx_caps_skip.txt"), os.path.join(tmp, "skip.txt"))
        try:
            os.chdir(tmp)
            sys.argv = [fname, *argv]
            # the plans cast specials on purpose (NaN -> int, overflow to inf): quiet here
            with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                g = runpy.run_path(os.path.join(_HERE, fname), run_name="warpsim_capture_plan")
        finally:
            os.chdir(cwd)
            sys.argv = old_argv
    return {k: np.asarray(v) for k, v in g["IN"].items()}


def capture_inputs(script: str, first: dict | None = None) -> dict:
    """Input arrays of capture plan ``script`` ("caps", "alu" or "kernels"); ``first`` keeps the
    first n values of the named arrays (the committed files keep a prefix of some).  Registered
    with :mod:`warpsim.hw.golden` as ``ptx_capture_inputs``."""
    out = dict(_run(script))
    for k, n in (first or {}).items():
        out[k] = out[k][:n]
    return out
