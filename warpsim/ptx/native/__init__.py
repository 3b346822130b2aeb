"""The PTX-to-native translator: a kernel entry compiled to one numba function (issue 32).

decode (``module._Program``) -> IR of basic blocks of lowered statements (:mod:`.ir`, rows in
:mod:`.lower`) -> passes (translatability, register widths, reconvergence blocks, definite
assignment) -> Python source (:mod:`.codegen`) -> numba ``njit`` (never fastmath), cached in
process and on disk (:mod:`.kernel`).  The runtime it calls is :mod:`.rt`.  The interpreter stays the
reference: ``launch(..., engine="interpret")``.
"""

from __future__ import annotations


class _Binder:
    """What ``_Kernel.bind`` needs to lay out a launch's arguments: map arrays, keep the blob."""

    def __init__(self, prog, memory):
        self.prog, self.memory, self.param_offsets, self.params = prog, _Mapper(memory), {}, b""

    def _set_params(self, blob, offsets):
        self.params, self.param_offsets = blob, offsets


class _Mapper:
    def __init__(self, glob):
        self.glob = glob

    def add_buffer(self, arr):
        return self.glob.map(arr)


def launch_compiled(module, prog, entry, grid, block, cluster, args, shared_bytes, memory, max_steps, bind, arch):
    """Run a launch on the entry's compiled kernel (``bind``: the interpreter's argument binding, so
    both engines lay out parameters and map arrays alike).  Returns None, or why it must go to the
    interpreter instead (nothing has run then): clusters of several CTAs, a host FPU not in its IEEE
    default state, an ``arch`` whose per-launch arguments the kernel cannot take (``ir.launch_values``)."""
    import numpy as np

    from . import kernel
    from .lower import Untranslatable

    ir = module.translation(entry).ir
    if cluster != (1, 1, 1):
        return "clusters of several CTAs are not translated"
    binder = _Binder(prog, memory)
    bind(binder, args)
    if {k: v[0] for k, v in ir.param_offsets.items()} != binder.param_offsets:
        return "the parameter layout differs from the translator's"
    params = np.frombuffer(binder.params, np.uint8) if binder.params else np.zeros(1, np.uint8)
    try:
        values = ir.launch_values(arch)
    except Untranslatable as exc:
        return str(exc)
    n = grid[0] * grid[1] * grid[2]
    if kernel.run(ir, grid, block, shared_bytes, params, memory, 0, n, max_steps, values):
        return None
    return "the host FPU is not in round-to-nearest with subnormals kept"
