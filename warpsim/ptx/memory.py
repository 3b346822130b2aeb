"""Shared memory (one byte array per CTA) and a flat global memory made of numpy buffers."""

from __future__ import annotations

import numpy as np

GLOBAL_BASE = 0x0000_0100_0000_0000      # first kernel-argument buffer
SHARED_WINDOW = 0x0000_7F00_0000_0000    # generic addresses of shared memory (cvta.shared)


class Memory:
    def __init__(self, nctas=1, shared_bytes=0, warp_cta=None):
        self.shared = np.zeros((nctas, shared_bytes), dtype=np.uint8)
        self.shared_bytes = shared_bytes
        self.warp_cta = np.zeros(1, dtype=np.int64) if warp_cta is None else warp_cta
        self.bases = []           # sorted global buffer base addresses
        self.buffers = []         # uint8 views, in place
        self.watch = None         # called as watch(ctx, shared lanes, flat offsets, nbytes) before a shared store

    def add_buffer(self, arr):
        """Map a numpy array into global memory (in place) and return its address."""
        if not arr.flags.c_contiguous:
            raise ValueError("kernel-argument arrays must be C-contiguous (np.ascontiguousarray) so that "
                             "the kernel's stores land in them")
        if not arr.flags.writeable:
            raise ValueError("kernel-argument arrays must be writeable")
        view = arr.reshape(-1).view(np.uint8)
        base = GLOBAL_BASE if not self.bases else \
            (self.bases[-1] + self.buffers[-1].size + 0xFFFF) // 0x10000 * 0x10000 + 0x10000
        self.bases.append(base)
        self.buffers.append(view)
        return base

    # --- address spaces -------------------------------------------------------------------

    def cvta(self, v, space, to, ctx):
        if space == "global":
            return v
        if space == "shared":
            return v - np.uint64(SHARED_WINDOW) if to else v + np.uint64(SHARED_WINDOW)
        ctx.fail(f"cvta for .{space} is not supported (global and shared are)")

    def _split(self, space, addr, ctx):
        """-> (is_shared (g,L) bool, offsets (g,L) uint64) for a state space."""
        if space == "shared":
            return np.ones(addr.shape, dtype=bool), addr
        if space == "global":
            return np.zeros(addr.shape, dtype=bool), addr
        if space == "generic":
            sh = (addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + (1 << 32)))
            return sh, np.where(sh, addr - np.uint64(SHARED_WINDOW), addr)
        ctx.fail(f".{space} memory is not modelled (global, shared and param are)")

    def _locate(self, space, addr, nbytes, align, ctx, lanes):
        active = ctx.lane_mask(lanes)
        if active is None:
            active = np.ones(addr.shape, dtype=bool)
        bad = (addr % np.uint64(align) != 0) & active
        if bad.any():
            w, l = np.argwhere(bad)[0]
            l = l + (lanes.start if isinstance(lanes, slice) else 0)
            ctx.fail(f"address 0x{int(addr[w, l - (lanes.start if isinstance(lanes, slice) else 0)]):x} of lane {l} is "
                     f"not aligned to {align} bytes (a .{ctx.opcode.split('.')[-1]} access of {nbytes} bytes)")
        is_sh, off = self._split(space, addr, ctx)
        rows = np.arange(addr.shape[0]) if ctx.rows is None else ctx.rows
        cta = self.warp_cta[rows][:, None]
        # shared
        flat = np.zeros(addr.shape, dtype=np.int64)
        sh = is_sh & active
        if sh.any():
            o = off.astype(np.int64)
            out = sh & ((o < 0) | (o + nbytes > self.shared_bytes))
            if out.any():
                w, l = np.argwhere(out)[0]
                ctx.fail(f"shared-memory address 0x{int(o[w, l]):x} (lane {l + (lanes.start if isinstance(lanes, slice) else 0)}, "
                         f"{nbytes} bytes) is outside the CTA's {self.shared_bytes} bytes of shared memory")
            flat = np.where(sh, cta * self.shared_bytes + o, flat)
        gl = ~is_sh & active
        buf = np.full(addr.shape, -1, dtype=np.int64)
        if gl.any():
            if not self.bases:
                ctx.fail("global memory access, but the kernel was given no array arguments")
            bases = np.array(self.bases, dtype=np.uint64)
            k = np.searchsorted(bases, off, side="right").astype(np.int64) - 1
            kk = np.maximum(k, 0)
            sizes = np.array([b.size for b in self.buffers], dtype=np.uint64)
            ok = (k >= 0) & (off + np.uint64(nbytes) <= bases[kk] + sizes[kk])
            out = gl & ~ok
            if out.any():
                w, l = np.argwhere(out)[0]
                ctx.fail(f"global address 0x{int(off[w, l]):x} (lane {l}, {nbytes} bytes) lies outside every "
                         "kernel-argument array")
            buf = np.where(gl, kk, -1)
            flat = np.where(gl, (off - bases[kk]).astype(np.int64), flat)
        return sh, gl, buf, flat

    def load(self, space, addr, nbytes, align, ctx, lanes=None):
        sh, gl, buf, flat = self._locate(space, addr, nbytes, align, ctx, lanes)
        out = np.zeros(addr.shape + (nbytes,), dtype=np.uint8)
        idx = flat[..., None] + np.arange(nbytes)
        if sh.any():
            src = self.shared.reshape(-1)
            out[sh] = src[idx[sh]]
        for k in np.unique(buf[gl]) if gl.any() else ():
            sel = gl & (buf == k)
            out[sel] = self.buffers[k][idx[sel]]
        return out

    def store(self, space, addr, data, align, ctx, lanes=None):
        nbytes = data.shape[-1]
        sh, gl, buf, flat = self._locate(space, addr, nbytes, align, ctx, lanes)
        if self.watch is not None and sh.any():
            self.watch(ctx, sh, flat, nbytes)
        idx = flat[..., None] + np.arange(nbytes)
        if sh.any():
            dst = self.shared.reshape(-1)
            dst[idx[sh]] = data[sh]
        for k in np.unique(buf[gl]) if gl.any() else ():
            sel = gl & (buf == k)
            self.buffers[k][idx[sel]] = data[sel]
