"""Module-level PTX: load a ``.ptx`` file as nvcc writes it and launch an entry over a grid of CTAs.

>>> mod = warpsim.ptx.load("kernel.ptx")                        # doctest: +SKIP
>>> mod.launch("gemm", grid=(2, 2), block=128, args=[A, B, C, 64, 64, 32])   # doctest: +SKIP

Every CTA of the grid runs at once, in lockstep, vectorised over all their warps: a statement
executes for every lane of the warps at its program counter.  Warps follow their own control
flow (a branch must be uniform across the 32 lanes of a warp, not across the CTA); the warps
with the lowest program counter run first, which reconverges structured code, and ``bar.sync``
holds a warp until every warp of its CTA has arrived.

Three layers: :mod:`~warpsim.ptx.program` decodes an entry once (layout, calls, reconvergence
points), :mod:`~warpsim.ptx.simt` is the SIMT core that runs a batch of CTAs, and this module
loads, links and launches (geometry, parameters, CTA batches, worker processes, dask).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from .memory import GlobalMemory
from .program import _Program
from .simt import _Kernel
from .syntax import PTXError, parse_module

__all__ = ["load", "Module"]

#: default launch limits: CTAs in one grid, and CTAs run together in one batch
MAX_CTAS = 1 << 16
CTAS_PER_BATCH = 128
#: batches of CTAs per dask task (launch(..., client=)): enough work per task to pay its scheduling
DASK_BATCHES_PER_TASK = 2



def load(path_or_text, *, fmad=True) -> "Module":
    """Read a PTX module: a path to a ``.ptx`` file (str or Path) or the PTX text itself.

    fmad: whether ptxas contracts (``--fmad``, its default; Triton's ``enable_fp_fusion``): a multiply or
    division into the add / sub reading it, one rounding (:mod:`warpsim.ptx.contraction`).

    Example:

    >>> mod = warpsim.ptx.load('''.version 8.0
    ... .target sm_90
    ... .address_size 64
    ... .visible .entry add1(.param .u64 p)
    ... {
    ...     .reg .b32 %r<3>;  .reg .b64 %rd<4>;
    ...     ld.param.u64 %rd1, [p];  mov.u32 %r1, %tid.x;  mul.wide.u32 %rd2, %r1, 4;  add.s64 %rd3, %rd1, %rd2;
    ...     ld.global.u32 %r2, [%rd3];  add.u32 %r2, %r2, 1;  st.global.u32 [%rd3], %r2;  ret;
    ... }''')
    >>> x = np.arange(32, dtype=np.uint32)
    >>> mod.launch("add1", grid=1, block=32, args=[x])
    >>> x[:4]
    array([1, 2, 3, 4], dtype=uint32)
    """
    if isinstance(path_or_text, str) and not path_or_text.strip():
        raise ValueError("load() got an empty string: pass PTX text (a module with .version, .target and "
                         "entries) or a path to a .ptx file")
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text
                                          and not path_or_text.lstrip().startswith(".")
                                          and not any(c in path_or_text for c in ";{}")):
        p = Path(path_or_text)
        try:
            exists = p.exists()
        except OSError as exc:        # e.g. a name too long for the file system
            raise ValueError(f"{str(p)[:60]!r}...: neither PTX text nor a readable path ({exc.strerror})") from None
        if not exists:
            raise FileNotFoundError(f"no PTX file {str(p)!r} (pass a path to a .ptx file or the PTX text)")
        if not p.is_file():
            raise ValueError(f"{str(p)!r} is not a file (pass a path to a .ptx file or the PTX text)")
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read PTX file {str(p)!r}: {exc}") from None
        return Module(text, name=str(p), fmad=fmad)
    if not isinstance(path_or_text, str):
        raise TypeError(f"load() takes a path or PTX text, not {type(path_or_text).__name__}")
    return Module(path_or_text, fmad=fmad)


class Module:
    """A loaded PTX module: its entries, ready to launch.

    Example:

    >>> mod = warpsim.ptx.load('''.version 8.0
    ... .target sm_90
    ... .address_size 64
    ... .visible .entry k(.param .u32 n)
    ... {
    ...     ret;
    ... }''')
    >>> mod.entries, mod.params("k"), mod.target
    (['k'], [('n', 'u32')], 'sm_90')
    >>> mod.launch("k", grid=(2, 1, 1), block=32, args=[7])
    """

    def __init__(self, text: str, name: str = "<ptx>", *, fmad: bool = True):
        self.name = name
        self.text = text
        self.fmad = bool(fmad)
        self._mod = parse_module(text)
        self.version = self._mod.version
        self.target = self._mod.target
        self._programs = {}
        self._translations = {}
        #: the engine of the last launch: {"entry", "requested", "engine", "reason"} (None before one)
        self.last_engine = None

    def __repr__(self):
        return f"Module({self.name!r}, target={self.target!r}, entries={self.entries})"

    @property
    def entries(self) -> list[str]:
        return list(self._mod.entries)

    def params(self, entry):
        """The kernel parameters of ``entry``: a list of (name, PTX type)."""
        return [(p.name, p.type) for p in self._entry(entry).params]

    def _entry(self, entry):
        if entry not in self._mod.entries:
            raise ValueError(f"no entry {entry!r} in {self.name}; entries: {self.entries}")
        return self._mod.entries[entry]

    def program(self, entry):
        if entry not in self._programs:
            self._programs[entry] = _Program(self._entry(entry), self._mod, fmad=self.fmad)
        return self._programs[entry]

    def translation(self, entry):
        """What the native translator makes of ``entry`` (:class:`warpsim.ptx.translate.Translation`:
        native or not, the reason, the statement classes)."""
        if entry not in self._translations:
            from .translate import translate

            self._translations[entry] = translate(self.program(entry))
        return self._translations[entry]

    def _choose_engine(self, entry, engine, threads):
        """The engine that runs this launch (``threads`` a run: the block's times the cluster's CTAs), recorded in
        ``last_engine`` (warn when "compiled" cannot)."""
        if engine is None:
            engine = os.environ.get("WARPSIM_PTX_ENGINE") or None
            from .translate import check_engine

            check_engine(engine)
        tr = self.translation(entry) if engine != "interpret" else None
        if tr is not None and tr.native and (engine == "compiled" or tr.ready(threads)):
            self.last_engine = {"entry": entry, "requested": engine, "engine": "compiled", "reason": None}
            return "compiled"
        reason = "asked for" if engine == "interpret" else tr.reason or (
            f"{entry}: translates, but its compiled kernel is not built yet for {threads} threads a run (engine='compiled' "
            "builds it, once per host and launch shape: its first compile takes seconds to minutes; then engine=None "
            "uses it)")
        self._fall_back(entry, engine, reason)
        return "interpret"

    def _fall_back(self, entry, engine, reason):
        """The interpreter runs this launch: record why (and warn when "compiled" was asked for)."""
        if engine == "compiled":
            import warnings

            from .translate import TranslationFallbackWarning

            warnings.warn(f"engine='compiled': running on the interpreter: {reason}", TranslationFallbackWarning,
                          stacklevel=4)
        self.last_engine = {"entry": entry, "requested": engine, "engine": "interpret", "reason": reason}

    def link(self, *others) -> "Module":
        """Resolve this module's ``.extern .func`` declarations with other modules' definitions, as
        nvJitLink links separately compiled PTX (numba-cuda's C++ shims, for one): their ``.func``
        bodies and module variables join this module.  others: PTX texts or Modules.  Returns self."""
        for other in others:
            if isinstance(other, str):
                other = Module(other, name="<linked ptx>", fmad=self.fmad)
            if not isinstance(other, Module):
                raise TypeError(f"link() takes PTX texts or warpsim.ptx Modules, not {type(other).__name__}")
            theirs = other._mod
            for name, fn in theirs.functions.items():
                mine = self._mod.functions.get(name)
                if mine is not None and mine.body != fn.body:
                    raise PTXError(f"{name} is defined in {self.name} and, differently, in {other.name}: cannot link")
                self._mod.functions[name] = fn
            self._mod.declared |= theirs.declared
            have = {v.name for v in self._mod.variables}
            self._mod.variables += [v for v in theirs.variables if v.name not in have]
            self._mod.shared += theirs.shared
            self.text = f"{self.text}\n{other.text}"      # what a worker process re-reads: the linked whole
        self._programs = {}
        self._translations = {}
        return self

    @property
    def variables(self) -> dict:
        """Module-level .global / .const variables: name -> their bytes as initialised."""
        return {v.name: v.data for v in self._mod.variables}

    def launch(self, entry, grid, block, args, shared_bytes=0, *, memory=None, arch="sm_90",
               max_steps=10_000_000, cluster=None, max_ctas=MAX_CTAS, ctas_per_batch=CTAS_PER_BATCH,
               progress=None, wgmma_strict=False, workers=None, client=None, engine=None):
        """Run ``entry`` over ``grid`` CTAs of ``block`` threads.

        grid, block: int or 1- to 3-tuples.  args: the kernel arguments in ``.param`` order --
        numpy arrays for pointer parameters (mapped into global memory in place: the kernel's
        stores land in them), ints (device addresses in ``memory`` included) and floats for
        scalars, and ``bytes`` for ``.b8`` array parameters (a parameter struct, passed verbatim,
        device pointers included).  shared_bytes: dynamic shared memory (``.extern .shared``)
        per CTA.  memory: a :class:`GlobalMemory` the kernel addresses (a new one if None); the
        module's ``.global``/``.const`` variables are mapped into it on first use.  max_steps:
        statements executed per batch of CTAs (one per group of warps at a program counter)
        before the launch stops with an error naming where it was.  cluster: CTAs per cluster, an
        int or 1- to 3-tuple dividing the grid (default: the entry's ``.reqnctapercluster``, else
        1); the CTAs of a cluster share their shared memory (``mapa``, ``.shared::cluster``).  The
        grid runs in batches of ``ctas_per_batch`` CTAs (bounded memory; CTAs of different batches
        never run at the same time, as on a GPU too small to hold the grid; a launch with clusters
        of more than one CTA runs as one batch); a grid of more than ``max_ctas`` CTAs is refused
        (raise the limit to run it).  progress: print a batch counter to stderr (default: when
        there is more than one batch and stderr is a terminal) and, on the compiled engine, a line
        while the kernel is compiled on its first launch on this host (default: when stderr is a
        terminal).  wgmma_strict: a read of an in-flight wgmma's accumulator registers is an error
        (the PTX ISA leaves it undefined) instead of what ptxas makes of it, a wait for that wgmma
        with a ``WgmmaSerializedWarning``.
        workers: processes that run the batches of a grid of several batches side by side (None:
        ``WARPSIM_PTX_WORKERS``, else the idle CPUs; 1: none); the result is the sequential launch's,
        word for word, or the launch runs sequentially (:mod:`warpsim.ptx.workers`).  client: a
        ``dask.distributed.Client``: the batches run on its cluster (a few batches a task, at most
        twice its threads in flight, writes merged in batch order as tasks finish), with the same
        words and the same sequential fallback (``workers.run_dask``; progress: a task counter).
        engine: None (the compiled kernel when the entry translates, else the interpreter), "interpret"
        (the reference) or "compiled" (native code from :mod:`warpsim.ptx.native`; a kernel that does
        not translate runs on the interpreter with a ``TranslationFallbackWarning`` naming why:
        :mod:`warpsim.ptx.translate`; there ``workers`` are threads of this process, each running a
        contiguous run of CTAs, and ``client``'s tasks are such runs, merged by the same rule).
        ``last_engine`` records which engine ran and why.  Returns nothing.
        """
        from .translate import check_engine

        check_engine(engine)
        prog = self.program(entry)
        g = _dims(grid, "grid")
        b = _dims(block, "block")
        nthreads = b[0] * b[1] * b[2]
        if nthreads % 32:
            raise ValueError(f"block {b} has {nthreads} threads: warpsim runs whole warps, so the thread count "
                             "must be a multiple of 32")
        if nthreads > 1024:
            raise ValueError(f"block {b} has {nthreads} threads; a CTA has at most 1024")
        dirs = prog.entry.directives
        if "reqntid" in dirs and tuple(dirs["reqntid"]) + (1,) * (3 - len(dirs["reqntid"])) != b:
            raise ValueError(f"{entry} declares .reqntid {', '.join(map(str, dirs['reqntid']))}: block must be that, "
                             f"got {b}")
        if "maxntid" in dirs and nthreads > int(np.prod(dirs["maxntid"])):
            raise ValueError(f"{entry} declares .maxntid {', '.join(map(str, dirs['maxntid']))}: at most "
                             f"{int(np.prod(dirs['maxntid']))} threads per block, got {nthreads}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
            raise ValueError(f"shared_bytes must be a non-negative integer, got {shared_bytes!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        for name, v in (("max_ctas", max_ctas), ("ctas_per_batch", ctas_per_batch)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        nctas = g[0] * g[1] * g[2]
        if nctas > max_ctas:
            raise ValueError(f"grid {g} has {nctas} CTAs, more than max_ctas={max_ctas}: pass a larger max_ctas= "
                             f"to run it (CTAs run in batches of ctas_per_batch={ctas_per_batch}; time grows with "
                             "the grid)")
        if memory is None:
            memory = GlobalMemory()
        elif not isinstance(memory, GlobalMemory):
            raise TypeError(f"memory must be a warpsim.ptx.GlobalMemory, not {type(memory).__name__}")
        want = tuple(dirs["reqnctapercluster"]) + (1,) * (3 - len(dirs["reqnctapercluster"])) \
            if "reqnctapercluster" in dirs else None
        cl = _dims(cluster, "cluster") if cluster is not None else (want or (1, 1, 1))
        if want is not None and cl != want:
            raise ValueError(f"{entry} declares .reqnctapercluster {', '.join(map(str, want))}: cluster must be that, "
                             f"got {cl}")
        if any(gi % ci for gi, ci in zip(g, cl)):
            raise ValueError(f"cluster {cl} must divide the grid {g} in every dimension")
        if cl[0] * cl[1] * cl[2] > 16:
            raise ValueError(f"cluster {cl} has {cl[0] * cl[1] * cl[2]} CTAs; at most 16 (8 portable) are allowed")
        if "maxclusterrank" in dirs and cl[0] * cl[1] * cl[2] > int(dirs["maxclusterrank"][0]):
            raise ValueError(f"{entry} declares .maxclusterrank {dirs['maxclusterrank'][0]}: cluster {cl} is larger")
        explicit = cluster is not None or want is not None or "explicitcluster" in dirs
        chosen = self._choose_engine(entry, engine, nthreads * cl[0] * cl[1] * cl[2])
        per = nctas if cl[0] * cl[1] * cl[2] > 1 else max(1, min(int(ctas_per_batch), nctas))
        batches = range(0, nctas, per)
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                    or workers < 1):
            raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
        if client is not None:
            from .workers import is_dask_client

            if not is_dask_client(client):
                raise TypeError(f"client must be a dask.distributed.Client, not {type(client).__name__}")
        announce = sys.stderr.isatty() if progress is None else bool(progress)    # a first compile (native)
        if progress is None:
            progress = len(batches) > 1 and sys.stderr.isatty()
        if chosen == "compiled" and wgmma_strict and any(st.opcode.startswith("wgmma.") for st in prog.code):
            self._fall_back(entry, engine, f"{entry}: wgmma_strict=True: the wgmma hazard checks are the interpreter's")
            chosen = "interpret"
        if chosen == "compiled":
            from .native import launch_compiled      # the translator's kernel; the interpreter if it cannot
            from .native.kernel import announcing

            from .workers import default_workers

            with announcing(announce):
                why = launch_compiled(self, prog, entry, g, b, cl, args, int(shared_bytes), memory, int(max_steps),
                                      _Kernel.bind, arch, default_workers() if workers is None else int(workers),
                                      client, progress, _compiled_batch, explicit)
            if why is None:
                return
            self._fall_back(entry, engine, f"{entry}: {why}")
        first_batch = None
        if len(batches) > 1 and not prog.cross_cta:
            from .workers import aliased, default_workers, run, run_dask, split

            n = default_workers() if workers is None else int(workers)
            if n > 1 or client is not None:
                first_batch = _Kernel(prog, g, b, int(shared_bytes), arch, self.name, memory, self, cl, explicit,
                                      first_cta=0, nctas=min(per, nctas))
                first_batch.bind(args)
                if not aliased(memory.buffers):
                    syms = {v.name: memory.module_symbols[(id(self), v.name)][0] for v in self._mod.variables}
                    geom = (g, b, int(shared_bytes), arch, cl, explicit, per, nctas)
                    state = (first_batch.params, dict(first_batch.param_offsets), int(max_steps),
                             bool(wgmma_strict), list(memory.bases), [np.array(x) for x in memory.buffers], syms)
                    if client is not None:
                        heads = [(self.text, (self.name, self.fmad), entry, geom, firsts)
                                 for firsts in split(batches, max(1, len(batches) // DASK_BATCHES_PER_TASK))]
                        if run_dask(client, _batch_worker, heads, state, memory.buffers, progress):
                            return
                    else:
                        jobs = [(self.text, (self.name, self.fmad), entry, geom, firsts) + state for firsts in split(batches, n)]
                        if run(_batch_worker, jobs, memory.buffers):
                            return
        for i, first in enumerate(batches):
            if progress:
                print(f"\r{entry}: CTAs {first}..{min(first + per, nctas) - 1} of {nctas} (batch {i + 1}/"
                      f"{len(batches)})", end="", file=sys.stderr, flush=True)
            k = _Kernel(prog, g, b, int(shared_bytes), arch, self.name, memory, self, cl, explicit,
                        first_cta=first, nctas=min(per, nctas - first))
            if k._async is not None:
                k._async.strict = bool(wgmma_strict)
            if first_batch is None:
                k.bind(args)
                first_batch = k
            else:                   # the arguments as the first batch mapped them (same addresses)
                k.bind_like(first_batch)
            k.run(int(max_steps))
        if progress:
            print(file=sys.stderr)


_WORKER_MODULES: dict = {}


def _worker_module(text, ident):
    """The module of a launch in a worker process, rebuilt from its text once per process (ident: its name and
    fmad)."""
    key = (ident, text)
    mod = _WORKER_MODULES.get(key)
    if mod is None:
        _WORKER_MODULES.clear()
        mod = _WORKER_MODULES[key] = Module(text, ident[0], fmad=ident[1])
    return mod


def _compiled_batch(text, ident, entry, geom, ctas, params, bases, datas):
    """On a dask worker: clusters (CTAs, without clusters) ctas[0] .. ctas[0] + ctas[1] - 1 of a launch on the
    entry's compiled kernel (from the disk cache), on copies of ``datas``; -> ``native.kernel.run_tracked``'s
    result."""
    from .native import kernel

    ir = _worker_module(text, ident).translation(entry).ir
    grid, block, shared_bytes, max_steps, arch, cluster, gsym, explicit = geom
    return kernel.run_tracked(ir, grid, block, shared_bytes, params, bases, [np.array(d) for d in datas], ctas[0],
                              ctas[1], max_steps, ir.launch_values(arch, explicit), cluster, gsym)


def _batch_worker(text, ident, entry, geom, firsts, params, offsets, max_steps, strict, bases, datas, syms):
    """In a worker process: batches ``firsts`` of a launch, in order, on a copy of its global
    memory; -> per mapped array (packed read mask, packed write mask, the written bytes), or None
    when a batch raised or warned (the sequential launch then reports it)."""
    import warnings

    from .memory import Track

    mod = _worker_module(text, ident)
    gm = GlobalMemory()
    for base, data in zip(bases, datas):
        gm.map(data, address=base)
    for vname, addr in syms.items():
        gm.module_symbols[(id(mod), vname)] = (addr, gm.buffers[gm.bases.index(addr)])
    gm.track = Track([d.size for d in datas])
    g, b, shared, arch, cl, explicit, per, nctas = geom
    prog = mod.program(entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for first in firsts:
                k = _Kernel(prog, g, b, shared, arch, mod.name, gm, mod, cl, explicit, first_cta=first,
                            nctas=min(per, nctas - first))
                if k._async is not None:
                    k._async.strict = strict
                k._set_params(params, dict(offsets))
                k.run(max_steps)
        except Exception:
            return None
    if caught:
        return None
    out = []
    for i, d in enumerate(datas):
        w = gm.track.written[i]
        out.append((np.packbits(gm.track.read[i]), np.packbits(w), d[w]))
    return out


def _dims(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if isinstance(v, list):
        v = tuple(v)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3 or \
            not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in v):
        raise ValueError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {v!r}")
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))
