"""The PTX-to-native translator: a kernel entry compiled to one numba function (issue 32).

decode (``module._Program``) -> IR of basic blocks of lowered statements (:mod:`.ir`, rows in
:mod:`.lower`) -> passes (translatability, register widths, reconvergence blocks, definite
assignment) -> Python source (:mod:`.codegen`) -> numba ``njit`` (never fastmath), cached in
process and on disk (:mod:`.kernel`).  The runtime it calls is :mod:`.rt`.  The interpreter stays the
reference: ``launch(..., engine="interpret")``.
"""

from __future__ import annotations

import numpy as np


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


def launch_compiled(module, prog, entry, grid, block, cluster, args, shared_bytes, memory, max_steps, bind, arch,
                    workers=1, client=None, progress=False, remote=None, explicit=False):
    """Run a launch on the entry's compiled kernel (``bind``: the interpreter's argument binding, so
    both engines lay out parameters and map arrays alike).  Returns None, or why it must go to the
    interpreter instead (nothing has run then): a host FPU not in its IEEE default state, an ``arch`` whose per-launch arguments the kernel cannot take (``ir.launch_values``).

    The kernel runs a cluster's CTAs together (``cluster``; one CTA a run without clusters).  workers > 1
    or a dask ``client``: contiguous runs of the grid's clusters run side by side -- threads
    of this process (the kernel releases the GIL) or tasks on the cluster -- each on its own copy of
    global memory, recording what it read and wrote; their writes are merged in CTA order when no
    run read what another wrote (:func:`warpsim.ptx.workers.merge`), which is the sequential
    launch's result; otherwise, or when a run stopped, the launch runs sequentially.  remote: the function a
    dask task runs (``module._compiled_batch``: it rebuilds the module from its text on the worker); explicit:
    whether the launch named its cluster (%is_explicit_cluster)."""
    from . import kernel
    from .lower import Untranslatable

    from ..simt import map_module_variables

    ir = module.translation(entry).ir
    where = map_module_variables(module, memory)        # as the interpreter does, before the arguments
    gsym = [where[name] for name in ir.module_variables]
    binder = _Binder(prog, memory)
    bind(binder, args)
    if {k: v[0] for k, v in ir.param_offsets.items()} != binder.param_offsets:
        return "the parameter layout differs from the translator's"
    params = np.frombuffer(binder.params, np.uint8) if binder.params else np.zeros(1, np.uint8)
    try:
        values = ir.launch_values(arch, explicit)
    except Untranslatable as exc:
        return str(exc)
    n = grid[0] * grid[1] * grid[2] // (cluster[0] * cluster[1] * cluster[2])       # clusters (CTAs without)
    geom = (grid, block, shared_bytes, max_steps, arch, cluster, gsym, explicit)
    if n > 1 and not prog.cross_cta and (workers > 1 or client is not None):
        from ..workers import aliased

        if not aliased(memory.buffers) and _side_by_side(module, entry, ir, geom, params, memory, values, n, workers,
                                                         client, progress, remote):
            return None
    if kernel.run(ir, grid, block, shared_bytes, params, memory, 0, n, max_steps, values, cluster, gsym):
        return None
    return "the host FPU is not in round-to-nearest with subnormals kept"


_POOL = []     # [ThreadPoolExecutor]: the threads side-by-side runs use, started once and reused


def _threads(n):
    """A pool of at least ``n`` threads (a new one when the last was smaller)."""
    from concurrent.futures import ThreadPoolExecutor

    if not _POOL or _POOL[0]._max_workers < n:
        if _POOL:
            _POOL.pop().shutdown(wait=False)
        _POOL.append(ThreadPoolExecutor(max(n, 1), thread_name_prefix="warpsim-cta"))
    return _POOL[0]


def _side_by_side(module, entry, ir, geom, params, memory, values, n, workers, client, progress, remote):
    """The grid's CTAs in contiguous runs on threads (``workers``) or dask tasks (``client``), merged
    into ``memory`` as the sequential launch would leave it; False (memory untouched) when it cannot be."""
    from .. import workers as _w
    from . import kernel

    grid, block, shared_bytes, max_steps, arch, cluster, gsym, _ = geom
    bases = list(memory.bases)
    if client is not None:
        runs = _w.split(range(n), 4 * sum(client.ncores().values()))
        heads = [(module.text, (module.name, module.fmad), entry, geom, (r[0], len(r))) for r in runs]
        return _w.run_dask(client, remote, heads, (params, bases, [np.array(b) for b in memory.buffers]),
                           memory.buffers, progress)
    runs = _w.split(range(n), workers)
    sizes = [b.size for b in memory.buffers]
    flat = np.concatenate(memory.buffers) if memory.buffers else np.zeros(0, np.uint8)    # also the backup
    copies, jobs = [], []
    for i, r in enumerate(runs):    # the first run writes the launch's arrays, each other one its own copy
        datas = memory.buffers
        if i:
            copies.append(flat.copy())
            datas = np.split(copies[-1], np.cumsum(sizes)[:-1]) if sizes else []
        toff, job = kernel.tracked_job(ir, grid, block, shared_bytes, params, bases, datas, r[0], len(r), max_steps,
                                       values, cluster, gsym)
        jobs.append(job)
    backup = np.split(flat, np.cumsum(sizes)[:-1]) if sizes else []
    futures = [_threads(len(jobs) - 1).submit(job) for job in jobs[1:]]
    try:
        tracks = [jobs[0]()] + [f.result() for f in futures]       # this thread runs the first run
    except BaseException:           # an interrupt: the launch's arrays as they were
        tracks = [None]
        raise
    finally:
        merged = kernel.merge_tracks(tracks, copies, toff, memory.buffers, backup)
    kernel.LAUNCHES[0] += merged        # a launch that runs sequentially after all counts there
    return merged
