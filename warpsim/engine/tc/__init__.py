"""The float tensor-core kernels, by responsibility; :mod:`warpsim.engine.tensorcore` is their entry
point (the runners the engine calls) and re-exports the names used elsewhere.

- :mod:`.tables`: what a plan gives the kernels (formats, gathering places, rounding parameters);
- :mod:`.ir`: LLVM IR building blocks (vector loads / stores, loops, rounding and exponent generators);
- :mod:`.dot`: the dot-core intrinsics (decode, exact block sums of rows side by side, the one- and
  two-block warp recipes);
- one module a kernel family: :mod:`.mma` (warps of mma / mma.sp), :mod:`.wgmma` (warpgroups),
  :mod:`.groups` (block-scaled groups), :mod:`.chain` (a row's chain over whole GEMMs).
"""
