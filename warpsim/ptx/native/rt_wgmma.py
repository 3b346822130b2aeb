"""The jitted runtime of the translator's wgmma rows (:mod:`.lower_wgmma`): one warp's part of a
``wgmma.mma_async`` (dense: :func:`warp_mma`; sparse ``.sp``: :func:`warp_mma_sparse`, B gathered at the columns
the metadata names and the exact kernel, as the interpreter computes it).

A warpgroup's wgmma is computed at issue, as the interpreter does (:mod:`warpsim.ptx.warpgroup`), but by
each of its 4 warps for the 16 rows of D it owns: A's rows from its own registers or through the A
descriptor, all of B through the B descriptor, from the CTA's shared memory, then the engine's exact dot
(:func:`warpsim.engine.wgmma.dot_rows`), or, for the recipes the interpreter computes with the float
tensor-core kernel, that kernel (:data:`warpsim.engine.wgmma.fused_rows`), on working arrays made once a run
(:func:`scratch`).  The descriptor arithmetic is
:func:`warpsim.isa.smem.element_address` compiled; the fragment tables are :func:`warpsim.isa.layouts.layout`'s.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...engine.linking import link_only, unlinked
from ...engine.tc.wgmma import b_place
from ...engine.wgmma import dot_rows, fused_rows, fused_scratch, gathered_rows
from ...numerics.fused import P_D
from ...isa.layouts import layout
from ...isa.smem import element_address
from .rt import peek1, peek2, peek4

#: what :func:`warp_mma` returns besides 0: lanes that disagree or a partial warp / warpgroup, a descriptor
#: it does not take (reserved bits, a base offset), a read past the CTA's shared memory (the value: the address)
UNEVEN, BAD_DESCRIPTOR, OUTSIDE = 1, 2, 3
#: bits of K one wgmma reads per row of A and B (16 f16 / bf16, 8 tf32, 32 fp8 / int8 elements)
K_BITS = 256
_REFERENCE = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
#: the opcodes whose register A fragments are the runtime's for 8- and 32-bit elements
_REFERENCE_A = {8: "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3",
                32: "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
                1: "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc"}


def _fragments():
    """(row, col) of each element of warp 0's lanes: D (32, 128) of the widest N, register A (32, 8) of 16-bit
    types (warp w of a warpgroup: rows + 16 w; a narrower N's D is a prefix, checked by the lowering), then register
    A (32, 16) of 8-bit, (32, 4) of 32-bit and (32, 128) of 1-bit types."""
    tabs = [layout(_REFERENCE, "d")[:32], layout(_REFERENCE, "a")[:32]] + \
        [layout(_REFERENCE_A[b], "a")[:32] for b in (8, 32, 1)]
    return tuple(np.ascontiguousarray(t[..., i]) for t in tabs for i in (1, 2))


D_ROW, D_COL, A_ROW, A_COL, A_ROW8, A_COL8, A_ROW32, A_COL32, A_ROW1, A_COL1 = _fragments()
#: register A's (row, col) tables by element bits (the lowering checks an opcode's layout against them)
A_TABLES = {16: (A_ROW, A_COL), 8: (A_ROW8, A_COL8), 32: (A_ROW32, A_COL32), 1: (A_ROW1, A_COL1)}
#: each D element's place in the fused kernel's panel order of a warp's 16 rows (engine.tc.wgmma.wg_panels)
D_PANEL = (D_COL >> 3) * 16 * 8 + D_ROW * 8 + (D_COL & 7)


def _panel_starts():
    """Where element j of lane 0 lies in the panel order: lane l's lies 2 l further, and element j + 1 (j even) just
    after element j -- so a pair of D registers interleaves into one contiguous run of the panel, which the
    compiler vectorises (checked here against the layout tables rather than assumed)."""
    starts = D_PANEL[0].copy()
    lanes = np.arange(32)[:, None]
    assert (D_PANEL == starts[None, :] + 2 * lanes).all() and (starts[1::2] == starts[0::2] + 1).all()
    return starts


D_START = _panel_starts()
_address = njit(cache=True, nogil=True, inline="always")(element_address)
_SWIZZLE_BYTES = (0, 128, 64, 32)


@njit(cache=True, nogil=True, inline="always")
def _peek(p, nb):
    return peek2(p) if nb == 2 else peek1(p) if nb == 1 else peek4(p)


@njit(cache=True, nogil=True, inline="always")
def _place(i, k, K, panels):
    """Where element (i, k) of a (rows, K) operand goes in a flat array: by row, or (``panels``: B^T for the fused
    kernel) as the fused kernel's B panels (tc.wgmma.b_place)."""
    return b_place(i, k, K) if panels else i * K + k


@njit(cache=True, nogil=True, inline="always")
def _flip(x, sign):
    """imm-scale -1: the sign bit of every element of x flipped."""
    for i in range(x.size):
        x[i] = np.uint64(x[i]) ^ sign


@link_only
@njit(nogil=True)
def _gather(smem, smem_bytes, desc, row0, rows, ebits, K, mn_major, out, panels):
    """out[_place(i, k)] = the ``ebits``-bit element (row0 + i, k < K) a descriptor reads (-> 0 or OUTSIDE..,
    address).
    A 16-byte aligned chunk of elements (8 rows of a 16-bit MN-major operand, 16 bytes of a K-major row) is
    contiguous in shared memory, swizzled or not (every start, LBO, SBO and swizzle width is a multiple of 16
    bytes; the swizzle permutes whole chunks): one address a chunk (element by element where a chunk leaves
    shared memory, to report the first element that does)."""
    d = np.uint64(desc)
    if d & np.uint64(0x3FFFC000C000C000):      # reserved bits, or a base offset (not modelled)
        return BAD_DESCRIPTOR, d
    start = np.int64((d & np.uint64(0x3FFF)) << np.uint64(4))
    lbo = np.int64(((d >> np.uint64(16)) & np.uint64(0x3FFF)) << np.uint64(4))
    sbo = np.int64(((d >> np.uint64(32)) & np.uint64(0x3FFF)) << np.uint64(4))
    w = _SWIZZLE_BYTES[np.int64(d >> np.uint64(62))]
    if ebits == 1:
        return _gather_bits(smem, smem_bytes, start, lbo, sbo, w, row0, rows, K, out)
    nb = ebits // 8
    per = 16 // nb                                       # elements in a chunk
    for i0 in range(0, rows, per if mn_major else 1):
        for k0 in range(0, K, 1 if mn_major else per):
            a = _address(start, lbo, sbo, w, row0 + i0, k0, ebits, mn_major)
            if a >= 0 and a + 16 <= smem_bytes:
                for j in range(per):
                    if mn_major:
                        out[_place(i0 + j, k0, K, panels)] = _peek(smem + a + j * nb, nb)
                    else:
                        out[_place(i0, k0 + j, K, panels)] = _peek(smem + a + j * nb, nb)
                continue
            for j in range(per):
                i, k = (i0 + j, k0) if mn_major else (i0, k0 + j)
                a = _address(start, lbo, sbo, w, row0 + i, k, ebits, mn_major)
                if a < 0 or a + nb > smem_bytes:
                    return OUTSIDE, np.uint64(a)
                out[_place(i, k, K, panels)] = _peek(smem + a, nb)
    return 0, np.uint64(0)


@link_only
@njit(nogil=True)
def _gather_bits(smem, smem_bytes, start, lbo, sbo, w, row0, rows, K, out):
    """_gather of 1-bit elements (K-major: b1 has no imm-trans): element k of a row is bit k % 8 of its byte, and a
    16-byte chunk of 128 elements is contiguous in shared memory."""
    one = np.uint64(1)
    for i in range(rows):
        for k0 in range(0, K, 128):
            a = _address(start, lbo, sbo, w, row0 + i, k0, 1, False)
            for j in range(16):
                if a + j < 0 or a + j + 1 > smem_bytes:
                    return OUTSIDE, np.uint64(a + j)
                v = np.uint64(peek1(smem + a + j))
                for b in range(8):
                    out[i * K + k0 + 8 * j + b] = (v >> np.uint64(b)) & one
    return 0, np.uint64(0)


@link_only
@njit(nogil=True)
def _operands(R32, R64, smem, smem_bytes, base, w, n, ebits, arows, adrow, bdrow, sa, sb, ta, tb, A, B, panels, KB):
    """Warp w's 16 rows of A (flat, by row) and all of B^T (KB elements a row; flat: by row, or as the fused
    kernel's panels) from its registers / descriptors, imm-scale -1 applied (-> 0 or a code of warp_mma, value)."""
    K = K_BITS // ebits
    if adrow < 0 and ebits == 16:    # (the dense f16 / bf16 register path, its shifts and masks constants)
        for l in range(32):
            for j in range(8):
                x = np.uint64(R32[arows[j // 2], base + l])
                A[A_ROW[l, j] * K + A_COL[l, j]] = (x >> np.uint64(16 * (j % 2))) & np.uint64(0xFFFF)
    elif adrow < 0:     # 8-, 32- or 1-bit elements: 4 words a lane, 32 / ebits elements each
        ar, ac = (A_ROW8, A_COL8) if ebits == 8 else ((A_ROW32, A_COL32) if ebits == 32 else (A_ROW1, A_COL1))
        per = 32 // ebits
        mask = np.uint64((1 << ebits) - 1)
        for l in range(32):
            for j in range(4 * per):
                x = np.uint64(R32[arows[j // per], base + l])
                A[ar[l, j] * K + ac[l, j]] = (x >> np.uint64(ebits * (j % per))) & mask
    else:
        e, v = _gather(smem, smem_bytes, R64[adrow, base], 16 * (w % 4), 16, ebits, K, ta, A, False)
        if e:
            return e, v
    e, v = _gather(smem, smem_bytes, R64[bdrow, base], 0, n, ebits, KB, tb, B, panels)
    if e:
        return e, v
    sign = np.uint64(1) << np.uint64(ebits - 1)      # imm-scale -1 (float types only) flips the sign bits
    if sa < 0:
        _flip(A, sign)
    if sb < 0:
        _flip(B, sign)
    return 0, np.uint64(0)


@njit(cache=True, nogil=True, inline="always")
def _lanes(file, row, base):
    """A warp's 32 lanes of a register row, as a view: loops over it compile to vector code (indexing the file
    by (row, base + l) in the loop leaves the compiler unsure the rows do not overlap what the loop writes;
    several times slower)."""
    return file[row, base:base + 32]


@njit(cache=True, nogil=True)
def _uniform(file, row, base):
    for l in range(1, 32):
        if file[row, base + l] != file[row, base]:
            return False
    return True


@njit(cache=True, nogil=True)
def _array(values, dtype):
    out = np.empty(len(values), dtype)
    for i in range(len(values)):
        out[i] = values[i]
    return out


@njit(cache=True, nogil=True)
def scratch(n, ebits, params, tables):
    """A wgmma statement's working arrays for :func:`warp_mma` (made once in each run of the compiled kernel:
    allocations cost more than a warp's rows): A (16, K), B^T (n, K), C and D (16, n) element bits, the recipe
    and the fused kernel's tables as arrays, the fused kernel's own working arrays."""
    K = K_BITS // ebits
    q, scale, emin, rp = tables
    return (np.empty((16, K), np.uint64), np.empty((n, K), np.uint64), np.empty((16, n), np.uint64),
            np.empty((16, n), np.uint64), _array(params, np.int64), _array(q, np.int64).reshape(3, len(q) // 3),
            _array(scale, np.float64), _array(emin, np.float32), _array(rp, np.int64), fused_scratch(16, n, K))


@njit(cache=True, nogil=True, inline="always")
def _issue_checks(R64, P, act, base, W, adrow, bdrow, sdrow, sd):
    """A warp's part of a warpgroup's issue: a whole warpgroup, every lane, the lanes' descriptors and scale-d
    predicate alike (-> code, value, scale-d)."""
    if W % 4:
        return UNEVEN, np.uint64(W), sd
    for l in range(32):
        if not act[l]:
            return UNEVEN, np.uint64(l), sd
    if not _uniform(R64, bdrow, base) or (adrow >= 0 and not _uniform(R64, adrow, base)):
        return UNEVEN, np.uint64(0), sd
    if sdrow >= 0:
        for l in range(32):
            if P[sdrow, base + l] != P[sdrow, base]:
                return UNEVEN, np.uint64(0), sd
        sd = 1 if P[sdrow, base] else 0
    return 0, np.uint64(0), sd


@njit(cache=True, nogil=True, inline="always")
def _c_matrix(R32, drows, base, n, dbits, sd, C):
    """C (16, n) element bits: the warp's D registers, or zeros (scale-d 0)."""
    per = 32 // dbits
    mask = np.uint64((1 << dbits) - 1)
    C[:] = 0
    if sd:      # register by register, its 32 lanes innermost: a row of the file is contiguous
        for j in range(n // 2):
            row, sh = drows[j // per], np.uint64((j % per) * dbits)
            for l in range(32):
                C[D_ROW[l, j], D_COL[l, j]] = (np.uint64(R32[row, base + l]) >> sh) & mask


@njit(cache=True, nogil=True, inline="always")
def _d_words(out, R32, drows, base, dbits):
    """The warp's D registers from D (16, n) element bits."""
    per = 32 // dbits
    mask = np.uint64((1 << dbits) - 1)
    for k in range(len(drows)):
        row = drows[k]
        for l in range(32):
            x = np.uint64(0)
            for h in range(per):
                j = k * per + h
                x |= (out[D_ROW[l, j], D_COL[l, j]] & mask) << np.uint64(h * dbits)
            R32[row, base + l] = np.uint32(x)


@njit(cache=True, nogil=True, _nrt=False)
def warp_mma(R32, R64, P, act, base, w, W, smem, smem_bytes, n, ebits, dbits, drows, arows, adrow, bdrow, sdrow, sd,
             sa, sb, ta, tb, kind, use_fused, S):
    """Warp ``w``'s rows of a dense m64nNkK wgmma of ``ebits``-bit A and B: D's words in R32 rows ``drows`` (read
    unless scale-d is 0: predicate row ``sdrow`` >= 0, else immediate ``sd``), A in R32 rows ``arows`` (16-bit
    types; adrow < 0) or through the descriptor in R64 row ``adrow``, B through R64 row ``bdrow``; ``kind`` the
    engine's dot kind; the float tensor-core kernel (engine.tensorcore._wg_params' tables) when ``use_fused``;
    S: :func:`scratch`.  -> (0 or a code above, value)."""
    e, v, sd = _issue_checks(R64, P, act, base, W, adrow, bdrow, sdrow, sd)
    if e:
        return e, v
    A, B, C, out, p, q, scale, emin, rp, GS = S
    K = K_BITS // ebits
    if use_fused:       # straight into the fused kernel's working arrays (wg_gathered: A by row, B as panels)
        e, v = _operands(R32, R64, smem, smem_bytes, base, w, n, ebits, arows, adrow, bdrow, sa, sb, ta, tb, GS[0],
                         GS[1], True, K)
    else:
        e, v = _operands(R32, R64, smem, smem_bytes, base, w, n, ebits, arows, adrow, bdrow, sa, sb, ta, tb,
                         A.reshape(A.size), B.reshape(B.size), False, K)
    if e:
        return e, v
    if not use_fused:       # the exact kernel: not a fused recipe
        _c_matrix(R32, drows, base, n, dbits, sd, C)
        dot_rows(kind, A, B, C, p, out)
        _d_words(out, R32, drows, base, dbits)
        return 0, np.uint64(0)
    per = 32 // dbits
    mask = np.uint64((1 << dbits) - 1)
    # C's and D's elements in the fused kernel's panel order (D_PANEL)
    RC, DB = GS[2], GS[10]
    if not sd:
        RC[:] = 0
    else:       # elements j, j + 1 of the 32 lanes: one run of the panel (D_START)
        for j in range(0, n // 2, 2):
            s0, s1 = np.uint64((j % per) * dbits), np.uint64(((j + 1) % per) * dbits)
            x0, x1 = _lanes(R32, drows[j // per], base), _lanes(R32, drows[(j + 1) // per], base)
            run = RC[D_START[j]:D_START[j] + 64]
            for l in range(32):
                run[2 * l] = np.uint32((np.uint64(x0[l]) >> s0) & mask)
                run[2 * l + 1] = np.uint32((np.uint64(x1[l]) >> s1) & mask)
    fused_rows(16, n, K, p, q, scale, emin, rp, GS)     # (the compiled kernel checked the host FPU's state first)
    igd = np.uint64(p[P_D + 3])
    if per == 1:      # two registers from one run of the panel (D_START)
        for k in range(0, len(drows), 2):
            y0, y1 = _lanes(R32, drows[k], base), _lanes(R32, drows[k + 1], base)
            run = DB[D_START[k]:D_START[k] + 64]
            for l in range(32):
                y0[l] = np.uint32((run[2 * l] << igd) & mask)
                y1[l] = np.uint32((run[2 * l + 1] << igd) & mask)
    else:             # per == 2: a register's two elements, adjacent in the panel
        for k in range(len(drows)):
            y, run = _lanes(R32, drows[k], base), DB[D_START[2 * k]:D_START[2 * k] + 64]
            for l in range(32):
                y[l] = np.uint32(((run[2 * l] << igd) & mask) | (((run[2 * l + 1] << igd) & mask) << np.uint64(dbits)))
    return 0, np.uint64(0)


@njit(cache=True, nogil=True)
def scratch_sparse(n, ebits, params):
    """A sparse wgmma statement's working arrays for :func:`warp_mma_sparse`: A (16, K/2) compressed, B^T (n, K),
    B gathered at each row's kept columns (16, n, K/2), C and D (16, n), the recipe as an array."""
    K = 2 * K_BITS // ebits
    return (np.empty((16, K // 2), np.uint64), np.empty((n, K), np.uint64), np.empty((16, n, K // 2), np.uint64),
            np.empty((16, n), np.uint64), np.empty((16, n), np.uint64), _array(params, np.int64))


@link_only
@njit(nogil=True)
def _sparse_b(R32, erow, base, w, meta, B, KB, tf32, out):
    """out[i, j, k]: the element of B^T (flat, KB a row) that kept element k of row 16 (w % 4) + i of A multiplies,
    by the metadata word of thread meta[r, k, 0] of the warpgroup (a lane of this warp) at bit meta[r, k, 1]: index
    f picks column meta[r, k, 2] + meta[r, k, 3] f + meta[r, k, 4] (isa.sparse.gather_b, used as written); tf32
    splices the low and the high halves of the value from the columns two indices pick."""
    r0 = 16 * (w % 4)
    n = out.shape[1]
    three = np.uint64(3)
    for i in range(16):
        for k in range(out.shape[2]):
            x = np.uint64(R32[erow, base + meta[r0 + i, k, 0] % 32])
            f = (x >> np.uint64(meta[r0 + i, k, 1])) & three
            if not tf32:
                col = meta[r0 + i, k, 2] + meta[r0 + i, k, 3] * np.int64(f) + meta[r0 + i, k, 4]
                for j in range(n):
                    out[i, j, k] = B[j * KB + col]
                continue
            f1 = (x >> np.uint64(meta[r0 + i, k, 1] + 2)) & three
            c0, c1 = meta[r0 + i, k, 2] + np.int64(f >> np.uint64(1)), meta[r0 + i, k, 2] + np.int64(f1 >> np.uint64(1))
            s0, s1 = np.uint64(16) * (f & np.uint64(1)), np.uint64(16) * (f1 & np.uint64(1))
            for j in range(n):
                out[i, j, k] = ((B[j * KB + c0] >> s0) & np.uint64(0xFFFF)) | \
                    (((B[j * KB + c1] >> s1) & np.uint64(0xFFFF)) << np.uint64(16))


@njit(cache=True, nogil=True, _nrt=False)
def warp_mma_sparse(R32, R64, P, act, base, w, W, smem, smem_bytes, n, ebits, dbits, drows, arows, adrow, bdrow,
                    sdrow, sd, sa, sb, ta, tb, kind, erow, meta, tf32, S):
    """Warp ``w``'s rows of a sparse m64nNkK wgmma (``.sp``): as :func:`warp_mma` (A compressed, K/2 elements a row),
    the metadata words in R32 row ``erow``, ``meta`` the selector's table of :func:`warpsim.isa.sparse.metadata_matrix`
    (64, K/2, 5), ``tf32`` for a tf32 form's spliced halves; the exact kernel (as the interpreter: no sparse form takes
    the fused one).  S: :func:`scratch_sparse`.  -> (0 or a code of warp_mma, value)."""
    e, v, sd = _issue_checks(R64, P, act, base, W, adrow, bdrow, sdrow, sd)
    if e:
        return e, v
    A, B, BS, C, out, p = S
    KB = B.shape[1]
    e, v = _operands(R32, R64, smem, smem_bytes, base, w, n, ebits, arows, adrow, bdrow, sa, sb, ta, tb,
                     A.reshape(A.size), B.reshape(B.size), False, KB)
    if e:
        return e, v
    _sparse_b(R32, erow, base, w, meta, B.reshape(B.size), KB, tf32, BS)
    _c_matrix(R32, drows, base, n, dbits, sd, C)
    gathered_rows(kind, A, BS, C, p, out)
    _d_words(out, R32, drows, base, dbits)
    return 0, np.uint64(0)


#: what the compiled kernels call, by symbol (engine/linking.py): each build (one per combination of the literal
#: sizes, scales and transposes) is compiled once and cached by numba, not optimised and compiled again inside
#: every kernel that runs it
scratch_by_symbol = unlinked(scratch, literal=True)
warp_mma_by_symbol = unlinked(warp_mma, literal=True)
scratch_sparse_by_symbol = unlinked(scratch_sparse, literal=True)
warp_mma_sparse_by_symbol = unlinked(warp_mma_sparse, literal=True)
