"""The batched engine: unpack register words by layout -> dot products -> repack.

One numba kernel serves every variant.  What differs between variants is data
computed once per (opcode, selector, arch) and cached in a :class:`Plan`:
index tables from :mod:`warpsim._layouts` / :mod:`warpsim._sparse` and the
recipe's parameter vector.  The registry ``DOT_KINDS`` is the only bridge from
recipes to jitted arithmetic: a plan names a kind, the kernel dispatches on it.

Integer and b1 plans take a specialised kernel (:func:`_int_kernel`): the same
unpack -> dot -> repack, but on signed int32 values (b1: whole 32-bit words and
popcounts) with vectorisable inner loops.  It computes the same exact sums as
:func:`warpsim._arith_int.int_dot`; ``WARPSIM_GENERIC=1`` forces the generic
kernel for every kind (used to cross-check the two).

Both kernels split the batch into chunks of warps; the parallel build runs the
chunks on numba's threads and every chunk allocates its scratch once.
"""

from __future__ import annotations

import os
import types
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit, prange

from . import _arch
from ._arith_int import (P_A_BITS, P_A_SIGNED, P_B_BITS, P_B_SIGNED, P_BITOP, P_SAT, BITOP_AND, BITOP_XOR,
                         int_dot, popcount32)

try:  # the floating-point recipe kernels
    from ._arith import tc_dot
except ImportError:  # pragma: no cover - only while a family is being developed
    @njit(cache=True, nogil=True)
    def tc_dot(a, b, n, c, p):
        return np.uint64(0)
try:
    from ._arith_chain import chain_dot
except ImportError:  # pragma: no cover
    @njit(cache=True, nogil=True)
    def chain_dot(a, b, n, c, p):
        return np.uint64(0)
from ._catalog import BY_OPCODE, Instruction
from ._layouts import layout
from ._sparse import metadata_table

#: dot-product kinds a recipe may name (the kernel's dispatch table)
DOT_INT, DOT_TC, DOT_CHAIN = 0, 1, 2
DOT_KINDS = {"int": DOT_INT, "tc": DOT_TC, "chain": DOT_CHAIN}

#: warps per call above which the parallel kernel is used
PARALLEL_THRESHOLD = int(os.environ.get("WARPSIM_PARALLEL_THRESHOLD", "64"))
#: warps per chunk (one scratch allocation per chunk)
CHUNK = int(os.environ.get("WARPSIM_CHUNK", "64"))
#: force the generic kernel for integer kinds too (cross-checks the integer fast path)
FORCE_GENERIC = os.environ.get("WARPSIM_GENERIC", "") not in ("", "0")


@dataclass(frozen=True)
class Plan:
    ins: Instruction
    selector: int
    kind: int
    params: np.ndarray
    # per operand: (32, elements) flat matrix index, word index, bit shift; element bits.
    # B's flat index is column-major (j * K + row): a column of B is contiguous.
    tables: tuple
    sparse_tab: np.ndarray   # (32, na, 5) or (1, 1, 5) dummy
    # integer fast path (None when the plan has none): see _int_tables
    itab: tuple | None = None


def _operand_tables(ins: Instruction, role: str):
    tab = layout(ins.opcode, role)
    rows, cols = ins.matrix_shape(role)
    if role == "b":   # store B transposed: flat = (product, col, row)
        flat = tab[..., 0] * rows * cols + tab[..., 2] * rows + tab[..., 1]
    else:
        flat = tab[..., 0] * rows * cols + tab[..., 1] * cols + tab[..., 2]
    bits = ins.elem(role).bits
    j = np.arange(tab.shape[1])
    if bits == 64:
        word = np.broadcast_to(2 * j, flat.shape)
        shift = np.zeros_like(flat)
    else:
        per = 32 // bits
        word = np.broadcast_to(j // per, flat.shape)
        shift = np.broadcast_to((j % per) * bits, flat.shape)
    return (np.ascontiguousarray(flat, dtype=np.int64), np.ascontiguousarray(word, dtype=np.int64),
            np.ascontiguousarray(shift, dtype=np.int64), bits)


def _int_tables(ins: Instruction, tables, sp):
    """Word-level tables of the integer kernel, or None if a layout does not fit its assumptions.

    abase (32, words_a): index into A (M x K, row-major, logical columns) of the word's first element
    (sparse: into the lane's own element list, wi * elements-per-word);
    the word's elements follow at consecutive columns.  bbase: same into B^T (N x K).  For b1 the word
    itself is the unit (32 consecutive columns / rows).  oi, oj (32, words_d): A-row and B^T-row offsets
    (i*K, j*K) of each C/D word (C and D share one layout).  Sparse A: per element, the logical column
    without its index term (row*K + base + offset), the metadata lane and bit, and the index scale.
    """
    if ins.products != 1:
        return None
    m, n, k = ins.mnk
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, sc, bc), (fd, wd, sd, bd) = tables
    if not (ba == bb and ba in (1, 4, 8) and bc == bd == 32 and np.array_equal(fc, fd)):
        return None
    per = 32 // ba
    ka = k // 2 if ins.is_sparse else k
    ta = layout(ins.opcode, "a")
    tb = layout(ins.opcode, "b")
    # dense A: element j of word wi at row r, column c0 + e
    la = ta[..., 1] * k + ta[..., 2]                       # logical flat (dense) / compressed (sparse)
    lb = tb[..., 2] * k + tb[..., 1]                       # B^T flat
    for flat in ((la if not ins.is_sparse else ta[..., 1] * ka + ta[..., 2]), lb):
        f = flat.reshape(32, -1, per)
        if not (f == f[..., :1] + np.arange(per)).all():
            return None
    if ins.is_sparse:   # sparse A is first unpacked per lane in element order, then scattered by metadata
        abase = np.broadcast_to(np.arange(ta.shape[1] // per) * per, (32, ta.shape[1] // per))
    else:
        abase = la.reshape(32, -1, per)[..., 0]
    bbase = np.ascontiguousarray(lb.reshape(32, -1, per)[..., 0])
    if ba == 1 and ((abase % 32).any() or (bbase % 32).any() or k % 32):
        return None
    td = layout(ins.opcode, "d")
    oi = np.ascontiguousarray(td[..., 1] * k, dtype=np.int64)
    oj = np.ascontiguousarray(td[..., 2] * k, dtype=np.int64)
    if ins.is_sparse:
        spcol = np.ascontiguousarray(ta[..., 1] * k + sp[..., 2] + sp[..., 4])
        sppos = np.ascontiguousarray(sp[..., [0, 1, 3]])
    else:
        spcol = np.zeros((1, 1), np.int64)
        sppos = np.zeros((1, 1, 3), np.int64)
    return tuple(np.ascontiguousarray(x, dtype=np.int64) for x in (abase, bbase, oi, oj, spcol, sppos))


@lru_cache(maxsize=None)
def plan(opcode: str, selector: int, arch: str) -> Plan:
    ins = BY_OPCODE[opcode]
    kind_name, params = _arch.recipe(ins, arch)
    tables = tuple(_operand_tables(ins, r) for r in "abcd")
    sp = metadata_table(opcode, selector) if ins.is_sparse else np.zeros((1, 1, 5), np.int64)
    kind = DOT_KINDS[kind_name]
    itab = _int_tables(ins, tables, sp) if kind == DOT_INT else None
    return Plan(ins, selector, kind, np.asarray(params, dtype=np.int64), tables, np.ascontiguousarray(sp), itab)


# --- the generic kernel --------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _load(words, w, flat, word, shift, bits, out):
    """Scatter one warp's operand words into a flat matrix of raw bit patterns."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if bits == 64 else np.uint64((1 << bits) - 1)
    for lane in range(flat.shape[0]):
        for j in range(flat.shape[1]):
            wi = word[lane, j]
            if bits == 64:
                v = np.uint64(words[w, lane, wi]) | (np.uint64(words[w, lane, wi + 1]) << np.uint64(32))
            else:
                v = (np.uint64(words[w, lane, wi]) >> np.uint64(shift[lane, j])) & mask
            out[flat[lane, j]] = v


@njit(cache=True, nogil=True, inline="always")
def _dot(kind, a, b, n, c, p):
    if kind == DOT_INT:
        return int_dot(a, b, n, c, p)
    if kind == DOT_TC:
        return tc_dot(a, b, n, c, p)
    return chain_dot(a, b, n, c, p)


def _kernel(kind, params, a, b, c, e, d, P, M, N, K, Ka,
            fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse, tf32meta, chunk):
    W = a.shape[0]
    nterms = Ka
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        A = np.empty(P * M * Ka, np.uint64)
        B = np.empty(P * K * N, np.uint64)     # B^T per product: column j is B[(p*N + j)*K : ... + K]
        C = np.empty(P * M * N, np.uint64)
        D = np.empty(P * M * N, np.uint64)
        LC = np.zeros(M * Ka, np.int64)
        BS = np.empty(N * Ka, np.uint64)       # sparse: B^T columns gathered at one row's logical columns
        for w in range(ch * chunk, min(W, (ch + 1) * chunk)):
            _load(a, w, fa, wa, sa, ba, A)
            _load(b, w, fb, wb, sb, bb, B)
            _load(c, w, fc, wc, sc, bc, C)
            if sparse:
                # logical column of every compressed A element, from this warp's metadata
                for lane in range(32):
                    for j in range(fa.shape[1]):
                        idx = (np.int64(e[w, sp[lane, j, 0]]) >> sp[lane, j, 1]) & 3
                        if tf32meta:
                            idx >>= 1
                        LC[fa[lane, j]] = sp[lane, j, 2] + sp[lane, j, 3] * idx + sp[lane, j, 4]
            for p in range(P):
                for i in range(M):
                    av = A[(p * M + i) * Ka:(p * M + i + 1) * Ka]
                    if sparse:
                        for j in range(N):
                            for t in range(Ka):
                                BS[j * Ka + t] = B[j * K + LC[i * Ka + t]]
                        for j in range(N):
                            D[i * N + j] = _dot(kind, av, BS[j * Ka:(j + 1) * Ka], nterms, C[i * N + j], params)
                    else:
                        for j in range(N):
                            bv = B[(p * N + j) * K:(p * N + j + 1) * K]
                            D[(p * M + i) * N + j] = _dot(kind, av, bv, nterms, C[(p * M + i) * N + j], params)
            # repack D
            if bd == 64:
                for lane in range(32):
                    for jj in range(fd.shape[1]):
                        v = D[fd[lane, jj]]
                        wi = wd[lane, jj]
                        d[w, lane, wi] = np.uint32(v & np.uint64(0xFFFFFFFF))
                        d[w, lane, wi + 1] = np.uint32(v >> np.uint64(32))
            else:
                mask = np.uint64((1 << bd) - 1)
                for lane in range(32):
                    for wi in range(d.shape[2]):
                        d[w, lane, wi] = 0
                    for jj in range(fd.shape[1]):
                        d[w, lane, wd[lane, jj]] |= np.uint32((D[fd[lane, jj]] & mask) << np.uint64(sd[lane, jj]))


def _named(fn, name):
    """A copy of ``fn`` under another name.

    numba's on-disk cache keys an entry by the function's module, qualified name, first line and
    signature -- not by the compile flags -- so one Python function compiled both serial and
    parallel=True shares one cache slot, and whichever build is saved first is loaded for both
    (the parallel dispatcher then silently runs the serial code).  Distinct names give distinct slots.
    """
    f = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    f.__qualname__ = name
    f.__doc__ = fn.__doc__
    return f


_serial = njit(cache=True, nogil=True)(_named(_kernel, "_kernel_serial"))
_parallel = njit(cache=True, nogil=True, parallel=True)(_named(_kernel, "_kernel_parallel"))


# --- the integer / b1 kernel ---------------------------------------------------------------

def _int_kernel(params, a, b, a8, b8, c, e, d, M, N, K, abase, bbase, oi, oj, spcol, sppos, sparse, chunk):
    W = a.shape[0]
    abits, asg, bbits, bsg = params[P_A_BITS], params[P_A_SIGNED] != 0, params[P_B_BITS], params[P_B_SIGNED] != 0
    sat = params[P_SAT] != 0
    bitop = params[P_BITOP]
    nwa, nwb, nwd = a.shape[2], b.shape[2], d.shape[2]
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        if abits == 1:
            KW = K // 32
            A1 = np.empty(M * KW, np.uint32)
            B1 = np.empty(N * KW, np.uint32)
            for w in range(ch * chunk, min(W, (ch + 1) * chunk)):
                for lane in range(32):
                    for wi in range(nwa):
                        A1[abase[lane, wi] >> 5] = a[w, lane, wi]
                    for wi in range(nwb):
                        B1[bbase[lane, wi] >> 5] = b[w, lane, wi]
                for lane in range(32):
                    for wi in range(nwd):
                        ra = oi[lane, wi] >> 5
                        rb = oj[lane, wi] >> 5
                        av = A1[ra:ra + KW]
                        bv = B1[rb:rb + KW]
                        s = np.int64(0)
                        if bitop == BITOP_XOR:
                            for t in range(KW):
                                s += popcount32(av[t] ^ bv[t])
                        else:
                            for t in range(KW):
                                s += popcount32(av[t] & bv[t])
                        acc = np.int64(np.int32(c[w, lane, wi])) + s
                        if sat:
                            acc = min(max(acc, -2147483648), 2147483647)
                        d[w, lane, wi] = np.uint32(acc & 0xFFFFFFFF)
        else:
            _int_chunk(a8, b8, c, e, d, ch * chunk, min(W, (ch + 1) * chunk), M, N, K, abits, asg, bbits, bsg, sat,
                       abase, bbase, oi, oj, spcol, sppos, sparse)


@njit(cache=True, nogil=True, inline="always")
def _unpack_bytes(x8, w, lane, nw, base_tab, bits, mask, dst):
    """One lane's words of an 8- or 4-bit operand (seen as int8 bytes) into int16 values at dst.

    Every word's elements go to consecutive positions from base_tab[lane, wi]; ``mask`` is -1 for
    signed types and 0xFF / 0xF for unsigned ones (arithmetic shifts sign-extend, the mask clears).
    """
    if bits == 8:
        for wi in range(nw):
            base = base_tab[lane, wi]
            out = dst[base:base + 4]
            src = x8[w, lane, 4 * wi:4 * wi + 4]
            for q in range(4):
                out[q] = np.int16(src[q]) & mask
    else:
        for wi in range(nw):
            base = base_tab[lane, wi]
            out = dst[base:base + 8]
            src = x8[w, lane, 4 * wi:4 * wi + 4]
            for q in range(4):
                v = np.int16(src[q])
                out[2 * q] = (np.int16(v << 12) >> 12) & mask
                out[2 * q + 1] = (v >> 4) & mask


@njit(cache=True, nogil=True)
def _int_chunk(a8, b8, c, e, d, w0, w1, M, N, K, abits, asg, bbits, bsg, sat, abase, bbase, oi, oj, spcol, sppos,
               sparse):
    """Warps w0..w1-1 of an 8- or 4-bit integer MMA; a8, b8 are the operand words seen as int8 bytes."""
    nwa, nwb, nwd = a8.shape[2] // 4, b8.shape[2] // 4, d.shape[2]
    amask = np.int16(-1) if asg else np.int16((1 << abits) - 1)
    bmask = np.int16(-1) if bsg else np.int16((1 << bbits) - 1)
    # int16 holds every 8/4-bit value, also a sparse A column that two kept elements share (|sum| <= 510);
    # int16 x int16 products summed in int32 (never overflowing: |sum| < 2^23) vectorise to PMADDWD
    A = np.zeros(M * K, np.int16)
    B = np.empty(N * K, np.int16)      # B^T: column j of B is B[j*K : (j+1)*K]
    per = 32 // abits
    AV = np.empty(nwa * per, np.int16)  # sparse: one lane's compressed A values
    for w in range(w0, w1):
        if sparse:
            A[:] = 0
            for lane in range(32):
                _unpack_bytes(a8, w, lane, nwa, abase, abits, amask, AV)
                for j in range(nwa * per):
                    idx = (np.int64(e[w, sppos[lane, j, 0]]) >> sppos[lane, j, 1]) & 3
                    A[spcol[lane, j] + sppos[lane, j, 2] * idx] += AV[j]
        else:
            for lane in range(32):
                _unpack_bytes(a8, w, lane, nwa, abase, abits, amask, A)
        for lane in range(32):
            _unpack_bytes(b8, w, lane, nwb, bbase, bbits, bmask, B)
        # D = C + A B, one C/D word at a time (C and D share a layout)
        for lane in range(32):
            for wi in range(nwd):
                ra = oi[lane, wi]
                rb = oj[lane, wi]
                av = A[ra:ra + K]      # slices: the loop index is then provably >= 0 and the loop vectorises
                bv = B[rb:rb + K]
                s = np.int32(0)
                for t in range(K):
                    s = np.int32(s + np.int32(av[t]) * np.int32(bv[t]))
                acc = np.int64(np.int32(c[w, lane, wi])) + np.int64(s)
                if sat:
                    acc = min(max(acc, -2147483648), 2147483647)
                d[w, lane, wi] = np.uint32(acc & 0xFFFFFFFF)


_int_serial = njit(cache=True, nogil=True)(_named(_int_kernel, "_int_kernel_serial"))
_int_parallel = njit(cache=True, nogil=True, parallel=True)(_named(_int_kernel, "_int_kernel_parallel"))


def run(pl: Plan, a, b, c, e) -> np.ndarray:
    """Execute a plan on validated uint32 arrays of shape (W, 32, words); returns D words."""
    ins = pl.ins
    W = a.shape[0]
    if e is None:
        e = np.zeros((1, 32), np.uint32)
    m, n, k = ins.mnk
    parallel = W >= PARALLEL_THRESHOLD
    if pl.itab is not None and not FORCE_GENERIC:
        d = np.empty((W, 32, ins.words("d")), dtype=np.uint32)
        if W == 0:
            return d
        fn = _int_parallel if parallel else _int_serial
        a8 = a.view(np.int8)   # (W, 32, 4 * words): little-endian bytes, element order within a lane
        b8 = b.view(np.int8)
        fn(pl.params, a, b, a8, b8, c, e, d, m, n, k, *pl.itab, ins.is_sparse, CHUNK)
        return d
    d = np.empty((W, 32, ins.words("d")), dtype=np.uint32)
    if W == 0:
        return d
    ka = k // 2 if ins.is_sparse else k
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, sc, bc), (fd, wd, sd, bd) = pl.tables
    fn = _parallel if parallel else _serial
    fn(pl.kind, pl.params, a, b, c, e, d, ins.products, m, n, k, ka,
       fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd,
       pl.sparse_tab, ins.is_sparse, ins.atype == "tf32", CHUNK)
    return d
