"""The batched engine: unpack register words by layout -> dot products -> repack.

One numba kernel serves every variant.  What differs between variants is data
computed once per (opcode, selector, arch) and cached in a :class:`Plan`:
index tables from :mod:`warpsim._layouts` / :mod:`warpsim._sparse` and the
recipe's parameter vector.  The registry ``DOT_KINDS`` is the only bridge from
recipes to jitted arithmetic: a plan names a kind, the kernel dispatches on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit, prange

from . import _arch
from ._arith_int import int_dot

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


@dataclass(frozen=True)
class Plan:
    ins: Instruction
    selector: int
    kind: int
    params: np.ndarray
    # per operand: (32, elements) flat matrix index, word index, bit shift; element bits
    tables: tuple
    sparse_tab: np.ndarray   # (32, na, 5) or (1, 1, 5) dummy


def _operand_tables(ins: Instruction, role: str):
    tab = layout(ins.opcode, role)
    rows, cols = ins.matrix_shape(role)
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


@lru_cache(maxsize=None)
def plan(opcode: str, selector: int, arch: str) -> Plan:
    ins = BY_OPCODE[opcode]
    kind_name, params = _arch.recipe(ins, arch)
    tables = tuple(_operand_tables(ins, r) for r in "abcd")
    sp = metadata_table(opcode, selector) if ins.is_sparse else np.zeros((1, 1, 5), np.int64)
    return Plan(ins, selector, DOT_KINDS[kind_name], np.asarray(params, dtype=np.int64), tables,
                np.ascontiguousarray(sp))


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
            fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd, sp, sparse, tf32meta):
    W = a.shape[0]
    nterms = Ka
    for w in prange(W):
        A = np.zeros(P * M * Ka, np.uint64)
        B = np.zeros(P * K * N, np.uint64)
        C = np.zeros(P * M * N, np.uint64)
        D = np.zeros(P * M * N, np.uint64)
        LC = np.zeros(M * Ka, np.int64)
        av = np.zeros(nterms, np.uint64)
        bv = np.zeros(nterms, np.uint64)
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
                for t in range(Ka):
                    av[t] = A[(p * M + i) * Ka + t]
                for j in range(N):
                    for t in range(Ka):
                        row = LC[i * Ka + t] if sparse else t
                        bv[t] = B[(p * K + row) * N + j]
                    D[(p * M + i) * N + j] = _dot(kind, av, bv, nterms, C[(p * M + i) * N + j], params)
        # repack D
        for lane in range(32):
            for jj in range(fd.shape[1]):
                v = D[fd[lane, jj]]
                wi = wd[lane, jj]
                if bd == 64:
                    d[w, lane, wi] = np.uint32(v & np.uint64(0xFFFFFFFF))
                    d[w, lane, wi + 1] = np.uint32(v >> np.uint64(32))
                else:
                    mask = np.uint64((1 << bd) - 1)
                    d[w, lane, wi] |= np.uint32((v & mask) << np.uint64(sd[lane, jj]))


_serial = njit(cache=True, nogil=True)(_kernel)
_parallel = njit(cache=True, nogil=True, parallel=True)(_kernel)


def run(pl: Plan, a, b, c, e) -> np.ndarray:
    """Execute a plan on validated uint32 arrays of shape (W, 32, words); returns D words."""
    ins = pl.ins
    W = a.shape[0]
    d = np.zeros((W, 32, ins.words("d")), dtype=np.uint32)
    if W == 0:
        return d
    if e is None:
        e = np.zeros((1, 32), np.uint32)
    m, n, k = ins.mnk
    ka = k // 2 if ins.is_sparse else k
    (fa, wa, sa, ba), (fb, wb, sb, bb), (fc, wc, sc, bc), (fd, wd, sd, bd) = pl.tables
    fn = _parallel if W >= PARALLEL_THRESHOLD else _serial
    fn(pl.kind, pl.params, a, b, c, e, d, ins.products, m, n, k, ka,
       fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, sc, bc, fd, wd, sd, bd,
       pl.sparse_tab, ins.is_sparse, ins.atype == "tf32")
    return d
