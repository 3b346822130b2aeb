"""TMA tile copies (``cp.async.bulk.tensor`` tile mode, global <-> shared) for the compiled engine.

The semantics are :mod:`warpsim.ptx.tma`'s (verified there against H100 / H200 captures); this module
runs them in jitted code.  Descriptors are decoded in Python at launch, never in the kernel: the only
decoder is :func:`warpsim.isa.tensormap.decode_tensormap`, and a decode names every way 128 bytes can
fail to be a tensormap, which jitted code could not say.  :func:`scan_descriptors` finds the tensormaps
a launch can reach (its parameters, its mapped arrays) and :func:`descriptor_fields` flattens each into
an int64 row; in the kernel :func:`find_descriptor` matches the 128 bytes an instruction names against
the table (-1: not found at launch, e.g. written by the kernel itself), and :func:`tile_load` /
:func:`tile_store` copy a box through ``rt.global_at`` (tracked, an unmapped address fails with
``rt.BAD_ADDRESS``).  A refused copy records one of the ``rt.TMA_*`` codes in ``status``.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from ...isa.smem import SWIZZLE_BYTES
from ...isa.tensormap import (IM2COL_BIT, LAYOUT, TENSORMAP_BYTES, Im2colMap, TensorMap, decode_im2col, decode_tensormap,
                              is_im2col)
from .. import tma
from .rt import (BAD_ADDRESS, BULK_COPY, READ, TMA_INNER, TMA_NEGATIVE, TMA_SMEM_ALIGN, TMA_SMEM_RANGE, WRITTEN, fail, find,
                 global_at, peek1, peek2, peek4, peek8, poke1, poke2, poke4, poke8, round16)
from .rt_scalar import half_value

#: a row of the descriptor table: scalars, then five slots (dimensions 0..4, innermost first; 1 or 0 past
#: the rank) of each per-dimension entry.  ``address``: the global address (as int64 bits);
#: ``fill_pattern``: the out-of-bounds element repeated over 8 bytes (tma.NAN_FILL for a float tensormap
#: with the NaN fill, else 0); ``swizzle_span``: bytes (0: none); ``swizzle_mask``: the 16-byte chunk
#: bits the swizzle flips (isa.smem.swizzle); ``tx_bytes``: tma.box_bytes, the count a load completes;
#: ``row_bytes``: a box row's bytes; ``row_pitch``, ``footprint``: tma.smem_row_pitch / smem_footprint;
#: ``reduce_type``: the element type's index in :data:`REDUCE_DTYPES` (-1: none a reduction takes);
#: im2col descriptors (``im2col`` 1): ``pixels`` per load, the pixel box's ``lower_j`` / ``upper_j`` per spatial
#: dimension j, a box row of the channels of one pixel (``row_bytes``, ``row_pitch``, ``tx_bytes`` a load's);
#: ``stride``: byte stride (dimension 0: the element); ``step``: the element stride a box walks
#: (dimension 0: 1); ``shape``: tma.box_shape, the elements walked.
FIELDS = ("address", "rank", "elem_bytes", "is_float", "fill_pattern", "swizzle_span", "swizzle_mask", "tx_bytes",
          "row_bytes", "row_pitch", "footprint", "reduce_type", "im2col", "pixels", "lower_0", "lower_1", "lower_2",
          "upper_0", "upper_1", "upper_2")
PER_DIM = ("dim", "stride", "box", "step", "shape")
(ADDRESS, RANK, ELEM_BYTES, IS_FLOAT, FILL_PATTERN, SWIZZLE_SPAN, SWIZZLE_MASK, TX_BYTES, ROW_BYTES, ROW_PITCH,
 FOOTPRINT, REDUCE_TYPE, IM2COL, PIXELS, LOWER, _, _, UPPER, _, _) = range(len(FIELDS))
DIM, STRIDE, BOX, STEP, SHAPE = (len(FIELDS) + 5 * i for i in range(len(PER_DIM)))
NFIELDS = len(FIELDS) + 5 * len(PER_DIM)


def descriptor_fields(tm) -> np.ndarray:
    """What the jitted copies need of a decoded tensormap (a TensorMap, or an Im2colMap), as one int64 row
    (:data:`FIELDS`, :data:`PER_DIM`).

    Raises NotImplementedError for what :mod:`warpsim.ptx.tma` does not model (interleaved layouts)."""
    im = None
    if isinstance(tm, Im2colMap):
        im, tm = tm, tm.tensor
    if not isinstance(tm, TensorMap):
        raise TypeError(f"descriptor_fields takes a decoded TensorMap (decode_tensormap), not {type(tm).__name__}")
    shape = tma.box_shape(tm)                  # refuses what the copies do not model
    eb = tm.elem_bits // 8
    span = SWIZZLE_BYTES[tm.swizzle]
    nan = tm.is_float and tm.oob_fill != "none"
    fill = int.from_bytes(tma.NAN_FILL[tm.elem_bits].to_bytes(eb, "little") * (8 // eb), "little") if nan else 0
    row = np.zeros(NFIELDS, np.int64)
    row[:REDUCE_TYPE + 1] = (np.uint64(tm.global_address).astype(np.int64), tm.rank, eb, tm.is_float, fill, span,
                             span // 16 - 1 if span else 0, tma.box_bytes(tm), shape[0] * eb, tma.smem_row_pitch(tm),
                             tma.smem_footprint(tm), REDUCE_DTYPES.index(tm.dtype) if tm.dtype in REDUCE_DTYPES else -1)
    if im is not None:                         # tma.im2col_load's rows: one pixel's channels each
        rb = im.channels_per_pixel * eb
        pitch = max(rb, span)
        row[TX_BYTES], row[ROW_BYTES], row[ROW_PITCH] = im.pixels_per_column * rb, rb, pitch
        row[FOOTPRINT], row[IM2COL], row[PIXELS] = im.pixels_per_column * pitch, 1, im.pixels_per_column
        row[LOWER:LOWER + len(im.lower)] = im.lower
        row[UPPER:UPPER + len(im.upper)] = im.upper
    per_dim = {"dim": tm.global_dim, "stride": (eb,) + tuple(tm.global_strides), "box": tm.box_dim,
               "step": (1,) + tuple(tm.element_strides[1:]), "shape": shape}
    for base, name in zip((DIM, STRIDE, BOX, STEP, SHAPE), PER_DIM):
        row[base:base + 5] = 0 if name == "stride" else 1
        row[base:base + tm.rank] = per_dim[name]
    return row


def _layout_words() -> np.ndarray:
    """The bits some LAYOUT field uses, as the 16 little-endian uint64 words of a descriptor."""
    used = 1 << IM2COL_BIT | ((1 << 40) - 1) << 448         # an im2col descriptor's flag, corners and pixels
    for f in LAYOUT:
        used |= ((1 << f.width) - 1) << f.bit
    return np.frombuffer(used.to_bytes(TENSORMAP_BYTES, "little"), "<u8").copy()


_USED = _layout_words()


@functools.lru_cache(maxsize=4096)
def _fields_of(raw: bytes):
    """descriptor_fields of 128 bytes that decode as a tile or im2col tensormap, else None (remembered: a launch
    scans the same parameters and arrays again)."""
    try:
        return descriptor_fields(decode_im2col(raw) if is_im2col(raw) else decode_tensormap(raw, derived="ignore"))
    except (ValueError, NotImplementedError):
        return None


def scan_descriptors(blobs, addresses=None):
    """The tile tensormaps the copies model found at every 64-byte-aligned address of ``blobs`` (byte strings
    or uint8 arrays; ``addresses``: where each starts in the kernel's address space, None: 64-byte aligned):
    ``(raw uint8[n, 128], fields int64[n, NFIELDS])``, each distinct descriptor once.

    A numpy prefilter keeps the 128-byte windows with no bit outside LAYOUT's fields and a non-zero
    global address (so zeroed or random memory costs no decode); :func:`decode_tensormap` judges the rest,
    as the interpreter does (``derived="ignore"``; im2col descriptors, bit 64: ``decode_im2col``).  Layouts the
    copies do not model (interleave) are left out."""
    raws, rows, seen = [], [], set()
    blobs = list(blobs)
    addresses = [0] * len(blobs) if addresses is None else [int(a) for a in addresses]
    if len(addresses) != len(blobs):
        raise ValueError(f"scan_descriptors: {len(blobs)} blobs but {len(addresses)} addresses")
    for blob, address in zip(blobs, addresses):
        b = np.frombuffer(blob, np.uint8) if isinstance(blob, (bytes, bytearray, memoryview)) else \
            np.ascontiguousarray(blob).reshape(-1).view(np.uint8)
        b = b[-address % 64:]
        n = b.size // 64
        if n < 2:
            continue
        words = b[:n * 64].view("<u8").reshape(n, 8)
        clean_lo = ~(words & ~_USED[:8]).any(axis=1)
        clean_hi = ~(words & ~_USED[8:]).any(axis=1)
        for m in np.flatnonzero(clean_lo[:-1] & clean_hi[1:] & (words[:-1, 0] != 0)):
            raw = b[64 * m:64 * m + TENSORMAP_BYTES]
            key = raw.tobytes()
            if key in seen:
                continue
            seen.add(key)
            row = _fields_of(key)
            if row is None:
                continue
            raws.append(raw.copy())
            rows.append(row)
    if not raws:
        return np.zeros((0, TENSORMAP_BYTES), np.uint8), np.zeros((0, NFIELDS), np.int64)
    return np.stack(raws), np.stack(rows)


# -- jitted ---------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def find_descriptor(raw, ptr):
    """The row of ``raw`` (uint8[n, 128]) equal to the 128 bytes at host address ``ptr``, or -1."""
    for i in range(raw.shape[0]):
        k = 0
        while k < TENSORMAP_BYTES and peek1(ptr + k) == raw[i, k]:
            k += 1
        if k == TENSORMAP_BYTES:
            return i
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _swizzled(a, mask):
    """isa.smem.swizzle of shared offset ``a`` (mask: SWIZZLE_MASK)."""
    return a ^ (((a >> 7) & mask) << 4)


@njit(cache=True, nogil=True, _nrt=False)
def _row_offset(f, coords, r):
    """Box row r (dimensions 1.. mixed radix, dimension 1 fastest): (inside the tensor in dimensions 1..,
    its byte offset from the tensor's start in those dimensions)."""
    inside = True
    off = np.int64(0)
    q = r
    for d in range(1, f[RANK]):
        n = f[SHAPE + d]
        p = coords[d] + f[STEP + d] * (q % n)
        q //= n
        if p < 0 or p >= f[DIM + d]:
            inside = False
        off += p * f[STRIDE + d]
    return inside, off


#: what :func:`_row_bytes` does with a box row's bytes
LOAD, STORE, FILL = range(3)


@njit(cache=True, nogil=True, _nrt=False)
def _row_bytes(smemp, rs, mask, k0, k1, how, h, pattern):
    """Bytes k0 .. k1 - 1 of the box row at shared offset ``rs`` (swizzled 16-byte chunks): ``how`` LOAD from
    the global bytes at host address ``h`` (byte k0's), STORE to them, or FILL with ``pattern`` (the
    out-of-bounds element repeated over 8 bytes: row byte k takes its byte k % 8)."""
    k = k0
    while k < k1:
        q = k - k % 16
        s = smemp + _swizzled(rs + q, mask) + (k - q)
        n = min(q + 16, k1) - k
        if how == FILL:
            if n == 16:
                poke8(s, pattern)
                poke8(s + 8, pattern)
            else:
                for i in range(n):
                    poke1(s + i, pattern >> (8 * ((k + i) % 8)))
        else:
            g = h + (k - k0)
            a, b = (g, s) if how == LOAD else (s, g)
            if n == 16:
                poke8(b, peek8(a))
                poke8(b + 8, peek8(a + 8))
            else:
                for i in range(n):
                    poke1(b + i, peek1(a + i))
        k += n


@njit(cache=True, nogil=True, _nrt=False)
def _refuse(status, code, line, t, value, detail):
    status[4] = detail
    fail(status, code, line, t, value)
    return np.int64(-1)


@njit(cache=True, nogil=True, _nrt=False)
def tile_load(status, line, t, f, coords, smemp, smem_bytes, dst, bases, sizes, ptrs, trk, toff):
    """``cp.async.bulk.tensor`` global -> shared, tile mode, as tma.tile_load: the box at ``coords`` (int64[5],
    innermost first, ``f[RANK]`` used) to shared offset ``dst`` of the CTA's shared memory (host address
    ``smemp``, ``smem_bytes`` long).  Returns the transaction bytes, or -1 after recording why in status."""
    dst, smemp, smem_bytes = np.int64(dst), np.int64(smemp), np.int64(smem_bytes)   # unsigned registers too
    if dst < 0 or dst % tma.SMEM_ALIGN:
        return _refuse(status, TMA_SMEM_ALIGN, line, t, dst, 0)
    if dst + f[FOOTPRINT] > smem_bytes:          # measured: the H100 faults (tma.check_smem_fits)
        return _refuse(status, TMA_SMEM_RANGE, line, t, dst, dst + f[FOOTPRINT])
    eb = f[ELEM_BYTES]
    c0 = coords[0]
    if (c0 * eb) % 16:                            # measured: illegal instruction (tma.tile_load)
        return _refuse(status, TMA_INNER, line, t, c0, c0 * eb)
    row, pitch, mask, fill = f[ROW_BYTES], f[ROW_PITCH], f[SWIZZLE_MASK], f[FILL_PATTERN]
    lo = max(0, -c0)
    hi = min(f[SHAPE], f[DIM] - c0)               # the row's elements inside dimension 0: lo .. hi - 1
    for r in range(f[TX_BYTES] // row):
        inside, off = _row_offset(f, coords, r)
        rs = dst + r * pitch
        k0 = k1 = 0
        if inside and hi > lo:
            k0, k1 = lo * eb, hi * eb
            h = global_at(status, line, t, bases, sizes, ptrs, trk, toff,
                          np.uint64(f[ADDRESS]) + np.uint64(off + (c0 + lo) * eb), k1 - k0, READ)
            if h == 0:
                return np.int64(-1)
            _row_bytes(smemp, rs, mask, k0, k1, LOAD, h, 0)
        _row_bytes(smemp, rs, mask, 0, k0, FILL, 0, fill)
        _row_bytes(smemp, rs, mask, k1, row, FILL, 0, fill)
    return f[TX_BYTES]


@njit(cache=True, nogil=True, _nrt=False)
def tile_store(status, line, t, f, coords, smemp, smem_bytes, src, bases, sizes, ptrs, trk, toff):
    """``cp.async.bulk.tensor`` shared -> global, tile mode, as tma.tile_store: the box at shared offset ``src``
    to ``coords``; the innermost bound is rounded up to tma.STORE_GRANULE bytes.  Every run is checked mapped
    before a byte is written.  Returns the global bytes written, or -1 after recording why in status."""
    return _tile_out(status, line, t, f, coords, smemp, smem_bytes, src, bases, sizes, ptrs, trk, toff, -1)


@njit(cache=True, nogil=True, _nrt=False)
def tile_reduce(status, line, t, f, coords, smemp, smem_bytes, src, bases, sizes, ptrs, trk, toff, op):
    """``cp.reduce.async.bulk.tensor`` tile mode (tma.tile_reduce): each byte tile_store would write is the
    global element (op) the box's (``op``: an index of :data:`REDUCE_OPS`; the element type the tensormap's).
    Returns the global bytes changed, or -1 after recording why in status (a type the reduction does not take:
    BULK_COPY, status[4] 5)."""
    code = f[REDUCE_TYPE]
    if code < 0 or not _REDUCE_TAKES[op, code]:
        return _refuse(status, BULK_COPY, line, t, op, 5)
    if op >= 5 and code == 3:                 # and / or / xor on int64: illegal instruction (captured)
        return _refuse(status, BULK_COPY, line, t, op, 6)
    return _tile_out(status, line, t, f, coords, smemp, smem_bytes, src, bases, sizes, ptrs, trk, toff, op)


@njit(cache=True, nogil=True, _nrt=False)
def _tile_out(status, line, t, f, coords, smemp, smem_bytes, src, bases, sizes, ptrs, trk, toff, op):
    """tile_store (op -1) and tile_reduce."""
    src, smemp, smem_bytes = np.int64(src), np.int64(smemp), np.int64(smem_bytes)
    for d in range(f[RANK]):
        if coords[d] < 0:                         # captured: illegal instruction on Hopper
            return _refuse(status, TMA_NEGATIVE, line, t, coords[d], d)
    if src < 0 or src % tma.SMEM_ALIGN:
        return _refuse(status, TMA_SMEM_ALIGN, line, t, src, 0)
    row, pitch, mask = f[ROW_BYTES], f[ROW_PITCH], f[SWIZZLE_MASK]
    rows = f[TX_BYTES] // row
    end = np.int64(0)                             # one past the last shared byte the box reads
    for q in range(0, row, 16):
        end = max(end, _swizzled(src + (rows - 1) * pitch + q, mask) + 16)
    if end > smem_bytes:
        return _refuse(status, TMA_SMEM_RANGE, line, t, src, end)
    eb = f[ELEM_BYTES]
    g = tma.STORE_GRANULE
    c0 = coords[0]
    n = (min(f[SHAPE], (f[DIM] * eb + g - 1) // g * g // eb - c0)) * eb
    if n <= 0:
        return np.int64(0)
    base = np.uint64(f[ADDRESS]) + np.uint64(c0 * eb)
    for r in range(rows):
        inside, off = _row_offset(f, coords, r)
        if inside and find(bases, sizes, base + np.uint64(off), n) < 0:
            fail(status, BAD_ADDRESS, line, t, base + np.uint64(off))
            return np.int64(-1)
    written = np.int64(0)
    for r in range(rows):
        inside, off = _row_offset(f, coords, r)
        if inside:
            h = global_at(status, line, t, bases, sizes, ptrs, trk, toff, base + np.uint64(off), n,
                          WRITTEN if op < 0 else READ | WRITTEN)
            if op < 0:
                _row_bytes(smemp, src + r * pitch, mask, 0, n, STORE, h, 0)
            else:
                _row_reduce(smemp, src + r * pitch, mask, n, h, op, f[REDUCE_TYPE])
            written += n
    return written


@njit(cache=True, nogil=True, _nrt=False)
def _row_reduce(smemp, rs, mask, n, h, op, code):
    """Bytes 0 .. n - 1 of the box row at shared offset ``rs`` (swizzled 16-byte chunks) reduced into the global
    bytes at host address ``h`` (elements never straddle a chunk)."""
    for q in range(0, n, 16):
        reduce_bytes(op, code, h + q, smemp + _swizzled(rs + q, mask), min(16, n - q))

#: what a BULK_COPY status names (status[4]), as tma.check_bulk and the interpreter's bulk copies say it
BULK_ERRORS = {1: "destination address 0x{v:x} is not 16-byte aligned",
               2: "source address 0x{v:x} is not 16-byte aligned",
               3: "size {v} is not a positive multiple of 16",
               4: "the copy ends at shared byte {v}, past the CTA's shared memory",
               5: "the tensormap's element type is not one the reduction takes (tma.REDUCE_TYPES)",
               6: "a bitwise reduction on an int64 tensormap faults on Hopper (illegal instruction; captured): use "
                  "uint64",
               7: "an im2col load's first pixel lies outside the tensormap's pixel box; Hopper faults (illegal "
                  "instruction; captured)"}


@njit(cache=True, nogil=True, _nrt=False)
def bulk_check(status, line, t, dst, src, size):
    """``cp.async.bulk``'s rule (tma.check_bulk): both addresses 16-byte aligned, the size a positive multiple
    of 16.  -1 after recording which is broken, else 0."""
    if np.int64(dst) % tma.BULK_ALIGN:
        return _refuse(status, BULK_COPY, line, t, dst, 1)
    if np.int64(src) % tma.BULK_ALIGN:
        return _refuse(status, BULK_COPY, line, t, src, 2)
    if np.int64(size) <= 0 or np.int64(size) % tma.BULK_ALIGN:
        return _refuse(status, BULK_COPY, line, t, size, 3)
    return np.int64(0)


@njit(cache=True, nogil=True, _nrt=False)
def bulk_copy(dstp, srcp, size):
    """``size`` bytes (a multiple of 16) from host address srcp to dstp, 8 at a time; as if read whole first
    (the interpreter's copy) where the two overlap."""
    n = np.int64(size)
    if srcp < dstp < srcp + n:
        for i in range(n - 8, -8, -8):
            poke8(dstp + i, peek8(srcp + i))
    else:
        for i in range(0, n, 8):
            poke8(dstp + i, peek8(srcp + i))


# --- reductions (cp.reduce.async.bulk, .tensor): tma.reduce_elements, element by element ---------------------

#: the reductions and the element types they name, as the jitted code indexes them
REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
REDUCE_DTYPES = ("uint32", "int32", "uint64", "int64", "float32", "float64", "float16", "bfloat16")
_REDUCE_TAKES = np.array([[d in tma.REDUCE_TYPES[o] for d in REDUCE_DTYPES] for o in REDUCE_OPS], np.bool_)
_REDUCE_BYTES = np.array([4, 4, 8, 8, 4, 8, 2, 2], np.int64)
_NAN16, _NAN32 = np.uint64(tma.CANONICAL_NAN[16]), np.uint64(tma.CANONICAL_NAN[32])


@njit(cache=True, nogil=True, _nrt=False)
def _f64_to_16(x, eb, mb):
    """A finite float64 rounded to nearest even in a 16-bit float of ``eb`` exponent and ``mb`` mantissa bits
    (overflow: infinity), as numpy's and ml_dtypes' conversions round."""
    w = np.float64(x).view(np.uint64)
    sign = np.int64(w >> np.uint64(63)) << (eb + mb)
    e = np.int64((w >> np.uint64(52)) & np.uint64(0x7FF))
    m = np.int64(w & np.uint64(0xFFFFFFFFFFFFF))
    full, lsb = (m, -1074) if e == 0 else (m | (np.int64(1) << 52), e - 1075)
    return round16(sign, full, lsb, eb, mb)


@njit(cache=True, nogil=True, _nrt=False)
def _pick(a, b, fa, fb, low):
    """numpy's fmin (low) / fmax of the values fa, fb of words a, b: the first on a tie, the other of a NaN."""
    if (fa <= fb if low else fa >= fb) or fb != fb:
        return a
    return b


@njit(cache=True, nogil=True, _nrt=False)
def _reduce_word(op, code, a, b):
    """``a (op) b`` of two words of REDUCE_DTYPES[code] (op: an index of REDUCE_OPS), as tma.reduce_elements."""
    a, b = np.uint64(a), np.uint64(b)
    if code == 4:                                        # f32 add: the host's, the canonical NaN
        r = np.float32(np.uint32(a).view(np.float32) + np.uint32(b).view(np.float32))
        return _NAN32 if r != r else np.uint64(r.view(np.uint32))
    if code == 5:                                        # f64 add: the host's (a NaN operand, quieted)
        return np.float64(a.view(np.float64) + b.view(np.float64)).view(np.uint64)
    if code >= 6:                                        # f16 / bf16
        eb, mb = (5, 10) if code == 6 else (8, 7)
        fa, fb = half_value(a, eb, mb), half_value(b, eb, mb)
        if op == 0:
            s = fa + fb
            if code == 7:                                # (f64 sum, to f32, to bf16: reduce_elements' roundings)
                s = np.float64(np.float32(s))
            if s != s:
                return _NAN16
            if s - s != 0.0:                             # an infinity
                return np.uint64(((1 if s < 0 else 0) << 15) | (((1 << eb) - 1) << mb))
            return _f64_to_16(s, eb, mb)
        r = _pick(a, b, fa, fb, op == 1)
        return _NAN16 if fa != fa and fb != fb else r
    bits = 32 if code <= 1 else 64
    full = np.uint64(0xFFFFFFFF) if bits == 32 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if op == 0:
        return (a + b) & full
    if op == 1 or op == 2:
        if code == 1 or code == 3:                       # signed
            sa = np.int64(np.int32(np.uint32(a))) if bits == 32 else np.int64(a)
            sb = np.int64(np.int32(np.uint32(b))) if bits == 32 else np.int64(b)
            less = sa < sb
        else:
            less = a < b
        return (a if less else b) if op == 1 else (b if less else a)
    if op == 3:                                          # inc (u32): old >= new ? 0 : old + 1
        return np.uint64(0) if a >= b else (a + np.uint64(1)) & full
    if op == 4:                                          # dec (u32): old == 0 or old > new ? new : old - 1
        return b if a == 0 or a > b else a - np.uint64(1)
    if op == 5:
        return a & b
    if op == 6:
        return a | b
    return a ^ b


@njit(cache=True, nogil=True, _nrt=False)
def _peek(p, nb):
    return peek8(p) if nb == 8 else np.uint64(peek4(p)) if nb == 4 else np.uint64(peek2(p))


@njit(cache=True, nogil=True, _nrt=False)
def reduce_bytes(op, code, dstp, srcp, n):
    """The n bytes (whole elements of REDUCE_DTYPES[code]) at host address dstp become dst (op) src."""
    nb = _REDUCE_BYTES[code]
    for i in range(0, np.int64(n), nb):
        r = _reduce_word(op, code, _peek(dstp + i, nb), _peek(srcp + i, nb))
        if nb == 8:
            poke8(dstp + i, r)
        elif nb == 4:
            poke4(dstp + i, r)
        else:
            poke2(dstp + i, r)


# --- im2col loads (tma.im2col_load) -------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def im2col_load(status, line, t, f, coords, offsets, smemp, smem_bytes, dst, bases, sizes, ptrs, trk, toff):
    """``cp.async.bulk.tensor`` global -> shared, im2col mode, as tma.im2col_load: ``f[PIXELS]`` pixels from the
    one at ``coords`` (channel, spatial W.., image; int64[5]) walking the pixel box (W fastest, then the image),
    each pixel's channels from coords[0] at pixel + ``offsets`` (int64[3]) one box row (swizzled, as in tile
    mode); a pixel outside the tensor, or channels past its end, land as the fill.  Returns the transaction
    bytes, or -1 after recording why in status."""
    dst, smemp, smem_bytes = np.int64(dst), np.int64(smemp), np.int64(smem_bytes)
    if dst < 0 or dst % tma.SMEM_ALIGN:
        return _refuse(status, TMA_SMEM_ALIGN, line, t, dst, 0)
    r = f[RANK]
    nsp = r - 2
    eb, row, pitch, mask, fill = f[ELEM_BYTES], f[ROW_BYTES], f[ROW_PITCH], f[SWIZZLE_MASK], f[FILL_PATTERN]
    ppc = f[PIXELS]
    end = np.int64(0)                             # one past the last shared byte written
    for q in range(0, row, 16):
        end = max(end, _swizzled(dst + (ppc - 1) * pitch + q, mask) + min(16, row - q))
    if end > smem_bytes:
        return _refuse(status, TMA_SMEM_RANGE, line, t, dst, end)
    p0, p1, p2 = coords[1], coords[2] if nsp > 1 else 0, coords[3] if nsp > 2 else 0     # the pixel (W, H, D)
    for j in range(nsp):
        x = p0 if j == 0 else p1 if j == 1 else p2
        if x < f[LOWER + j] or x > f[DIM + 1 + j] - 1 + f[UPPER + j]:
            return _refuse(status, BULK_COPY, line, t, x, 7)
    n = coords[r - 1]
    c0 = coords[0]
    for p in range(ppc):
        inside = 0 <= n < f[DIM + r - 1]
        off = n * f[STRIDE + r - 1]
        for j in range(nsp):
            x = (p0 if j == 0 else p1 if j == 1 else p2) + offsets[j]
            inside = inside and 0 <= x < f[DIM + 1 + j]
            off += x * f[STRIDE + 1 + j]
        rs = dst + p * pitch
        k0 = k1 = 0
        lo, top = max(c0, 0), min(c0 + row // eb, f[DIM])
        if inside and top > lo:
            k0, k1 = (lo - c0) * eb, (top - c0) * eb
            h = global_at(status, line, t, bases, sizes, ptrs, trk, toff,
                          np.uint64(f[ADDRESS]) + np.uint64(off + lo * eb), k1 - k0, READ)
            if h == 0:
                return np.int64(-1)
            _row_bytes(smemp, rs, mask, k0, k1, LOAD, h, 0)
        _row_bytes(smemp, rs, mask, 0, k0, FILL, 0, fill)
        _row_bytes(smemp, rs, mask, k1, row, FILL, 0, fill)
        # the next pixel of the box, W fastest, then H, D, then the image
        p0 += 1
        if p0 > f[DIM + 1] - 1 + f[UPPER]:
            p0 = f[LOWER]
            if nsp == 1:
                n += 1
            else:
                p1 += 1
                if p1 > f[DIM + 2] - 1 + f[UPPER + 1]:
                    p1 = f[LOWER + 1]
                    if nsp == 2:
                        n += 1
                    else:
                        p2 += 1
                        if p2 > f[DIM + 3] - 1 + f[UPPER + 2]:
                            p2 = f[LOWER + 2]
                            n += 1
    return f[TX_BYTES]
