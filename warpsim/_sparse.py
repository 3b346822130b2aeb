"""Structured-sparse A: where each compressed element's metadata lives, and what it means.

Found against H100 captures (every word of every sparse integer entry, valid
and arbitrary metadata alike):

* A row's metadata is a stream of 2-bit indices, two per group (the two kept
  positions of four), ``L`` bits per row: ``k`` bits for 8- and 16-bit types,
  ``k/2`` for 4-bit types (whose unit is a pair of elements), ``2k`` for tf32
  (1:2; a group is two tf32 elements seen as four 16-bit halves, so the valid
  nibbles are 0b0100 and 0b1110).
* A quad of lanes holds rows ``g`` and ``g+8``.  If ``L <= 16`` one lane,
  number ``selector`` of the quad, holds both: row g in bits 0..L-1, row g+8
  above it.  Otherwise the ``nl = 2L/32`` lanes starting at ``selector*nl``
  hold 32-bit blocks, block ``b`` of row half ``h`` in lane ``2b + h``.
* The hardware reads whatever index is there: a repeated index makes both
  kept elements multiply the same row of B; out-of-order indices with
  ``::ordered_metadata`` behaved the same in every capture.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._catalog import BY_OPCODE, Instruction
from ._layouts import layout


def unit_elements(ins: Instruction) -> int:
    """Elements per 2-bit index: 4-bit types are sparsified in pairs."""
    return 2 if ins.elem("a").bits == 4 else 1


def row_metadata_bits(ins: Instruction) -> int:
    if ins.atype == "tf32":
        return 2 * ins.k
    return ins.k // unit_elements(ins)


def lanes_per_quad(ins: Instruction) -> int:
    return max(1, 2 * row_metadata_bits(ins) // 32)


@lru_cache(maxsize=None)
def metadata_table(opcode: str, selector: int) -> np.ndarray:
    """(32, elements_per_lane_of_A, 5) int table per compressed A element:
    (metadata lane, bit of its 2-bit index, logical group base column, index scale, offset).

    The logical column of a compressed element is ``base + scale * index + offset``
    where ``index`` is the 2-bit field read from ``e[lane] >> bit``
    (tf32: ``index >> 1`` of the group's first field, see ``logical_columns``).
    """
    ins = BY_OPCODE[opcode]
    tab = layout(opcode, "a")
    us = unit_elements(ins)
    L = row_metadata_bits(ins)
    nl = lanes_per_quad(ins)
    out = np.zeros(tab.shape[:2] + (5,), dtype=np.int64)
    for lane in range(32):
        for j in range(tab.shape[1]):
            _, r, c = tab[lane, j]
            half, g = divmod(r, 8)
            if ins.atype == "tf32":
                grp, slot, off, gw, scale = c, 0, 0, 2, 1
            else:
                u, off = divmod(c, us)
                grp, slot = divmod(u, 2)
                gw, scale = 4 * us, us
            pos = grp * 4 + slot * 2
            if L <= 16:
                mlane, bit = g * 4 + selector, half * L + pos
            else:
                blk, bit = divmod(pos, 32)
                mlane = g * 4 + selector * nl + 2 * blk + half
            out[lane, j] = (mlane, bit, grp * gw, scale, off)
    out.setflags(write=False)
    return out


def logical_columns(ins: Instruction, selector: int, e: np.ndarray) -> np.ndarray:
    """Logical A column of every compressed element: (warps, 32, elements) from metadata (warps, 32)."""
    t = metadata_table(ins.opcode, selector)
    idx = (e[:, t[..., 0]] >> t[..., 1].astype(np.uint32)) & np.uint32(3)
    idx = idx.astype(np.int64)
    if ins.atype == "tf32":
        idx = idx >> 1
    return t[..., 2] + t[..., 3] * idx + t[..., 4]
