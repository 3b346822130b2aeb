"""The batched, numba-jitted engine: plans derived from the catalog (:mod:`.kernel`), the
exact generic kernel and the fast paths layered over it (integer, :mod:`.tensorcore`,
:mod:`.chain_fast`), each falling back to the exact core where it cannot be exact."""
