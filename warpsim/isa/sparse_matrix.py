"""Structured-sparse A in matrix form: :func:`compress` a logical 2:4 (tf32: 1:2) matrix into
A's register words and the metadata words, and :func:`expand` them back.

The metadata placement (which lane and bits hold each 2-bit index for a sparsity selector)
comes from :func:`warpsim.isa.sparse.metadata_table`; nothing about it is restated here.
Metadata lanes that the selector does not read are left 0.
"""

from __future__ import annotations

import numpy as np

from .layouts import layout, pack, unpack
from .parse import parse
from .sparse import logical_columns, metadata_table, unit_elements

__all__ = ["compress", "expand", "sparse_a"]

TF32_NIBBLES = (0b0100, 0b1110)   # keep the first / the second tf32 element of a pair


def _sparse_ins(instruction):
    ins = parse(instruction)
    if ins.iclass == "tcgen05":
        raise ValueError(f"{ins.opcode} is a tcgen05.mma spelling (sm_100a): its operands live in shared and tensor memory; use warpsim.matmul(..., arch='sm_100a') or warpsim.tcgen05_mma")
    if not ins.is_sparse:
        raise ValueError(f"{ins.opcode} is dense: compress/expand apply to mma.sp and wgmma.mma_async.sp opcodes only")
    return ins


def check_selector(ins, selector) -> int:
    """The sparsity selector as an int, refused unless it is an integer the opcode allows."""
    if isinstance(selector, (bool, np.bool_)) or not isinstance(selector, (int, np.integer)):
        raise TypeError(f"selector must be an integer, not {type(selector).__name__}")
    if int(selector) not in ins.selectors:
        raise ValueError(f"sparsity selector {selector} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}")
    return int(selector)


def kept_indices(ins, A: np.ndarray) -> np.ndarray:
    """Per (warp, row, group): the kept unit indices, shape (W, m, groups, 2) (tf32: (W, m, groups, 1)).

    Raises ValueError naming the first row and group that hold too many nonzeros.
    """
    m, k = ins.m, ins.k
    us = unit_elements(ins)
    tf32 = ins.atype == "tf32"
    per_group, keep = (2, 1) if tf32 else (4, 2)
    nz = np.asarray(A != 0)
    if us > 1:   # 4-bit types are sparsified in pairs: a pair is kept when either element is nonzero
        nz = nz.reshape(nz.shape[0], m, k // us, us).any(axis=-1)
    units = nz.shape[-1]
    g = nz.reshape(nz.shape[0], m, units // per_group, per_group)
    count = g.sum(axis=-1)
    bad = np.argwhere(count > keep)
    if bad.size:
        w, r, grp = (int(x) for x in bad[0])
        lo = grp * per_group * us
        cols = f"columns {lo}..{lo + per_group * us - 1}"
        rule = "1:2 (at most one nonzero per pair)" if tf32 else (
            "2:4 (at most two nonzero pairs per group of four pairs)" if us > 1 else "2:4 (at most two nonzeros per group of four)")
        warp = f"matrix {w}, " if A.shape[0] > 1 else ""
        raise ValueError(f"A is not {rule} sparse: {warp}row {r}, group {grp} ({cols}) has {int(count[w, r, grp])} "
                         f"nonzero {'pairs' if us > 1 else 'elements'}; "
                         f"{len(bad)} group(s) in all break the pattern")
    # keep the nonzero positions, padded with the lowest unused ones, in increasing order
    order = np.argsort(~g, axis=-1, kind="stable")[..., :keep]     # nonzeros first, by position
    return np.sort(order, axis=-1)


def _logical(ins, A):
    a = np.asarray(A)
    m, k = ins.m, ins.k
    if a.ndim == 2:
        single, a = True, a[None]
    elif a.ndim == 3:
        single = False
    else:
        raise ValueError(f"A of {ins.opcode} must be the logical {m}x{k} matrix, shape ([batch,] {m}, {k}), got {a.shape}")
    if a.shape[1:] != (m, k):
        raise ValueError(f"A of {ins.opcode} must be the logical {m}x{k} matrix (2:4 sparse), got shape {a.shape[1:]}"
                         + (f"; a {m}x{k // 2} matrix is the compressed form: pass metadata too" if a.shape[1:] == (m, k // 2) else ""))
    return single, a


def compress(instruction, A, selector: int = 0):
    """Logical sparse A -> (A register words, metadata words).

    A: the full logical m x k matrix, shape ([batch,] m, k), 2:4 sparse (tf32: 1:2; 4-bit types:
    2:4 over pairs of elements).  Returns uint32 words of shape ([batch,] 32, words_a) and
    metadata of shape ([batch,] 32) for :func:`warpsim.mma` with this ``selector``.

    Example:

    >>> op = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    >>> A = np.zeros((16, 32), np.float16)
    >>> A[:, 1::4], A[:, 2::4] = 1, 2                         # 2 of every 4 elements
    >>> a, e = warpsim.compress(op, A)
    >>> a.shape, e.shape, hex(e[0])
    ((32, 4), (32,), '0x99999999')
    """
    ins = _sparse_ins(instruction)
    sel = check_selector(ins, selector)
    single, a = _logical(ins, A)
    W = a.shape[0]
    kept = kept_indices(ins, a)                                   # (W, m, groups, keep)
    tab = layout(ins.opcode, "a")                                 # compressed (lane, j) -> (0, r, c)
    meta = metadata_table(ins.opcode, sel)                        # (lane, j) -> (mlane, bit, base, scale, off)
    rows, ccols = tab[..., 1], tab[..., 2]
    us = unit_elements(ins)
    if ins.atype == "tf32":
        grp = ccols
        idx = kept[:, rows, grp, 0]                                # (W, 32, n) in {0, 1}
        field = np.where(idx == 0, TF32_NIBBLES[0], TF32_NIBBLES[1]).astype(np.uint32)
        width = 4
        lcol = 2 * grp + idx
    else:
        u, off = np.divmod(ccols, us)
        grp, slot = np.divmod(u, 2)
        idx = kept[:, rows, grp, slot]
        field = idx.astype(np.uint32)
        width = 2
        lcol = meta[..., 2] + meta[..., 3] * idx + meta[..., 4]
    # compressed matrix values, in A's own dtype; pack casts them to the operand type
    comp = np.zeros((W,) + ins.matrix_shape("a"), dtype=a.dtype)
    wi = np.arange(W)[:, None, None]
    comp[wi, rows[None], ccols[None]] = a[wi, rows[None], lcol]
    words = pack(ins, "a", comp)
    e = np.zeros((W, ins.threads), dtype=np.uint32)
    mlane, bit = meta[..., 0].ravel(), meta[..., 1].ravel().astype(np.uint32)
    f = field.reshape(W, -1)
    mask = np.uint32((1 << width) - 1)
    for w in range(W):
        # every (lane, bit) gets the same value from each element that shares it
        cur = e[w]
        np.bitwise_and.at(cur, mlane, ~(mask << bit))
        np.bitwise_or.at(cur, mlane, f[w] << bit)
    return (words[0], e[0]) if single else (words, e)


def expand(instruction, a_words, metadata, selector: int = 0):
    """A register words + metadata -> the logical m x k matrix (inverse of :func:`compress`).

    a_words: uint32 ([batch,] 32, words_a); metadata: uint32 ([batch,] 32).  Returns the
    logical matrix in A's element type, zeros where the metadata drops elements.  Raises
    ValueError if the metadata picks the same position twice in a group (the hardware then
    multiplies both kept values with one row of B; no logical matrix describes that).

    Example:

    >>> op = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"
    >>> A = np.zeros((16, 32), np.float16)
    >>> A[:, ::2] = 1
    >>> a, e = warpsim.compress(op, A)
    >>> bool((warpsim.expand(op, a, e) == A).all())
    True
    """
    ins = _sparse_ins(instruction)
    sel = check_selector(ins, selector)
    aw = np.asarray(a_words)
    e = np.asarray(metadata)
    if e.dtype != np.uint32:
        raise TypeError(f"metadata must be numpy.uint32 words, got {e.dtype}")
    single = aw.ndim == 2
    aw3 = aw[None] if single else aw
    e2 = e[None] if e.ndim == 1 else e
    if e2.shape != (aw3.shape[0], ins.threads):
        raise ValueError(f"metadata must have shape ([batch,] {ins.threads}) matching the A words' batch, got {e.shape}")
    comp = unpack(ins, "a", aw3)                                  # (W, m, k/2)
    cols = logical_columns(ins, sel, e2)                          # (W, 32, n)
    tab = layout(ins.opcode, "a")
    rows, ccols = tab[..., 1], tab[..., 2]
    W = aw3.shape[0]
    wi = np.arange(W)[:, None, None]
    hits = np.zeros((W, ins.m, ins.k), dtype=np.int64)
    np.add.at(hits, (wi, rows[None], cols), 1)
    if (hits > 1).any():
        w, r, c = (int(x) for x in np.argwhere(hits > 1)[0])
        raise ValueError(f"metadata selects logical column {c} of row {r}{f' (matrix {w})' if W > 1 else ''} twice; "
                         "it is not a valid 2:4 pattern, so there is no logical matrix to expand to")
    out = np.zeros((W, ins.m, ins.k), dtype=comp.dtype)
    out[wi, rows[None], cols] = comp[wi, rows[None], ccols[None]]
    return out[0] if single else out


def sparse_a(instruction, A, metadata=None, selector: int = 0):
    """A's register words and the metadata words for a sparse matrix front end (``matmul``).

    metadata None: A is the logical matrix and is compressed for ``selector``.  Otherwise A is
    the compressed m x k/2 matrix and ``metadata`` its uint32 words, taken as given."""
    ins = _sparse_ins(instruction)
    if metadata is None:
        return compress(ins, A, selector)
    e = np.asarray(metadata)
    if e.dtype != np.uint32:
        raise TypeError(f"metadata must be numpy.uint32 words, got {e.dtype}")
    shape = ins.matrix_shape("a")
    if np.shape(A)[-2:] != shape:
        raise ValueError(f"with metadata, A of {ins.opcode} is the compressed {shape[0]}x{shape[1]} matrix, "
                         f"got {np.shape(A)}")
    return pack(ins, "a", A), e
