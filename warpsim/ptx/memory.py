"""The state spaces a kernel addresses: global memory (numpy arrays mapped in place at device
addresses), shared memory (one byte array per CTA), local memory (bytes per thread) and the
kernel parameters (read-only bytes).

Generic addresses: a global address is itself; shared, local and parameter addresses sit in
windows of their own (``cvta.shared`` adds ``SHARED_WINDOW``, and so on), so a generic load or
store goes to the space its address falls in.  Memory is sequentially consistent: every access
completes in program order, in the lane order the executor runs them.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

GLOBAL_BASE = 0x0000_0100_0000_0000      # first address GlobalMemory.map chooses
# The windows sit above the 47-bit user address range, so that any device address a real launch
# had (CUDA hands out addresses up to 0x7fff_ffff_ffff) can be mapped as global memory.
PARAM_WINDOW = 0x0000_8000_0000_0000     # generic addresses of the kernel parameters (cvta.param)
LOCAL_WINDOW = 0x0000_8100_0000_0000     # generic addresses of a thread's local memory (cvta.local)
SHARED_WINDOW = 0x0000_8200_0000_0000    # generic addresses of shared memory (cvta.shared)
_WINDOW = 1 << 32

_GLOBAL, _SHARED, _LOCAL, _PARAM = 0, 1, 2, 3
_SPACE_KIND = {"global": _GLOBAL, "const": _GLOBAL, "shared": _SHARED, "local": _LOCAL, "param": _PARAM}
_WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}


class GlobalMemory:
    """Device global memory made of numpy arrays mapped in place.

    >>> gm = GlobalMemory()
    >>> x = np.arange(4, dtype=np.uint32)
    >>> hex(gm.map(x))
    '0xffffff0000'
    >>> hex(gm.map(np.zeros(2, np.uint64), address=0x2000_0000_0000))
    '0x200000000000'

    A kernel's loads and stores through an address inside a mapped array read and write that
    array's bytes; any other address is an error naming the lane and the address.
    """

    def __init__(self):
        self.bases: list[int] = []          # sorted
        self.buffers: list[np.ndarray] = []  # uint8 views of the mapped arrays, same order
        self.module_symbols: dict = {}      # (id(module), name) -> address of a module variable
        self.track = None                   # a Track while a worker records what a batch touched

    def __repr__(self):
        return f"GlobalMemory({len(self.bases)} arrays, {sum(b.size for b in self.buffers)} bytes)"

    def map(self, array, address=None) -> int:
        """Map ``array`` (C-contiguous, writeable: stores land in it) at ``address`` (None: the next
        free 64 KiB-aligned address) and return the address."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"GlobalMemory.map takes a numpy array, not {type(array).__name__}")
        if not array.flags.c_contiguous:
            raise ValueError("mapped arrays must be C-contiguous (np.ascontiguousarray) so that the kernel's "
                             "stores land in them")
        if not array.flags.writeable:
            raise ValueError("mapped arrays must be writeable")
        view = array.reshape(-1).view(np.uint8)
        if address is None:
            top = max((b + v.size for b, v in zip(self.bases, self.buffers)), default=GLOBAL_BASE - 0x10000)
            address = (top + 0xFFFF) // 0x10000 * 0x10000 + (0x10000 if self.bases else 0)
        if isinstance(address, bool) or not isinstance(address, (int, np.integer)):
            raise TypeError(f"address must be an int or None, not {type(address).__name__}")
        address = int(address)
        align = max(array.dtype.itemsize, 1)
        if address <= 0 or address + view.size > PARAM_WINDOW:
            raise ValueError(f"address 0x{address:x} is outside global memory: use 1 .. 0x{PARAM_WINDOW - 1:x}")
        if address % align:
            raise ValueError(f"address 0x{address:x} is not aligned to the array's {align}-byte elements "
                             f"({array.dtype})")
        for b, v in zip(self.bases, self.buffers):
            if address < b + max(v.size, 1) and b < address + max(view.size, 1):
                raise ValueError(f"[0x{address:x}, 0x{address + view.size:x}) overlaps the array already mapped at "
                                 f"[0x{b:x}, 0x{b + v.size:x})")
        k = int(np.searchsorted(np.array(self.bases, dtype=np.uint64), np.uint64(address)))
        self.bases.insert(k, address)
        self.buffers.insert(k, view)
        return address

    def read(self, address, nbytes) -> bytes:
        """``nbytes`` bytes at ``address`` (inside one mapped array)."""
        k, off = self._find(int(address), int(nbytes))
        if self.track is not None:
            self.track.mark(False, k, np.array([off]), int(nbytes))
        return self.buffers[k][off:off + nbytes].tobytes()

    def write(self, k, off, data):
        """Store bytes ``data`` at byte ``off`` of mapped array ``k`` (see :meth:`_find`)."""
        if self.track is not None:
            self.track.mark(True, k, np.array([off]), len(data))
        self.buffers[k][off:off + len(data)] = data

    def _find(self, address, nbytes):
        for k, (b, v) in enumerate(zip(self.bases, self.buffers)):
            if b <= address and address + nbytes <= b + v.size:
                return k, address - b
        raise ValueError(f"[0x{address:x}, 0x{address + nbytes:x}) is not inside one mapped array")

    def locate(self, off, nbytes, sel, ctx):
        """Lanes ``sel`` at addresses ``off`` -> (array index, byte offset); fails naming a lane."""
        if not self.bases:
            bad = sel
        else:
            bases = np.array(self.bases, dtype=np.uint64)
            sizes = np.array([b.size for b in self.buffers], dtype=np.uint64)
            k = np.searchsorted(bases, off, side="right").astype(np.int64) - 1
            kk = np.maximum(k, 0)
            ok = (k >= 0) & (off + np.uint64(nbytes) <= bases[kk] + sizes[kk])
            bad = sel & ~ok
        if bad.any():
            w, l = np.argwhere(bad)[0]
            ctx.fail(f"global address 0x{int(off[w, l]):x} (lane {l}, {nbytes} bytes) lies outside every "
                     "kernel-argument array and every array mapped with GlobalMemory.map")
        return np.where(sel, kk, -1), np.where(sel, (off - bases[kk]).astype(np.int64), 0)


class Track:
    """The bytes of each mapped array that a run read and wrote (bool masks), so that runs of CTA
    batches made side by side on copies of global memory can be checked for each other's writes
    and merged in batch order (warpsim.ptx.workers)."""

    def __init__(self, sizes):
        self.read = [np.zeros(n, bool) for n in sizes]
        self.written = [np.zeros(n, bool) for n in sizes]

    def mark(self, write, k, starts, nbytes):
        m = (self.written if write else self.read)[k]
        starts = np.asarray(starts, dtype=np.int64).reshape(-1)
        w = min(nbytes, 8)
        if nbytes in (2, 4, 8, 16) and m.size % w == 0 and not (starts & (w - 1)).any():
            # aligned words: one index per word, every byte of it set (True is byte 1)
            first = starts >> (w.bit_length() - 1)
            idx = first if nbytes == w else (first[:, None] + np.arange(nbytes // w)).reshape(-1)
            m.view(np.dtype(f"<u{w}"))[idx] = int.from_bytes(b"\x01" * w, "little")
            return
        m[starts if nbytes == 1 else (starts[:, None] + np.arange(nbytes)).reshape(-1)] = True


def _word(store, starts, nbytes, aligned=1):
    """The unsigned dtype whose words hold every access whole (2, 4, 8 or 16 bytes: 8-byte words),
    when every start is aligned to it and the byte array divides into it; else None (bytes).
    ``aligned``: an alignment of every start the caller checked already."""
    w = min(nbytes, 8)
    if nbytes not in (2, 4, 8, 16) or store.size % w or not store.flags.c_contiguous:
        return None
    if aligned % w and starts.size and (starts & (w - 1)).any():
        return None
    return np.dtype(f"<u{w}")


def _gather(store, starts, nbytes, aligned=1):
    """Bytes [start, start + nbytes) of the byte array store, per start: (n, nbytes) uint8.  Whole
    aligned words are gathered as words (one index per word, not per byte)."""
    dt = _word(store, starts, nbytes, aligned)
    if dt is None:
        return store[starts[:, None] + np.arange(nbytes)]
    per = nbytes // dt.itemsize
    if per > 1 and not store.size % nbytes and not (starts & (nbytes - 1)).any():
        # every access one whole row of nbytes: one index per row
        # (take along the rows: several times faster than indexing for rows of 16 bytes)
        return store.view(dt).reshape(-1, per).take(starts >> (nbytes.bit_length() - 1), axis=0).view(np.uint8)
    first = starts >> (dt.itemsize.bit_length() - 1)       # starts are >= 0 and aligned
    idx = first if per == 1 else first[:, None] + np.arange(per)
    return np.ascontiguousarray(store.view(dt)[idx]).view(np.uint8).reshape(len(starts), nbytes)


def _scatter(store, starts, data, aligned=1):
    """Write data (n, nbytes) at [start, start + nbytes) of store, in lane order (a later lane's bytes
    win where two overlap, as byte by byte)."""
    nbytes = data.shape[-1]
    dt = _word(store, starts, nbytes, aligned)
    if dt is None:
        store[starts[:, None] + np.arange(nbytes)] = data
        return
    per = nbytes // dt.itemsize
    if per > 1 and not store.size % nbytes and not (starts & (nbytes - 1)).any():
        # every access one whole row of nbytes, written as one item (a later lane's row wins)
        row = np.dtype((np.void, nbytes))
        store.view(row)[starts >> (nbytes.bit_length() - 1)] = np.ascontiguousarray(data).view(row).reshape(len(starts))
        return
    first = starts >> (dt.itemsize.bit_length() - 1)       # starts are >= 0 and aligned
    if per == 1:
        store.view(dt)[first] = np.ascontiguousarray(data).view(dt).reshape(len(starts))
    else:
        store.view(dt)[first[:, None] + np.arange(per)] = np.ascontiguousarray(data).view(dt).reshape(len(starts), per)


class Memory:
    """Every state space of one launch (or of a Warpgroup: shared memory only)."""

    def __init__(self, nctas=1, shared_bytes=0, warp_cta=None, *, glob=None, local_bytes=0, nwarps=None,
                 params=b""):
        self.shared = np.zeros((nctas, shared_bytes), dtype=np.uint8)
        self.shared_bytes = shared_bytes
        self.warp_cta = np.zeros(1, dtype=np.int64) if warp_cta is None else warp_cta
        self.glob = GlobalMemory() if glob is None else glob
        nw = len(self.warp_cta) if nwarps is None else nwarps
        self.local = np.zeros((nw, 32, local_bytes), dtype=np.uint8)
        self.local_bytes = local_bytes
        self.params = np.frombuffer(bytes(params), dtype=np.uint8)
        self.cluster_cta = None   # (nctas, cluster size) CTA index of each rank of a CTA's cluster (DSMEM)
        self.watch = None         # called as watch(ctx, shared lanes, flat offsets, nbytes) before a shared store
        self._cta_base = None     # (warp_cta, shared bytes, each warp's shared window (W, 1)) as last computed

    def add_buffer(self, arr):
        """Map a numpy array into global memory (in place) and return its address."""
        return self.glob.map(arr)

    # --- address spaces -------------------------------------------------------------------

    def cvta(self, v, space, to, ctx):
        if space in ("global", "const"):
            return v
        w = np.uint64(_WINDOWS[space])
        return v - w if to else v + w

    def _split(self, space, addr, ctx):
        """-> (kind (g,L) int: global/shared/local/param, offsets within the space (g,L) uint64)."""
        if space != "generic":
            return np.full(addr.shape, _SPACE_KIND[space], dtype=np.int64), addr
        kind = np.zeros(addr.shape, dtype=np.int64)
        off = addr.copy()
        for name, w in _WINDOWS.items():
            inside = (addr >= np.uint64(w)) & (addr < np.uint64(w + _WINDOW))
            kind[inside] = _SPACE_KIND[name]
            off = np.where(inside, addr - np.uint64(w), off)
        return kind, off

    def _locate(self, space, addr, nbytes, align, ctx, lanes, write):
        active = ctx.lane_mask(lanes)
        if active is None:
            active = np.ones(addr.shape, dtype=bool)
        l0 = lanes.start if isinstance(lanes, slice) else 0
        bad = (addr % np.uint64(align) != 0) & active
        if bad.any():
            w, l = np.argwhere(bad)[0]
            ctx.fail(f"address 0x{int(addr[w, l]):x} of lane {l + l0} is not aligned to {align} bytes "
                     f"(a .{ctx.opcode.split('.')[-1]} access of {nbytes} bytes)")
        kind, off = self._split(space, addr, ctx)
        rows = np.arange(addr.shape[0]) if ctx.rows is None else np.asarray(ctx.rows)
        o = off.astype(np.int64)
        flat = np.zeros(addr.shape, dtype=np.int64)
        parts = {}
        for k, size, what in ((_SHARED, self.shared_bytes, "the CTA's {} bytes of shared memory"),
                              (_LOCAL, self.local_bytes, "the thread's {} bytes of local memory"),
                              (_PARAM, self.params.size, "the kernel's {} bytes of parameters")):
            sel = (kind == k) & active
            if not sel.any():
                continue
            if k == _PARAM and write:
                ctx.fail("kernel parameters are read-only (st.param writes a function's own .param variables)")
            target = None
            if k == _SHARED:      # a shared::cluster address (rank + 1) << 24 | offset reaches another CTA
                rank = np.where(sel, o >> 24, 0)
                if (rank > 0).any():
                    nrank = 1 if self.cluster_cta is None else self.cluster_cta.shape[1]
                    badr = sel & (rank > nrank)
                    if badr.any():
                        w, l = np.argwhere(badr)[0]
                        ctx.fail(f"shared::cluster address 0x{int(o[w, l]):x} (lane {l + l0}) names CTA rank "
                                 f"{int(rank[w, l]) - 1}, but the cluster has {nrank} CTA(s)")
                    own = self.warp_cta[rows][:, None]
                    target = np.where(rank > 0, self.cluster_cta[own, np.maximum(rank - 1, 0)], own)
                    o = np.where(sel, o & 0xFFFFFF, o)
            out = sel & ((o < 0) | (o + nbytes > size))
            if out.any():
                w, l = np.argwhere(out)[0]
                sp = {_SHARED: "shared", _LOCAL: "local", _PARAM: "parameter"}[k]
                ctx.fail(f"{sp} address 0x{int(o[w, l]):x} (lane {l + l0}, {nbytes} bytes) is outside "
                         + what.format(size))
            if k == _SHARED:
                base = (self.warp_cta[rows][:, None] if target is None else target) * self.shared_bytes
            elif k == _LOCAL:
                base = (rows[:, None] * 32 + np.arange(l0, l0 + addr.shape[1])[None, :]) * self.local_bytes
            else:
                base = np.zeros((len(rows), 1), dtype=np.int64)
            flat = np.where(sel, base + o, flat)
            parts[k] = sel
        gl = (kind == _GLOBAL) & active
        buf = np.full(addr.shape, -1, dtype=np.int64)
        if gl.any():
            buf, goff = self.glob.locate(off, nbytes, gl, ctx)
            flat = np.where(gl, goff, flat)
        parts[_GLOBAL] = gl
        return parts, buf, flat

    def _store_of(self, k):
        return {_SHARED: self.shared, _LOCAL: self.local, _PARAM: self.params}[k].reshape(-1)

    def _global_groups(self, sel, buf):
        """(global buffer index, lanes) pairs of the selected lanes; one pair when every lane hits
        one array (the common case: no sort of the buffer indices)."""
        bs = buf[sel]
        if bs.size and bs.min() == bs.max():
            return [(int(bs[0]), sel)]
        return [(b, sel & (buf == b)) for b in np.unique(bs)]

    def _direct(self, space, addr, nbytes, align, ctx, lanes):
        """The common access, located with a few whole-array checks: an explicit .global access
        inside one mapped array, or an explicit .shared access inside the CTA's own shared memory,
        every address aligned.  -> (store, flat byte offsets (g, L) int64, active lanes or None), or
        None for anything else (the general _locate then does it, or names the error)."""
        if space not in ("global", "shared") or align & (align - 1) or addr.dtype != np.uint64:
            return None
        active = ctx.lane_mask(lanes)
        if active is not None and not active.all():
            if not active.any():
                return None
        else:
            active = None
        sub = addr if active is None else addr[active]        # the active lanes' addresses
        # every one aligned: no low bit set in any of them
        if align > 1 and int(np.bitwise_or.reduce(sub, axis=None)) & (align - 1):
            return None
        if space == "shared":
            if self.shared_bytes > 1 << 24:
                return None
            # the CTA's own window: no shared::cluster rank bits, no byte past its shared memory
            so = sub.view(np.int64)
            if int(so.min()) < 0 or int(so.max()) > self.shared_bytes - nbytes:
                return None
            if ctx.rows is None:
                if len(self.warp_cta) != addr.shape[0]:
                    return None
                c = self._cta_base
                if c is None or c[0] is not self.warp_cta or c[1] != self.shared_bytes:   # once per layout
                    c = self._cta_base = (self.warp_cta, self.shared_bytes, (self.warp_cta * self.shared_bytes)[:, None])
                cta_base = c[2]
            else:
                cta_base = (self.warp_cta[np.asarray(ctx.rows)] * self.shared_bytes)[:, None]
            return self.shared.reshape(-1), addr.view(np.int64) + cta_base, active, -1
        g = self.glob
        if not g.bases:
            return None
        lo, hi = int(sub.min()), int(sub.max())
        k = bisect.bisect_right(g.bases, lo) - 1      # the array the lowest address falls in
        if k < 0:
            return None
        base, size = g.bases[k], g.buffers[k].size
        if size < nbytes or hi > base + size - nbytes:
            return None
        return g.buffers[k], addr.view(np.int64) - base, active, k

    def _aligned(self, align, k):
        """The alignment of every flat offset of a direct access whose addresses are ``align``-aligned
        (k: its global array, -1 shared memory): the offsets are the addresses less the array's base,
        or plus a multiple of the shared bytes."""
        return math.gcd(align, self.glob.bases[k] if k >= 0 else self.shared_bytes)

    def try_load(self, space, addr, nbytes, align, ctx, lanes=None):
        """What :meth:`load` returns, when the access is one that cannot fail (see _direct); else None."""
        if self._direct(space, addr, nbytes, align, ctx, lanes) is None:
            return None
        return self.load(space, addr, nbytes, align, ctx, lanes)

    def load(self, space, addr, nbytes, align, ctx, lanes=None):
        d = self._direct(space, addr, nbytes, align, ctx, lanes)
        if d is not None:
            store, flat, active, k = d
            starts = flat.reshape(-1) if active is None else flat[active]
            if k >= 0 and self.glob.track is not None:
                self.glob.track.mark(False, k, starts, nbytes)
            aligned = self._aligned(align, k)
            if active is None:
                return _gather(store, starts, nbytes, aligned).reshape(addr.shape + (nbytes,))
            out = np.zeros(addr.shape + (nbytes,), dtype=np.uint8)
            out[active] = _gather(store, starts, nbytes, aligned)
            return out
        parts, buf, flat = self._locate(space, addr, nbytes, align, ctx, lanes, False)
        out = np.zeros(addr.shape + (nbytes,), dtype=np.uint8)
        for store, sel in self._pieces(parts, buf, flat, nbytes, False):
            out[sel] = _gather(store, flat[sel], nbytes)
        return out

    def _pieces(self, parts, buf, flat, nbytes, write):
        """(backing bytes, lanes) of every located part of an access (a global one per buffer), marking
        tracked global accesses as reads or writes."""
        for k, sel in parts.items():
            if not sel.any():
                continue
            if k != _GLOBAL:
                yield self._store_of(k), sel
                continue
            for b, s in self._global_groups(sel, buf):
                if self.glob.track is not None:
                    self.glob.track.mark(write, b, flat[s], nbytes)
                yield self.glob.buffers[b], s

    def store(self, space, addr, data, align, ctx, lanes=None):
        nbytes = data.shape[-1]
        d = self._direct(space, addr, nbytes, align, ctx, lanes)
        if d is not None:
            store, flat, active, k = d
            if k < 0 and self.watch is not None:
                self.watch(ctx, np.ones(addr.shape, bool) if active is None else active, flat, nbytes)
            starts = flat.reshape(-1) if active is None else flat[active]
            if k >= 0 and self.glob.track is not None:
                self.glob.track.mark(True, k, starts, nbytes)
            _scatter(store, starts, data.reshape(-1, nbytes) if active is None else data[active], self._aligned(align, k))
            return
        parts, buf, flat = self._locate(space, addr, nbytes, align, ctx, lanes, True)
        if self.watch is not None and _SHARED in parts:
            self.watch(ctx, parts[_SHARED], flat, nbytes)
        for store, sel in self._pieces(parts, buf, flat, nbytes, True):
            _scatter(store, flat[sel], data[sel])

    def atomic(self, space, addr, nbytes, ctx, update):
        """A read-modify-write per active lane, lanes in increasing order within a warp and warps in
        order: ``update(old_bytes (n, nbytes), lane_indices (n,)) -> new_bytes`` runs on each group of
        lanes that hit the same address, in that order.  Returns the old bytes, (g, L, nbytes)."""
        parts, buf, flat = self._locate(space, addr, nbytes, nbytes, ctx, None, True)
        old = np.zeros(addr.shape + (nbytes,), dtype=np.uint8)
        order = np.arange(addr.size).reshape(addr.shape)
        for k, sel in parts.items():
            if not sel.any():
                continue
            if k == _GLOBAL:
                groups = [(self.glob.buffers[b], sel & (buf == b)) for b in np.unique(buf[sel])]
                if self.glob.track is not None:
                    for b in np.unique(buf[sel]):
                        for write in (False, True):
                            self.glob.track.mark(write, int(b), flat[sel & (buf == b)], nbytes)
            else:
                groups = [(self._store_of(k), sel)]
            for store, s in groups:
                lanes = order[s]                       # row-major: warps in order, lanes increasing
                where = flat[s]
                for a in np.unique(where):
                    these = lanes[where == a]
                    cur = store[a:a + nbytes].copy()
                    olds, new = update(cur, these)
                    store[a:a + nbytes] = new
                    old.reshape(-1, nbytes)[these] = olds
        return old
