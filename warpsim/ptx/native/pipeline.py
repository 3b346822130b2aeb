"""numba's compile pipeline for the translator's generated functions: its nopython pipeline without the passes
that find nothing in them.

The generated source (codegen.py) has no closures, comprehensions, ``with`` blocks, ``literal_unroll``,
``literally``, array expressions, constant tuples indexed by constants, or branches on constants; it is large
(a flash-attention forward: ~5,000 lines in 26 functions), and numba's passes that look for those walk all of
it: inlining closures (~1 s of that kernel's first compile on the 2-core EPYC), the rewrites before and after
typing (~1.3 s) and dead-branch pruning.  Every other pass runs as numba's own pipeline runs it; the functions
the generated code calls (the runtime, the engine) compile with numba's default pipeline.
"""

from __future__ import annotations

from numba.core import typed_passes, untyped_passes
from numba.core.compiler import CompilerBase, DefaultPassBuilder

#: the passes dropped, with what they look for
SKIPPED = {
    untyped_passes.WithLifting: "with blocks (objmode, parallel chunks)",
    untyped_passes.InlineClosureLikes: "closures and array comprehensions",
    untyped_passes.RewriteSemanticConstants: "len() / constant tuples of known size",
    untyped_passes.DeadBranchPrune: "branches on constants and omitted arguments",
    untyped_passes.GenericRewrites: "constant getitem / raise and print rewrites",
    untyped_passes.MakeFunctionToJitFunction: "nested functions",
    untyped_passes.FindLiterallyCalls: "numba.literally",
    untyped_passes.LiteralUnroll: "numba.literal_unroll",
    typed_passes.NopythonRewrites: "array expressions to fuse",
}


class GeneratedPipeline(CompilerBase):
    """numba's nopython pipeline less :data:`SKIPPED` (``njit(pipeline_class=GeneratedPipeline)``)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(p, d) for p, d in pm.passes if p not in SKIPPED]
        pm.finalize()
        return [pm]
