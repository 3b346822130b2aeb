"""numba's compile pipeline for the translator's generated functions: its nopython pipeline without the passes
that find nothing in them, and call types resolved once a compile (:func:`call_types_remembered`).

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


@contextlib.contextmanager
def call_types_remembered():
    """While a kernel compiles: a call of a builtin, ``@overload`` or ``@intrinsic`` function with argument types
    already resolved in this compile gets the signature found then.

    numba's ``BaseFunction.get_call_type`` keeps no record of what it resolved: each call site tries the function's
    templates in order again, and a failed try builds an error message (ANSI colour set-up included).  The
    generated code calls a few dozen functions on a few argument types thousands of times: in a softmax's groups
    86% of the resolutions repeat one made before.  A remembered signature is the one that call found: the first
    template to accept the same (function, argument types) -- whose ``_impl_keys`` and compiled overloads numba
    stored then, keyed by the same argument types.  Failures are not remembered.  numba's compiler lock is held
    throughout, so no other thread's compile sees the replaced method."""
    plain = _functions.BaseFunction.get_call_type
    seen = {}

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

    with global_compiler_lock:
        _functions.BaseFunction.get_call_type = remembered
        try:
            yield seen
        finally:
            _functions.BaseFunction.get_call_type = plain
