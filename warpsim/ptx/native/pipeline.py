"""numba's compile pipeline for the translator's generated functions: its nopython pipeline without the passes
that find nothing in them.

The generated source (codegen.py) has no closures, comprehensions, ``with`` blocks or nested functions, and
neither it nor the engine code inlined into it holds an array expression to fuse; it is large (a flash-attention forward: ~5,000 lines in 26
functions), and the passes that look for those walk all of it: inlining closures took ~1 s of that kernel's first
compile on the 2-core EPYC, the rewrites after typing ~1 s.  The passes before ``InlineInlinables`` see the
generated lines only; the engine's functions inlined into them (``inline="always"``) need the later ones
(constant getitems, branches pruned on their arguments' types, ``literal_unroll``), which stay.  The functions
the generated code calls compile with numba's default pipeline.
"""

from __future__ import annotations

from numba.core import typed_passes, untyped_passes
from numba.core.compiler import CompilerBase, DefaultPassBuilder

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
