"""The batched engine: unpack register words by layout -> dot products -> repack.

One numba kernel serves every variant.  What differs between variants is data
computed once per (opcode, selector, arch) and cached in a :class:`Plan`:
index tables from :mod:`warpsim.isa.layouts` / :mod:`warpsim.isa.sparse` and the
recipe's parameter vector.  The registry ``DOT_KINDS`` is the only bridge from
recipes to jitted arithmetic: a plan names a kind, the kernel dispatches on it.

Integer and b1 plans take a specialised kernel (:func:`_int_kernel`): the same
unpack -> dot -> repack, but on signed int32 values (b1: whole 32-bit words and
popcounts) with vectorisable inner loops.  It computes the same exact sums as
:func:`warpsim.numerics.integer.int_dot`; ``WARPSIM_GENERIC=1`` forces the generic
kernel for every kind (used to cross-check the two).

Both kernels split the batch into chunks of warps; the parallel build runs the
chunks on numba's threads and every chunk allocates its scratch once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit, prange

from ..numerics import arch as _arch
from ..numerics.integer import (P_A_BITS, P_A_SIGNED, P_B_BITS, P_B_SIGNED, P_BITOP, P_SAT, BITOP_AND, BITOP_XOR,
                         int_dot, popcount32)

from ..numerics.fused import tc_dot
from ..numerics.chain import chain_dot
from ..isa.catalog import BY_OPCODE, Instruction
from ..isa.layouts import layout
from ..isa.sparse import metadata_table
from .hostfpu import madd_row8
from .jitcache import named_copy
from .linking import link_only

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
    # float tensor-core fast path (None when the plan has none): see warpsim.engine.tensorcore.tc_tables
    ftab: dict | None = None
    arch: str = "sm_90"


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

    The kernel never unpacks single elements: a register word holds ``per = 32 / bits`` elements that
    are consecutive in A (row-major, compressed for sparse A) and in B^T (a column of B), so each word
    is stored whole into a word slot of a packed copy of the matrix and the copy is then widened in
    one vectorised pass.  awslot, bwslot (32, words): those slots.  oi, oj (32, words_d): A-row and
    B^T-row offsets (i*K, j*K) of each C/D word (C and D share one layout).  Sparse A, per compressed
    element in row-major order, packed in one int64: its logical position without the index term
    (row*K + group base + offset), the index scale, and the metadata bit and lane of its 2-bit index.
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
    la = ta[..., 1] * ka + ta[..., 2]      # A (compressed when sparse), row-major
    lb = tb[..., 2] * k + tb[..., 1]       # B^T
    slots = []
    for flat in (la, lb):
        f = flat.reshape(32, -1, per)
        if not ((f == f[..., :1] + np.arange(per)).all() and (f[..., 0] % per == 0).all()):
            return None
        slots.append(f[..., 0] // per)
    td = layout(ins.opcode, "d")
    oi = td[..., 1] * k
    oj = td[..., 2] * k
    od = td[..., 1] * n + td[..., 2]
    if ins.is_sparse:
        order = np.argsort(la.ravel())                       # compressed elements in row-major order
        spr = sp.reshape(-1, 5)[order]
        rows = ta[..., 1].ravel()[order]
        pos = rows * k + spr[:, 2] + spr[:, 4]
        assert pos.max() < 1 << 24 and spr[:, 0].max() < 32 and spr[:, 1].max() < 32 and spr[:, 3].max() < 4
        # one int64 per element: position | scale << 24 | bit << 32 | lane << 40
        spm = pos | (spr[:, 3] << 24) | (spr[:, 1] << 32) | (spr[:, 0] << 40)
    else:
        spm = np.zeros(1, np.int64)
    return tuple(np.ascontiguousarray(x, dtype=np.int64) for x in (*slots, oi, oj, spm, od))


@lru_cache(maxsize=None)
def plan(opcode: str, selector: int, arch: str) -> Plan:
    ins = BY_OPCODE[opcode]
    kind_name, params = _arch.recipe(ins, arch)
    tables = tuple(_operand_tables(ins, r) for r in "abcd")
    sp = metadata_table(opcode, selector) if ins.is_sparse else np.zeros((1, 1, 5), np.int64)
    kind = DOT_KINDS[kind_name]
    itab = _int_tables(ins, tables, sp) if kind == DOT_INT else None
    params = np.asarray(params, dtype=np.int64)
    ftab = None
    if kind == DOT_TC:
        from .tensorcore import tc_tables
        ftab = tc_tables(ins, params, tables, sp)
    return Plan(ins, selector, kind, params, tables, np.ascontiguousarray(sp), itab, ftab, arch)


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
def _dot(kind, a, b, n, c, p, xa, xb):
    if kind == DOT_INT:
        return int_dot(a, b, n, c, p)
    if kind == DOT_TC:
        return tc_dot(a, b, n, c, p, xa, xb)
    return chain_dot(a, b, n, c, p)


def _kernel(kind, params, a, b, c, e, d, P, M, N, K, Ka,
            fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse, tf32meta, chunk,
            SFA, SFB, scaled):
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
                            # a tf32 group is four 16-bit halves; 0b0100 / 0b1110 pick element 0 / 1.
                            # Any other nibble splices: B's value is built from half i0 (low 16 bits)
                            # and half i1 (high 16 bits); LC keeps the nibble as -1 - nibble.
                            nib = (np.int64(e[w, sp[lane, j, 0]]) >> sp[lane, j, 1]) & 15
                            if nib == 0b0100 or nib == 0b1110:
                                idx >>= 1
                            else:
                                LC[fa[lane, j]] = -1 - nib
                                continue
                        LC[fa[lane, j]] = sp[lane, j, 2] + sp[lane, j, 3] * idx + sp[lane, j, 4]
            # warps reach this kernel when no fast path takes them (non-finite elements, overflowing
            # passes, spliced tf32 metadata...): the exact per-element recipe
            for p in range(P):
                for i in range(M):
                    av = A[(p * M + i) * Ka:(p * M + i + 1) * Ka]
                    if sparse:
                        for j in range(N):
                            for t in range(Ka):
                                lc = LC[i * Ka + t]
                                if lc >= 0:
                                    BS[j * Ka + t] = B[j * K + lc]
                                else:   # tf32 splice (see above); group t covers logical rows 2t, 2t+1
                                    h0, h1 = (-1 - lc) & 3, (-1 - lc) >> 2
                                    lo = (B[j * K + 2 * t + (h0 >> 1)] >> np.uint64(16 * (h0 & 1))) & np.uint64(0xFFFF)
                                    hi = (B[j * K + 2 * t + (h1 >> 1)] >> np.uint64(16 * (h1 & 1))) & np.uint64(0xFFFF)
                                    BS[j * Ka + t] = lo | (hi << np.uint64(16))
                        for j in range(N):
                            xa = SFA[w, i] if scaled else SFA[0, 0]
                            xb = SFB[w, j] if scaled else SFB[0, 0]
                            D[i * N + j] = _dot(kind, av, BS[j * Ka:(j + 1) * Ka], nterms, C[i * N + j], params, xa, xb)
                    else:
                        for j in range(N):
                            bv = B[(p * N + j) * K:(p * N + j + 1) * K]
                            xa = SFA[w, i] if scaled else SFA[0, 0]
                            xb = SFB[w, j] if scaled else SFB[0, 0]
                            D[(p * M + i) * N + j] = _dot(kind, av, bv, nterms, C[(p * M + i) * N + j], params, xa, xb)
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


_serial = njit(cache=True, nogil=True)(named_copy(_kernel, "_kernel_serial"))
_parallel = njit(cache=True, nogil=True, parallel=True)(named_copy(_kernel, "_kernel_parallel"))


# --- the integer / b1 kernel ---------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _widen(words, bits, mask, out):
    """Packed 8- or 4-bit elements (element 0 in the low bits) -> int16 values in out.

    ``mask`` is -1 for signed types and 0xFF / 0xF for unsigned ones: arithmetic shifts sign-extend,
    the mask clears the sign extension again.  One vectorisable pass over the bytes.
    """
    x8 = words.view(np.int8)
    if bits == 8:
        for t in range(x8.shape[0]):
            out[t] = np.int16(x8[t]) & mask
    else:
        for t in range(x8.shape[0]):
            v = np.int16(x8[t])
            out[2 * t] = (np.int16(v << 12) >> 12) & mask
            out[2 * t + 1] = (v >> 4) & mask


def _int_kernel(params, a, b, c, e, d, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse, chunk):
    W = a.shape[0]
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        _int_chunk(params, a, b, c, e, d, ch * chunk, min(W, (ch + 1) * chunk), M, N, K, awslot, bwslot, oi, oj,
                   spm, od, sparse)


@njit(cache=True, nogil=True, inline="always")
def _store_words(a, b, w, awslot, bwslot, Aw, Bw):
    """One warp's A and B register words, whole, into their packed matrix-order copies."""
    for lane in range(32):
        for wi in range(a.shape[2]):
            Aw[awslot[lane, wi]] = a[w, lane, wi]
        for wi in range(b.shape[2]):
            Bw[bwslot[lane, wi]] = b[w, lane, wi]


@link_only
@njit(nogil=True)
def _int_chunk(params, a, b, c, e, d, w0, w1, M, N, K, awslot, bwslot, oi, oj, spm, od, sparse):
    """Warps w0..w1-1 of an integer or b1 MMA (exact sums as :func:`warpsim.numerics.integer.int_dot`)."""
    abits, asg, bbits, bsg = params[P_A_BITS], params[P_A_SIGNED] != 0, params[P_B_BITS], params[P_B_SIGNED] != 0
    sat = params[P_SAT] != 0
    bitop = params[P_BITOP]
    nwd = d.shape[2]
    Ka = K // 2 if sparse else K
    Aw = np.zeros(M * Ka * abits // 32, np.uint32)   # A (compressed if sparse), packed as in registers
    Bw = np.zeros(N * K * bbits // 32, np.uint32)    # B^T, packed
    if abits == 1:
        KW = K // 32
        for w in range(w0, w1):
            _store_words(a, b, w, awslot, bwslot, Aw, Bw)
            for lane in range(32):
                for wi in range(nwd):
                    av = Aw[oi[lane, wi] >> 5:(oi[lane, wi] >> 5) + KW]
                    bv = Bw[oj[lane, wi] >> 5:(oj[lane, wi] >> 5) + KW]
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
        return
    amask = np.int16(-1) if asg else np.int16((1 << abits) - 1)
    bmask = np.int16(-1) if bsg else np.int16((1 << bbits) - 1)
    # int16 holds every 8/4-bit value, also a sparse A column that two kept elements share (|sum| <= 510);
    # int16 x int16 products summed in int32 (never overflowing: |sum| < 2^23) vectorise to PMADDWD
    A = np.zeros(M * K, np.int16)
    AC = np.zeros(M * Ka, np.int16)    # sparse: compressed A
    B = np.empty(N * K, np.int16)      # B^T: column j of B is B[j*K : (j+1)*K]
    rows8 = N == 8 and K % 2 == 0
    K2 = K // 2
    A32 = A.view(np.int32)             # A's k pairs (2t, 2t + 1) as one int32 (little-endian)
    B32 = B.view(np.int32)
    BP = np.empty(K2 * 8, np.int32)    # B's k pairs by step: BP[t * 8 + j] = (B[2t, j], B[2t + 1, j])
    ACC = np.empty(M * 8, np.int32)
    for w in range(w0, w1):
        _store_words(a, b, w, awslot, bwslot, Aw, Bw)
        _widen(Bw, bbits, bmask, B)
        if sparse:
            _widen(Aw, abits, amask, AC)
            A[:] = 0
            ew = e[w]
            for x in range(M * Ka):
                q = spm[x]
                idx = (np.int64(ew[q >> 40]) >> ((q >> 32) & 31)) & 3
                A[(q & 0xFFFFFF) + ((q >> 24) & 3) * idx] += AC[x]
        else:
            _widen(Aw, abits, amask, A)
        if rows8:
            # D = C + A B by rows: eight int32 sums per row, two k at a time (pmaddwd), all rows at step t before
            # step t + 1 (independent accumulators); then each C/D word takes its sum (od: i * 8 + j)
            for t in range(K2):
                for j in range(8):
                    BP[t * 8 + j] = B32[j * K2 + t]
            for x in range(M * 8):
                ACC[x] = 0
            for t in range(K2):
                for i in range(M):
                    madd_row8(ACC, i * 8, A32[i * K2 + t], BP, t * 8)
            for lane in range(32):
                for wi in range(nwd):
                    acc = np.int64(np.int32(c[w, lane, wi])) + np.int64(ACC[od[lane, wi]])
                    if sat:
                        acc = min(max(acc, -2147483648), 2147483647)
                    d[w, lane, wi] = np.uint32(acc & 0xFFFFFFFF)
            continue
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


_int_serial = njit(cache=True, nogil=True)(named_copy(_int_kernel, "_int_kernel_serial"))
_int_parallel = njit(cache=True, nogil=True, parallel=True)(named_copy(_int_kernel, "_int_kernel_parallel"))


def scale_factors(ins: Instruction, scale_a, scale_b, sel_a, sel_b):
    """Each row's / column's scale-factor bits, gathered from the scale registers (vectorised over warps).

    scale_a, scale_b: uint32 (W, 32); sel_a, sel_b: (byte-id, thread-id).  Returns uint64 arrays
    (W, M, nscale) and (W, N, nscale).  Row m of A reads byte ``byte-id + s`` (s = 0..nscale-1) of lane
    ``4*(m % 8) + 2*thread-id-a + m // 8``; column n of B reads the same bytes of lane
    ``4*n + thread-id-b`` (see docs/numerics.md: a third-party hardware probe of the 1X form, and
    PTX ISA's consecutive-byte rule for 2X / 4X; not verified here).
    """
    m, n, _ = ins.mnk
    rows = np.arange(m)
    la = 4 * (rows % 8) + 2 * int(sel_a[1]) + rows // 8
    lb = 4 * np.arange(n) + int(sel_b[1])
    byt = (int(sel_a[0]) + np.arange(ins.nscale)) * 8
    bytb = (int(sel_b[0]) + np.arange(ins.nscale)) * 8
    return _gather_scales(scale_a, la, byt), _gather_scales(scale_b, lb, bytb)


def _gather_scales(s, lanes, shifts):
    """out[w, r, q] = byte (shifts[q] / 8) of s[w, lanes[r]], as uint64 (one pass, no temporaries)."""
    out = np.empty((s.shape[0], lanes.shape[0], shifts.shape[0]), np.uint64)
    _gather_kernel(np.asarray(s, dtype=np.uint32), lanes.astype(np.int64), shifts.astype(np.uint64), out)
    return out


@njit(cache=True, nogil=True)
def _gather_kernel(s, lanes, shifts, out):
    for w in range(out.shape[0]):
        for r in range(out.shape[1]):
            v = np.uint64(s[w, lanes[r]])
            for q in range(out.shape[2]):
                out[w, r, q] = (v >> shifts[q]) & np.uint64(0xFF)


_NO_SCALES = np.zeros((1, 1, 1), np.uint64)


def run(pl: Plan, a, b, c, e, scales=None) -> np.ndarray:
    """Execute a plan on validated uint32 arrays of shape (W, 32, words); returns D words.
    scales: block-scaled plans, (SFA, SFB) from :func:`scale_factors` (the float tensor-core kernel
    takes ue8m0-scaled ones; the others, and any warp it leaves, take the exact kernel)."""
    if pl.ins.block_scaled:
        return _scaled(pl, a, b, c, _NO_META if e is None else e, scales)
    return runner(pl.ins.opcode, pl.selector, pl.arch)(*(np.ascontiguousarray(x) for x in (a, b, c)),
                                                         None if e is None else np.ascontiguousarray(e))


_NO_META = np.zeros((1, 32), np.uint32)


def _scaled(pl: Plan, a, b, c, e, scales):
    """A block-scaled plan: the float tensor-core kernel where it applies, the exact kernel elsewhere."""
    if FORCE_GENERIC or pl.ftab is None:
        return _generic(pl, a, b, c, e, scales=scales)
    fast = _scaled_runner(pl.ins.opcode, pl.selector, pl.arch)
    a, b, c, e = (np.ascontiguousarray(x) for x in (a, b, c, e))
    sfa, sfb = (np.ascontiguousarray(x, dtype=np.uint64) for x in scales)
    d = np.empty((a.shape[0], 32, pl.ins.words("d")), np.uint32)
    if a.shape[0] == 0:
        return d
    idx = fast(a, b, c, e, d, (sfa, sfb))
    if idx is not None:
        sub = lambda x: np.ascontiguousarray(x[idx])
        d[idx] = _generic(pl, sub(a), sub(b), sub(c), sub(e) if pl.ins.is_sparse else e,
                          scales=(sub(sfa), sub(sfb)))
    return d


@lru_cache(maxsize=None)
def _scaled_runner(opcode: str, selector: int, arch: str):
    from .tensorcore import group_runner, tc_runner

    pl = plan(opcode, selector, arch)
    if pl.ftab.get("group"):
        return group_runner(pl.ins, pl.ftab, pl.tables, pl.sparse_tab, CHUNK, PARALLEL_THRESHOLD)
    return tc_runner(pl.ins, pl.params, pl.ftab, CHUNK, PARALLEL_THRESHOLD)


@lru_cache(maxsize=None)
def runner(opcode: str, selector: int, arch: str):
    """The function (a, b, c, e) -> D words of one plan: a, b, c C-contiguous uint32 (W, 32, words),
    e the (W, 32) metadata words or None.  Everything that does not depend on the call (the kernel,
    its tables, which fast path applies) is decided here once, so that a call costs little more
    than the kernel's own dispatch."""
    pl = plan(opcode, selector, arch)
    ins = pl.ins
    if ins.block_scaled:
        raise ValueError(f"{opcode} is block-scaled: its scale operands go through run(plan, ..., scales=...)")
    m, n, k = ins.mnk
    wd = ins.words("d")
    thr, chunk = PARALLEL_THRESHOLD, CHUNK

    def generic(a, b, c, e, d=None):
        return _generic(pl, a, b, c, _NO_META if e is None else e, d)

    if FORCE_GENERIC:
        return generic
    if pl.itab is not None:
        consts = (m, n, k, *pl.itab, ins.is_sparse, chunk)

        def go_int(a, b, c, e):
            W = a.shape[0]
            d = np.empty((W, 32, wd), np.uint32)
            if W:
                (_int_parallel if W >= thr else _int_serial)(pl.params, a, b, c, _NO_META if e is None else e, d,
                                                             *consts)
            return d

        return go_int
    if pl.kind == DOT_CHAIN:
        from .chain_fast import chain_runner   # host-FPU chain (f64, f16x4)

        fast = chain_runner(ins, pl.params, pl.tables, chunk, thr)
        if fast is not None:
            def go_chain(a, b, c, e):
                d = np.empty((a.shape[0], 32, wd), np.uint32)
                if a.shape[0] == 0 or fast(a, b, c, d):
                    return d
                return generic(a, b, c, e, d)      # some thread's FPU is not in its default state

            return go_chain
    if pl.ftab is not None:
        from .tensorcore import tc_runner   # float tensor-core kernel; flags the warps it leaves to the generic one

        fast = tc_runner(ins, pl.params, pl.ftab, chunk, thr)

        def go_tc(a, b, c, e):
            W = a.shape[0]
            d = np.empty((W, 32, wd), np.uint32)
            if W == 0:
                return d
            idx = fast(a, b, c, _NO_META if e is None else e, d)
            if idx is not None:
                sub = lambda x: np.ascontiguousarray(x[idx])
                d[idx] = generic(sub(a), sub(b), sub(c), sub(e) if ins.is_sparse else None)
            return d

        return go_tc
    return generic


def _generic(pl: Plan, a, b, c, e, d=None, scales=None) -> np.ndarray:
    """The generic kernel on every warp of a, b, c (e: metadata, or a dummy for dense plans)."""
    ins = pl.ins
    W = a.shape[0]
    m, n, k = ins.mnk
    if d is None:
        d = np.empty((W, 32, ins.words("d")), dtype=np.uint32)
    parallel = W >= PARALLEL_THRESHOLD
    ka = k // 2 if ins.is_sparse else k
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, sc, bc), (fd, wd, sd, bd) = pl.tables
    fn = _parallel if parallel else _serial
    fn(pl.kind, pl.params, a, b, c, e, d, ins.products, m, n, k, ka,
       fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd,
       pl.sparse_tab, ins.is_sparse, ins.atype == "tf32", CHUNK,
       *(scales if scales is not None else (_NO_SCALES, _NO_SCALES)), scales is not None)
    return d
