"""``warpsim.wgmma``: Hopper's warpgroup MMA (``wgmma.mma_async``) on raw words and shared memory.

A call is one ``wgmma.mma_async`` per *group* (a warpgroup: 128 threads).  D's
words in, D's words out; A from registers or through a descriptor into
``smem``, B through a descriptor.  Checking, decoding and computing a call is
:mod:`warpsim.engine.warpgroup_mma` (shared with the PTX layer); this module adds the
matrix front end (``matmul`` on wgmma opcodes) and the corpus replay helper.
"""

from __future__ import annotations

import numpy as np

from ..engine.warpgroup_mma import (ARCHS, compute, execute, operands, pack_d,  # noqa: F401  (re-exported)
                                   wgmma_instruction as _instruction)
from ..isa import smem as _smem
from ..isa.bits import words_to_elements
from ..isa.codec import to_bits, to_values
from ..isa.layouts import layout


def wgmma(instruction, d, a, b, *, smem, e=None, selector=0, scale_d=1, scale_a=1, scale_b=1, trans_a=0,
          trans_b=0, arch="sm_90a"):
    """Execute ``wgmma.mma_async`` for one or many warpgroups, bit-exact to an H100.

    instruction: the opcode, e.g. ``"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"``.
    d: the accumulator's words, uint32 (groups, 128, words) or (128, words).
    a: A's register words (uint32, same form as d) or A's shared-memory descriptor(s)
    (int / numpy.uint64 scalar, or uint64 (groups,)).  b: B's descriptor(s).
    smem: uint8 shared memory from address 0, (bytes,) shared by all groups or (groups, bytes).
    scale_d: 0 (D = A*B) or 1 (D = A*B + D), scalar or per group.  scale_a / scale_b: +1 or -1
    (imm-scale; negate A / B).  trans_a / trans_b: 1 = MN-major (transposed) operand in shared memory.
    Returns the new D words (same shape as d).  Inputs are never modified.

    Example: A and B in shared memory, K-major without swizzle (``warpsim.isa.smem`` writes the bytes).

    >>> from warpsim.isa import smem
    >>> op = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
    >>> A, B = np.ones((64, 16), np.float16), np.full((16, 8), 0.5, np.float16)
    >>> da = smem.encode_descriptor(0, 128, 256)              # start, LBO, SBO (bytes), no swizzle
    >>> db = smem.encode_descriptor(4096, 128, 256)
    >>> sm = np.zeros(8192, np.uint8)
    >>> smem.write_operand(sm, da, A.view(np.uint16), 16)     # (rows, k) element bits, element width
    >>> smem.write_operand(sm, db, B.T.copy().view(np.uint16), 16)
    >>> d = warpsim.wgmma(op, np.zeros((128, 4), np.uint32), da, db, smem=sm, scale_d=0)
    >>> warpsim.unpack(op, "d", d)[0, :4]                     # 16 products of 1 * 0.5
    array([8., 8., 8., 8.], dtype=float32)
    """
    return execute(instruction, d, a, b, smem=smem, e=e, selector=selector, scale_d=scale_d, scale_a=scale_a,
                   scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, arch=arch)


def canonical_smem(ins, A_bits, B_bits, swizzle="none"):
    """Place A (G, 64, K) and B (G, K, N) element bits K-major in shared memory (sparse: A is the
    compressed (G, 64, K/2) matrix).

    Returns (smem (G, bytes) uint8, A descriptor, B descriptor).  ``swizzle``:
    any mode of :data:`warpsim.isa.smem.SWIZZLE_MODES`; LBO/SBO of the usual dense layout
    (no swizzle: core matrices of one row group adjacent along K).
    """
    m, n, k = ins.mnk
    da, size_a = _smem.dense_layout(m, ins.elem("a").bits, "K", swizzle, 0)
    b0 = -(-size_a // 1024) * 1024
    db, size_b = _smem.dense_layout(n, ins.elem("b").bits, "K", swizzle, b0, kbytes=k * ins.elem("b").bits // 8)
    G = A_bits.shape[0]
    sm = np.zeros((G, b0 + size_b), dtype=np.uint8)
    _smem.write_operand(sm, da, A_bits, ins.elem("a").bits)
    _smem.write_operand(sm, db, np.swapaxes(B_bits, -1, -2), ins.elem("b").bits)
    return sm, da, db


def matmul_wgmma(ins, A, B, C=None, *, arch="sm_90a", swizzle="none", metadata=None, selector=0):
    """D = A x B + C for a wgmma opcode on matrices: A (64, K), B (K, N), C (64, N), optional batch axis.

    Sparse opcodes: A is the logical 64 x K matrix, 2:4 sparse (tf32 1:2), compressed here for
    ``selector``; or A is the compressed 64 x K/2 matrix and ``metadata`` its words ([batch,] 128).
    """
    m, n, k = ins.mnk
    A, B = np.asarray(A), np.asarray(B)
    if C is None:
        C = np.zeros((m, n), dtype=ins.elem("d").numpy_dtype)
    C = np.asarray(C)
    if ins.is_sparse:
        return _matmul_sparse(ins, A, B, C, arch, swizzle, metadata, selector)
    if metadata is not None or selector:
        raise ValueError(f"{ins.opcode} is dense: it takes no metadata or selector")
    mats = {}
    for name, x, shp, role in (("A", A, (m, k), "a"), ("B", B, (k, n), "b"), ("C", C, (m, n), "d")):
        if x.shape[-2:] != shp or x.ndim not in (2, 3):
            raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {shp[0]}, {shp[1]}), got {x.shape}")
        mats[name] = x
    batches = {x.shape[0] for x in mats.values() if x.ndim == 3}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    G = batches.pop() if batches else 1
    bits = {}
    for name, role in (("A", "a"), ("B", "b"), ("C", "d")):
        x = mats[name]
        x3 = x if x.ndim == 3 else x[None]
        bits[name] = np.ascontiguousarray(np.broadcast_to(to_bits(x3, ins.elem(role)), (G,) + x.shape[-2:]))
    sm, da, db = canonical_smem(ins, bits["A"], bits["B"], swizzle)
    d = pack_d(ins, bits["C"])
    out = wgmma(ins.opcode, d, np.full(G, da, np.uint64), np.full(G, db, np.uint64), smem=sm, arch=arch)
    tab = layout(ins.opcode, "d")
    D = np.zeros((G, m, n), dtype=np.uint64)
    D[:, tab[..., 1], tab[..., 2]] = words_to_elements(out, ins.elem("d").bits)
    vals = to_values(D, ins.elem("d"))
    return vals if batches or any(x.ndim == 3 for x in mats.values()) else vals[0]


def _matmul_sparse(ins, A, B, C, arch, swizzle, metadata, selector):
    """matmul for wgmma.mma_async.sp: A in registers (compressed), B through a canonical layout."""
    from ..isa.sparse_matrix import sparse_a

    m, n, k = ins.mnk
    aw, e = sparse_a(ins, A, metadata, selector)
    for name, x, shp in (("B", B, (k, n)), ("C", C, (m, n))):
        if x.shape[-2:] != shp or x.ndim not in (2, 3):
            raise ValueError(f"{name} of {ins.opcode} must have shape ([batch,] {shp[0]}, {shp[1]}), got {x.shape}")
    parts = {"a": aw, "e": e, "B": B, "C": C}
    nd = {"a": 2, "e": 1, "B": 2, "C": 2}
    batches = {x.shape[0] for key, x in parts.items() if x.ndim == nd[key] + 1}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    G = batches.pop() if batches else 1
    full = {key: np.ascontiguousarray(np.broadcast_to(x if x.ndim == nd[key] + 1 else x[None], (G,) + x.shape[-nd[key]:]))
            for key, x in parts.items()}
    bb = to_bits(full["B"], ins.elem("b"))
    cb = to_bits(full["C"], ins.elem("d"))
    sm, _, db = canonical_smem(ins, np.zeros((G, m, k // 2), np.uint64), bb, swizzle)
    out = wgmma(ins.opcode, pack_d(ins, cb), full["a"], np.full(G, db, np.uint64), smem=sm, e=full["e"],
                selector=selector, arch=arch)
    tab = layout(ins.opcode, "d")
    D = np.zeros((G, m, n), dtype=np.uint64)
    D[:, tab[..., 1], tab[..., 2]] = words_to_elements(out, ins.elem("d").bits)
    vals = to_values(D, ins.elem("d"))
    return vals if (aw.ndim == 3 or B.ndim == 3 or C.ndim == 3) else vals[0]


def corpus_call(z, e, spec):
    """Arguments of :func:`wgmma` for entry ``e`` of a wgmma corpus (``tests/golden/wgmma_sm90a*.npz``,
    ``wgmma_sp_sm90a*.npz``: sparse entries add the metadata words and the selector).

    The capture kernel's buffer sat at shared address ``base`` (1024 on the H100) and the kernel added
    ``base >> 4`` to the stored descriptors: the shared window is rebuilt from address 0.
    Returns (opcode, d, a, b, keyword arguments).
    """
    op, a_src, sa, sb, ta, tb, *sel = spec.split("|")   # sparse specs end with the sparsity selector
    smem, desc, base = z[f"{e}.smem"], z[f"{e}.desc"], z[f"{e}.base"]
    off = int(base[0])
    if not (base == off).all() or off % 16:
        raise ValueError(f"entry {e}: shared buffers at different or misaligned addresses {sorted(set(base.tolist()))}")
    smem = np.concatenate([np.zeros((smem.shape[0], off), np.uint8), smem], axis=1)
    desc = desc + np.uint64(off >> 4)
    a = z[f"{e}.a"] if a_src == "reg" else desc[:, 0].copy()
    kw = dict(smem=smem, scale_d=z[f"{e}.sd"].astype(np.int64), scale_a=int(sa), scale_b=int(sb),
              trans_a=int(ta), trans_b=int(tb))
    if sel:
        kw.update(e=z[f"{e}.e"], selector=int(sel[0]))
    return op, z[f"{e}.d"], a, desc[:, 1].copy(), kw
