"""Triton on warpsim: the exact interpreter (``exact``: ``tl.dot`` as the compiled kernel computes it,
everything else numpy's) and the driver (``device``: the kernel Triton compiles, run as PTX, every word).

Needs the optional extra ``warpsim[triton]`` (triton and a CPU torch).  See docs/triton.md.
``TARGETS`` maps each Triton target the exact interpreter models to its compute capability:

>>> warpsim.triton.TARGETS
{'sm_80': 80, 'sm_86': 86, 'sm_89': 89, 'sm_90a': 90, 'sm_120': 120}
"""

from .interpreter import (PATHS, TARGETS, Lowering, _as_operand, _fma_chain, _fma_f32, _rna_tf32, compute,
                          disable, enable, exact, lowering, record, recorded)
from .driver import KernelLaunchError, WarpsimDriver, device, install, uninstall

__all__ = ["exact", "enable", "disable", "lowering", "Lowering", "TARGETS", "recorded", "record", "KernelLaunchError",
           "device", "install", "uninstall", "WarpsimDriver"]
