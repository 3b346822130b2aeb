"""A warpgroup (128 threads) with shared memory that executes ``wgmma`` statements as written in a kernel.

>>> import numpy as np, warpsim
>>> from warpsim.isa import smem
>>> g = warpsim.Warpgroup(smem_bytes=4096)
>>> A = np.ones((64, 16), np.float16); B = np.full((16, 8), 2, np.float16)
>>> da, db = smem.encode_descriptor(0, 128, 256), smem.encode_descriptor(2048, 128, 256)
>>> smem.write_operand(g.smem, da, A.view(np.uint16), 16); smem.write_operand(g.smem, db, B.T.view(np.uint16), 16)
>>> _ = g.run(f'''
...     mov.b64 %rd0, {da};
...     mov.b64 %rd1, {db};
...     wgmma.fence.sync.aligned;
...     wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f0, %f1, %f2, %f3}}, %rd0, %rd1, 0, 1, 1, 0, 0;
...     wgmma.commit_group.sync.aligned;
...     wgmma.wait_group.sync.aligned 0;
... ''')
>>> float(g.get("%f0").view(np.float32)[0, 0])
32.0

Each group is a CTA of 128 threads (4 warps) with its own shared memory.  Statements: the wgmma
rows of the instruction table -- ``wgmma.fence.sync.aligned``, ``wgmma.mma_async...`` (every dense
opcode of the catalog, A as a register vector or a ``%rd`` descriptor register, B a ``%rd``
descriptor register, scale-d a predicate register or the immediate 0/1, then the opcode's
immediates), ``wgmma.commit_group.sync.aligned``, ``wgmma.wait_group.sync.aligned N`` -- and every
other instruction of :mod:`warpsim.ptx.instructions` a :class:`warpsim.Warp` runs, plus shared
memory (``ld``/``st.shared``, ``ldmatrix``/``stmatrix``), ``@p`` guards, ``.reg`` declarations
and comments.  The same rows run in kernels: :func:`warpsim.ptx.load` ``(...).launch(...)`` with
CTAs of a multiple of 128 threads (warpgroup ``j`` of a CTA is its warps ``4j .. 4j+3``; the
shared memory is the CTA's).  A wgmma statement must be executed by all 128 threads of a
warpgroup together, and its descriptors and scale-d predicate must agree across them.

The asynchrony is modelled as the PTX ISA defines it, and what it leaves undefined is an error
(:class:`warpsim.PTXError` naming both statements): reading or writing an in-flight wgmma's
accumulator registers, or writing its A registers, with any statement other than a wgmma
chained on the same accumulator; writing shared memory an in-flight wgmma reads; a wgmma whose
registers were written since the last ``wgmma.fence``.  A wgmma is in flight from its issue
until a ``wgmma.wait_group`` that covers its committed group (in a kernel launch, unless
``wgmma_strict=True``, a read of an in-flight accumulator is what ptxas makes of it instead: a
wait for that wgmma, with a :class:`WgmmaSerializedWarning`).  Results are computed at issue
(equal to the GPU's whenever no hazard is reported).  The state is a :class:`WgmmaUnit` of the
executing machine, per warpgroup; it sees every register read and write of the other statements
and every shared-memory store (``st``, ``stmatrix``, ``cp.async``, :meth:`Warpgroup.write_smem`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .instructions import instr
from .memory import Memory
from .regfile import Warp
from .syntax import PTXError, parse_int

__all__ = ["Warpgroup", "WgmmaUnit", "WgmmaSerializedWarning"]


class WgmmaSerializedWarning(UserWarning):
    """A statement read an in-flight wgmma's accumulator; modelled as ptxas assembles it: the read
    waits for that wgmma (ptxas info C7517, "warpgroup.wait is injected ... to allow use of
    registers defined by GMMA").  Turn it into an error with ``launch(..., wgmma_strict=True)``."""

_WG = "a warpgroup (4 consecutive warps, 128 threads, of one CTA)"


# ----------------------------------------------------------------------------------------------
# the asynchronous unit: in-flight wgmmas, commit groups, fences and hazards, per warpgroup

class _Op:
    """One issued ``wgmma.mma_async``: its registers, the shared memory it reads, and, per warpgroup
    of the machine, whether it is still in flight and the commit group it belongs to."""

    def __init__(self, line, stmt, d, a, reads, inflight):
        self.line, self.stmt = line, stmt
        self.d, self.a = tuple(d), tuple(a)
        self.dset, self.aset = frozenset(d), frozenset(a)
        self.reads = reads                     # [(warpgroup mask, sorted unique shared addresses)]
        self.inflight = inflight               # (warpgroups,) bool
        self.commit = np.full(inflight.shape, -1, np.int64)   # commit-group number per warpgroup, -1: uncommitted


class WgmmaUnit:
    """The asynchronous wgmma state of a machine whose warps form warpgroups.

    ``machine``: a :class:`warpsim.Warp` subclass (:class:`Warpgroup`, a kernel launch) with
    ``warps`` warps in CTAs of ``warps_per_cta`` warps each; warpgroup ``j`` of a CTA is its warps
    ``4j .. 4j+3``.  The machine calls :meth:`on_read` / :meth:`on_write` for every register access
    of a statement (other than a wgmma's own) and ``memory.watch`` for every shared-memory store.
    ``strict``: reading an in-flight accumulator is an error (the PTX ISA leaves it undefined);
    otherwise it is what ptxas makes of it: the read waits for the wgmma that writes the register
    and every wgmma issued before it, with a :class:`WgmmaSerializedWarning` once per statement.
    """

    def __init__(self, machine, warps_per_cta, strict=True):
        self.machine = machine
        self.strict = bool(strict)
        self._warned = set()
        W = machine.warps
        self.wpc = int(warps_per_cta)
        per_cta = -(-self.wpc // 4)
        warp = np.arange(W)
        cta = warp // self.wpc
        self.wg_of_warp = cta * per_cta + (warp % self.wpc) // 4
        self.ngroups = int(self.wg_of_warp[-1]) + 1
        self.cta_of_wg = np.arange(self.ngroups) // per_cta
        self.size_of_wg = np.bincount(self.wg_of_warp, minlength=self.ngroups)   # warps (4 unless the CTA is short)
        self.pending: list[_Op] = []
        self.ncommit = np.zeros(self.ngroups, np.int64)
        self.unfenced: dict = {}        # register -> (line, statement, warpgroup mask) of its last non-wgmma write
        self._all = np.ones(self.ngroups, dtype=bool)
        if machine.memory is not None:
            machine.memory.watch = self.on_store

    # --- which warpgroups a statement runs in ------------------------------------------------

    def _mask(self, rows):
        if rows is None:
            return self._all
        m = np.zeros(self.ngroups, dtype=bool)
        m[self.wg_of_warp[rows]] = True
        return m

    def groups(self, ctx):
        """Warpgroups executing a wgmma statement (sorted indices); every one of them must run it
        in all 4 warps and all 128 threads."""
        rows = np.arange(self.machine.warps) if ctx.rows is None else np.asarray(ctx.rows)
        wg = self.wg_of_warp[rows]
        count = np.bincount(wg, minlength=self.ngroups)
        idx = np.nonzero(count)[0]
        bad = idx[(count[idx] != 4)]
        if len(bad):
            j = int(bad[0])
            if self.size_of_wg[j] != 4:
                ctx.fail(f"{ctx.opcode} runs on {_WG}, but a CTA of {self.wpc} warps ({32 * self.wpc} threads) leaves "
                         f"its warpgroup {j % -(-self.wpc // 4)} with {self.size_of_wg[j]} warp(s): launch CTAs of a "
                         "multiple of 128 threads")
            ctx.fail(f"{ctx.opcode} is .sync.aligned across {_WG}: {count[j]} of the 4 warps of warpgroup {j} "
                     "reached it together (the others are elsewhere or predicated off)")
        if ctx.mask is not None and not ctx.mask.all():
            ctx.fail(f"{ctx.opcode} is .sync.aligned: all 128 threads of a warpgroup must execute it, "
                     "but its guard predicate differs between them")
        return idx

    # --- hazards of ordinary statements --------------------------------------------------------

    def _conflict(self, regs, wgmask, what, line, stmt, chain=None):
        for op in self.pending:
            for r in regs:
                if r in op.dset and not (chain is not None and chain == op.d):
                    if (op.inflight & wgmask).any():
                        raise PTXError(f"{what} accumulator register {r} of a wgmma that is still in flight "
                                       f"(line {op.line}: {op.stmt}); wait for it first with wgmma.commit_group and "
                                       "wgmma.wait_group", line=line, statement=stmt, token=r)
                if r in op.aset and what != "reads" and (op.inflight & wgmask).any():
                    raise PTXError(f"{what} A register {r} of a wgmma that is still in flight "
                                   f"(line {op.line}: {op.stmt})", line=line, statement=stmt, token=r)

    def on_read(self, name, ctx):
        if self.pending and not ctx.opcode.startswith("wgmma."):
            if not self.strict:
                self._serialize(name, self._mask(ctx.rows), ctx.stmt)
            self._conflict((name,), self._mask(ctx.rows), "reads", ctx.stmt.line, ctx.stmt.text)

    def _serialize(self, name, wgmask, stmt):
        """ptxas's injected warpgroup.wait before a read of register ``name``: in the reading
        warpgroups, the last in-flight wgmma writing it and every one issued before it complete
        (their results were computed at issue, so only the in-flight state changes)."""
        last = max((k for k, op in enumerate(self.pending) if name in op.dset and (op.inflight & wgmask).any()),
                   default=None)
        if last is None:
            return
        op = self.pending[last]
        if stmt.line not in self._warned:
            self._warned.add(stmt.line)
            warnings.warn(f"PTX line {stmt.line}: '{stmt.text}' reads accumulator register {name} of a wgmma still "
                          f"in flight (line {op.line}: {op.stmt}); run as ptxas assembles it, waiting for that wgmma "
                          "(ptxas injects a warpgroup.wait, info C7517); wgmma_strict=True makes this an error",
                          WgmmaSerializedWarning, stacklevel=2)
        for o in self.pending[:last + 1]:
            o.inflight = o.inflight & ~wgmask
        self.pending = [o for o in self.pending if o.inflight.any()]

    def on_write(self, name, ctx):
        if ctx.opcode.startswith("wgmma."):
            return
        self.overwrite(name, self._mask(ctx.rows), ctx.stmt.line, ctx.stmt.text)

    def overwrite(self, name, wgmask, line, stmt):
        if self.pending:
            self._conflict((name,), wgmask, "overwrites", line, stmt)
        old = self.unfenced.get(name)
        self.unfenced[name] = (line, stmt, wgmask if old is None else (old[2] | wgmask))

    def on_store(self, ctx, sh, flat, nbytes):
        """A shared-memory store (lanes ``sh``, flat offsets cta * bytes + address)."""
        if not self.pending:
            return
        S = self.machine.memory.shared_bytes
        o = flat[sh]
        self.check_smem(o // S, o % S, nbytes, ctx.stmt.line, ctx.stmt.text)

    def check_smem(self, cta, lo, nbytes, line, stmt):
        """Stores of ``nbytes`` at shared addresses ``lo`` in CTAs ``cta`` (1-d arrays) against the
        shared memory in-flight wgmmas read."""
        for op in self.pending:
            for wgmask, addrs in op.reads:
                live = wgmask & op.inflight
                if not live.any() or not len(addrs):
                    continue
                ctas = np.zeros(int(self.cta_of_wg[-1]) + 1, dtype=bool)
                ctas[self.cta_of_wg[live]] = True
                sel = ctas[cta]
                if not sel.any():
                    continue
                x = lo[sel]
                k = np.searchsorted(addrs, x)
                hit = (k < len(addrs)) & (addrs[np.minimum(k, len(addrs) - 1)] < x + nbytes)
                if hit.any():
                    a = int(x[np.argmax(hit)])
                    raise PTXError(f"writes shared memory [{a}, {a + nbytes}) that a wgmma still in flight reads "
                                   f"(line {op.line}: {op.stmt}); wait for it first", line=line, statement=stmt)

    # --- the wgmma statements ------------------------------------------------------------------

    def fence(self, wgs):
        m = np.zeros(self.ngroups, dtype=bool)
        m[wgs] = True
        for r in list(self.unfenced):
            line, stmt, mask = self.unfenced[r]
            mask = mask & ~m
            if mask.any():
                self.unfenced[r] = (line, stmt, mask)
            else:
                del self.unfenced[r]

    def commit(self, wgs):
        for op in self.pending:
            sel = wgs[op.inflight[wgs] & (op.commit[wgs] < 0)]
            op.commit[sel] = self.ncommit[sel]
        self.ncommit[wgs] += 1

    def wait(self, wgs, n):
        """Complete, in warpgroups ``wgs``, every committed group but the newest ``n`` with wgmmas in flight."""
        m = np.zeros(self.ngroups, dtype=bool)
        m[wgs] = True
        ids = sorted({int(c) for op in self.pending for c in op.commit[op.inflight & m] if c >= 0}, reverse=True)
        newer = np.zeros(self.ngroups, np.int64)       # distinct pending groups newer than the current id
        for c in ids:
            has = np.zeros(self.ngroups, dtype=bool)
            for op in self.pending:
                has |= op.inflight & (op.commit == c)
            for op in self.pending:
                done = m & op.inflight & (op.commit == c) & (newer >= n)
                op.inflight = op.inflight & ~done
            newer += has
        self.pending = [op for op in self.pending if op.inflight.any()]

    def check_issue(self, wgs, dregs, aregs, other, line, stmt):
        m = np.zeros(self.ngroups, dtype=bool)
        m[wgs] = True
        # the accumulator may be shared only with in-flight wgmmas chained on the same registers
        self._conflict(dregs, m, "uses", line, stmt, chain=tuple(dregs))
        self._conflict(aregs, m, "reads", line, stmt)
        # the ISA asks for a fence only for accumulator and A-fragment registers: descriptor registers
        # ('other') are read at issue (nvcc writes them between wgmma.fence and wgmma.mma_async)
        for r in list(dregs) + list(aregs):
            u = self.unfenced.get(r)
            if u is not None and (u[2] & m).any():
                where = f"line {u[0]}: {u[1]}" if u[0] is not None else u[1]
                raise PTXError(f"register {r} was written ({where}) after the last wgmma.fence; issue "
                               "wgmma.fence.sync.aligned before this wgmma.mma_async", line=line, statement=stmt, token=r)
        return m

    def issue(self, op):
        self.pending.append(op)

    @property
    def in_flight(self):
        return [op.stmt for op in self.pending]


def _unit(ctx):
    unit = ctx.machine._async
    if unit is None:
        ctx.fail(f"{ctx.opcode} runs on {_WG}: use warpsim.Warpgroup, or a kernel (warpsim.ptx.load(...).launch) "
                 "whose CTAs have a multiple of 128 threads; a Warp's CTAs are single warps")
    return unit


@instr(r"wgmma\.fence\.sync\.aligned")
def _wgmma_fence(ctx, m):
    ctx.need(0)
    unit = _unit(ctx)
    unit.fence(unit.groups(ctx))


@instr(r"wgmma\.commit_group\.sync\.aligned")
def _wgmma_commit(ctx, m):
    ctx.need(0)
    unit = _unit(ctx)
    unit.commit(unit.groups(ctx))


@instr(r"wgmma\.wait_group\.sync\.aligned")
def _wgmma_wait(ctx, m):
    ops = ctx.operands
    n = parse_int(ops[0]) if len(ops) == 1 and isinstance(ops[0], str) else None
    if n is None or n < 0:
        ctx.fail("wgmma.wait_group takes a non-negative integer immediate")
    unit = _unit(ctx)
    unit.wait(unit.groups(ctx), n)


@instr(r"wgmma\.(?P<what>fence|commit_group|wait_group)(?!\.sync\.aligned\Z)(?:\.\S*)?")
def _wgmma_misspelt(ctx, m):
    ctx.fail(f"'{ctx.opcode}': write it as wgmma.{m['what']}.sync.aligned")


def _uniform(ctx, v, r, what):
    """(G, 128) per-thread values -> (G,) after checking every thread of a warpgroup agrees."""
    bad = (v != v[:, :1]).any(axis=1)
    if bad.any():
        j = int(np.argmax(bad))
        t = int(np.argmax(v[j] != v[j, 0]))
        ctx.fail(f"{what} {r} differs between the threads of a warpgroup (thread 0: {int(v[j, 0]):#x}, thread {t}: "
                 f"{int(v[j, t]):#x}); warpsim models one {what} per warpgroup", token=r)
    return v[:, 0]


@instr(r"wgmma\.mma_async\S*")
def _wgmma_mma_async(ctx, m):
    from ..engine.warpgroup_mma import compute, operands as decode, pack_d, wgmma_instruction as _instruction

    unit = _unit(ctx)
    line, stmt, op, operands = ctx.stmt.line, ctx.stmt.text, ctx.opcode, ctx.operands
    try:
        ins = _instruction(op)
    except ValueError as exc:
        raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
    wgs = unit.groups(ctx)
    G = len(wgs)
    reg_a = isinstance(operands[1], list) if len(operands) > 1 else False
    names = ["imm-scale-a", "imm-scale-b"] if ins.imm_scale else []
    names += (["imm-trans-b"] if reg_a else ["imm-trans-a", "imm-trans-b"]) if ins.imm_trans else []
    sp = 2 if ins.is_sparse else 0   # sparse: sp-meta (register) and sp-sel (immediate) before scale-d
    need = 4 + sp + len(names)
    if len(operands) != need:
        ctx.fail(f"{ins.opcode} takes {need} operands: {{d}}, {'{a}' if reg_a else 'a-desc'}, b-desc, "
                 + ("sp-meta, sp-sel, " if sp else "") + "scale-d"
                 + "".join(", " + n for n in names) + f"; got {len(operands)}")
    meta, sel = [], 0
    if sp:
        meta = [operands[3]]
        if not isinstance(operands[3], str) or not ctx.machine.is_register(operands[3]):
            ctx.fail("sp-meta must be a 32-bit register", token=str(operands[3]))
        sel = parse_int(operands[4]) if isinstance(operands[4], str) else None
        if sel not in ins.selectors:
            ctx.fail(f"sp-sel of {ins.opcode} must be an immediate in {list(ins.selectors)}", token=str(operands[4]))
        operands = operands[:3] + operands[5:]
    dregs = operands[0] if isinstance(operands[0], list) else [operands[0]]
    if len(dregs) != ins.words("d"):
        ctx.fail(f"D of {ins.opcode} needs {ins.words('d')} registers, got {len(dregs)}", token=dregs[0])
    aregs = operands[1] if reg_a else []
    if reg_a and len(aregs) != ins.words("a"):
        ctx.fail(f"register A of {ins.opcode} needs {ins.words('a')} registers, got {len(aregs)}", token=aregs[0])
    descs = ([] if reg_a else [operands[1]]) + [operands[2]]
    for regs, typ, what in ((dregs, "b32", "operand D"), (aregs, "b32", "operand A"), (meta, "b32", "the sparsity metadata"),
                            (descs, "b64", "a matrix descriptor")):
        for r in regs:
            if not isinstance(r, str) or not ctx.machine.is_register(r):
                ctx.fail(f"{what}: {r!r} is not a register name (%[a-z]+[0-9]*)", token=r if isinstance(r, str) else None)
            ctx._check_width(r, typ, what, False)
    wgmask = unit.check_issue(wgs, dregs, aregs + meta, descs, line, stmt)

    def threads(v):                    # (4G, 32) rows of the executing warps -> (G, 128)
        return np.asarray(v).reshape(G, 128)

    sd_tok = operands[3]
    if isinstance(sd_tok, str) and ctx.machine.is_register(sd_tok):
        sd = _uniform(ctx, threads(ctx.read(sd_tok, "pred", what="scale-d")).astype(np.int64), sd_tok, "scale-d predicate")
    else:
        sd = parse_int(sd_tok) if isinstance(sd_tok, str) else None
        if sd not in (0, 1):
            ctx.fail("scale-d must be a predicate register or 0/1", token=sd_tok if isinstance(sd_tok, str) else None)
    imm = {}
    for n, t in zip(names, operands[4:]):
        v = parse_int(t) if isinstance(t, str) else None
        allowed = (1, -1) if "scale" in n else (0, 1)
        if v not in allowed:
            ctx.fail(f"{n} must be one of {list(allowed)}", token=t if isinstance(t, str) else None)
        imm[n] = v
    if isinstance(sd, int) and sd == 0:          # D = A x B: the accumulator's old value is not read
        d_words = np.zeros((G, 128, len(dregs)), np.uint32)
    else:
        d_words = np.stack([threads(ctx.read(r, "b32", what="operand D")) for r in dregs], axis=-1)
    if reg_a:
        a = np.stack([threads(ctx.read(r, "b32", what="operand A")) for r in aregs], axis=-1)
    else:
        a = _uniform(ctx, threads(ctx.read(operands[1], "b64", what="A descriptor")), operands[1], "A descriptor")
    b = _uniform(ctx, threads(ctx.read(operands[2], "b64", what="B descriptor")), operands[2], "B descriptor")
    e = threads(ctx.read(meta[0], "b32", what="sparsity metadata")).astype(np.uint32) if sp else None
    mem = ctx.machine.memory
    ctas = unit.cta_of_wg[wgs]
    if mem is None:
        smem = np.zeros((G, 0), np.uint8)
    elif len(ctas) == mem.shared.shape[0] and (ctas == np.arange(len(ctas))).all():
        smem = mem.shared                        # one warpgroup per CTA, all of them: no copy
    else:
        smem = mem.shared[ctas]
    arch = ctx.machine.arch
    arch = "sm_90a" if arch == "sm_90" else arch     # wgmma is the sm_90a (H100) form of Hopper
    try:
        ins, _, A, B, C = decode(ins.opcode, np.ascontiguousarray(d_words, dtype=np.uint32),
                                 np.ascontiguousarray(a), np.ascontiguousarray(b, dtype=np.uint64),
                                 smem=smem, scale_d=sd, scale_a=imm.get("imm-scale-a", 1),
                                 scale_b=imm.get("imm-scale-b", 1), trans_a=imm.get("imm-trans-a", 0),
                                 trans_b=imm.get("imm-trans-b", 0), arch=arch, e=e, selector=sel)
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
    out = pack_d(ins, compute(ins, A, B, C, arch))
    for i, r in enumerate(dregs):
        ctx.write(r, np.ascontiguousarray(out[..., i]).reshape(-1, 32), "b32", what="operand D")
    reads = _read_set(ins, wgs, unit.ngroups, None if reg_a else a, b, imm)
    unit.issue(_Op(line, stmt, dregs, aregs + meta, reads, wgmask.copy()))


def _read_set(ins, wgs, ngroups, a_desc, b_desc, imm):
    """[(warpgroup mask, sorted shared addresses)] the operands read, one entry per distinct descriptor."""
    from ..isa import smem as S

    out = []
    for desc, rows, role, tr in ((a_desc, ins.m, "a", imm.get("imm-trans-a", 0)),
                                 (b_desc, ins.n, "b", imm.get("imm-trans-b", 0))):
        if desc is None:
            continue
        bits = ins.elem(role).bits
        k = ins.matrix_shape(role)[1] if role == "a" else ins.k   # sparse A: the compressed K/2
        for d in np.unique(desc):
            key = (int(d), rows, k, bits, "MN" if tr else "K")
            addrs = _READ_ADDRESSES.get(key)
            if addrs is None:       # a function of the descriptor and the shape: computed once
                ad, _ = S.operand_addresses(*key)
                addrs = np.unique((ad[..., None] + np.arange(max(1, bits // 8))).ravel())
                addrs.flags.writeable = False
                if len(_READ_ADDRESSES) > 4096:
                    _READ_ADDRESSES.clear()
                _READ_ADDRESSES[key] = addrs
            mask = np.zeros(ngroups, dtype=bool)
            mask[wgs[desc == d]] = True
            out.append((mask, addrs))
    return out


_READ_ADDRESSES: dict = {}      # (descriptor, rows, k, bits, major) -> the sorted shared byte addresses read


# ----------------------------------------------------------------------------------------------
# the register file

class Warpgroup(Warp):
    """``groups`` independent warpgroups of 128 threads, each with ``smem_bytes`` of shared memory.

    Each group is a CTA of 128 threads (4 warps: ``%tid.x`` 0-127, ``%ctaid.x`` the group).  The
    shared memory is :attr:`smem` (uint8, (groups, bytes), shared addresses from 0) and may be
    written directly between runs (:meth:`write_smem` checks it against in-flight wgmmas).
    Registers are per thread: :meth:`get` returns and :meth:`set` takes (groups, 128).
    undefined / seed: as for :class:`warpsim.Warp`.  arch: passed to :func:`warpsim.wgmma`.

    Example:

    >>> g = warpsim.Warpgroup(groups=2, smem_bytes=256)
    >>> g.run("mov.u32 %r1, %tid.x;  mul.lo.u32 %r2, %r1, %ctaid.x;").get("%r2")[:, 127]
    array([  0, 127], dtype=uint32)
    """

    lanes = 128
    _unit = "groups"

    def __init__(self, groups: int = 1, *, smem_bytes: int = 0, undefined: str = "error", seed: int = 0,
                 arch: str = "sm_90a"):
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
            raise ValueError(f"groups must be a positive integer, got {groups!r}")
        if isinstance(smem_bytes, bool) or not isinstance(smem_bytes, (int, np.integer)) or smem_bytes < 0:
            raise ValueError(f"smem_bytes must be a non-negative integer, got {smem_bytes!r}")
        super().__init__(4 * int(groups), undefined=undefined, seed=seed, arch=arch)
        self.memory = Memory(int(groups), int(smem_bytes), np.repeat(np.arange(int(groups)), 4))
        self._async = WgmmaUnit(self, 4)

    def __repr__(self):
        return f"Warpgroup(groups={self.groups}, registers={len(self._regs)}, smem_bytes={self.smem.shape[1]})"

    @property
    def groups(self) -> int:
        return self.warps // 4

    @property
    def smem(self) -> np.ndarray:
        """Shared memory, uint8 (groups, bytes): the array the statements read and write."""
        return self.memory.shared

    @property
    def in_flight(self) -> list[str]:
        """Statements of the wgmmas still in flight."""
        return self._async.in_flight

    def _geometry(self):
        W = self.warps
        tid = np.zeros((W, 32, 3), dtype=np.uint32)
        tid[..., 0] = (np.arange(W) % 4)[:, None] * 32 + np.arange(32)[None, :]
        ctaid = np.zeros((W, 3), dtype=np.uint32)
        ctaid[:, 0] = np.arange(W) // 4
        return tid, np.array([128, 1, 1], np.uint32), ctaid, np.array([self.groups, 1, 1], np.uint32), \
            (np.arange(W) % 4).astype(np.uint32), 4

    def write_smem(self, offset: int, data) -> None:
        """Write bytes into every group's shared memory at ``offset`` (checked against in-flight wgmmas)."""
        data = np.asarray(data, dtype=np.uint8)
        n = data.shape[-1]
        if offset < 0 or offset + n > self.smem.shape[1]:
            raise ValueError(f"write of {n} bytes at {offset} is outside shared memory ({self.smem.shape[1]} bytes)")
        if n:
            self._async.check_smem(np.arange(self.groups), np.full(self.groups, offset), n, None,
                                   f"write_smem({offset}, {n} bytes)")
        self.smem[:, offset:offset + n] = data

    def set(self, name, values):
        """Write a register in every thread: values broadcast to (groups, 128) (see :meth:`warpsim.Warp.set`)."""
        if isinstance(name, str) and self.is_register(name):
            self._async._conflict((name,), self._async._all, "overwrites", None, f"set({name!r})")
        super().set(name, values)
        self._async.overwrite(name, self._async._all, None, f"set({name!r})")

    def get(self, name):
        """A copy of a register in every thread, shape (groups, 128)."""
        self._async._conflict((name,), self._async._all, "reads", None, f"get({name!r})")
        return super().get(name)


def example_program(instruction) -> str:
    """A complete PTX snippet (descriptors in %rd0/%rd1, accumulator zeroed; sparse: metadata in %e0) for
    ``instruction``."""
    from ..isa.parse import parse

    ins = parse(instruction)
    pre = "%f" if ins.dtype == "f32" else "%r"
    d = "{" + ", ".join(f"{pre}{i}" for i in range(ins.words("d"))) + "}"
    imms = (", 1, 1" if ins.imm_scale else "") + (", 0, 0" if ins.imm_trans else "")
    sp = ", %e0, 0" if ins.is_sparse else ""   # sparse: metadata in %e0, selector 0
    return "\n".join([
        "wgmma.fence.sync.aligned;",
        f"{ins.opcode} {d}, %rd0, %rd1{sp}, 0{imms};",
        "wgmma.commit_group.sync.aligned;",
        "wgmma.wait_group.sync.aligned 0;",
    ])
