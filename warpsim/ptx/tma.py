"""Data movement of the tensor memory accelerator (TMA) as pure functions over a decoded tensormap.

``cp.async.bulk.tensor`` tile mode (1D-5D) copies a *box* of a global tensor into shared memory:
the box starts at signed 32-bit coordinates (innermost first) and walks ``ceil(box[i] / es[i])``
elements along each dimension ``i`` in steps of the element stride ``es[i]`` (dimension 0 is
always stepped by 1 with interleave none, as ``cuda.h`` says).  Elements whose coordinates fall
outside ``[0, dim)`` in any dimension are not read: they land as zero, or, for float types when
the tensormap's OOB fill is ``nan_request_zero_fma``, as the 16-bit word 0x7FF7 repeated over the
element (f16 0x7FF7, f32 0x7FF77FF7, f64 0x7FF77FF77FF77FF7).  In shared memory the box rows
(dimension 0) follow each other dimension 0 fastest from the destination address, each row
starting ``max(row bytes, swizzle span)`` bytes after the previous one: a row narrower than the
32/64/128-byte swizzle span is padded to it and the pad bytes are left untouched.  The swizzle
modes then move 16-byte chunks with :func:`warpsim.isa.smem.swizzle` on the absolute shared
address, the same patterns ``wgmma`` reads.  The transaction count a load completes is the dense
``ceil`` element count (:func:`box_bytes`), padding excluded.  The store direction writes only
in-bounds elements; the reduce direction combines them with global memory.

Functions here take a *global reader* ``read(address, nbytes) -> uint8 array`` (and return
writes as ``(addresses, bytes)``), so they run unchanged over the executor's ``GlobalMemory``
or a plain numpy buffer (:func:`array_reader`).

Verified against 138 boxes an H100 landed (``tests/golden/tma_boxes_sm90.npz``, replayed byte for
byte): the fill word, ceil counts with element strides, padded narrow rows, negative and
past-the-end coordinates, every swizzle at destination offsets 0..1024.  Measured faults, refused
here: a load whose innermost coordinate is not a multiple of 16 bytes (illegal instruction), and a
box whose padded shared footprint runs past the CTA's shared allocation (illegal address; pass
``smem_size``).  Stores, reductions and im2col loads are verified against an H200 capture
(``tests/golden/tma_stores_sm90.npz``; see :func:`tile_store`, :func:`reduce_elements`,
:func:`im2col_load`).  Not modelled (refused): interleaved layouts, the 128B atom swizzles, the
packed 16U4/16U6 types and the im2col variants of sm_100 (``im2col::w``, ``im2col::w::128``).
"""

from __future__ import annotations

import numpy as np

from ..isa.smem import swizzle as _swizzle
from ..isa.tensormap import SWIZZLE_SPAN, TensorMap, decode_tensormap

#: the OOB NaN fill of each float size: 0x7FF7 in every 16-bit half (measured on the H100, all three sizes)
NAN_FILL = {16: 0x7FF7, 32: 0x7FF77FF7, 64: 0x7FF77FF77FF77FF7}
#: shared-memory alignment of a tensor copy's box (PTX ISA)
SMEM_ALIGN = 128
#: alignment and size granule of plain ``cp.async.bulk``
BULK_ALIGN = 16

_INT32 = (-(1 << 31), (1 << 31) - 1)


def check_mode(mode: str) -> None:
    """``.tile`` and ``.im2col`` (:func:`im2col_load`) are modelled; the sm_100 im2col variants are refused."""
    if mode in ("tile", "im2col"):
        return
    if str(mode).startswith("im2col"):
        raise NotImplementedError(f"cp.async.bulk.tensor .{mode} mode is not modelled by warpsim (tile and im2col only)")
    raise ValueError(f"load mode must be 'tile' or 'im2col...', not {mode!r}")


def _tensormap(tm) -> TensorMap:
    tm = tm if isinstance(tm, TensorMap) else decode_tensormap(tm)
    if tm.interleave != "none":
        raise NotImplementedError(f"tensormaps with interleave {tm.interleave!r} are not modelled (only 'none')")
    if tm.swizzle not in ("none", "32B", "64B", "128B"):
        raise NotImplementedError(f"swizzle {tm.swizzle!r} (an sm_100 atom variant) is not modelled")
    if tm.elem_bits % 8:
        raise NotImplementedError(f"packed data type {tm.dtype} is not modelled for copies")
    return tm


def box_shape(tm) -> tuple:
    """Elements the box holds per dimension (innermost first): ``ceil(box[i] / es[i])``, es[0] taken as 1."""
    tm = _tensormap(tm)
    return tuple(-(-b // (1 if i == 0 else e)) for i, (b, e) in enumerate(zip(tm.box_dim, tm.element_strides)))


def box_bytes(tm) -> int:
    """Bytes a tile copy writes to shared memory (the transaction count it completes)."""
    tm = _tensormap(tm)
    return int(np.prod(box_shape(tm))) * tm.elem_bits // 8


def _coords(tm: TensorMap, coords) -> tuple:
    c = list(coords)
    if len(c) != tm.rank:
        raise ValueError(f"a {tm.rank}D tensormap takes {tm.rank} coordinates, got {len(c)}")
    for i, v in enumerate(c):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"tensor coordinate {i} must be an integer, not {type(v).__name__}")
        if not _INT32[0] <= int(v) <= _INT32[1]:
            raise ValueError(f"tensor coordinate {i} = {int(v)} is not a signed 32-bit integer")
    return tuple(int(v) for v in c)


def _smem_addr(addr) -> int:
    if isinstance(addr, (bool, np.bool_)) or not isinstance(addr, (int, np.integer)) or int(addr) < 0:
        raise ValueError(f"shared-memory address must be a non-negative integer, got {addr!r}")
    if int(addr) % SMEM_ALIGN:
        raise ValueError(f"shared-memory address {int(addr):#x} of a tensor copy must be {SMEM_ALIGN}-byte aligned")
    return int(addr)


def _walk(tm: TensorMap, coords, granule: int = 0):
    """Per box element (dense order, dim 0 fastest): tensor coordinates (n, rank) and in-bounds mask.

    ``granule`` (bytes): the innermost bound rounded up to it -- a store or reduction writes every
    element of a 16-byte chunk of a row that holds an in-bounds element (captured, issue 33)."""
    shape = box_shape(tm)
    steps = [1] + list(tm.element_strides[1:])
    axes = [c + s * np.arange(n, dtype=np.int64) for c, s, n in zip(coords, steps, shape)]
    grid = np.meshgrid(*axes[::-1], indexing="ij")            # slowest dimension first
    pos = np.stack([g.ravel() for g in grid[::-1]], axis=1)   # columns back to innermost first
    dims = np.asarray(tm.global_dim, dtype=np.int64)
    if granule:
        eb = tm.elem_bits // 8
        dims = dims.copy()
        dims[0] = -(-int(dims[0]) * eb // granule) * granule // eb
    inb = ((pos >= 0) & (pos < dims)).all(axis=1)
    return pos, inb


def _global_offsets(tm: TensorMap, pos) -> np.ndarray:
    eb = tm.elem_bits // 8
    off = pos[:, 0] * eb
    for d in range(1, tm.rank):
        off = off + pos[:, d] * tm.global_strides[d - 1]
    return off


def smem_row_pitch(tm) -> int:
    """Shared bytes from one box row to the next: the row, or the swizzle span when that is wider
    (measured: a 16-byte row under 32B swizzle lands every 32 bytes, the rest untouched)."""
    tm = _tensormap(tm)
    return max(box_shape(tm)[0] * tm.elem_bits // 8, SWIZZLE_SPAN[tm.swizzle])


def smem_footprint(tm) -> int:
    """Shared bytes from the destination to the end of the box's last row (padding included)."""
    tm = _tensormap(tm)
    shape = box_shape(tm)
    return int(np.prod(shape[1:])) * smem_row_pitch(tm)


def smem_addresses(tm, smem_addr: int) -> np.ndarray:
    """Shared-memory byte address of every box byte (dense box order), swizzle applied."""
    tm = _tensormap(tm)
    row = box_shape(tm)[0] * tm.elem_bits // 8
    pitch = smem_row_pitch(tm)
    k = np.arange(box_bytes(tm), dtype=np.int64)
    a = _smem_addr(smem_addr) + (k // row) * pitch + k % row
    return _swizzle(a, tm.swizzle)


def _byte_index(tm, inb_rows):
    eb = tm.elem_bits // 8
    return (np.flatnonzero(inb_rows)[:, None] * eb + np.arange(eb)).ravel()


def check_smem_fits(tm, smem_addr: int, smem_size: int) -> None:
    """Refuse a box whose padded footprint runs past the CTA's ``smem_size`` shared bytes.

    Measured: all 12 launches of the TMA capture that died with cudaErrorIllegalAddress were boxes
    whose footprint (rows padded to the swizzle span) ran past the kernel's shared allocation;
    every box that fitted landed.
    """
    if isinstance(smem_size, (bool, np.bool_)) or not isinstance(smem_size, (int, np.integer)) or smem_size < 0:
        raise ValueError(f"smem_size must be a non-negative integer (the CTA's shared bytes), got {smem_size!r}")
    end = _smem_addr(smem_addr) + smem_footprint(tm)
    if end > smem_size:
        raise ValueError(f"the TMA box at shared address {int(smem_addr):#x} spans {smem_footprint(tm)} bytes "
                         f"({int(np.prod(box_shape(tm)[1:]))} rows of {smem_row_pitch(tm)}: rows narrower than the "
                         f"{tm.swizzle} swizzle span are padded to it) and ends at {end}, past the CTA's {int(smem_size)} "
                         "shared bytes; the H100 faults (illegal address) on such a copy")


def tile_load(tm, read, coords, smem_addr: int = 0, smem_size: int | None = None):
    """``cp.async.bulk.tensor`` global -> shared, tile mode: ``(shared byte addresses, bytes)`` to write.

    ``read(address, nbytes)`` returns global bytes (uint8); it is called once per in-bounds run
    of each box row.  The result has :func:`box_bytes` entries.  With ``smem_size`` (the CTA's
    shared bytes) a box that would run past it is refused, as the H100 faults on it.
    """
    tm = _tensormap(tm)
    c = _coords(tm, coords)
    if smem_size is not None:
        check_smem_fits(tm, smem_addr, smem_size)
    if (c[0] * tm.elem_bits // 8) % 16:
        # measured: on the H100 every tile load whose innermost coordinate is not a multiple of
        # 16 bytes died with an illegal-instruction fault (12 of 12 in the TMA capture; every
        # aligned one landed)
        raise ValueError(f"tile load at innermost coordinate {c[0]}: {c[0] * tm.elem_bits // 8} bytes is not a "
                         "multiple of 16; the H100 faults (illegal instruction) on such a copy")
    pos, inb = _walk(tm, c)
    eb = tm.elem_bits // 8
    data = np.zeros((len(pos), eb), dtype=np.uint8)
    if tm.oob_fill != "none" and tm.is_float:
        fill = NAN_FILL[tm.elem_bits]
        data[~inb] = np.frombuffer(fill.to_bytes(eb, "little"), dtype=np.uint8)
    gofs = _global_offsets(tm, pos)
    row = box_shape(tm)[0]
    for r in range(len(pos) // row):          # one read per contiguous in-bounds run of a row
        sl = slice(r * row, (r + 1) * row)
        idx = np.flatnonzero(inb[sl])
        if not len(idx):
            continue
        lo, hi = r * row + idx[0], r * row + idx[-1]
        n = (hi - lo + 1) * eb
        got = np.asarray(read(tm.global_address + int(gofs[lo]), int(n)), dtype=np.uint8)
        if got.shape != (n,):
            raise ValueError(f"the global reader returned {got.shape} bytes for a read of {n}")
        data[lo:hi + 1] = got.reshape(-1, eb)
    return smem_addresses(tm, smem_addr), data.ravel()


#: bytes of a row a store or reduction writes whole (see :func:`tile_store`)
STORE_GRANULE = 16


def tile_store(tm, smem, coords, smem_addr: int = 0):
    """``cp.async.bulk.tensor`` shared -> global, tile mode: ``(global byte addresses, bytes)`` of the
    elements written.

    Captured on Hopper (an H200, sm_90a; tests/golden/tma_stores_sm90.npz): elements past the far
    edge of a dimension are not written, except in the innermost one, which is bounded at 16-byte
    granularity: the elements that share a 16-byte chunk of a row with an in-bounds element are
    written (or reduced) too.  A box whose start coordinate is negative in any dimension faults
    (illegal instruction; every such case of the capture): refused here.
    """
    tm = _tensormap(tm)
    c = _coords(tm, coords)
    if min(c) < 0:
        raise ValueError(f"a TMA store / reduction at coordinates {list(c)}: a negative start coordinate faults on "
                         "Hopper (illegal instruction; captured), though a tile load takes one")
    smem = np.asarray(smem)
    if smem.dtype != np.uint8 or smem.ndim != 1:
        raise TypeError(f"smem must be a 1-D uint8 array (the CTA's shared window), not {smem.dtype}{smem.shape}")
    sa = smem_addresses(tm, smem_addr)
    if int(sa.max()) >= smem.size:
        raise ValueError(f"the box reads shared bytes up to {int(sa.max()) + 1}, but smem holds {smem.size}")
    pos, inb = _walk(tm, c, STORE_GRANULE)
    eb = tm.elem_bits // 8
    sel = _byte_index(tm, inb)
    gofs = (_global_offsets(tm, pos[inb])[:, None] + np.arange(eb)).ravel()
    return tm.global_address + gofs, smem[sa[sel]]


# -- im2col loads ------------------------------------------------------------------------------

def im2col_load(im, read, coords, offsets, smem_addr: int = 0):
    """``cp.async.bulk.tensor`` global -> shared, im2col mode: ``(shared byte addresses, bytes)``.

    ``im`` is a :class:`warpsim.isa.tensormap.Im2colMap`; ``coords`` (channel, spatial W.., image) name the
    first pixel, ``offsets`` (one per spatial dimension) the filter tap added to every pixel.  The load
    takes ``pixels_per_column`` pixels walking the pixel bounding box -- spatial coordinate j from
    ``lower[j]`` to ``dim[j] - 1 + upper[j]`` inclusive, W fastest, then the image -- and lands, per
    pixel, ``channels_per_pixel`` channels from the channel coordinate at pixel + offsets as one box row
    (rows padded to the swizzle span and swizzled as in tile mode); a pixel outside the tensor, or
    channels past its end, land as the OOB fill.  Captured on an H200: all 10 im2col loads of
    tests/golden/tma_stores_sm90.npz that ran (ranks 3-5, 1- to 4-byte types, every swizzle); a first
    pixel outside the pixel box faults there (15 of 15) and is refused here.
    """
    tm = _tensormap(im.tensor)
    r = tm.rank
    c = _coords(tm, coords)
    if len(offsets) != r - 2:
        raise ValueError(f"a {r}D im2col load takes {r - 2} offsets, got {len(offsets)}")
    eb = tm.elem_bits // 8
    cpp, ppc = im.channels_per_pixel, im.pixels_per_column
    dims, strides = tm.global_dim, (eb,) + tuple(tm.global_strides)
    hi = [d - 1 + u for d, u in zip(dims[1:r - 1], im.upper)]
    pos, n = list(c[1:r - 1]), c[r - 1]
    if not all(lo <= x <= h for x, lo, h in zip(pos, im.lower, hi)):
        # captured: every im2col load whose first pixel lay outside the pixel box faulted (15 of 15;
        # the 10 inside landed)
        raise ValueError(f"im2col load at spatial coordinates {pos}: outside the pixel box {list(im.lower)} .. {hi}; "
                         "Hopper faults (illegal instruction) on such a load")
    data = np.zeros((ppc, cpp * eb), np.uint8)
    if tm.oob_fill != "none" and tm.is_float:
        data[:] = np.tile(np.frombuffer(NAN_FILL[tm.elem_bits].to_bytes(eb, "little"), np.uint8), cpp)
    for p in range(ppc):
        q = [a + int(o) for a, o in zip(pos, offsets)]
        if all(0 <= x < d for x, d in zip(q, dims[1:r - 1])) and 0 <= n < dims[r - 1]:
            lo, top = max(c[0], 0), min(c[0] + cpp, dims[0])
            if top > lo:
                base = sum(x * s for x, s in zip(q, strides[1:r - 1])) + n * strides[r - 1]
                got = np.asarray(read(tm.global_address + base + lo * eb, (top - lo) * eb), dtype=np.uint8)
                data[p, (lo - c[0]) * eb:(top - c[0]) * eb] = got   # channels outside keep the fill
        j = 0                                          # next pixel of the bounding box, W fastest
        while True:
            if j == len(pos):
                n += 1
                break
            pos[j] += 1
            if pos[j] <= hi[j]:
                break
            pos[j] = im.lower[j]
            j += 1
    row = cpp * eb
    pitch = max(row, SWIZZLE_SPAN[tm.swizzle])
    k = np.arange(ppc * row, dtype=np.int64)
    addrs = _swizzle(_smem_addr(smem_addr) + (k // row) * pitch + k % row, tm.swizzle)
    return addrs, data.ravel()


# -- reductions -------------------------------------------------------------------------------

#: reduce op -> data types it accepts (modelled on the cp.reduce.async.bulk type table; unverified)
REDUCE_TYPES = {
    "add": ("uint32", "int32", "uint64", "float32", "float64", "float16", "bfloat16"),
    "min": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
    "max": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
    "inc": ("uint32",), "dec": ("uint32",),
    "and": ("uint32", "int32", "uint64", "int64"), "or": ("uint32", "int32", "uint64", "int64"),
    "xor": ("uint32", "int32", "uint64", "int64"),
}
_NP = {"uint32": np.uint32, "int32": np.int32, "uint64": np.uint64, "int64": np.int64,
       "float32": np.float32, "float16": np.float16, "float64": np.float64}
#: the NaN a float reduction writes, per element bits (captured: every NaN sum, and a min / max of two
#: NaNs, is this word whatever the operands' payloads; bf16 included)
CANONICAL_NAN = {16: 0x7FFF, 32: 0x7FFFFFFF, 64: 0x7FFFFFFFFFFFFFFF}


def _canonical_nans(r: np.ndarray, bits: int, nan: np.ndarray) -> np.ndarray:
    """``r`` (raw words of ``bits``) with the elements flagged in ``nan`` set to the canonical NaN."""
    u = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    out = np.array(r, copy=True).view(u)
    out[nan] = u(CANONICAL_NAN[bits])
    return out


def reduce_elements(op: str, dtype: str, old, new) -> np.ndarray:
    """``old (op) new`` elementwise on raw little-endian bytes of ``dtype``; returns the result bytes.

    add.f32 / f64 rounds to nearest even (subnormals kept); f16/bf16 add rounds the exact sum once;
    a NaN sum is the canonical NaN (:data:`CANONICAL_NAN`; f64: the NaN operand, quieted); min / max return the other operand when one
    is NaN and the canonical NaN when both are (captured, tests/golden/tma_stores_sm90.npz).  inc/dec
    follow ``atom``: inc ``old >= new ? 0 : old + 1``, dec ``old == 0 or old > new ? new : old - 1``.
    """
    if op not in REDUCE_TYPES:
        raise ValueError(f"reduce op must be one of {list(REDUCE_TYPES)}, not {op!r}")
    if dtype not in REDUCE_TYPES[op]:
        raise ValueError(f"reduce op {op!r} does not take {dtype}; allowed: {list(REDUCE_TYPES[op])}")
    old = np.asarray(old, dtype=np.uint8)
    new = np.asarray(new, dtype=np.uint8)
    if dtype == "bfloat16":   # exact in f32, one rounding back to bf16 (nearest even)
        a = (old.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        b = (new.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        r = {"add": a + b, "min": np.fmin(a, b), "max": np.fmax(a, b)}[op].astype(np.float32)
        import ml_dtypes
        return _canonical_nans(r.astype(ml_dtypes.bfloat16).view(np.uint16), 16, np.isnan(r)).view(np.uint8)
    t = _NP[dtype]
    a, b = old.view(t), new.view(t)
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "add":
            r = (a.astype(np.float64) + b.astype(np.float64)).astype(t) if dtype == "float16" else a + b
        elif op == "min":
            r = np.fmin(a, b) if a.dtype.kind == "f" else np.minimum(a, b)
        elif op == "max":
            r = np.fmax(a, b) if a.dtype.kind == "f" else np.maximum(a, b)
        elif op == "inc":
            r = np.where(a >= b, t(0), a + t(1))
        elif op == "dec":
            r = np.where((a == 0) | (a > b), b, a - t(1))
        else:
            r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](a, b)
    r = np.asarray(r, dtype=t)
    if r.dtype.kind == "f" and r.dtype.itemsize < 8:   # f64: the NaN operand, quieted (1 captured element)
        r = _canonical_nans(r, r.dtype.itemsize * 8, np.isnan(r))
    return r.view(np.uint8)


def tile_reduce(tm, op: str, read, smem, coords, smem_addr: int = 0):
    """``cp.reduce.async.bulk.tensor`` tile mode: ``(global byte addresses, new bytes)`` of the in-bounds
    elements, each ``global (op) shared``."""
    tm = _tensormap(tm)
    if op in ("and", "or", "xor") and tm.dtype == "int64":
        raise ValueError(f"cp.reduce.async.bulk.tensor .{op} on an int64 tensormap faults on Hopper (illegal "
                         "instruction; captured): use a uint64 tensormap for 64-bit bitwise reductions")
    addrs, src = tile_store(tm, smem, coords, smem_addr)
    eb = tm.elem_bits // 8
    if not len(addrs):
        return addrs, src
    old = np.concatenate([np.asarray(read(int(a), eb), dtype=np.uint8) for a in addrs[::eb]])
    return addrs, reduce_elements(op, tm.dtype, old, src)


# -- plain bulk copies and multicast ----------------------------------------------------------

def check_bulk(dst: int, src: int, size: int) -> None:
    """``cp.async.bulk``: both addresses 16-byte aligned, size a positive multiple of 16."""
    for name, v in (("destination", dst), ("source", src)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"cp.async.bulk {name} address must be a non-negative integer, got {v!r}")
        if v % BULK_ALIGN:
            raise ValueError(f"cp.async.bulk {name} address {int(v):#x} must be {BULK_ALIGN}-byte aligned")
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size <= 0 or size % BULK_ALIGN:
        raise ValueError(f"cp.async.bulk size must be a positive multiple of {BULK_ALIGN}, got {size!r}")


def bulk_copy(read, dst: int, src: int, size: int):
    """``cp.async.bulk``: ``(destination byte addresses, bytes)`` of a ``size``-byte copy."""
    check_bulk(dst, src, size)
    data = np.asarray(read(int(src), int(size)), dtype=np.uint8)
    if data.shape != (size,):
        raise ValueError(f"the reader returned {data.shape} bytes for a read of {size}")
    return int(dst) + np.arange(size, dtype=np.int64), data


def multicast_targets(mask: int, cluster_size: int) -> list:
    """CTA ranks a ``.multicast::cluster`` copy writes to: the set bits of the 16-bit ``ctaMask``."""
    if isinstance(mask, (bool, np.bool_)) or not isinstance(mask, (int, np.integer)) or not 0 <= mask < 1 << 16:
        raise ValueError(f"ctaMask must be a 16-bit unsigned integer, got {mask!r}")
    if not 1 <= cluster_size <= 16:
        raise ValueError(f"cluster size must be 1 .. 16 CTAs, got {cluster_size}")
    ranks = [r for r in range(16) if mask >> r & 1]
    if not ranks:
        raise ValueError("ctaMask 0 names no destination CTA")
    bad = [r for r in ranks if r >= cluster_size]
    if bad:
        raise ValueError(f"ctaMask {mask:#06x} names CTA ranks {bad}, but the cluster has {cluster_size} CTAs "
                         f"(ranks 0 .. {cluster_size - 1})")
    return ranks


def array_reader(buffer, base_address: int):
    """A global reader over a byte buffer mapped at ``base_address``; reads outside it raise ValueError."""
    buf = np.frombuffer(np.ascontiguousarray(buffer).tobytes(), dtype=np.uint8)
    base = int(base_address)

    def read(address: int, nbytes: int) -> np.ndarray:
        lo = int(address) - base
        if lo < 0 or lo + nbytes > buf.size:
            raise ValueError(f"global read of {nbytes} bytes at {int(address):#x} is outside the mapped buffer "
                             f"[{base:#x}, {base + buf.size:#x})")
        return buf[lo:lo + nbytes]

    return read
