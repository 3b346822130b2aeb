"""Tensor memory (sm_100a): one CTA's 128 lanes x 512 columns of 32-bit cells, as plain numpy objects.

``tcgen05.mma`` writes its accumulator here and the epilogue reads it back with ``tcgen05.ld``.
:class:`TensorMemory` models what the PTX ISA's tcgen05 chapter describes:

* ``alloc`` / ``dealloc`` / ``relinquish_alloc_permit``: column allocations (a power of two, 32..512
  columns, aligned to their size), addresses ``lane << 16 | column``; an allocation that cannot be
  satisfied would block forever on hardware and is an error here, as is a dealloc that does not
  match an allocation or an alloc after the CTA relinquished its permit;
* ``ld`` / ``st`` with the shapes 32x32b, 16x64b, 16x128b, 16x256b, 16x32bx2, the repeat count
  ``.num`` (x1 .. x128), ``.pack::16b`` (ld: two adjacent 16-bit columns into one register) and
  ``.unpack::16b`` (st: one register into two columns);
* ``cp`` from shared memory (128x256b, 4x256b, 128x128b, 64x128b with multicast warpx2::02_13 /
  warpx2::01_23, 32x128b with warpx4), ``shift`` (rows down by one), ``commit`` (an mbarrier
  arrive, with a CTA mask for multicast), ``wait::ld`` / ``wait::st`` and the two fences.

A warp reaches only its quarter of the lanes: warp ``w`` of a warpgroup (``w % 4``) lanes
``32 * (w % 4)`` .. ``32 * (w % 4) + 31``; anything else is a :class:`TmemError` naming the warp
and the lanes.  Everything here is synchronous, so the waits and fences only check their
arguments.  Modelled from the PTX ISA (no B200 was available): the 32x32b thread mapping is the
PTX ISA's one-lane-per-thread picture; the 16-lane shapes follow its figures as read (rows 0-7 and
8-15 of the 16 lanes like the ``mma`` accumulator fragment); see docs/tcgen05.md.

:func:`mma` runs every ``tcgen05.mma`` spelling: D placed by the PTX ISA's data-path table
(:data:`DATAPATH`, layouts A-G; their lane placement beyond row i in lane i is a guess), ``.ws`` and
the collector buffers, sparse A with its metadata in tensor memory, and ``cta_group::2`` across the
CTA pair.
"""

from __future__ import annotations

import re

import numpy as np

LANES, COLUMNS = 128, 512
#: ld/st shape -> (lanes, 32-bit columns) one repetition covers
LDST_SHAPES = {"32x32b": (32, 1), "16x64b": (16, 2), "16x128b": (16, 4), "16x256b": (16, 8), "16x32bx2": (16, 1)}
NUMS = tuple(1 << i for i in range(8))    # .x1 .. .x128
#: cp shape -> (rows, bytes per row) read from shared memory
CP_SHAPES = {"128x256b": (128, 32), "4x256b": (4, 32), "128x128b": (128, 16), "64x128b": (64, 16), "32x128b": (32, 16)}
CP_MULTICAST = {"128x256b": (None,), "4x256b": (None,), "128x128b": (None,),
                "64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}


class TmemError(ValueError):
    """A tensor-memory access the hardware does not allow (or that would hang)."""


def address(lane: int, column: int) -> int:
    return (lane << 16) | column


def split(taddr: int) -> tuple[int, int]:
    if isinstance(taddr, bool) or not isinstance(taddr, (int, np.integer)) or not 0 <= int(taddr) < 1 << 32:
        raise TmemError(f"a tensor-memory address is a 32-bit value (lane << 16 | column), got {taddr!r}")
    taddr = int(taddr)
    lane, col = taddr >> 16, taddr & 0xFFFF
    if lane >= LANES or col >= COLUMNS:
        raise TmemError(f"tensor-memory address {taddr:#010x}: lane {lane} / column {col} outside 128 x 512")
    return lane, col


def _fragment(shape: str, num: int, half_offset: int = 0):
    """(lane offset, column offset) of each (thread, register) of one ld/st, shape (32, regs, 2)."""
    lanes, cols = LDST_SHAPES[shape]
    t = np.arange(32)
    per = 1 if shape == "16x32bx2" else lanes * cols // 32     # registers per thread per repetition
    out = np.zeros((32, per * num, 2), np.int64)
    for rep in range(num):
        for r in range(per):
            j = rep * per + r
            if shape == "32x32b":
                ln, cl = t, np.full(32, rep)
            elif shape == "16x32bx2":
                ln, cl = t % 16, rep + (t // 16) * half_offset
            elif shape == "16x64b":
                ln, cl = t // 2, rep * 2 + t % 2
            elif shape == "16x128b":
                ln, cl = t // 4 + 8 * r, rep * 4 + t % 4
            else:   # 16x256b: the mma m16n8 f32 accumulator picture, 8 columns per repetition
                ln, cl = t // 4 + 8 * (r // 2), rep * 8 + 2 * (t % 4) + r % 2
            out[:, j, 0], out[:, j, 1] = ln, cl
    return out


class TensorMemory:
    """One CTA's tensor memory: ``cells`` (128, 512) uint32, its allocations and its alloc permit."""

    def __init__(self):
        self.cells = np.zeros((LANES, COLUMNS), np.uint32)
        self.allocations: dict[int, int] = {}     # first column -> columns
        self.permit = True
        self.pending = {"ld": 0, "st": 0}
        self.arrivals: list[tuple[int, int]] = []  # (mbarrier address, CTA mask) of every commit
        self.collectors: dict = {}                # collector buffer name -> (operand key, raw elements)

    # --- allocation -----------------------------------------------------------------------------
    def alloc(self, ncols: int) -> int:
        """Allocate ``ncols`` columns; returns the address (lane 0, first column)."""
        if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)) or ncols < 32 or ncols > COLUMNS \
                or ncols & (ncols - 1):
            raise TmemError(f"tcgen05.alloc: the column count must be a power of two in 32..512, got {ncols!r}")
        if not self.permit:
            raise TmemError("tcgen05.alloc after tcgen05.relinquish_alloc_permit: this CTA may not allocate any more")
        used = np.zeros(COLUMNS, bool)
        for c0, n in self.allocations.items():
            used[c0:c0 + n] = True
        for c0 in range(0, COLUMNS, int(ncols)):
            if not used[c0:c0 + ncols].any():
                self.allocations[c0] = int(ncols)
                return address(0, c0)
        raise TmemError(f"tcgen05.alloc of {ncols} columns: {int((~used).sum())} of 512 columns free, no aligned run "
                        f"of {ncols}; the hardware would block until another CTA deallocates (a hang here)")

    def dealloc(self, taddr: int, ncols: int) -> None:
        lane, col = split(taddr)
        if lane != 0 or self.allocations.get(col) != ncols:
            have = {f"{address(0, c):#x}": n for c, n in sorted(self.allocations.items())}
            raise TmemError(f"tcgen05.dealloc({taddr:#x}, {ncols}) matches no allocation; allocated: {have or 'none'}")
        del self.allocations[col]

    def relinquish_alloc_permit(self) -> None:
        self.permit = False

    # --- access checks --------------------------------------------------------------------------
    def _check(self, warp: int, lanes: np.ndarray, cols: np.ndarray, what: str) -> None:
        q = warp % 4
        lo, hi = 32 * q, 32 * q + 31
        bad = (lanes < lo) | (lanes > hi)
        if bad.any():
            ls = np.unique(lanes[bad])
            raise TmemError(f"{what}: warp {warp} (warp {q} of its warpgroup) may access lanes {lo}..{hi} only, "
                            f"not lane(s) {ls.min()}..{ls.max()}")
        if (cols >= COLUMNS).any():
            raise TmemError(f"{what}: columns up to {int(cols.max())} lie beyond column 511")
        for c in np.unique(cols):
            if not any(c0 <= c < c0 + n for c0, n in self.allocations.items()):
                raise TmemError(f"{what}: column {int(c)} is not allocated (allocations: "
                                f"{sorted((c0, n) for c0, n in self.allocations.items()) or 'none'})")

    def _places(self, warp, taddr, shape, num, half_offset, what):
        if shape not in LDST_SHAPES:
            raise TmemError(f"{what}: shape {shape!r} is not one of {list(LDST_SHAPES)}")
        if num not in NUMS:
            raise TmemError(f"{what}: .num must be one of x{', x'.join(map(str, NUMS))}, got {num!r}")
        nregs = _fragment(shape, 1).shape[1] * num
        if nregs > 128:
            raise TmemError(f"{what}: {shape}.x{num} needs {nregs} registers per thread; at most 128")
        if (shape == "16x32bx2") != (half_offset is not None):
            raise TmemError(f"{what}: the immHalfSplitoff operand is required by 16x32bx2 and only by it")
        lane0, col0 = split(taddr)
        f = _fragment(shape, num, half_offset or 0)
        ln, cl = lane0 + f[..., 0], col0 + f[..., 1]
        self._check(warp, ln, cl, what)
        return ln, cl

    # --- ld / st ----------------------------------------------------------------------------------
    def ld(self, warp: int, taddr: int, shape: str, num: int = 1, *, pack16: bool = False,
           half_offset: int | None = None) -> np.ndarray:
        """``tcgen05.ld``: the registers of the warp's 32 threads, uint32 (32, regs)."""
        what = f"tcgen05.ld.{shape}.x{num}{'.pack::16b' if pack16 else ''}"
        ln, cl = self._places(warp, taddr, shape, num, half_offset, what)
        words = self.cells[ln, cl]
        self.pending["ld"] += 1
        if pack16:
            if words.shape[1] % 2:
                raise TmemError(f"{what}: .pack::16b packs pairs of columns; {words.shape[1]} register(s) is odd")
            words = (words[:, 0::2] & 0xFFFF) | ((words[:, 1::2] & 0xFFFF) << 16)
        return words.astype(np.uint32)

    def st(self, warp: int, taddr: int, shape: str, regs, num: int = 1, *, unpack16: bool = False,
           half_offset: int | None = None) -> None:
        """``tcgen05.st`` of the warp's registers, uint32 (32, regs)."""
        what = f"tcgen05.st.{shape}.x{num}{'.unpack::16b' if unpack16 else ''}"
        ln, cl = self._places(warp, taddr, shape, num, half_offset, what)
        regs = np.asarray(regs)
        if regs.dtype != np.uint32:
            raise TypeError(f"{what}: registers must be numpy.uint32 words, not {regs.dtype}")
        want = (32, ln.shape[1] // 2 if unpack16 else ln.shape[1])
        if regs.shape != want:
            raise TmemError(f"{what}: needs registers of shape {want} (32 threads), got {regs.shape}")
        if unpack16:
            regs = np.stack([regs & 0xFFFF, regs >> 16], axis=-1).reshape(32, -1)
        self.cells[ln, cl] = regs
        self.pending["st"] += 1

    def wait(self, what: str) -> None:
        """``tcgen05.wait::ld`` / ``::st``: every earlier ld / st is complete (they are synchronous here)."""
        if what not in self.pending:
            raise TmemError(f"tcgen05.wait::{what}: allowed: wait::ld, wait::st")
        self.pending[what] = 0

    def fence(self, kind: str) -> None:
        if kind not in ("before_thread_sync", "after_thread_sync"):
            raise TmemError(f"tcgen05.fence::{kind}: allowed: fence::before_thread_sync, fence::after_thread_sync")

    # --- cp / shift / commit ----------------------------------------------------------------------
    def cp(self, taddr: int, shape: str, smem, sdesc: int, multicast: str | None = None) -> None:
        """``tcgen05.cp.cta_group::1.<shape>{.multicast} [taddr], s-desc``: shared memory -> tensor memory.

        The source is read through an sm_100 shared-memory descriptor without swizzle (core matrices of
        8 rows x 16 bytes: row r, byte b at start + (r // 8) * SBO + (b // 16) * LBO + (r % 8) * 16 + b % 16);
        row r lands in lane (lane of taddr) + r, its bytes in consecutive columns."""
        from ..isa.tcgen05 import decode_smem_desc

        if shape not in CP_SHAPES:
            raise TmemError(f"tcgen05.cp: shape {shape!r} is not one of {list(CP_SHAPES)}")
        if multicast not in CP_MULTICAST[shape]:
            raise TmemError(f"tcgen05.cp.{shape}: multicast {multicast!r} not allowed; allowed: {list(CP_MULTICAST[shape])}")
        d = decode_smem_desc(int(sdesc))
        if d.swizzle != "none" or d.lbo_mode or d.base_offset:
            raise NotImplementedError("tcgen05.cp through a swizzled / absolute-LBO / base-offset descriptor is not modelled")
        rows, nbytes = CP_SHAPES[shape]
        r = np.arange(rows)[:, None]
        b = np.arange(nbytes)[None, :]
        addr = d.start + (r // 8) * d.sbo + (b // 16) * d.lbo + (r % 8) * 16 + b % 16
        smem = np.asarray(smem)
        if smem.dtype != np.uint8 or smem.ndim != 1:
            raise TypeError("smem must be the CTA's shared memory as a 1-D numpy.uint8 array")
        if addr.max() >= smem.size:
            raise TmemError(f"tcgen05.cp.{shape}: reads shared bytes up to {int(addr.max())}, the window has {smem.size}")
        words = smem[addr].reshape(rows, nbytes // 4, 4).copy().view("<u4")[..., 0]
        lane0, col0 = split(taddr)
        if multicast is None:
            dests = [(np.arange(rows), words)]
        elif multicast == "warpx4":           # 32 rows to every lane quarter
            dests = [(32 * q + np.arange(32), words) for q in range(4)]
        elif multicast == "warpx2::02_13":    # rows 0-31 to quarters 0 and 2, rows 32-63 to 1 and 3
            dests = [(32 * q + np.arange(32), words[32 * (q % 2):32 * (q % 2) + 32]) for q in range(4)]
        else:                                 # warpx2::01_23: rows 0-31 to quarters 0 and 1, 32-63 to 2 and 3
            dests = [(32 * q + np.arange(32), words[32 * (q // 2):32 * (q // 2) + 32]) for q in range(4)]
        cols = col0 + np.arange(nbytes // 4)
        for lanes, w in dests:
            ln = lane0 + lanes
            if ln.max() >= LANES:
                raise TmemError(f"tcgen05.cp.{shape}: lanes up to {int(ln.max())} lie beyond lane 127")
            self._check_columns(cols, f"tcgen05.cp.{shape}")
            self.cells[ln[:, None], cols[None, :]] = w

    def _check_columns(self, cols, what):
        for c in np.unique(cols):
            if not any(c0 <= c < c0 + n for c0, n in self.allocations.items()):
                raise TmemError(f"{what}: column {int(c)} is not allocated")

    def shift_down(self, taddr: int) -> None:
        """``tcgen05.shift.cta_group::1.down [taddr]``: lanes 0..126 of the 8 columns (32 bytes) at
        ``taddr`` move down one lane; lane 0 keeps its old contents (modelled choice)."""
        lane0, col0 = split(taddr)
        if lane0:
            raise TmemError(f"tcgen05.shift: the address must name lane 0, got lane {lane0}")
        cols = col0 + np.arange(8)
        self._check_columns(cols, "tcgen05.shift")
        self.cells[1:, cols] = self.cells[:-1, cols].copy()

    def commit(self, mbarrier: int, cta_mask: int | None = None) -> None:
        """``tcgen05.commit.cta_group::1.mbarrier::arrive::one{.multicast::cluster}``: one arrival on the
        mbarrier (of every CTA in ``cta_mask`` with multicast) once all earlier tcgen05 operations are
        done -- at once here, since they are synchronous.  Arrivals are recorded in ``arrivals``."""
        if cta_mask is not None and not 0 < int(cta_mask) < 1 << 16:
            raise TmemError(f"tcgen05.commit: the multicast CTA mask is a nonzero 16-bit value, got {cta_mask!r}")
        self.arrivals.append((int(mbarrier), 1 if cta_mask is None else int(cta_mask)))

    # --- accumulators ---------------------------------------------------------------------------
    def write_matrix(self, taddr: int, D: np.ndarray, layout: str = "D") -> None:
        """Place one CTA's accumulator tile of 32-bit words by its data-path ``layout`` (:data:`DATAPATH`)."""
        lanes, cols = accumulator_cells(layout, taddr, *D.shape)
        self._check_columns(np.unique(cols), "tcgen05.mma (D)")
        self.cells[lanes, cols] = D.astype(np.uint32)

    def read_matrix(self, taddr: int, m: int, n: int, layout: str = "D") -> np.ndarray:
        lanes, cols = accumulator_cells(layout, taddr, m, n)
        return self.cells[lanes, cols].copy()


#: The PTX ISA's "Data Path Layout Organization" table: (M, cta_group, sparse A, .ws) -> layout letter
#: (None: either).  Which D tile the letter's lanes hold -- rows per CTA, how many column blocks fold
#: into further lanes, rows 16 per warp quarter -- is :data:`LAYOUTS`.
DATAPATH = (
    ((32, 1, None, True), "G"), ((64, 1, None, True), "E"), ((64, 1, None, False), "F"),
    ((128, 1, None, None), "D"), ((128, 2, False, False), "B"), ((128, 2, True, False), "C"),
    ((256, 2, None, False), "A"),
)
#: layout letter -> (D rows one CTA holds, column blocks folded onto further lanes, rows 16 per warp quarter).
#: A and D (row i in lane i) are the PTX ISA's picture; the folds of B / E / G and the 16-row scatter of
#: C / F follow its figures as read (modelled: a layout guess, no B200 checked it).
LAYOUTS = {"A": (128, 1, False), "B": (64, 2, False), "C": (64, 1, True), "D": (128, 1, False),
           "E": (64, 2, False), "F": (64, 1, True), "G": (32, 4, False)}


def datapath(m: int, cta_group: int, sparse: bool, ws: bool) -> str:
    """The data-path layout letter of an MMA (ValueError for an M the table lacks)."""
    for (tm, tg, tsp, tws), letter in DATAPATH:
        if (tm, tg) == (m, cta_group) and tsp in (None, bool(sparse)) and tws in (None, bool(ws)):
            return letter
    raise ValueError(f"M = {m} has no tensor-memory data-path layout for cta_group::{cta_group}"
                     f"{' .ws' if ws else ''}{' sparse' if sparse else ''}")


def accumulator_cells(layout: str, taddr: int, m: int, n: int):
    """(lanes, columns), each (m, n), where one CTA's D tile of layout ``layout`` lives from ``taddr``.

    Row r, column c: lane r (A, D); lane r + rows * (c // (n / fold)), column c % (n / fold) (B, E: two
    column halves; G: four quarters); lane 32 * (r // 16) + r % 16 (C, F: half the data path, lane
    alignment 0 or 16 from the address)."""
    rows, fold, scatter = LAYOUTS[layout]
    lane0, col0 = split(taddr)
    if m != rows:
        raise TmemError(f"data-path layout {layout} holds {rows} D rows per CTA, not {m}")
    if n % fold:
        raise TmemError(f"data-path layout {layout} folds N into {fold} column blocks; N = {n} does not divide")
    if lane0 not in ((0, 16) if scatter else (0,)):
        raise TmemError(f"data-path layout {layout}: D must start at lane {'0 or 16' if scatter else '0'}, "
                        f"not lane {lane0}")
    r, c = np.arange(m)[:, None], np.arange(n)[None, :]
    width = n // fold
    lanes = lane0 + (32 * (r // 16) + r % 16 if scatter else r + rows * (c // width))
    cols = col0 + c % width + 0 * r
    if (cols >= COLUMNS).any():
        raise TmemError(f"tcgen05.mma D: columns up to {int(cols.max())} lie beyond column 511")
    return np.broadcast_to(lanes, (m, n)), cols


#: collector-usage hint -> (operand read from memory, buffer kept afterwards).  Modelled from the PTX
#: ISA's words: fill reads memory into the buffer, use / lastuse read the buffer (lastuse frees it),
#: discard (and no hint) reads memory and keeps nothing.
COLLECTOR_USAGE = {"fill": (True, True), "use": (False, True), "lastuse": (False, False), "discard": (True, False)}


def _collected(tmem, collector, name, x_from_memory, shape_key):
    """The operand after the spelling's collector hint: from memory or from the named buffer."""
    if collector is None:
        return x_from_memory()
    _, buf, usage = collector.split("::")
    from_memory, keep = COLLECTOR_USAGE[usage]
    key = f"{name} collector {buf}"
    if from_memory:
        x = x_from_memory()
    else:
        held = tmem.collectors.get(key)
        if held is None:
            raise ValueError(f"{collector}: the {key} buffer is empty (fill it first with collector::{buf}::fill)")
        if held[0] != shape_key:
            raise ValueError(f"{collector}: the {key} buffer holds a {held[0]} operand, this MMA needs {shape_key}")
        x = held[1]
    if keep:
        tmem.collectors[key] = (shape_key, x)
    else:
        tmem.collectors.pop(key, None)
    return x


def _scale_cells(tmem, taddr, count, nscale, sid, what):
    """(count, nscale) scale-factor bytes: row / column i at lane i % 128, column (taddr) + i // 128, bytes
    sid .. sid + nscale - 1 of that 32-bit cell (modelled layout)."""
    lane0, col0 = split(taddr)
    if lane0:
        raise TmemError(f"{what}: the scale-factor address must name lane 0, got lane {lane0}")
    if sid + nscale > 4:
        raise TmemError(f"{what}: scale id {sid} + {nscale} factor(s) do not fit in one 32-bit cell")
    i = np.arange(count)
    cells = tmem.cells[i % 128, col0 + i // 128].astype(np.uint64)
    shifts = (8 * (sid + np.arange(nscale))).astype(np.uint64)
    return (cells[:, None] >> shifts[None, :]) & np.uint64(0xFF)


def _packed_rows(tmem, taddr, m, count, bits, what):
    """(m, count) ``bits``-wide fields: row i in lane (taddr's lane) + i, packed along the 32-bit cells from
    the address's column, field 0 in the low bits (the modelled layout of A and of sparsity metadata)."""
    lane0, col0 = split(taddr)
    if lane0 + m > LANES:
        raise TmemError(f"{what}: rows {lane0}..{lane0 + m - 1} lie beyond lane 127")
    per = 32 // bits
    ncols = -(-count // per)
    tmem._check_columns(col0 + np.arange(ncols), what)
    cells = tmem.cells[lane0:lane0 + m, col0:col0 + ncols].astype(np.uint64)
    shifts = (bits * np.arange(per)).astype(np.uint64)
    x = (cells[:, :, None] >> shifts[None, None, :]) & np.uint64((1 << bits) - 1)
    return x.reshape(m, ncols * per)[:, :count]


def read_a(tmem: TensorMemory, a_taddr: int, m: int, k: int, bits: int) -> np.ndarray:
    """A (m x k raw elements) from tensor memory: row i in lane i, its k elements packed along the cells
    from the address's column on, element 0 in the low bits of a cell (modelled layout: a guess)."""
    if split(a_taddr)[0]:
        raise TmemError(f"A in tensor memory: the address must name lane 0, got lane {split(a_taddr)[0]}")
    return _packed_rows(tmem, a_taddr, m, k, bits, "tcgen05.mma A")


def sparse_columns(tmem: TensorMemory, meta_taddr: int, m: int, kept: int, kind: str) -> np.ndarray:
    """(m, kept) logical K column of each stored element of a sparse A, from the metadata in tensor memory.

    Modelled layout (a guess): row i's metadata in lane (address lane) + i, a stream packed along the cells
    like A.  Each kept unit has a 2-bit index into its group of four (2:4; units are element pairs for the
    packed 4-bit kinds mxf4 / mxf4nvf4); tf32 (1:2) has a 4-bit nibble per kept element, 0b0100 picking
    element 0 and 0b1110 element 1 of its pair, as ``mma.sp`` (other nibbles are refused here)."""
    if kind == "tf32":
        nib = _packed_rows(tmem, meta_taddr, m, kept, 4, "tcgen05.mma sparsity metadata").astype(np.int64)
        bad = (nib != 0b0100) & (nib != 0b1110)
        if bad.any():
            i, e = np.argwhere(bad)[0]
            raise ValueError(f"sparsity metadata row {i}, element {e}: tf32 nibble {int(nib[i, e]):#06b} is neither "
                             "0b0100 nor 0b1110 (the spliced-B reading of other nibbles is not modelled for tcgen05)")
        return 2 * np.arange(kept)[None, :] + (nib == 0b1110)
    unit = 2 if kind in ("mxf4", "mxf4nvf4") else 1
    idx = _packed_rows(tmem, meta_taddr, m, kept // unit, 2, "tcgen05.mma sparsity metadata").astype(np.int64)
    u = np.arange(kept // unit)[None, :]
    logical_unit = 4 * (u // 2) + idx
    pair = idx.reshape(m, -1, 2)
    if (pair[..., 0] == pair[..., 1]).any():
        i, g = np.argwhere(pair[..., 0] == pair[..., 1])[0]
        raise ValueError(f"sparsity metadata row {i}, group {g}: both kept positions have index {int(pair[i, g, 0])}")
    return (unit * np.repeat(logical_unit, unit, axis=1) + np.tile(np.arange(unit), kept // unit)[None, :])


def _operand(tmem, smem, dsc, a_taddr, rows, k, bits, transpose, name, ashift=False):
    """rows x k raw elements of A or B^T from a shared-memory descriptor or (A) tensor memory."""
    from ..isa import smem as _smem
    from ..isa import tcgen05 as _t

    if a_taddr is not None:
        x = read_a(tmem, a_taddr, rows, k, bits)
        return np.concatenate([x[:1], x[:-1]]) if ashift else x
    if transpose and bits != 16:
        raise NotImplementedError(f"{name}: MN-major (transposed) operands are modelled for 16-bit types only")
    sd = _t.decode_smem_desc(int(dsc))
    if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1:
        raise TypeError("smem must be the CTA's shared memory as a 1-D numpy.uint8 array")
    try:
        return _smem.read_operand(smem[None], sd.to_sm90(), rows, k, bits, "MN" if transpose else "K")[0]
    except ValueError as exc:
        raise ValueError(f"{name} descriptor: {exc}") from None


def mma(tmem: TensorMemory, op, d_taddr, a_desc, b_desc, idesc, smem, *, enable_input_d=True,
        scale_a_taddr=None, scale_b_taddr=None, a_taddr=None, meta_taddr=None, peer=None) -> None:
    """One ``tcgen05.mma`` on ``tmem`` with operands read from ``smem`` (the CTA's shared bytes from 0).

    Every spelling: A from a descriptor or (``a_taddr``, with ``a_desc`` None) from tensor memory
    (:func:`read_a`), ``.ashift`` (A's rows down one lane, row 0 kept, as ``tcgen05.shift``); D placed by
    the data-path layout of (M, cta_group, sparse, .ws) (:data:`DATAPATH`); the collector hints
    (:data:`COLLECTOR_USAGE`: A's for the plain spellings, B's four buffers for .ws); sparse A as K/2
    stored elements with metadata at ``meta_taddr`` (:func:`sparse_columns`), computed on the kept products
    (block-scaled: each factor covering half as many); ``cta_group::2`` with ``peer`` = (tensor memory,
    shared memory) of the pair's other CTA: each CTA supplies its half of A's rows and of B's columns from
    its own shared memory (or A from its own tensor memory) and holds its rows of D (and its rows' and
    columns' scale factors and metadata) in its tensor memory.  The layouts are guesses (docs/tcgen05.md).
    NotImplementedError for what is not modelled, ValueError for bad operands."""
    from ..engine.tcgen05 import compute
    from ..isa import tcgen05 as _t

    op = _t.parse_tcgen05(op)
    if (a_taddr is None) == (a_desc is None):
        raise ValueError("tcgen05.mma takes A from a shared-memory descriptor or from tensor memory (a_taddr), "
                         "exactly one of them")
    if op.ashift and a_taddr is None:
        raise ValueError(f"{op.opcode}: .ashift needs A in tensor memory")
    if op.sparse != (meta_taddr is not None):
        raise ValueError(f"{op.opcode}: {'a sparse MMA needs the' if op.sparse else 'a dense MMA takes no'} "
                         "sparsity-metadata address (meta_taddr)")
    if (op.cta_group == 2) != (peer is not None):
        raise ValueError(f"{op.opcode}: {'cta_group::2 needs' if op.cta_group == 2 else 'cta_group::1 takes no'} the "
                         "peer CTA's (tensor memory, shared memory)")
    desc = _t.decode_idesc(int(idesc), op.kind)
    ins = _t.instruction(op, desc)
    m, n, k = ins.mnk
    layout = datapath(m, op.cta_group, op.sparse, op.ws)
    ctas = [(tmem, smem)] + ([peer] if peer is not None else [])
    rows, cols = m // len(ctas), n // len(ctas)
    kc = k // 2 if op.sparse else k
    at, bt, dt = ins.elem("a"), ins.elem("b"), ins.elem("d")
    # kind::f8f6f4 / mxf8f6f4 keep every element in a byte of shared memory (value in the low bits: modelled)
    wide = op.kind in ("f8f6f4", "mxf8f6f4")
    abits, bbits = (8, 8) if wide else (at.bits, bt.bits)
    a_coll = op.collector if op.collector and "::a::" in op.collector else None
    b_coll = op.collector if op.collector and "::b" in op.collector else None
    A = _collected(tmem, a_coll, "A", lambda: np.concatenate([
        _operand(t, s, a_desc, a_taddr, rows, kc, abits, desc.transpose_a, "A", op.ashift) for t, s in ctas]),
        (op.kind, m, kc))
    Bt = _collected(tmem, b_coll, "B", lambda: np.concatenate([
        _operand(t, s, b_desc, None, cols, k, bbits, desc.transpose_b, "B") for t, s in ctas]), (op.kind, n, k))
    mats = []
    for name, x, t in (("A", A, at), ("B", Bt, bt)):
        x = x & np.uint64((1 << t.width) - 1)
        if t.is_float and (desc.negate_a if name == "A" else desc.negate_b):
            x = x ^ np.uint64(1 << (t.width - 1))
        mats.append(x)
    if enable_input_d:
        C = np.concatenate([t.read_matrix(d_taddr, rows, n, layout) for t, _ in ctas]).astype(np.uint64)
        C &= np.uint64((1 << dt.bits) - 1)
    else:
        C = np.zeros((m, n), np.uint64)
    SA = SB = None
    if op.block_scaled:
        if scale_a_taddr is None or scale_b_taddr is None:
            raise ValueError(f"{op.opcode} is block-scaled: it needs the scale-factor addresses of A and B")
        SA = np.concatenate([_scale_cells(t, scale_a_taddr, rows, ins.nscale, desc.scale_id_a, "scale A")
                             for t, _ in ctas])
        SB = np.concatenate([_scale_cells(t, scale_b_taddr, cols, ins.nscale, desc.scale_id_b, "scale B")
                             for t, _ in ctas])
    elif scale_a_taddr is not None or scale_b_taddr is not None:
        raise ValueError(f"{op.opcode} is not block-scaled: it takes no scale-factor addresses")
    if op.sparse:       # the kept products only: one group per row, B's rows picked by that row's metadata
        idx = np.concatenate([sparse_columns(t, meta_taddr, rows, kc, op.kind) for t, _ in ctas])
        Bg = mats[1][np.arange(n)[None, :, None], idx[:, None, :]]
        D = compute(ins, mats[0][:, None], Bg, C[:, None], None if SA is None else SA[:, None],
                    None if SB is None else np.broadcast_to(SB[None], (m,) + SB.shape))[:, 0]
    else:
        D = compute(ins, mats[0][None], mats[1][None], C[None], None if SA is None else SA[None],
                    None if SB is None else SB[None])[0]
    for p, (t, _) in enumerate(ctas):
        t.write_matrix(d_taddr, D[p * rows:(p + 1) * rows], layout)


# --- rows of the PTX instruction table ------------------------------------------------------------
# Each CTA of a launch gets its own TensorMemory (kept on the machine, created on first use).  The
# operands that name tensor memory (addresses, column counts, offsets) must be the same in every
# lane of a warp, as the PTX ISA requires of .sync.aligned forms.

from .syntax import parse_int  # noqa: E402
from .instructions import instr  # noqa: E402  (the table is filled at import, after the model above)


def _warps(ctx):
    """(warp, its CTA, its warp index in the CTA) of every warp that executes the statement."""
    m = ctx.machine
    rows = np.arange(ctx.shape[0]) if ctx.rows is None else np.asarray(ctx.rows)
    wpc = int(getattr(m, "wpc", 1))
    active = np.ones(len(rows), bool) if ctx.mask is None else ctx.mask.any(axis=1)
    return [(g, int(w), int(w) // wpc, int(w) % wpc) for g, w in enumerate(rows) if active[g]]


def _tmem(ctx, cta) -> TensorMemory:
    store = ctx.machine.__dict__.setdefault("_tensor_memory", {})
    return store.setdefault(cta, TensorMemory())


def _uniform(ctx, op, what, values=None):
    """The warp's one value of ``op`` (read as u32 unless ``values`` are given); an error if lanes differ."""
    v = (ctx.read(op, "u32", what=what) if values is None else values).astype(np.int64)
    lanes = np.ones(v.shape, bool) if ctx.mask is None else ctx.mask
    first = v[np.arange(v.shape[0]), lanes.argmax(axis=1)]
    if ((v != first[:, None]) & lanes).any():
        ctx.fail(f"{ctx.opcode}: {what} must be the same in every lane of a warp", token=op)
    return first


def _run(ctx, fn):
    try:
        return fn()
    except (TmemError, TypeError) as exc:
        ctx.fail(str(exc))


def _bracket(op):
    return op[1:-1].strip() if isinstance(op, str) and op.startswith("[") and op.endswith("]") else op


_TADDR_OFFSET = re.compile(r"(?P<reg>[^+\s]+)\s*\+\s*(?P<off>-?\w+)\Z")


def _taddr(ctx, op, what):
    """A tensor-memory address operand, ``[reg]`` or ``[reg + imm]`` (ptxas takes the offset form, Triton
    writes ``[%r + 0]``; ``[reg - imm]`` is a ptxas syntax error): per-lane u32 words, the immediate added to
    the 32-bit address (lane << 16 | column) -- modelled, no Blackwell capture has a nonzero offset."""
    inner = _bracket(op)
    m = _TADDR_OFFSET.match(inner) if isinstance(inner, str) else None
    if m is None:
        return ctx.read(inner, "u32", what=what)
    off = parse_int(m["off"])
    if off is None:
        ctx.fail(f"{ctx.opcode}: {what}: the offset {m['off']!r} is not an integer", token=op)
    base = ctx.read(m["reg"], "u32", what=what).astype(np.uint64)
    return ((base + np.uint64(off % (1 << 32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


@instr(r"tcgen05\.alloc\.cta_group::[12]\.sync\.aligned\.shared::cta\.b32")
def _tc05_alloc(ctx, m):
    dst, ncols = ctx.need(2)
    ctx.require_converged()
    n = _uniform(ctx, ncols, "the column count")
    addr = ctx.address(dst)
    for g, w, cta, _ in _warps(ctx):
        taddr = _run(ctx, lambda: _tmem(ctx, cta).alloc(int(n[g])))
        word = np.array([taddr], "<u4").view(np.uint8).reshape(1, 1, 4)
        ctx.memory.store("shared", addr[g:g + 1, :1], word, 4, _Rows(ctx, g))


@instr(r"tcgen05\.dealloc\.cta_group::[12]\.sync\.aligned\.b32")
def _tc05_dealloc(ctx, m):
    taddr, ncols = ctx.need(2)
    ctx.require_converged()
    t, n = _uniform(ctx, taddr, "the address"), _uniform(ctx, ncols, "the column count")
    for g, w, cta, _ in _warps(ctx):
        _run(ctx, lambda: _tmem(ctx, cta).dealloc(int(t[g]), int(n[g])))


@instr(r"tcgen05\.relinquish_alloc_permit\.cta_group::[12]\.sync\.aligned")
def _tc05_relinquish(ctx, m):
    ctx.need(0)
    for g, w, cta, _ in _warps(ctx):
        _tmem(ctx, cta).relinquish_alloc_permit()


_NUM = r"\.x(?P<num>1|2|4|8|16|32|64|128)"
_SHAPES = r"(?P<shape>32x32b|16x64b|16x128b|16x256b|16x32bx2)"


def _ld_st_operands(ctx, form, taddr_at):
    """tcgen05.ld / st: (register list, warp-uniform tensor-memory address, immHalfSplitoff or None);
    the registers are the operand the address is not next to."""
    ops = ctx.operands
    if len(ops) not in (2, 3):
        ctx.fail(f"{ctx.opcode} takes {form}; got {len(ops)} operand(s)")
    ctx.require_converged()
    regs = ops[-1] if taddr_at == 0 else ops[0]
    regs = regs if isinstance(regs, list) else [regs]
    t = _uniform(ctx, ops[taddr_at], "the tensor-memory address", _taddr(ctx, ops[taddr_at], "the tensor-memory address"))
    half = _uniform(ctx, ops[taddr_at + 1], "immHalfSplitoff") if len(ops) == 3 else None
    return regs, t, half


@instr(r"tcgen05\.ld\.sync\.aligned\." + _SHAPES + _NUM + r"(?P<pack>\.pack::16b)?\.b32")
def _tc05_ld(ctx, m):
    regs, t, half = _ld_st_operands(ctx, "registers, [taddr]{, immHalfSplitoff}", 1)
    out = np.zeros(ctx.shape + (len(regs),), np.uint32)
    for g, w, cta, wic in _warps(ctx):
        words = _run(ctx, lambda: _tmem(ctx, cta).ld(wic, int(t[g]), m["shape"], int(m["num"]),
                                                     pack16=bool(m["pack"]),
                                                     half_offset=None if half is None else int(half[g])))
        if words.shape[1] != len(regs):
            ctx.fail(f"{ctx.opcode} fills {words.shape[1]} register(s) per thread, the destination lists {len(regs)}")
        out[g] = words
    for i, r in enumerate(regs):
        ctx.write(r, out[..., i], "b32")


@instr(r"tcgen05\.st\.sync\.aligned\." + _SHAPES + _NUM + r"(?P<unpack>\.unpack::16b)?\.b32")
def _tc05_st(ctx, m):
    regs, t, half = _ld_st_operands(ctx, "[taddr]{, immHalfSplitoff}, registers", 0)
    words = np.stack([ctx.read(r, "b32") for r in regs], axis=-1).astype(np.uint32)
    for g, w, cta, wic in _warps(ctx):
        _run(ctx, lambda: _tmem(ctx, cta).st(wic, int(t[g]), m["shape"], words[g], int(m["num"]),
                                             unpack16=bool(m["unpack"]),
                                             half_offset=None if half is None else int(half[g])))


@instr(r"tcgen05\.wait::(?P<what>ld|st)\.sync\.aligned")
def _tc05_wait(ctx, m):
    ctx.need(0)
    for g, w, cta, _ in _warps(ctx):
        _tmem(ctx, cta).wait(m["what"])


@instr(r"tcgen05\.fence::(?P<kind>before_thread_sync|after_thread_sync)")
def _tc05_fence(ctx, m):
    ctx.need(0)


class _Rows:
    """A context view for a memory access of one warp (row ``g``) of the statement."""

    def __init__(self, ctx, g):
        self._ctx, self._g = ctx, g
        all_rows = np.arange(ctx.shape[0]) if ctx.rows is None else np.asarray(ctx.rows)
        self.rows = all_rows[g:g + 1]

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def lane_mask(self, lanes=None):
        mask = self._ctx.lane_mask(lanes)
        return mask[self._g:self._g + 1, :1] if mask is not None else None


def _lanes(ctx):
    """(row g, lane l, CTA) of every thread that executes the statement."""
    out = []
    for g, w, cta, _ in _warps(ctx):
        lanes = range(32) if ctx.mask is None else np.nonzero(ctx.mask[g])[0]
        out += [(g, int(l), cta) for l in lanes]
    return out


_MMA = (r"tcgen05\.mma(?:\.ws)?(?:\.sp)?\.cta_group::[12]\.kind::\w+(?:\.block_scale(?:\.scale_vec::\dX|\.block\d\d)?)?"
        r"(?:\.ashift)?(?:\.collector::\w+::\w+)?")


def _peer(ctx, cta, opcode):
    """The other CTA of ``cta``'s pair (cluster ranks differing in bit 0) and the pair in rank order."""
    st = getattr(ctx.machine, "cluster", None)
    if st is None or st.size < 2:
        ctx.fail(f"{opcode}: cta_group::2 runs on a CTA pair: launch with a cluster of at least 2 CTAs")
    rank = int(st.rank[cta])
    return int(st.cta_of[cta, rank ^ 1]), rank & 1


@instr(_MMA)
def _tc05_mma(ctx, m):
    """``tcgen05.mma``: issued by every thread that executes it (kernels guard it to one thread).
    Operands: [d-tmem], a-desc or [a-tmem], b-desc, {[sp-meta-tmem],} idesc, {[scale-A-tmem], [scale-B-tmem],}
    enable-input-d; cta_group::2 reaches the pair's other CTA (its shared and tensor memory)."""
    from ..isa.tcgen05 import parse_tcgen05

    try:
        op = parse_tcgen05(ctx.opcode)
    except ValueError as exc:
        ctx.fail(str(exc))
    ops = ctx.operands
    want = 5 + op.sparse + 2 * op.block_scaled
    if len(ops) != want or any(isinstance(o, list) for o in ops):
        ctx.fail(f"{ctx.opcode}: warpsim runs the form [d-tmem], a-desc or [a-tmem], b-desc"
                 f"{', [sp-meta-tmem]' if op.sparse else ''}, idesc"
                 f"{', [scale-A-tmem], [scale-B-tmem]' if op.block_scaled else ''}, enable-input-d "
                 "(disable-output-lane, scale-input-d and the .ws zero-column mask are not modelled); got "
                 f"{len(ops)} operand(s)")
    d = _taddr(ctx, ops[0], "the D tensor-memory address")
    a_tmem = isinstance(ops[1], str) and ops[1].startswith("[")
    a = (_taddr(ctx, ops[1], "the A tensor-memory address") if a_tmem
         else ctx.read(ops[1], "u64", what="the A descriptor"))
    b = ctx.read(ops[2], "u64", what="the B descriptor")
    rest = ops[3:]
    meta = _taddr(ctx, rest.pop(0), "the sparsity-metadata address") if op.sparse else None
    idesc = ctx.read(rest.pop(0), "u32", what="the instruction descriptor")
    sfa = _taddr(ctx, rest[0], "the scale-A tensor-memory address") if op.block_scaled else None
    sfb = _taddr(ctx, rest[1], "the scale-B tensor-memory address") if op.block_scaled else None
    en = ctx.read(ops[-1], "pred")
    for g, l, cta in _lanes(ctx):
        kw = dict(scale_a_taddr=int(sfa[g, l]), scale_b_taddr=int(sfb[g, l])) if op.block_scaled else {}
        if a_tmem:
            kw["a_taddr"] = int(a[g, l])
        if op.sparse:
            kw["meta_taddr"] = int(meta[g, l])
        first = cta
        if op.cta_group == 2:
            other, odd = _peer(ctx, cta, ctx.opcode)
            first, second = (other, cta) if odd else (cta, other)
            kw["peer"] = (_tmem(ctx, second), ctx.memory.shared[second])
        try:
            mma(_tmem(ctx, first), op, int(d[g, l]), None if a_tmem else int(a[g, l]), int(b[g, l]),
                int(idesc[g, l]), ctx.memory.shared[first], enable_input_d=bool(en[g, l]), **kw)
        except (ValueError, TypeError, NotImplementedError) as exc:
            ctx.fail(f"thread {l} of warp {g}: {exc}")


@instr(r"tcgen05\.cp\.cta_group::1\.(?P<shape>128x256b|4x256b|128x128b|64x128b|32x128b)"
       r"(?:\.(?P<mc>warpx2::02_13|warpx2::01_23|warpx4))?")
def _tc05_cp(ctx, m):
    taddr, sdesc = ctx.need(2)
    t = _taddr(ctx, taddr, "the tensor-memory address")
    s = ctx.read(sdesc, "u64")
    for g, l, cta in _lanes(ctx):
        _run(ctx, lambda: _tmem(ctx, cta).cp(int(t[g, l]), m["shape"], ctx.memory.shared[cta], int(s[g, l]), m["mc"]))


@instr(r"tcgen05\.shift\.cta_group::1\.down")
def _tc05_shift(ctx, m):
    (taddr,) = ctx.need(1)
    t = _taddr(ctx, taddr, "the tensor-memory address")
    for g, l, cta in _lanes(ctx):
        _run(ctx, lambda: _tmem(ctx, cta).shift_down(int(t[g, l])))
