"""warpsim: NVIDIA warp-level ``mma`` / ``mma.sp`` on a CPU, bit for bit as an H100 computes them.

The public surface is small: :func:`mma` (register words in, register words
out), :func:`parse` (an opcode's catalog entry), the fragment helpers
:func:`fragment_map`, :func:`pack` and :func:`unpack`, and the catalog itself.
"""

from ._api import mma
from ._wgmma import wgmma
from .isa.catalog import CATALOG, Instruction, entries
from .isa.layouts import fragment_map, pack, unpack
from .isa.parse import parse
from ._matmul import matmul
from ._gemm import gemm
from .ptx.regfile import PTXError, Warp
from .ptx.warpgroup import Warpgroup
from ._sparse_helpers import compress, expand
from ._diagnose import explain

__version__ = "0.1.0"

__all__ = ["mma", "wgmma", "parse", "pack", "unpack", "fragment_map", "CATALOG", "Instruction", "entries", "__version__",
           "matmul", "gemm", "Warp", "Warpgroup", "PTXError", "compress", "expand", "explain"]
