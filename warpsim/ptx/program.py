"""The decoded program of a PTX entry: its functions laid out in one code array, their parameter
and local variables, the shared declarations, call sites, and each branch's reconvergence point (the
immediate post-dominator), computed once per entry and shared by every launch and engine."""

from __future__ import annotations

import re

from .contraction import contract
from .syntax import SCOPED_REG, PTXError, make_statement, scoped_names, statements
from .targets import check_module_target


_BAR = re.compile(r"(?:bar|barrier)(?:\.cta)?\.(?:sync|arrive)(?:\.aligned)?\Z")
_BRANCH = re.compile(r"bra(?:\.uni)?\Z")
#: opcodes the scheduler's general step runs: control flow, barriers, what can suspend a warp
_GENERAL = ("bra", "call", "ret", "exit", "bar", "mbarrier", "setmaxnreg")
_SHARED_DECL = re.compile(r"(?:\.extern\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\s*(?:\[(\d*)\])?"
                          r"(?:\s*\[(\d+)\])?\Z")
_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def _alignment(align, typ, line, text) -> int:
    """A declaration's ``.align`` (default: its element size); PTX requires a power of two."""
    a = int(align) if align else _SIZES.get(typ, 1)
    if a < 1 or a & (a - 1):
        raise PTXError(f".align {a}: an alignment must be a power of two", line=line, statement=text)
    return a


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
        self.module_variables = [v.name for v in mod.variables]     # .global / .const variables (global memory)
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

    def shared_layout(self):
        """(name -> byte offset, bytes of static shared memory): static variables in declaration
        order, then the dynamic (``.extern``) ones at the end, each at its alignment."""
        offsets, off, externs = {}, 0, []
        for name, align, size, extern, line in self.shared:
            if extern:
                externs.append((name, align))
                continue
            off = (off + align - 1) // align * align
            offsets[name] = off
            off += size
        for name, align in externs:
            off = (off + align - 1) // align * align
            offsets[name] = off
        return offsets, off

    def local_layout(self):
        """(name -> byte offset, function -> its [lo, hi) bytes, total bytes): every function's .local
        variables, entry first, each at its alignment, in one static area per thread (a later function's
        variable of the same name wins, as in the interpreter's symbol table)."""
        offsets, ranges, off = {}, {}, 0
        for fn in self.functions.values():
            lo = off
            for name, align, size, _ in fn.locals:
                off = (off + align - 1) // align * align
                offsets[name] = off
                off += size
            ranges[fn.name] = (lo, off)
        return offsets, ranges, off

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
