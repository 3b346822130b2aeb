"""Compiled kernels: generate, compile (numba, never fastmath), cache, and run a launch.

The generated source is written to a file named by a key of that source and the digests of
warpsim's version, the translator and the jitted code it calls, and numba caches the
machine code beside it (``cache=True``: numba keys its entries by the CPU as well), so a second
process loads the kernel instead of compiling it.  The directory is ``WARPSIM_NATIVE_CACHE``, else
``~/.cache/warpsim/native``.  In a process, a kernel is compiled once per (key) and kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import glob
import hashlib
import importlib.util
import os
import re
import sys
import time

import numpy as np
from numba import typeof

from ..instructions import TYPES
from ..syntax import PTXError
from . import rt, rt_sync, rt_tma
from .codegen import generate
from .pipeline import compiling_generated

_COMPILED: dict = {}
#: compiled launches run in this process (a counter for tests and reports)
LAUNCHES = [0]
#: seconds spent generating and compiling each kernel in this process (key -> seconds), for reports
COMPILE_SECONDS: dict = {}
#: why each kernel this process compiled instead of loading it from numba's disk cache (key -> the words of
#: :func:`_disk_state`); `warpsim bench` reports them beside a first launch's time
COMPILED_WHY: dict = {}
#: whether a first compile is announced on stderr (``launch(progress=...)``; set around a launch by :func:`announcing`)
_ANNOUNCE = contextvars.ContextVar("warpsim_native_announce", default=False)
#: LLVM optimisation level of the generated kernels (numba's default is 3)
OPT_LEVEL = int(os.environ.get("WARPSIM_NATIVE_OPT", "1"))


def _digest():
    """Digest of warpsim's version (its __init__.py), the translator and the jitted code it calls."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(here))
    from ...engine.jitcache import CALLEE_STAMP     # the numerics the engine's kernels inline

    h.update(CALLEE_STAMP.encode())
    for path in sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".py")) + \
            [os.path.join(pkg, "engine", "sfu.py"), os.path.join(pkg, "engine", "hostfpu.py"),
             os.path.join(pkg, "engine", "wgmma.py"), os.path.join(pkg, "engine", "chain_fast.py"),
             os.path.join(pkg, "engine", "warp_mma_jit.py"),        # its wrappers are inlined into the kernels
             os.path.join(pkg, "engine", "linking.py"),
             os.path.join(pkg, "isa", "smem.py"),
             os.path.join(pkg, "__init__.py")]:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


_DIGEST = []


def cache_dir():
    d = os.environ.get("WARPSIM_NATIVE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "warpsim", "native")
    os.makedirs(d, exist_ok=True)
    return d


def _key(src):
    if not _DIGEST:
        _DIGEST.append(_digest())
    h = hashlib.sha256()
    for part in (src, _DIGEST[0], sys.version, np.__version__):
        h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@functools.lru_cache(maxsize=None)
def _host():
    """The CPU numba compiles for (its target triple, CPU name and features: an AVX2 build on an AVX-512 host is
    another) and the build flags (a debug build is another: engine/jitcache.build_flags), which name a kernel's
    module file and its built marker."""
    from ...engine.jitcache import build_flags
    from ...engine.linking import this_cpu

    return hashlib.sha256(repr((this_cpu(), *build_flags())).encode()).hexdigest()[:12]


def _source(ir):
    src = getattr(ir, "_source", None)
    if src is None:
        src = ir._source = _HEADER.format(entry=ir.entry) + generate(ir, "kernel")
    return src


def _text(ir, threads):
    """The kernel's module for runs of ``threads`` threads (a cluster's, a CTA's without clusters): the register
    rows' length is a constant of the compiled code, so LLVM runs register-only lane loops as vector
    instructions (codegen._vector_runs).  A kernel is compiled once per such launch shape."""
    return _source(ir) + f"\n#: threads a run: the register rows' length\nTT = np.int64({threads})\n"


def _run_key(ir, threads):
    """The kernel's key for runs of ``threads`` threads built for this CPU: builds for two CPUs (the host's and an
    AVX2 one) get module files, and so numba cache indexes, of their own -- two processes compiling one module
    for two CPUs at once could each write back the index without the other's build."""
    return f"{_ir_key(ir)}t{threads}c{_host()}"


def _threads(args):
    """The threads a run of these kernel arguments has: BX * BY * BZ * CX * CY * CZ, arguments 5-10 of
    :func:`_arguments`' tuple (the block's threads times the cluster's CTAs)."""
    return int(np.prod(args[5:11]))


def _ir_key(ir):
    """The kernel's cache key (hashing its source costs ~0.2 ms a launch for a large kernel: remembered).  A
    kernel whose group functions failed to compile without numba's reference counting (a statement's code
    made arrays without saying so: ``Lowered.refcounted``) is generated with it in every group, which a
    marker beside the first key remembers for later processes (:func:`_ready`)."""
    key = getattr(ir, "_key", None)
    if key is None:
        key = _key(_source(ir))
        if not ir.refcount_all and os.path.exists(_refcount_marker(key)):
            ir.refcount_all, ir._source = True, None
            key = _key(_source(ir))
        ir._key = key
    return key


def _refcount_marker(key):
    return os.path.join(cache_dir(), f"warpsim_native_{key}.refcount")


def _marker(key):
    return os.path.join(cache_dir(), f"warpsim_native_{key}.{_host()}.built")


def is_built(ir, threads=None) -> bool:
    """The kernel is compiled in this process or cached on disk for this host, for runs of ``threads`` threads
    (None: for some launch shape)."""
    if threads is not None:
        key = _run_key(ir, threads)
        return key in _BUILT or os.path.exists(_marker(key))
    base = _ir_key(ir) + "t"
    return any(k.startswith(base) for k in _BUILT) or \
        bool(glob.glob(os.path.join(glob.escape(cache_dir()), f"warpsim_native_{base}*.{_host()}.built")))


_BUILT: set = set()


_HEADER = '''"""Generated by warpsim.ptx.native from the PTX entry {entry!r}; do not edit."""
import numpy as np
from numba import typeof
from numba import njit
from warpsim.engine.hostfpu import fma_native, fp_env_ok
from warpsim.engine.sfu import f32_range_by_symbol as sfu_range
from warpsim.ptx.native.rt import (alive as rt_alive, all_lanes as rt_all, bfe as rt_bfe,
    branch_on_by_symbol as rt_branch_on, goto as rt_goto,
    clear as rt_clear, cta_begin as rt_cta_begin, div_contracted as rt_div_contracted, divrem as rt_divrem,
    f32 as rt_f32, fail, find as rt_find, fminmax32 as rt_fminmax32, get1 as rt_get1, get16 as rt_get16,
    get16s as rt_get16s, get16u as rt_get16u, get32 as rt_get32, get32s as rt_get32s, get32u as rt_get32u,
    get64 as rt_get64, global_at as rt_global_at, launch_state_by_symbol as rt_launch_state, leave as rt_leave,
    load as rt_load, local_at as rt_local_at, local_copy as rt_local_copy, peek1 as rt_peek1, peek2 as rt_peek2,
    peek4 as rt_peek4, peek8 as rt_peek8, poke1 as rt_poke1,
    poke2 as rt_poke2, poke4 as rt_poke4, poke8 as rt_poke8, set1 as rt_set1, set16 as rt_set16, set32 as rt_set32,
    set64 as rt_set64, settle as rt_settle, shared_at as rt_shared_at, track as rt_track, w32 as rt_w32)
from warpsim.ptx.native import rt_sync, rt_tma
from warpsim.ptx.native.pipeline import GeneratedPipeline


'''


@contextlib.contextmanager
def _no_gc():
    """How numba compiles a kernel: Python's cycle collector paused (compiling makes millions of objects, and
    every full collection walks all of them: a fifth of a first compile's time; it runs once, after), and a
    deeper recursion limit (numba's SSA pass recurses along the kernel's chain of blocks: a 6,400-line CUTLASS
    kernel went past the default 1,000)."""
    was, depth = gc.isenabled(), sys.getrecursionlimit()
    gc.disable()
    sys.setrecursionlimit(max(depth, 50_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(depth)
        if was:
            gc.enable()


def _write_once(path, text):
    """Write a kernel's source file unless another process has just written it: numba stamps a cached build with
    its source file's time, so a second write of the same text (two processes compiling one kernel at once: the
    bench's warm-ups, pytest's workers) made the first one's build stale.  A hard link publishes the whole file
    at once and fails where one exists."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        with open(path) as f:
            if f.read() != text:        # another text under this key (the key is the text's digest): replaced
                os.replace(tmp, path)
                return
    except OSError:                     # no hard links here
        os.replace(tmp, path)
        return
    os.remove(tmp)


def compiled(ir, threads):
    """The jitted kernel of a KernelIR for runs of ``threads`` threads (compiled on first use; from numba's disk
    cache if there)."""
    key = _run_key(ir, threads)
    fn = _COMPILED.get(key)
    if fn is not None:
        return fn, key
    src = _text(ir, threads)
    t0 = time.perf_counter()
    name = f"warpsim_native_{key}"
    path = os.path.join(cache_dir(), name + ".py")
    have = None
    if os.path.exists(path):
        with open(path) as f:
            have = f.read()
    if have != src:
        _write_once(path, src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod             # numba's cache finds the kernel's callees by module name
    with _no_gc():
        spec.loader.exec_module(mod)
    fn = mod.kernel
    _COMPILED[key] = fn
    COMPILE_SECONDS.setdefault(key, time.perf_counter() - t0)
    return fn, key


_MESSAGES = {
    rt.BAD_ADDRESS: "address 0x{v:x} (thread {w}) lies outside every mapped array / the CTA's shared memory",
    rt.MISALIGNED: "address 0x{v:x} (thread {w}) is not aligned to its access size",
    rt.DIVERGED_BARRIER: "bar.sync reached by a divergent warp (thread {w} is elsewhere or has left)",
    rt.SHFL_MEMBERS: "shfl.sync / bar.warp.sync whose membermask (0x{v:x}) is not the lanes running it together (thread {w})",
    rt.MAX_STEPS: "the kernel did not finish within max_steps statements in CTA (cluster) {w} (an endless loop?)",
    rt.DEADLOCK: "deadlock in CTA (cluster) {w}: every warp still running waits (bar.sync, an mbarrier, "
                 "barrier.cluster, setmaxnreg) for something no warp can do; the interpreter (engine='interpret') "
                 "names the barriers and the waiting warps",
    rt.SYNC_ERROR: "{sync} (thread {w}); the interpreter (engine='interpret') says more",
    rt.BRKPT: "brkpt reached by thread {w}: the kernel stops at the breakpoint trap",
    rt.TMA_SMEM_ALIGN: "a TMA box's shared offset 0x{v:x} (thread {w}) is not 128-byte aligned",
    rt.TMA_SMEM_RANGE: "a TMA box at shared offset 0x{v:x} (thread {w}) ends at byte {n}, past the CTA's shared "
                       "memory; the H100 faults (illegal address)",
    rt.TMA_INNER: "a TMA load's innermost coordinate {o} (thread {w}) is {n} bytes, not a multiple of 16; the H100 "
                  "faults (illegal instruction)",
    rt.TMA_NEGATIVE: "a TMA store's start coordinate {o} (dimension {n}, thread {w}) is negative; Hopper faults "
                     "(illegal instruction)",
    rt.TMA_DESCRIPTOR: "{tma} (thread {w})",
    rt.BULK_COPY: "cp.async.bulk (thread {w}): {bulk}",
    rt.LAUNCH_SHAPE: "the compiled kernel was made for another number of threads a run than this launch's (an internal "
                     "error: engine='interpret' runs it)",
    rt.CALL_DEPTH: "calls of recursive functions nested deeper than {v} frames in the warp of thread {w} (the compiled "
                   "engine's limit; engine='interpret' has none)",
    rt.ASSERT_FAILED: "device assertion failed (__assertfail) in thread {w}; the interpreter (engine='interpret') "
                   "reads its message and source line",
    rt.PARTIAL_WARP: "a .sync.aligned statement (mma, ldmatrix, stmatrix) needs every lane of the warp; some lanes of "
                     "the warp of thread {w} do not execute it (a divergent branch, lanes that left, or a guard)",
    rt.CP_SIZE: "cp.async: src-size {v} (thread {w}) is larger than the cp-size",
    rt.WGMMA_OPERANDS: "wgmma.mma_async in the warp of thread {w}: a partial warp or warpgroup, lanes that disagree on "
                       "a descriptor or scale-d, or a descriptor with reserved bits or a base offset (value 0x{v:x}); "
                       "the interpreter (engine='interpret') names which",
    rt.WMMA_OPERANDS: "wmma.load / wmma.store: thread {w} passes another matrix address (0x{v:x}) or stride than its warp's lane 0",
    # the interpreter's words (memory.Memory._locate): the offset as a signed integer, the lane in its warp
    rt.BAD_LOCAL: "local address 0x{o:x} (lane {lane}, {n} bytes) is outside the thread's {size} bytes of local "
                  "memory",
}


def _arguments(ir, grid, block, shared_bytes, params, bases, buffers, first, count, max_steps, launch_values, trk,
               toff, cluster, gsym):
    """The kernel's arguments for clusters first .. first + count - 1 of a launch (CTAs, without clusters) on
    ``buffers`` (mapped at ``bases``), and its status array."""
    from ..cluster import initial_registers

    from ...engine import sfu
    from ...engine.hostfpu import PROBE32, PROBE64

    sizes = np.array([b.size for b in buffers], np.uint64)
    ptrs = np.array([b.ctypes.data for b in buffers], np.int64)      # the caller keeps the arrays alive
    tabs = [_table(t) for t in ir.sfu_tables]
    seg = sfu.table("ex2_seg") if "ex2_pos" in ir.sfu_tables else _NOSEG
    status = np.zeros(5, np.int64)
    nreg0 = initial_registers(block[0] * block[1] * block[2], ir.maxnreg)
    if "TMC" in ir.scratch:         # the kernel copies tensor boxes: the descriptors in its parameters and arrays
        from ..memory import PARAM_WINDOW

        raw, fields = rt_tma.scan_descriptors([params, *buffers], [PARAM_WINDOW, *bases])
    else:
        raw, fields = _NORAW, _NOFIELDS
    args = (first, count, grid[0], grid[1], grid[2], block[0], block[1], block[2], *cluster, params,
            np.array(bases, np.uint64), sizes, int(shared_bytes), int(max_steps), status, seg, _NOSEG, PROBE64,
            PROBE32, ptrs, trk, toff, nreg0, gsym, raw, fields, *tabs, *launch_values)
    return args, status


@contextlib.contextmanager
def announcing(on):
    """Inside the ``with``, a kernel this process compiles (not one it loads) says so on stderr when ``on``: a first
    compile takes seconds to a minute, a launch otherwise milliseconds."""
    token = _ANNOUNCE.set(bool(on))
    try:
        yield
    finally:
        _ANNOUNCE.reset(token)


def _ready(ir, args):
    """The jitted kernel, compiled for these argument types (numba's disk cache or a first compile)."""
    threads = _threads(args)
    fn, key = compiled(ir, threads)
    if key in _BUILT:       # built or loaded (numba's ``signatures`` costs ~60 us a launch: it hashes every type)
        return fn
    if not fn.signatures:
        try:
            _load_or_compile(fn, key, args, f"{ir.entry} ({sum(len(b.stmts) for b in ir.blocks)} statements) for "
                                            f"{threads} threads a run")
        except Exception:       # noqa: BLE001 -- compiled again with reference counting; a real error recurs
            if ir.refcount_all:
                raise
            open(_refcount_marker(_ir_key(ir)), "w").close()
            _forget_failed_compiles()
            ir.refcount_all, ir._source, ir._key = True, None, None
            fn, key = compiled(ir, threads)
            if not fn.signatures:
                _load_or_compile(fn, key, args, f"{ir.entry} again, with reference counting")
    if key not in _BUILT:
        _BUILT.add(key)
        _write_marker(key, fn)
    return fn


def compiled_since(before) -> list:
    """The COMPILED_WHY reasons added or changed since ``before`` (a copy taken earlier): why the launches between
    compiled kernels instead of loading them (nothing: every one loaded)."""
    return [v for k, v in COMPILED_WHY.items() if before.get(k) != v]


#: _disk_state's words for a build numba should load (the reason given if it is compiled all the same)
_LOADS = "numba's cache index holds this build, which did not load"


def _disk_state(fn, key, sig):
    """What the disk holds of the kernel's build for this CPU and argument types ``sig``, read before numba loads or
    compiles it: the reason a compile was needed when numba then compiles it (COMPILED_WHY)."""
    from ...engine.linking import cached_index, this_cpu

    if not os.path.exists(_marker(key)):
        return "no built marker for this CPU: not built here before"
    magic = this_cpu()
    index = cached_index(fn)
    if not index:
        return "numba's cache index is missing, or stale (the module file's time or size differs from its stamp)"
    mine = [k[0] for k in index if k[1] == magic]
    if not mine:
        return "numba's cache index holds no build for this CPU"
    if sig in mine:
        return _LOADS
    other = mine[0]
    diff = [f"argument {i}: {b} there, {a} now" for i, (a, b) in enumerate(zip(sig, other)) if a != b]
    return "numba's cache index holds builds for other argument types (" + "; ".join(diff[:3]) + ")"


def _check_callees(fn, key):
    """Before a kernel is loaded from numba's cache: the builds it calls by symbol (engine/linking.py; listed in
    its marker) loaded, or, when one is not there (a callee's cache entry gone stale, or no marker), the kernel's
    cache entry for this CPU dropped so that it is compiled again (other CPUs' builds in the same index stay: an
    AVX2 build shares the file with the host's)."""
    from ...engine import linking

    try:
        with open(_marker(key)) as f:
            need = f.read().split()
    except OSError:
        need = None
    if need is None or linking.missing(need):
        linking.drop_cached(fn)
        return True
    return False


def _write_marker(key, fn):
    """The built marker, listing the symbols the kernel calls unlinked (for :func:`_check_callees`)."""
    from ...engine import linking

    need = [s for cres in fn.overloads.values() for s in linking.declared(cres.library)]
    tmp = f"{_marker(key)}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(sorted(set(need))) + "\n")
    os.replace(tmp, _marker(key))


def _forget_failed_compiles():
    """Numba remembers a jitted function's failed compile per argument types, whatever the caller's flags: the
    runtime functions that failed under a group without reference counting must be compiled again under one
    with it.  (A rare path: every compiler numba holds is walked.)"""
    import warnings

    from numba.core.dispatcher import _FunctionCompiler

    with warnings.catch_warnings():     # (isinstance on some objects of other packages warns: torch's lazy modules)
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():        # (type(), not isinstance: a dead weak proxy's __class__ raises)
            if issubclass(type(obj), _FunctionCompiler):
                obj._failed_cache.clear()


def _load_or_compile(fn, key, args, what):
    """The kernel loaded from numba's disk cache, or compiled (then COMPILED_WHY says why; and stderr, when
    :func:`announcing`: ``what`` is compiled, then how long it took)."""
    state = _disk_state(fn, key, tuple(typeof(a) for a in args))
    if _check_callees(fn, key) and os.path.exists(_marker(key)):
        state = "a build it calls by symbol is missing (engine/linking.py)"
    say = _ANNOUNCE.get() and state != _LOADS
    if say:
        print(f"warpsim: compiling {what} (its first launch on this host; cached in {cache_dir()}) ...",
              end="", file=sys.stderr, flush=True)
    misses, t0 = sum(fn._cache_misses.values()), time.perf_counter()
    try:
        _compile(fn, key, args)
    finally:
        if say:
            print(f" {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if sum(fn._cache_misses.values()) > misses:
        COMPILED_WHY[key] = state


def _libraries_of(kernel, groups_only=True):
    """Whether a numba library is one of ``kernel``'s group functions (codegen._Functions: built only to be
    linked into the kernel, linking.linked_only), or with ``groups_only`` False, the kernel's own too."""
    module = sys.modules[kernel.py_func.__module__]
    names = {k for k, v in vars(module).items() if re.fullmatch(r"g\d+", k) and hasattr(v, "py_func")}
    if not groups_only:
        names.add(kernel.py_func.__name__)
    tag = module.__name__

    def pick(library, module=None):
        """(module: an LLVM module being added to the library, else its final module)"""
        return library.name in names and any(tag in f.name for f in (module or library._final_module).functions)
    return pick


def _compile(fn, key, args):
    from numba.core import config

    from ...engine import linking

    old = config.OPT
    config.OPT = type(old)(OPT_LEVEL)      # compile time over the last few percent of speed
    try:
        t0 = time.perf_counter()
        with _no_gc(), linking.linked_only(_libraries_of(fn)), \
                compiling_generated(_libraries_of(fn, groups_only=False)):
            fn.compile(tuple(typeof(a) for a in args))
        COMPILE_SECONDS[key] = COMPILE_SECONDS.get(key, 0.0) + time.perf_counter() - t0
    finally:
        config.OPT = old


def prepare(ir, grid, block, shared_bytes, params, memory, max_steps, launch_values=(), cluster=(1, 1, 1),
            gsym=None):
    """Compile the kernel for this launch now (before threads run it: compiling is not theirs to do)."""
    _ready(ir, _arguments(ir, grid, block, shared_bytes, params, memory.bases, memory.buffers, 0, 0, max_steps,
                          launch_values, _NOTRACK, _NOTOFF, cluster, _gsym(gsym))[0])


def run(ir, grid, block, shared_bytes, params, memory, first, count, max_steps, launch_values=(), cluster=(1, 1, 1),
        gsym=None):
    """Run clusters (CTAs, without clusters) first .. first + count - 1 on ``memory``; False when the host
    FPU is not in its IEEE default state (nothing has run: the caller uses the interpreter); an error
    raises PTXError naming the line.  launch_values: ``ir.launch_values(arch)``."""
    args, status = _arguments(ir, grid, block, shared_bytes, params, memory.bases, memory.buffers, first, count,
                              max_steps, launch_values, _NOTRACK, _NOTOFF, cluster, _gsym(gsym))
    _ready(ir, args)(*args)
    LAUNCHES[0] += 1
    code = int(status[0])
    if code == rt.FPENV:
        return False
    if code:
        line = int(status[1]) or None
        raise PTXError(f"{ir.entry} (compiled engine): " + _message(ir, code, line, status), line=line)
    return True


_VECTOR = re.compile(r"\.v(\d)\.")


def _message(ir, code, line, status):
    """What stopped the kernel, in the interpreter's words where they are known: an out-of-bounds local
    access, a misaligned ld / st / atom / red (its type and bytes from the statement at ``line``)."""
    w, o = int(status[2]), int(status[3])
    if code == rt.MISALIGNED:
        st = next((st for b in ir.blocks for st, _ in b.stmts if st.line == line
                   and st.opcode.split(".")[0] in ("ld", "st", "atom", "red")), None)
        t = st.opcode.split(".")[-1] if st is not None else None
        if t in TYPES:
            nb = TYPES[t][0] // 8
            vec = _VECTOR.search(st.opcode)
            return (f"address 0x{o & (2**64 - 1):x} of lane {w % 32} is not aligned to {nb} bytes (a .{t} access of "
                    f"{nb * int(vec[1] if vec else 1)} bytes)")
    sync = rt_sync.SYNC_ERRORS.get(int(status[4]), "").format(v=o & (2**64 - 1))
    tma = {1: f"the tensormap at 0x{o & (2**64 - 1):x} is not a descriptor the launch found in its parameters or "
              "mapped arrays (one written by the kernel is not translated; engine='interpret' reads it)",
           2: f"the tensormap has rank {o}, not the statement's coordinate count",
           3: f"ctaMask 0x{o & 0xFFFF:04x} names no CTA or a rank the cluster lacks",
           4: f"the tensormap at 0x{o & (2**64 - 1):x} is an im2col one; a tile copy needs a tiled one",
           5: f"the tensormap at 0x{o & (2**64 - 1):x} is tiled; an im2col load needs an im2col one "
              "(cuTensorMapEncodeIm2col)"}.get(int(status[4]), "")
    bulk = rt_tma.BULK_ERRORS.get(int(status[4]), "").format(v=o & (2**64 - 1))
    return _MESSAGES[code].format(w=w, v=o & (2**64 - 1), o=o, lane=w % 32, n=int(status[4]), size=ir.local_bytes,
                                  sync=sync, tma=tma, bulk=bulk)


def run_tracked(ir, grid, block, shared_bytes, params, bases, datas, first, count, max_steps, launch_values=(),
                cluster=(1, 1, 1), gsym=None):
    """Run CTAs first .. first + count - 1 on ``datas`` (copies of the launch's mapped arrays, as uint8,
    which this run writes), recording each byte read and written (``rt.track``).  Returns, per array,
    (packed read mask, packed write mask, the written bytes) -- what :func:`warpsim.ptx.workers.merge`
    takes -- or None when the run stopped (an error, max_steps, the host FPU): the caller then runs the
    launch sequentially, which reports it."""
    toff, job = tracked_job(ir, grid, block, shared_bytes, params, bases, datas, first, count, max_steps,
                            launch_values, cluster, gsym)
    trk = job()
    if trk is None:
        return None
    out = []
    for d, o in zip(datas, toff):
        t = trk[o:o + d.size]
        w = (t & rt.WRITTEN) != 0
        out.append((np.packbits((t & rt.READ) != 0), np.packbits(w), d[w]))
    return out


def tracked_job(ir, grid, block, shared_bytes, params, bases, datas, first, count, max_steps, launch_values=(),
                cluster=(1, 1, 1), gsym=None):
    """:func:`run_tracked` in two halves: this call does the Python work (arguments, the compiled kernel) in
    the calling thread and returns (where each array's bytes start in the track, a function); the
    function runs the kernel and returns its track (a byte per byte of ``datas``: ``rt.READ`` |
    ``rt.WRITTEN``), or None when the run stopped.  Threads may run several such functions at once (the
    kernel releases the GIL); preparing them first keeps a thread from waiting for another's Python work."""
    toff = np.zeros(len(datas), np.int64)
    if datas:
        toff[1:] = np.cumsum([d.size for d in datas])[:-1]
    trk = np.zeros(-(-max(1, sum(d.size for d in datas)) // 8) * 8, np.uint8)    # 8-byte steps: rt.mark_written
    args, status = _arguments(ir, grid, block, shared_bytes, params, bases, datas, first, count, max_steps,
                              launch_values, trk, toff, cluster, _gsym(gsym))
    fn = _ready(ir, args)

    def job():
        fn(*args)
        return None if status[0] else trk

    return toff, job


def merge_tracks(tracks, copies, toff, buffers, backup):
    """Merge threads' tracked runs of a launch (in CTA order) by :func:`warpsim.ptx.workers.merge`'s rule,
    jitted: the first run wrote ``buffers`` themselves, each later one a flat copy of them (``copies``,
    ``toff``: where each array starts in it and in the tracks).  False when a run stopped or read bytes an
    earlier run wrote: ``buffers`` are then put back as they were (``backup``)."""
    from .. import workers

    workers.LAST = "sequential"
    written = np.zeros(tracks[0].size if tracks[0] is not None else 8, np.uint8)
    if any(t is None for t in tracks) or not all(rt.mark_written(t, written) for t in tracks):
        for buf, old in zip(buffers, backup):
            buf[...] = old
        return False
    for t, flat in zip(tracks[1:], copies):
        for buf, o in zip(buffers, toff):
            rt.apply_written(t, flat, buf, o)
    workers.LAST = "merged"
    return True


def _gsym(addresses):
    """The kernel's GSYM argument: the global addresses of the module's variables (ir.module_variables)."""
    return np.array(addresses if addresses else [0], np.uint64)


_NOSEG = np.zeros((2, 1), np.float64)
_NORAW, _NOFIELDS = np.zeros((0, 128), np.uint8), np.zeros((0, rt_tma.NFIELDS), np.int64)
_NOTRACK = np.zeros(0, np.uint8)        # an untracked launch (rt.track)
_NOTOFF = np.zeros(1, np.int64)


def _table(name):
    """A kernel's table argument: a unit's table, or ``fitc0_<unit>`` / ``fitc12_<unit>``, the two
    arrays of its fitted quadratics (lower.sfu_fit)."""
    from ...engine import sfu

    if name.startswith("fitc"):
        part, unit = name[4:].split("_", 1)
        return sfu.table("fit:" + unit)[0 if part == "0" else 1]
    return sfu.table(name)
