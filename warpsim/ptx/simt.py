"""The SIMT core that runs a launch: every warp's registers, program counter and reconvergence stack,
calls and returns, barriers, and the scheduler that steps the warps at the lowest pc together."""

from __future__ import annotations

import re

import numpy as np

from .cluster import ClusterState
from .memory import Memory
from .program import _BAR, _BRANCH, CALL_RPC, EXIT_PC
from .regfile import Warp
from .spellings import canonical
from .syntax import PTXError, parse_int


class _Frame:
    """A call in flight on one warp: where its results go and the callee state it hides."""

    def __init__(self, callee, caller, rets, mask, saved):
        self.callee, self.caller, self.rets, self.mask, self.saved = callee, caller, rets, mask, saved


def map_module_variables(module, glob):
    """The module's variables in global memory (mapped once per GlobalMemory, with their initial bytes):
    name -> address.  Both engines map them before a launch's arguments."""
    out = {}
    for v in module._mod.variables:
        key = (id(module), v.name)
        if key not in glob.module_symbols:
            arr = np.frombuffer(v.data, dtype=np.uint8).copy() if v.data else np.zeros(1, np.uint8)
            glob.module_symbols[key] = (glob.map(arr), arr)
        out[v.name] = glob.module_symbols[key][0]
    return out


class _Kernel(Warp):
    """The register files of every warp of a launch, its memory and its SIMT scheduler.

    Control flow: each warp keeps a reconvergence stack of entries (pc, active lanes,
    reconvergence pc).  A branch whose guard differs between the active lanes splits the top
    entry: it becomes the continuation at the branch's immediate post-dominator, and the taken
    and not-taken lanes get entries of their own that pop when they reach it.  ``ret`` and
    ``exit`` remove lanes; ``call`` pushes an entry that pops when all its lanes have returned.
    Among warps, the ones with the lowest pc run first (one statement for all warps at that pc).
    """

    def __init__(self, prog, grid, block, shared_bytes, arch, modname, glob, module, cluster=(1, 1, 1),
                 explicit=False, first_cta=0, nctas=None):
        nctas = grid[0] * grid[1] * grid[2] if nctas is None else nctas
        self.first_cta = first_cta      # this batch runs CTAs first_cta .. first_cta + nctas - 1 of the grid
        self.wpc = block[0] * block[1] * block[2] // 32
        super().__init__(nctas * self.wpc, undefined="zero", arch=arch)
        self.prog = prog
        self.grid, self.block = grid, block
        self.modname = modname
        # per-function register files
        self._files = {}
        for fn in prog.functions.values():
            self._regs, self._declared, self._declared_ranges, self._bits_cache = {}, {}, {}, {}
            for line, text in fn.reg_decls:
                self.declare(line, text)
            self._files[fn.name] = (self._regs, self._declared, self._declared_ranges, self._bits_cache)
        self._fn = None
        self._use(prog.functions[prog.entry.name])
        # shared memory layout: static variables in order, then dynamic (extern) ones at the end
        offsets, off = prog.shared_layout()
        self._symbols.update(offsets)
        self.dynamic_smem = shared_bytes
        total = off + shared_bytes
        # local memory: every function's .local variables, one static area per thread
        local_offsets, self.local_range, loc = prog.local_layout()
        self._symbols.update(local_offsets)
        self._symbols.update(map_module_variables(module, glob))
        self.memory = Memory(nctas, total, np.repeat(np.arange(nctas), self.wpc), glob=glob, local_bytes=loc)
        maxnreg = prog.entry.directives.get("maxnreg")
        self.cluster = ClusterState(grid, cluster, self.wpc, explicit, block[0] * block[1] * block[2],
                                    int(maxnreg[0]) if maxnreg else None, first_cta=first_cta, nctas=nctas)
        self.memory.cluster_cta = self.cluster.cta_of
        self.frames = {fn.name: np.zeros((self.warps, 32, fn.frame_bytes), np.uint8)
                       for fn in prog.functions.values()}
        if any(st.opcode.startswith("wgmma.") for st in prog.code):
            from .warpgroup import WgmmaUnit

            self._async = WgmmaUnit(self, self.wpc)     # in-flight wgmmas and their hazards, per warpgroup
        self.params = b""
        self.param_offsets = {}
        self.clock = 0

    def _use(self, fn):
        if self._fn is not fn:
            self._regs, self._declared, self._declared_ranges, self._bits_cache = self._files[fn.name]
            self._fn = fn

    def _geometry(self):
        W = self.warps
        bx, by, bz = self.block
        t = (np.arange(W) % self.wpc)[:, None] * 32 + np.arange(32)[None, :]
        tid = np.stack([t % bx, (t // bx) % by, t // (bx * by)], axis=-1).astype(np.uint32)
        c = self.first_cta + np.arange(W) // self.wpc
        gx, gy, gz = self.grid
        ctaid = np.stack([c % gx, (c // gx) % gy, c // (gx * gy)], axis=-1).astype(np.uint32)
        return tid, np.array(self.block, np.uint32), ctaid, np.array(self.grid, np.uint32), \
            (np.arange(W) % self.wpc).astype(np.uint32), self.wpc

    def special(self, name, ctx):
        """Special registers; the cluster ones from the launch's cluster shape."""
        m = _CLUSTER_SPECIAL.match(name) if isinstance(name, str) else None
        if not m:
            return super().special(name, ctx)
        kind, axis = m.groups()
        cl = self.cluster
        rows = np.arange(self.warps) if ctx is None or ctx.rows is None else np.asarray(ctx.rows)
        cta = self.memory.warp_cta[rows]
        ax = "xyz".index(axis) if axis else None
        if (ax is None) == (kind not in ("cluster_ctarank", "cluster_nctarank", "is_explicit_cluster")):
            return super().special(name, ctx)          # its error message for a wrong suffix
        per_cta = {"clusterid": lambda: cl.clusterid[cta, ax],
                   "nclusterid": lambda: np.full(len(rows), self.grid[ax] // cl.cluster[ax]),
                   "cluster_ctaid": lambda: cl.cluster_ctaid[cta, ax],
                   "cluster_nctaid": lambda: np.full(len(rows), cl.cluster[ax]),
                   "cluster_ctarank": lambda: cl.rank[cta],
                   "cluster_nctarank": lambda: np.full(len(rows), cl.size),
                   "is_explicit_cluster": lambda: np.full(len(rows), int(cl.explicit))}[kind]()
        return np.broadcast_to(np.asarray(per_cta, np.uint32)[:, None], (len(rows), 32))

    def launch_value(self, kind):
        """Values of the special registers a launch defines (deterministic clocks: the step count)."""
        if kind in ("clock", "clock64", "clock_hi", "globaltimer", "globaltimer_lo", "globaltimer_hi"):
            t = self.clock * (1000 if kind.startswith("globaltimer") else 1)
            return {"clock_hi": t >> 32, "globaltimer_hi": t >> 32, "clock": t & 0xFFFFFFFF,
                    "globaltimer_lo": t & 0xFFFFFFFF}.get(kind, t)
        if kind in ("dynamic_smem_size",):
            return self.dynamic_smem
        if kind in ("total_smem_size", "aggr_smem_size"):
            return self.memory.shared_bytes
        return super().launch_value(kind)

    # --- kernel arguments -------------------------------------------------------------------

    def bind(self, args):
        params = self.prog.entry.params
        name = self.prog.entry.name
        if not isinstance(args, (list, tuple)):
            raise TypeError(f"args must be a list of the kernel arguments in .param order, not {type(args).__name__}")
        if len(args) != len(params):
            raise ValueError(f"{name} takes {len(params)} argument(s) ({', '.join('.' + p.type for p in params)}), "
                             f"got {len(args)}")
        blob = bytearray()
        for i, (p, a) in enumerate(zip(params, args)):
            size = p.array if p.array else p.bits // 8
            align = p.align or size
            while len(blob) % min(align, 8):
                blob.append(0)
            self.param_offsets[p.name] = len(blob)
            if isinstance(a, np.ndarray) and a.ndim > 0:
                if p.bits != 64 or p.array:
                    raise TypeError(f"argument {i} of {name} ({p.name}) is a .{p.type} scalar, but got a numpy array; "
                                    "arrays go to 64-bit (.u64/.b64) pointer parameters")
                try:
                    addr = self.memory.add_buffer(a)
                except ValueError as exc:
                    raise ValueError(f"argument {i} of {name}: {exc}") from None
                blob += int(addr).to_bytes(8, "little")
                continue
            if p.array:
                if not isinstance(a, (bytes, bytearray)) or len(a) != p.array:
                    raise TypeError(f"argument {i} of {name} ({p.name}) is a {p.array}-byte .param array: pass "
                                    f"{p.array} bytes (got {type(a).__name__}"
                                    f"{' of length %d' % len(a) if isinstance(a, (bytes, bytearray)) else ''})")
                blob += bytes(a)
                continue
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, float, np.integer, np.floating)):
                raise TypeError(f"argument {i} of {name} ({p.name}, .{p.type}) must be a number or a numpy array, "
                                f"not {type(a).__name__}")
            if p.type.startswith("f"):
                v = np.array(a, dtype=np.float32 if p.bits == 32 else np.float64)
                blob += v.tobytes()
            else:
                if isinstance(a, (float, np.floating)):
                    raise TypeError(f"argument {i} of {name} ({p.name}) is an integer .{p.type}, got a float {a!r}")
                v = int(a)
                lo = -(1 << (p.bits - 1))
                if not lo <= v < (1 << p.bits):
                    raise ValueError(f"argument {i} of {name} ({p.name}) = {v} does not fit .{p.type}")
                blob += (v & ((1 << p.bits) - 1)).to_bytes(p.bits // 8, "little")
        self._set_params(bytes(blob), self.param_offsets)

    def bind_like(self, other: "_Kernel"):
        """Take the argument block another batch of the same launch bound."""
        self._set_params(other.params, dict(other.param_offsets))

    def _set_params(self, blob, offsets):
        self.params, self.param_offsets = blob, offsets
        self.memory.params = np.frombuffer(self.params, dtype=np.uint8)
        for pname, off in self.param_offsets.items():
            self._symbols[pname] = off            # mov %rd, param: its address in the .param space

    def _param_ref(self, op, ctx):
        m = re.fullmatch(r"\[\s*([\w$%]+)\s*(?:([+-])\s*(-?\w+))?\s*\]", op.strip()) if isinstance(op, str) else None
        if not m:
            ctx.fail(f"a .param operand is [name], [name+offset] or [register+offset], not {op!r}",
                     token=op if isinstance(op, str) else None)
        off = parse_int(m.group(3)) if m.group(3) else 0
        if off is None:
            ctx.fail(f"the offset in {op!r} must be an integer immediate", token=op)
        return m.group(1), (-off if m.group(2) == "-" else off)

    def param_bytes(self, op, nbytes, ctx):
        name, off = self._param_ref(op, ctx)
        fn = self._fn
        if name in fn.params:
            base, size = fn.params[name]
            if not 0 <= off <= size - nbytes:
                ctx.fail(f"ld.param of {nbytes} bytes at offset {off} runs past .param {name} ({size} bytes)", token=op)
            f = self.frames[fn.name]
            data = f[slice(None) if ctx.rows is None else ctx.rows, :, base + off:base + off + nbytes]
            return data
        if name in self.param_offsets:
            off += self.param_offsets[name]
            if not 0 <= off <= len(self.params) - nbytes:
                ctx.fail(f"ld.param of {nbytes} bytes at offset {off} runs past the kernel's {len(self.params)} "
                         "bytes of parameters", token=op)
            data = np.frombuffer(self.params[off:off + nbytes], dtype=np.uint8)
            return np.broadcast_to(data, ctx.shape + (nbytes,))
        if self.is_register(name):
            addr = ctx.address(op)         # a .param-space address of the kernel parameters
            return self.memory.load("param", addr, nbytes, 1, ctx)
        ctx.fail(f"ld.param reads a parameter: {name!r} is none of {fn.name}'s .param variables "
                 f"({', '.join(fn.params) or 'none'}) or the kernel's ({', '.join(self.param_offsets)})", token=op)

    def param_store(self, op, data, ctx):
        name, off = self._param_ref(op, ctx)
        fn = self._fn
        if name not in fn.params:
            ctx.fail(f"st.param writes a .param variable of {fn.name} (a call's argument or a .func's return "
                     f"value); {name!r} is none of {', '.join(fn.params) or 'none'}", token=op)
        base, size = fn.params[name]
        n = data.shape[-1]
        if not 0 <= off <= size - n:
            ctx.fail(f"st.param of {n} bytes at offset {off} runs past .param {name} ({size} bytes)", token=op)
        f = self.frames[fn.name]
        rows = slice(None) if ctx.rows is None else ctx.rows
        cur = f[rows, :, base + off:base + off + n]
        mask = np.ones(ctx.shape, bool) if ctx.mask is None else ctx.mask
        f[rows, :, base + off:base + off + n] = np.where(mask[..., None], data, cur)

    def barrier(self, ctx):
        raise _Barrier()

    # --- the scheduler ------------------------------------------------------------------------

    def _top(self, w):
        e = self.stacks[w][-1]
        self.pc[w], self.act[w], self.rpc[w] = e[0], e[1], e[2]

    def _save(self, w):
        e = self.stacks[w][-1]
        e[0], e[1] = int(self.pc[w]), self.act[w].copy()

    def _settle(self, w):
        """Pop finished entries of warp w: reconverged (pc == its reconvergence pc) or empty."""
        st = self.stacks[w]
        self._save(w)
        while st and (st[-1][0] == st[-1][2] or not st[-1][1].any()):
            e = st.pop()
            if e[3] is not None:
                self._return(w, e[3])
        if st:
            self._top(w)
        else:
            self.alive[w] = False
            self.act[w] = False

    def _return(self, w, fr):
        """All lanes of a call have returned: results to the caller's .param variables, callee state back."""
        callee, caller = fr.callee, fr.caller
        cf, kf = self.frames[caller.name], self.frames[callee.name]
        results = kf[w].copy()
        regs, frame, local = fr.saved          # restore first: a recursive call shares the frame
        for name, v in regs.items():
            self._files[callee.name][0][name][w] = v
        kf[w] = frame
        if local is not None:
            lo, hi = self.local_range[callee.name]
            self.memory.local[w, :, lo:hi] = local
        for r, formal in zip(fr.rets, callee.rets):
            cb, cs = caller.params[r]
            kb, ks = callee.params[formal]
            n = min(cs, ks)
            cf[w, fr.mask, cb:cb + n] = results[fr.mask, kb:kb + n]

    def _remove(self, w, lanes, upto_frame):
        """Lanes leave (exit: every entry; ret: the entries of the innermost call)."""
        st = self.stacks[w]
        self._save(w)
        for e in reversed(st):
            e[1] = e[1] & ~lanes
            if upto_frame and e[3] is not None:
                break
        if not upto_frame:
            self.live[w] &= ~lanes
        self._top(w)

    def _diverged(self, what, st, w, lanes):
        on, off = np.nonzero(lanes)[0], np.nonzero(self.live[w] & ~lanes)[0]
        raise PTXError(f"{what} reached by a divergent warp: in warp {w % self.wpc} of CTA {self.first_cta + w // self.wpc} lanes "
                       f"{_lanes(on)} execute it while lanes {_lanes(off)} are elsewhere or have left; it needs every "
                       "lane of the warp", line=st.line, statement=st.text, token=st.opcode)

    def run(self, max_steps):
        code = self.prog.code
        W = self.warps
        self.pc = np.zeros(W, dtype=np.int64)
        self.act = np.ones((W, 32), dtype=bool)
        self.live = np.ones((W, 32), dtype=bool)
        self.rpc = np.full(W, -1, dtype=np.int64)
        self.stacks = [[[0, self.act[w].copy(), -1, None]] for w in range(W)]
        self.alive = alive = np.ones(W, dtype=bool)
        waiting = np.zeros(W, dtype=bool)
        bar_key = [None] * W
        arrived = {}
        cta = np.arange(W) // self.wpc
        nctas = W // self.wpc
        fn_of = self.prog.fn_of
        steps = 0

        def release(key):
            """Let the warps waiting at barrier key = (cta, id) go if enough threads arrived."""
            c = key[0]
            need = arrived[key][1] or int((alive & (cta == c)).sum()) * 32
            if arrived[key][0] < need:
                return False
            for w in range(c * self.wpc, (c + 1) * self.wpc):
                if waiting[w] and bar_key[w] == key:
                    waiting[w] = False
                    bar_key[w] = None
                    self.pc[w] += 1
                    self._settle(w)
            del arrived[key]
            return True

        cl = self.cluster
        mb_wait = {}                            # warp -> (mbarrier key, phase, blocking try_wait)
        parked = np.zeros(W, dtype=bool)        # blocked on an mbarrier (try_wait) or spinning on test_wait
        cl_wait = np.zeros(W, dtype=bool)       # at barrier.cluster.wait, its phase not complete
        ncl = int(cl.cluster_index.max()) + 1
        cl_phase = np.zeros(ncl, dtype=np.int64)
        cl_count = np.zeros(ncl, dtype=np.int64)
        cl_arrived = np.full(W, -1, dtype=np.int64)
        warp_cluster = cl.cluster_index[cta]
        seen_version = [cl.version]
        spins = [0]

        def cl_release(c):
            """Complete cluster c's barrier phase once every warp still running has arrived."""
            need = int((alive & (warp_cluster == c)).sum())
            if cl_count[c] == 0 or cl_count[c] < need:
                return False
            cl_phase[c] += 1
            cl_count[c] = 0
            cl_wait[cl_wait & (warp_cluster == c)] = False
            return True

        def wake():
            """Warps parked on an mbarrier whose phase moved on (or that was invalidated) run again."""
            seen_version[0] = cl.version
            for w in list(mb_wait):
                key, phase, _ = mb_wait[w]
                bar = cl.mbarriers.get(key)
                if bar is None or not bar.valid or bar.phase != phase:
                    del mb_wait[w]
                    parked[w] = False

        def finish(idx):
            """After a statement ran on warps idx: suspend those an mbarrier wait blocked, advance the
            rest, settle the ones that reached their reconvergence point."""
            if cl.blocked:
                stay = []
                for w, key, phase, blocking in cl.blocked:
                    mb_wait[w] = (key, phase, blocking)
                    parked[w] = True
                    if blocking:
                        stay.append(w)           # try_wait: suspended; it runs the statement again
                cl.blocked.clear()
                if stay:
                    self.pc[np.asarray(stay)] -= 1
            self.pc[idx] += 1
            hit = idx[self.pc[idx] == self.rpc[idx]]
            for w in hit:
                self._settle(int(w))

        plain = self.prog.plain
        uni = None        # (pc, rows, warp indices, their reconvergence pc) while converged (see below)
        general = False   # the fast path handed this statement to the general step
        while uni is not None or alive.any():      # the fast path leaves every warp running
            if uni is not None:
                # The converged fast path: every running warp is at one pc with all its lanes active
                # and none waits, so each statement is one group of all of them, formed here exactly
                # as the general step below forms it, without recomputing the groups.
                p, rows, idx, rp = uni
                kind = plain[p] if p < len(code) and steps < max_steps else 0
                fn = fn_of[p] if kind else None
                if fn is None or p >= fn.end:
                    kind = 0
                st = code[p] if kind else None
                if kind == 2 and st.guard is not None:       # a branch: converged if all warps go one way
                    self._use(fn)
                    taken = self.guard_mask(st, rows)
                    kind = 3 if taken.all() else (4 if not taken.any() else 0)
                if kind == 5:
                    # bar.sync reached by every warp of every CTA at once, with nothing pending on
                    # any barrier: each CTA's barrier completes at once (the general step's
                    # arrive-then-release, in one go), when its operands are ones it accepts
                    kind = 0
                    if rows is None and not arrived and 1 <= len(st.operands) <= 2:     # no warp has left
                        self._use(fn)
                        ctx = _ctx(self, st, rows)
                        bid = ctx.read(st.operands[0], "u32")
                        ok = (bid <= 15).all() and (bid == bid.flat[0]).all()     # one barrier for all
                        if len(st.operands) == 2:
                            cnt = ctx.read(st.operands[1], "u32")
                            ok = ok and ((cnt % 32 == 0) & (cnt > 0) & (cnt <= 32 * self.wpc)).all()
                        if ok:
                            kind = 4
                if kind == 0:
                    uni = None                # the general step takes this statement
                    general = True
                    continue
                steps += 1
                self.clock = steps
                if kind == 1:
                    self._use(fn)
                    if not (st.opcode.startswith("nanosleep") or st.opcode.startswith("prefetch")):
                        self.execute(st, rows, None)
                    if cl.blocked:
                        finish(idx)
                        uni = None
                        continue
                    nxt = p + 1
                else:
                    nxt = p + 1 if kind == 4 else st.target
                if rows is None:
                    self.pc.fill(nxt)
                else:
                    self.pc[rows] = nxt
                if nxt == rp:
                    for w in idx:
                        self._settle(int(w))
                    uni = None
                else:
                    uni = (nxt, rows, idx, rp)
                continue
            if cl.version != seen_version[0] and mb_wait:
                wake()
            run = alive & ~waiting & ~parked & ~cl_wait
            if not run.any():
                if any(release(k) for k in list(arrived)) or any(cl_release(c) for c in range(ncl)):
                    continue
                spinners = [w for w, (_, _, blocking) in mb_wait.items() if not blocking]
                if spinners and spins[0] < 64:         # test_wait loops get bounded extra rounds
                    spins[0] += 1
                    for w in spinners:
                        del mb_wait[w]
                        parked[w] = False
                    continue
                self._deadlock(code, waiting, bar_key, mb_wait, cl_wait, alive)
            if cl.version != seen_version[0]:
                spins[0] = 0
            p = int(self.pc[run].min())
            grp = run & (self.pc == p)
            idx = np.nonzero(grp)[0]
            rows = None if len(idx) == W else idx
            if not general and (grp == alive).all() and self.act[idx].all():
                rp = self.rpc[idx]
                if (rp == rp[0]).all():
                    uni = (p, rows, idx, int(rp[0]))
                    continue
            general = False
            steps += 1
            self.clock = steps
            if steps > max_steps:
                st = code[p] if p < len(code) else None
                here = ", ".join(f"CTA {self.first_cta + w // self.wpc} warp {w % self.wpc}" for w in idx[:4])
                more = f" and {len(idx) - 4} more warps" if len(idx) > 4 else ""
                raise PTXError(f"{self.prog.entry.name} did not finish within max_steps={max_steps} statements (counted "
                               f"per batch of CTAs, here CTAs {self.first_cta}..{self.first_cta + nctas - 1}; an "
                               f"endless loop?); {here}{more} were here", line=st and st.line,
                               statement=st and st.text, token=st and st.opcode)
            fn = fn_of[p] if p < len(code) else None
            if fn is None or p >= fn.end:
                raise PTXError(f"control ran past the end of the code (pc {p})")
            self._use(fn)
            st = code[p]
            op = st.opcode
            act = self.act[idx]
            lanes = act
            if st.guard is not None:
                lanes = act & self.guard_mask(st, rows)
            if _BRANCH.match(op):
                taken = lanes
                some, every = taken.any(axis=1), (taken == act).all(axis=1)
                self.pc[idx[every]] = st.target
                self.pc[idx[~some]] = p + 1
                for k in np.nonzero(some & ~every)[0]:
                    w = int(idx[k])
                    self._split(w, p, st.target, taken[k], act[k])
                for w in idx:
                    if self.pc[w] == self.rpc[w]:
                        self._settle(w)
                continue
            if op in ("ret", "exit"):
                entry_level = fn.entry.kind == "entry" or op == "exit"
                for k, w in enumerate(idx):
                    w = int(w)
                    if lanes[k].any():
                        self._remove(w, lanes[k], not entry_level)
                    if self.act[w].any() and self.pc[w] == p:
                        self.pc[w] = p + 1
                    self._settle(w)
                continue
            if op.startswith("call"):
                if not hasattr(st, "call"):
                    raise PTXError(f"'{op}' is not supported", line=st.line, statement=st.text, token=op)
                self._calls(st, idx, lanes, p)
                continue
            if op.startswith("bra"):
                raise PTXError(f"'{op}' is not supported (indirect branches)", line=st.line, statement=st.text,
                               token=op)
            cbar = _CLUSTER_BAR.match(op)
            if cbar is None and op.startswith("barrier.cluster"):      # another spelling ptxas accepts
                try:
                    cbar = _CLUSTER_BAR.match(canonical(op))
                except ValueError as exc:
                    raise PTXError(str(exc), line=st.line, statement=st.text, token=op) from None
            if cbar:
                for k, w in enumerate(idx):
                    w = int(w)
                    if not (lanes[k] == self.live[w]).all():
                        if cbar["aligned"] or lanes[k].any():
                            self._diverged(op, st, w, lanes[k])
                        continue           # a warp whose guard is off everywhere does not take part
                    c = int(warp_cluster[w])
                    if cbar["op"] == "arrive":
                        if cl_arrived[w] >= 0 and cl_arrived[w] >= cl_phase[c]:
                            raise PTXError(f"barrier.cluster.arrive twice without a wait in between (warp "
                                           f"{w % self.wpc} of CTA {w // self.wpc})", line=st.line,
                                           statement=st.text, token=op)
                        cl_arrived[w] = cl_phase[c]
                        cl_count[c] += 1
                    else:
                        if cl_arrived[w] < 0:
                            raise PTXError(f"barrier.cluster.wait without a preceding barrier.cluster.arrive (warp "
                                           f"{w % self.wpc} of CTA {w // self.wpc})", line=st.line,
                                           statement=st.text, token=op)
                        if cl_arrived[w] >= cl_phase[c]:
                            cl_wait[w] = True
                            continue
                        cl_arrived[w] = -1
                    self.pc[w] = p + 1
                for c in set(int(warp_cluster[w]) for w in idx):
                    cl_release(c)
                for w in idx:
                    if self.pc[w] != p:
                        self._settle(int(w))
                continue
            bar = _BAR.match(op)
            if bar:
                for k, w in enumerate(idx):
                    if not (lanes[k] == self.live[w]).all():
                        self._diverged(op, st, int(w), lanes[k])
                ctx_ops = st.operands
                if not 1 <= len(ctx_ops) <= 2:
                    raise PTXError(f"{op} takes a barrier number and optionally a thread count", line=st.line,
                                   statement=st.text, token=op)
                ctx = _ctx(self, st, rows)
                bid = ctx.read(ctx_ops[0], "u32")
                cnt = ctx.read(ctx_ops[1], "u32") if len(ctx_ops) == 2 else np.zeros_like(bid)
                arrive = ".arrive" in op
                if arrive and len(ctx_ops) != 2:
                    raise PTXError(f"{op} needs a thread count (bar.arrive a, b): the threads that sync on barrier "
                                   "a", line=st.line, statement=st.text, token=op)
                bad = (cnt[:, 0] % 32 != 0) | (cnt[:, 0] > 32 * self.wpc) | ((cnt[:, 0] == 0) & (len(ctx_ops) == 2))
                if bad.any():
                    raise PTXError(f"the thread count of {op} is {int(cnt[np.argmax(bad), 0])}: it must be a "
                                   f"non-zero multiple of 32 (the warp size) and at most the CTA's {32 * self.wpc} "
                                   "threads", line=st.line, statement=st.text, token=ctx_ops[-1])
                keys = set()
                for k, w in enumerate(idx):
                    key = (int(cta[w]), int(bid[k, 0]))
                    if key[1] > 15:
                        raise PTXError(f"barrier number {key[1]} is out of range 0..15", line=st.line,
                                       statement=st.text, token=ctx_ops[0])
                    cur = arrived.setdefault(key, [0, int(cnt[k, 0])])
                    cur[0] += 32
                    keys.add(key)
                    if arrive:
                        self.pc[w] += 1
                    else:
                        waiting[w] = True
                        bar_key[w] = key
                for key in keys:
                    release(key)
                if arrive:
                    for w in idx:
                        self._settle(int(w))
                continue
            if op.startswith("nanosleep") or op.startswith("prefetch"):
                pass
            else:
                on = lanes.any(axis=1)
                if on.any():
                    r2 = idx[on]
                    m2 = lanes[on]
                    full = m2.all()
                    self.execute(st, None if (full and len(r2) == W) else r2, None if full else m2)
            finish(idx)

    def _deadlock(self, code, waiting, bar_key, mb_wait, cl_wait, alive):
        """Every running warp waits and nothing can release it: name the barriers and the waiters."""
        lines = []
        by_bar = {}
        for w, (key, phase, blocking) in mb_wait.items():
            by_bar.setdefault(key, []).append(w)
        for key, ws in by_bar.items():
            if key[0] == "setmaxnreg":
                lines.append(f"setmaxnreg.inc in CTA {key[1]}: {len(ws)} warp(s) wait for registers other warpgroups "
                             f"never release ({mb_wait[ws[0]][1]} requested of {65536})")
                continue
            bar = self.cluster.mbarriers.get(key)
            who = ", ".join(f"warp {w % self.wpc} of CTA {w // self.wpc}" for w in ws[:6]) + (", ..." if len(ws) > 6 else "")
            state = bar.deadlock_message(waiting={}) if bar is not None else f"barrier at {key[1]:#x}"
            lines.append(f"mbarrier of CTA {key[0]}: {state.split('; waiting warps')[0]}; waiting for phase "
                         f"{mb_wait[ws[0]][1]} to complete: {who}")
        cw = np.nonzero(cl_wait)[0]
        if len(cw):
            lines.append(f"barrier.cluster.wait: {len(cw)} warp(s) (first: warp {cw[0] % self.wpc} of CTA "
                         f"{cw[0] // self.wpc}) wait for warps of their cluster that never arrive")
        bw = np.nonzero(waiting)[0]
        if len(bw):
            lines.append(f"bar.sync: {len(bw)} warp(s) (first: warp {bw[0] % self.wpc} of CTA {bw[0] // self.wpc}, "
                         f"barrier {bar_key[bw[0]][1]}) wait for threads that never arrive")
        first = next(iter(mb_wait), None)
        if first is None:
            first = int(cw[0]) if len(cw) else int(bw[0])
        st = code[self.pc[first]]
        raise PTXError("deadlock: every running warp waits and nothing can release it -- " + "; ".join(lines),
                       line=st.line, statement=st.text, token=st.opcode)

    def _split(self, w, p, target, taken, act):
        """A divergent branch of warp w at pc p (see the class docstring)."""
        R = self.prog.reconverge.get(p, EXIT_PC)
        st = self.stacks[w]
        self._save(w)
        top = st[-1]
        if R == top[2] and top[3] is None:
            st.pop()
        else:
            top[0] = R
        nt = act & ~taken
        if target != R:
            st.append([target, taken.copy(), R, None])
        if p + 1 != R:
            st.append([p + 1, nt, R, None])
        self._top(w)

    def _calls(self, st, idx, lanes, p):
        callee, rets, args = st.call
        if callee is None:
            if lanes.any():
                self._extern_call(st, rets, args, idx, lanes)
            self.pc[idx] = p + 1
            for w in idx:
                if self.pc[w] == self.rpc[w]:
                    self._settle(int(w))
            return
        caller = self._fn
        for k, w in enumerate(idx):
            w = int(w)
            self.pc[w] = p + 1
            m = lanes[k]
            if not m.any():
                if self.pc[w] == self.rpc[w]:
                    self._settle(w)
                continue
            cf, kf = self.frames[caller.name], self.frames[callee.name]
            saved = ({n: v[w].copy() for n, v in self._files[callee.name][0].items()}, kf[w].copy(),
                     self.memory.local[w, :, slice(*self.local_range[callee.name])].copy() if callee.locals else None)
            for a, formal in zip(args, callee.formals):
                if a not in caller.params:
                    raise PTXError(f"call argument {a!r} is not a .param variable of {caller.name}", line=st.line,
                                   statement=st.text, token=a)
                ab, asz = caller.params[a]
                kb, ksz = callee.params[formal]
                n = min(asz, ksz)
                kf[w, m, kb:kb + n] = cf[w, m, ab:ab + n]
            for r in rets:
                if r not in caller.params:
                    raise PTXError(f"call result {r!r} is not a .param variable of {caller.name}", line=st.line,
                                   statement=st.text, token=r)
            self._save(w)
            self.stacks[w].append([callee.start, m.copy(), CALL_RPC, _Frame(callee, caller, rets, m.copy(), saved)])
            self._top(w)
            if callee.start == callee.end:
                raise PTXError(f"{callee.name} has an empty body", line=st.line, statement=st.text)


    def _extern_call(self, st, name, args, idx, lanes):
        """A call of a function declared without a body: ``__assertfail`` (CUDA's device ``assert``)
        reports the assertion's message; anything else is refused when reached."""
        k, l = np.argwhere(lanes)[0]
        w = int(idx[k])
        where = f"warp {w % self.wpc} of CTA {w // self.wpc}, lane {l}"
        if name == "__assertfail" and len(args) >= 3:
            caller = self._fn
            f = self.frames[caller.name]

            def arg(a, n):
                if a not in caller.params:
                    return None
                b, _ = caller.params[a]
                return int.from_bytes(f[w, l, b:b + n].tobytes(), "little")

            def text(addr):
                try:
                    raw = self.memory.glob.read(addr, 1)
                    out = bytearray()
                    while raw != b"\0" and len(out) < 4096:
                        out += raw
                        raw = self.memory.glob.read(addr + len(out), 1)
                    return out.decode(errors="replace")
                except (ValueError, TypeError):
                    return "?"
            msg, file, line = arg(args[0], 8), arg(args[1], 8), arg(args[2], 4)
            raise PTXError(f"device assertion failed in {where}: {text(msg) if msg else '?'} "
                           f"({text(file) if file else '?'}:{line})", line=st.line, statement=st.text)
        if name == "vprintf" and len(args) >= 2:
            return self._vprintf(st, args, idx, lanes)
        raise PTXError(f"{name} is declared without a body in this module and was called ({where}); external "
                       "functions are not modelled", line=st.line, statement=st.text, token=name)

    def _vprintf(self, st, args, idx, lanes):
        """Device printf: one line per active lane, warps in order, lanes in order, to ``sys.stdout``."""
        import sys

        from .memory import LOCAL_WINDOW
        from .printf import format_vprintf

        caller = self._fn
        f = self.frames[caller.name]
        for k, l in np.argwhere(lanes):
            w = int(idx[k])

            def read(addr, n, w=w, l=l):
                if LOCAL_WINDOW <= addr < LOCAL_WINDOW + (1 << 32):
                    off = addr - LOCAL_WINDOW
                    return self.memory.local[w, l, off:off + n].tobytes()
                return self.memory.glob.read(addr, n)

            def arg(a):
                if a not in caller.params:
                    raise PTXError(f"vprintf argument {a!r} is not a .param variable of {caller.name}",
                                   line=st.line, statement=st.text, token=a)
                b, _ = caller.params[a]
                return int.from_bytes(f[w, l, b:b + 8].tobytes(), "little")
            fmt_addr, buf = arg(args[0]), arg(args[1])
            fmt = bytearray()
            while len(fmt) < 4096 and (c := read(fmt_addr + len(fmt), 1)) != b"\0":
                fmt += c
            try:
                sys.stdout.write(format_vprintf(fmt.decode(errors="replace"), read, buf))
            except (ValueError, IndexError) as exc:
                raise PTXError(f"vprintf: {exc}", line=st.line, statement=st.text) from None


_CLUSTER_SPECIAL = re.compile(r"%(clusterid|nclusterid|cluster_ctaid|cluster_nctaid|cluster_ctarank|cluster_nctarank|"
                              r"is_explicit_cluster)(?:\.([xyz]))?\Z")
_CLUSTER_BAR = re.compile(r"barrier\.cluster\.(?P<op>arrive|wait)(?:\.(?:relaxed|release|acquire))?(?P<aligned>\.aligned)?\Z")


def _ctx(machine, st, rows):
    from .context import Context

    return Context(machine, st, rows, None)


class _Barrier(Exception):
    pass


def _lanes(on):
    on = list(int(x) for x in on)
    if not on:
        return "none"
    return ", ".join(map(str, on[:8])) + (", ..." if len(on) > 8 else "")
