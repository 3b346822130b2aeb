"""PTX as a kernel writes it: statement parsing, register files that execute it, and whole modules.

* :class:`Warp` -- a 32-lane register file per warp that runs straight-line PTX snippets.
* :func:`load` -- a ``.ptx`` module as nvcc writes it; ``mod.launch(entry, grid, block, args)``
  runs an entry over a grid of CTAs with shared and global memory.
* :class:`warpsim.Warpgroup` (:mod:`warpsim.ptx.warpgroup`) -- 128-thread warpgroups with shared memory;
  the ``wgmma`` rows of the instruction table and their in-flight state, which kernels use too.
* :mod:`warpsim.ptx.instructions` -- the instruction table; :mod:`warpsim.ptx.convert` -- exact
  ``cvt`` numerics; :mod:`warpsim.ptx.wmma` -- ``wmma`` fragment layouts (captured) and statements;
  :mod:`~warpsim.ptx.int_ops`, :mod:`~warpsim.ptx.float_ops`, :mod:`~warpsim.ptx.packed_ops` -- the
  further ALU rows, each with a status in :mod:`warpsim.ptx.alu_rows` (:func:`instruction_status`).
"""

from .regfile import PTXError, Warp
from . import wmma as _wmma  # noqa: F401  (registers the wmma rows of the instruction table)
from . import warpgroup as _warpgroup  # noqa: F401  (registers the wgmma rows)
from . import tmem as _tmem  # noqa: F401  (registers the tcgen05 tensor-memory rows)
from . import atomics as _atomics  # noqa: F401  (registers the atom / red rows)
from . import cluster as _cluster  # noqa: F401  (registers the mbarrier / TMA / cluster rows)
from . import int_ops as _int_ops  # noqa: F401  (integer rows: div/rem, carry chains, prmt modes, ...)
from . import float_ops as _float_ops  # noqa: F401  (f32/f64 rounding modes, div/rcp/sqrt, approx)
from . import packed_ops as _packed_ops  # noqa: F401  (f16/bf16 and f16x2/bf16x2 arithmetic)
from . import sfu_ops as _sfu_ops  # noqa: F401  (the special-function unit: ex2, rcp, rsqrt, sqrt, div, 16-bit ex2/tanh)
from .alu_rows import instruction_status
from .memory import GlobalMemory
from .module import Module, load

__all__ = ["PTXError", "Warp", "load", "Module", "GlobalMemory", "instruction_status"]
