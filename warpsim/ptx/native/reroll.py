"""A pass over a statement group's finished source: consecutive statements equal but for their registers and
constants become one loop over a table of them.

PTX as compilers write it repeats a statement over many registers (a Triton kernel's 16 ``rcp`` of a row, 64
shared stores of a tile), and the translator makes each its own lane loop: flash attention's source was half
such repeats.  numba's compile time follows the lines it types and lowers (docs/speed.md, "first compile"), so a
run of them is compiled once, as a loop whose iterations take their registers, PTX lines and constants from
module-level tables.  The iterations run in the run's order, as the statements did.

Only what is an argument at run time may differ between the repeats of a run: a register's row
(``rt_get32(A32, T, <row>, t)``), a module constant (``K<n>``: uint64, ``I<n>`` / ``IM<n>``: int64 -- PTX lines,
status codes, immediates), a special-function batch's slice (``<n> * _m``).  Anything numba specialises on (sizes,
widths, units, literal arguments) must be equal.  Inside a lane loop a run costs run time, and needs
``LANES_MIN_RUN`` repeats.

The same templates serve whole statement groups (``codegen._Functions``): groups alike but for those values -- and
for the tables their rerolled loops read -- are compiled once, reading the values at their instance's number
(:func:`template`, :func:`substituted`).
"""

from __future__ import annotations

import re

#: the fewest consecutive equal statements made a loop (two gain fewer lines than the loop's head costs)
MIN_RUN = 3

#: the tokens the repeats of a run may differ in: module constants, registers' rows, a batch's slices
_TOKEN = re.compile(r"\b(?P<const>K|IM|I)(?P<cn>\d+)\b|(?<=, T, )(?P<row>\d+)(?=, )|\b(?P<part>\d+)(?= \* _m\b)")
_SLOT = "\x00"


def _template(text):
    """-> (the statement with each varying-kind token a slot, [(kind, value, source text)])."""
    values = []

    def slot(m):
        if m["const"]:
            kind = "K" if m["const"] == "K" else "I"
            v = int(m["cn"]) * (-1 if m["const"] == "IM" else 1)
        else:
            kind, v = "I", int(m["row"] or m["part"])
        values.append((kind, v, m[0]))
        return _SLOT
    return _TOKEN.sub(slot, text), values


def _statements(lines):
    """The top-level statements of unindented ``lines``: each its first line and the deeper ones after it."""
    out = []
    for x in lines:
        if out and x.startswith(" "):
            out[-1].append(x)
        else:
            out.append([x])
    return out


class Tables:
    """The module-level tables the rerolled runs read (one per varying slot), named ``RR<n>``."""

    def __init__(self):
        self.defs, self._names, self.content = [], {}, {}

    def add(self, kind, values):
        """-> the name of a table of ``values`` (one table for equal ones; ``kind`` "T": rows of tables, a 2-D one)."""
        if kind == "T":
            dtype = values[0][0]
            key = f"np.array([{', '.join('[' + ', '.join(map(str, v)) + ']' for _, v in values)}], {dtype})"
        else:
            dtype = "np.uint64" if kind == "K" else "np.int64"
            key = f"np.array([{', '.join(map(str, values))}], {dtype})"
        if key not in self._names:
            self._names[key] = f"RR{len(self.defs)}"
            self.defs.append(f"{self._names[key]} = {key}")
            self.content[self._names[key]] = (dtype, tuple(values))
        return self._names[key]


#: the fewest repetitions of a block of statements made a loop inside a lane loop.  Rerolled there, statements cost
#: run time: split out of a vector run, each statement's lane loop reads its operands back from the register file
#: where the run's one loop kept them in vector registers, and checks its rows apart at run time; in a lane loop of
#: memory statements each takes its rows from the tables, lane after lane, where straight code shared address
#: arithmetic.  A Triton layernorm (runs of 6-8) ran 30% / 12% slower with runs of 3 rerolled the two ways, an sm_80
#: GEMM 8% the second way; the long runs (a tile's 32 loads or addresses) are set-up code a warp runs once
LANES_MIN_RUN = 16

#: the longest repeated block of statements looked for (a Triton kernel interleaves two or three statements per
#: register: a ``cvt`` and a ``mul``, an address and its store)
MAX_PERIOD = 6


def reroll(segments, tables, lane_loop):
    """``segments`` in order, each ("top", unindented lines: its statements may be rerolled), ("loop", [each
    statement's unindented lines]: statements that run in one lane loop, ``lane_loop(lines)``, lane after lane),
    ("lanes", the same for register-only statements: a vector run) or ("fixed", lines: kept) -> the lines,
    runs of a block of statements repeated at least ``MIN_RUN`` times (``LANES_MIN_RUN`` inside a lane loop)
    but for their slots (``_template``) made loops over ``tables``.  Whole lane loops are rerolled first (a
    run may span groups: each shared store is a lane loop of its own); inside a lane loop no run took, a run of
    its statements becomes a loop inside the lane's iteration (the lanes' order stays)."""
    out, units = [], []         # units: (top-level statement, a lane loop's statements or None)

    def flush():
        inners = dict(units)
        for piece, run in _runs([t for t, _ in units], MIN_RUN):
            if run:
                out.extend(_loop(run, tables))
                continue
            inner = inners[piece]
            if inner is None:
                out.extend(piece.split("\n"))
                continue
            body = []
            for stmt, irun in _runs(inner, LANES_MIN_RUN):
                body.extend(_loop(irun, tables) if irun else stmt.split("\n"))
            out.extend(lane_loop(body))
        units.clear()

    for kind, body in segments:
        if kind == "top":
            units.extend(("\n".join(x), None) for x in _statements(body))
        elif kind == "loop":
            inner = ["\n".join(x) for x in body]
            units.append(("\n".join(lane_loop([y for x in body for y in x])), inner))
        else:
            flush()
            out.extend(body if kind == "fixed" else _vector_run(body, tables, lane_loop))
    flush()
    return out


def _vector_run(stmts, tables, lane_loop):
    """A vector run's lines: its runs of ``LANES_MIN_RUN`` repeats each a loop around a lane loop of its own, the
    statements between them sharing one (register-only statements: the lanes may run each in any order)."""
    out, plain = [], []
    for piece, run in _runs(["\n".join(x) for x in stmts], LANES_MIN_RUN):
        if not run:
            plain.extend(piece.split("\n"))
            continue
        if plain:
            out.extend(lane_loop(plain))
            plain = []
        head, inner = _loop(run, tables, split=True)
        out.extend(head + ["    " + x for x in lane_loop(inner)])
    if plain:
        out.extend(lane_loop(plain))
    return out


def _runs(texts, least):
    """-> [(a statement, None) | (None, [(template, slots) of each repetition of the block])] in order."""
    tpls = [_template(x) for x in texts]
    out, i = [], 0
    while i < len(texts):
        best = (0, 1)
        for p in range(1, MAX_PERIOD + 1):
            if not any(v for _, v in tpls[i:i + p]):
                continue
            r = 1
            while i + (r + 1) * p <= len(texts) and all(_same(tpls[i + k], tpls[i + r * p + k]) for k in range(p)):
                r += 1
            if r >= least and r * p > best[0]:
                best = (r * p, p)
        n, p = best
        if not n:
            out.append((texts[i], None))
            i += 1
            continue
        out.append((None, [_joined(tpls[i + k * p:i + (k + 1) * p]) for k in range(n // p)]))
        i += n
    return out


def _same(a, b):
    return a[0] == b[0] and [k for k, _, _ in a[1]] == [k for k, _, _ in b[1]]


def _joined(tpls):
    """A block of statements' templates as one."""
    return "\n".join(t for t, _ in tpls), [v for _, vs in tpls for v in vs]


def _loop(run, tables, split=False):
    """One run's loop: each slot whose value differs between the repetitions read from a table, the others
    kept.  -> its lines, or with ``split`` (its head, its body's unindented lines)."""
    reads, body = substituted(run, tables, "_rr", "_rv")
    head = [f"for _rr in range({len(run)}):"] + ["    " + x for x in reads]
    if split:
        return head, body.split("\n")
    return head + ["    " + x for x in body.split("\n")]


#: a rerolled loop's table read: a slot of a group's template (two instances of a group may loop over other tables)
_TABLE_READ = re.compile(r"\bRR\d+\[_rr\]")


def template(text, tables):
    """-> (``text`` with each token a repeat may differ in a slot -- and each rerolled loop's table read, kind "T"
    -- [(kind, value, source text)]): texts of equal templates are the same code but for those values
    (:func:`substituted`)."""
    pieces = _TABLE_READ.split(text)
    reads = _TABLE_READ.findall(text)
    shape, slots = _template(pieces[0])
    for read, piece in zip(reads, pieces[1:]):
        more, vals = _template(piece)
        shape += _SLOT + more
        slots += [("T", tables.content[read[:-len("[_rr]")]], read)] + vals
    return shape, slots


def template_text(tpl):
    """A template's text with its slots' own values (the code it was made of)."""
    parts = tpl[0].split(_SLOT)
    return parts[0] + "".join(src + part for (_, _, src), part in zip(tpl[1], parts[1:]))


def substituted(instances, tables, index, prefix):
    """``instances``: [template] of one shape -> (lines reading each slot whose value differs between them from
    ``tables`` at ``index`` into ``<prefix><n>``, the shape with every slot its variable or its one value)."""
    shape, first = instances[0]
    parts = shape.split(_SLOT)
    reads, body = [], parts[0]
    for n, (kind, _, src) in enumerate(first):
        col = [t[1][n][1] for t in instances]
        if len(set(col)) == 1:
            body += src
        elif kind == "T":           # a rerolled loop's tables, one row an instance
            body += f"{tables.add(kind, col)}[{index}, _rr]"
        else:
            reads.append(f"{prefix}{n} = {tables.add(kind, col)}[{index}]")
            body += f"{prefix}{n}"
        body += parts[n + 1]
    return reads, body
