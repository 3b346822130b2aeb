"""Generic plumbing of one statement's execution: typed operand reads and writes with register
widths, immediates, special registers, symbols and predicate guards; addresses; errors."""

from __future__ import annotations

import re

import numpy as np

from .instructions import TYPES, UINT
from .syntax import PTXError, immediate_bits, parse_int

_ADDR = re.compile(r"\[\s*([^\]+\-\s]+)\s*(?:([+-])\s*([^\]\s]+))?\s*\]\Z")


class Context:
    """One statement executing on a group of warps (``rows``: None = all warps of the machine)."""

    def __init__(self, machine, stmt, rows, mask):
        self.machine = machine
        self.stmt = stmt
        self.opcode = stmt.opcode
        self.operands = stmt.operands
        self.rows = rows
        self.mask = mask                  # (g, 32) bool lanes that execute, or None for all
        self.shape = (machine.warps if rows is None else len(rows), 32)
        self.relaxed = False              # ld/st/cvt: registers wider than the type are allowed
        self.memory = machine.memory if machine.memory is not None else _NoMemory(self)

    # --- errors -------------------------------------------------------------------------------

    def fail(self, message, token=None):
        raise PTXError(message, line=self.stmt.line, statement=self.stmt.text,
                       token=token if token is not None else self.opcode)

    def need(self, n):
        if len(self.operands) != n:
            self.fail(f"{self.opcode} takes {n} operand(s), got {len(self.operands)}")
        return self.operands

    def require_converged(self):
        if self.mask is not None and not (self.mask.all(axis=1) | ~self.mask.any(axis=1)).all():
            k = int(np.argmin(self.mask.all(axis=1) | ~self.mask.any(axis=1)))
            w = k if self.rows is None else int(self.rows[k])
            on, off = np.nonzero(self.mask[k])[0], np.nonzero(~self.mask[k])[0]
            show = lambda x: ", ".join(map(str, x[:8])) + (", ..." if len(x) > 8 else "")
            self.fail(f"{self.opcode} needs every lane of the warp (.sync.aligned), but in warp {w} lanes "
                      f"{show(on)} execute it and lanes {show(off)} do not (a divergent branch, lanes that "
                      "left, or a guard that differs between lanes)")

    def require_members(self, members):
        """A ``.sync`` warp collective (shfl.sync, vote.sync, bar.warp.sync): in every warp, the lanes
        that execute it together must be exactly its membermask (``members``: the operand as read,
        (g, 32)).  A divergent warp may run one when the mask names just the lanes on this path;
        a mask naming lanes that are elsewhere, have left or are predicated off is refused (on the
        GPU those lanes would have to arrive at this same statement)."""
        active = np.ones(self.shape, dtype=bool) if self.mask is None else self.mask
        bits = (active.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
        mm = np.asarray(members).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        bad = active & (mm != bits[:, None])
        if bad.any():
            k, lane = (int(x) for x in np.argwhere(bad)[0])
            w = k if self.rows is None else int(self.rows[k])
            want = int(mm[k, lane])
            named = [i for i in range(32) if want >> i & 1]
            on = np.nonzero(active[k])[0]
            show = lambda x: ", ".join(map(str, list(x)[:8])) + (", ..." if len(x) > 8 else "") if len(x) else "none"
            missing = [i for i in named if not active[k, i]]
            extra = [i for i in on if not want >> int(i) & 1]
            why = (f"lanes {show(missing)} of the mask do not (a divergent branch, lanes that left, or a guard)"
                   if missing else "")
            why += ("; " if why else "") + (f"lanes {show(extra)} are not in the mask" if extra else "")
            self.fail(f"{self.opcode}: in warp {w} lanes {show(on)} execute it together with membermask "
                      f"0x{want:08x} (lane {lane}), but {why}; warpsim runs a .sync collective only when its "
                      "membermask is exactly the lanes that reach it together")

    def param_store(self, op, data):
        store = getattr(self.machine, "param_store", None)
        if store is None:
            self.fail("st.param writes a function's .param variables: it needs a kernel (warpsim.ptx.load)")
        store(op, np.broadcast_to(data, self.shape + data.shape[-1:]), self)

    # --- registers ----------------------------------------------------------------------------

    def _reg_bits(self, name, token_ctx=None):
        return self.machine.register_width(name, self)

    def _check_width(self, name, typ, what, write):
        have = self._reg_bits(name)
        want = TYPES[typ][0]
        if have == want:
            return have
        if want == 1 or have == 1:
            self.fail(f"{what or 'operand'}: {name} is a {'predicate' if have == 1 else f'{have}-bit register'} "
                      f"but .{typ} needs a {'predicate' if want == 1 else f'{want}-bit register'}", token=name)
        if self.relaxed and have > want:
            return have
        if want == 8 and have in (16, 32):
            return have
        hint = "use a %rd/%fd register" if want == 64 else ("use a 32-bit register such as %r or %f" if want == 32
                                                            else "use a 16-bit register such as %rs or %h")
        self.fail(f"{what or 'operand'} must be a {want}-bit register but {name} is {have}-bit ({hint})", token=name)

    def read(self, op, typ, what=None):
        """Operand ``op`` as a (g, 32) array of the numpy type of PTX type ``typ``."""
        bits, dt = TYPES[typ]
        if isinstance(op, list):
            self.fail(f"{what or 'this operand'} must be a single register, not a vector",
                      token="{" + ", ".join(op) + "}")
        m = self.machine
        sp = m.special(op, self)
        if sp is not None:
            v = sp
            if typ == "pred":
                self.fail(f"{op} is not a predicate", token=op)
            return self._cast_bits(v.astype(np.uint64), bits, dt)
        if m.is_register(op):
            have = self._check_width(op, typ, what, False)
            return cast_read(m.read_register(op, self), typ, have, bits, dt)
        sym = m.symbol(op)
        if sym is not None:
            return self._cast_bits(np.full(self.shape, sym, dtype=np.uint64), bits, dt)
        if typ == "pred":
            v = parse_int(op) if isinstance(op, str) else None
            if v is None or v not in (0, 1, -1):
                self.fail(f"{op!r} is not a predicate register or a predicate immediate (0, 1 or -1)", token=op)
            return np.full(self.shape, v != 0, dtype=bool)
        try:
            val = immediate_bits(op, typ, bits)
        except ValueError as exc:
            self.fail(str(exc), token=op)
        if val is None:
            if op.startswith("%"):
                self.fail(f"{what or 'operand'}: {op!r} is not a register name (%[a-z]+[0-9]*) or a special register",
                          token=op)
            self.fail(f"'{op}' is not a register or an immediate of type .{typ} "
                      "(integers: 42, -1, 0x2A, 0b101; floats: 1.5, 0f3F800000, 0d3FF0000000000000)", token=op)
        return np.full(self.shape, val, dtype=UINT[bits]).view(dt)

    @staticmethod
    def _cast_bits(v, bits, dt):
        if v.dtype == np.bool_:
            v = v.astype(np.uint64)
        return v.astype(UINT[bits]).view(dt) if v.dtype != UINT[bits] else v.view(dt)

    def write(self, op, value, typ, what=None):
        """Store ``value`` (array of PTX type ``typ``) into register ``op`` in the executing lanes."""
        bits, dt = TYPES[typ]
        m = self.machine
        if isinstance(op, list):
            self.fail(f"{what or 'the destination'} must be a single register, not a vector",
                      token="{" + ", ".join(op) + "}")
        if op == "_":
            return
        if not m.is_register(op):
            self.fail(f"{what or 'destination'}: {op!r} is not a register name (%[a-z]+[0-9]*)", token=op)
        have = self._check_width(op, typ, what, True)
        m.write_register(op, to_register(value, typ, have, self.shape), self)

    # --- addresses ----------------------------------------------------------------------------

    def address(self, op):
        """A memory operand ``[reg]``, ``[reg+imm]``, ``[symbol]``, ``[symbol+imm]`` or ``[imm]`` ->
        (g, 32) uint64 addresses."""
        if not isinstance(op, str):
            self.fail("a memory operand looks like [%rd1], [%r2+16] or [name]")
        mt = _ADDR.match(op.strip())
        if not mt:
            self.fail(f"{op!r} is not a memory operand ([%rd1], [%r2+16], [name+8])", token=op)
        base, sign, off = mt.groups()
        offset = 0
        if off is not None:
            o = parse_int(off)
            if o is None:
                self.fail(f"the offset in {op!r} must be an integer immediate", token=op)
            offset = -o if sign == "-" else o
        m = self.machine
        if m.is_register(base) or m.special(base, self) is not None:
            bits = self._reg_bits(base) if m.is_register(base) else 32
            v = self.read(base, f"u{bits}" if bits in (32, 64) else "u64").astype(np.uint64)
        else:
            sym = m.symbol(base)
            if sym is None:
                imm = parse_int(base)
                if imm is None:
                    self.fail(f"{base!r} in {op!r} is neither a register nor a declared variable", token=base)
                sym = imm
            v = np.full(self.shape, sym, dtype=np.uint64)
        return v + np.uint64(offset & 0xFFFFFFFFFFFFFFFF)

    def check_aligned(self, addr, align, what, lane0=0):
        """For .sync.aligned instructions (every lane of an executing warp takes part); ``addr``
        holds lanes lane0, lane0 + 1, ..."""
        bad = (addr % np.uint64(align) if align & (align - 1) else addr & np.uint64(align - 1)) != 0
        if bad.any():
            w, lane = np.argwhere(bad)[0]
            self.fail(f"{what} 0x{int(addr[w, lane]):x} (lane {lane + lane0}) is not {align}-byte aligned")

    def lane_mask(self, lanes=None):
        if self.mask is None:
            return None
        return self.mask if lanes is None else self.mask[:, lanes]

    def param_bytes(self, op, nbytes):
        return self.machine.param_bytes(op, nbytes, self)

    def barrier(self):
        self.machine.barrier(self)


def cast_read(v, typ, have, bits, dt):
    """A register's stored words ``v`` (``have`` bits) as values of PTX type ``typ`` (bits, dt)."""
    if typ == "pred":
        return v.astype(bool)
    return Context._cast_bits(v.astype(np.uint64) if have != bits else v, bits, dt)


def to_register(value, typ, have, shape):
    """A value of PTX type ``typ`` as the words a ``have``-bit register stores, broadcast to ``shape``."""
    bits, dt = TYPES[typ]
    v = np.asarray(value)
    if have == 1:
        b = v.astype(bool)
        return b if b.shape == shape else np.broadcast_to(b, shape)
    if v.dtype == np.bool_:
        v = v.astype(UINT[bits])
    if v.dtype.kind == "f":
        v = v.astype(dt).view(UINT[bits])
    elif v.dtype.itemsize * 8 != bits:
        v = v.astype(UINT[bits]) if v.dtype.kind == "u" else v.astype(np.dtype(f"i{bits // 8}") if bits > 1 else bool)
    # no copy here: write_register copies (or assigns into) the register
    u = v.view(UINT[bits]) if v.dtype.kind == "i" else v.astype(UINT[bits], copy=False)
    if have != bits:
        if typ[0] == "s":   # sign-extend into the wider register
            u = u.view(np.dtype(f"i{bits // 8}")).astype(np.int64).astype(UINT[have])
        else:
            u = u.astype(UINT[have])
    return u if u.shape == shape else np.broadcast_to(u, shape)


class _NoMemory:
    """A Warp snippet has registers only."""

    def __init__(self, ctx):
        self._ctx = ctx

    def _fail(self, *args, **kwargs):
        self._ctx.fail(f"{self._ctx.opcode} needs memory, and a Warp has registers only: put the statements "
                       "in a kernel and run it with warpsim.ptx.load(...).launch(...)")

    load = store = cvta = _fail
