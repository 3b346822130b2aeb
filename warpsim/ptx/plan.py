"""Statements decoded once, for the common case of a statement running on every lane of every warp.

An ALU row (and a scalar ``mov``, a plain ``setp``, ``selp``) is resolved at its first execution to
register names whose widths passed the checks, and immediates already converted, so running it is:
read sources, compute, write, with no per-operand classification (special register? symbol?
width?).  Reads and writes go through the same conversions as :class:`Context` (``cast_read``,
``to_register``), so the words are the same.  Whatever the decoding cannot settle statically
(special registers, symbols, vectors, a width error, an undefined register) runs the general
path, which also raises every error message.
"""

from __future__ import annotations

import numpy as np

from .context import _ADDR, Context, cast_read, to_register
from .instructions import TYPES, UINT, _bytes_to, _compare, _ld, _mov, _selp, _setp, _st, _to_bytes
from .syntax import PTXError, immediate_bits, parse_int

_STORE = {1: np.bool_, 16: np.uint16, 32: np.uint32, 64: np.uint64}


class Plan:
    """fn(*sources) -> value; sources: (register name or None, typ, have, immediate); dst likewise."""

    __slots__ = ("fn", "srcs", "dst", "dt", "have", "names")

    def __init__(self, fn, srcs, dst, dt, have):
        self.fn, self.srcs, self.dst, self.dt, self.have = fn, srcs, dst, dt, have
        self.names = tuple(s[0] for s in srcs if s[0] is not None)     # registers that must be defined


def _source(machine, ctx, op, typ):
    """(name, typ, have, imm bits) of a source the plan can read directly, or None."""
    if isinstance(op, list) or not isinstance(op, str) or machine.special(op, ctx) is not None:
        return None
    if machine.is_register(op):
        have = _width(ctx, op, typ)
        return None if have is None else (op, typ, have, None)
    if machine.symbol(op) is not None or typ == "pred":
        return None
    try:
        val = immediate_bits(op, typ, TYPES[typ][0])
    except ValueError:
        return None
    return None if val is None else (None, typ, 0, val)


def predicate(machine, st, pred):
    """``pred`` if it is a predicate register (a guard the plan reads directly), else None."""
    try:
        s = _source(machine, Context(machine, st, None, None), pred, "pred")
    except PTXError:
        return None
    return None if s is None or s[0] is None else pred


def _width(ctx, name, typ):
    """The register's width if the width check of ``typ`` passes (None: the general path reports it)."""
    try:
        return ctx._check_width(name, typ, None, False)
    except PTXError:
        return None


def _address(machine, ctx, op):
    """(base register, its width, offset) of a ``[reg]`` / ``[reg+imm]`` operand, or None."""
    if not isinstance(op, str):
        return None
    mt = _ADDR.match(op.strip())
    if not mt:
        return None
    base, sign, off = mt.groups()
    offset = 0
    if off is not None:
        o = parse_int(off)
        if o is None:
            return None
        offset = -o if sign == "-" else o
    if machine.special(base, ctx) is not None or not machine.is_register(base):
        return None
    bits = machine.register_width(base, ctx)
    if bits not in (32, 64):
        return None
    return base, bits, offset & 0xFFFFFFFFFFFFFFFF


def _memory(machine, st, ctx, fn, m):
    """A plan of an ld / st of the global or shared space through a register address."""
    ops = st.operands
    space = (m["space"] or "generic").split("::")[0]
    if machine.memory is None or space not in ("global", "shared") or "L2::cache_hint" in st.opcode or len(ops) != 2:
        return None
    t = m["t"]
    bits = TYPES[t][0]
    n = int(m["vec"] or 1)
    ctx.relaxed = True
    if fn is _ld:
        regs, where = ops[0], ops[1]
    else:
        where, regs = ops[0], ops[1]
    regs = regs if isinstance(regs, list) else [regs]
    if len(regs) != n:
        return None
    addr = _address(machine, ctx, where)
    if addr is None:
        return None
    if fn is _ld:
        dsts = []
        for r in regs:
            if r == "_":
                dsts.append(None)
                continue
            if not isinstance(r, str) or not machine.is_register(r):
                return None
            have = _width(ctx, r, t)
            if have is None:
                return None
            dsts.append((r, have))
        return MemPlan(True, space, addr, tuple(dsts), t, bits)
    srcs = []
    for r in regs:
        s = _source(machine, ctx, r, f"b{bits}" if bits >= 8 else t)
        if s is None:
            return None
        srcs.append(s)
    return MemPlan(False, space, addr, tuple(srcs), t, bits)


class MemPlan:
    """An ld (load=True: parts are (register, width) or None for '_') or st (parts are sources)."""

    __slots__ = ("load", "space", "addr", "parts", "t", "bits")

    def __init__(self, load, space, addr, parts, t, bits):
        self.load, self.space, self.addr, self.parts, self.t, self.bits = load, space, addr, parts, t, bits


def build(machine, st, kind, fn, nsrc, m):
    """The statement's plan, or None when it takes the general path."""
    try:
        return _build(machine, st, kind, fn, nsrc, m)
    except PTXError:            # e.g. a special register with a wrong suffix: the general path says so
        return None


def _build(machine, st, kind, fn, nsrc, m):
    ops = st.operands
    ctx = Context(machine, st, None, None)
    if kind == "alu":
        if len(ops) != nsrc + 1:
            return None                 # the general path names the operand count
        dt, typs = st.__dict__.get("alu_types") or _alu_types(st, m)
        srcs, dst = list(zip(ops[1:], typs)), ops[0]
        run = (lambda f, mm: lambda *a: f(mm, *a))(fn, m)
    elif fn is _mov:
        if len(ops) != 2:
            return None
        dt = m["t"]
        srcs, dst, run = [(ops[1], dt)], ops[0], (lambda a: a)
    elif fn is _setp:
        if len(ops) != 3 or m["bop"] or not isinstance(ops[0], str) or "|" in ops[0]:
            return None
        cmp, dt = m["cmp"], "pred"
        srcs, dst, run = [(ops[1], m["st"]), (ops[2], m["st"])], ops[0], (lambda a, b: _compare(cmp, a, b))
    elif fn is _selp:
        if len(ops) != 4:
            return None
        dt = m["t"]
        srcs, dst, run = [(ops[3], "pred"), (ops[1], dt), (ops[2], dt)], ops[0], (lambda c, a, b: np.where(c, a, b))
    elif fn is _ld or fn is _st:
        return _memory(machine, st, ctx, fn, m)
    else:
        return None
    resolved = []
    for op, typ in srcs:
        s = _source(machine, ctx, op, typ)
        if s is None:
            return None
        resolved.append(s)
    if isinstance(dst, list) or not isinstance(dst, str) or dst == "_" or not machine.is_register(dst):
        return None
    have = machine.register_width(dst, ctx)
    if have != TYPES[dt][0]:
        return None
    return Plan(run, tuple(resolved), dst, dt, have)


def _read(regs, src, shape, hook, ctx):
    name, typ, have, imm = src
    bits, dt = TYPES[typ]
    if name is None:
        return np.full(shape, imm, dtype=UINT[bits]).view(dt)
    if hook is not None:
        hook.on_read(name, ctx)
    if have == bits and bits > 1:       # cast_read of a register of the type's width: a view
        return regs[name].view(dt)
    return cast_read(regs[name], typ, have, bits, dt)


def _write(regs, name, value, typ, have, shape, hook, ctx):
    new = to_register(value, typ, have, shape)
    if hook is not None:
        hook.on_write(name, ctx)
    regs[name] = np.array(new, dtype=_STORE[have])


def run(machine, st, plan):
    """Execute on all warps, all lanes; False (nothing done) if a source register is undefined."""
    regs = machine._regs
    if type(plan) is MemPlan:
        return _run_memory(machine, st, plan, regs)
    for name in plan.names:
        if name not in regs:
            return False
    shape = (machine.warps, 32)
    hook = machine._async
    ctx = Context(machine, st, None, None) if hook is not None else None
    vals = [_read(regs, src, shape, hook, ctx) for src in plan.srcs]
    with np.errstate(all="ignore"):
        out = plan.fn(*vals)
    _write(regs, plan.dst, out, plan.dt, plan.have, shape, hook, ctx)
    return True


def _run_memory(machine, st, plan, regs):
    base, abits, offset = plan.addr
    if base not in regs or not plan.load and any(s[0] is not None and s[0] not in regs for s in plan.parts):
        return False
    shape = (machine.warps, 32)
    hook = machine._async
    ctx = Context(machine, st, None, None)
    ctx.relaxed = True
    bits, t = plan.bits, plan.t
    if not plan.load:
        parts = [_to_bytes(_read(regs, s, shape, hook, ctx), bits) for s in plan.parts]
    if hook is not None:
        hook.on_read(base, ctx)
    if abits == 64 and offset == 0:
        addr = regs[base]       # the register's words as they are (memory never writes an address array)
    else:
        ut = f"u{abits}"
        addr = cast_read(regs[base], ut, abits, abits, TYPES[ut][1]).astype(np.uint64, copy=False) + np.uint64(offset)
    if not plan.load:
        machine.memory.store(plan.space, addr, parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1),
                             bits // 8, ctx)
        return True
    data = machine.memory.load(plan.space, addr, len(plan.parts) * bits // 8, bits // 8, ctx)
    for i, d in enumerate(plan.parts):
        v = _bytes_to(data[..., i * bits // 8:(i + 1) * bits // 8], bits)
        if d is None:
            continue
        _write(regs, d[0], v.view(TYPES[t][1]) if t[0] == "s" else v, t, d[1], shape, hook, ctx)
    return True


def _alu_types(st, m):
    """(destination type, source types) of an ALU row's statement."""
    gd = m.groupdict()
    t = gd.get("t")
    st_ = gd.get("st") or t
    dt = gd.get("dt") or t
    if dt is None:      # mul.wide: destination twice the source width
        bits = TYPES[st_][0] * 2 if st.opcode.startswith(("mul.wide", "mad.wide")) else 32
        dt = f"{st_[0]}{bits}" if st_[0] in "su" else f"b{bits}"
        if st_.startswith("b") and not st.opcode.startswith(("mul", "mad")):
            dt = "u32"
    typs = []
    for i in range(len(st.operands) - 1):
        typ = st_
        if st.opcode.startswith(("shl", "shr")) and i == 1:
            typ = "u32"
        if st.opcode.startswith(("bfe", "bfi")) and i >= (1 if st.opcode.startswith("bfe") else 2):
            typ = "u32"
        if st.opcode.startswith("mad.wide") and i == 2:
            typ = dt
        typs.append(typ)
    return dt, typs
