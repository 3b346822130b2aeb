"""Calls of ``.func`` functions inlined at each call site, for the native translator (issue 32).

The translator compiles one function; a program with calls is flattened first: each call statement becomes
the moves of its arguments into the callee's parameters, a copy of the callee's body (its registers renamed
for that call, its ``ret`` a branch to the end of the copy) and the moves of its results.  ``.param``
variables (a call block's ``param0`` / ``retval0``, a function's formals and ``func_retval0``) become registers
of their size, read and written whole by ``ld.param`` / ``st.param`` at offset 0.  The reconvergence points
are the post-dominators of the flat code, as the interpreter computes them for each function
(``program._post_dominators``): a copy's paths meet at its end, where the interpreter pops the call's entry.

A callee's ``.local`` variables keep the interpreter's layout (``_Program.local_layout``); as the interpreter
saves them at a call and restores them at its return, a copy starts with ``inline.local.save`` of the callee's
bytes into a slot of its own past the interpreter's layout and ends with ``inline.local.restore`` (one slot per
function: without recursion a function is called at most once at a time).

A function on a cycle of calls (recursion) is not inlined: its body is placed once after the entry's code
(:class:`Frame`), and each call of it is ``inline.call`` between moves through registers of its own (arguments
in, results out): the compiled kernel keeps a stack of frames per warp, as the interpreter does (a call saves
the callee's registers for the whole warp and runs its body with the calling lanes; when they have all
returned -- the body's ``ret`` statements branch to its end, where its ``inline.return`` is -- the registers
are restored and the lanes go on after the call).

Not translated (the entry falls back, with the reason): calls of functions without a body (but CUDA's
``__assertfail``, which becomes ``inline.assertfail``: the kernel stops there), guarded calls, ``.param``
variables read in parts or as vectors, and recursive functions with ``.local`` variables or with a branch
whose paths meet only when lanes leave the kernel.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..program import _post_dominators
from ..regfile import Warp
from ..syntax import make_statement
from .lower import Untranslatable

_TOKEN = re.compile(r"%?[A-Za-z_$][\w$]*")
_PARAM = re.compile(r"(?P<op>ld|st)\.param(?:::func)?\.(?P<t>[bus](?:16|32|64)|f32|f64)\Z")
_RET = re.compile(r"ret(?:\.uni)?\Z")
_DECL = {1: ".pred", 16: ".b16", 32: ".b32", 64: ".b64"}


class Widths(dict):
    """Register name -> bits, worked out on first use from the entry's declarations."""

    def __init__(self, decls):
        super().__init__()
        self._w = Warp(undefined="zero")
        for line, text in decls:
            self._w.declare(line, text)

    def get(self, name, default=None):
        if name not in self:
            try:
                self[name] = self._w._bits(name)
            except Exception:
                return default
        return super().get(name, default)


def _declared(decls):
    """Whether a name is one of the registers ``decls`` declare (``%r<8>``: %r0 .. %r7)."""
    names, ranges = set(), {}
    for _, text in decls:
        for nm in text.split(None, 2)[-1].split(","):
            nm = nm.strip()
            r = re.fullmatch(r"(%?[A-Za-z_$][\w$]*?)<(\d+)>", nm)
            if r:
                ranges[r.group(1)] = int(r.group(2))
            else:
                names.add(nm)

    def known(tok):
        prefix = tok.rstrip("0123456789")
        return tok in names or (prefix != tok and prefix in ranges and int(tok[len(prefix):]) < ranges[prefix])
    return known


def _move(line, dst, dbits, src, sbits):
    """A copy between registers (a .param variable's and another): the low bits where the widths differ (a
    scoped redeclaration may widen a call block's param0; its first bytes are the value)."""
    if dbits == sbits:
        return make_statement(line, f"mov.b{dbits} {dst}, {src}")
    return make_statement(line, f"cvt.u{dbits}.u{sbits} {dst}, {src}")


class Frame:
    """A recursive function's one body in the flat code: ``index`` (the operand of its ``inline.call`` /
    ``inline.return``), ``start`` (its first pc), ``saved`` (the registers a call saves and its return
    restores: the body's own and its .param variables'), ``args`` / ``rets`` (formal -> the register an
    argument or result passes through: not saved, so a result survives the restore)."""

    def __init__(self, fn, index, params, args, rets):
        self.fn, self.index, self.params, self.args, self.rets = fn, index, params, args, rets
        self.start, self.saved, self.calls = None, [], []


def _recursive(prog):
    """The names of the functions on a cycle of calls."""
    calls = {name: {st.call[0].name for st in prog.code[fn.start:fn.end]
                    if st.opcode.startswith("call") and getattr(st, "call", None) and st.call[0] is not None}
             for name, fn in prog.functions.items()}
    out = set()
    for name in calls:
        seen, todo = set(), list(calls[name])
        while todo:
            f = todo.pop()
            if f == name:
                out.add(name)
                break
            if f not in seen and f in calls:
                seen.add(f)
                todo.extend(calls[f])
    return out


class _Entry:
    """The flat program's one function (what KernelIR reads of ``_Program.functions``)."""

    def __init__(self, fn):
        self.name, self.locals, self.params = fn.name, fn.locals, {}


class _Labels:
    """The flat code as ``_post_dominators`` reads a function: its pc range and the pcs branches reach."""

    def __init__(self, code):
        self.start, self.end = 0, len(code)
        self.labels = {str(i): st.target for i, st in enumerate(code) if hasattr(st, "target")}
        self.scoped_labels = {}


class Flat:
    """A decoded program (``module._Program``) with every call of its entry inlined: the attributes the
    translator's KernelIR reads."""

    def __init__(self, prog):
        self._prog, self.entry = prog, prog.entry
        self.module_variables = prog.module_variables
        entry = prog.functions[prog.entry.name]
        self.functions = {entry.name: _Entry(entry)}
        self.reg_decls = list(entry.reg_decls)
        self.code, self._count = [], 0
        self._widths = {name: (Widths(fn.reg_decls), _declared(fn.reg_decls)) for name, fn in prog.functions.items()}
        _, self._local_range, self._local_bytes = prog.local_layout()
        self._saves = {}                # callee with .local variables -> its slot for the caller's view of them
        self.local_saved = 0            # bytes of those slots, past the interpreter's local layout
        self._recursive = _recursive(prog)
        self.frames = {}                # recursive function name -> its Frame
        self._expand(entry, {}, "", {p: self._param(p, entry, "") for p in entry.params}, ())
        if self.frames:
            self.code.append(make_statement(self.code[-1].line, "ret"))     # the entry's end; the bodies follow
            done = set()
            while len(done) < len(self.frames):           # a body may call another recursive function
                name = next(n for n in self.frames if n not in done)
                done.add(name)
                self._body(self.frames[name])
        # the bodies' returns are sinks to the post-dominators, as ret is (a body's paths meet before its return)
        view = [make_statement(st.line, "ret") if st.opcode == "inline.return" else st for st in self.code]
        self.reconverge = _post_dominators(view, _Labels(view))
        for fr in self.frames.values():
            end = fr.end
            for pc in range(fr.start, end):
                if self.reconverge.get(pc, 0) < 0:
                    raise Untranslatable(f"a branch of the recursive function {fr.fn.name} whose paths meet only "
                                         "when lanes leave the kernel", self.code[pc])

    def shared_layout(self):
        return self._prog.shared_layout()

    def local_layout(self):
        return self._prog.local_layout()

    def _save_slot(self, callee):
        """(offset, bytes, slot) of a callee's .local bytes and where a call keeps the caller's view of them."""
        lo, hi = self._local_range[callee.name]
        if callee.name not in self._saves:
            self._saves[callee.name] = self._local_bytes + self.local_saved
            self.local_saved += hi - lo
        return lo, hi - lo, self._saves[callee.name]

    def _declare(self, name, bits):
        if bits not in _DECL:
            raise Untranslatable(f"a {bits}-bit .param variable or register in an inlined call", None)
        self.reg_decls.append((0, f".reg {_DECL[bits]} {name}"))
        return name

    def _param(self, name, fn, suffix):
        return self._declare(f"%{name}$p{suffix or 'e'}", 8 * fn.params[name][1])

    def _expand(self, fn, renamed, suffix, params, stack):
        """Append fn's statements (registers renamed by ``suffix`` unless it is the entry); -> the branches
        standing for its ``ret`` statements (their target: the end of this copy)."""
        widths, declared = self._widths[fn.name]

        def name(tok):
            if not suffix or not declared(tok):
                return tok
            if tok not in renamed:
                renamed[tok] = self._declare(f"{tok}$i{suffix}", widths.get(tok))
            return renamed[tok]

        def rename(op):
            if isinstance(op, list):
                return [rename(x) for x in op]
            return _TOKEN.sub(lambda m: name(m.group(0)), op) if isinstance(op, str) else op

        pcs, jumps, rets = {}, [], []
        for pc in range(fn.start, fn.end):
            st = self._prog.code[pc]
            pcs[pc] = len(self.code)
            if st.opcode.startswith("call"):
                self._call(st, fn, params, stack)
                continue
            new = replace(st, operands=rename(st.operands),
                          guard=st.guard and (st.guard[0], name(st.guard[1])))
            m = _PARAM.match(st.opcode)
            if m and self._param_name(st, m) in params:
                new = self._param_move(new, m, params)
            elif suffix and _RET.match(st.opcode):
                new = replace(make_statement(st.line, "bra RET"), guard=new.guard)
                rets.append(new)
            elif hasattr(st, "target"):
                jumps.append((new, st.target))
            self.code.append(new)
        for new, target in jumps:
            new.target = pcs[target]
        return rets

    @staticmethod
    def _param_name(st, m):
        where = st.operands[1] if m["op"] == "ld" else st.operands[0]
        return where.strip("[] ").split("+")[0].strip() if isinstance(where, str) else None

    def _param_move(self, st, m, params):
        """ld.param / st.param of a whole .param variable as a mov from / into its register."""
        dst, src = st.operands
        where = src if m["op"] == "ld" else dst
        var = self._param_name(st, m)
        bits = int(re.sub(r"\D", "", m["t"]))
        if isinstance(st.operands[0 if m["op"] == "ld" else 1], list) or \
                re.fullmatch(r"\[\s*[\w$]+\s*(?:\+\s*0\s*)?\]", where) is None:
            raise Untranslatable(f"{st.text!r}: a .param variable read or written in parts", st)
        reg = params[var]
        if m["op"] == "ld":
            return replace(_move(st.line, dst, bits, reg, self._bits(reg)), guard=st.guard)
        return replace(_move(st.line, reg, self._bits(reg), src, bits), guard=st.guard)

    def _bits(self, reg):
        return next(int(re.sub(r"\D", "", t.split()[1])) for _, t in self.reg_decls if t.split()[-1] == reg)

    def _call(self, st, fn, params, stack):
        callee, rets, args = st.call
        if callee is None and rets == "__assertfail":       # CUDA's device assert: the kernel stops there
            self.code.append(replace(make_statement(st.line, "inline.assertfail"), guard=st.guard))
            return
        if callee is None:
            raise Untranslatable(f"a call of {rets!r}, a function without a body", st)
        if callee.name in self._recursive:
            return self._call_frame(st, callee, rets, args, params)
        if callee.name in stack or callee.name == self.entry.name:
            raise Untranslatable(f"{callee.name} calls itself (recursion is not inlined)", st)
        if st.guard is not None:
            raise Untranslatable("a guarded call", st)
        self._count += 1
        suffix = str(self._count)
        inner = {p: self._param(p, callee, suffix) for p in callee.params}
        for a, formal in zip(args, callee.formals):
            if a not in params:
                raise Untranslatable(f"call argument {a!r} is not a .param variable", st)
            self.code.append(_move(st.line, inner[formal], self._bits(inner[formal]), params[a], self._bits(params[a])))
        saved = self._save_slot(callee) if callee.locals else None
        if saved:
            self.code.append(make_statement(st.line, "inline.local.save {}, {}, {}".format(*saved)))
        returns = self._expand(callee, {}, suffix, inner, stack + (callee.name,))
        end = len(self.code)
        if saved:
            self.code.append(make_statement(st.line, "inline.local.restore {}, {}, {}".format(*saved)))
        for r, formal in zip(rets, callee.rets):
            self.code.append(_move(st.line, params[r], self._bits(params[r]), inner[formal], self._bits(inner[formal])))
        for b in returns:
            b.target = end

    def _frame(self, callee, st):
        fr = self.frames.get(callee.name)
        if fr is None:
            if callee.locals:
                raise Untranslatable(f"{callee.name} is recursive and has .local variables (the compiled engine "
                                     "does not keep them per call)", st)
            k = len(self.frames)
            suffix = f"r{k}"
            widths = {p: 8 * callee.params[p][1] for p in callee.params}
            fr = Frame(callee, k, {p: self._param(p, callee, suffix) for p in callee.params},
                       {f: self._declare(f"%{f}$a{k}", widths[f]) for f in callee.formals},
                       {f: self._declare(f"%{f}$x{k}", widths[f]) for f in callee.rets})
            self.frames[callee.name] = fr
        return fr

    def _call_frame(self, st, callee, rets, args, params):
        """A call of a recursive function: its arguments into the frame's argument registers, inline.call (the
        compiled kernel saves the callee's registers and starts its body), its results out of the result
        registers."""
        if st.guard is not None:
            raise Untranslatable("a guarded call", st)
        fr = self._frame(callee, st)
        for a, formal in zip(args, callee.formals):
            if a not in params:
                raise Untranslatable(f"call argument {a!r} is not a .param variable", st)
            r = fr.args[formal]
            self.code.append(_move(st.line, r, self._bits(r), params[a], self._bits(params[a])))
        call = make_statement(st.line, f"inline.call {fr.index}")
        if fr.start is not None:        # (a call from a body placed already, its own included)
            call.target = fr.start
        fr.calls.append(call)
        self.code.append(call)
        for r, formal in zip(rets, callee.rets):
            if r not in params:
                raise Untranslatable(f"call result {r!r} is not a .param variable", st)
            x = fr.rets[formal]
            self.code.append(_move(st.line, params[r], self._bits(params[r]), x, self._bits(x)))

    def _body(self, fr):
        """A recursive function's body, once: its ret statements branch to its end, where its results go to the
        result registers before inline.return."""
        fn = fr.fn
        fr.start = len(self.code)
        renamed = {}
        returns = self._expand(fn, renamed, f"r{fr.index}", fr.params, (fn.name,))
        end = len(self.code)
        line = self.code[-1].line if self.code else 0
        for b in returns:
            b.target = end
        for formal in fn.rets:
            x = fr.rets[formal]
            self.code.append(_move(line, x, self._bits(x), fr.params[formal], self._bits(fr.params[formal])))
        self.code.append(make_statement(line, f"inline.return {fr.index}"))
        fr.end = len(self.code)
        fr.saved = list(dict.fromkeys(list(renamed.values()) + list(fr.params.values())))
        for call in fr.calls:
            call.target = fr.start
