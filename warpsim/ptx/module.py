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
import sys
from pathlib import Path

import numpy as np

from .cluster import ClusterState
from .contraction import contract
from .memory import PARAM_WINDOW, GlobalMemory, Memory
from .regfile import Warp
from .spellings import canonical
from .syntax import SCOPED_REG, PTXError, make_statement, parse_int, parse_module, scoped_names, statements
from .targets import check_module_target

__all__ = ["load", "Module"]

_BRANCH = re.compile(r"bra(?:\.uni)?\Z")
#: opcodes the scheduler's general step runs: control flow, barriers, what can suspend a warp
_GENERAL = ("bra", "call", "ret", "exit", "bar", "mbarrier", "setmaxnreg")
_SHARED_DECL = re.compile(r"(?:\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\s*(?:\[(\d*)\])?"
                          r"(?:\s*\[(\d+)\])?\Z")
#: default launch limits: CTAs in one grid, and CTAs run together in one batch
MAX_CTAS = 1 << 16
CTAS_PER_BATCH = 128
#: batches of CTAs per dask task (launch(..., client=)): enough work per task to pay its scheduling
DASK_BATCHES_PER_TASK = 2
_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def _alignment(align, typ, line, text) -> int:
    """A declaration's ``.align`` (default: its element size); PTX requires a power of two."""
    a = int(align) if align else _SIZES.get(typ, 1)
    if a < 1 or a & (a - 1):
        raise PTXError(f".align {a}: an alignment must be a power of two", line=line, statement=text)
    return a


def load(path_or_text, *, fmad=True) -> "Module":
    """Read a PTX module: a path to a ``.ptx`` file (str or Path) or the PTX text itself.

    fmad: whether ptxas contracts (``--fmad``, its default; Triton's ``enable_fp_fusion``): a multiply or
    division into the add / sub reading it, one rounding (:mod:`warpsim.ptx.contraction`).

    Example:

    >>> mod = warpsim.ptx.load('''.version 8.0
    ... .target sm_90
    ... .address_size 64
    ... .visible .entry add1(.param .u64 p)
    ... {
    ...     .reg .b32 %r<3>;  .reg .b64 %rd<4>;
    ...     ld.param.u64 %rd1, [p];  mov.u32 %r1, %tid.x;  mul.wide.u32 %rd2, %r1, 4;  add.s64 %rd3, %rd1, %rd2;
    ...     ld.global.u32 %r2, [%rd3];  add.u32 %r2, %r2, 1;  st.global.u32 [%rd3], %r2;  ret;
    ... }''')
    >>> x = np.arange(32, dtype=np.uint32)
    >>> mod.launch("add1", grid=1, block=32, args=[x])
    >>> x[:4]
    array([1, 2, 3, 4], dtype=uint32)
    """
    if isinstance(path_or_text, str) and not path_or_text.strip():
        raise ValueError("load() got an empty string: pass PTX text (a module with .version, .target and "
                         "entries) or a path to a .ptx file")
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text
                                          and not path_or_text.lstrip().startswith(".")
                                          and not any(c in path_or_text for c in ";{}")):
        p = Path(path_or_text)
        try:
            exists = p.exists()
        except OSError as exc:        # e.g. a name too long for the file system
            raise ValueError(f"{str(p)[:60]!r}...: neither PTX text nor a readable path ({exc.strerror})") from None
        if not exists:
            raise FileNotFoundError(f"no PTX file {str(p)!r} (pass a path to a .ptx file or the PTX text)")
        if not p.is_file():
            raise ValueError(f"{str(p)!r} is not a file (pass a path to a .ptx file or the PTX text)")
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read PTX file {str(p)!r}: {exc}") from None
        return Module(text, name=str(p), fmad=fmad)
    if not isinstance(path_or_text, str):
        raise TypeError(f"load() takes a path or PTX text, not {type(path_or_text).__name__}")
    return Module(path_or_text, fmad=fmad)


_CALL = re.compile(r"call(?:\.uni)?\s+(?:\(\s*([^)]*?)\s*\)\s*,\s*)?([\w$]+)\s*(?:,\s*\(\s*([^)]*?)\s*\))?\s*\Z")
_PARAM_DECL = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\s*(?:\[(\d+)\])?\Z")
_LOCAL_DECL = re.compile(r"\.local\s+(?:\.align\s+(\d+)\s+)?(?:\.v([248])\s+)?\.(\w+)\s+([\w$]+)((?:\s*\[\d+\])*)\Z")
EXIT_PC = -2          # reconvergence point of a branch whose paths meet only when lanes leave
CALL_RPC = -3         # a call's stack entry: no pc equals it, so it pops only when its lanes have all returned


class _Function:
    """One entry or .func laid out in the program: its pc range, labels, registers and variables."""

    def __init__(self, ent, start):
        self.entry = ent
        self.name = ent.name
        self.start = start
        self.end = start
        self.labels = {}
        self.scoped_labels = {}    # (brace block number, name) -> pc: labels local to a { } block
        self.reg_decls = []        # (line, text)
        self.params = {}           # .param variable -> (offset, size) in the function's frame
        self.frame_bytes = 0
        self.locals = []           # (name, align, size, line)
        self.formals = [p.name for p in ent.params] if ent.kind == "func" else []
        self.rets = [p.name for p in ent.returns]
        if ent.kind == "func":
            for p in list(ent.returns) + list(ent.params):
                self.param_var(p.name, p.align or max(p.bits // 8, 1), p.array or max(p.bits // 8, 1))

    def param_var(self, name, align, size):
        """A .param variable; a scoped redeclaration (each call block declares its own param0) that
        is larger or more aligned moves the name to a new slot (the blocks never overlap in time)."""
        if name in self.params:
            off, have = self.params[name]
            if have >= size and off % align == 0:
                return
        off = (self.frame_bytes + align - 1) // align * align
        self.params[name] = (off, size)
        self.frame_bytes = off + size


class _Program:
    """An entry and every .func of the module, laid out as one statement list: labels resolved,
    registers and variables per function, the reconvergence point of every branch."""

    def __init__(self, entry, mod, fmad=True):
        self.entry = entry
        self.code = []            # Statement list
        self.shared = []          # (name, align, size, extern, line)
        self.functions = {}
        self.fn_of = []           # pc -> _Function
        for decl, line in mod.shared:
            self._shared_decl(decl, line)
        for ent in [entry] + [f for f in mod.functions.values()]:
            self._lay_out(ent, mod)
        self.labels = self.functions[entry.name].labels
        self.reg_decls = self.functions[entry.name].reg_decls
        for fn in self.functions.values():
            for pc in range(fn.start, fn.end):
                st = self.code[pc]
                if _BRANCH.match(st.opcode):
                    target = _label_of(fn, st)
                    if target is None:
                        raise PTXError(f"branch target {st.operands[0] if st.operands else ''!r} is not a label of "
                                       f"{fn.name}", line=st.line, statement=st.text,
                                       token=st.operands[0] if st.operands and isinstance(st.operands[0], str) else None)
                    st.target = target
                elif st.opcode.startswith("call"):
                    self._call(st, mod)
        check_module_target(self.code, mod.target)
        if fmad and "debug" not in (mod.target or ""):      # ptxas -G (a debug target) optimises nothing
            contract(self.code, self.functions.values())
        self.reconverge = {}
        for fn in self.functions.values():
            self.reconverge.update(_post_dominators(self.code, fn))
        # per pc, how the scheduler's converged fast path takes it: 1 a statement it executes, 2 a
        # direct branch, 5 an unguarded bar.sync, 0 one it leaves to the general step (other control,
        # barriers, mbarrier waits)
        self.plain = [2 if _BRANCH.match(st.opcode) else
                      5 if _BAR.match(st.opcode) and ".arrive" not in st.opcode and st.guard is None else
                      0 if st.opcode.startswith(_GENERAL) else 1 for st in self.code]
        # global atomics and reductions: CTAs of different batches meet at their addresses, so the
        # batches of a launch run one after the other, never side by side (warpsim.ptx.workers)
        self.cross_cta = any(st.opcode.split(".")[0] in ("atom", "red", "multimem")
                             or st.opcode.startswith("cp.reduce") for st in self.code)

    def _lay_out(self, ent, mod):
        fn = _Function(ent, len(self.code))
        self.functions[ent.name] = fn
        off = ent.body_line - 1
        chain = ()                 # the brace blocks enclosing the current statement, innermost last
        nblocks = 0
        block_regs = {}            # brace block -> {register declared in it: its name in the function}
        for kind, line, item in statements(ent.body, scopes=True):
            line += off
            if kind == "scope":
                if item == "{":
                    nblocks += 1
                    chain = chain + (nblocks,)
                else:
                    block_regs.pop(chain[-1], None)
                    chain = chain[:-1]
                continue
            if kind == "label":
                if chain:
                    fn.scoped_labels[(chain[-1], item)] = len(self.code)
                else:
                    fn.labels[item] = len(self.code)
                continue
            text = " ".join(item.split())
            if not text or re.fullmatch(r"@!?%?[\w$]+", text):
                continue            # an empty statement (';;'), as ptxas takes it
            if chain and text.startswith(".reg"):
                # a register declared in a { } block (inline asm's scratch registers) is that block's own:
                # each gets a name of its own, so blocks may reuse a name with another type
                m = SCOPED_REG.match(text)
                if m:
                    names = [x.strip() for x in m.group(2).split(",")]
                    block_regs.setdefault(chain[-1], {}).update({nm: f"{nm}$b{chain[-1]}" for nm in names})
            if block_regs:
                text = scoped_names(text, chain, block_regs)
            if text.startswith(".reg"):
                fn.reg_decls.append((line, text))
            elif text.startswith((".shared", ".extern .shared")):
                self._shared_decl(text, line)
            elif text.split()[0] in (".pragma", ".loc", ".file"):
                continue
            elif text.startswith(".param"):
                m = _PARAM_DECL.match(text)
                if not m or m.group(2) not in _SIZES:
                    raise PTXError("cannot read this .param declaration (expected e.g. '.param .b32 param0;' or "
                                   "'.param .align 8 .b8 param0[16];')", line=line, statement=text)
                align, typ, name, count = m.groups()
                size = _SIZES[typ] * int(count or 1)
                fn.param_var(name, _alignment(align, typ, line, text), size)
            elif text.startswith(".local"):
                m = _LOCAL_DECL.match(text)
                if not m or m.group(3) not in _SIZES:
                    raise PTXError("cannot read this .local declaration (expected e.g. "
                                   "'.local .align 16 .b8 __local_depot0[64];')", line=line, statement=text)
                align, vec, typ, name, dims = m.groups()
                size = _SIZES[typ] * int(vec or 1)
                for d in re.findall(r"\d+", dims or ""):
                    size *= int(d)
                fn.locals.append((name, _alignment(align, typ, line, text), size, line))
            elif text.startswith((".global", ".const")):
                raise PTXError(f"{text.split()[0]} variables inside a function are not supported (declare them at "
                               "module level)", line=line, statement=text, token=text.split()[0])
            else:
                st = make_statement(line, text)
                st.scopes = chain
                self.code.append(st)
                self.fn_of.append(fn)
        fn.end = len(self.code)

    def _call(self, st, mod):
        body = st.text[len(st.guard and st.text.split(None, 1)[0] or ""):].strip() if st.guard else st.text
        m = _CALL.match(body)
        if not m or m.group(2).startswith("%"):
            raise PTXError("cannot read this call (expected 'call (ret), func, (arg, ...);'; indirect calls "
                           "through a register are not modelled)", line=st.line, statement=st.text, token=st.opcode)
        rets = [x.strip() for x in (m.group(1) or "").split(",") if x.strip()]
        name = m.group(2)
        args = [x.strip() for x in (m.group(3) or "").split(",") if x.strip()]
        if name not in self.functions:
            if name in mod.declared:
                st.call = (None, name, args)      # an extern without a body: an error only when reached
                return
            raise PTXError(f"call of {name}: it is not a .func of this module", line=st.line, statement=st.text,
                           token=name)
        callee = self.functions[name]
        if len(args) != len(callee.formals) or len(rets) != len(callee.rets):
            raise PTXError(f"{name} takes {len(callee.formals)} parameter(s) and returns {len(callee.rets)}; "
                           f"this call passes {len(args)} and receives {len(rets)}", line=st.line,
                           statement=st.text, token=name)
        st.call = (callee, rets, args)

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
        self.shared.append((name, _alignment(align, typ, line, text), 0 if extern else count * _SIZES[typ], extern, line))


def _label_of(fn, st):
    """The pc a branch names: the innermost enclosing brace block's label of that name, else the function's."""
    if len(st.operands) != 1 or not isinstance(st.operands[0], str):
        return None
    name = st.operands[0]
    for block in reversed(getattr(st, "scopes", ())):
        if (block, name) in fn.scoped_labels:
            return fn.scoped_labels[(block, name)]
    return fn.labels.get(name)


def _post_dominators(code, fn):
    """pc of every conditional branch of ``fn`` -> its reconvergence pc: the first statement of the
    immediate post-dominator of the branch's basic block (EXIT_PC when the paths meet only at exit)."""
    lo, hi = fn.start, fn.end
    if lo == hi:
        return {}
    leaders = {lo} | {pc for pc in list(fn.labels.values()) + list(fn.scoped_labels.values()) if lo <= pc < hi}
    for pc in range(lo, hi):
        op = code[pc].opcode
        if _BRANCH.match(op) or op in ("ret", "exit"):
            if pc + 1 < hi:
                leaders.add(pc + 1)
    starts = sorted(leaders)
    block_of = {}
    for b, s0 in enumerate(starts):
        for pc in range(s0, starts[b + 1] if b + 1 < len(starts) else hi):
            block_of[pc] = b
    nb = len(starts)
    exit_node = nb
    succ = []
    for b, s0 in enumerate(starts):
        last = (starts[b + 1] if b + 1 < nb else hi) - 1
        st = code[last]
        out = set()
        fall = block_of.get(last + 1, exit_node)
        if _BRANCH.match(st.opcode):
            out.add(block_of.get(st.target, exit_node))
            if st.guard is not None:
                out.add(fall)
        elif st.opcode in ("ret", "exit"):
            out.add(exit_node)
            if st.guard is not None:
                out.add(fall)
        else:
            out.add(fall)
        succ.append(out)
    full = (1 << (nb + 1)) - 1
    pdom = [full] * nb + [1 << exit_node]
    changed = True
    while changed:
        changed = False
        for b in range(nb - 1, -1, -1):
            acc = full
            for s in succ[b]:
                acc &= pdom[s]
            new = acc | (1 << b)
            if new != pdom[b]:
                pdom[b], changed = new, True
    out = {}
    for pc in range(lo, hi):
        st = code[pc]
        if st.guard is None or not (_BRANCH.match(st.opcode) or st.opcode in ("ret", "exit")):
            continue
        b = block_of[pc]
        strict = pdom[b] & ~(1 << b)
        ip = exit_node
        for d in range(nb + 1):
            if strict >> d & 1 and pdom[d] == strict:
                ip = d
                break
        out[pc] = EXIT_PC if ip == exit_node else starts[ip]
    return out


class Module:
    """A loaded PTX module: its entries, ready to launch.

    Example:

    >>> mod = warpsim.ptx.load('''.version 8.0
    ... .target sm_90
    ... .address_size 64
    ... .visible .entry k(.param .u32 n)
    ... {
    ...     ret;
    ... }''')
    >>> mod.entries, mod.params("k"), mod.target
    (['k'], [('n', 'u32')], 'sm_90')
    >>> mod.launch("k", grid=(2, 1, 1), block=32, args=[7])
    """

    def __init__(self, text: str, name: str = "<ptx>", *, fmad: bool = True):
        self.name = name
        self.text = text
        self.fmad = bool(fmad)
        self._mod = parse_module(text)
        self.version = self._mod.version
        self.target = self._mod.target
        self._programs = {}
        self._translations = {}
        #: the engine of the last launch: {"entry", "requested", "engine", "reason"} (None before one)
        self.last_engine = None

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
            self._programs[entry] = _Program(self._entry(entry), self._mod, fmad=self.fmad)
        return self._programs[entry]

    def translation(self, entry):
        """What the native translator makes of ``entry`` (:class:`warpsim.ptx.translate.Translation`:
        native or not, the reason, the statement classes)."""
        if entry not in self._translations:
            from .translate import translate

            self._translations[entry] = translate(self.program(entry))
        return self._translations[entry]

    def _choose_engine(self, entry, engine):
        """Record in ``last_engine`` the engine that runs this launch (warn when "compiled" cannot)."""
        reason = "asked for" if engine == "interpret" else self.translation(entry).reason
        if engine == "compiled":
            import warnings

            from .translate import TranslationFallbackWarning

            warnings.warn(f"engine='compiled': running on the interpreter: {reason}", TranslationFallbackWarning,
                          stacklevel=3)
        self.last_engine = {"entry": entry, "requested": engine, "engine": "interpret", "reason": reason}

    def link(self, *others) -> "Module":
        """Resolve this module's ``.extern .func`` declarations with other modules' definitions, as
        nvJitLink links separately compiled PTX (numba-cuda's C++ shims, for one): their ``.func``
        bodies and module variables join this module.  others: PTX texts or Modules.  Returns self."""
        for other in others:
            if isinstance(other, str):
                other = Module(other, name="<linked ptx>")
            if not isinstance(other, Module):
                raise TypeError(f"link() takes PTX texts or warpsim.ptx Modules, not {type(other).__name__}")
            theirs = other._mod
            for name, fn in theirs.functions.items():
                mine = self._mod.functions.get(name)
                if mine is not None and mine.body != fn.body:
                    raise PTXError(f"{name} is defined in {self.name} and, differently, in {other.name}: cannot link")
                self._mod.functions[name] = fn
            self._mod.declared |= theirs.declared
            have = {v.name for v in self._mod.variables}
            self._mod.variables += [v for v in theirs.variables if v.name not in have]
            self._mod.shared += theirs.shared
            self.text = f"{self.text}\n{other.text}"      # what a worker process re-reads: the linked whole
        self._programs = {}
        self._translations = {}
        return self

    @property
    def variables(self) -> dict:
        """Module-level .global / .const variables: name -> their bytes as initialised."""
        return {v.name: v.data for v in self._mod.variables}

    def launch(self, entry, grid, block, args, shared_bytes=0, *, memory=None, arch="sm_90",
               max_steps=10_000_000, cluster=None, max_ctas=MAX_CTAS, ctas_per_batch=CTAS_PER_BATCH,
               progress=None, wgmma_strict=False, workers=None, client=None, engine=None):
        """Run ``entry`` over ``grid`` CTAs of ``block`` threads.

        grid, block: int or 1- to 3-tuples.  args: the kernel arguments in ``.param`` order --
        numpy arrays for pointer parameters (mapped into global memory in place: the kernel's
        stores land in them), ints (device addresses in ``memory`` included) and floats for
        scalars, and ``bytes`` for ``.b8`` array parameters (a parameter struct, passed verbatim,
        device pointers included).  shared_bytes: dynamic shared memory (``.extern .shared``)
        per CTA.  memory: a :class:`GlobalMemory` the kernel addresses (a new one if None); the
        module's ``.global``/``.const`` variables are mapped into it on first use.  max_steps:
        statements executed per batch of CTAs (one per group of warps at a program counter)
        before the launch stops with an error naming where it was.  cluster: CTAs per cluster, an
        int or 1- to 3-tuple dividing the grid (default: the entry's ``.reqnctapercluster``, else
        1); the CTAs of a cluster share their shared memory (``mapa``, ``.shared::cluster``).  The
        grid runs in batches of ``ctas_per_batch`` CTAs (bounded memory; CTAs of different batches
        never run at the same time, as on a GPU too small to hold the grid; a launch with clusters
        of more than one CTA runs as one batch); a grid of more than ``max_ctas`` CTAs is refused
        (raise the limit to run it).  progress: print a batch counter to stderr (default: when
        there is more than one batch and stderr is a terminal).  wgmma_strict: a read of an
        in-flight wgmma's accumulator registers is an error (the PTX ISA leaves it undefined)
        instead of what ptxas makes of it, a wait for that wgmma with a ``WgmmaSerializedWarning``.
        workers: processes that run the batches of a grid of several batches side by side (None:
        ``WARPSIM_PTX_WORKERS``, else the idle CPUs; 1: none); the result is the sequential launch's,
        word for word, or the launch runs sequentially (:mod:`warpsim.ptx.workers`).  client: a
        ``dask.distributed.Client``: the batches run on its cluster (a few batches a task, at most
        twice its threads in flight, writes merged in batch order as tasks finish), with the same
        words and the same sequential fallback (``workers.run_dask``; progress: a task counter).
        engine: None (the fastest exact engine), "interpret" (the reference) or "compiled" (native
        code; in this build every kernel falls back to the interpreter with a
        ``TranslationFallbackWarning`` naming why: :mod:`warpsim.ptx.translate`).  ``last_engine``
        records which engine ran and why.  Returns nothing.
        """
        from .translate import check_engine

        check_engine(engine)
        prog = self.program(entry)
        self._choose_engine(entry, engine)
        g = _dims(grid, "grid")
        b = _dims(block, "block")
        nthreads = b[0] * b[1] * b[2]
        if nthreads % 32:
            raise ValueError(f"block {b} has {nthreads} threads: warpsim runs whole warps, so the thread count "
                             "must be a multiple of 32")
        if nthreads > 1024:
            raise ValueError(f"block {b} has {nthreads} threads; a CTA has at most 1024")
        dirs = prog.entry.directives
        if "reqntid" in dirs and tuple(dirs["reqntid"]) + (1,) * (3 - len(dirs["reqntid"])) != b:
            raise ValueError(f"{entry} declares .reqntid {', '.join(map(str, dirs['reqntid']))}: block must be that, "
                             f"got {b}")
        if "maxntid" in dirs and nthreads > int(np.prod(dirs["maxntid"])):
            raise ValueError(f"{entry} declares .maxntid {', '.join(map(str, dirs['maxntid']))}: at most "
                             f"{int(np.prod(dirs['maxntid']))} threads per block, got {nthreads}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
            raise ValueError(f"shared_bytes must be a non-negative integer, got {shared_bytes!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        for name, v in (("max_ctas", max_ctas), ("ctas_per_batch", ctas_per_batch)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        nctas = g[0] * g[1] * g[2]
        if nctas > max_ctas:
            raise ValueError(f"grid {g} has {nctas} CTAs, more than max_ctas={max_ctas}: pass a larger max_ctas= "
                             f"to run it (CTAs run in batches of ctas_per_batch={ctas_per_batch}; time grows with "
                             "the grid)")
        if memory is None:
            memory = GlobalMemory()
        elif not isinstance(memory, GlobalMemory):
            raise TypeError(f"memory must be a warpsim.ptx.GlobalMemory, not {type(memory).__name__}")
        want = tuple(dirs["reqnctapercluster"]) + (1,) * (3 - len(dirs["reqnctapercluster"])) \
            if "reqnctapercluster" in dirs else None
        cl = _dims(cluster, "cluster") if cluster is not None else (want or (1, 1, 1))
        if want is not None and cl != want:
            raise ValueError(f"{entry} declares .reqnctapercluster {', '.join(map(str, want))}: cluster must be that, "
                             f"got {cl}")
        if any(gi % ci for gi, ci in zip(g, cl)):
            raise ValueError(f"cluster {cl} must divide the grid {g} in every dimension")
        if cl[0] * cl[1] * cl[2] > 16:
            raise ValueError(f"cluster {cl} has {cl[0] * cl[1] * cl[2]} CTAs; at most 16 (8 portable) are allowed")
        if "maxclusterrank" in dirs and cl[0] * cl[1] * cl[2] > int(dirs["maxclusterrank"][0]):
            raise ValueError(f"{entry} declares .maxclusterrank {dirs['maxclusterrank'][0]}: cluster {cl} is larger")
        explicit = cluster is not None or want is not None or "explicitcluster" in dirs
        per = nctas if cl[0] * cl[1] * cl[2] > 1 else max(1, min(int(ctas_per_batch), nctas))
        batches = range(0, nctas, per)
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer))
                                    or workers < 1):
            raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
        if client is not None:
            from .workers import is_dask_client

            if not is_dask_client(client):
                raise TypeError(f"client must be a dask.distributed.Client, not {type(client).__name__}")
        if progress is None:
            progress = len(batches) > 1 and sys.stderr.isatty()
        first_batch = None
        if len(batches) > 1 and not prog.cross_cta:
            from .workers import aliased, default_workers, run, run_dask, split

            n = default_workers() if workers is None else int(workers)
            if n > 1 or client is not None:
                first_batch = _Kernel(prog, g, b, int(shared_bytes), arch, self.name, memory, self, cl, explicit,
                                      first_cta=0, nctas=min(per, nctas))
                first_batch.bind(args)
                if not aliased(memory.buffers):
                    syms = {v.name: memory.module_symbols[(id(self), v.name)][0] for v in self._mod.variables}
                    geom = (g, b, int(shared_bytes), arch, cl, explicit, per, nctas)
                    state = (first_batch.params, dict(first_batch.param_offsets), int(max_steps),
                             bool(wgmma_strict), list(memory.bases), [np.array(x) for x in memory.buffers], syms)
                    if client is not None:
                        heads = [(self.text, self.name, entry, geom, firsts)
                                 for firsts in split(batches, max(1, len(batches) // DASK_BATCHES_PER_TASK))]
                        if run_dask(client, _batch_worker, heads, state, memory.buffers, progress):
                            return
                    else:
                        jobs = [(self.text, self.name, entry, geom, firsts) + state for firsts in split(batches, n)]
                        if run(_batch_worker, jobs, memory.buffers):
                            return
        for i, first in enumerate(batches):
            if progress:
                print(f"\r{entry}: CTAs {first}..{min(first + per, nctas) - 1} of {nctas} (batch {i + 1}/"
                      f"{len(batches)})", end="", file=sys.stderr, flush=True)
            k = _Kernel(prog, g, b, int(shared_bytes), arch, self.name, memory, self, cl, explicit,
                        first_cta=first, nctas=min(per, nctas - first))
            if k._async is not None:
                k._async.strict = bool(wgmma_strict)
            if first_batch is None:
                k.bind(args)
                first_batch = k
            else:                   # the arguments as the first batch mapped them (same addresses)
                k.bind_like(first_batch)
            k.run(int(max_steps))
        if progress:
            print(file=sys.stderr)


_WORKER_MODULES: dict = {}


def _batch_worker(text, name, entry, geom, firsts, params, offsets, max_steps, strict, bases, datas, syms):
    """In a worker process: batches ``firsts`` of a launch, in order, on a copy of its global
    memory; -> per mapped array (packed read mask, packed write mask, the written bytes), or None
    when a batch raised or warned (the sequential launch then reports it)."""
    import warnings

    from .memory import Track

    key = (name, text)
    mod = _WORKER_MODULES.get(key)
    if mod is None:
        _WORKER_MODULES.clear()
        mod = _WORKER_MODULES[key] = Module(text, name)
    gm = GlobalMemory()
    for base, data in zip(bases, datas):
        gm.map(data, address=base)
    for vname, addr in syms.items():
        gm.module_symbols[(id(mod), vname)] = (addr, gm.buffers[gm.bases.index(addr)])
    gm.track = Track([d.size for d in datas])
    g, b, shared, arch, cl, explicit, per, nctas = geom
    prog = mod.program(entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for first in firsts:
                k = _Kernel(prog, g, b, shared, arch, mod.name, gm, mod, cl, explicit, first_cta=first,
                            nctas=min(per, nctas - first))
                if k._async is not None:
                    k._async.strict = strict
                k._set_params(params, dict(offsets))
                k.run(max_steps)
        except Exception:
            return None
    if caught:
        return None
    out = []
    for i, d in enumerate(datas):
        w = gm.track.written[i]
        out.append((np.packbits(gm.track.read[i]), np.packbits(w), d[w]))
    return out


def _dims(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if isinstance(v, list):
        v = tuple(v)
    if not isinstance(v, tuple) or not 1 <= len(v) <= 3 or \
            not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in v):
        raise ValueError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {v!r}")
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))


class _Frame:
    """A call in flight on one warp: where its results go and the callee state it hides."""

    def __init__(self, callee, caller, rets, mask, saved):
        self.callee, self.caller, self.rets, self.mask, self.saved = callee, caller, rets, mask, saved


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
        self.dynamic_smem = shared_bytes
        total = off + shared_bytes
        # local memory: every function's .local variables, one static area per thread
        loc = 0
        self.local_range = {}
        for fn in prog.functions.values():
            lo = loc
            for name, align, size, line in fn.locals:
                loc = (loc + align - 1) // align * align
                self._symbols[name] = loc
                loc += size
            self.local_range[fn.name] = (lo, loc)
        # module variables in global memory (mapped once per GlobalMemory)
        for v in module._mod.variables:
            key = (id(module), v.name)
            if key not in glob.module_symbols:
                arr = np.frombuffer(v.data, dtype=np.uint8).copy() if v.data else np.zeros(1, np.uint8)
                glob.module_symbols[key] = (glob.map(arr), arr)
            self._symbols[v.name] = glob.module_symbols[key][0]
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
_BAR = re.compile(r"(?:bar|barrier)(?:\.cta)?\.(?:sync|arrive)(?:\.aligned)?\Z")


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
