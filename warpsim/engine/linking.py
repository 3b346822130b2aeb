"""Calling a large cached kernel by a symbol of its own instead of linking its code into every caller.

numba links a jitted callee's code into the library of every function that calls it, and optimises and
generates machine code for it again there.  The float tensor-core kernel (``tc_warps_one``, ~20,000
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

:func:`packed` calls the same build with its arguments packed once into a block instead: numba passes a jitted
function every field of every array argument (data, shape, strides, meminfo, ...), ~260 words for the
tensor-core kernel, pushed again at each call (~0.3 us of a one-warp mma's ~0.8).  A call whose arguments are
the same arrays every time (a compiled kernel's mma statement: its working arrays are made once a launch)
stores them in a block once and passes its address to a trampoline, ``<name>_packed``, that loads them and
calls the build; the trampoline is a few instructions of LLVM IR built in each process beside the build's
registration.
"""

from __future__ import annotations

import hashlib

from numba.core import types
from numba.extending import intrinsic

#: the functions called through :func:`unlinked`, and the names registered for their builds (name -> address)
_CALLEES: list = []
_NAMES: dict = {}
_PACKED: set = set()          # the callees :func:`packed` calls (their trampolines are registered with them)
_TRAMPOLINES: dict = {}       # name -> the library holding a trampoline (kept alive: the JIT runs its code)
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
    if disp in _PACKED and name + "_packed" not in _NAMES:
        _NAMES[name + "_packed"] = _trampoline(disp, argtypes, name)
        ll.add_symbol(name + "_packed", _NAMES[name + "_packed"])
    return name


def _block_type(context, argtypes):
    """The LLVM struct a :func:`packed` block holds: each argument's value as numba represents it."""
    from llvmlite import ir

    return ir.LiteralStructType([context.get_value_type(t) for t in argtypes])


def _trampoline(disp, argtypes, name):
    """Build ``<name>_packed(i8* block)``: load the arguments from the block and call ``name`` (``disp``'s build for
    ``argtypes``); its address."""
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    context = cpu_target.target_context
    cres = disp.overloads[argtypes]
    lib = context.codegen().create_library(name + "_packed")
    module = lib.create_ir_module(name + "_packed")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t]), name + "_packed")
    builder = ir.IRBuilder(fn.append_basic_block())
    block = builder.bitcast(fn.args[0], _block_type(context, cres.fndesc.argtypes).as_pointer())
    values = [builder.load(cgutils.gep_inbounds(builder, block, 0, i)) for i in range(len(cres.fndesc.argtypes))]
    fnty = context.call_conv.get_function_type(cres.fndesc.restype, cres.fndesc.argtypes)
    callee = cgutils.get_or_insert_function(module, fnty, name)
    context.call_conv.call_function(builder, callee, cres.fndesc.restype, cres.fndesc.argtypes, values)
    builder.ret_void()
    lib.add_ir_module(module)
    with global_compiler_lock:
        lib.finalize()
    _TRAMPOLINES[name + "_packed"] = lib
    return lib.get_pointer_to_function(name + "_packed")


def unlinked(disp):
    """An intrinsic ``call(args)`` running the jitted function ``disp`` on the tuple ``args`` (compiled, or loaded
    from numba's cache, for their types) through its registered name.  The callee must not raise (its status is
    not checked): the kernels called this way are ``_nrt=False`` arithmetic that reports through its arrays."""
    @intrinsic
    def call(typingctx, args):
        argtypes = tuple(types.unliteral(t) for t in args.types)
        disp.compile(argtypes)
        cres = disp.overloads[argtypes]
        sig = cres.signature.return_type(args)

        def codegen(context, builder, signature, llargs):
            from numba.core import cgutils

            (tup,) = llargs
            values = [context.cast(builder, builder.extract_value(tup, i), t, u)
                      for i, (t, u) in enumerate(zip(args.types, cres.fndesc.argtypes))]
            fnty = context.call_conv.get_function_type(cres.fndesc.restype, cres.fndesc.argtypes)
            fn = cgutils.get_or_insert_function(builder.module, fnty, _register(disp, argtypes))
            _, res = context.call_conv.call_function(builder, fn, cres.fndesc.restype, cres.fndesc.argtypes, values)
            return res
        return sig, codegen
    if disp not in _CALLEES:
        _CALLEES.append(disp)
    return call


def packed(disp):
    """Intrinsics ``(size(args), pack(block, args), call(block, args))`` running the jitted function ``disp`` on the
    tuple ``args`` as :func:`unlinked` does, its arguments stored once: ``size`` is the bytes of the block (a
    constant), ``pack`` stores ``args`` into ``block`` (a uint8 array of that size), ``call`` runs ``disp`` on what
    ``block`` holds (``args`` only gives the types).  The arrays packed must outlive the calls (their references
    are not counted: the callee is ``_nrt=False``)."""
    from numba.core import cgutils

    _PACKED.add(disp)

    def _types(args):
        argtypes = tuple(types.unliteral(t) for t in args.types)
        disp.compile(argtypes)
        return argtypes, disp.overloads[argtypes]

    @intrinsic
    def size(typingctx, args):
        argtypes, cres = _types(args)

        def codegen(context, builder, signature, llargs):
            n = context.get_abi_sizeof(_block_type(context, cres.fndesc.argtypes))
            return context.get_constant(types.intp, n)
        return types.intp(args), codegen

    @intrinsic
    def pack(typingctx, block, args):
        argtypes, cres = _types(args)

        def codegen(context, builder, signature, llargs):
            blk, tup = llargs
            data = context.make_array(signature.args[0])(context, builder, blk).data
            ptr = builder.bitcast(data, _block_type(context, cres.fndesc.argtypes).as_pointer())
            for i, (t, u) in enumerate(zip(args.types, cres.fndesc.argtypes)):
                v = context.cast(builder, builder.extract_value(tup, i), t, u)
                builder.store(v, cgutils.gep_inbounds(builder, ptr, 0, i))
            return context.get_dummy_value()
        return types.none(block, args), codegen

    @intrinsic
    def call(typingctx, block, args):
        argtypes, cres = _types(args)

        def codegen(context, builder, signature, llargs):
            from llvmlite import ir

            data = context.make_array(signature.args[0])(context, builder, llargs[0]).data
            fnty = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t])
            fn = cgutils.get_or_insert_function(builder.module, fnty, _register(disp, argtypes) + "_packed")
            builder.call(fn, [builder.bitcast(data, cgutils.voidptr_t)])
            return context.get_dummy_value()
        return types.none(block, args), codegen
    if disp not in _CALLEES:
        _CALLEES.append(disp)
    return size, pack, call


def load_cached(disp):
    """Load and register every build of ``disp`` numba has cached for this CPU (read afresh at each call: another
    process may have cached one since), and those compiled in this process."""
    from numba.core.registry import cpu_target

    magic = cpu_target.target_context.codegen().magic_tuple()
    for key in disp._cache._cache_file._load_index():
        if key[1] == magic and key[0] not in disp.overloads:
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
    loading every cached build of the callees."""
    if not names or all(n in _NAMES for n in names):
        return [n for n in names if n not in _NAMES]
    for disp in _CALLEES:
        load_cached(disp)
    return [n for n in names if n not in _NAMES]


def drop_cached(disp):
    """Drop ``disp``'s cached builds for this CPU from numba's index (a caller whose callees are not there must
    be compiled again), leaving other CPUs' builds -- numba's own ``flush`` empties the whole index."""
    from numba.core.registry import cpu_target

    magic = cpu_target.target_context.codegen().magic_tuple()
    cache = disp._cache._cache_file
    index = cache._load_index()
    keep = {k: v for k, v in index.items() if k[1] != magic}
    if len(keep) != len(index):
        cache._save_index(keep)
