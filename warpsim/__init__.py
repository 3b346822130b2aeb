"""warpsim: NVIDIA tensor-core instructions on a CPU, bit for bit as an H100 computes them.

The public surface: :func:`mma` (warp-level ``mma``/``mma.sp`` on register words) and
:func:`wgmma` (Hopper's warpgroup ``wgmma.mma_async``, dense and sparse, with shared memory and
descriptors), :func:`tcgen05_mma` (sm_100a ``tcgen05.mma`` on tensor memory; modelled), :func:`matmul` (matrices through either), :func:`gemm` (whole GEMMs as a kernel's
main loop computes them), :func:`parse` and the catalog, the fragment helpers
:func:`fragment_map`, :func:`pack` and :func:`unpack`, :func:`compress` / :func:`expand`,
:func:`explain`, the register files :class:`Warp` and :class:`Warpgroup`, and
:mod:`warpsim.ptx` (``warpsim.ptx.load(...).launch(...)`` runs a kernel's own PTX).
:mod:`warpsim.triton` runs Triton kernels and :mod:`warpsim.cuda` CUDA C++ and numba-cuda sources.

The examples in this reference assume ``import numpy as np, warpsim``.  ``CATALOG`` is every
warp-level ``mma`` / ``mma.sp`` opcode of every modelled target, one :class:`Instruction` each:

>>> len(warpsim.CATALOG), warpsim.CATALOG[0].opcode
(474, 'mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16')
>>> sum(not i.targets for i in warpsim.CATALOG)      # the sm_90 catalog (the rest: sm_120a's own forms)
182
>>> warpsim.__version__
'0.1.0'
"""

from .engine import jitcache as _jitcache

_jitcache.install()      # before any kernel is decorated: the package's numba cache keyed by its sources

from .api.mma import mma
from .api.wgmma import wgmma
from .api.tcgen05 import tcgen05_mma
from .isa.catalog import CATALOG, Instruction, entries
from .isa.layouts import fragment_map, pack, unpack
from .isa.parse import parse
from .api.matmul import matmul
from .api.gemm import gemm
from .ptx.regfile import PTXError, Warp
from .ptx.warpgroup import Warpgroup
from .api.sparse import compress, expand
from .api.explain import explain

__version__ = "0.1.0"

__all__ = ["mma", "wgmma", "parse", "pack", "unpack", "fragment_map", "CATALOG", "Instruction", "entries", "__version__",
           "matmul", "gemm", "tcgen05_mma", "Warp", "Warpgroup", "PTXError", "compress", "expand", "explain"]
