"""Hopper's cluster and asynchronous machinery inside a kernel launch, and its instruction rows.

:class:`ClusterState` is what a launch with CTA clusters holds beyond registers and memory: the
cluster geometry, the mbarriers (:class:`warpsim.ptx.mbarrier.MBarrier`, keyed by CTA and shared
offset), the per-warpgroup register budget of ``setmaxnreg`` and the warps an ``mbarrier.try_wait``
has blocked.  The rows below (``elect.sync``, ``mapa``, ``mbarrier.*``, ``cp.async.bulk*``,
``cp.reduce.async.bulk*``, ``prefetch.tensormap``, ``tensormap.*``, ``setmaxnreg``,
``griddepcontrol``) hold the semantics; the data movement of a TMA box is
:mod:`warpsim.ptx.tma`'s.  ``barrier.cluster.*`` belongs to the scheduler (``simt.py``).

Addresses.  A ``.shared::cta`` address is an offset into the executing CTA's shared memory.  A
``.shared::cluster`` address is the same offset for the executing CTA, and ``(rank + 1) << 24 |
offset`` for CTA ``rank`` of the cluster (what ``mapa`` returns); generic addresses add the shared
window.  The encoding is warpsim's: PTX code only passes these values around.

Completion point of asynchronous copies (a documented choice; the PTX memory model lets no
correct program observe it): a bulk or tensor copy moves its bytes *when issued*, and its
``complete_tx`` on the destination mbarrier happens then too (the tx-count may go negative until
the matching ``expect_tx``, which the ISA allows).  ``cp.async.bulk.commit_group`` /
``wait_group`` therefore have nothing left to wait for.
"""

from __future__ import annotations

import re

import numpy as np

from ..isa.tensormap import REPLACE_FIELDS, REPLACE_PER_DIM, TENSORMAP_BYTES, decode_tensormap, replace_field
from . import tma
from .instructions import instr
from .mbarrier import MBarrier, MBarrierError
from .memory import PARAM_WINDOW, SHARED_WINDOW

#: registers of one SM's register file (setmaxnreg budgets are checked against it)
REGISTERS_PER_SM = 65536
#: a shared::cluster address names CTA rank r as (r + 1) << RANK_SHIFT | offset
RANK_SHIFT = 24
_OFF_MASK = (1 << RANK_SHIFT) - 1
_WINDOW = 1 << 32


def initial_registers(nthreads, maxnreg=None):
    """Registers per thread a CTA's warpgroups start with (what setmaxnreg's budget counts from): the entry's
    ``.maxnreg``, else as many as an SM's register file gives each of the CTA's threads (multiples of 8, at
    most 255)."""
    return maxnreg or min(255, REGISTERS_PER_SM // max(nthreads, 1) // 8 * 8)


class ClusterState:
    """Clusters, mbarriers and register budgets of one launch (see the module docstring)."""

    def __init__(self, grid, cluster, wpc, explicit, nthreads, maxnreg=None, first_cta=0, nctas=None):
        """CTA-indexed tables cover the CTAs of one batch: local index k is CTA first_cta + k of the
        grid (a launch with clusters of more than one CTA runs as one batch)."""
        self.grid, self.cluster, self.wpc, self.explicit = grid, cluster, wpc, explicit
        gx, gy, gz = grid
        cx, cy, cz = cluster
        n = gx * gy * gz if nctas is None else nctas
        c = first_cta + np.arange(n)
        ctaid = np.stack([c % gx, (c // gx) % gy, c // (gx * gy)], axis=-1)
        self.cluster_ctaid = ctaid % np.array(cluster)
        self.clusterid = ctaid // np.array(cluster)
        self.rank = self.cluster_ctaid[:, 0] + cx * (self.cluster_ctaid[:, 1] + cy * self.cluster_ctaid[:, 2])
        self.size = cx * cy * cz
        self.cluster_index = self.clusterid[:, 0] + (gx // cx) * (self.clusterid[:, 1] + (gy // cy) * self.clusterid[:, 2])
        # cta_of[c, r]: the CTA index of rank r in CTA c's cluster
        self.cta_of = np.full((n, self.size), -1, np.int64)
        for k in range(n):
            self.cta_of[self.cluster_index == self.cluster_index[k], :] = 0
        for k in range(n):
            self.cta_of[self.cluster_index == self.cluster_index[k], self.rank[k]] = k
        self.mbarriers: dict = {}        # (cta, offset) -> MBarrier
        self.blocked: list = []          # (warp, key, phase, blocking) set by wait rows for the scheduler
        self.version = 0                 # bumped by every mbarrier change: the scheduler re-checks waiters
        self.tensormaps: dict = {}       # descriptor bytes -> TensorMap
        regs = initial_registers(nthreads, maxnreg)
        self.nreg = {}                   # (cta, warpgroup) -> registers per thread now
        self.nreg_initial = regs
        self.nthreads = nthreads

    # --- addresses ------------------------------------------------------------------------------
    def shared_target(self, ctx, cta, addr, space, what):
        """One lane's shared address -> (CTA index, offset) in the space ``space`` names."""
        a = int(addr)
        if space == "generic":
            if not SHARED_WINDOW <= a < SHARED_WINDOW + _WINDOW:
                ctx.fail(f"{what}: generic address {a:#x} is not in the shared window (use a .shared address or "
                         "cvta.shared)")
            a -= SHARED_WINDOW
        rank = a >> RANK_SHIFT
        off = a & _OFF_MASK
        if rank == 0:
            target = cta
        else:
            if space == "shared::cta":
                ctx.fail(f"{what}: {a:#x} is a shared::cluster address of another CTA, but the instruction names "
                         ".shared::cta")
            if rank - 1 >= self.size:
                ctx.fail(f"{what}: address {a:#x} names CTA rank {rank - 1}, but the cluster has {self.size} CTA(s)")
            target = int(self.cta_of[cta, rank - 1])
        return target, off

    def mbarrier(self, ctx, cta, off, init=False):
        if off % 8:
            ctx.fail(f"mbarrier address {off:#x} is not 8-byte aligned")
        if off + 8 > ctx.memory.shared_bytes:
            ctx.fail(f"mbarrier address {off:#x} is outside the CTA's {ctx.memory.shared_bytes} bytes of shared memory")
        key = (cta, off)
        if key not in self.mbarriers:
            if not init:
                ctx.fail(f"the mbarrier at shared address {off:#x} of CTA {cta} was never initialised "
                         "(mbarrier.init first)")
            self.mbarriers[key] = MBarrier(off)
        return key, self.mbarriers[key]

    # --- tensormaps -----------------------------------------------------------------------------
    def tensormap(self, ctx, raw):
        raw = bytes(raw)
        if raw not in self.tensormaps:
            try:
                tm = decode_tensormap(raw, derived="ignore")   # tensormap.replace leaves them stale
            except ValueError as err:
                ctx.fail(f"invalid tensormap: not a descriptor as the CUDA driver (or warpsim.isa.tensormap) "
                         f"encodes one: {err}")
            self.tensormaps[raw] = tm
        return self.tensormaps[raw]


def _state(ctx):
    st = getattr(ctx.machine, "cluster", None)
    if st is None:
        ctx.fail(f"{ctx.opcode} needs a kernel launch (warpsim.ptx.load(...).launch(...)): it uses mbarriers, "
                 "clusters or the tensor memory accelerator")
    return st


def _lanes(ctx):
    """(row k, warp index w, lane l) of every executing lane, warps in order, lanes increasing."""
    act = np.ones(ctx.shape, bool) if ctx.mask is None else ctx.mask
    rows = np.arange(ctx.shape[0]) if ctx.rows is None else np.asarray(ctx.rows)
    return [(int(k), int(rows[k]), int(l)) for k, l in np.argwhere(act)]


def _cta(ctx, w):
    return int(ctx.machine.memory.warp_cta[w])


def _space(m):
    s = m["space"] if m["space"] else None
    if s is None:
        return "generic"
    return "shared::cta" if s in ("shared", "shared::cta") else s


def _split_operands(text):
    """Operands of a statement with nested ``[ ]`` and ``{ }`` kept whole (tensor coordinates)."""
    body = text.split(None, 1)
    if text.startswith("@"):
        body = body[1].split(None, 1)
    rest = body[1] if len(body) > 1 else ""
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _ops(ctx):
    st = ctx.stmt
    if not hasattr(st, "whole_operands"):
        st.whole_operands = _split_operands(st.text)
    return st.whole_operands


_TENSOR_REF = re.compile(r"\[\s*([^,\]\s]+)\s*,\s*\{([^}]*)\}\s*\]\Z")


def _tensor_ref(ctx, op):
    m = _TENSOR_REF.match(op)
    if not m:
        ctx.fail(f"a tensor operand looks like [tensorMap, {{c0, c1, ...}}], not {op!r}", token=op)
    return m.group(1), [c.strip() for c in m.group(2).split(",")]


def _scalar(ctx, op, typ, k, l):
    return int(ctx.read(op, typ)[k, l])


def _addr(ctx, op, k, l):
    return int(ctx.address(op)[k, l])


def _read_bytes(ctx, addr, n, cta):
    """``n`` bytes at a generic or global address (tensormaps live in global or parameter memory)."""
    mem = ctx.machine.memory
    if PARAM_WINDOW <= addr < PARAM_WINDOW + _WINDOW:
        off = addr - PARAM_WINDOW
        if off + n > mem.params.size:
            ctx.fail(f"tensormap at parameter offset {off} runs past the {mem.params.size} parameter bytes")
        return mem.params[off:off + n].tobytes()
    if SHARED_WINDOW <= addr < SHARED_WINDOW + _WINDOW:
        off = addr - SHARED_WINDOW
        return mem.shared[cta, off:off + n].tobytes()
    try:
        return mem.glob.read(addr, n)
    except ValueError as exc:
        ctx.fail(f"cannot read {n} bytes at {addr:#x}: {exc}")


def _global_reader(ctx):
    glob = ctx.machine.memory.glob

    def read(address, nbytes):
        try:
            return np.frombuffer(glob.read(address, nbytes), dtype=np.uint8)
        except ValueError as exc:
            ctx.fail(f"a TMA copy reads global bytes [{address:#x}, {address + nbytes:#x}) outside every mapped "
                     f"array ({exc})")
    return read


def _global_write(ctx, addrs, data):
    glob = ctx.machine.memory.glob
    if not len(addrs):
        return
    order = np.argsort(addrs, kind="stable")
    addrs, data = np.asarray(addrs)[order], np.asarray(data)[order]
    i = 0
    while i < len(addrs):          # contiguous runs, each inside one mapped array
        j = i + 1
        while j < len(addrs) and addrs[j] == addrs[j - 1] + 1:
            j += 1
        try:
            k, off = glob._find(int(addrs[i]), j - i)
        except ValueError as exc:
            ctx.fail(f"a TMA store writes global bytes outside every mapped array ({exc})")
        glob.write(k, off, data[i:j])
        i = j


def _mbar_error(ctx, fn, *args):
    ctx.machine.cluster.version += 1
    try:
        return fn(*args)
    except (MBarrierError, ValueError, TypeError) as exc:
        ctx.fail(str(exc))


# ----------------------------------------------------------------------------------------------
# elect.sync, mapa

@instr(r"elect\.sync")
def _elect(ctx, m):
    ops = ctx.operands
    if len(ops) != 2:
        ctx.fail("elect.sync takes d|p, membermask")
    d, p = (ops[0].split("|") + [None])[:2] if isinstance(ops[0], str) else (None, None)
    mask = ctx.read(ops[1], "b32").astype(np.uint64)
    act = np.ones(ctx.shape, bool) if ctx.mask is None else ctx.mask
    member = ((mask >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool) & act
    leader = np.where(member.any(axis=1), np.argmax(member, axis=1), 0).astype(np.uint32)
    lane = np.arange(32)[None, :]
    if d and d.strip() != "_":
        ctx.write(d.strip(), np.broadcast_to(leader[:, None], ctx.shape), "b32")
    if p:
        ctx.write(p.strip(), (lane == leader[:, None]) & member, "pred")


@instr(r"mapa(?:\.(?P<space>shared::cluster))?\.(?P<t>u32|u64)")
def _mapa(ctx, m):
    d, a, b = ctx.need(3)
    st = _state(ctx)
    t = m["t"]
    addr = ctx.read(a, t).astype(np.uint64)
    rank = ctx.read(b, "u32").astype(np.int64)
    act = np.ones(ctx.shape, bool) if ctx.mask is None else ctx.mask
    if ((rank >= st.size) & act).any():
        bad = int(rank[(rank >= st.size) & act][0])
        ctx.fail(f"mapa to CTA rank {bad}, but the cluster has {st.size} CTA(s) (ranks 0 .. {st.size - 1})", token=b)
    generic = m["space"] is None
    off = addr - np.uint64(SHARED_WINDOW) if generic else addr
    if generic and ((addr < np.uint64(SHARED_WINDOW)) | (addr >= np.uint64(SHARED_WINDOW + _WINDOW)))[act].any():
        ctx.fail("mapa of a generic address needs an address in the shared window", token=a)
    out = (off & np.uint64(_OFF_MASK)) | ((rank.astype(np.uint64) + np.uint64(1)) << np.uint64(RANK_SHIFT))
    if generic:
        out = out + np.uint64(SHARED_WINDOW)
    ctx.write(d, out, t)


# ----------------------------------------------------------------------------------------------
# mbarrier

_MB_SPACE = r"(?:\.(?P<space>shared(?:::cta|::cluster)?))?"
_MB_SEM = r"(?:\.(?:release|acquire|relaxed))?(?:\.(?:cta|cluster))?"


@instr(r"mbarrier\.init" + _MB_SPACE + r"\.b64")
def _mb_init(ctx, m):
    a, count = ctx.need(2)
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        cta, off = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, a, k, l), _space(m), "mbarrier.init")
        _, bar = st.mbarrier(ctx, cta, off, init=True)
        _mbar_error(ctx, bar.init, _scalar(ctx, count, "u32", k, l))


@instr(r"mbarrier\.inval" + _MB_SPACE + r"\.b64")
def _mb_inval(ctx, m):
    (a,) = ctx.need(1)
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        cta, off = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, a, k, l), _space(m), "mbarrier.inval")
        _, bar = st.mbarrier(ctx, cta, off)
        _mbar_error(ctx, bar.inval)


@instr(r"mbarrier\.(?P<op>arrive|arrive_drop)(?P<nc>\.noComplete)?(?P<tx>\.expect_tx)?" + _MB_SEM + _MB_SPACE
       + r"\.b64")
def _mb_arrive(ctx, m):
    ops = ctx.operands
    tx = bool(m["tx"])
    nmin, nmax = (3, 4) if tx else ((3, 3) if m["nc"] else (2, 3))
    if not nmin <= len(ops) <= nmax:
        ctx.fail(f"{ctx.opcode} takes state, [addr]{', txCount' if tx else ''}{', count' if nmax > nmin or m['nc'] else ''}")
    st = _state(ctx)
    space = _space(m)
    if space == "shared::cluster" and ops[0] != "_":
        ctx.fail("mbarrier.arrive on a .shared::cluster address returns no state: its destination must be '_'")
    count_op = ops[3] if tx and len(ops) == 4 else (ops[2] if not tx and len(ops) == 3 else None)
    tokens = np.zeros(ctx.shape, np.uint64)
    for k, w, l in _lanes(ctx):
        cta, off = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, ops[1], k, l), space, ctx.opcode)
        _, bar = st.mbarrier(ctx, cta, off)
        if tx:
            _mbar_error(ctx, bar.expect_tx, _scalar(ctx, ops[2], "u32", k, l))
        n = _scalar(ctx, count_op, "u32", k, l) if count_op is not None else 1
        fn = bar.arrive_drop if m["op"] == "arrive_drop" else bar.arrive
        tokens[k, l] = _mbar_error(ctx, lambda: fn(n, no_complete=bool(m["nc"])))
    if ops[0] != "_":
        ctx.write(ops[0], tokens, "b64")


@instr(r"tcgen05\.commit\.cta_group::(?P<g>[12])\.mbarrier::arrive::one(?P<space>\.shared::cluster)?"
       r"(?P<mc>\.multicast::cluster)?\.b64")
def _tc05_commit(ctx, m):
    """``tcgen05.commit``: one arrival on the mbarrier (on that offset of every CTA of the 16-bit mask with
    ``.multicast::cluster``) once the thread's earlier tcgen05 operations are done -- at once here: warpsim
    runs them synchronously (modelled; no capture on sm_100a).  Without a state space, an address outside
    the generic shared window is a shared::cluster address: ptxas 13 writes the same ``UTCBAR [UR]`` on the
    same word for both spellings (Triton 3.6's sm_100a ``tl.dot`` passes a zero-extended shared::cta offset)."""
    ops = ctx.operands
    if len(ops) != 1 + bool(m["mc"]):
        ctx.fail(f"{ctx.opcode} takes [mbar]{', ctaMask' if m['mc'] else ''}")
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        addr = _addr(ctx, ops[0], k, l)
        generic = not m["space"] and SHARED_WINDOW <= int(addr) < SHARED_WINDOW + _WINDOW
        space = "generic" if generic else "shared::cluster"
        cta, off = st.shared_target(ctx, _cta(ctx, w), addr, space, ctx.opcode)
        targets = [cta]
        if m["mc"]:
            try:
                targets = [int(st.cta_of[_cta(ctx, w), r])
                           for r in tma.multicast_targets(_scalar(ctx, ops[1], "u16", k, l), st.size)]
            except ValueError as exc:
                ctx.fail(str(exc))
        for t in targets:
            _, bar = st.mbarrier(ctx, t, off)
            _mbar_error(ctx, bar.arrive, 1)


@instr(r"mbarrier\.(?P<op>expect_tx|complete_tx)" + _MB_SEM + _MB_SPACE + r"\.b64")
def _mb_tx(ctx, m):
    a, n = ctx.need(2)
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        cta, off = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, a, k, l), _space(m), ctx.opcode)
        _, bar = st.mbarrier(ctx, cta, off)
        _mbar_error(ctx, getattr(bar, m["op"]), _scalar(ctx, n, "u32", k, l))


@instr(r"mbarrier\.(?P<op>test_wait|try_wait)(?P<parity>\.parity)?" + _MB_SEM + _MB_SPACE + r"\.b64")
def _mb_wait(ctx, m):
    ops = ctx.operands
    try_ = m["op"] == "try_wait"
    if not 3 <= len(ops) <= (4 if try_ else 3):
        ctx.fail(f"{ctx.opcode} takes waitComplete, [addr], {'phaseParity' if m['parity'] else 'state'}"
                 f"{'[, suspendTimeHint]' if try_ else ''}")
    st = _state(ctx)
    if len(ops) == 4:
        ctx.read(ops[3], "u32")
    space = _space(m)
    if space == "shared::cluster":
        ctx.fail(f"{ctx.opcode} waits on a barrier of the executing CTA: use .shared::cta (or .shared)")
    done = np.ones(ctx.shape, bool)
    blocked = {}
    for k, w, l in _lanes(ctx):
        cta, off = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, ops[1], k, l), space, ctx.opcode)
        key, bar = st.mbarrier(ctx, cta, off)
        if m["parity"]:
            par = _scalar(ctx, ops[2], "u32", k, l)
            ok = _mbar_error(ctx, lambda: bar.test_wait(parity=par & 1))
        else:
            ok = _mbar_error(ctx, lambda: bar.test_wait(_scalar(ctx, ops[2], "b64", k, l)))
        done[k, l] = ok
        if not ok and w not in blocked:
            blocked[w] = (key, bar.phase)
    ctx.write(ops[0], done, "pred")
    for w, (key, phase) in blocked.items():
        st.blocked.append((w, key, phase, try_))


@instr(r"mbarrier\.pending_count\.b64")
def _mb_pending(ctx, m):
    d, s = ctx.need(2)
    state = ctx.read(s, "b64").astype(np.uint64)
    ctx.write(d, (state & np.uint64(0xFFFFFFFF)).astype(np.uint32), "u32")


# ----------------------------------------------------------------------------------------------
# TMA and bulk copies (complete when issued: see the module docstring)

def _load_box(ctx, st, k, w, l, ops, multicast, space):
    dst, tref, mbar = ops[0], ops[1], ops[2]
    name, coords = _tensor_ref(ctx, tref)
    cta = _cta(ctx, w)
    raw = _read_bytes(ctx, int(ctx.address("[" + name + "]")[k, l]), TENSORMAP_BYTES, cta)
    tm = st.tensormap(ctx, raw)
    if len(coords) != tm.rank:
        ctx.fail(f"{ctx.opcode} names {len(coords)} coordinates but its tensormap has rank {tm.rank}", token=tref)
    c = [int(ctx.read(x, "s32")[k, l]) for x in coords]
    dcta, doff = st.shared_target(ctx, cta, _addr(ctx, dst, k, l), space, "TMA destination")
    bcta, boff = st.shared_target(ctx, cta, _addr(ctx, mbar, k, l), space, "TMA mbarrier")
    if multicast is not None:
        try:
            ranks = tma.multicast_targets(multicast, st.size)
        except ValueError as exc:
            ctx.fail(str(exc))
        targets = [int(st.cta_of[cta, r]) for r in ranks]
    else:
        targets = [dcta]
    try:
        addrs, data = tma.tile_load(tm, _global_reader(ctx), c, doff, smem_size=ctx.memory.shared_bytes)
    except (ValueError, NotImplementedError, TypeError) as exc:
        ctx.fail(f"{ctx.opcode}: {exc}")
    if int(addrs.max()) >= ctx.memory.shared_bytes:
        ctx.fail(f"the TMA box lands at shared bytes up to {int(addrs.max()) + 1}, past the CTA's "
                 f"{ctx.memory.shared_bytes}")
    for t in targets:
        if ctx.machine._async is not None:
            lo = int(addrs.min())
            ctx.machine._async.check_smem(np.array([t]), np.array([lo]), int(addrs.max()) - lo + 1,
                                          ctx.stmt.line, ctx.stmt.text)
        ctx.memory.shared[t, addrs] = data
        _, bar = st.mbarrier(ctx, t if multicast is not None else bcta, boff)
        _mbar_error(ctx, bar.complete_tx, int(data.size))


def _copy_operands(ctx, m, fixed, nfixed):
    """The operands of an async copy into shared memory (``fixed`` ones, then a CTA mask with
    ``.multicast::cluster`` and a cache policy with ``.L2::cache_hint``) and the cluster's state."""
    ops = _ops(ctx)
    want = nfixed + bool(m["mc"]) + bool(m["hint"])
    if len(ops) != want:
        ctx.fail(f"{ctx.opcode} takes {fixed}{', ctaMask' if m['mc'] else ''}"
                 f"{', cache-policy' if m['hint'] else ''} ({want} operands), got {len(ops)}")
    return ops, _state(ctx)


@instr(r"cp\.async\.bulk\.tensor\.(?P<dim>[1-5])d\.(?P<space>shared::cluster|shared::cta)\.global(?:\.tile)?"
       r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _tma_load(ctx, m):
    ops, st = _copy_operands(ctx, m, "[dstMem], [tensorMap, {coords}], [mbar]", 3)
    for k, w, l in _lanes(ctx):
        mask = _scalar(ctx, ops[3], "u16", k, l) if m["mc"] else None
        _load_box(ctx, st, k, w, l, ops, mask, m["space"])


@instr(r"cp\.async\.bulk\.tensor\.[3-5]d\.(?:shared::cluster|shared::cta)\.global\.im2col::w(?:::128)?"
       r"\.mbarrier::complete_tx::bytes(?:\.multicast::cluster)?(?:\.L2::cache_hint)?")
def _tma_im2col_w(ctx, m):
    """sm_100's im2col::w / ::w::128 loads (ptxas 13.0 takes them for sm_100a only): refused by name."""
    ctx.fail(f"{ctx.opcode}: the im2col::w modes are not modelled -- their tensormap "
             "(cuTensorMapEncodeIm2colWide, compute capability 10.0) has no captured byte layout, and the "
             "wHalo / wOffset operands' meaning is not taken from the PTX ISA yet (docs/tma.md)")


@instr(r"cp\.async\.bulk\.tensor\.(?P<dim>[3-5])d\.(?P<space>shared::cluster|shared::cta)\.global\.im2col"
       r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _tma_im2col(ctx, m):
    """im2col load of ``pixels_per_column`` pixels (warpsim.ptx.tma.im2col_load; captured on an H200)."""
    from ..isa.tensormap import decode_im2col, is_im2col

    ops = _ops(ctx)
    want = 4 + bool(m["mc"]) + bool(m["hint"])
    if len(ops) != want:
        ctx.fail(f"{ctx.opcode} takes [dstMem], [tensorMap, {{coords}}], [mbar], {{offsets}}"
                 f"{', ctaMask' if m['mc'] else ''}{', cache-policy' if m['hint'] else ''}")
    st = _state(ctx)
    rank = int(m["dim"])
    offs = ops[3] if isinstance(ops[3], list) else [x.strip() for x in str(ops[3]).strip("{}").split(",") if x.strip()]
    if len(offs) != rank - 2:
        ctx.fail(f"a {rank}D im2col load takes {rank - 2} 16-bit offsets, got {len(offs)}")
    for k, w, l in _lanes(ctx):
        cta = _cta(ctx, w)
        name, coords = _tensor_ref(ctx, ops[1])
        raw = _read_bytes(ctx, int(ctx.address("[" + name + "]")[k, l]), TENSORMAP_BYTES, cta)
        if not is_im2col(raw):
            ctx.fail(f"{ctx.opcode} needs an im2col tensormap (cuTensorMapEncodeIm2col); this one is tiled")
        try:
            im = decode_im2col(raw)
        except ValueError as exc:
            ctx.fail(f"invalid im2col tensormap: {exc}")
        if len(coords) != rank or im.tensor.rank != rank:
            ctx.fail(f"{ctx.opcode} names {len(coords)} coordinates; its tensormap has rank {im.tensor.rank}")
        c = [int(ctx.read(x, "s32")[k, l]) for x in coords]
        o = [int(ctx.read(x, "u16")[k, l]) for x in offs]
        dcta, doff = st.shared_target(ctx, cta, _addr(ctx, ops[0], k, l), m["space"], "TMA destination")
        bcta, boff = st.shared_target(ctx, cta, _addr(ctx, ops[2], k, l), m["space"], "TMA mbarrier")
        try:
            addrs, data = tma.im2col_load(im, _global_reader(ctx), c, o, doff)
        except (ValueError, NotImplementedError, TypeError) as exc:
            ctx.fail(f"{ctx.opcode}: {exc}")
        if int(addrs.max()) >= ctx.memory.shared_bytes:
            ctx.fail(f"the im2col load lands at shared bytes up to {int(addrs.max()) + 1}, past the CTA's "
                     f"{ctx.memory.shared_bytes}")
        targets = [dcta]
        if m["mc"]:
            try:
                targets = [int(st.cta_of[cta, r]) for r in tma.multicast_targets(_scalar(ctx, ops[4], "u16", k, l),
                                                                                 st.size)]
            except ValueError as exc:
                ctx.fail(str(exc))
        for t in targets:
            ctx.memory.shared[t, addrs] = data
            _, bar = st.mbarrier(ctx, t if m["mc"] else bcta, boff)
            _mbar_error(ctx, bar.complete_tx, int(data.size))


@instr(r"cp\.(?P<red>reduce\.)?async\.bulk\.tensor\.(?P<dim>[1-5])d\.global\.shared::cta(?:\.(?P<op>add|min|max|inc|dec|and|or|xor))?"
       r"(?:\.tile)?\.bulk_group(?P<hint>\.L2::cache_hint)?")
def _tma_store(ctx, m):
    ops = _ops(ctx)
    if len(ops) != 2 + bool(m["hint"]):
        ctx.fail(f"{ctx.opcode} takes [tensorMap, {{coords}}], [srcMem]{', cache-policy' if m['hint'] else ''}")
    if bool(m["red"]) != bool(m["op"]):
        ctx.fail("cp.reduce.async.bulk.tensor names a reduction (.add, .min, ...); cp.async.bulk.tensor names none")
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        cta = _cta(ctx, w)
        name, coords = _tensor_ref(ctx, ops[0])
        tm = st.tensormap(ctx, _read_bytes(ctx, int(ctx.address("[" + name + "]")[k, l]), TENSORMAP_BYTES, cta))
        if len(coords) != tm.rank:
            ctx.fail(f"{ctx.opcode} names {len(coords)} coordinates but its tensormap has rank {tm.rank}")
        c = [int(ctx.read(x, "s32")[k, l]) for x in coords]
        scta, soff = st.shared_target(ctx, cta, _addr(ctx, ops[1], k, l), "shared::cta", "TMA source")
        smem = ctx.memory.shared[scta]
        try:
            if m["op"]:
                addrs, data = tma.tile_reduce(tm, m["op"], _global_reader(ctx), smem, c, soff)
            else:
                addrs, data = tma.tile_store(tm, smem, c, soff)
        except (ValueError, NotImplementedError, TypeError) as exc:
            ctx.fail(f"{ctx.opcode}: {exc}")
        _global_write(ctx, addrs, data)


@instr(r"cp\.async\.bulk\.(?P<dst>shared::cluster|shared::cta)\.(?P<src>global|shared::cta)"
       r"\.mbarrier::complete_tx::bytes(?P<mc>\.multicast::cluster)?(?P<hint>\.L2::cache_hint)?")
def _bulk_to_shared(ctx, m):
    ops, st = _copy_operands(ctx, m, "[dstMem], [srcMem], size, [mbar]", 4)
    for k, w, l in _lanes(ctx):
        cta = _cta(ctx, w)
        size = _scalar(ctx, ops[2], "u32", k, l)
        src = _addr(ctx, ops[1], k, l)
        dcta, doff = st.shared_target(ctx, cta, _addr(ctx, ops[0], k, l), m["dst"], "bulk copy destination")
        bcta, boff = st.shared_target(ctx, cta, _addr(ctx, ops[3], k, l), m["dst"], "bulk copy mbarrier")
        if m["src"] == "global":
            read = _global_reader(ctx)
        else:
            scta, src = st.shared_target(ctx, cta, src, "shared::cta", "bulk copy source")
            read = lambda a, n: ctx.memory.shared[scta, a:a + n]           # noqa: E731
        try:
            addrs, data = tma.bulk_copy(read, doff, src, size)
        except ValueError as exc:
            ctx.fail(f"{ctx.opcode}: {exc}")
        targets = [dcta]
        if m["mc"]:
            try:
                targets = [int(st.cta_of[cta, r]) for r in tma.multicast_targets(_scalar(ctx, ops[4], "u16", k, l), st.size)]
            except ValueError as exc:
                ctx.fail(str(exc))
        if int(addrs.max()) >= ctx.memory.shared_bytes:
            ctx.fail(f"bulk copy of {size} bytes at {doff:#x} runs past the CTA's {ctx.memory.shared_bytes} shared bytes")
        for t in targets:
            ctx.memory.shared[t, addrs] = data
            _, bar = st.mbarrier(ctx, t if m["mc"] else bcta, boff)
            _mbar_error(ctx, bar.complete_tx, size)


@instr(r"cp\.(?P<red>reduce\.)?async\.bulk\.global\.shared::cta\.bulk_group(?:\.L2::cache_hint)?"
       r"(?:\.(?P<op>add|min|max|inc|dec|and|or|xor)(?:\.noftz)?\.(?P<t>\w+))?")
def _bulk_to_global(ctx, m):
    ops = _ops(ctx)
    st = _state(ctx)
    hint = "L2::cache_hint" in ctx.opcode
    if len(ops) != 3 + hint:
        ctx.fail(f"{ctx.opcode} takes [dstMem], [srcMem], size{', cache-policy' if hint else ''}")
    types = {"u32": "uint32", "s32": "int32", "u64": "uint64", "s64": "int64", "f32": "float32", "f16": "float16",
             "bf16": "bfloat16", "b32": "uint32", "b64": "uint64", "f64": "float64"}
    for k, w, l in _lanes(ctx):
        cta = _cta(ctx, w)
        size = _scalar(ctx, ops[2], "u32", k, l)
        dst = _addr(ctx, ops[0], k, l)
        scta, soff = st.shared_target(ctx, cta, _addr(ctx, ops[1], k, l), "shared::cta", "bulk copy source")
        try:
            tma.check_bulk(dst, soff, size)
        except ValueError as exc:
            ctx.fail(f"{ctx.opcode}: {exc}")
        data = ctx.memory.shared[scta, soff:soff + size]
        if m["op"]:
            if m["t"] not in types:
                ctx.fail(f"{ctx.opcode}: type .{m['t']} is not one cp.reduce.async.bulk takes")
            old = _global_reader(ctx)(dst, size)
            try:
                data = tma.reduce_elements(m["op"], types[m["t"]], old, data)
            except ValueError as exc:
                ctx.fail(f"{ctx.opcode}: {exc}")
        _global_write(ctx, dst + np.arange(size), data)


@instr(r"cp\.async\.bulk\.(?:commit_group|wait_group(?:\.read)?)")
def _bulk_group(ctx, m):
    for op in ctx.operands:           # every copy completed when issued: nothing left to wait for
        ctx.read(op, "u32")


@instr(r"cp\.async\.bulk\.prefetch(?:\.tensor\.[1-5]d\.L2\.global(?:\.tile)?|\.L2\.global)(?:\.L2::cache_hint)?")
def _bulk_prefetch(ctx, m):
    pass                               # a cache hint: no effect on the values a program sees


@instr(r"prefetch(?:\.(?:const|param|global))?\.tensormap")
def _prefetch_tensormap(ctx, m):
    ctx.need(1)


@instr(r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release\.(?:cta|cluster|gpu|sys)"
       r"\.sync\.aligned")
def _tensormap_copy(ctx, m):
    dst, src, size = ctx.need(3)
    st = _state(ctx)
    ctx.require_converged()
    for k, w, l in _lanes(ctx):
        if _scalar(ctx, size, "u32", k, l) != TENSORMAP_BYTES:
            ctx.fail(f"tensormap.cp_fenceproxy copies {TENSORMAP_BYTES} bytes", token=size)
        scta, soff = st.shared_target(ctx, _cta(ctx, w), _addr(ctx, src, k, l), "shared::cta", "tensormap source")
        _global_write(ctx, _addr(ctx, dst, k, l) + np.arange(TENSORMAP_BYTES),
                      ctx.memory.shared[scta, soff:soff + TENSORMAP_BYTES])


@instr(r"tensormap\.replace\.tile\.(?P<field>[a-z_]+)\.(?P<space>shared::cta|global)\.b1024\.b(?P<bits>32|64)")
def _tensormap_replace(ctx, m):
    """Edit one field of a 128-byte tensormap in shared or global memory (warpsim.isa.tensormap.replace_field)."""
    field = m["field"]
    per_dim = field in REPLACE_PER_DIM
    if field not in REPLACE_FIELDS:
        ctx.fail(f"tensormap.replace .{field} is not modelled; modelled fields: {', '.join(REPLACE_FIELDS)}",
                 token=field)
    ops = ctx.need(3 if per_dim else 2)
    typ = "u64" if m["bits"] == "64" else "u32"
    st = _state(ctx)
    for k, w, l in _lanes(ctx):
        addr = _addr(ctx, ops[0], k, l)
        ordinal = _scalar(ctx, ops[1], "u32", k, l) if per_dim else None
        value = _scalar(ctx, ops[-1], typ, k, l)
        if m["space"] == "shared::cta":
            scta, soff = st.shared_target(ctx, _cta(ctx, w), addr, "shared::cta", "tensormap")
            old = ctx.memory.shared[scta, soff:soff + TENSORMAP_BYTES]
        else:
            old = np.frombuffer(_read_bytes(ctx, addr, TENSORMAP_BYTES, _cta(ctx, w)), np.uint8)
        try:
            new = replace_field(old, field, value, ordinal)   # as captured (tests/golden/tma_stores_sm90.npz)
        except ValueError as exc:
            ctx.fail(str(exc))
        if m["space"] == "shared::cta":
            ctx.memory.shared[scta, soff:soff + TENSORMAP_BYTES] = new
        else:
            _global_write(ctx, addr + np.arange(TENSORMAP_BYTES), new)


@instr(r"tensormap\.replace\S*")
def _tensormap_replace_other(ctx, m):
    ctx.fail(f"{ctx.opcode}: the modelled form is tensormap.replace.tile.<field>.{{shared::cta,global}}.b1024.b<32|64>")


# ----------------------------------------------------------------------------------------------
# register budget, grid dependency control

@instr(r"setmaxnreg\.(?P<dir>inc|dec)\.sync\.aligned\.u32")
def _setmaxnreg(ctx, m):
    (n,) = ctx.need(1)
    st = _state(ctx)
    ctx.require_converged()
    v = ctx.read(n, "u32")
    val = int(v.flat[0])
    if not (v == val).all() or not 24 <= val <= 256 or val % 8:
        ctx.fail(f"setmaxnreg takes an immediate register count in 24 .. 256, a multiple of 8; got {n}", token=n)
    rows = np.arange(ctx.shape[0]) if ctx.rows is None else np.asarray(ctx.rows)
    new = dict(st.nreg)
    for w in rows:
        w = int(w)
        key = (_cta(ctx, w), (w % st.wpc) // 4)
        cur = st.nreg.get(key, st.nreg_initial)
        if m["dir"] == "inc" and val < cur:
            ctx.fail(f"setmaxnreg.inc to {val} registers, but warpgroup {key[1]} of CTA {key[0]} already has {cur} "
                     "(.inc must not lower the count)")
        if m["dir"] == "dec" and val > cur:
            ctx.fail(f"setmaxnreg.dec to {val} registers, but warpgroup {key[1]} of CTA {key[0]} has only {cur} "
                     "(.dec must not raise the count)")
        new[key] = val
    ngroups = -(-st.wpc // 4)
    for cta in sorted({_cta(ctx, int(w)) for w in rows}):
        total = sum(new.get((cta, g), st.nreg_initial) * min(128, (st.wpc - 4 * g) * 32) for g in range(ngroups))
        if total > REGISTERS_PER_SM:
            if m["dir"] == "dec":
                ctx.fail(f"setmaxnreg: CTA {cta} holds {total} registers, more than the {REGISTERS_PER_SM} of an SM")
            # .inc waits until other warpgroups' .dec have released enough registers
            for w in rows:
                if _cta(ctx, int(w)) == cta:
                    st.blocked.append((int(w), ("setmaxnreg", cta), total, True))
            return
    st.nreg = new
    st.version += 1


@instr(r"griddepcontrol\.(?:launch_dependents|wait)")
def _griddepcontrol(ctx, m):
    pass                               # one launch at a time: there is no dependent grid to order
