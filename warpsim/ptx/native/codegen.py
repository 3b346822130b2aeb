"""KernelIR -> the source of one numba function that runs a range of CTAs of a launch.

Per CTA, every warp runs its blocks until it finishes or reaches ``bar.sync``; when no warp can run,
the barrier releases (every warp still running has arrived) or the CTA is done.  Within a warp the
blocks run on its reconvergence stack (:mod:`.rt`): the top entry's lanes are ``act``; lane
statements run as loops over the 32 lanes (consecutive lane statements share one loop, except that a
store and a load never share one, so lanes see each other's stores in the interpreter's order).
"""

from __future__ import annotations

import re

from .ir import EXIT
from .lower import FILES
from .rt import DIVERGED_BARRIER, MAX_STEPS

_DT = {1: "np.bool_", 8: "np.uint8", 16: "np.uint16", 32: "np.uint32", 64: "np.uint64"}


def _guard(ir, st):
    if st.guard is None:
        return None
    neg, p = st.guard
    return f"{'not ' if neg else ''}{ir.ref(p)}"


def _mem(st):
    op = st.opcode
    return "st" if op.startswith("st.") and not op.startswith("st.param") else "ld" if op.startswith("ld.") else None


def _groups(stmts):
    """Runs of lane statements (one lane loop each) and single warp statements, in order."""
    out, cur, seen = [], [], set()
    for st, low in stmts:
        if low.kind == "lane":
            m = _mem(st)
            if m and cur and (("ld" if m == "st" else "st") in seen or m == "st" and "st" in seen):
                out.append(("lane", cur))
                cur, seen = [], set()
            cur.append((st, low))
            if m:
                seen.add(m)
        elif low.kind == "warp":
            if cur:
                out.append(("lane", cur))
                cur, seen = [], set()
            out.append(("warp", [(st, low)]))
    if cur:
        out.append(("lane", cur))
    return out


_CONTEXT = ("TID_x", "TID_y", "TID_z", "NTID_x", "NTID_y", "NTID_z", "CTAID_x", "CTAID_y", "CTAID_z", "NCTAID_x",
            "NCTAID_y", "NCTAID_z", "W", "PARAMS", "SMEMP", "SMEM_BYTES", "BASES", "SIZES", "PTRS", "TRK", "TOFF",
            "SEG", "NOSEG", "SHV", "SHJ", "SA", "SB", "SO", "SP0", "SP1", "SSL", "SLF")
#: statements per generated function (several lane loops): numba compiles many tiny functions slowly, and one
#: big function more slowly still
CHUNK = 32
_CONST = re.compile(r"np\.uint64\((\d+)\)")     # integer constants: module-level numpy scalars (cheap typing)
_CALL = re.compile(r"\b(?:fail|rt_\w+|sfu_\w+)\(")     # calls of the runtime (jitted functions and intrinsics)
_INT = re.compile(r"-?\d+\Z|True\Z|False\Z")
_BOOL = {"True": "BTRUE", "False": "BFALSE"}


def _typed_int_arguments(body):
    """Integer literals passed to the runtime as module-level int64 constants (``I<n>``, ``IM<n>`` for -n; True
    and False as numpy bools ``BTRUE`` / ``BFALSE``):
    numba compiles a jitted callee once per combination of literal argument values (a failure record per
    PTX line, the special-function kernel per unit), and once for int64 arguments.  -> (body, values)."""
    out, values, pos = [], set(), 0
    for m in _CALL.finditer(body):
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
        for a, b in args:
            text = body[a:b].strip()
            out.append(body[last:a])
            if _INT.match(text):
                lead = body[a:b][:len(body[a:b]) - len(body[a:b].lstrip())]
                if text in _BOOL:
                    out.append(lead + _BOOL[text])
                else:
                    v = int(text)
                    values.add(v)
                    out.append(lead + (f"IM{-v}" if v < 0 else f"I{v}"))
            else:
                out.append(body[a:b])
            last = b
        out.append(body[last:i])
        pos = i
    out.append(body[pos:])
    return "".join(out), values
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


class _Functions:
    """The kernel's statement groups, each a jitted function of its own (numba's compile time grows
    faster than linearly with a function's size; many small functions compile in linear time)."""

    def __init__(self, ir):
        self.ir, self.defs = ir, []
        self.context = set(_CONTEXT) | {f"TAB_{t}" for t in ir.sfu_tables} | set(ir.launch_args)

    def add(self, body, regs):
        """A function of the group's lines; -> the call that runs it (1: it failed, see status)."""
        name = f"g{len(self.defs)}"
        used = set(_WORD.findall("\n".join(body)))
        args = ["act", "base", "w", "status"] + sorted((self.context | set(FILES.values())) & used)
        self.defs.append(["@njit(cache=True, nogil=True)", f"def {name}({', '.join(args)}):"] +
                         ["    " + x for x in body] + ["    return 0", ""])
        return f"{name}({', '.join(args)})"


def _group_lines(ir, items):
    regs = set()
    if items[0][1].kind == "warp":
        st, low = items[0]
        body = []
        g = _guard(ir, st)
        if g:              # a guarded warp statement runs on the lanes whose guard holds
            body += ["GACT = np.zeros(32, np.bool_)", "for l in range(32):", "    t = base + l",
                     f"    GACT[l] = act[l] and {g}", "_act0 = act", "act = GACT"]
            regs.add(st.guard[1])
        body += low.lines + (["act = _act0"] if g else [])
        regs.update(low.reads + low.writes)
        return body, regs
    body = ["for l in range(32):", "    if act[l]:", "        t = base + l"]
    for st, low in items:
        g = _guard(ir, st)
        inner = " " * (12 if g else 8)
        if g:
            body.append(f"        if {g}:")
            regs.add(st.guard[1])
        body.extend(inner + x for x in low.lines)
        regs.update(low.reads + low.writes)
    return body, regs


def _block_body(ir, b, ind, funcs):
    lines = []
    pad = " " * ind
    chunk, regs, size = [], set(), 0
    groups = _groups(b.stmts)
    for i, (kind, items) in enumerate(groups):
        body, r = _group_lines(ir, items)
        chunk += body
        regs |= r
        size += len(items)
        if size >= CHUNK or i == len(groups) - 1:
            lines.append(f"{pad}if {funcs.add(chunk, regs)}:")
            lines.append(f"{pad}    return")
            chunk, regs, size = [], set(), 0
    last_st, last = b.stmts[-1]
    nxt = b.next
    settle = f"{pad}if not rt_settle(spc, srpc, smask, depth, w):\n{pad}    state[w] = 2"
    if b.end == "branch":
        tgt = ir.block_at[last_st.target]
        if last_st.guard is None:
            lines.append(f"{pad}spc[w, depth[w]] = {tgt}")
            lines.append(settle)
        else:
            g = _guard(ir, last_st)
            lines.append(f"{pad}for l in range(32):")
            lines.append(f"{pad}    t = base + l")
            lines.append(f"{pad}    GACT[l] = {g}")
            r = ir.reconverge_pc.get(b.start + len(b.stmts) - 1, -1)
            rb = ir.block_at[r] if r >= 0 else EXIT
            lines.append(f"{pad}if not rt_branch(spc, srpc, smask, depth, w, GACT, {tgt}, {nxt}, {rb}):")
            lines.append(f"{pad}    state[w] = 2")
    elif b.end == "ret":
        g = _guard(ir, last_st)
        lines.append(f"{pad}for l in range(32):")
        lines.append(f"{pad}    t = base + l")
        lines.append(f"{pad}    GACT[l] = act[l] and {g or 'True'}")
        lines.append(f"{pad}rt_leave(spc, srpc, smask, depth, live, w, GACT)")
        lines.append(f"{pad}spc[w, depth[w]] = {nxt}")
        lines.append(settle)
    elif b.end == "bar":
        lines.append(f"{pad}for l in range(32):")
        lines.append(f"{pad}    if act[l] != live[w, l]:")
        lines.append(f"{pad}        return fail(status, {DIVERGED_BARRIER}, {last_st.line}, base + l, np.uint64(0))")
        lines.append(f"{pad}spc[w, depth[w]] = {nxt}")
        lines.append(f"{pad}state[w] = 1")
    else:
        lines.append(f"{pad}spc[w, depth[w]] = {nxt}")
        lines.append(settle)
    return lines


def generate(ir, name="native_kernel"):
    """The Python source of the kernel function ``name`` (to be compiled with numba's njit)."""
    zeroed, _ = ir.zeroed
    tabs = ir.sfu_tables
    L = []
    args = ["first", "count", "GX", "GY", "GZ", "BX", "BY", "BZ", "PARAMS", "BASES", "SIZES", "dyn_smem",
            "max_steps", "status", "SEG", "NOSEG", "q64", "q32", "PTRS", "TRK", "TOFF"] + [f"TAB_{t}" for t in tabs] + \
        sorted(ir.launch_args)
    L.append("@njit(cache=True, nogil=True)")
    L.append(f"def {name}({', '.join(args)}):")
    L.append("    if not fp_env_ok(q64, q32):")
    L.append(f"        status[0] = {7}")
    L.append("        return")
    L.append("    T = BX * BY * BZ")
    L.append("    W = T // 32")
    L.append("    NTID_x, NTID_y, NTID_z = np.uint32(BX), np.uint32(BY), np.uint32(BZ)")
    L.append("    NCTAID_x, NCTAID_y, NCTAID_z = np.uint32(GX), np.uint32(GY), np.uint32(GZ)")
    L.append("    TID_x = np.empty(T, np.uint32)")
    L.append("    TID_y = np.empty(T, np.uint32)")
    L.append("    TID_z = np.empty(T, np.uint32)")
    L.append("    for t in range(T):")
    L.append("        TID_x[t] = t % BX")
    L.append("        TID_y[t] = (t // BX) % BY")
    L.append("        TID_z[t] = t // (BX * BY)")
    for bits, f in FILES.items():
        L.append(f"    {f} = np.zeros(({max(1, ir.counts[bits])}, T), {_DT[bits]})")
    nbranch = sum(1 for b in ir.blocks if b.end == "branch")
    L.append(f"    D = {2 * nbranch + 2}")
    L.append("    spc = np.zeros((W, D), np.int64)")
    L.append("    srpc = np.zeros((W, D), np.int64)")
    L.append("    smask = np.zeros((W, D, 32), np.bool_)")
    L.append("    depth = np.zeros(W, np.int64)")
    L.append("    live = np.zeros((W, 32), np.bool_)")
    L.append("    state = np.zeros(W, np.int64)")
    L.append("    GACT = np.zeros(32, np.bool_)")
    L.append("    SHV = np.zeros(32, np.uint64)")
    L.append("    SHJ = np.zeros(32, np.int64)")
    L.append("    SA = np.zeros(32, np.uint32)")
    L.append("    SB = np.zeros(32, np.uint32)")
    L.append("    SO = np.zeros(32, np.uint32)")
    L.append("    SP0 = np.zeros(32, np.float64)")      # the special-function unit's scratch (sfu.f32_range)
    L.append("    SP1 = np.zeros(32, np.int64)")
    L.append("    SSL = np.zeros(32, np.uint8)")
    L.append("    SLF = np.zeros(32, np.int64)")
    L.append(f"    SMEM = np.zeros({ir.shared_static} + dyn_smem, np.uint8)")
    L.append("    SMEM_BYTES = SMEM.size")
    L.append("    SMEMP = SMEM.ctypes.data")
    L.append("    for c in range(first, first + count):")
    L.append("        CTAID_x = np.uint32(c % GX)")
    L.append("        CTAID_y = np.uint32((c // GX) % GY)")
    L.append("        CTAID_z = np.uint32(c // (GX * GY))")
    for r in zeroed:
        L.append(f"        {ir.ref(r, ':')} = 0")
    L.append("        SMEM[:] = 0")
    L.append("        for w in range(W):")
    L.append("            depth[w] = 0")
    L.append("            spc[w, 0] = 0")
    L.append(f"            srpc[w, 0] = {EXIT}")
    L.append("            smask[w, 0, :] = True")
    L.append("            live[w, :] = True")
    L.append("            state[w] = 0")
    L.append("        steps = 0")
    L.append("        while True:")
    L.append("            for w in range(W):")
    L.append("                base = w * 32")
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
    L.append("            waiting = 0")
    L.append("            for w in range(W):")
    L.append("                if state[w] == 1:")
    L.append("                    waiting += 1")
    L.append("            if waiting == 0:")
    L.append("                break")
    L.append("            for w in range(W):")
    L.append("                if state[w] == 1:")
    L.append("                    state[w] = 0")
    L.append("                    if not rt_settle(spc, srpc, smask, depth, w):")
    L.append("                        state[w] = 2")
    L.append("    return")
    body = "\n".join(x for d in funcs.defs for x in d) + "\n\n" + "\n".join(L) + "\n"
    consts = sorted({int(v) for v in _CONST.findall(body)})
    body = _CONST.sub(lambda m: f"K{m.group(1)}", body)
    body, ints = _typed_int_arguments(body)
    return "".join(x + "\n" for x in ir.prelude) + "".join(f"K{v} = np.uint64({v})\n" for v in consts) + \
        "".join(f"{'IM' if v < 0 else 'I'}{abs(v)} = np.int64({v})\n" for v in sorted(ints)) + \
        "BTRUE = np.bool_(True)\nBFALSE = np.bool_(False)\n\n\n" + body
