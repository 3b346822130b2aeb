"""Names for jitted kernels that keep numba's on-disk cache honest.

numba keys a cache entry by the function's module, qualified name, first line and signature --
not by the compile flags, and not by the source of the callees it inlines from other modules.
So one Python function compiled both serial and ``parallel=True`` shares one slot (whichever
build is saved first is loaded for both), and an edit to the arithmetic in ``numerics/`` would
not invalidate a kernel that inlines it.  :func:`named_copy` gives each build its own name,
stamped with a digest of those callee modules.  Every engine module that jits a kernel twice
takes its names from here.

The on-disk cache of every other jitted function of the package is kept honest by :func:`install`
(called when ``warpsim`` is imported, before any kernel is decorated): numba's locators, with a
source stamp that also holds a digest of the package's layers below and at the function's own
(``LAYERS``).  An edit to a callee anywhere in those layers then recompiles the kernels that may
have inlined it, instead of loading machine code built from the old source (seen: a ``wgmma``
kernel 1 ulp off its interpreter after an edit to a tensor-core intrinsic in another file).

:func:`install` also makes numba's cache index safe for processes that compile at once (:func:`_locked_save`):
numba reads a function's index, adds its entry and writes the index back, so of two processes building the same
function for two CPUs (the host's and an AVX2 build, ``warpsim bench --codegen``; workers sharing a cache) the
later write dropped the earlier entry -- 26 of 40 functions lost one in a trial -- and both could pick the same
data file.  The next process then compiled those functions again.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import types

from numba.core import caching as _caching

from . import threads as _threads  # noqa: F401  (the OpenMP wait policy, set before any kernel runs)


def _callee_stamp() -> str:
    """Digest of the modules whose jitted functions the kernels inline (numerics/, engine/hostfpu.py,
    engine/tc/)."""
    h = hashlib.sha1()
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    numerics = os.path.join(pkg, "numerics")
    paths = [os.path.join(numerics, f) for f in sorted(os.listdir(numerics)) if f.endswith(".py")]
    paths.append(os.path.join(pkg, "engine", "hostfpu.py"))
    tc = os.path.join(pkg, "engine", "tc")     # the tensor-core intrinsics every tc kernel inlines
    paths += [os.path.join(tc, f) for f in sorted(os.listdir(tc)) if f.endswith(".py")]
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


CALLEE_STAMP = _callee_stamp()


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the package's layers of jitted code, lowest first: a cached function of a layer may inline jitted code of its
#: own layer and those below (engine/numerics/isa never import ptx), so its stamp is their sources' digest
LAYERS = (("engine", "numerics", "isa"), ("ptx",))


def _layer_files(layer):
    out = []
    for top in layer:
        for root, dirs, files in os.walk(os.path.join(_PKG, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
    return out


def _layer_stamps():
    """(the top-level folders of a layer and those below, digest of their sources) for each layer."""
    out, h, tops = [], hashlib.sha1(), ()
    for layer in LAYERS:
        for path in _layer_files(layer):
            with open(path, "rb") as f:
                h.update(path[len(_PKG):].encode())
                h.update(f.read())
        tops += layer
        out.append((tops, h.copy().hexdigest()[:16]))
    return out


_STAMPS = _layer_stamps()


def _stamp_of(py_file):
    """The digest of the layers a package file's jitted code may inline, or None (not a file of those layers)."""
    rel = os.path.relpath(os.path.abspath(py_file), _PKG)
    top = rel.split(os.sep)[0]
    if rel.startswith(".."):
        return None
    for tops, digest in _STAMPS:
        if top in tops:
            return digest
    return None


def build_flags() -> tuple:
    """numba's process-wide settings that change the machine code of a build but not its cache key: debug info
    (``NUMBA_DEBUGINFO``, and ``NUMBA_ENABLE_PROFILING`` which sets it) and bounds checks (``NUMBA_BOUNDSCHECK``).
    A build made under them was loaded by later plain processes (seen: a compiled sm_80 GEMM's launches 3x
    slower after one profiling run), so they join the stamp of the package's builds and the compiled PTX
    kernels' host key."""
    from numba.core import config

    return (bool(config.DEBUGINFO_DEFAULT), bool(config.BOUNDSCHECK))


def _stamped(base):
    """``base`` (a numba cache locator) for the package's own files, its source stamp joined by their layers'
    digest and the build flags (numba drops a cache entry whose stamp differs)."""
    class Stamped(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if _stamp_of(py_file) is None:
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), _stamp_of(self._py_file), build_flags())

    Stamped.__name__ = Stamped.__qualname__ = f"Stamped{base.__name__}"
    return Stamped


@contextlib.contextmanager
def _index_lock(index_path):
    """An exclusive lock on a cache index (a ``.lock`` file beside it) where the OS has ``flock``; else nothing."""
    try:
        import fcntl
    except ImportError:         # not POSIX: numba's own behaviour
        yield
        return
    with open(index_path + ".lock", "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _locked_save(self, key, data):
    """numba's ``IndexDataCacheFile.save`` with the index read, extended and written under a lock, and the data
    file written before the index names it (a reader never finds an entry without its data)."""
    with _index_lock(self._index_path):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            existing = set(overloads.values())
            name = next(n for n in (self._data_name(i) for i in itertools.count(1)) if n not in existing)
            self._save_data(name, data)
            overloads[key] = name
            self._save_index(overloads)
            return
        self._save_data(name, data)


#: this process's function ids start at a random multiple of this (:func:`_process_unique_ids`): two processes'
#: ranges meet only where one compiles more functions than this (or both draw one start: 1 in 2^40)
_ID_SPACING = 1 << 20


def _process_unique_ids():
    """Number the functions this process compiles from a random start, not from 1.

    numba names a compiled function by its qualified name, a serial number of the process and its argument types,
    and every function linked into a caller's library becomes a weak symbol of that library's machine code.  A
    cached library loaded from disk keeps the names of the process that built it; when two loaded libraries both
    define one name, the JIT binds both to the first definition.  Two processes compiling in the same order give
    the same serials to different functions of one qualified name (closures a factory makes: the compiled PTX
    kernels' runtime has some), so a kernel built by one xdist worker, loaded beside one another worker built,
    could run the other's code (seen with two cached kernels of one factory's closures: tests/test_jitcache.py;
    and in CI, two builds of the mma gathers: warp_mma_jit._units).  A random start, far from any other
    process's, keeps every name of this process's own; a forked child draws its own (the device's sweeps fork
    workers that compile)."""
    from numba.core import bytecode

    start = int.from_bytes(os.urandom(5), "little") * _ID_SPACING + 1
    bytecode.FunctionIdentity._unique_ids = itertools.count(start)


def install():
    """Put the stamped locators first in numba's list (once): numba takes the first locator that accepts a
    function, so the package's files get theirs and every other file numba's own; save every cache entry
    of the process under its index's lock (:func:`_locked_save`); and name its functions apart from every other
    process's (:func:`_process_unique_ids`)."""
    _caching.IndexDataCacheFile.save = _locked_save
    classes = _caching.CacheImpl._locator_classes
    if any(getattr(c, "__name__", "").startswith("Stamped") for c in classes):
        return
    _process_unique_ids()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_process_unique_ids)
    bases = [c for c in (getattr(_caching, n, None) for n in ("UserProvidedCacheLocator", "InTreeCacheLocator",
                                                               "UserWideCacheLocator")) if c is not None]
    classes[:0] = [_stamped(b) for b in bases]


def named_copy(fn, name: str):
    """A copy of ``fn`` named ``name`` plus the callee stamp: its own numba cache slot."""
    name = f"{name}_{CALLEE_STAMP}"
    f = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    f.__qualname__ = name
    f.__doc__ = fn.__doc__
    return f
