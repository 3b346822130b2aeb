"""A 32-lane register file that executes PTX ``mma`` / ``mma.sp`` statements written as in a kernel.

>>> w = Warp()
>>> w.run('''
...     mov.b32 %r0, 0x01010101;      // A: every s8 element 1
...     mov.b32 %r1, %r0;
...     mov.b32 %r2, 0x02020202;      // B: every s8 element 2
...     mov.b32 %r3, 0;               // C
...     mov.b32 %r4, 0;
...     mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r5,%r6}, {%r1}, {%r2}, {%r3,%r4};
... ''')
Warp(warps=1, registers=7)
>>> int(w.get("%r5")[0, 0])
32

Registers are named as in PTX (``%r0``, ``%f3``, ``%rd1``, ``%fd2``: any ``%[a-z]+[0-9]*``).
``%rd*`` and ``%fd*`` are 64-bit and hold uint64 values; every other register holds 32-bit words.
Values are per lane: :meth:`Warp.get` returns shape (warps, 32).

Supported statements: ``mma``/``mma.sp`` (every opcode of the catalog), ``mov`` with types
b32/u32/s32/f32/b64/u64/s64/f64 (immediate, register or ``%laneid`` source), ``.reg``
declarations (ignored), ``//`` and ``/* */`` comments and blank lines.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

__all__ = ["Warp", "PTXError", "example_statement"]

_REG = re.compile(r"%[a-z]+[0-9]*\Z")
_WIDE_PREFIXES = ("rd", "fd")
_MOV_TYPES = {"b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}
_SPECIAL = {"%laneid"}


class PTXError(ValueError):
    """A PTX snippet that cannot be executed; ``line``, ``statement`` and ``token`` say where."""

    def __init__(self, message, *, line=None, statement=None, token=None):
        self.reason = message
        self.line = line
        self.statement = statement
        self.token = token
        where = []
        if line is not None:
            where.append(f"line {line}")
        if token is not None:
            where.append(f"at {token!r}")
        head = f"PTX {', '.join(where)}: " if where else ""
        text = f"{head}{message}"
        if statement is not None:
            text += f"\n  in: {statement}"
            m = re.search(re.escape(token) + r"(?![0-9A-Za-z_])", statement) if token is not None else None
            if m:
                text += "\n      " + " " * m.start() + "^" * len(token)
        super().__init__(text)


def register_bits(name: str) -> int:
    """64 for ``%rd*``/``%fd*``, 32 for every other register name."""
    if not isinstance(name, str) or not _REG.match(name):
        raise PTXError(f"{name!r} is not a register name: registers look like %r0, %f3, %rd1, %fd2 (%[a-z]+[0-9]*)")
    prefix = name[1:].rstrip("0123456789")
    return 64 if prefix in _WIDE_PREFIXES else 32


def _strip_comments(text: str) -> str:
    """Replace comments by blanks, keeping newlines so line numbers stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                line = text.count("\n", 0, i) + 1
                raise PTXError("unterminated /* comment", line=line)
            chunk = text[i:j + 2]
            out.append("".join(c if c == "\n" else " " for c in chunk))
            i = j + 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _statements(text: str):
    """Yield (line, statement text) for every ';'-terminated statement."""
    clean = _strip_comments(text)
    pos = 0
    for part in clean.split(";")[:-1]:
        stripped = part.strip()
        if stripped:
            lead = len(part) - len(part.lstrip())
            line = clean.count("\n", 0, pos + lead) + 1
            yield line, " ".join(stripped.split())
        pos += len(part) + 1
    tail = clean.split(";")[-1].strip()
    if tail:
        lead = len(clean.split(";")[-1]) - len(clean.split(";")[-1].lstrip())
        line = clean.count("\n", 0, pos + lead) + 1
        raise PTXError("statement is missing its terminating ';'", line=line, statement=" ".join(tail.split()))


def _split_operands(s: str, line: int, stmt: str):
    """Top-level comma split; '{a, b}' groups become lists."""
    ops, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
            if depth > 1:
                raise PTXError("nested '{'", line=line, statement=stmt, token="{")
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise PTXError("unbalanced '}'", line=line, statement=stmt, token="}")
        if ch == "," and depth == 0:
            ops.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise PTXError("unbalanced '{'", line=line, statement=stmt, token="{")
    last = "".join(cur).strip()
    if last or ops:
        ops.append(last)
    out = []
    for op in ops:
        if not op:
            raise PTXError("empty operand", line=line, statement=stmt, token=",")
        if op.startswith("{"):
            inner = op[1:-1].strip()
            regs = [r.strip() for r in inner.split(",")] if inner else []
            if any(not r for r in regs):
                raise PTXError("empty register in vector operand", line=line, statement=stmt, token=op)
            out.append(regs)
        else:
            out.append(op)
    return out


def _parse_int(tok: str) -> int | None:
    t = tok.strip()
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.endswith("U"):
        t = t[:-1]
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", t):
            v = int(t, 16)
        elif re.fullmatch(r"0[bB][01]+", t):
            v = int(t[2:], 2)
        elif re.fullmatch(r"0[0-7]+", t):
            v = int(t, 8)
        elif re.fullmatch(r"[0-9]+", t):
            v = int(t, 10)
        else:
            return None
    except ValueError:
        return None
    return -v if neg else v


def _immediate_bits(tok: str, typ: str, bits: int) -> int | None:
    """The bit pattern of an immediate for a mov of type ``typ``, or None if it is not one."""
    t = tok.strip()
    m = re.fullmatch(r"(-?)0([fFdD])([0-9a-fA-F]+)", t)
    if m:
        sign, kind, digits = m.groups()
        want = 8 if kind in "fF" else 16
        if len(digits) != want:
            return None
        v = int(digits, 16)
        if kind in "fF":
            v = int(np.array(v, dtype=np.uint32).view(np.float32).astype(np.float64).view(np.uint64)) if bits == 64 else v
        elif bits == 32:
            v = int(np.array(v, dtype=np.uint64).view(np.float64).astype(np.float32).view(np.uint32))
        if sign:
            v ^= 1 << (bits - 1)
        return v
    v = _parse_int(t)
    if v is not None:
        if typ.startswith("f"):   # an integer literal for a float mov means that value
            v = None
        else:
            if not -(1 << (bits - 1)) <= v < (1 << bits):
                raise ValueError(f"immediate {tok} does not fit in {bits} bits")
            return v & ((1 << bits) - 1)
    if typ.startswith("f"):
        try:
            x = float(t)
        except ValueError:
            return None
        fdt, udt = (np.float32, np.uint32) if bits == 32 else (np.float64, np.uint64)
        return int(np.array(x, dtype=fdt).view(udt))
    return None


class Warp:
    """Per-lane PTX registers for ``warps`` independent warps, and a tiny PTX interpreter.

    undefined: what reading a register that was never written does -- ``"error"`` (default,
    raises :class:`PTXError`), ``"zero"``, or ``"random"`` (seeded by ``seed`` and the name).
    arch: passed to :func:`warpsim.mma`.
    """

    #: threads per unit (a warp); the warpgroup register file (warpsim.ptx.warpgroup) uses 128
    lanes = 32
    _unit = "warps"

    def __init__(self, warps: int = 1, *, undefined: str = "error", seed: int = 0, arch: str = "sm_90"):
        if isinstance(warps, bool) or not isinstance(warps, (int, np.integer)) or warps < 1:
            raise ValueError(f"warps must be a positive integer, got {warps!r}")
        if undefined not in ("error", "zero", "random"):
            raise ValueError(f"undefined must be 'error', 'zero' or 'random', not {undefined!r}")
        self.warps = int(warps)
        self.undefined = undefined
        self.seed = seed
        self.arch = arch
        self._regs: dict[str, np.ndarray] = {}

    # --- register access ----------------------------------------------------

    def __repr__(self):
        return f"Warp(warps={self.warps}, registers={len(self._regs)})"

    def __contains__(self, name):
        return name in self._regs

    @property
    def names(self) -> list[str]:
        """Defined register names, in a natural order (%f2 before %f10)."""
        def key(n):
            p = n[1:].rstrip("0123456789")
            num = n[1 + len(p):]
            return (p, int(num) if num else -1)
        return sorted(self._regs, key=key)

    def set(self, name: str, values) -> None:
        """Write a register in every lane.

        values broadcast to (warps, 32): a scalar, 32 lane values or (warps, 32).  Integers must
        fit the register (negative values are stored two's complement); float32 arrays (32-bit
        registers) and float64 arrays (64-bit registers) are stored as their bit patterns.
        """
        bits = register_bits(name)
        udt = np.uint32 if bits == 32 else np.uint64
        v = np.asarray(values)
        if v.dtype.kind == "f":
            want = np.float32 if bits == 32 else np.float64
            if v.dtype != want:
                raise TypeError(f"{name} is a {bits}-bit register: float values must be {np.dtype(want).name}, "
                                f"got {v.dtype} (convert them first, or pass the bit patterns as integers)")
            v = v.view(udt)
        elif v.dtype.kind in "iu":
            if v.size and (int(v.min()) < -(1 << (bits - 1)) or int(v.max()) >= (1 << bits)):
                raise ValueError(f"{name} is a {bits}-bit register: values must lie in [-2**{bits - 1}, 2**{bits})")
            v = v.astype(np.int64).astype(udt) if v.dtype.kind == "i" else v.astype(udt)
        elif v.dtype.kind == "b":
            v = v.astype(udt)
        else:
            raise TypeError(f"cannot store {v.dtype} values in register {name}")
        try:
            out = np.broadcast_to(v, (self.warps, self.lanes))
        except ValueError:
            raise ValueError(f"values for {name} must broadcast to ({self._unit}, {self.lanes}) = ({self.warps}, {self.lanes}), "
                             f"got shape {v.shape}") from None
        self._regs[name] = np.array(out, dtype=udt)

    def get(self, name: str) -> np.ndarray:
        """A copy of a register in every lane: uint32 (or uint64 for %rd/%fd) of shape (warps, 32)."""
        return self._read(name).copy()

    def _read(self, name, line=None, stmt=None):
        if name == "%laneid":
            return np.broadcast_to(np.arange(self.lanes, dtype=np.uint32) % 32, (self.warps, self.lanes))
        bits = register_bits(name)
        if name not in self._regs:
            if self.undefined == "error":
                raise PTXError(f"register {name} is used before it is defined (set it with Warp.set or a mov)",
                               line=line, statement=stmt, token=name)
            udt = np.uint32 if bits == 32 else np.uint64
            if self.undefined == "zero":
                self._regs[name] = np.zeros((self.warps, self.lanes), dtype=udt)
            else:
                rng = np.random.default_rng(zlib.crc32(f"{self.seed}:{name}".encode()))
                self._regs[name] = rng.integers(0, 1 << 64, size=(self.warps, self.lanes), dtype=np.uint64).astype(udt)
        return self._regs[name]

    # --- execution ----------------------------------------------------------

    def run(self, text: str) -> "Warp":
        """Execute PTX statements in order; returns the register file (for chaining)."""
        if not isinstance(text, str):
            raise TypeError(f"PTX text must be a str, not {type(text).__name__}")
        for line, stmt in _statements(text):
            self._statement(line, stmt)
        return self

    def _statement(self, line, stmt):
        if stmt.startswith("@"):
            raise PTXError("predicated statements are not supported", line=line, statement=stmt, token=stmt.split()[0])
        if stmt.startswith(".reg"):
            return
        parts = stmt.split(None, 1)
        op = parts[0]
        rest = parts[1] if len(parts) > 1 else ""
        operands = _split_operands(rest, line, stmt)
        if op.startswith("mma"):
            return self._mma(line, stmt, op, operands)
        if op.startswith("mov"):
            return self._mov(line, stmt, op, operands)
        raise PTXError(f"unsupported instruction '{op}': the register file executes mma, mma.sp and mov "
                       "(plus .reg declarations)", line=line, statement=stmt, token=op)

    def _mov(self, line, stmt, op, operands):
        toks = op.split(".")
        if len(toks) != 2 or toks[1] not in _MOV_TYPES:
            raise PTXError(f"unsupported mov form '{op}'; supported: " + ", ".join(f"mov.{t}" for t in _MOV_TYPES),
                           line=line, statement=stmt, token=op)
        typ = toks[1]
        bits = _MOV_TYPES[typ]
        if len(operands) != 2 or any(isinstance(o, list) for o in operands):
            raise PTXError(f"{op} takes 2 operands (destination register, source), got {len(operands)}",
                           line=line, statement=stmt, token=op)
        dst, src = operands
        self._check_reg(dst, bits, line, stmt, f"destination of {op}")
        if src.startswith("%"):
            if src != "%laneid":
                self._check_reg(src, bits, line, stmt, f"source of {op}")
            v = self._read(src, line, stmt)
            self._regs[dst] = np.array(v, dtype=np.uint32 if bits == 32 else np.uint64)
            return
        try:
            val = _immediate_bits(src, typ, bits)
        except ValueError as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=src) from None
        if val is None:
            raise PTXError(f"'{src}' is not a register or an immediate of type .{typ} "
                           "(integers: 42, -1, 0x2A, 0b101; floats: 1.5, 0f3F800000, 0d3FF0000000000000)",
                           line=line, statement=stmt, token=src)
        udt = np.uint32 if bits == 32 else np.uint64
        self._regs[dst] = np.full((self.warps, self.lanes), val, dtype=udt)

    def _check_reg(self, name, bits, line, stmt, what):
        if isinstance(name, list):
            raise PTXError(f"{what} must be a single register, not a vector", line=line, statement=stmt,
                           token="{" + ",".join(name) + "}" if "{" in stmt else None)
        if not _REG.match(name):
            raise PTXError(f"{what}: {name!r} is not a register name (%[a-z]+[0-9]*)", line=line, statement=stmt, token=name)
        have = register_bits(name)
        if have != bits:
            hint = "use a %rd/%fd register" if bits == 64 else "use a 32-bit register such as %r or %f"
            raise PTXError(f"{what} must be a {bits}-bit register but {name} is {have}-bit ({hint})",
                           line=line, statement=stmt, token=name)

    def _mma(self, line, stmt, op, operands):
        from .._api import mma
        from ..isa.parse import parse

        try:
            ins = parse(op)
        except ValueError as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
        roles = ["d", "a", "b", "c"]
        if ins.is_sparse:
            want = "6 operands: {d}, {a}, {b}, {c}, metadata register, sparsity selector"
        else:
            want = "4 operands: {d}, {a}, {b}, {c}"
        need = 6 if ins.is_sparse else 4
        counts = ", ".join(f"{r.upper()} {ins.registers(r)}" for r in roles)
        if len(operands) != need:
            raise PTXError(f"{ins.opcode} takes {want}; got {len(operands)} "
                           f"(registers per vector operand: {counts})", line=line, statement=stmt, token=op)
        vecs = {}
        for role, o in zip(roles, operands):
            regs = o if isinstance(o, list) else [o]
            n = ins.registers(role)
            if len(regs) != n:
                shown = "{" + ", ".join(regs) + "}" if isinstance(o, list) else o
                raise PTXError(f"operand {role.upper()} of {ins.opcode} needs {n} register(s), got {len(regs)} "
                               f"(registers per vector operand: {counts})", line=line, statement=stmt,
                               token=_find_token(stmt, regs, shown))
            bits = 64 if ins.elem(role).bits == 64 else 32
            for r in regs:
                self._check_reg(r, bits, line, stmt, f"operand {role.upper()} (.{ins.elem(role).name})")
            vecs[role] = regs
        words = {}
        for role in "abc":
            cols = []
            for r in vecs[role]:
                v = self._read(r, line, stmt)
                if v.dtype == np.uint64:
                    cols += [(v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)]
                else:
                    cols.append(v)
            words[role] = np.stack(cols, axis=-1)
        e, sel = None, 0
        if ins.is_sparse:
            meta, seltok = operands[4], operands[5]
            self._check_reg(meta, 32, line, stmt, "sparse metadata operand")
            e = np.ascontiguousarray(self._read(meta, line, stmt))
            if isinstance(seltok, list) or _parse_int(seltok) is None:
                raise PTXError(f"the sparsity selector must be an integer immediate (allowed: {list(ins.selectors)})",
                               line=line, statement=stmt, token=seltok if isinstance(seltok, str) else None)
            sel = _parse_int(seltok)
            if sel not in ins.selectors:
                raise PTXError(f"sparsity selector {seltok} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}",
                               line=line, statement=stmt, token=seltok)
        try:
            d = mma(ins.opcode, words["a"], words["b"], words["c"], e, selector=sel, arch=self.arch)
        except (ValueError, TypeError) as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
        if ins.elem("d").bits == 64:
            d64 = d.astype(np.uint64)
            vals = [d64[..., 2 * i] | (d64[..., 2 * i + 1] << np.uint64(32)) for i in range(len(vecs["d"]))]
        else:
            vals = [d[..., i] for i in range(len(vecs["d"]))]
        for r, v in zip(vecs["d"], vals):
            self._regs[r] = np.ascontiguousarray(v)


def _find_token(stmt, regs, shown):
    if shown in stmt:
        return shown
    for r in regs:
        if r in stmt:
            return r
    return None


def example_statement(instruction, selector: int = 0) -> str:
    """A PTX statement for ``instruction`` with conventional register names, e.g. for documentation."""
    from ..isa.parse import parse

    ins = parse(instruction)
    counters: dict[str, int] = {}

    def regs(role):
        t = ins.elem(role)
        prefix = "fd" if t.bits == 64 else ("f" if t.name in ("f32", "tf32") and role in "cd" else "r")
        out = []
        for _ in range(ins.registers(role)):
            i = counters.get(prefix, 0)
            counters[prefix] = i + 1
            out.append(f"%{prefix}{i}")
        return "{" + ", ".join(out) + "}"

    a, b, c = regs("a"), regs("b"), regs("c")
    d = regs("d")
    tail = ""
    if ins.is_sparse:
        i = counters.get("r", 0)
        tail = f", %r{i}, {selector:#x}"
    return f"{ins.opcode} {d}, {a}, {b}, {c}{tail};"
