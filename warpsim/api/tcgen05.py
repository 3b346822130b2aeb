"""``tcgen05.mma`` (sm_100a, datacenter Blackwell) on matrices: the ``matmul`` path.

A ``tcgen05.mma`` spelling names no shape or types; here they come from the arrays (M from A,
N from B, element types from the dtypes or ``types=``) and are written into an instruction
descriptor (:mod:`warpsim.isa.tcgen05`), which is checked against the spelling exactly as a
kernel's descriptor would be.  The arithmetic is the published model (MMA-Sim), run by the
engine's exact dot kernels (:mod:`warpsim.engine.tcgen05`): modelled, not verified on a B200.
"""

from __future__ import annotations

import numpy as np

from ..isa import tcgen05 as _t
from ..isa.catalog import Tcgen05Opcode
from ..isa.codec import to_bits as _values_to_bits, to_values as _bits_to_values
from ..engine.tcgen05 import compute
from ..isa.types import SCALE_TYPES

#: numpy dtype name -> PTX type name, per role (tf32 matrices are given as float32)
_AB_TYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "float8_e4m3fn": "e4m3",
             "float8_e5m2": "e5m2", "float6_e2m3fn": "e2m3", "float6_e3m2fn": "e3m2", "float4_e2m1fn": "e2m1",
             "int8": "s8", "uint8": "u8"}
_D_TYPES = {"float16": "f16", "float32": "f32", "int32": "s32"}
_SCALE_DTYPES = {"float8_e8m0fnu": "ue8m0", "float8_e4m3fn": "ue4m3"}


def _types(op: Tcgen05Opcode, A, B, C, types):
    if types is not None:
        if isinstance(types, dict):
            t = (types.get("a"), types.get("b"), types.get("d"))
        elif isinstance(types, (tuple, list)) and len(types) == 3:
            t = tuple(types)
        else:
            raise ValueError("types must be (A type, B type, D type) or a dict with keys 'a', 'b', 'd', "
                             f"e.g. ('e4m3', 'e2m1', 'f32'); got {types!r}")
        a, b, d = t
    else:
        a, b = (_AB_TYPES.get(np.asarray(x).dtype.name) for x in (A, B))
        for name, x, got in (("A", A, a), ("B", B, b)):
            if got is None:
                raise ValueError(f"cannot tell {name}'s element type from dtype {np.asarray(x).dtype}: pass types=(a, b, d) "
                                 f"(kind::{op.kind} types: {sorted(_t.TYPE_CODES[op.kind])})")
        d = None
    if d is None:
        d = _D_TYPES.get(np.asarray(C).dtype.name) if C is not None else ("s32" if op.kind == "i8" else "f32")
        if d is None:
            raise ValueError(f"cannot tell D's type from C's dtype {np.asarray(C).dtype}; pass types=(a, b, d)")
    return a, b, d


def _scale_bits(name, x, shape, stype):
    x = np.asarray(x)
    if x.shape[-2:] != shape or x.ndim not in (2, 3):
        raise ValueError(f"{name} must have shape ([batch,] {shape[0]}, {shape[1]}), got {x.shape}")
    if x.dtype == np.uint8:
        return x.astype(np.uint64)
    t = SCALE_TYPES[stype]
    v = x.astype(t.numpy_dtype)
    if stype == "ue4m3" and (np.asarray(v, dtype=np.float64) < 0).any():
        raise ValueError(f"{name}: ue4m3 scale factors are unsigned; got a negative value")
    return v.view(np.uint8).astype(np.uint64)


def descriptor_for(op, A, B, C=None, *, types=None, scale_a=None, scale_type=None, negate_a=False,
                   negate_b=False, saturate=False) -> _t.InstrDesc:
    """The instruction descriptor a call with these matrices stands for (checked against the spelling)."""
    op = _t.parse_tcgen05(op)
    a, b, d = _types(op, A, B, C, types)
    if op.block_scaled and scale_type is None:
        sdt = np.asarray(scale_a).dtype.name if scale_a is not None else ""
        # raw uint8 bits: ue4m3 for 16-element blocks (NVFP4), ue8m0 otherwise; pass scale_type to choose
        scale_type = _SCALE_DTYPES.get(sdt, "ue4m3" if op.scale_block == 16 else "ue8m0")
    m, n = np.asarray(A).shape[-2], np.asarray(B).shape[-1]
    desc = _t.InstrDesc(kind=op.kind, atype=a, btype=b, dtype=d, m=int(m), n=int(n), sparse=op.sparse,
                        saturate=bool(saturate), negate_a=bool(negate_a), negate_b=bool(negate_b),
                        scale_type=scale_type if op.block_scaled else None)
    _t.decode_idesc(desc.encode(), op.kind)    # every field check of a real descriptor
    _t.check_idesc(desc, op)
    return desc


def _check_sparsity(op, A):
    """A sparse tcgen05.mma takes the logical A: at most 2 nonzeros in every 4 consecutive K (tf32: 1 in 2)."""
    group, keep = (2, 1) if op.kind == "tf32" else (4, 2)
    k = A.shape[-1]
    if k % group:
        return   # the shape check names the problem
    nz = (A.astype(np.float64) != 0) if A.dtype.kind != "V" else (A != 0)
    per = nz.reshape(A.shape[:-1] + (k // group, group)).sum(axis=-1)
    if (per > keep).any():
        where = tuple(int(x) for x in np.argwhere(per > keep)[0])
        raise ValueError(f"{op.opcode}: A must be {keep}:{group} sparse along K (at most {keep} nonzeros in every "
                         f"{group} consecutive elements); row {where[-2]}, K {where[-1] * group}..{where[-1] * group + group - 1} "
                         f"has {int(per[where])}")


def matmul_tcgen05(instruction, A, B, C=None, *, types=None, scale_a=None, scale_b=None, scale_type=None,
                   negate_a=False, negate_b=False, saturate=False):
    """D = A x B + C as one ``tcgen05.mma`` computes it (modelled from MMA-Sim; status "modelled").

    A: ([batch,] M, K), B: ([batch,] K, N), C: ([batch,] M, N) or None (zeros; ``enable-input-d`` false).
    K is the kind's (f16 16, tf32 8, f8f6f4/i8/mxf8f6f4 32, mxf4/mxf4nvf4 64); M and N must be a shape
    the spelling's cta_group allows.  Element types from the dtypes (tf32: float32 arrays) or ``types=(a,
    b, d)``.  Block-scaled kinds: ``scale_a`` ([batch,] M, K/block), ``scale_b`` ([batch,] K/block, N) as
    scale-type values or raw uint8 bits; ``scale_type`` "ue8m0" / "ue4m3" (default from the dtype).
    ``negate_a`` / ``negate_b`` / ``saturate``: the descriptor bits.  Sparse spellings (``.sp``, not
    block-scaled): A is the logical M x K matrix, 2:4 sparse along K (tf32 1:2), K twice the dense one; the
    result is the dense rule on the kept products, which for these kinds (zero products never set the
    exponent) is the fused sum over the logical row.  Inputs are never modified.
    """
    op = _t.parse_tcgen05(instruction)
    if op.sparse and op.block_scaled:
        raise NotImplementedError(f"{op.opcode}: block-scaled sparse tcgen05.mma is not wired here (its zero-term rule "
                                  "makes the kept-products sum differ from the logical one, and a logical A cannot say "
                                  "which zeros were kept); warpsim.tcgen05_mma runs it from the stored elements and "
                                  "their metadata (meta_taddr)")
    A, B = np.asarray(A), np.asarray(B)
    if op.sparse:
        _check_sparsity(op, A)
    for name, x in (("A", A), ("B", B)):
        if x.ndim not in (2, 3):
            raise ValueError(f"{name} must have shape ([batch,] rows, cols), got {x.shape}")
    desc = descriptor_for(op, A, B, C, types=types, scale_a=scale_a, scale_type=scale_type, negate_a=negate_a,
                          negate_b=negate_b, saturate=saturate)
    ins = _t.instruction(op, desc)
    m, n, k = ins.mnk
    if C is None:
        C = np.zeros((m, n), dtype=ins.elem("d").numpy_dtype)
    C = np.asarray(C)
    for name, x, shp in (("A", A, (m, k)), ("B", B, (k, n)), ("C", C, (m, n))):
        if x.shape[-2:] != shp or x.ndim not in (2, 3):
            raise ValueError(f"{name} of {op.opcode} (kind::{op.kind}, M={m}, N={n}) must have shape "
                             f"([batch,] {shp[0]}, {shp[1]}), got {x.shape}")
    mats = [A, B, C]
    sc = []
    if op.block_scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"{op.opcode} is block-scaled: pass scale_a ({m} x {ins.nscale}) and scale_b "
                             f"({ins.nscale} x {n}), one .{desc.scale_type} factor per {op.scale_block} K")
        sc = [_scale_bits("scale_a", scale_a, (m, ins.nscale), desc.scale_type),
              _scale_bits("scale_b", scale_b, (ins.nscale, n), desc.scale_type)]
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"{op.opcode} is not block-scaled: it takes no scale_a / scale_b")
    batches = {x.shape[0] for x in mats + sc if x.ndim == 3}
    if len(batches) > 1:
        raise ValueError(f"batch sizes differ: {sorted(batches)}")
    batched = bool(batches)
    G = batches.pop() if batches else 1

    def full(x):
        return np.broadcast_to(x if x.ndim == 3 else x[None], (G,) + x.shape[-2:])

    at, bt, dt = ins.elem("a"), ins.elem("b"), ins.elem("d")
    Ab = _values_to_bits(full(A), at)
    Bb = np.swapaxes(_values_to_bits(full(B), bt), 1, 2)
    Cb = _values_to_bits(full(C), dt)
    if at.is_float:   # the descriptor's negate bits flip the sign of every A / B element
        if desc.negate_a:
            Ab = Ab ^ np.uint64(1 << (at.width - 1))
        if desc.negate_b:
            Bb = Bb ^ np.uint64(1 << (bt.width - 1))
    SA = SB = None
    if sc:
        SA, SB = full(sc[0]), np.swapaxes(full(sc[1]), 1, 2)
    D = _bits_to_values(compute(ins, Ab, Bb, Cb, SA, SB), dt)
    return D if batched else D[0]


def tcgen05_mma(instruction, tmem, d_taddr, a_desc, b_desc, idesc, *, smem, enable_input_d=True,
                scale_a_taddr=None, scale_b_taddr=None, a_taddr=None, meta_taddr=None, peer=None):
    """One ``tcgen05.mma`` on tensor memory and shared memory, as a kernel issues it (modelled).

    instruction: a tcgen05.mma spelling; tmem: the CTA's :class:`warpsim.ptx.tmem.TensorMemory`, updated in
    place; d_taddr: D's tensor-memory address; a_desc / b_desc: sm_100 shared-memory descriptors
    (:func:`warpsim.isa.tcgen05.encode_smem_desc`) into ``smem`` (the CTA's shared bytes from address 0,
    numpy.uint8); idesc: the 32-bit instruction descriptor.  enable_input_d false: D = A x B.
    Block-scaled kinds: ``scale_a_taddr`` / ``scale_b_taddr`` in tensor memory (row i's factors in lane
    i % 128, column + i // 128, bytes scale-id ..).  A from tensor memory: ``a_desc=None, a_taddr=...``
    (row i in lane i, elements packed along the cells; ``.ashift`` moves rows down one lane: layout guesses).
    Sparse spellings: A holds the K/2 kept elements, ``meta_taddr`` their metadata in tensor memory.
    ``cta_group::2``: ``peer=(tensor memory, shared memory)`` of the pair's other CTA (``tmem``/``smem`` are
    the even-ranked one's).  D lands by the PTX ISA's data-path layouts (M 32/64/128 with .ws, M 64 / 128,
    M 128 / 256 on a pair), 32-bit cells (f16 D in the low half).  All modelled: see
    :func:`warpsim.ptx.tmem.mma` and docs/tcgen05.md for which layout choices are guesses.

    Example: every shared-memory element 1.0 (f16), D starts at 1.0 in tensor memory.

    >>> from warpsim.isa import tcgen05
    >>> from warpsim.ptx.tmem import TensorMemory
    >>> sm = np.ones(8192, np.float16).view(np.uint8)
    >>> desc = tcgen05.encode_smem_desc(0, 128, 256)                            # start, LBO, SBO
    >>> idesc = tcgen05.encode_idesc("f16", "f16", "f16", "f32", 128, 32)       # kind, A, B, D types, M, N
    >>> tm = TensorMemory()
    >>> d = tm.alloc(32)
    >>> tm.cells[:, :32] = np.float32(1).view(np.uint32)
    >>> warpsim.tcgen05_mma("tcgen05.mma.cta_group::1.kind::f16", tm, d, desc, desc, idesc, smem=sm)
    >>> tm.cells[0, :4].view(np.float32)                                       # 1 + 16 products of 1 * 1
    array([17., 17., 17., 17.], dtype=float32)
    """
    from ..ptx import tmem as _tmem

    if not isinstance(tmem, _tmem.TensorMemory):
        raise TypeError(f"tmem must be a warpsim.ptx.tmem.TensorMemory, not {type(tmem).__name__}")
    if isinstance(idesc, bool) or not isinstance(idesc, (int, np.integer)):
        raise TypeError(f"idesc must be the 32-bit instruction descriptor (an integer), not {type(idesc).__name__}")
    _tmem.mma(tmem, _t.parse_tcgen05(instruction), d_taddr, a_desc, b_desc, int(idesc), smem,
              enable_input_d=enable_input_d, scale_a_taddr=scale_a_taddr, scale_b_taddr=scale_b_taddr,
              a_taddr=a_taddr, meta_taddr=meta_taddr, peer=peer)
