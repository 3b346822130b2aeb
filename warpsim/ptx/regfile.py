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

Registers are named as in PTX; without a ``.reg`` declaration ``%rd*``/``%fd*`` are 64-bit,
``%p*`` predicates, ``%rs*``/``%h*`` 16-bit and every other name 32-bit (a ``.reg`` declaration,
``.reg .b16 %x<4>;``, gives the width explicitly).

Supported statements: ``mma``/``mma.sp`` (every opcode of the catalog) and every instruction of
:mod:`warpsim.ptx.instructions` that needs no memory (``mov`` with vector pack/unpack, ``cvt``,
integer and logic ALU, ``setp``/``selp``, ``movmatrix``, ...), ``@p``/``@!p`` guards, ``.reg``
declarations, ``//`` and ``/* */`` comments.  Memory, branches and barriers across warps need a
kernel: :func:`warpsim.ptx.load`.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from . import plan as _plan
from .plan import _alu_types
from .context import Context, to_register
from .instructions import TYPES, known_bases, lookup
from .syntax import PTXError, make_statement, parse_int, statements

__all__ = ["Warp", "PTXError", "example_statement", "register_bits"]

_REG = re.compile(r"%[a-z]+[0-9]*\Z")
_WIDE_PREFIXES = ("rd", "fd")
_PRED_PREFIXES = ("p",)
_HALF_PREFIXES = ("rs", "h")
_STORE = {1: np.bool_, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SPECIAL = re.compile(r"%(laneid|warpid|nwarpid|tid|ntid|ctaid|nctaid|lanemask_(?:eq|lt|le|gt|ge)|clock|clock_hi|clock64|"
                      r"globaltimer|globaltimer_lo|globaltimer_hi|smid|nsmid|gridid|dynamic_smem_size|"
                      r"total_smem_size|aggr_smem_size|clusterid|nclusterid|cluster_ctaid|cluster_nctaid|"
                      r"cluster_ctarank|cluster_nctarank|is_explicit_cluster)(?:\.([xyz]))?\Z")
_AXES = ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid")
#: an H100 SXM has 132 SMs; CTA c is reported on SM c % 132
NSM = 132




_GUARD_ONLY = re.compile(r"@!?%?[\w$]+")


def register_bits(name: str) -> int:
    """Width of an undeclared register from its name: 64 for ``%rd*``/``%fd*``, 1 (predicate) for
    ``%p*``, 16 for ``%rs*``/``%h*``, 32 for every other name."""
    if not isinstance(name, str) or not _REG.match(name):
        raise PTXError(f"{name!r} is not a register name: registers look like %r0, %f3, %rd1, %fd2 (%[a-z]+[0-9]*)")
    prefix = name[1:].rstrip("0123456789")
    if prefix in _WIDE_PREFIXES:
        return 64
    if prefix in _PRED_PREFIXES:
        return 1
    if prefix in _HALF_PREFIXES:
        return 16
    return 32


_DECL = re.compile(r"\.reg\s*(?:\.v[248]\s+)?\.(\w+)\s+(.+)\Z")


class Warp:
    """Per-lane PTX registers for ``warps`` independent warps, and a PTX interpreter.

    undefined: what reading a register that was never written does -- ``"error"`` (default,
    raises :class:`PTXError`), ``"zero"``, or ``"random"`` (seeded by ``seed`` and the name).
    arch: passed to :func:`warpsim.mma`.

    Each warp is its own 32-thread CTA: ``%tid.x`` is the lane, ``%ctaid.x`` the warp's index.

    Example:

    >>> w = warpsim.Warp()
    >>> w.set("%r1", np.arange(32, dtype=np.uint32))
    >>> w.run("shl.b32 %r2, %r1, 4;  add.u32 %r3, %r2, %laneid;").get("%r3")[0, :4]
    array([ 0, 17, 34, 51], dtype=uint32)
    """

    memory = None
    #: threads per unit of :meth:`set` / :meth:`get` (a warp); :class:`warpsim.Warpgroup` uses 128
    lanes = 32
    _unit = "warps"
    #: asynchronous-unit state (wgmma hazards, :mod:`warpsim.ptx.warpgroup`), or None: it sees every
    #: register read and write of the other statements and every shared-memory store
    _async = None

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
        self._declared: dict[str, int] = {}       # exact name -> bits
        self._declared_ranges: dict[str, tuple[int, int]] = {}   # prefix -> (count, bits) for %r<N>
        self._bits_cache: dict[str, int] = {}     # name -> bits, from the two above (cleared by declare)
        self._symbols: dict[str, int] = {}

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

    def _bits(self, name):
        b = self._bits_cache.get(name)
        if b is None:
            b = self._bits_cache[name] = self._width(name)
        return b

    def _width(self, name):
        if name in self._declared:
            return self._declared[name]
        p = name.rstrip("0123456789")
        if p in self._declared_ranges and p != name:
            count, bits = self._declared_ranges[p]
            return bits
        return register_bits(name)

    def set(self, name: str, values) -> None:
        """Write a register in every lane.

        values broadcast to (warps, 32): a scalar, 32 lane values or (warps, 32).  Integers must
        fit the register (negative values are stored two's complement); float32 arrays (32-bit
        registers), float64 arrays (64-bit registers) and float16 arrays (16-bit registers) are
        stored as their bit patterns; predicates take booleans or 0/1.
        """
        if not isinstance(name, str) or not (_REG.match(name) or name in self._declared):
            raise PTXError(f"{name!r} is not a register name: registers look like %r0, %f3, %rd1, %fd2 (%[a-z]+[0-9]*)")
        bits = self._bits(name)
        udt = _STORE[bits]
        v = np.asarray(values)
        if bits == 1:
            if v.dtype.kind not in "biu" or (v.size and not np.isin(v, (0, 1)).all()):
                raise ValueError(f"{name} is a predicate: values must be booleans or 0/1")
            v = v.astype(bool)
        elif v.dtype.kind == "f":
            want = {16: np.float16, 32: np.float32, 64: np.float64}[bits]
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
        units = self.warps * 32 // self.lanes
        try:
            out = np.broadcast_to(v, (units, self.lanes))
        except ValueError:
            raise ValueError(f"values for {name} must broadcast to ({self._unit}, {self.lanes}) = ({units}, {self.lanes}), "
                             f"got shape {v.shape}") from None
        self._regs[name] = np.array(out, dtype=udt).reshape(self.warps, 32)

    def get(self, name: str) -> np.ndarray:
        """A copy of a register in every lane: uint32 (uint64 for 64-bit, uint16 for 16-bit
        registers, bool for predicates) of shape (warps, 32)."""
        sp = self.special(name, None)
        if sp is not None:
            return np.array(sp).reshape(-1, self.lanes)
        if not isinstance(name, str) or not (_REG.match(name) or name in self._declared):
            raise PTXError(f"{name!r} is not a register name: registers look like %r0, %f3, %rd1, %fd2 (%[a-z]+[0-9]*)")
        return self._read(name).reshape(-1, self.lanes).copy()

    def _read(self, name, line=None, stmt=None):
        bits = self._bits(name)
        if name not in self._regs:
            if self.undefined == "error":
                raise PTXError(f"register {name} is used before it is defined (set it with Warp.set or a mov)",
                               line=line, statement=stmt, token=name)
            udt = _STORE[bits]
            if self.undefined == "zero":
                self._regs[name] = np.zeros((self.warps, 32), dtype=udt)
            else:
                rng = np.random.default_rng(zlib.crc32(f"{self.seed}:{name}".encode()))
                r = rng.integers(0, 1 << 64, size=(self.warps, 32), dtype=np.uint64)
                self._regs[name] = (r & np.uint64(1)).astype(bool) if bits == 1 else r.astype(udt)
        return self._regs[name]

    # --- the interface the instruction plumbing (Context) uses ----------------------------

    def register_width(self, name, ctx):
        return self._bits(name)

    def is_register(self, name):
        if not isinstance(name, str):
            return False
        if name in self._declared:
            return True
        return bool(_REG.match(name)) and _SPECIAL.match(name) is None

    def _geometry(self):
        """(tid (W,32,3), ntid (3,), ctaid (W,3), nctaid (3,), warp-in-CTA (W,), warps per CTA)."""
        lane = np.arange(32)
        tid = np.zeros((self.warps, 32, 3), dtype=np.uint32)
        tid[..., 0] = lane
        ctaid = np.zeros((self.warps, 3), dtype=np.uint32)
        ctaid[:, 0] = np.arange(self.warps)
        return tid, np.array([32, 1, 1], np.uint32), ctaid, np.array([self.warps, 1, 1], np.uint32), \
            np.zeros(self.warps, np.uint32), 1

    def special(self, name, ctx):
        """A special register's values, (g, 32) uint32, or None if ``name`` is not one."""
        if not isinstance(name, str):
            return None
        m = _SPECIAL.match(name)
        if not m:
            return None
        kind, axis = m.groups()
        rows = None if ctx is None else ctx.rows
        g = self.warps if rows is None else len(rows)
        sel = slice(None) if rows is None else rows
        if (kind in _AXES) != (axis is not None):
            raise PTXError(f"special register {name}: {', '.join('%' + k for k in _AXES)} take .x, .y or .z; "
                           f"%{kind} takes none", line=getattr(getattr(ctx, 'stmt', None), 'line', None),
                           token=name)
        tid, ntid, ctaid, nctaid, wic, nw = self._geometry()
        lane = np.broadcast_to(np.arange(32, dtype=np.uint32), (g, 32))
        ax = "xyz".index(axis) if axis else 0
        if kind == "laneid":
            return lane
        if kind == "tid":
            return tid[sel, :, ax]
        if kind == "ntid":
            return np.full((g, 32), ntid[ax], np.uint32)
        if kind == "ctaid":
            return np.broadcast_to(ctaid[sel, ax][:, None], (g, 32))
        if kind == "nctaid":
            return np.full((g, 32), nctaid[ax], np.uint32)
        if kind == "warpid":
            return np.broadcast_to(wic[sel][:, None], (g, 32))
        if kind == "nwarpid":
            return np.full((g, 32), nw, np.uint32)
        if kind == "clusterid":          # every CTA is a cluster of one
            return np.broadcast_to(ctaid[sel, ax][:, None], (g, 32))
        if kind == "nclusterid":
            return np.full((g, 32), nctaid[ax], np.uint32)
        if kind in ("cluster_ctaid", "cluster_ctarank", "is_explicit_cluster"):
            return np.zeros((g, 32), np.uint32)
        if kind in ("cluster_nctaid", "cluster_nctarank"):
            return np.ones((g, 32), np.uint32)
        if kind == "smid":
            return np.broadcast_to((self._cta_index()[sel] % NSM).astype(np.uint32)[:, None], (g, 32))
        if not kind.startswith("lanemask"):
            v = int(self.launch_value(kind))
            return np.full((g, 32), v, np.uint64 if v >> 32 else np.uint32)
        op = kind.split("_")[1]
        one = np.uint32(1) << np.arange(32, dtype=np.uint32)
        val = {"eq": one, "lt": one - np.uint32(1), "le": (one - np.uint32(1)) | one,
               "gt": ~((one - np.uint32(1)) | one), "ge": ~(one - np.uint32(1))}[op]
        return np.broadcast_to(val, (g, 32))

    def _cta_index(self):
        tid, ntid, ctaid, nctaid, wic, nw = self._geometry()
        return ctaid[:, 0] + nctaid[0] * (ctaid[:, 1] + nctaid[1] * ctaid[:, 2])

    def launch_value(self, kind):
        """Launch-wide special registers: clocks (deterministic), %nsmid, %gridid, shared sizes."""
        return {"nsmid": NSM, "gridid": 1}.get(kind, 0)

    def read_register(self, name, ctx):
        if self._async is not None:
            self._async.on_read(name, ctx)
        v = self._read(name, ctx.stmt.line, ctx.stmt.text)
        return v if ctx.rows is None else v[ctx.rows]

    def write_register(self, name, new, ctx):
        if self._async is not None:
            self._async.on_write(name, ctx)
        bits = self._bits(name)
        if name not in self._regs:
            self._regs[name] = np.zeros((self.warps, 32), dtype=_STORE[bits])
        cur = self._regs[name]
        if ctx.rows is None:
            if ctx.mask is None:
                self._regs[name] = np.array(new, dtype=cur.dtype)
            else:
                self._regs[name] = np.where(ctx.mask, new, cur).astype(cur.dtype)
        else:
            if ctx.mask is None:
                cur[ctx.rows] = new
            else:
                cur[ctx.rows] = np.where(ctx.mask, new, cur[ctx.rows])

    def symbol(self, name):
        return self._symbols.get(name)

    def param_bytes(self, op, nbytes, ctx):
        ctx.fail("ld.param needs a kernel: load the module with warpsim.ptx.load and launch it")

    def barrier(self, ctx):
        pass     # each warp of a Warp is a CTA of its own

    def declare(self, line, text):
        """A ``.reg`` declaration: ``.reg .b32 %r<8>;`` or ``.reg .f32 %f1, %f2;``."""
        m = _DECL.match(text)
        if not m:
            raise PTXError("malformed .reg declaration (expected e.g. '.reg .b32 %r<4>;')", line=line, statement=text)
        typ, names = m.groups()
        if typ not in TYPES:
            raise PTXError(f"unknown register type .{typ}", line=line, statement=text, token="." + typ)
        bits = TYPES[typ][0]
        if bits == 8:
            bits = 16          # .b8 registers are held in 16-bit registers
        self._bits_cache.clear()
        for nm in [x.strip() for x in names.split(",")]:
            r = re.fullmatch(r"(%?[A-Za-z_$][\w$]*?)<(\d+)>", nm)
            if r:
                self._declared_ranges[r.group(1)] = (int(r.group(2)), bits)
            else:
                self._declared[nm] = bits

    # --- execution ----------------------------------------------------------

    def run(self, text: str) -> "Warp":
        """Execute PTX statements in order; returns the register file (for chaining)."""
        if not isinstance(text, str):
            raise TypeError(f"PTX text must be a str, not {type(text).__name__}")
        for kind, line, item in statements(text):
            if kind == "label":
                raise PTXError(f"label {item!r}: labels and branches need a kernel (warpsim.ptx.load); a Warp runs "
                               "straight-line statements", line=line, token=item)
            self._statement(line, item)
        return self

    def _statement(self, line, stmt):
        if not stmt.split() or _GUARD_ONLY.fullmatch(stmt.strip()):
            return                  # an empty statement (';;'), as ptxas takes it
        st = make_statement(line, stmt)
        if st.opcode == ".reg":
            return self.declare(line, st.text)
        if st.opcode.startswith("."):
            raise PTXError(f"directive {st.opcode} is not allowed in a Warp snippet (.reg is)", line=line,
                           statement=st.text, token=st.opcode)
        if st.opcode in ("bra", "bra.uni", "ret", "exit", "call") or st.opcode.startswith(("bra.", "call.")):
            raise PTXError(f"'{st.opcode}' needs a kernel: load the module with warpsim.ptx.load and launch it",
                           line=line, statement=st.text, token=st.opcode)
        self.execute(st, None, None)

    def guard_mask(self, st, rows):
        """The lanes a guarded statement executes in: (g, 32) bool, or None without a guard."""
        if st.guard is None:
            return None
        neg, pred = st.guard
        if rows is None and self._async is None:       # a predicate register read as is
            name = st.__dict__.get("guard_reg", 0)
            if name == 0:
                name = st.guard_reg = _plan.predicate(self, st, pred)
            v = None if name is None else self._regs.get(name)
            if v is not None:
                return ~v if neg else v.copy()
        ctx = Context(self, st, rows, None)
        v = ctx.read(pred, "pred", what="guard predicate")
        return ~v if neg else v

    def execute(self, st, rows, mask):
        """Run one statement on warps ``rows`` (None: all) in lanes ``mask`` (None: all)."""
        if st.guard is not None and mask is None:
            mask = self.guard_mask(st, rows)
            if not mask.any():
                return
            if mask.all():
                mask = None
            else:       # warps whose lanes are all off do not execute the statement at all
                on = mask.any(axis=1)
                if not on.all():
                    idx = np.arange(self.warps) if rows is None else np.asarray(rows)
                    rows, mask = idx[on], mask[on]
        if rows is None and mask is None:
            pl = st.__dict__.get("plan")         # decoded at an earlier execution (below)
            if pl is not None and _plan.run(self, st, pl):
                return
        ctx = Context(self, st, rows, mask)
        if st.opcode.startswith("mma"):
            return self._mma(ctx)
        if st.handler is None:
            try:
                found = lookup(st.opcode)
            except ValueError as exc:       # a spelling ptxas refuses (warpsim.ptx.spellings)
                raise PTXError(str(exc), line=st.line, statement=st.text, token=st.opcode) from None
            if found is None:
                base = st.opcode.split(".")[0]
                if base in known_bases():
                    raise PTXError(f"unsupported {base} form '{st.opcode}' (warpsim.ptx.instructions lists the "
                                   f"{base} forms it executes)", line=st.line, statement=st.text, token=st.opcode)
                raise PTXError(f"unsupported instruction '{st.opcode}': see warpsim.ptx.instructions for the "
                               "instructions warpsim executes", line=st.line, statement=st.text, token=st.opcode)
            st.handler = found
        kind, fn, nsrc, m = st.handler
        if rows is None and mask is None and "plan" not in st.__dict__:   # every lane of every warp: decode
            pl = st.plan = _plan.build(self, st, kind, fn, nsrc, m)
            if pl is not None and _plan.run(self, st, pl):
                return
        if kind == "ctx":
            with np.errstate(all="ignore"):     # wrap-around, NaN casts: PTX defines every result
                return fn(ctx, m)
        # an ALU row: d = f(sources) with types from the pattern's groups
        if len(st.operands) != nsrc + 1:
            ctx.fail(f"{st.opcode} takes {nsrc + 1} operands (a destination and {nsrc} source(s)), got {len(st.operands)}")
        plan = st.__dict__.get("alu_types")
        if plan is None:    # the operand types follow from the opcode alone: worked out once
            plan = st.alu_types = _alu_types(st, m)
        dt, typs = plan
        srcs = [ctx.read(op, typ, what=f"source {i + 1} of {st.opcode}")
                for i, (op, typ) in enumerate(zip(st.operands[1:], typs))]
        with np.errstate(all="ignore"):
            out = fn(m, *srcs)
        ctx.write(st.operands[0], out, dt, what=f"destination of {st.opcode}")

    def _mma(self, ctx):
        from ..engine.warp_mma import execute as mma
        from ..isa.parse import parse

        line, stmt, op, operands = ctx.stmt.line, ctx.stmt.text, ctx.opcode, ctx.operands
        pl = ctx.stmt.__dict__.get("mma_plan")
        if pl is not None and ctx.rows is None and ctx.mask is None and self._async is None:
            # checked at an earlier execution: 32-bit registers only, read and written as words
            regs = self._regs
            if all(r in regs for role in "abc" for r in pl[1][role]):
                words = {role: np.stack([regs[r] for r in pl[1][role]], axis=-1) for role in "abc"}
                try:
                    d = mma(pl[0], words["a"], words["b"], words["c"], None, selector=0, arch=self.arch)
                except (ValueError, TypeError) as exc:
                    raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
                shape = (self.warps, 32)
                for i, r in enumerate(pl[1]["d"]):
                    regs[r] = np.array(to_register(np.ascontiguousarray(d[..., i]), "b32", 32, shape), dtype=np.uint32)
                return
        ctx.require_converged()
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
        if ins.block_scaled:
            want += ", scale-a register, {byte-id-a, thread-id-a}, scale-b register, {byte-id-b, thread-id-b}"
            want = want.replace("6 operands", "10 operands").replace("4 operands", "8 operands")
            need += 4
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
            vecs[role] = regs
        words = {}
        for role in "dabc":
            typ = "b64" if ins.elem(role).bits == 64 else "b32"
            what = f"operand {role.upper()} (.{ins.elem(role).name})"
            for r in vecs[role]:      # width check of every register, destination included
                if not self.is_register(r):
                    ctx.fail(f"{what}: {r!r} is not a register name (%[a-z]+[0-9]*)", token=r)
                ctx._check_width(r, typ, what, role == "d")
            if role == "d":
                continue
            cols = []
            for r in vecs[role]:
                v = ctx.read(r, typ, what=what)
                if v.dtype == np.uint64:
                    cols += [(v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)]
                else:
                    cols.append(v)
            words[role] = np.stack(cols, axis=-1)
        e, sel = None, 0
        if ins.is_sparse:
            meta, seltok = operands[4], operands[5]
            e = np.ascontiguousarray(ctx.read(meta, "b32", what="sparse metadata operand"))
            if isinstance(seltok, list) or parse_int(seltok) is None:
                raise PTXError(f"the sparsity selector must be an integer immediate (allowed: {list(ins.selectors)})",
                               line=line, statement=stmt, token=seltok if isinstance(seltok, str) else None)
            sel = parse_int(seltok)
            if sel not in ins.selectors:
                raise PTXError(f"sparsity selector {seltok} is out of range for {ins.opcode}; allowed: {list(ins.selectors)}",
                               line=line, statement=stmt, token=seltok)
        kw = {}
        if ins.block_scaled:
            base = 6 if ins.is_sparse else 4
            sel4 = []
            for reg, pair, who in ((operands[base], operands[base + 1], "a"), (operands[base + 2], operands[base + 3], "b")):
                what = f"scale-{who} operand (.{ins.stype} factors)"
                if not isinstance(reg, str) or not self.is_register(reg):
                    ctx.fail(f"{what}: {reg!r} is not a register name (%[a-z]+[0-9]*)", token=reg if isinstance(reg, str) else None)
                ctx._check_width(reg, "b32", what, False)
                kw[f"scale_{who}"] = np.ascontiguousarray(ctx.read(reg, "b32", what=what))
                vals = [parse_int(x) for x in pair] if isinstance(pair, list) and len(pair) == 2 else None
                if vals is None or None in vals:
                    raise PTXError(f"scale selectors of {who.upper()} must be {{byte-id-{who}, thread-id-{who}}}, two integer "
                                   "immediates", line=line, statement=stmt)
                sel4 += vals
            kw.update(byte_id_a=sel4[0], thread_id_a=sel4[1], byte_id_b=sel4[2], thread_id_b=sel4[3])
        try:
            d = mma(ins.opcode, words["a"], words["b"], words["c"], e, selector=sel, arch=self.arch, **kw)
        except (ValueError, TypeError) as exc:
            raise PTXError(str(exc), line=line, statement=stmt, token=op) from None
        if ins.elem("d").bits == 64:
            d64 = d.astype(np.uint64)
            vals = [d64[..., 2 * i] | (d64[..., 2 * i + 1] << np.uint64(32)) for i in range(len(vecs["d"]))]
            typ = "b64"
        else:
            vals = [d[..., i] for i in range(len(vecs["d"]))]
            typ = "b32"
        for r, v in zip(vecs["d"], vals):
            ctx.write(r, np.ascontiguousarray(v), typ)
        if (not ins.is_sparse and not ins.block_scaled and typ == "b32"
                and all(ins.elem(role).bits != 64 and self._bits(r) == 32 for role in "dabc" for r in vecs[role])):
            ctx.stmt.mma_plan = (ins.opcode, vecs)    # every check above passes again for these registers


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
        counters["r"] = i + 1
        tail = f", %r{i}, {selector:#x}"
    if ins.block_scaled:
        i = counters.get("r", 0)
        tail += f", %r{i}, {{0, 0}}, %r{i + 1}, {{0, 0}}"
    return f"{ins.opcode} {d}, {a}, {b}, {c}{tail};"
