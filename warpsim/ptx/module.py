"""Module-level PTX: load a ``.ptx`` file as nvcc writes it and launch an entry over a grid of CTAs.

>>> mod = warpsim.ptx.load("kernel.ptx")                        # doctest: +SKIP
>>> mod.launch("gemm", grid=(2, 2), block=128, args=[A, B, C, 64, 64, 32])   # doctest: +SKIP

Every CTA of the grid runs at once, in lockstep, vectorised over all their warps: a statement
executes for every lane of the warps at its program counter.  Warps follow their own control
flow (a branch must be uniform across the 32 lanes of a warp, not across the CTA); the warps
with the lowest program counter run first, which reconverges structured code, and ``bar.sync``
holds a warp until every warp of its CTA has arrived.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .memory import Memory
from .regfile import Warp
from .syntax import PTXError, make_statement, parse_int, parse_module, statements

__all__ = ["load", "Module"]

_BRANCH = re.compile(r"bra(?:\.uni)?\Z")
_SHARED_DECL = re.compile(r"(?:\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\s*(?:\[(\d*)\])?"
                          r"(?:\s*\[(\d+)\])?\Z")
_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def load(path_or_text) -> "Module":
    """Read a PTX module: a path to a ``.ptx`` file (str or Path) or the PTX text itself."""
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text
                                          and not path_or_text.lstrip().startswith(".")):
        p = Path(path_or_text)
        if not p.exists():
            raise FileNotFoundError(f"no PTX file {str(p)!r} (pass a path to a .ptx file or the PTX text)")
        return Module(p.read_text(), name=str(p))
    if not isinstance(path_or_text, str):
        raise TypeError(f"load() takes a path or PTX text, not {type(path_or_text).__name__}")
    return Module(path_or_text)


class _Program:
    """An entry's statements with labels resolved, its registers and shared variables."""

    def __init__(self, entry, module_shared):
        self.entry = entry
        self.code = []            # Statement list
        self.labels = {}
        self.reg_decls = []       # (line, text)
        self.shared = []          # (name, align, size, extern, line)
        off = entry.body_line - 1
        for decl, line in module_shared:
            self._shared_decl(decl, line)
        for kind, line, item in statements(entry.body):
            line += off
            if kind == "label":
                self.labels[item] = len(self.code)
                continue
            text = " ".join(item.split())
            if text.startswith(".reg"):
                self.reg_decls.append((line, text))
            elif text.startswith((".shared", ".extern .shared")):
                self._shared_decl(text, line)
            elif text.startswith(".pragma") or text.startswith(".loc") or text.startswith(".file"):
                continue
            elif text.startswith((".local", ".global", ".const", ".param")):
                raise PTXError(f"{text.split()[0]} variables inside an entry are not supported", line=line,
                               statement=text, token=text.split()[0])
            else:
                self.code.append(make_statement(line, text))
        for st in self.code:
            if _BRANCH.match(st.opcode):
                if len(st.operands) != 1 or not isinstance(st.operands[0], str) or st.operands[0] not in self.labels:
                    raise PTXError(f"branch target {st.operands[0] if st.operands else ''!r} is not a label of "
                                   f"{entry.name}", line=st.line, statement=st.text,
                                   token=st.operands[0] if st.operands and isinstance(st.operands[0], str) else None)

    def _shared_decl(self, text, line):
        m = _SHARED_DECL.match(text)
        if not m:
            raise PTXError("cannot read this .shared declaration (expected e.g. '.shared .align 16 .b8 buf[1024];')",
                           line=line, statement=text)
        align, typ, name, n1, n2 = m.groups()
        if typ not in _SIZES:
            raise PTXError(f"unknown type .{typ} in a .shared declaration", line=line, statement=text)
        extern = text.startswith(".extern") or n1 == ""
        count = 1
        for n in (n1, n2):
            if n:
                count *= int(n)
        self.shared.append((name, int(align or _SIZES[typ]), 0 if extern else count * _SIZES[typ], extern, line))


class Module:
    """A loaded PTX module: its entries, ready to launch."""

    def __init__(self, text: str, name: str = "<ptx>"):
        self.name = name
        self.text = text
        self._mod = parse_module(text)
        self.version = self._mod.version
        self.target = self._mod.target
        self._programs = {}

    def __repr__(self):
        return f"Module({self.name!r}, target={self.target!r}, entries={self.entries})"

    @property
    def entries(self) -> list[str]:
        return list(self._mod.entries)

    def params(self, entry):
        """The kernel parameters of ``entry``: a list of (name, PTX type)."""
        return [(p.name, p.type) for p in self._entry(entry).params]

    def _entry(self, entry):
        if entry not in self._mod.entries:
            raise ValueError(f"no entry {entry!r} in {self.name}; entries: {self.entries}")
        return self._mod.entries[entry]

    def program(self, entry):
        if entry not in self._programs:
            self._programs[entry] = _Program(self._entry(entry), self._mod.shared)
        return self._programs[entry]

    def launch(self, entry, grid, block, args, shared_bytes=0, *, arch="sm_90", max_steps=10_000_000):
        """Run ``entry`` over ``grid`` CTAs of ``block`` threads.

        grid, block: int or 1- to 3-tuples.  args: the kernel arguments in ``.param`` order --
        numpy arrays for pointer parameters (global buffers: the kernel's stores land in them,
        in place) and Python/numpy scalars for the others.  shared_bytes: dynamic shared memory
        (``.extern .shared`` arrays) per CTA.  Returns nothing.
        """
        prog = self.program(entry)
        g = _dims(grid, "grid")
        b = _dims(block, "block")
        nthreads = b[0] * b[1] * b[2]
        if nthreads % 32:
            raise ValueError(f"block {b} has {nthreads} threads: warpsim runs whole warps, so the thread count "
                             "must be a multiple of 32")
        if nthreads > 1024:
            raise ValueError(f"block {b} has {nthreads} threads; a CTA has at most 1024")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
            raise ValueError(f"shared_bytes must be a non-negative integer, got {shared_bytes!r}")
        k = _Kernel(prog, g, b, int(shared_bytes), arch, self.name)
        k.bind(args)
        k.run(max_steps)


def _dims(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if isinstance(v, list):
        v = tuple(v)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3 or \
            not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in v):
        raise ValueError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {v!r}")
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))


class _Kernel(Warp):
    """The register file of every warp of a launch, with shared and global memory."""

    def __init__(self, prog, grid, block, shared_bytes, arch, modname):
        nctas = grid[0] * grid[1] * grid[2]
        self.wpc = block[0] * block[1] * block[2] // 32
        super().__init__(nctas * self.wpc, undefined="zero", arch=arch)
        self.prog = prog
        self.grid, self.block = grid, block
        for line, text in prog.reg_decls:
            self.declare(line, text)
        # shared memory layout: static variables in order, then dynamic (extern) ones at the end
        off = 0
        externs = []
        for name, align, size, extern, line in prog.shared:
            if extern:
                externs.append((name, align))
                continue
            off = (off + align - 1) // align * align
            self._symbols[name] = off
            off += size
        for name, align in externs:
            off = (off + align - 1) // align * align
            self._symbols[name] = off
        total = off + shared_bytes
        self.memory = Memory(nctas, total, np.repeat(np.arange(nctas), self.wpc))
        if any(st.opcode.startswith("wgmma.") for st in prog.code):
            from .warpgroup import WgmmaUnit

            self._async = WgmmaUnit(self, self.wpc)     # in-flight wgmmas and their hazards, per warpgroup
        self.params = b""
        self.param_offsets = {}
        self.modname = modname

    def _geometry(self):
        W = self.warps
        bx, by, bz = self.block
        t = (np.arange(W) % self.wpc)[:, None] * 32 + np.arange(32)[None, :]
        tid = np.stack([t % bx, (t // bx) % by, t // (bx * by)], axis=-1).astype(np.uint32)
        c = np.arange(W) // self.wpc
        gx, gy, gz = self.grid
        ctaid = np.stack([c % gx, (c // gx) % gy, c // (gx * gy)], axis=-1).astype(np.uint32)
        return tid, np.array(self.block, np.uint32), ctaid, np.array(self.grid, np.uint32), \
            (np.arange(W) % self.wpc).astype(np.uint32), self.wpc

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
                                    f"{p.array} bytes")
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
        self.params = bytes(blob)

    def param_bytes(self, op, nbytes, ctx):
        m = re.fullmatch(r"\[\s*([\w$]+)\s*(?:\+\s*(\w+))?\s*\]", op.strip()) if isinstance(op, str) else None
        if not m or m.group(1) not in self.param_offsets:
            ctx.fail(f"ld.param reads a kernel parameter: [name] or [name+offset]; {op!r} names none of "
                     f"{list(self.param_offsets)}", token=op if isinstance(op, str) else None)
        off = self.param_offsets[m.group(1)] + (parse_int(m.group(2)) if m.group(2) else 0)
        if off + nbytes > len(self.params):
            ctx.fail(f"ld.param of {nbytes} bytes at offset {off} runs past the parameters", token=op)
        data = np.frombuffer(self.params[off:off + nbytes], dtype=np.uint8)
        return np.broadcast_to(data, ctx.shape + (nbytes,))

    def barrier(self, ctx):
        raise _Barrier()

    # --- the scheduler ------------------------------------------------------------------------

    def run(self, max_steps):
        code = self.prog.code
        W = self.warps
        pc = np.zeros(W, dtype=np.int64)
        alive = np.ones(W, dtype=bool)
        waiting = np.zeros(W, dtype=bool)
        cta = np.arange(W) // self.wpc
        steps = 0
        while alive.any():
            run = alive & ~waiting
            if not run.any():
                # release every CTA whose live warps all wait at a barrier
                live = np.bincount(cta, weights=alive, minlength=W // self.wpc)
                wait = np.bincount(cta, weights=waiting & alive, minlength=W // self.wpc)
                ready = (live == wait)[cta] & waiting
                if not ready.any():
                    raise PTXError("deadlock: every warp waits at a barrier that other warps never reach")
                waiting[ready] = False
                pc[ready] += 1
                continue
            p = int(pc[run].min())
            grp = run & (pc == p)
            steps += 1
            if steps > max_steps:
                raise PTXError(f"{self.prog.entry.name} did not finish within {max_steps} statements (an endless loop?)")
            if p >= len(code):
                alive[grp] = False
                continue
            st = code[p]
            rows = None if grp.all() else np.nonzero(grp)[0]
            idx = np.arange(W) if rows is None else rows
            op = st.opcode
            if _BRANCH.match(op) or op in ("ret", "exit"):
                taken = np.ones(len(idx), dtype=bool)
                if st.guard is not None:
                    lanes = self.guard_mask(st, rows)
                    uniform = lanes.all(axis=1) | ~lanes.any(axis=1)
                    if not uniform.all():
                        w = int(idx[np.argmin(uniform)])
                        on = np.nonzero(lanes[np.argmin(uniform)])[0]
                        raise PTXError(f"divergent branch: in warp {w % self.wpc} of CTA {w // self.wpc} lanes "
                                       f"{_lanes(on)} take '{st.text}' and the others do not; warpsim runs "
                                       "control flow that is uniform across each warp only",
                                       line=st.line, statement=st.text, token=st.guard[1])
                    taken = lanes[:, 0]
                if op in ("ret", "exit"):
                    alive[idx[taken]] = False
                    pc[idx[~taken]] += 1
                else:
                    target = self.prog.labels[st.operands[0]]
                    pc[idx] = np.where(taken, target, p + 1)
                continue
            if op.startswith(("call", "bra")):
                raise PTXError(f"'{op}' is not supported (function calls and indirect branches)", line=st.line,
                               statement=st.text, token=op)
            try:
                self.execute(st, rows, None)
            except _Barrier:
                waiting[idx] = True
                continue
            pc[idx] += 1


class _Barrier(Exception):
    pass


def _lanes(on):
    on = list(int(x) for x in on)
    return ", ".join(map(str, on[:8])) + (", ..." if len(on) > 8 else "")
