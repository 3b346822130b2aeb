"""The jitted runtime of the tensor-core rows (:mod:`.lower_mma`): one warp's register words in and out of an
``mma`` call, and ``ldmatrix`` / ``stmatrix`` between registers and shared memory.

Helpers rather than generated lines: a kernel's statements then compile to calls (numba's compile time
grows with a function's size).  ``R`` is the generated kernel's file of 32-bit registers (registers,
threads); ``regs`` a tuple of register rows (int64, not literals: one compiled helper for every
statement); ``base`` the warp's first thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...engine import warp_mma_jit as _j
from ...engine.linking import unlinked
from .rt import (BAD_ADDRESS, CP_SIZE, MISALIGNED, PARTIAL_WARP, READ, find, peek1, peek2, peek4, poke1, poke2, poke4,
                 round16, track)


@njit(cache=True, nogil=True, inline="always")
def warp_status(act):
    """-1: no lane of the warp is active (a guard: it skips the statement); 0: every lane is; else the
    PARTIAL_WARP status word of :func:`ldmatrix`."""
    n = 0
    for l in range(32):
        n += act[l]
    return -1 if n == 0 else 0 if n == 32 else PARTIAL_WARP << 8


@njit(nogil=True, inline="always")
def _gather(x, rows, R, base, l, wide):
    """Lane l's words of registers ``rows`` into x[0, l] (64-bit registers: two words each, low first)."""
    for i in range(len(rows)):
        w = np.uint64(R[np.uint64(rows[i]), np.uint64(base + l)])
        if wide:
            x[0, l, 2 * i] = np.uint32(w & np.uint64(0xFFFFFFFF))
            x[0, l, 2 * i + 1] = np.uint32(w >> np.uint64(32))
        else:
            x[0, l, i] = np.uint32(w)


def _on_registers(fn, wide=False, sparse=False, scaled=False):
    """``fn`` (a path of :mod:`warpsim.engine.warp_mma_jit`) on the warp's registers: the operands' words
    gathered, D's scattered back, on the working arrays S of :func:`_scratch`; ``wide``: 64-bit registers (R: the
    64-bit file), two words each, low first (the interpreter's f64 operands); ``sparse``: an mma.sp, whose
    metadata register (row ``re``) gives each lane's word to the path's working arrays (their first); ``scaled``: a
    block-scaled form, its scale registers (rows ``rsa``, ``rsb``) and selectors ``sels`` (byte-id-a, thread-id-a,
    byte-id-b, thread-id-b) give the rows' and columns' scale bits (the working arrays' second and third).  Returns a
    status word (see :func:`ldmatrix`)."""
    @njit(nogil=True, inline="always")
    def call(plan, S, R, base, act, ra, rb, rc, rd, re=-1, rsa=-1, rsb=-1, sels=(0, 0, 0, 0)):
        st = warp_status(act)
        if st != 0:
            return max(st, 0)
        a, b, c, d, inner = S
        if sparse and re >= 0:      # (a dense block-scaled form passes no metadata row)
            _metadata(inner[0], R, re, base)
        if scaled:
            _scale_bits(inner[1], inner[2], R, rsa, rsb, sels, base)
        for l in range(32):
            _gather(a, ra, R, base, l, wide)
            _gather(b, rb, R, base, l, wide)
            _gather(c, rc, R, base, l, wide)
        fn(plan, inner, a, b, c, d)
        for l in range(32):
            for i in range(len(rd)):
                if wide:
                    R[np.uint64(rd[i]), np.uint64(base + l)] = (np.uint64(d[0, l, 2 * i])
                                                                | (np.uint64(d[0, l, 2 * i + 1]) << np.uint64(32)))
                else:
                    R[np.uint64(rd[i]), np.uint64(base + l)] = d[0, l, i]
        return 0
    return call


def _scratch(fn):
    """The working arrays of an mma statement's calls (``fn``: the path's ``scratch_<path>``), made once in the
    compiled kernel's prologue: the operands' words and what the path needs (allocations cost more than a
    warp's arithmetic)."""
    @njit(nogil=True, inline="always")
    def make(plan, na, nb, nc, nd):
        a = np.empty((1, 32, na), np.uint32)
        b = np.empty((1, 32, nb), np.uint32)
        c = np.empty((1, 32, nc), np.uint32)
        d = np.empty((1, 32, nd), np.uint32)
        return a, b, c, d, fn(plan, a, b, c, d)
    return make


def _tc_on_registers(sparse):
    """The float tensor-core path on the warp's registers: the elements gathered straight from the register file
    into the kernel's matrix order, D's scattered straight back (one copy each way, not two); as _on_registers
    (``sparse``: an mma.sp, S from scratch_tc_sparse)."""
    @njit(nogil=True, inline="always")
    def call(plan, S, R, base, act, ra, rb, rc, rd, re=-1):
        st = warp_status(act)
        if st != 0:
            return max(st, 0)
        if sparse:
            inner, E = S
            _metadata(E, R, re, base)
        else:
            inner, E = S, None
        A, B, C, D = _j.tc_register_units(plan, inner)
        pa, pb, pc, pd = plan[19], plan[20], plan[21], plan[22]     # (the plan's: constants of the kernel's code)
        _j.units_in(A, pa, R, base, ra)
        _j.units_in(B, pb, R, base, rb)
        _j.units_in(C, pc, R, base, rc)
        _j.mma_tc_gathered(plan, inner, E)
        _j.units_out(D, pd, R, base, rd)
        return 0
    return call


@njit(nogil=True, inline="always")
def _metadata(E, R, re, base):
    """E[0, l] = lane l's word of the metadata register (row ``re``), as the interpreter reads an mma.sp's."""
    for l in range(32):
        E[0, l] = R[np.uint64(re), np.uint64(base + l)]


@njit(nogil=True, inline="always")
def _scale_bits(SFA, SFB, R, rsa, rsb, sels, base):
    """Row m's scale bits: bytes byte-id-a + q of lane 4 (m % 8) + 2 thread-id-a + m // 8 of register ``rsa``; column
    n's: bytes byte-id-b + q of lane 4 n + thread-id-b of ``rsb`` (engine.kernel.scale_factors, for one warp)."""
    bida, tida, bidb, tidb = sels
    for m in range(SFA.shape[1]):
        v = np.uint64(R[np.uint64(rsa), np.uint64(base + 4 * (m % 8) + 2 * tida + m // 8)])
        for q in range(SFA.shape[2]):
            SFA[0, m, q] = (v >> np.uint64(8 * (bida + q))) & np.uint64(0xFF)
    for n in range(SFB.shape[1]):
        v = np.uint64(R[np.uint64(rsb), np.uint64(base + 4 * n + tidb)])
        for q in range(SFB.shape[2]):
            SFB[0, n, q] = (v >> np.uint64(8 * (bidb + q))) & np.uint64(0xFF)


#: mma_tc(_sparse)(plan, S, R, base, A rows, B rows, C rows, D rows[, metadata row])
mma_tc, mma_tc_sparse = _tc_on_registers(False), _tc_on_registers(True)


@njit(cache=True, nogil=True)
def scratch_tc(plan, na, nb, nc, nd):
    """mma_tc's working arrays: the kernel's own only (the registers are gathered straight into them).  Made once a
    run, by a cached function of its own rather than inlined: its array views and allocations are numba overloads
    that every process otherwise compiled again for the kernel (~0.4 s of an sm_80 GEMM's first compile).  (The
    per-call views of them, ``_j.tc_register_units``, stay in the call: made here and passed in, the sm_80 GEMM's
    launches ran 4% slower.)"""
    inner = _j.scratch_tc(plan, np.empty((1, 32, na), np.uint32), np.empty((1, 32, nb), np.uint32),
                          np.empty((1, 32, nc), np.uint32), np.empty((1, 32, nd), np.uint32))
    return inner


#: what the compiled kernels call, by symbol (engine/linking.py: not compiled again inside every kernel)
scratch_tc_by_symbol = unlinked(scratch_tc)


@njit(nogil=True, inline="always")
def scratch_tc_sparse(plan, na, nb, nc, nd):
    """mma_tc_sparse's working arrays: scratch_tc's and the warp's metadata words."""
    return scratch_tc_by_symbol(plan, na, nb, nc, nd), np.empty((1, 32), np.uint32)


#: mma_<path>(plan, S, R, base, A rows, B rows, C rows, D rows) for each path of the engine, and
#: scratch_<path>(plan, A, B, C, D registers) its working arrays S
mma_int, mma_generic = (_on_registers(_j.OWN[p]) for p in ("int", "generic"))
mma_int_sparse, mma_generic_sparse = (_on_registers(_j.OWN[p], sparse=True) for p in ("int_sparse", "generic_sparse"))
#: the same on 64-bit registers (f64 mma: the generic path, the host-FPU chain's words)
mma64_generic = _on_registers(_j.OWN["generic"], wide=True)
scratch_int, scratch_generic, scratch_int_sparse = (
    _scratch(f) for f in (_j.scratch_int, _j.scratch_generic, _j.scratch_int_sparse))
#: the generic path of a sparse form keeps the metadata words as the integer path's does
scratch_generic_sparse = scratch_int_sparse
#: a block-scaled form on the generic path (dense or sparse): mma_generic_scaled(plan, S, R, base, A .. D rows,
#: metadata row, scale-a row, scale-b row, (byte-id-a, thread-id-a, byte-id-b, thread-id-b))
mma_generic_scaled = _on_registers(_j.OWN["generic_scaled"], sparse=True, scaled=True)


@njit(nogil=True, inline="always")
def scratch_generic_scaled(plan, na, nb, nc, nd, nscale):
    """mma_generic_scaled's working arrays: the operands' words, the metadata words, the rows' (M) and columns' (N)
    scale bits (the plan's M, N: items 4, 5 of the generic path's arguments)."""
    return (np.empty((1, 32, na), np.uint32), np.empty((1, 32, nb), np.uint32), np.empty((1, 32, nc), np.uint32),
            np.empty((1, 32, nd), np.uint32),
            (np.zeros((1, 32), np.uint32), np.empty((1, plan[4], nscale), np.uint64),
             np.empty((1, plan[5], nscale), np.uint64)))


@njit(cache=True, nogil=True)
def _rows_ok(act, rows, n, smem_bytes):
    """0, or the status word of the first of the 8n row addresses (rows[l], from lane l) that is not 16-byte
    aligned or not inside the CTA's shared memory; a warp only some of whose lanes are active first."""
    st = warp_status(act)
    if st != 0:
        return st
    for l in range(8 * n):
        if rows[l] % np.uint64(16) != np.uint64(0):
            return (MISALIGNED << 8) | l
        if rows[l] + np.uint64(16) > np.uint64(smem_bytes):
            return (BAD_ADDRESS << 8) | l
    return 0


@njit(cache=True, nogil=True)
def ldmatrix(R, base, act, regs, smem, smem_bytes, rows, trans):
    """Matrix k of ``regs`` (8x8 b16) from the shared-memory rows rows[8k..8k+7] (offsets from ``smem``,
    the CTA's shared memory): lane l takes row l/4, columns 2(l%4), 2(l%4)+1, of the matrix or (``trans``)
    of its transpose.  Returns 0, or a status word: code << 8 | the lane at fault (nothing ran then).
    Indices computed here are unsigned: numba then adds no negative-index wrap-around to each access."""
    st = _rows_ok(act, rows, len(regs), smem_bytes)
    if st != 0:
        return max(st, 0)
    for k in range(len(regs)):
        for l in range(32):
            if trans:
                r0 = smem + np.int64(rows[np.uint64(8 * k + 2 * (l & 3))]) + 2 * (l >> 2)
                r1 = smem + np.int64(rows[np.uint64(8 * k + 2 * (l & 3) + 1)]) + 2 * (l >> 2)
                v = peek2(r0) | (peek2(r1) << np.uint64(16))
            else:
                v = peek4(smem + np.int64(rows[np.uint64(8 * k + (l >> 2))]) + 4 * (l & 3))
            R[np.uint64(regs[k]), np.uint64(base + l)] = np.uint32(v)
    return 0


@njit(cache=True, nogil=True)
def stmatrix(R, base, act, regs, smem, smem_bytes, rows, trans):
    """The inverse of :func:`ldmatrix`: each lane's word of matrix k to the rows rows[8k..8k+7]."""
    st = _rows_ok(act, rows, len(regs), smem_bytes)
    if st != 0:
        return max(st, 0)
    for k in range(len(regs)):
        for l in range(32):
            v = R[np.uint64(regs[k]), np.uint64(base + l)]
            if trans:
                poke2(smem + np.int64(rows[np.uint64(8 * k + 2 * (l & 3))]) + 2 * (l >> 2), v & np.uint32(0xFFFF))
                poke2(smem + np.int64(rows[np.uint64(8 * k + 2 * (l & 3) + 1)]) + 2 * (l >> 2), v >> np.uint32(16))
            else:
                poke4(smem + np.int64(rows[np.uint64(8 * k + (l >> 2))]) + 4 * (l & 3), v)
    return 0


@njit(cache=True, nogil=True)
def cp_async(act, dst, src, size, n, smem, smem_bytes, bases, sizes, ptrs, trk, toff):
    """cp.async of ``n`` bytes for each active lane l: src-size size[l] bytes from global address src[l]
    (int64 bits), zeros after them, to the shared-memory offset dst[l] (global reads recorded: rt.track).
    Returns 0 or a status word (code << 8 | lane; dst[lane] then holds the value to report)."""
    for l in range(32):
        if not act[l]:
            continue
        z = np.uint64(size[l])
        s = np.uint64(src[l])
        a = dst[l]
        if z > np.uint64(n):
            dst[l] = z
            return (CP_SIZE << 8) | l
        if a % np.uint64(n) != np.uint64(0):
            return (MISALIGNED << 8) | l
        if a + np.uint64(n) > np.uint64(smem_bytes):
            return (BAD_ADDRESS << 8) | l
        p = smem + np.int64(a)
        if z == np.uint64(n):
            k = find(bases, sizes, s, n)
            if s % np.uint64(n) != np.uint64(0) or k < 0:
                dst[l] = s
                return ((MISALIGNED if s % np.uint64(n) != np.uint64(0) else BAD_ADDRESS) << 8) | l
            q = ptrs[k] + np.int64(s - bases[k])
            track(trk, toff, k, np.int64(s - bases[k]), n, READ)
            for j in range(n // 4):
                poke4(p + 4 * j, peek4(q + 4 * j))
        else:
            for j in range(n):
                b = np.uint64(0)
                if np.uint64(j) < z:
                    k = find(bases, sizes, s + np.uint64(j), 1)
                    if k < 0:
                        dst[l] = s + np.uint64(j)
                        return (BAD_ADDRESS << 8) | l
                    b = peek1(ptrs[k] + np.int64(s + np.uint64(j) - bases[k]))
                    track(trk, toff, k, np.int64(s + np.uint64(j) - bases[k]), 1, READ)
                poke1(p + j, b)
    return 0


@njit(cache=True, nogil=True)
def f32_to_half(w, eb, mb, nan):
    """The f32 word ``w`` rounded to nearest even in a 16-bit float of ``eb`` exponent and ``mb`` mantissa bits
    (f16: 5, 10; bf16: 8, 7) with infinities: overflow gives infinity, NaN the word ``nan`` (the
    interpreter's ``convert.float_to_float``)."""
    w = np.uint32(w)
    sign = np.int64(w >> np.uint32(31)) << (eb + mb)
    e = np.int64((w >> np.uint32(23)) & np.uint32(0xFF))
    m = np.int64(w & np.uint32(0x7FFFFF))
    inf = sign | (((np.int64(1) << eb) - 1) << mb)
    if e == 255:
        return np.uint64(nan) if m != 0 else np.uint64(inf)
    full, lsb = (m, -149) if e == 0 else (m | 0x800000, e - 150)
    return round16(sign, full, lsb, eb, mb)


@njit(cache=True, nogil=True)
def flush32(w):
    """.ftz: an f32 subnormal word becomes the zero of its sign."""
    w = np.uint32(w)
    if (w & np.uint32(0x7F800000)) == np.uint32(0) and (w & np.uint32(0x7FFFFF)) != np.uint32(0):
        return w & np.uint32(0x80000000)
    return w
