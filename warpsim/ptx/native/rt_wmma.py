"""The jitted runtime of the wmma rows (:mod:`.lower_wmma`): fragments between registers and memory through the
captured layouts of :mod:`warpsim.ptx.wmma_layouts`, and ``wmma.mma`` as the interpreter computes it
(:mod:`warpsim.ptx.wmma`): the fragments unpacked to matrices, then tiled into the engine's ``mma.sync`` of
16 x 8 tiles (a chain over k), the first copy of a duplicated element read.

``tab`` is a fragment table (32, elements, 2) of (row, col); element j of a lane lies at bits j * bits of its
registers' words (``regs``: register rows of the kernel's 32-bit file ``R``).  Helpers return 0 or a status
word, code << 8 | the lane at fault (its address then in ``addr[lane]``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...engine import warp_mma_jit as _j
from ...engine.chain_fast import f32_to_f16_rne
from .rt import (BAD_ADDRESS, MISALIGNED, READ, WMMA_OPERANDS, WRITTEN, find, peek1, peek2, peek4, poke1, poke2, poke4,
                 track)
from .rt_tc import warp_status


@njit(cache=True, nogil=True)
def _operands(act, addr, ldm):
    st = warp_status(act)
    if st != 0:
        return max(st, 0)
    for l in range(1, 32):
        if addr[l] != addr[0] or ldm[l] != ldm[0]:
            return (WMMA_OPERANDS << 8) | l
    if addr[0] % np.uint64(32) != np.uint64(0):
        return MISALIGNED << 8
    return 0


@njit(cache=True, nogil=True)
def _element(tab, l, j, addr, ld, col, esize, shared, smem, smem_bytes, bases, sizes, ptrs, trk, toff, how):
    """The host address of lane l's element j (-1: outside memory; addr[l] then holds its address); a global
    element is recorded as ``how`` (rt.track)."""
    r, c = np.int64(tab[l, j, 0]), np.int64(tab[l, j, 1])
    ea = addr[0] + np.uint64((c * ld + r if col else r * ld + c) * esize)
    if shared:
        if ea + np.uint64(esize) > np.uint64(smem_bytes):
            addr[l] = ea
            return -1
        return smem + np.int64(ea)
    k = find(bases, sizes, ea, esize)
    if k < 0:
        addr[l] = ea
        return -1
    track(trk, toff, k, np.int64(ea - bases[k]), esize, how)
    return ptrs[k] + np.int64(ea - bases[k])


@njit(cache=True, nogil=True)
def load(R, base, act, regs, tab, bits, addr, ldm, col, shared, smem, smem_bytes, bases, sizes, ptrs, trk, toff):
    """wmma.load: lane l's element j, at (row, col) tab[l, j] of the matrix at addr (every lane's the same)
    with leading dimension ldm (elements), row- or column-major (``col``), into its registers."""
    st = _operands(act, addr, ldm)
    if st != 0:
        return st
    esize = bits // 8
    ld = np.int64(ldm[0])
    words = np.zeros(len(regs), np.uint64)
    for l in range(32):
        words[:] = 0
        for j in range(tab.shape[1]):
            p = _element(tab, l, j, addr, ld, col, esize, shared, smem, smem_bytes, bases, sizes, ptrs, trk, toff,
                         READ)
            if p < 0:
                return (BAD_ADDRESS << 8) | l
            v = peek1(p) if esize == 1 else peek2(p) if esize == 2 else peek4(p)
            words[(j * bits) // 32] |= v << np.uint64((j * bits) % 32)
        for i in range(len(regs)):
            R[regs[i], base + l] = np.uint32(words[i])
    return 0


@njit(cache=True, nogil=True)
def store(R, base, act, regs, tab, bits, addr, ldm, col, shared, smem, smem_bytes, bases, sizes, ptrs, trk, toff):
    """wmma.store.d: the inverse of :func:`load` (lanes in order, elements in order)."""
    st = _operands(act, addr, ldm)
    if st != 0:
        return st
    esize = bits // 8
    ld = np.int64(ldm[0])
    mask = np.uint64((1 << bits) - 1)
    for l in range(32):
        for j in range(tab.shape[1]):
            p = _element(tab, l, j, addr, ld, col, esize, shared, smem, smem_bytes, bases, sizes, ptrs, trk, toff,
                         WRITTEN)
            if p < 0:
                return (BAD_ADDRESS << 8) | l
            v = (np.uint64(R[regs[(j * bits) // 32], base + l]) >> np.uint64((j * bits) % 32)) & mask
            if esize == 1:
                poke1(p, v)
            elif esize == 2:
                poke2(p, v)
            else:
                poke4(p, v)
    return 0


@njit(cache=True, nogil=True)
def _unpack(R, base, regs, tab, bits, rows, cols):
    """A fragment's registers as a (rows, cols) matrix of elements; the first copy of a duplicated one."""
    out = np.zeros((rows, cols), np.uint64)
    mask = np.uint64((1 << bits) - 1)
    for l in range(31, -1, -1):
        for j in range(tab.shape[1] - 1, -1, -1):
            w = np.uint64(R[regs[(j * bits) // 32], base + l])
            out[tab[l, j, 0], tab[l, j, 1]] = (w >> np.uint64((j * bits) % 32)) & mask
    return out


@njit(cache=True, nogil=True)
def _words(mat, r0, c0, lay, bits):
    """(1, 32, words) of an mma.sync operand: lane l's element j is mat[r0 + row, c0 + col] of lay[l, j]."""
    out = np.zeros((1, 32, lay.shape[1] * bits // 32), np.uint32)
    mask = np.uint64((1 << bits) - 1)
    for l in range(32):
        for j in range(lay.shape[1]):
            v = mat[r0 + lay[l, j, 1], c0 + lay[l, j, 2]] & mask
            out[0, l, (j * bits) // 32] |= np.uint32(v << np.uint64((j * bits) % 32))
    return out


def _mma(fn, scratch):
    """``wmma.mma`` through ``fn`` (a path of :mod:`warpsim.engine.warp_mma_jit`, ``scratch`` its working
    arrays, made once a statement) on one m16n8 tile at a time:
    tables = (plan, A, B, C, D fragment tables, the mma's A, B, C layouts, f16 C word -> f32 word); M x N x K the
    wmma shape, kk the mma's k, abits the A / B element width, cbits the mma's C / D width, cin / dout C's and D's
    widths in their registers (16 with cbits 32: an f16 C converted exactly, an f32 D rounded to f16, as
    wmma._wmma_mma)."""
    @njit(nogil=True)
    def call(tables, R, base, act, ra, rb, rc, rd, M, N, K, kk, abits, cbits, cin, dout):
        plan, ta, tb, tc, td, la, lb, lc, h2f = tables
        st = warp_status(act)
        if st != 0:
            return max(st, 0)
        mp = max(M, 16)       # m8n32k16: A's 8 rows padded with zero rows (rows of an mma are independent)
        a = _unpack(R, base, ra, ta, abits, mp, K)
        b = _unpack(R, base, rb, tb, abits, K, N)
        c = _unpack(R, base, rc, tc, cin, mp, N)
        if cin != cbits:
            for i in range(mp):
                for j in range(N):
                    c[i, j] = h2f[c[i, j]]
        d = np.zeros((mp, N), np.uint64)
        cmask = np.uint64((1 << cbits) - 1)
        S = scratch(plan, _words(a, 0, 0, la, abits), _words(b, 0, 0, lb, abits), _words(c, 0, 0, lc, cbits),
                    _words(c, 0, 0, lc, cbits))
        for mi in range(mp // 16):
            for ni in range(N // 8):
                acc = _words(c, mi * 16, ni * 8, lc, cbits)
                for k0 in range(0, K, kk):
                    out = np.empty_like(acc)
                    fn(plan, S, _words(a, mi * 16, k0, la, abits), _words(b, k0, ni * 8, lb, abits), acc, out)
                    acc = out
                for l in range(32):
                    for j in range(lc.shape[1]):
                        w = np.uint64(acc[0, l, (j * cbits) // 32]) >> np.uint64((j * cbits) % 32)
                        d[mi * 16 + lc[l, j, 1], ni * 8 + lc[l, j, 2]] = w & cmask
        if dout != cbits:
            for i in range(mp):
                for j in range(N):
                    d[i, j] = np.uint64(f32_to_f16_rne(d[i, j]))
        for l in range(32):
            for i in range(len(rd)):
                R[rd[i], base + l] = 0
            for j in range(td.shape[1]):
                i = (j * dout) // 32
                R[rd[i], base + l] |= np.uint32(d[td[l, j, 0], td[l, j, 1]] << np.uint64((j * dout) % 32))
        return 0
    return call


#: mma_<path>(tables, R, base, act, A rows, B rows, C rows, D rows, M, N, K, kk, abits, cbits, cin, dout) for each
#: engine path
mma_int, mma_tc, mma_generic = (_mma(f, s) for f, s in ((_j.mma_int, _j.scratch_int), (_j.mma_tc, _j.scratch_tc),
                                                        (_j.mma_generic, _j.scratch_generic)))
