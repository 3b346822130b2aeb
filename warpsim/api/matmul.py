"""``matmul``: one ``mma`` on matrices instead of register words.

The matrices are packed into fragments with the operand layouts, the instruction is executed
bit-exactly by :func:`warpsim.mma`, and D's words are unpacked again.  A leading batch axis
runs one warp per matrix.
"""

from __future__ import annotations

import numpy as np

from ..isa.layouts import pack, unpack
from ..isa.parse import parse
from ..isa.sparse_matrix import sparse_a

__all__ = ["matmul"]


def matmul(instruction, A, B, C=None, *, metadata=None, selector: int = 0, arch: str = "sm_90",
           scale_a=None, scale_b=None, types=None):
    """D = A x B + C as the GPU computes it with ``instruction``.

    A, B, C: matrices of shape ([batch,] [products,] rows, cols) -- ``products`` only for the
    m8n8k4 quad-pair form (4 independent products per warp) -- in any dtype that converts to the
    operand types (numpy / ml_dtypes: float16, bfloat16, float8_e4m3fn, int8, int4, ...; b1 as
    0/1).  C=None means zeros.  For ``mma.sp``: A is the full logical m x k matrix, 2:4 sparse
    (tf32 1:2), and the metadata is computed for ``selector``; or pass ``metadata`` (uint32 words,
    shape ([batch,] 32)) and A as the compressed m x k/2 matrix.
    Block-scaled sm_120a forms (``.block_scale``, pass ``arch="sm_120a"``): ``scale_a`` of shape
    ([batch,] m, nscale) and ``scale_b`` of shape ([batch,] nscale, n), one factor per block of k
    (32 elements; 16 for scale_vec::4X), as values of the scale type (ue8m0: powers of two) or raw
    uint8 bits; they are placed in the scale registers with byte-id = thread-id = 0.
    ``tcgen05.mma`` spellings (sm_100a; pass ``arch="sm_100a"``): M from A, N from B, element types from
    the dtypes or ``types=(a, b, d)``; see :func:`warpsim.api.tcgen05.matmul_tcgen05` (modelled).
    Returns D in its element type, shape ([batch,] [products,] m, n).

    Example:

    >>> A = np.full((16, 16), 1 / 3, np.float16)
    >>> D = warpsim.matmul("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", A, np.ones((16, 8), np.float16))
    >>> D.shape, D.dtype, bool(D[0, 0] == np.float32(16 * np.float16(1 / 3)))
    ((16, 8), dtype('float32'), True)
    """
    from .mma import mma

    if isinstance(instruction, str) and instruction.strip().startswith("tcgen05"):
        from .tcgen05 import matmul_tcgen05

        parse(instruction, arch=arch)   # sm_100a only: a ValueError naming the target otherwise
        if metadata is not None or selector:
            raise ValueError("the tcgen05 matmul path is dense: it takes no metadata or selector")
        return matmul_tcgen05(instruction, A, B, C, types=types, scale_a=scale_a, scale_b=scale_b)
    if types is not None:
        raise ValueError("types= is for tcgen05.mma spellings (their types live in the instruction descriptor); "
                         "an mma/wgmma opcode names its types itself")
    ins = parse(instruction)
    if ins.is_wgmma:   # warpgroup MMA: A 64xK, B KxN, C 64xN through a canonical shared-memory layout
        from .wgmma import matmul_wgmma

        return matmul_wgmma(ins, A, B, C, arch="sm_90a" if arch == "sm_90" else arch, metadata=metadata,
                            selector=selector)
    base = 2 if ins.products == 1 else 3
    A, B = np.asarray(A), np.asarray(B)
    if C is None:
        shape = ins.matrix_shape("c") if ins.products == 1 else (ins.products,) + ins.matrix_shape("c")
        C = np.zeros(shape, dtype=ins.elem("c").numpy_dtype)
    C = np.asarray(C)
    for name, x in (("A", A), ("B", B), ("C", C)):
        if x.ndim not in (base, base + 1):
            prod = f"{ins.products}, " if ins.products > 1 else ""
            raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {prod}rows, cols), got {x.shape}")
    e = None
    if ins.is_sparse:
        aw, e = sparse_a(ins, A, metadata, selector)
    else:
        if metadata is not None:
            raise ValueError(f"{ins.opcode} is dense: it takes no metadata")
        aw = pack(ins, "a", A)
    bw, cw = pack(ins, "b", B), pack(ins, "c", C)
    sc = {}
    if ins.block_scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"{ins.opcode} is block-scaled: pass scale_a (m x {ins.nscale}) and scale_b ({ins.nscale} x n)")
        from ..isa.layouts import pack_scales

        sa, sb = pack_scales(ins, scale_a, scale_b)
        sc = dict(scale_a=sa, scale_b=sb)
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"{ins.opcode} is not block-scaled: it takes no scale_a / scale_b")
    parts = [aw, bw, cw] + ([e] if e is not None else [])
    base_nd = [2, 2, 2, 1][:len(parts)]
    if sc:
        parts += [sc["scale_a"], sc["scale_b"]]
        base_nd += [1, 1]
    batches = {p.shape[0] for p, nd in zip(parts, base_nd) if p.ndim == nd + 1}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    if not batches:
        d = mma(ins.opcode, aw, bw, cw, e, selector=selector, arch=arch, **sc)
        return unpack(ins, "d", d)
    n = batches.pop()
    full = [np.ascontiguousarray(np.broadcast_to(p, (n,) + p.shape[-nd:])) if p.ndim == nd else p
            for p, nd in zip(parts, base_nd)]
    ne = 4 if e is not None else 3
    if sc:
        sc = dict(scale_a=full[ne], scale_b=full[ne + 1])
    d = mma(ins.opcode, *full[:3], full[3] if e is not None else None, selector=selector, arch=arch, **sc)
    return unpack(ins, "d", d)
