"""Exact arithmetic on raw bit patterns: the soft-float core and its NaN/rounding contract
(:mod:`.softfloat`), the tensor-core fused dot (:mod:`.fused`), FMA chains (:mod:`.chain`),
integer dots (:mod:`.integer`), and the per-architecture recipe tables as data
(:mod:`.recipes`, :mod:`.arch`).  No host floating point is used here."""
