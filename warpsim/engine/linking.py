"""Calling a large cached kernel by a symbol of its own instead of linking its code into every caller.

numba links a jitted callee's code into the library of every function that calls it, and optimises and
generates machine code for it again there.  The float tensor-core kernel (``tc_one_matrix``, ~20,000
instructions) cost ~3.5 s in each generated function of a compiled PTX kernel that runs an ``mma`` and again in
the kernel that calls those functions.  :func:`unlinked` calls a build of the callee through a name of this
module's making instead, ``warpsim_unlinked_<callee>_<digest of the argument types>``, which the JIT resolves
against the address this process registered for it (``llvmlite.binding.add_symbol``).  numba's own symbol names
carry a per-process serial number; this one names every build of the callee for those types alike, so a cached
caller finds whichever build a process has.  A process must have loaded one before it loads a cached caller:
:func:`missing` loads the callee's builds numba has cached for this CPU and says which of a caller's names are
still not there, so that the caller is compiled again instead of loaded (an unresolved name is a crash, not an
error).

Only functions compiled in the process (the generated kernels and the wrappers they inline) may call through
:func:`unlinked`; a ``cache=True`` function that did would be loadable before its callee.

The other way round, for code that is only ever linked: :func:`link_only` (a private helper of the engine) and
:func:`linked_only` (a compiled kernel's group functions) have numba build a library without machine code of its
own, its code generated once, in the caller that links it.
"""

from __future__ import annotations

import contextlib
import hashlib

from numba.core import types
from numba.extending import intrinsic

#: the functions called through :func:`unlinked`, and the names registered for their builds (name -> address)
_CALLEES: list = []
_NAMES: dict = {}
PREFIX = "warpsim_unlinked_"


def _name(disp, argtypes) -> str:
    return f"{PREFIX}{disp.py_func.__name__}_{hashlib.sha1(str(argtypes).encode()).hexdigest()[:16]}"


def _register(disp, argtypes) -> str:
    """The name of ``disp``'s build for ``argtypes`` (compiled or loaded in this process), registered with the JIT."""
    import llvmlite.binding as ll

    name = _name(disp, argtypes)
    if name not in _NAMES:
        cres = disp.overloads[argtypes]
        _NAMES[name] = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
        ll.add_symbol(name, _NAMES[name])
    return name


def unlinked(disp, literal=False):
    """An intrinsic ``call(*args)`` running the jitted function ``disp`` on ``args`` through the registered name
    of its build for their types (compiled, or loaded from numba's cache).  ``literal``: the build is made for
    the arguments' literal types, as a linked call would be (numba specialises a callee on each literal
    argument's value: the sizes and flags a compiled kernel's calls pass), else for their plain types.  A
    failing status of the callee (an exception it raises) is passed on to the caller, as numba's own calls do."""
    @intrinsic(prefer_literal=literal)
    def call(typingctx, *args):
        argtypes = tuple(args) if literal else tuple(types.unliteral(t) for t in args)
        disp.compile(argtypes)
        cres = disp.overloads[argtypes]
        sig = cres.signature.return_type(types.StarArgTuple.from_types(args))

        def codegen(context, builder, signature, llargs):
            from numba.core import cgutils

            (tup,) = llargs
            values = [context.cast(builder, builder.extract_value(tup, i), t, u)
                      for i, (t, u) in enumerate(zip(args, cres.fndesc.argtypes))]
            fnty = context.call_conv.get_function_type(cres.fndesc.restype, cres.fndesc.argtypes)
            fn = cgutils.get_or_insert_function(builder.module, fnty, _register(disp, argtypes))
            status, res = context.call_conv.call_function(builder, fn, cres.fndesc.restype, cres.fndesc.argtypes,
                                                          values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return res
        return sig, codegen
    _CALLEES.append(disp)
    call.by_symbol_of = disp
    return call


def this_cpu():
    """numba's name for the CPU it generates code for (target triple, CPU name, features; an AVX2 build on an
    AVX-512 host is another): the second item of a key of its cache index."""
    from numba.core.registry import cpu_target

    return cpu_target.target_context.codegen().magic_tuple()


def cached_index(disp) -> dict:
    """numba's on-disk cache index of the jitted function ``disp``, read afresh ({(argument types, CPU, ...): data
    file}; empty when missing or stale)."""
    return disp._cache._cache_file._load_index()


def load_cached(disp, names=None):
    """Load and register the builds of ``disp`` numba has cached for this CPU (read afresh at each call: another
    process may have cached one since) -- those whose registered names are in ``names``, or all -- and those
    compiled in this process.  (A callee of many literal builds, a wgmma's warp, has dozens cached.)"""
    magic = this_cpu()
    for key in cached_index(disp):
        if key[1] == magic and key[0] not in disp.overloads and (names is None or _name(disp, key[0]) in names):
            disp.compile(key[0])
    for argtypes in list(disp.overloads):
        _register(disp, argtypes)


def declared(library) -> list:
    """The names of :func:`unlinked` callees' builds that a compiled (or loaded) library refers to: the
    declarations of its module for linking (numba keeps it with a cached build too)."""
    return sorted(f.name for f in library._get_module_for_linking().functions
                  if f.is_declaration and f.name.startswith(PREFIX))


def missing(names) -> list:
    """Those of ``names`` (a cached caller's :func:`declared`) that no build loaded in this process answers, after
    loading the cached builds of the callees that answer them."""
    if not names or all(n in _NAMES for n in names):
        return [n for n in names if n not in _NAMES]
    wanted = set(names)
    for disp in _CALLEES:
        if any(n.startswith(f"{PREFIX}{disp.py_func.__name__}_") for n in wanted):
            load_cached(disp, wanted)
    return [n for n in names if n not in _NAMES]


def drop_cached(disp):
    """Drop ``disp``'s cached builds for this CPU from numba's index (a caller whose callees are not there must
    be compiled again), leaving other CPUs' builds -- numba's own ``flush`` empties the whole index."""
    magic = this_cpu()
    index = cached_index(disp)
    keep = {k: v for k, v in index.items() if k[1] != magic}
    if len(keep) != len(index):
        disp._cache._cache_file._save_index(keep)


#: a callee library of more instructions than this is linked into a linked-only library's caller instead of into it
#: (LLVM inlines nothing that large; the runtime's helpers it does inline -- address checks, loads -- stay linked)
LARGE_CALLEE = 1000


def _instructions(library) -> int:
    """The instructions of the functions a library's module for linking defines (counted once a library)."""
    n = getattr(library, "_warpsim_instructions", None)
    if n is None:
        mod = library._get_module_for_linking()
        n = sum(1 for f in mod.functions if not f.is_declaration for b in f.blocks for _ in b.instructions)
        library._warpsim_instructions = n
    return n


#: the predicates of the compiles under way inside :func:`linked_only` (numba's compiler lock: one compile at a time)
_PICKERS: list = []
#: the functions :func:`link_only` marked: (qualified name, numba's mangled prefix of that name)
_LINK_ONLY: set = set()
_INSTALLED = False


def link_only(disp):
    """Mark the jitted function ``disp`` (not ``cache=True``: its code is cached in its callers') as built only to
    be linked into its callers: numba optimises it, but generates no machine code of its own for it.  For a large
    helper that only other jitted functions call (the float tensor-core kernel's warp loop, called by the chunk
    that its serial and parallel kernels call): numba generated its machine code, then again in every caller
    library linking it (a first ``mma`` of one element type: ~9 s of ~35 s on a 2-core Zen 3).  A build compiled
    for a call from Python (the first use of those argument types) is an ordinary one; these helpers are private,
    and a call from Python of types a caller has already built link-only would find no code (a crash, not an
    error), as with any function numba never generated code for."""
    from numba.core.caching import NullCache

    if not isinstance(disp._cache, NullCache):
        raise ValueError(f"{disp.py_func.__qualname__}: a cache=True function is not link-only (its cache "
                         "entry needs its own machine code)")
    f = disp.py_func
    _LINK_ONLY.add((f.__qualname__, "".join(f"{len(x)}{x}" for x in f"{f.__module__}.{f.__qualname__}".split("."))))
    _install()
    return disp


#: for each compile of a jitted function under way (outermost first): whether it is one of warpsim's
_COMPILING: list = []


def _is_link_only(library):
    if any(pick(library) for pick in _PICKERS):
        return True
    if library.name.startswith("__numba_parfor_gufunc") and _COMPILING and _COMPILING[0]:
        return True     # a prange body's function: only its kernel calls it (its code is in the kernel's library)
    if len(_COMPILING) < 2:     # compiled for a call from Python, not for a caller: a build of its own
        return False
    for name, mangled in _LINK_ONLY:
        if library.name == name and any(mangled in f.name for f in library._final_module.functions):
            return True
    return False


def _decided(library):
    """Whether ``library`` is link-only, decided once (when it is finalised; its callers ask again later)."""
    lo = getattr(library, "_warpsim_link_only", None)
    if lo is None:
        lo = library._warpsim_link_only = _is_link_only(library)
    return lo


@contextlib.contextmanager
def linked_only(is_linked_only):
    """numba builds the libraries ``is_linked_only(library)`` picks (besides :func:`link_only`'s) only as modules
    to link into their callers, for the compile inside the ``with``: a compiled PTX kernel's group functions, only
    ever linked into their kernel, whose library generates code for all of them once."""
    _install()
    _PICKERS.append(is_linked_only)
    try:
        yield
    finally:
        _PICKERS.remove(is_linked_only)


def _install():
    """Teach numba's code libraries the link-only ones (:func:`link_only`, :func:`linked_only`): optimised, but
    without machine code of their own (their module optimisation stays: with the kernel's library the only one to
    optimise them, a Triton layernorm ran 20% slower).

    Their large callees (more than :data:`LARGE_CALLEE` instructions: a wgmma's warp, the special-function unit's
    range kernels, the tensor-core warp loop) are linked into the first caller with machine code of its own, once,
    instead of into each of them: numba optimised a callee's whole module again in every library linking it (a
    kernel of 28 sparse wgmma forms: 8.8 s of its groups' 9.7 s of module optimisation).  Installed once, for the
    process; a library neither picks is built as numba builds it.  The functions numba makes of a ``prange`` loop's
    body while it compiles one of warpsim's kernels are link-only too (their kernel's library holds their code: a
    first parallel f16 ``mma``, 41 -> 33 s on a 2-core Zen 3)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from numba.core import codegen as cg, event

    lib_cls, gen_cls = cg.CPUCodeLibrary, cg.JITCPUCodegen
    finalize, finalize_module, set_env = lib_cls.finalize, lib_cls._finalize_final_module, gen_cls.set_env

    def _finalize_linking(lib):
        deps = lib._linking_libraries
        lo = _decided(lib)
        carried = []            # the large callees that link-only callees left to their caller
        for d in list(deps):
            if _decided(d):
                d._ensure_finalized()
                carried += [x for x in getattr(d, "_warpsim_for_caller", ()) if x not in carried]
        if lo:
            large = [d for d in deps if _instructions(d) > LARGE_CALLEE]
            lib._linking_libraries = [d for d in deps if d not in large]
            lib._warpsim_for_caller = large + [x for x in carried if x not in large]
        else:
            deps.extend(x for x in carried if x not in deps)
        return finalize(lib)

    def _finalize(lib):
        if not getattr(lib, "_warpsim_link_only", False):
            return finalize_module(lib)
        lib._finalize_dynamic_globals()
        lib._verify_declare_only_symbols()
        lib._finalized = True           # (not added to the JIT: its caller's library holds its code)

    def _set_env(codegen, env_name, env):
        if codegen._engine.get_global_value_address(env_name):     # (a link-only library's is not in the JIT)
            set_env(codegen, env_name, env)

    class _Compiles(event.Listener):
        def on_start(self, ev):
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            _COMPILING.append((getattr(fn, "__module__", None) or "").startswith("warpsim"))

        def on_end(self, ev):
            _COMPILING.pop()

    lib_cls.finalize, lib_cls._finalize_final_module, gen_cls.set_env = _finalize_linking, _finalize, _set_env
    event.register("numba:compile", _Compiles())
    _INSTALLED = True
