"""``warpsim.mma``: the register-level entry point.  The checks and the dispatch to the engine
live in :mod:`warpsim.engine.warp_mma`; ``validate`` and ``validate_scales`` are re-exported."""

from __future__ import annotations

from ..engine.warp_mma import execute, validate, validate_scales

__all__ = ["mma", "validate", "validate_scales"]


def mma(instruction, a, b, c, e=None, *, selector=0, arch="sm_90", scale_a=None, scale_b=None,
        byte_id_a=0, thread_id_a=0, byte_id_b=0, thread_id_b=0):
    """Execute one warp-level PTX ``mma``/``mma.sp`` on raw register words, bit-exact to the GPU.

    instruction: the opcode as written in PTX, e.g. ``"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"``.
    a, b, c: numpy.uint32 arrays, shape (warps, 32, words) or (32, words): each lane's register
    words for the operand in PTX operand order (a .f64 register is two words, low first; element 0
    in the least significant bits).  e: sparse metadata, shape (warps, 32) or (32,).
    selector: the sparsity-selector immediate.  arch: the target ("sm_70", "sm_75", "sm_80", "sm_86",
    "sm_89", "sm_90" (also "sm_90a"), "sm_100", "sm_120", and "sm_120a": sm_120 plus the RTX
    Blackwell ``.kind::`` forms, which exist only there); an opcode the target lacks raises
    ValueError naming the lowest target that has it.  Only sm_90 is verified on hardware; the
    others are modelled from published measurements (``warpsim.explain`` says which rules).
    Block-scaled forms (``.block_scale``) take the PTX operands ``scale-a-data, {byte-id-a,
    thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}`` as keyword arguments: ``scale_a`` and
    ``scale_b`` (uint32, one register per lane: shape (warps, 32) or (32,)) and the four immediates.
    Row m of A takes its scale factors from bytes byte_id_a.. of lane 4*(m%8) + 2*thread_id_a + m//8,
    column n of B from bytes byte_id_b.. of lane 4*n + thread_id_b (modelled, not hardware-verified).
    Returns D's register words, uint32, shape (warps, 32, words_d) or (32, words_d).
    Inputs are never modified.  sm_120a numerics are modelled from published measurements (MMA-Sim).

    Example (the examples of the API reference assume ``import numpy as np, warpsim``):

    >>> op = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    >>> A, B = np.full((16, 16), 1 / 3, np.float16), np.eye(16, 8, dtype=np.float16)
    >>> a, b, c = warpsim.pack(op, "a", A), warpsim.pack(op, "b", B), warpsim.pack(op, "c", np.zeros((16, 8)))
    >>> a.shape, b.shape, c.shape                   # registers per lane: A 4, B 2, C 4
    ((32, 4), (32, 2), (32, 4))
    >>> d = warpsim.mma(op, a, b, c)
    >>> d.dtype, hex(d[0, 0])                       # lane 0's d0 = D[0, 0], f32 bits of f16(1/3)
    (dtype('uint32'), '0x3eaaa000')
    """
    return execute(instruction, a, b, c, e, selector=selector, arch=arch, scale_a=scale_a, scale_b=scale_b,
                   byte_id_a=byte_id_a, thread_id_a=thread_id_a, byte_id_b=byte_id_b, thread_id_b=thread_id_b)
