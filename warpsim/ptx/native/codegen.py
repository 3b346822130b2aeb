"""KernelIR -> the source of one numba function that runs a range of CTAs of a launch.

Per CTA, every warp runs its blocks until it finishes or reaches ``bar.sync``; when no warp can run,
the barrier releases (every warp still running has arrived) or the CTA is done.  Within a warp the
blocks run on its reconvergence stack (:mod:`.rt`): the top entry's lanes are ``act``; lane
statements run as loops over the 32 lanes (consecutive lane statements share one loop, except that a
store and a load never share one, so lanes see each other's stores in the interpreter's order).

The source is shaped for numba's compile time (docs/speed.md, "first compile"): register words go
through intrinsics on the files' addresses, the launch's arrays come from one cached helper, the
integer arguments of runtime calls are int64 constants, and lane loops are grouped
into functions of up to ``CHUNK`` statements.
"""

from __future__ import annotations

import re

from .ir import EXIT
from .lower import FILES, Untranslatable, register_file, sfu_batch_lines
from .reroll import Tables, reroll, substituted, template, template_text
from .rt import CALL_DEPTH, CALL_RPC, DEADLOCK, FRAME_DEPTH, LAUNCH_SHAPE, MAX_STEPS, SFU_BATCH


def _guard(ir, st):
    if st.guard is None:
        return None
    neg, p = st.guard
    return f"{'not ' if neg else ''}{ir.ref(p)}"


def _mem(st):
    op = st.opcode
    return "st" if op.startswith("st.") and not op.startswith("st.param") else "ld" if op.startswith("ld.") else None


def _pure(st, low):
    """A lane statement that only computes registers from registers: no memory, no way to stop the kernel."""
    return _mem(st) is None and not any("return" in x for x in low.lines)


#: the fewest consecutive register-only statements given a lane loop of their own (``_vector_runs``)
VECTOR_RUN = 4


def _vector_runs(items):
    """A lane run split so that its runs of at least ``VECTOR_RUN`` register-only statements (``_pure``) have
    lane loops of their own: LLVM runs such a loop as vector instructions over the 32 lanes (the register
    rows are ``TT`` words apart, a constant; a loop with memory accesses or a failure exit stays scalar).
    Running one statement for all lanes before the next is the interpreter's order.  -> [("vector" | "lane",
    statements)] (reroll.py rerolls a vector run's repeats only from LANES_MIN_RUN on)."""
    runs = []
    for it in items:
        p = _pure(*it)
        if runs and runs[-1][0] == p:
            runs[-1][1].append(it)
        else:
            runs.append((p, [it]))
    out = []
    for p, run in runs:
        p = p and len(run) >= VECTOR_RUN
        if out and not p and not out[-1][0]:
            out[-1][1].extend(run)
        else:
            out.append((p, list(run)))
    return [("vector" if p else "lane", run) for p, run in out]


def _joins(group, st, low):
    """Whether special-function statement ``st`` can join the warp group before it (lower.sfu_batch_lines): a
    group of statements of the same form and guard, none of which wrote a register ``st`` reads."""
    kind, items = group
    first, flow = items[0]
    if kind != "warp" or low.unit is None or flow.unit is None or len(items) >= SFU_BATCH:
        return False
    written = {r for _, x in items for r in x.writes}
    return low.unit.call == flow.unit.call and st.guard == first.guard and not written & set(low.reads)


def _touched(items):
    """The registers statements read (their guards' too) and write."""
    reads = {r for st, low in items for r in low.reads} | {st.guard[1] for st, _ in items if st.guard is not None}
    return reads, {r for _, low in items for r in low.writes}


def _units_together(stmts):
    """The statements with each special-function statement moved down past the lane statements after it that do
    not touch its registers, up to the next statement of its form, so that they run in one call of the unit
    (_joins).  A Triton kernel computes each ex2's operand just before it (mul, ex2, mul, ex2, ...); only the
    registers order those statements, and the moved ones keep their order among themselves."""
    out, held = [], []
    for st, low in stmts:
        if low.unit is not None:
            if held and _joins(("warp", held), st, low):
                held.append((st, low))
                continue
            out.extend(held)
            held = [(st, low)]
            continue
        if held and low.kind == "lane":
            reads, writes = _touched(held)
            mine_r, mine_w = _touched([(st, low)])
            if not (mine_r & writes or mine_w & (reads | writes)):
                out.append((st, low))
                continue
        out.extend(held)
        held = []
        out.append((st, low))
    return out + held


def _groups(stmts):
    """Runs of lane statements (one lane loop each) and warp statements (one each, or a run of special-function
    statements of one form, _units_together), in order."""
    stmts = _units_together(stmts)
    out, cur, seen = [], [], set()

    def close():
        if cur:
            out.extend(_vector_runs(cur))

    for st, low in stmts:
        if low.kind == "lane":
            m = _mem(st)
            if m and cur and (("ld" if m == "st" else "st") in seen or m == "st" and "st" in seen):
                close()
                cur, seen = [], set()
            cur.append((st, low))
            if m:
                seen.add(m)
        elif low.kind in ("warp", "wait", "park"):
            close()
            cur, seen = [], set()
            if out and _joins(out[-1], st, low):
                out[-1][1].append((st, low))
            else:
                out.append(("warp", [(st, low)]))
    close()
    return out


#: the register files' arrays (lower.FILES) and the names of their data addresses in the generated code
_ADDRESS = {"P": "AP", "R16": "A16", "R32": "A32", "R64": "A64"}
_CONTEXT = ("TID_x", "TID_y", "TID_z", "NTID_x", "NTID_y", "NTID_z", "CTAID_x", "CTAID_y", "CTAID_z", "NCTAID_x",
            "NCTAID_y", "NCTAID_z", "W", "PARAMS", "SMEMP", "SMEM_BYTES", "SMEM_STATIC", "LMEMP", "LMEM_BYTES", "LMEM_STRIDE",
            "BASES", "SIZES", "PTRS", "TRK", "TOFF",
            "SEG", "NOSEG", "GWARP", "SHV", "SHJ", "SA", "SB", "SO", "SP0", "SP1", "SSL", "SLF", "T",
            "live", "CRANK", "CS", "CX", "CY", "CZ", "CCTA_x", "CCTA_y", "CCTA_z", "CLID_x", "CLID_y", "CLID_z",
            "NCL_x", "NCL_y", "NCL_z", "GSYM", "SMEM0", "TMRAW", "TMF", "PARK", "PSLOT", "PPH", "MBO", "MBS", "CLA", "CLS", "NREG", "NRV", "NREG0",
            *_ADDRESS.values())
#: statements per generated function (several lane loops): numba compiles many tiny functions slowly, and one
#: big function more slowly still (LLVM's function passes grow faster than linearly: softmax as one function
#: took 54 s; 64 or 200 statements a function gave no gain over 32)
CHUNK = 32
_CONST = re.compile(r"np\.uint64\((\d+)\)")     # integer constants: module-level numpy scalars (cheap typing)
#: a long tuple of int64 register rows (lower.int_tuple) becomes a module constant: one global to type and lower
#: where the inline tuple was a call of np.int64 per row (a wgmma's 32 D rows: 130 IR statements).  Short ones (an
#: mma.sync's operands, gathered in its inlined call) stay inline: as constants the sm_80 GEMM's launches measured
#: up to 2% slower, inside that host's noise, for no compile time worth having.
_ROW_TUPLE = re.compile(r"\((?:np\.int64\(-?\d+\), ){8,}\)")
#: jitted callees and the positions of their arguments that vary from statement to statement (a PTX line, a
#: status code, a block, a register, a parameter's offset): numba compiles a jitted callee once per literal
#: argument value, so these integer literals become int64 module constants.  The other literal arguments
#: (sizes, widths, alignments, units) stay literal: numba specialises the callee on them, which the run time
#: needs (with sizes as int64 the softmax ran 3x slower, the wgmma kernels 2x).
_SITE_ARGUMENTS = {"fail": (1, 2), "rt_global_at": (1,), "rt_shared_at": (1,), "rt_local_at": (1,),
                   "rt_local_copy": (1, 2, 3), "rt_load": (1,),
                   "rt_branch_on": (10, 11, 12, 13, 14), "rt_goto": (6,), "rt_clear": (1,),
                   # the kernel's register-file and stack sizes (one call a run; a second kernel's sizes would
                   # compile it again: 2 s)
                   "rt_launch_state": tuple(range(3, 11))}


def _parameter_positions(fn, names):
    """The positions of the parameters ``names`` of the jitted function ``fn``."""
    import inspect

    params = list(inspect.signature(fn.py_func).parameters)
    return tuple(params.index(n) for n in names)


def _sparse_wgmma_arguments():
    """A sparse wgmma's shape, scales, kind and tf32 flag: int64 constants (its exact kernel gains nothing from a
    build per form; a kernel of 28 forms built it ~20 times)."""
    from .rt_wgmma import warp_mma_sparse

    return {"rt_wgmma_sparse": _parameter_positions(
        warp_mma_sparse, ("n", "ebits", "dbits", "sd", "sa", "sb", "ta", "tb", "kind", "tf32"))}


def _line_arguments():
    """The synchronisation and TMA units' calls as the kernel source names them (``rt_sync.bar_end``), each
    with the position of its ``line`` parameter (the PTX line a failure names)."""
    import inspect

    from numba.core.registry import CPUDispatcher

    from . import rt_sync, rt_tma

    out = {}
    for unit in (rt_sync, rt_tma):
        for name, fn in vars(unit).items():
            fn = getattr(fn, "by_symbol_of", fn)        # (a callee called by its symbol: engine/linking.py)
            if isinstance(fn, CPUDispatcher) and fn.__module__ == unit.__name__:
                params = list(inspect.signature(fn.py_func).parameters)
                if "line" in params:
                    out[f"{unit.__name__.rsplit('.', 1)[1]}.{name}"] = (params.index("line"),)
    return out


_SITE_ARGUMENTS.update(_line_arguments())
_SITE_ARGUMENTS.update(_sparse_wgmma_arguments())
_SITE_CALL = re.compile(r"\b(" + "|".join(map(re.escape, _SITE_ARGUMENTS)) + r")\(")
_INT = re.compile(r"-?\d+\Z")


def _typed_int_arguments(body):
    """The statement-specific integer literals of jitted calls (``_SITE_ARGUMENTS``) as module-level int64
    constants (``I<n>``, ``IM<n>`` for -n).  -> (body, the values)."""
    out, values, pos = [], set(), 0
    for m in _SITE_CALL.finditer(body):
        if m.start() < pos:
            continue
        i, depth, start, args = m.end(), 1, m.end(), []
        while depth:
            ch = body[i]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            if depth == 0 or (depth == 1 and ch == ","):
                args.append((start, i))
                start = i + 1
            i += 1
        out.append(body[pos:m.end()])
        last = m.end()
        for k, (a, b) in enumerate(args):
            text = body[a:b].strip()
            out.append(body[last:a])
            if k in _SITE_ARGUMENTS[m[1]] and _INT.match(text):
                v = int(text)
                values.add(v)
                lead = body[a:b][:len(body[a:b]) - len(body[a:b].lstrip())]
                out.append(lead + (f"IM{-v}" if v < 0 else f"I{v}"))
            else:
                out.append(body[a:b])
            last = b
        out.append(body[last:i])
        pos = i
    out.append(body[pos:])
    return "".join(out), values


_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_BITS = {"P": 1, "R16": 16, "R32": 32, "R64": 64}
_ELEM = r"\b(P|R16|R32|R64)\[(\d+), ([^\[\]:]+)\]"
_STORE = re.compile(r"^(\s*)" + _ELEM + r" = (.*)$")
_SIGNED = re.compile(r"np\.int64\(np\.int(16|32)\(" + _ELEM + r"\)\)")
_WIDE = re.compile(r"np\.uint64\(" + _ELEM + r"\)")
_READ = re.compile(_ELEM)


def _call(fn, f, k, th, *more):
    return f"rt_{fn}({_ADDRESS[f]}, T, {', '.join((k, th) + more)})"


def _words(line):
    """A line with its register-file elements as word loads and stores (rt.get*, rt.set*): the rows write
    ``R32[k, t]``; numba types and lowers an intrinsic on an address far faster than an array element."""
    def signed(m):
        bits, f, k, th = m.groups()
        return _call(f"get{bits}s", f, k, th) if str(_BITS[f]) == bits else m.group(0)

    def wide(m):
        f, k, th = m.groups()
        return _call(f"get{_BITS[f]}{'u' if _BITS[f] in (16, 32) else ''}", f, k, th)

    def read(text):
        text = _SIGNED.sub(signed, text)
        text = _WIDE.sub(wide, text)
        return _READ.sub(lambda m: _call(f"get{_BITS[m[1]]}", *m.groups()), text)

    m = _STORE.match(line)
    if m:
        ind, f, k, th, value = m.groups()
        return ind + _call(f"set{_BITS[f]}", f, k, th, read(value))
    return read(line)


#: a group function is only called by its kernel, whose compiled code (and disk cache entry) holds it: numba
#: need not build its Python and C entry points nor cache it on its own.  Nor reference-count arrays, unless a
#: statement's code makes some (Lowered.refcounted): the mma wrappers inlined into a group take a dozen arrays out
#: of their plan and working-array tuples a call, and each take was an atomic increment and decrement (a tenth of
#: an sm_80 GEMM's time).
_GROUP_JIT = "@njit(nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True, pipeline_class=GeneratedPipeline{})"


class _Functions:
    """The kernel's statement groups, each a jitted function of its own (numba's compile time grows
    faster than linearly with a function's size; many small functions compile in linear time).  Groups that are
    the same code but for their registers, PTX lines and constants (reroll.template: an unrolled loop's blocks, a
    CUTLASS kernel's 35 copies of a predicate's test) are one function, called with its instance's number,
    which reads those values from tables; a vector run must be equal in every instance (with variable rows its
    lane loop would no longer run as vector code)."""

    def __init__(self, ir):
        self.ir, self.shapes = ir, {}
        self.context = set(_CONTEXT) | {f"TAB_{t}" for t in ir.sfu_tables} | set(ir.launch_args) | set(ir.scratch)
        self.consts, self.ints, self.tables = set(), set(), Tables()
        self.row_tuples = {}        # a row tuple's text -> its module constant's name

    def row_tuple_constants(self, text):
        """``text`` with its tuples of register rows as module constants (``RT<n>``, :meth:`row_tuple_defs`)."""
        return _ROW_TUPLE.sub(lambda m: self.row_tuples.setdefault(m[0], f"RT{len(self.row_tuples)}"), text)

    def row_tuple_defs(self):
        """The module-level definitions of the row tuples' constants."""
        return [f"{name} = {text}" for text, name in self.row_tuples.items()]

    def _finished(self, lines):
        """Lines with their register elements as word calls and their constants module constants."""
        text = self.row_tuple_constants("\n".join(_words(x) for x in lines))
        self.consts.update(int(v) for v in _CONST.findall(text))
        text, ints = _typed_int_arguments(_CONST.sub(lambda m: f"K{m.group(1)}", text))
        self.ints |= ints
        return text.split("\n")

    def add(self, segments, regs, refcounted=False):
        """A function of the groups' ``segments`` (reroll.reroll's), its lines finished and its runs rerolled;
        -> the call that runs it (1: it failed, see status), its instance's number a placeholder until
        :meth:`definitions`."""
        finished = [(k, [self._finished(s) for s in b] if k in ("lanes", "loop") else self._finished(b))
                    for k, b in segments]
        body = reroll(finished, self.tables, _lane_loop)
        used = set(_WORD.findall("\n".join(body)))
        args = ["act", "base", "w", "status"] + sorted((self.context | set(FILES.values())) & used - {"T"})
        head = ["T = TT"] if "T" in used else []        # the rows' length, a constant (_vector_runs)
        tpl = template("\n".join(head + body), self.tables)
        vector = "\n".join(x for k, b in finished if k == "lanes" for s in b for x in s)
        key = (tpl[0], tuple(k for k, _, _ in tpl[1]), tuple(args), refcounted, vector)
        shape = self.shapes.setdefault(key, {"name": f"g{len(self.shapes)}", "args": args,
                                             "refcounted": refcounted, "instances": []})
        shape["instances"].append(tpl)
        return f"{shape['name']}({', '.join(args)}{_INSTANCE}{shape['name']}:{len(shape['instances']) - 1}{_INSTANCE})"

    def definitions(self):
        """-> (the group functions' lines, the names of those called with an instance's number ``_gi``)."""
        defs, shared = [], set()
        for shape in self.shapes.values():
            name, inst, params = shape["name"], shape["instances"], shape["args"]
            if len(inst) == 1:
                reads, body = [], template_text(inst[0])
            else:
                reads, body = substituted(inst, self.tables, "_gi", "_gv")
                params = params + ["_gi"]
                self.ints.update(range(len(inst)))
                shared.add(name)
            defs.append([_GROUP_JIT.format("" if shape["refcounted"] else ", _nrt=False"),
                         f"def {name}({', '.join(params)}):"] +
                        ["    " + x for x in reads + body.split("\n")] + ["    return 0", ""])
        return defs, shared


#: brackets an instance's number in a group call until the groups are known (_Functions.definitions)
_INSTANCE = "\x01"
_PLACED = re.compile(_INSTANCE + r"(g\d+):(\d+)" + _INSTANCE)


def _lane_statement(ir, st, low):
    """A lane statement's lines inside its lane loop (unindented), under its guard."""
    g = _guard(ir, st)
    return [f"if {g}:"] + ["    " + x for x in low.lines] if g else list(low.lines)


def _lane_loop(lines):
    """Lines run for each active lane (``t`` its thread)."""
    return ["for l in range(32):", "    if act[l]:", "        t = base + l"] + ["        " + x for x in lines]


def _group_lines(ir, kind, items):
    """-> (the group's segment for reroll.reroll, the registers it touches)."""
    regs = set()
    if items[0][1].kind in ("warp", "wait", "park"):
        st, low = items[0]
        body = []
        g = _guard(ir, st)
        if g:              # a guarded warp statement runs on the lanes whose guard holds
            body += ["for l in range(32):", "    t = base + l", f"    GWARP[l] = act[l] and {g}", "_act0 = act",
                     "act = GWARP"]
            regs.add(st.guard[1])
        body += (sfu_batch_lines([x.unit for _, x in items]) if len(items) > 1 else low.lines) + \
            (["act = _act0"] if g else [])
        for _, x in items:
            regs.update(x.reads + x.writes)
        return ("top", body), regs
    for st, low in items:
        if st.guard is not None:
            regs.add(st.guard[1])
        regs.update(low.reads + low.writes)
    return ("lanes" if kind == "vector" else "loop", [_lane_statement(ir, st, low) for st, low in items]), regs


def _block_body(ir, b, ind, funcs):
    lines = []
    pad = " " * ind
    chunk, regs, size, counted = [], set(), 0, False
    groups = _groups(b.stmts)
    for i, (kind, items) in enumerate(groups):
        segment, r = _group_lines(ir, kind, items)
        chunk.append(segment)
        regs |= r
        size += len(items)
        counted |= ir.refcount_all or any(low.refcounted for _, low in items)
        if size >= CHUNK or i == len(groups) - 1:
            lines.append(f"{pad}if {funcs.add(chunk, regs, counted)}:")
            lines.append(f"{pad}    return")
            chunk, regs, size, counted = [], set(), 0, False
    last_st, last = b.stmts[-1]
    nxt = b.next
    settle = f"{pad}if not rt_settle(spc, srpc, smask, depth, w):\n{pad}    state[w] = 2"

    def goto(blk):
        return f"{pad}rt_goto(spc, srpc, smask, depth, state, w, {blk})"

    if b.end == "branch":
        tgt = ir.block_at[last_st.target]
        if last_st.guard is None:
            lines.append(goto(tgt))
        elif ir.regs.get(last_st.guard[1]) != 1:
            raise Untranslatable(f"line {last_st.line}: a branch guarded by {last_st.guard[1]}, not a predicate")
        else:
            neg, p = last_st.guard
            ir.ref(p)                       # (gives the predicate its register index)
            r = ir.reconverge_pc.get(b.start + len(b.stmts) - 1, -1)
            rb = ir.block_at[r] if r >= 0 else EXIT
            lines.append(f"{pad}rt_branch_on(spc, srpc, smask, depth, state, w, GACT, AP, T, base, {ir.index[p]}, "
                         f"{int(bool(neg))}, {tgt}, {nxt}, {rb})")
    elif b.end == "ret":
        g = _guard(ir, last_st)
        lines.append(f"{pad}for l in range(32):")
        lines.append(f"{pad}    t = base + l")
        lines.append(f"{pad}    GACT[l] = act[l] and {g or 'True'}")
        lines.append(f"{pad}rt_leave(spc, srpc, smask, depth, live, w, GACT)")
        lines.append(goto(nxt))
    elif b.end == "bar":           # (the barrier's operands are register reads: read before the lanes are checked)
        lines.extend(pad + x for x in last.lines)
        lines.append(f"{pad}if rt_sync.bar_end_by_symbol(status, {last_st.line}, act, live, base, {nxt}, state, "
                     "WBAR, BARC, BARN, spc, srpc, smask, depth, w, W, _bid, _bcnt, _bgiven, _bsync):")
        lines.append(f"{pad}    return")
    elif b.end == "wait":          # the statement parked the warp: it stays at this block
        lines.append(f"{pad}if PARK[w]:")
        lines.append(f"{pad}    state[w] = 3")
        lines.append(f"{pad}else:")
        lines.append(f"{pad}    spc[w, depth[w]] = {nxt}")
        lines.append(f"{pad}    if not rt_settle(spc, srpc, smask, depth, w):")
        lines.append(f"{pad}        state[w] = 2")
    elif b.end == "park":          # the statement parked the warp: it goes on from the next block when woken
        lines.append(f"{pad}spc[w, depth[w]] = {nxt}")
        lines.append(f"{pad}if not rt_settle(spc, srpc, smask, depth, w):")
        lines.append(f"{pad}    state[w] = 2")
        lines.append(f"{pad}elif PARK[w]:")
        lines.append(f"{pad}    state[w] = 3")
    elif b.end == "call":
        lines += [pad + x for x in _call_lines(ir, last_st, nxt)]
    elif b.end == "return":
        lines += [pad + x for x in _return_lines(ir, last_st)]
        lines.append(settle)
    else:
        lines.append(goto(nxt))
    return lines


#: frames whose call's entry is gone from the stack (every lane of the call left the kernel): dropped
_STALE = ["_fd = FDEP[w]", "while _fd > 0 and FDRC[w, _fd - 1] >= depth[w]:", "    _fd -= 1"]


def _call_lines(ir, st, nxt):
    """inline.call: the warp's frame (the callee's registers, every lane) saved, the arguments into the callee's
    formals (calling lanes), the caller's entry waits at the block after the call, the body's entry on top."""
    fr = ir.frames[int(st.operands[0])]
    full = f"return fail(status, {CALL_DEPTH}, {st.line}, base, np.uint64({FRAME_DEPTH}))"
    lines = _STALE + [f"if _fd >= {FRAME_DEPTH} or depth[w] + 2 > spc.shape[1]:", f"    {full}",
                      "FDRC[w, _fd] = depth[w]", "for l in range(32):", "    t = base + l"]
    lines += [f"    FRM[w, _fd, {i}, l] = np.uint64({ir.ref(r)})" for i, r in enumerate(fr.saved)]
    lines += ["    if act[l]:"] + [f"        {ir.ref(fr.params[f])} = {ir.ref(a)}" for f, a in fr.args.items()]
    if not fr.args:
        lines.append("        pass")
    return lines + ["FDEP[w] = _fd + 1", f"spc[w, depth[w]] = {nxt}", "_d = depth[w] + 1",
                    f"spc[w, _d] = {ir.block_at[st.target]}", f"srpc[w, _d] = {CALL_RPC}", "for l in range(32):",
                    "    smask[w, _d, l] = act[l]", "depth[w] = _d"]


def _return_lines(ir, st):
    """inline.return: the frame's registers back (every lane), the call's entry popped: the lanes go on after the
    call."""
    fr = ir.frames[int(st.operands[0])]
    lines = _STALE + ["_fd -= 1", "for l in range(32):", "    t = base + l"]
    for i, r in enumerate(fr.saved):
        ref = ir.ref(r)
        lines.append(f"    {ref} = FRM[w, _fd, {i}, l]{' != 0' if ref.startswith('P[') else ''}")
    return lines + ["FDEP[w] = _fd", "depth[w] = FDRC[w, _fd]"]


_LOOP = "    for c in range(first, first + count):"


def _one_exit(lines, start, end):
    """The kernel's loop over clusters (lines[start:end]) with its ``return``s made ``_stop = True`` and a
    ``break`` out of every loop around them, so that the kernel leaves through its last lines only.  The kernel
    keeps numba's reference counting (it makes the launch's arrays), and numba releases every live array at each
    ``return``: with one a group function's failure exit, a flash-attention forward's kernel function was 63,000
    lines of LLVM IR, most of them those releases."""
    out, loops = lines[:start] + ["    _stop = False"], []

    def close(ind):
        while loops and ind <= loops[-1]:
            at = loops.pop()
            if loops:                   # (the loop over clusters ends the kernel's loops)
                out.extend([" " * at + "if _stop:", " " * at + "    break"])

    for x in lines[start:end]:
        ind = len(x) - len(x.lstrip())
        close(ind)
        s = x.strip()
        if s == "return" or s.startswith("return "):
            out.extend(" " * ind + y for y in ([s[7:]] if s != "return" else []) + ["_stop = True", "break"])
        else:
            out.append(x)
        if s.startswith(("for ", "while ")):
            loops.append(ind)
    close(0)
    return out + lines[end:]


def generate(ir, name="native_kernel"):
    """The Python source of the kernel function ``name`` (to be compiled with numba's njit): it runs
    clusters first .. first + count - 1 of the launch (a cluster of one CTA without clusters), the CTAs of
    a cluster together (warp w is warp w % W of CTA rank w // W; rt_sync)."""
    zeroed, _ = ir.zeroed
    tabs = ir.sfu_tables
    L = []
    args = ["first", "count", "GX", "GY", "GZ", "BX", "BY", "BZ", "CX", "CY", "CZ", "PARAMS", "BASES", "SIZES",
            "dyn_smem", "max_steps", "status", "SEG", "NOSEG", "q64", "q32", "PTRS", "TRK", "TOFF", "NREG0", "GSYM", "TMRAW", "TMF"] + \
        [f"TAB_{t}" for t in tabs] + sorted(ir.launch_args)
    L.append("@njit(cache=True, nogil=True, pipeline_class=GeneratedPipeline)")
    L.append(f"def {name}({', '.join(args)}):")
    L.append("    if not fp_env_ok(q64, q32):")
    L.append(f"        status[0] = {7}")
    L.append("        return")
    L.append("    CS = CX * CY * CZ")
    L.append("    W = BX * BY * BZ // 32")
    L.append("    if W * 32 * CS != TT:")              # the source is made for TT threads a run (kernel._text)
    L.append(f"        status[0] = {LAUNCH_SHAPE}")
    L.append("        return")
    L.append("    T = TT")                   # the register files' threads: a cluster's
    L.append("    NTID_x, NTID_y, NTID_z = np.uint32(BX), np.uint32(BY), np.uint32(BZ)")
    L.append("    NCTAID_x, NCTAID_y, NCTAID_z = np.uint32(GX), np.uint32(GY), np.uint32(GZ)")
    L.append("    NCL_x, NCL_y, NCL_z = np.uint32(GX // CX), np.uint32(GY // CY), np.uint32(GZ // CZ)")
    nbranch = sum(1 for b in ir.blocks if b.end == "branch")
    # the reconvergence stack: a frame of a recursive call holds its call's entry and its body's divergence
    entries = 2 * nbranch + 2 if not ir.frames else (2 * nbranch + 3) * (FRAME_DEPTH + 1)
    L.append("    TID_x, TID_y, TID_z, _files, _stacks, _lanes, SMEM, LMEM = rt_launch_state(BX, BY, BZ, CS, "
             f"{', '.join(str(ir.counts[b]) for b in FILES)}, {entries}, {ir.shared_static} + dyn_smem, "
             f"{ir.local_stride})")
    L.append(f"    {', '.join(FILES.values())} = _files")
    L.append(f"    {', '.join(_ADDRESS.values())} = {', '.join(f + '.ctypes.data' for f in FILES.values())}")
    L.append("    spc, srpc, smask, depth, live, state = _stacks")
    L.append("    GACT, GWARP, SHV, SHJ, SA, SB, SO, SP0, SP1, SSL, SLF = _lanes")      # SA ..: sfu.f32_range's scratch
    L.append("    WBAR, BARC, BARN, PARK, PSLOT, PPH, MBO, MBS, CLA, CLS, NREG, NRV = rt_sync.sync_state_by_symbol(CS, W)")
    L.append(f"    SMEM_BYTES = {ir.shared_static} + dyn_smem")           # one CTA's
    L.append(f"    SMEM_STATIC = {ir.shared_static}")
    L.append("    SMEM0 = SMEM.ctypes.data")
    L.append(f"    LMEMP, LMEM_BYTES, LMEM_STRIDE = LMEM.ctypes.data, {ir.local_bytes}, {ir.local_stride}")
    L.extend(f"    {name} = {ir.scratch[name]}" for name in sorted(ir.scratch))
    if ir.frames:        # recursive calls' frames (codegen._call_lines): saved registers, count, caller's entry
        nsave = max(len(fr.saved) for fr in ir.frames.values())
        L.append(f"    FRM = np.zeros((W * CS, {FRAME_DEPTH}, {nsave}, 32), np.uint64)")
        L.append("    FDEP = np.zeros(W * CS, np.int64)")
        L.append(f"    FDRC = np.zeros((W * CS, {FRAME_DEPTH}), np.int64)")
    L.append("    for c in range(first, first + count):")
    L.append("        CLID_x = np.uint32(c % (GX // CX))")
    L.append("        CLID_y = np.uint32((c // (GX // CX)) % (GY // CY))")
    L.append("        CLID_z = np.uint32(c // ((GX // CX) * (GY // CY)))")
    for r in zeroed:
        L.append(f"        rt_clear({register_file(ir.regs.get(r))}, {ir.index[r]})")
    L.append("        rt_cta_begin(SMEM, LMEM, spc, srpc, smask, depth, live, state)")
    if ir.frames:
        L.append("        FDEP[:] = 0")
    L.append("        rt_sync.sync_begin(WBAR, BARC, BARN, PARK, MBO, MBS, CLA, CLS, NREG, NRV)")
    L.append("        steps = 0")
    L.append("        while True:")
    L.append("            for w in range(W * CS):")
    L.append("                if state[w] != 0:")
    L.append("                    continue")
    L.append("                base = w * 32")
    L.append("                r = w // W")                  # the warp's CTA in the cluster (rank r)
    L.append("                CRANK = np.uint32(r)")
    L.append("                CCTA_x, CCTA_y, CCTA_z = np.uint32(r % CX), np.uint32((r // CX) % CY), "
             "np.uint32(r // (CX * CY))")
    L.append("                CTAID_x, CTAID_y, CTAID_z = CLID_x * np.uint32(CX) + CCTA_x, "
             "CLID_y * np.uint32(CY) + CCTA_y, CLID_z * np.uint32(CZ) + CCTA_z")
    L.append("                SMEMP = SMEM0 + r * SMEM_BYTES")
    L.append("                while state[w] == 0:")
    L.append("                    blk = spc[w, depth[w]]")
    L.append("                    act = smask[w, depth[w]]")
    funcs = _Functions(ir)
    for b in ir.blocks:
        L.append(f"                    {'if' if b.id == 0 else 'elif'} blk == {b.id}:")
        L.append(f"                        steps += {len(b.stmts)}")
        L.extend(_block_body(ir, b, 24, funcs))
    L.append("                    if steps > max_steps:")
    L.append(f"                        return fail(status, {MAX_STEPS}, 0, c, np.uint64(steps))")
    L.append("            _go = rt_sync.round_end_by_symbol(state, WBAR, BARC, BARN, PARK, PSLOT, PPH, MBS, CLA, CLS, NRV, spc, "
             "srpc, smask, depth, W)")
    L.append("            if _go == 0:")
    L.append("                break")
    L.append("            if _go == 2:")
    L.append(f"                return fail(status, {DEADLOCK}, 0, c, np.uint64(0))")
    L.append(f"    rt_alive({', '.join(FILES.values())})")
    L.append("    return")
    L = _one_exit(L, L.index(_LOOP), len(L) - 2)
    defs, shared = funcs.definitions()
    kernel = funcs.row_tuple_constants(_PLACED.sub(lambda m: f", I{m[2]}" if m[1] in shared else "",
                                                   "\n".join(_words(x) for x in L)))
    body = "\n".join(x for d in defs for x in d) + "\n\n" + kernel + "\n"
    consts = sorted({int(v) for v in _CONST.findall(body)} | funcs.consts)
    body = _CONST.sub(lambda m: f"K{m.group(1)}", body)
    body, ints = _typed_int_arguments(body)
    return "".join(x + "\n" for x in ir.prelude) + "".join(f"K{v} = np.uint64({v})\n" for v in consts) + \
        "".join(f"{'IM' if v < 0 else 'I'}{abs(v)} = np.int64({v})\n" for v in sorted(ints | funcs.ints)) + \
        "".join(x + "\n" for x in funcs.tables.defs + funcs.row_tuple_defs()) + "\n\n" + body
