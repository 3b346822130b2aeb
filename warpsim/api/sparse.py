"""``warpsim.compress`` / ``warpsim.expand``: structured-sparse A in matrix form.

They are layout arithmetic, not execution, so they live with the layouts and the metadata
tables in :mod:`warpsim.isa.sparse_matrix`; this module is their public front-end name.
"""

from __future__ import annotations

from ..isa.sparse_matrix import compress, expand

__all__ = ["compress", "expand"]
