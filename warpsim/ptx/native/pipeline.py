"""numba's compile pipeline for the translator's generated functions: its nopython pipeline without the passes
that find nothing in them; while a kernel compiles (:func:`compiling_generated`), call types resolved once and LLVM's
loop unrolling off.

The generated source (codegen.py) has no closures, comprehensions, ``with`` blocks or nested functions, and
neither it nor the engine code inlined into it holds an array expression to fuse; it is large (a flash-attention forward: ~5,000 lines in 26
functions), and the passes that look for those walk all of it: inlining closures took ~1 s of that kernel's first
compile on the 2-core EPYC, the rewrites after typing ~1 s.  The passes before ``InlineInlinables`` see the
generated lines only; the engine's functions inlined into them (``inline="always"``) need the later ones
(constant getitems, branches pruned on their arguments' types, ``literal_unroll``), which stay.  The functions
the generated code calls compile with numba's default pipeline.
"""

from __future__ import annotations

import contextlib

import llvmlite.binding as llvm
from numba.core import codegen as _codegen
from numba.core import typed_passes, untyped_passes
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_lock import global_compiler_lock
from numba.core.types import functions as _functions

#: the passes dropped, with what they look for
SKIPPED = {
    untyped_passes.WithLifting: "with blocks (objmode, parallel chunks)",
    untyped_passes.InlineClosureLikes: "closures and array comprehensions",
    untyped_passes.MakeFunctionToJitFunction: "nested functions",
    typed_passes.NopythonRewrites: "array expressions to fuse, string literals indexed",
}


class GeneratedPipeline(CompilerBase):
    """numba's nopython pipeline less :data:`SKIPPED` (``njit(pipeline_class=GeneratedPipeline)``)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(p, d) for p, d in pm.passes if p not in SKIPPED]
        pm.finalize()
        return [pm]


def _remembering(plain, seen):
    """``BaseFunction.get_call_type`` answering a (function, context, argument types) it resolved before from ``seen``."""
    def remembered(self, context, args, kws):
        try:
            key = (self, context, tuple(args), tuple(kws.items()))
            sig = seen.get(key)
        except TypeError:                      # an unhashable argument type: resolve it as numba does
            return plain(self, context, args, kws)
        if sig is None:
            sig = plain(self, context, args, kws)
            if sig is not None:
                seen[key] = sig
        return sig
    return remembered


def _pass_builder_without_unrolling(tm, opt=2, loop_vectorize=False, slp_vectorize=False):
    """numba's ``llvm_bindings.create_pass_builder`` with LLVM's loop unrolling off."""
    pto = llvm.create_pipeline_tuning_options()
    pto.speed_level = opt
    pto.slp_vectorization = slp_vectorize
    pto.loop_vectorization = loop_vectorize
    pto.loop_unrolling = False
    return llvm.create_pass_builder(tm, pto)


@contextlib.contextmanager
def compiling_generated(is_generated):
    """Held while a kernel compiles; ``is_generated(library, module)`` picks the numba libraries of its generated
    functions (module: the LLVM module being added to the library, or None: its final module).

    * **Call types resolved once.**  numba's ``BaseFunction.get_call_type`` keeps no record of what it resolved:
      each call site tries the function's templates in order again, and a failed try builds an error message (ANSI
      colour set-up included).  The generated code calls a few dozen builtin, ``@overload`` and ``@intrinsic``
      functions on a few argument types thousands of times (in a softmax's groups 86% of the resolutions repeat
      one made before).  A call with the (function, argument types) of an earlier success gets its signature: the
      first template to accept them, whose ``_impl_keys`` and compiled overloads numba stored then, keyed by the
      same argument types.  Failures are not remembered.
    * **No loop unrolling in the generated functions.**  LLVM unrolled the lanes' 32-step loops (their bodies are
      small) after the loop vectoriser had made them vector loops: more code to optimise and to turn into machine
      code, and no faster (first compiles 10-15% shorter, launches as fast or faster: docs/speed.md).  An engine
      function compiled for the first time during the compile is optimised as everywhere else.

    numba's compiler lock is held throughout, so no other thread's compile sees either change."""
    plain, builder = _functions.BaseFunction.get_call_type, _codegen.create_pass_builder
    lib = _codegen.CPUCodeLibrary
    optimize = lib._optimize_functions, lib._optimize_final_module
    generated = [False]

    def pass_builder(tm, opt=2, loop_vectorize=False, slp_vectorize=False):
        if not generated[0]:
            return builder(tm, opt=opt, loop_vectorize=loop_vectorize, slp_vectorize=slp_vectorize)
        return _pass_builder_without_unrolling(tm, opt, loop_vectorize, slp_vectorize)

    def marking(method):
        def run(library, *args):                 # (_optimize_functions(module), _optimize_final_module())
            outer, generated[0] = generated[0], is_generated(library, *args)
            try:
                return method(library, *args)
            finally:
                generated[0] = outer
        return run

    with global_compiler_lock:
        _functions.BaseFunction.get_call_type = _remembering(plain, {})
        _codegen.create_pass_builder = pass_builder
        lib._optimize_functions, lib._optimize_final_module = (marking(m) for m in optimize)
        try:
            yield
        finally:
            _functions.BaseFunction.get_call_type, _codegen.create_pass_builder = plain, builder
            lib._optimize_functions, lib._optimize_final_module = optimize
