"""The translator's IR and its passes: the decoded program (``module._Program``) cut into basic
blocks of lowered statements, with the facts code generation needs.

* **blocks**: leaders at the entry, branch targets, reconvergence points and after every branch,
  ``ret``/``exit`` and ``bar.sync`` (a barrier ends a block: the warp yields there); a statement a warp
  may park at (``mbarrier.try_wait``: lower_sync) is a block of its own;
* **reconvergence**: each conditional branch's immediate post-dominator, as the interpreter computes
  it (``_Program.reconverge``), as a block number;
* **registers**: each register's width from the ``.reg`` declarations (the interpreter's rule; ``inline.Widths``);
* **definite assignment**: the registers some thread may read before writing them (they start at
  zero in every CTA, as the interpreter's ``undefined="zero"`` launch registers do; the rest need no
  clearing);
* **layout**: kernel-parameter offsets (the interpreter's binding rule), shared-memory symbols and the
  threads' local memory (the interpreter's layout of every function's ``.local`` variables).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import lower_float  # noqa: F401  (registers the f64, conversion and soft-float rows into lower.ROWS)
from . import lower_mma  # noqa: F401  (registers the tensor-core and async-copy rows into lower.ROWS)
from . import lower_sync  # noqa: F401  (registers the mbarrier, cluster and barrier rows into lower.ROWS)
from . import lower_wgmma  # noqa: F401  (registers its rows into lower.ROWS)
from . import lower_wmma  # noqa: F401  (registers its rows into lower.ROWS)
from .inline import Flat, Widths
from .lower import Lowered, Untranslatable, lower, register_file

EXIT = -1
#: the kinds of statement that end a block
_ENDS = ("branch", "ret", "bar", "wait", "park", "call", "return")


@dataclass
class Block:
    id: int
    start: int
    stmts: list = field(default_factory=list)     # (Statement, Lowered)
    end: str = "fall"                              # fall | branch | ret | bar | wait | park | call | return
    succ: tuple = ()
    next: int = EXIT                               # the block after this one in the text


class KernelIR:
    """One entry, translated: blocks, registers, layout (raises Untranslatable at the first statement
    without a native form, or for a program the translator does not take)."""

    def __init__(self, prog):
        self.entry = prog.entry.name
        #: every statement group compiled with numba's reference counting (kernel._ready sets it when needed)
        self.refcount_all = False
        nreg = prog.entry.directives.get("maxnreg")
        self.maxnreg = int(nreg[0]) if nreg else None        # setmaxnreg's starting budget (cluster.initial_registers)
        if len(prog.functions) > 1 or any(st.opcode.startswith("call") for st in prog.code):
            prog = Flat(prog)           # calls inlined (a call of a function without a body: the reason)
        fn = prog.functions[self.entry]
        if fn.params:
            raise Untranslatable("the entry has .param variables of its own", None)
        self.regs = Widths(prog.reg_decls)
        self.index = {}                 # register -> its row in the register file of its width
        self.counts = {1: 0, 16: 0, 32: 0, 64: 0}
        self._layout(prog)
        code = prog.code
        self.reconverge_pc = prog.reconverge
        leaders = {0}
        for pc, st in enumerate(code):
            if hasattr(st, "target"):
                leaders.add(st.target)
            if pc in prog.reconverge and prog.reconverge[pc] >= 0:
                leaders.add(prog.reconverge[pc])
        lowered = []
        self.uniform_operands = []      # (register, statement): registers rows need equal in every thread
        for pc, st in enumerate(code):
            try:
                low = lower(self, st)
            except Untranslatable as exc:
                raise Untranslatable(str(exc), st) from None
            if low.kind in _ENDS:
                leaders.add(pc + 1)
            if low.kind == "wait":         # a statement a warp may park at and run again: a block of its own
                leaders.add(pc)
            lowered.append(low)
        starts = sorted(p for p in leaders if p < len(code))
        self.block_at = {s: i for i, s in enumerate(starts)}
        #: recursive functions' bodies (inline.Frame, by index): the registers a call saves, as rows
        self.frames = {fr.index: fr for fr in getattr(prog, "frames", {}).values()}
        returns_to = {str(k): tuple(self.block_at[pc + 1] for pc, st in enumerate(code)
                                    if st.opcode == "inline.call" and st.operands[0] == str(k))
                      for k in self.frames}
        for fr in self.frames.values():
            for r in fr.saved:
                self.ref(r)
        self.blocks = []
        for i, s in enumerate(starts):
            e = starts[i + 1] if i + 1 < len(starts) else len(code)
            b = Block(i, s, [(code[pc], lowered[pc]) for pc in range(s, e)])
            b.next = i + 1 if i + 1 < len(starts) else EXIT
            last_st, last = b.stmts[-1]
            if last.kind in _ENDS:
                b.end = last.kind
            if last.kind == "branch":
                tgt = self.block_at.get(last_st.target)
                if tgt is None:
                    raise Untranslatable("a branch into the middle of a block", last_st)
                b.succ = (tgt, b.next) if last_st.guard is not None else (tgt,)
            elif last.kind == "ret":
                b.succ = (EXIT, b.next) if last_st.guard is not None else (EXIT,)
            elif last.kind == "call":       # into the body; the caller's registers go on past the call
                b.succ = (self.block_at[last_st.target], b.next)
            elif last.kind == "return":
                b.succ = returns_to[last_st.operands[0]]
            else:
                b.succ = (b.next,)
            self.blocks.append(b)
        self.sfu_tables = sorted({t for low in lowered if low.sfu for t in low.sfu})
        #: module-level lines the statements need, in order; kernel arguments chosen per launch (name -> values)
        self.prelude = list(dict.fromkeys(x for low in lowered for x in low.prelude))
        self.launch_args = dict(a for low in lowered for a in low.launch_args)
        #: working arrays made once in each run of the kernel (name -> expression), shared by the statements
        self.scratch = dict(a for low in lowered for a in low.scratch)
        self.zeroed = self._maybe_undefined()
        self._check_uniform(code, lowered)

    def ref(self, name, thread="t"):
        """The generated code's element of register ``name`` for ``thread``."""
        bits = self.regs.get(name)
        if bits not in self.counts:
            raise Untranslatable(f"{name} is a {bits}-bit register")
        if name not in self.index:
            self.index[name] = self.counts[bits]
            self.counts[bits] += 1
        return f"{register_file(bits)}[{self.index[name]}, {thread}]"

    def reconverge(self, st):
        """The block a divergent branch at ``st`` reconverges at (EXIT: only at the kernel's end)."""
        pc = self.blocks_pc(st)
        r = self.reconverge_pc.get(pc, -1)
        return self.block_at[r] if r >= 0 else EXIT

    def blocks_pc(self, st):
        for b in self.blocks:
            for k, (s, _) in enumerate(b.stmts):
                if s is st:
                    return b.start + k
        raise KeyError(st)

    def launch_values(self, arch, explicit=False):
        """The per-launch kernel arguments for ``arch`` (and, for those that say ``per_launch``, whether the
        launch named its cluster), in the order of sorted(launch_args) (Untranslatable: this launch cannot run
        compiled, with the reason)."""
        return tuple(f(arch, explicit) if getattr(f, "per_launch", False) else f(arch)
                     for f in (self.launch_args[name] for name in sorted(self.launch_args)))

    def _layout(self, prog):
        """Kernel-parameter offsets as Module.launch binds them; shared and local symbols as the interpreter lays
        them out."""
        self.param_offsets = {}
        off = 0
        for p in prog.entry.params:
            size = p.array if p.array else p.bits // 8
            align = p.align or size
            a = min(align, 8)
            off = (off + a - 1) // a * a
            self.param_offsets[p.name] = (off, size)
            off += size
        self.shared_symbols, self.shared_static = prog.shared_layout()
        #: the module's global variables, in the order of the kernel's GSYM argument (their addresses)
        self.module_variables = list(prog.module_variables)
        self.local_symbols, _, self.local_bytes = prog.local_layout()
        #: bytes of each thread's local area: the interpreter's layout, then the inlined calls' saved bytes
        self.local_stride = self.local_bytes + (prog.local_saved if isinstance(prog, Flat) else 0)

    def _check_uniform(self, code, lowered):
        """Each register in uniform_operands (an atomic whose lanes' updates do not commute reads it: lower._atomic)
        holds one constant in every thread where it is read: the write that reaches it in its block, else every
        write of it, an unguarded mov of one immediate or symbol, or of a register that holds one there (an
        inlined call's argument reaches its callee through such moves, a call block's .param register is written
        before each call), and no thread reads it unwritten."""
        undefined = set(self.zeroed[0])
        writes, start = {}, {}
        for b in self.blocks:
            for k in range(len(b.stmts)):
                start[b.start + k] = b.start
        for pc, low in enumerate(lowered):
            for r in low.writes:
                writes.setdefault(r, []).append(pc)

        def written(pc, seen):
            st = code[pc]
            src = st.operands[1] if st.opcode.startswith("mov.") and st.guard is None else None
            if not isinstance(src, str):
                return {None}
            if src.startswith("%") or self.regs.get(src) is not None:
                return value(src, pc, seen)
            return {src}

        def value(reg, pc, seen):
            if (reg, pc) in seen:
                return {None}
            seen = seen | {(reg, pc)}
            for q in range(pc - 1, start.get(pc, pc) - 1, -1):
                if reg in lowered[q].writes:
                    return written(q, seen)
            if reg in undefined or not writes.get(reg):
                return {None}
            return set().union(*(written(q, seen) for q in writes[reg]))

        for reg, where in self.uniform_operands:
            found = value(reg, next(pc for pc, st in enumerate(code) if st is where), frozenset())
            if len(found) != 1 or None in found:
                raise Untranslatable(f"{where.opcode} reads {reg}, which is not one constant in every thread (the "
                                     "final word would depend on the order of the lanes' updates)", where)

    def _maybe_undefined(self):
        """Registers some thread may read before any unguarded write on its path (forward must-analysis)."""
        allregs = set()
        gen = []
        for b in self.blocks:
            g = set()
            for st, low in b.stmts:
                allregs.update(low.reads)
                allregs.update(low.writes)
                if st.guard is None:
                    g.update(low.writes)
            if st.guard is not None:
                allregs.add(st.guard[1])
            gen.append(g)
        preds = {b.id: [] for b in self.blocks}
        for b in self.blocks:
            for s in b.succ:
                if s != EXIT:
                    preds[s].append(b.id)
        out = [set(allregs) for _ in self.blocks]
        changed = True
        while changed:
            changed = False
            for b in self.blocks:
                inn = set() if b.id == 0 else set.intersection(*(out[p] for p in preds[b.id])) if preds[b.id] \
                    else set(allregs)
                new = inn | gen[b.id]
                if new != out[b.id]:
                    out[b.id], changed = new, True
        zeroed = set()
        for b in self.blocks:
            have = set() if b.id == 0 else set.intersection(*(out[p] for p in preds[b.id])) if preds[b.id] \
                else set(allregs)
            for st, low in b.stmts:
                if st.guard is not None and st.guard[1] not in have:
                    zeroed.add(st.guard[1])
                zeroed.update(r for r in low.reads if r not in have)
                if st.guard is None:
                    have.update(low.writes)
        return sorted(zeroed), sorted(allregs)


def translate_ir(prog):
    """(KernelIR, None) or (None, (reason, statement))."""
    try:
        return KernelIR(prog), None
    except Untranslatable as exc:
        return None, (exc.args[0], exc.args[1] if len(exc.args) > 1 else None)


__all__ = ["KernelIR", "Block", "Lowered", "Untranslatable", "translate_ir", "EXIT"]
