"""Fragment layouts: which matrix element each (lane, element slot) of an operand holds.

All shapes except the m8n8k4 quad-pair form follow one rule from PTX ISA
9.7.14.5, written once here in terms of ``groupID = lane >> 2`` and
``threadID_in_group = lane % 4``:

* A (m x k, row-major fragments): register ``r`` holds ``p = 32 / bits``
  consecutive elements (one for .f64) of row ``groupID + 8 * (r % (m/8))``,
  starting at column ``threadID_in_group * p + (r // (m/8)) * 4p``;
* B (k x n): register ``r`` holds ``p`` consecutive elements of column
  ``groupID``, starting at row ``threadID_in_group * p + r * 4p``;
* C/D (m x n): element ``i`` sits at row ``groupID + 8 * (i // 2)``, column
  ``threadID_in_group * 2 + i % 2``.

Structured-sparse A uses the dense rule on the compressed (m x k/2) matrix;
:mod:`warpsim.isa.sparse` maps compressed columns back to logical ones.
The m8n8k4 quad-pair form has its own formulas (seed 000): four independent
8x8x4 products, lanes ``4q..4q+3`` and ``16+4q..16+4q+3`` working on product q.

A layout is an integer table of shape (32, elements, 3): (product, row, col).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .bits import elements_to_words, words_to_elements
from .codec import to_bits, to_values
from .catalog import BY_OPCODE, Instruction

OPERANDS = ("a", "b", "c", "d")


def _dense(ins: Instruction, role: str, lane: int, j: int) -> tuple[int, int, int]:
    g, t = lane >> 2, lane & 3
    bits = ins.elem(role).bits
    p = 1 if bits == 64 else 32 // bits
    rows, cols = ins.matrix_shape(role)
    if role == "a":
        mb = rows // 8
        r, e = divmod(j, p)
        return 0, g + 8 * (r % mb), t * p + e + (r // mb) * 4 * p
    if role == "b":
        r, e = divmod(j, p)
        return 0, t * p + e + r * 4 * p, g
    return 0, g + 8 * (j // 2), t * 2 + j % 2


def _quad_pair(ins: Instruction, role: str, lane: int, i: int) -> tuple[int, int, int]:
    q, hi, l4 = (lane >> 2) & 3, 4 * (lane >= 16), lane & 3
    if role == "a":
        return (q, l4 + hi, i) if ins.alayout == "row" else (q, i % 4 + hi, l4)
    if role == "b":
        return (q, l4, i + hi) if ins.blayout == "row" else (q, i, l4 + hi)
    if ins.elem(role).bits == 16:
        return q, l4 + hi, i
    return q, (lane & 1) + (i & 2) + hi, (i & 4) + (lane & 2) + (i & 1)


def _warpgroup(ins: Instruction, role: str, thread: int, j: int) -> tuple[int, int, int]:
    """wgmma: warp ``w = thread // 32`` of the warpgroup owns rows 16w..16w+15 of A and D.

    A (registers): the m16 A rule above with the warp's row offset.  D: element
    ``j`` is element ``j % 4`` of the m16n8 C/D rule in the 8-column block ``j // 4``.
    """
    w, lane = divmod(thread, 32)
    g, t = lane >> 2, lane & 3
    if role == "a":
        p = 32 // ins.elem("a").bits
        r, e = divmod(j, p)
        return 0, 16 * w + g + 8 * (r % 2), t * p + e + (r // 2) * 4 * p
    if role in ("c", "d"):
        blk, i = divmod(j, 4)
        return 0, 16 * w + g + 8 * (i // 2), 8 * blk + t * 2 + i % 2
    raise ValueError(f"{ins.opcode}: operand {role} of a wgmma is read from shared memory, not registers "
                     "(see warpsim.isa.smem)")


@lru_cache(maxsize=None)
def layout(opcode: str, role: str) -> np.ndarray:
    """(threads, elements_per_lane, 3) int table of (product, row, col) for one operand
    (threads = 32 for ``mma``, 128 for ``wgmma``)."""
    ins = BY_OPCODE[opcode]
    fn = _warpgroup if ins.is_wgmma else (_quad_pair if ins.products > 1 else _dense)
    n = ins.elements_per_lane(role)
    tab = np.array([[fn(ins, role, lane, j) for j in range(n)] for lane in range(ins.threads)], dtype=np.int64)
    tab.setflags(write=False)
    return tab


def fragment_map(instruction, operand: str) -> np.ndarray:
    """Public view of :func:`layout`: ``map[lane, element] = (product, row, col)``.

    >>> m = warpsim.fragment_map("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "a")
    >>> m.shape, m[5, 2].tolist()            # lane 5, element 2 of A: product 0, row 9, column 2
    ((32, 8, 3), [0, 9, 2])
    """
    ins = _instruction(instruction)
    _check_operand(operand)
    return layout(ins.opcode, operand)


def _instruction(instruction) -> Instruction:
    if isinstance(instruction, Instruction):
        return instruction
    from .parse import parse

    ins = parse(instruction)
    if ins.iclass == "tcgen05":
        raise ValueError(f"{ins.opcode} is a tcgen05.mma spelling: its operands live in shared and tensor memory, "
                         "not in register fragments (see warpsim.ptx.tmem and docs/tcgen05.md)")
    return ins


def _check_operand(operand):
    if operand not in OPERANDS:
        raise ValueError(f"operand must be one of {OPERANDS}, not {operand!r}")


# --- pack / unpack ----------------------------------------------------------

def unpack(instruction, operand: str, words) -> np.ndarray:
    """Register words -> matrices.

    ``words``: uint32 of shape (warps, 32, words) or (32, words).  Returns an
    array of shape (warps, products, rows, cols) -- or (products, rows, cols)
    for one warp; the products axis is dropped when the instruction has one
    product -- in the operand's numpy / ml_dtypes element type (``b1`` as
    uint8 0/1; sparse A as the compressed matrix).

    >>> op = "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32"
    >>> d = np.zeros((32, 2), np.uint32)
    >>> d[1] = [7, 0xFFFFFFFF]                                 # lane 1 holds D[0, 2] and D[0, 3]
    >>> warpsim.unpack(op, "d", d)[0, :4]
    array([ 0,  0,  7, -1], dtype=int32)
    """
    ins = _instruction(instruction)
    _check_operand(operand)
    w = np.asarray(words)
    if w.dtype != np.uint32:
        raise TypeError(f"register words must be numpy.uint32, got {w.dtype}")
    single = w.ndim == 2
    if single:
        w = w[None]
    nw = ins.words(operand)
    th = ins.threads
    if w.ndim != 3 or w.shape[1:] != (th, nw):
        unit = "groups" if ins.is_wgmma else "warps"
        raise ValueError(f"operand {operand} of {ins.opcode} needs words of shape ({unit}, {th}, {nw}), got {np.asarray(words).shape}")
    t = ins.elem(operand)
    el = words_to_elements(w, t.bits)
    tab = layout(ins.opcode, operand)
    rows, cols = ins.matrix_shape(operand)
    out = np.zeros((w.shape[0], ins.products, rows, cols), dtype=np.uint64)
    out[:, tab[..., 0], tab[..., 1], tab[..., 2]] = el
    mat = to_values(out, t)
    if ins.products == 1:
        mat = mat[:, 0]
    return mat[0] if single else mat


def pack(instruction, operand: str, matrix) -> np.ndarray:
    """Matrices -> register words (inverse of :func:`unpack`).

    ``matrix``: shape ([warps,] [products,] rows, cols), any array convertible
    to the operand's element type without loss of meaning (values are cast
    with numpy / ml_dtypes rounding; integers must be in range).

    >>> op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    >>> a = warpsim.pack(op, "a", np.arange(256).reshape(16, 16))     # values rounded to f16
    >>> a.shape, hex(a[0, 0])                                         # lane 0: A[0, 0] low, A[0, 1] high
    ((32, 4), '0x3c000000')
    """
    ins = _instruction(instruction)
    _check_operand(operand)
    t = ins.elem(operand)
    rows, cols = ins.matrix_shape(operand)
    m = np.asarray(matrix)
    base = 2 if ins.products == 1 else 3
    if m.ndim == base:
        single = True
        m = m[None]
    elif m.ndim == base + 1:
        single = False
    else:
        raise ValueError(f"operand {operand} of {ins.opcode} needs a matrix of shape ([warps,]{'' if ins.products == 1 else f' {ins.products},'} {rows}, {cols}), got {m.shape}")
    if ins.products == 1:
        m = m[:, None]
    if m.shape[1:] != (ins.products, rows, cols):
        raise ValueError(f"operand {operand} of {ins.opcode} needs matrices of {rows}x{cols}, got shape {np.asarray(matrix).shape}")
    bits = to_bits(m, t)
    tab = layout(ins.opcode, operand)
    el = bits[:, tab[..., 0], tab[..., 1], tab[..., 2]]
    words = elements_to_words(el, t.bits)
    return words[0] if single else words


#: the codec under its former private names, for callers not yet moved to :mod:`warpsim.isa.codec`


# --- block-scale factors (sm_120a .block_scale) ----------------------------------------------

def scale_lanes(instruction, operand: str, thread_id: int = 0) -> np.ndarray:
    """Lane holding each row's (operand 'a') or column's ('b') scale factors, for a thread-id selector.

    Row m of A: lane ``4*(m % 8) + 2*thread_id + m // 8``; column n of B: lane ``4*n + thread_id``;
    the ``nscale`` factors of a row / column are consecutive bytes from ``byte-id`` on.  The 1X rule
    is a third-party hardware probe of an RTX Blackwell card; 2X / 4X extend it byte by byte
    (not verified by warpsim, see docs/numerics.md).
    """
    ins = _instruction(instruction)
    if not ins.block_scaled:
        raise ValueError(f"{ins.opcode} is not block-scaled: it has no scale factors")
    if operand == "a":
        rows = np.arange(ins.m)
        return 4 * (rows % 8) + 2 * thread_id + rows // 8
    if operand == "b":
        return 4 * np.arange(ins.n) + thread_id
    raise ValueError(f"scale operand must be 'a' or 'b', not {operand!r}")


def _scale_bits(ins, name, x, shape):
    x = np.asarray(x)
    if x.shape[-2:] != shape or x.ndim not in (2, 3):
        raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {shape[0]}, {shape[1]}) "
                         f"(one .{ins.stype} factor per {ins.scale_block} k), got {x.shape}")
    if x.dtype == np.uint8:
        return x.astype(np.uint32)
    t = ins.scale_elem()
    bits = to_bits(x, t)
    if t.name == "ue4m3" and (np.asarray(to_values(bits, t), dtype=np.float64) < 0).any():
        raise ValueError(f"{name}: ue4m3 scale factors are unsigned; got a negative value")
    return bits.astype(np.uint32)


def pack_scales(instruction, scale_a, scale_b):
    """Scale-factor matrices -> (scale_a, scale_b) register words (uint32, ([batch,] 32)), selectors 0.

    scale_a: ([batch,] m, nscale) -- the factors of row m for each k block; scale_b: ([batch,]
    nscale, n).  Values are cast to the instruction's scale type (ml_dtypes float8_e8m0fnu for
    ue8m0: powers of two; float8_e4m3fn for ue4m3), or given as raw uint8 bits.
    """
    ins = _instruction(instruction)
    if not ins.block_scaled:
        raise ValueError(f"{ins.opcode} is not block-scaled: it takes no scale factors")
    sa = _scale_bits(ins, "scale_a", scale_a, (ins.m, ins.nscale))
    sb = _scale_bits(ins, "scale_b", scale_b, (ins.nscale, ins.n))
    single = sa.ndim == 2 and sb.ndim == 2
    sa = sa[None] if sa.ndim == 2 else sa
    sb = sb[None] if sb.ndim == 2 else sb
    w = max(sa.shape[0], sb.shape[0])
    out_a = np.zeros((w, 32), np.uint32)
    out_b = np.zeros((w, 32), np.uint32)
    sh = np.arange(ins.nscale, dtype=np.uint32) * np.uint32(8)
    out_a[:, scale_lanes(ins, "a")] = np.bitwise_or.reduce(np.broadcast_to(sa, (w,) + sa.shape[1:]) << sh, axis=-1)
    out_b[:, scale_lanes(ins, "b")] = np.bitwise_or.reduce(np.broadcast_to(sb, (w,) + sb.shape[1:]).swapaxes(1, 2) << sh, axis=-1)
    return (out_a[0], out_b[0]) if single else (out_a, out_b)
