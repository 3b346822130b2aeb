"""Structured-sparse A: where each compressed element's metadata lives, and what it means.

Found against H100 captures (every word of every sparse integer entry, valid
and arbitrary metadata alike):

* A row's metadata is a stream of 2-bit indices, two per group (the two kept
  positions of four), ``L`` bits per row: ``k`` bits for 8- and 16-bit types,
  ``k/2`` for 4-bit types (whose unit is a pair of elements), ``2k`` for tf32
  (1:2; a group is two tf32 elements seen as four 16-bit halves, so the valid
  nibbles are 0b0100 and 0b1110).
* A quad of lanes holds rows ``g`` and ``g+8`` (``wgmma.mma_async.sp``: warp ``w`` of the
  warpgroup holds rows ``16w..16w+15`` exactly as one ``mma.sp`` warp holds its 16 rows,
  with the m16n8 shape of the same A type and K); the ``nl = max(1, 2L/32)``
  lanes starting at ``selector*nl`` hold them.  Each row's stream is cut into
  blocks of ``Bb`` bits -- 16 for 16- and 32-bit types, 32 for 8- and 4-bit
  types -- and block ``b`` of row half ``h`` (0 for row g, 1 for row g+8) is
  slot ``q = 2b + h`` of the lanes' concatenated 32-bit words.  So f16 k16
  keeps row g in bits 0..15 and row g+8 in bits 16..31 of one lane, f16 k32
  uses two such lanes, s8 k32 holds row g in one lane and row g+8 in the next,
  and s8 k64 interleaves (g, 0..31), (g+8, 0..31), (g, 32..63), (g+8, 32..63).
* The hardware reads whatever index is there: a repeated index makes both
  kept elements multiply the same row of B; out-of-order indices with
  ``::ordered_metadata`` behaved the same in every capture.  For tf32 a group
  is four 16-bit halves (two elements): nibbles 0b0100 / 0b1110 pick element
  0 / 1; any other nibble (i0, i1) makes the element multiply a B value spliced
  from half i0 (its low 16 bits) and half i1 (its high 16 bits) -- the engine
  does this (``warpsim.engine.kernel``); every captured word of arbitrary tf32
  metadata matches it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .catalog import BY_OPCODE, Instruction
from .layouts import layout


def unit_elements(ins: Instruction) -> int:
    """Elements per 2-bit index: 4-bit types are sparsified in pairs."""
    return 2 if ins.elem("a").bits == 4 else 1


def row_metadata_bits(ins: Instruction) -> int:
    if ins.atype == "tf32":
        return 2 * ins.k
    return ins.k // unit_elements(ins)


def block_bits(ins: Instruction) -> int:
    """Metadata block per row and lane slot: 16 bits for 16/32-bit types, 32 for 8/4-bit."""
    return 16 if ins.elem("a").bits >= 16 else 32


def lanes_per_quad(ins: Instruction) -> int:
    return max(1, 2 * row_metadata_bits(ins) // 32)


@lru_cache(maxsize=None)
def metadata_table(opcode: str, selector: int) -> np.ndarray:
    """(threads, elements_per_lane_of_A, 5) int table per compressed A element:
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
    bb = block_bits(ins)
    out = np.zeros(tab.shape[:2] + (5,), dtype=np.int64)
    for lane in range(ins.threads):
        for j in range(tab.shape[1]):
            _, r, c = tab[lane, j]
            warp, rr = divmod(r, 16)          # wgmma: each warp holds the metadata of its own 16 rows
            half, g = divmod(rr, 8)
            if ins.atype == "tf32":
                grp, slot, off, gw, scale = c, 0, 0, 2, 1
            else:
                u, off = divmod(c, us)
                grp, slot = divmod(u, 2)
                gw, scale = 4 * us, us
            blk, inner = divmod(grp * 4 + slot * 2, bb)
            word, shift = divmod((2 * blk + half) * bb, 32)
            mlane, bit = 32 * warp + g * 4 + selector * nl + word, shift + inner
            out[lane, j] = (mlane, bit, grp * gw, scale, off)
    out.setflags(write=False)
    return out


def logical_columns(ins: Instruction, selector: int, e: np.ndarray) -> np.ndarray:
    """Logical A column of every compressed element: (warps, threads, elements) from metadata (warps, threads)."""
    t = metadata_table(ins.opcode, selector)
    idx = (e[:, t[..., 0]] >> t[..., 1].astype(np.uint32)) & np.uint32(3)
    idx = idx.astype(np.int64)
    if ins.atype == "tf32":
        idx = idx >> 1
    return t[..., 2] + t[..., 3] * idx + t[..., 4]


@lru_cache(maxsize=None)
def metadata_matrix(opcode: str, selector: int) -> np.ndarray:
    """:func:`metadata_table` per compressed A matrix element: (m, k/2, 5), for A read from shared memory."""
    ins = BY_OPCODE[opcode]
    tab = layout(opcode, "a")
    t = metadata_table(opcode, selector)
    out = np.zeros(ins.matrix_shape("a") + (5,), dtype=np.int64)
    out[tab[..., 1], tab[..., 2]] = t
    out.setflags(write=False)
    return out


def gather_b(ins: Instruction, selector: int, e: np.ndarray, bt: np.ndarray) -> np.ndarray:
    """The B value each kept A element multiplies: (G, m, n, k/2) raw bits.

    ``e``: metadata words (G, threads); ``bt``: B^T raw element bits (G, n, k).  Each 2-bit index
    is used as written (repeated indices multiply one B row twice).  tf32: a group's two B
    elements are four 16-bit halves and the nibble's fields (i0, i1) pick the low and the high
    half of the value (0b0100 / 0b1110: element 0 / 1 unchanged).
    """
    t = metadata_matrix(ins.opcode, selector)                       # (m, kh, 5)
    G = e.shape[0]
    ew = e[:, t[..., 0]].astype(np.uint64)                          # (G, m, kh)
    f = (ew >> t[..., 1].astype(np.uint64)) & np.uint64(3)
    gi = np.arange(G)[:, None, None, None]
    if ins.atype != "tf32":
        col = (t[..., 2] + t[..., 3] * f.astype(np.int64) + t[..., 4])      # (G, m, kh)
        return bt[gi, np.arange(bt.shape[1])[None, None, :, None], col[:, :, None, :]]
    f1 = (ew >> (t[..., 1] + 2).astype(np.uint64)) & np.uint64(3)
    base = t[..., 2]
    nn = np.arange(bt.shape[1])[None, None, :, None]
    out = np.zeros((G, t.shape[0], bt.shape[1], t.shape[1]), dtype=np.uint64)
    for h, sh in ((f, 0), (f1, 16)):
        hi = h.astype(np.int64)
        v = bt[gi, nn, (base + (hi >> 1))[:, :, None, :]]
        half = (v >> (np.uint64(16) * (hi & 1).astype(np.uint64))[:, :, None, :]) & np.uint64(0xFFFF)
        out |= half << np.uint64(sh)
    return out
