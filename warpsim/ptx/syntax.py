"""PTX text -> statements: comments, labels, guards, operands, and whole modules as nvcc writes them."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np


class PTXError(ValueError):
    """PTX that cannot be executed; ``line``, ``statement`` and ``token`` say where.

    >>> try:
    ...     warpsim.Warp().run("mov.u32 %r1, %r9;")
    ... except warpsim.PTXError as err:
    ...     print(err.token)
    %r9
    """

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


def strip_comments(text: str) -> str:
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


def split_operands(s: str, line: int, stmt: str):
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


@functools.lru_cache(maxsize=8192)
def parse_int(tok: str) -> int | None:
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


@functools.lru_cache(maxsize=8192)       # pure: a statement's immediates are read at every execution
def immediate_bits(tok: str, typ: str, bits: int) -> int | None:
    """The bit pattern of an immediate operand of PTX type ``typ`` (``bits`` wide), or None if it is not one."""
    t = tok.strip()
    m = re.fullmatch(r"(-?)0([fFdD])([0-9a-fA-F]+)", t)
    if m:
        sign, kind, digits = m.groups()
        want = 8 if kind in "fF" else 16
        if len(digits) != want:
            return None
        v = int(digits, 16)
        if kind in "fF":
            if bits == 64:
                v = int(np.array(v, dtype=np.uint32).view(np.float32).astype(np.float64).view(np.uint64))
            elif bits == 16:
                v = int(np.array(v, dtype=np.uint32).view(np.float32).astype(np.float16).view(np.uint16))
        elif bits == 32:
            v = int(np.array(v, dtype=np.uint64).view(np.float64).astype(np.float32).view(np.uint32))
        if sign:
            v ^= 1 << (bits - 1)
        return v
    v = parse_int(t)
    if v is not None:
        if typ.startswith("f"):   # an integer literal for a float operand means that value
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
        fdt, udt = {16: (np.float16, np.uint16), 32: (np.float32, np.uint32), 64: (np.float64, np.uint64)}[bits]
        return int(np.array(x, dtype=fdt).view(udt))
    return None


@dataclass
class Statement:
    """One executable PTX statement: ``@guard opcode operands;`` at a source line."""
    line: int
    text: str
    opcode: str
    operands: list
    guard: tuple | None = None          # (negated, predicate register)
    handler: object = None              # resolved instruction (filled by the executor)
    match: object = None


_LINE_DIRECTIVE = re.compile(r"\.(?:loc|file)\s")
_LABEL = re.compile(r"([A-Za-z_$%][\w$]*)\s*:(?!:)")
_GUARD = re.compile(r"@(!?)(%?[\w$]+)\s+")


def make_statement(line: int, text: str) -> Statement:
    stmt = " ".join(text.split())
    guard = None
    body = stmt
    m = _GUARD.match(body)
    if m:
        guard = (m.group(1) == "!", m.group(2))
        body = body[m.end():]
    parts = body.split(None, 1)
    opcode = parts[0]
    rest = parts[1] if len(parts) > 1 else ""
    return Statement(line, stmt, opcode, split_operands(rest, line, stmt) if rest else [], guard)


def statements(text: str, scopes: bool = False):
    """Yield ('label', line, name) and ('stmt', line, text) items of a statement list (a snippet or an
    entry's body): ';'-terminated statements, ``name:`` labels and ``{`` ``}`` scope braces (yielded
    as ('scope', line, '{' or '}') when ``scopes``: labels inside a brace block are local to it, as
    in inline-asm blocks that each define ``DONE:``)."""
    clean = strip_comments(text)
    i, n = 0, len(clean)
    depth = 0
    while i < n:
        ch = clean[i]
        if ch.isspace():
            i += 1
            continue
        line = clean.count("\n", 0, i) + 1
        if ch == "{":
            depth += 1
            i += 1
            if scopes:
                yield ("scope", line, "{")
            continue
        if ch == "}":
            depth -= 1
            if depth < 0:
                raise PTXError("unbalanced '}'", line=line)
            i += 1
            if scopes:
                yield ("scope", line, "}")
            continue
        if _LINE_DIRECTIVE.match(clean, i):       # .loc / .file end at the end of their line, no ';'
            j = clean.find("\n", i)
            i = n if j < 0 else j
            continue
        m = _LABEL.match(clean, i)
        if m and not clean.startswith(".", i):
            yield ("label", line, m.group(1))
            i = m.end()
            continue
        j = clean.find(";", i)
        if j < 0:
            raise PTXError("statement is missing its terminating ';'", line=line,
                           statement=" ".join(clean[i:].split()))
        yield ("stmt", line, clean[i:j])
        i = j + 1
    if depth:
        raise PTXError("unbalanced '{' in statement list")


# ---------------------------------------------------------------------------------------------
# modules

@dataclass
class Param:
    name: str
    type: str             # u32, u64, f32, ...
    bits: int
    align: int | None = None
    array: int | None = None   # .b8 name[N] (by-value struct) -> N bytes


@dataclass
class Entry:
    """An ``.entry`` or a ``.func`` with a body."""
    name: str
    params: list
    body: str
    body_line: int        # line of the body's first character in the module text
    directives: dict = field(default_factory=dict)
    kind: str = "entry"
    returns: list = field(default_factory=list)    # a .func's return parameters


@dataclass
class Variable:
    """A module-level ``.global`` or ``.const`` variable: its bytes as initialised."""
    name: str
    space: str
    align: int
    data: bytes
    line: int


@dataclass
class ModuleText:
    version: str | None
    target: str | None
    address_size: int
    entries: dict
    shared: list          # module-level .shared declarations (text, line)
    functions: dict = field(default_factory=dict)     # name -> Entry (kind "func") with a body
    declared: set = field(default_factory=set)        # .func names declared (prototypes included)
    variables: list = field(default_factory=list)     # Variable


_TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
              "b32": 32, "u32": 32, "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64,
              "pred": 1, "f16x2": 32, "bf16x2": 32, "b128": 128}

# performance and cluster directives between a kernel's signature and its body
DIRECTIVES = {"maxntid": (1, 3), "reqntid": (1, 3), "minnctapersm": (1, 1), "maxnctapersm": (1, 1),
              "maxnreg": (1, 1), "reqnctapercluster": (1, 3), "explicitcluster": (0, 0), "maxclusterrank": (1, 1),
              "noreturn": (0, 0), "blocksareclusters": (0, 0)}


def _match_brace(text, i, open_="{", close="}"):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


_FUNC = re.compile(r"(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s*")
_VAR = re.compile(r"(?:\.(?:visible|weak|extern|common)\s+)*\.(global|const)\s+(?:\.align\s+(\d+)\s+)?(?:\.v([248])\s+)?"
                  r"\.(\w+)\s+([\w$]+)((?:\s*\[\d*\])*)\s*(?:=\s*(.*))?\Z", re.S)


def parse_module(text: str) -> ModuleText:
    clean = strip_comments(text)
    version = target = None
    address_size = 64
    entries, functions, declared, variables = {}, {}, set(), []
    shared = []
    i, n = 0, len(clean)
    while i < n:
        if clean[i].isspace():
            i += 1
            continue
        line = clean.count("\n", 0, i) + 1
        eol = clean.find("\n", i)
        eol = n if eol < 0 else eol
        head = clean[i:eol].strip()
        if head.startswith(".version"):
            version = head.split()[1] if len(head.split()) > 1 else None
            i = eol
            continue
        if head.startswith(".target"):
            target = head[len(".target"):].strip()
            i = eol
            continue
        if head.startswith(".address_size"):
            words = head.rstrip(";").split()
            if len(words) != 2 or words[1] not in ("32", "64"):
                raise PTXError("expected '.address_size 32' or '.address_size 64'", line=line, statement=head)
            address_size = int(words[1])
            i = eol
            continue
        if head.split()[0] in (".file", ".loc"):          # debug line tables: nothing to run
            i = eol
            continue
        if head.startswith(".pragma"):
            j = clean.find(";", i)
            i = n if j < 0 else j + 1
            continue
        if head.startswith(".section"):                 # DWARF sections of -G / -lineinfo / Triton
            b = clean.find("{", i)
            e = _match_brace(clean, b) if b >= 0 else -1
            if e < 0:
                raise PTXError("a .section block has no closing '}'", line=line, statement=head)
            i = e + 1
            continue
        m = _FUNC.match(clean, i)
        if m:
            kind = m.group(1)
            j = m.end()
            returns = []
            if kind == "func" and clean[j:].lstrip().startswith("("):
                k0 = clean.index("(", j)
                k = _match_brace(clean, k0, "(", ")")
                if k < 0:
                    raise PTXError("unbalanced '(' in the return list of a .func", line=line)
                returns = [_param(p.strip(), line, "a .func") for p in clean[k0 + 1:k].split(",") if p.strip()]
                j = k + 1
            nm = re.compile(r"\s*([\w$]+)").match(clean, j)
            if not nm:
                raise PTXError(f"malformed .{kind} declaration", line=line)
            name = nm.group(1)
            j = nm.end()
            params = []
            while j < n and clean[j].isspace():
                j += 1
            if j < n and clean[j] == "(":
                k = _match_brace(clean, j, "(", ")")
                if k < 0:
                    raise PTXError(f"unbalanced '(' in the parameter list of {name}", line=line)
                for ptxt in [p.strip() for p in clean[j + 1:k].split(",") if p.strip()]:
                    params.append(_param(ptxt, line, name))
                j = k + 1
            # performance directives up to '{' or ';'
            b = j
            while b < n and clean[b] not in "{;":
                b += 1
            dirs = _directives(clean[j:b], clean.count("\n", 0, j) + 1, name)
            if kind == "func":
                declared.add(name)
            if b >= n or clean[b] == ";":
                i = b + 1     # a prototype: nothing to run
                continue
            e = _match_brace(clean, b)
            if e < 0:
                raise PTXError(f"the body of {name} has no closing '}}'", line=line)
            ent = Entry(name, params, text[b + 1:e], clean.count("\n", 0, b + 1) + 1, dirs, kind, returns)
            (entries if kind == "entry" else functions)[name] = ent
            i = e + 1
            continue
        if head.startswith((".shared", ".extern", ".global", ".const", ".visible", ".weak", ".common")):
            j = clean.find(";", i)
            if j < 0:
                raise PTXError("declaration is missing its terminating ';'", line=line, statement=head)
            decl = " ".join(clean[i:j].split())
            i = j + 1
            if ".shared" in decl.split()[:3]:
                shared.append((decl.replace(".visible ", "").replace(".weak ", ""), line))
            elif decl.startswith(".extern"):
                continue               # defined in another module: using it is an error at run time
            else:
                variables.append(_variable(decl, line))
            continue
        raise PTXError(f"unexpected text at module level: {head[:60]!r} (expected .version, .target, "
                       ".address_size, .entry, .func, .global/.const/.shared variables, .file, .section or "
                       ".pragma)", line=line)
    return ModuleText(version, target, address_size, entries, shared, functions, declared, variables)


def _directives(text, line, name):
    dirs = {}
    for tok in re.finditer(r"\.(\w+)((?:\s*,?\s*\d+)*)", text):
        key, nums = tok.group(1), [int(x) for x in tok.group(2).replace(",", " ").split()]
        if key == "pragma":
            continue
        if key not in DIRECTIVES:
            raise PTXError(f"unknown directive .{key} of {name} (known: "
                           f"{', '.join('.' + k for k in DIRECTIVES)})", line=line, token="." + key)
        lo, hi = DIRECTIVES[key]
        if not lo <= len(nums) <= hi:
            raise PTXError(f".{key} of {name} takes {lo} to {hi} integers, got {len(nums)}", line=line,
                           token="." + key)
        dirs[key] = nums
    rest = re.sub(r"\.(\w+)((?:\s*,?\s*\d+)*)", " ", text)
    rest = re.sub(r'"[^"]*"\s*;?', " ", rest)
    if rest.strip():
        raise PTXError(f"cannot read {rest.strip()[:40]!r} between the signature and the body of {name}", line=line)
    return dirs


def _variable(decl, line):
    m = _VAR.match(decl)
    if not m:
        raise PTXError("cannot read this module-level variable (expected e.g. '.global .align 4 .b32 "
                       "table[4] = {1, 2, 3, 4};')", line=line, statement=decl)
    space, align, vec, typ, name, dims, init = m.groups()
    if typ not in _TYPE_BITS or typ in ("pred", "b128"):
        raise PTXError(f"unknown type .{typ} of module variable {name}", line=line, statement=decl, token="." + typ)
    size = _TYPE_BITS[typ] // 8
    count = int(vec or 1)
    unknown = False
    for d in re.findall(r"\[(\d*)\]", dims or ""):
        if d == "":
            unknown = True
        else:
            count *= int(d)
    values = []
    if init is not None:
        toks = [t for t in re.split(r"[\s,{}]+", init) if t]
        for t in toks:
            v = immediate_bits(t, typ, size * 8) if not t.startswith(("generic(", "%")) else None
            if v is None:
                raise PTXError(f"initializer {t!r} of {name} is not a number of type .{typ} (symbol addresses "
                               "in initializers are not modelled)", line=line, statement=decl, token=t)
            values.append(v)
        if unknown:
            count = max(count, len(values)) if count else len(values)
        if len(values) > count:
            raise PTXError(f"{name} has {count} element(s) but {len(values)} initializer(s)", line=line, statement=decl)
    data = b"".join(int(v).to_bytes(size, "little") for v in values) + bytes(size * (count - len(values)))
    return Variable(name, space, int(align or size), data, line)


def _param(ptxt, line, entry):
    toks = ptxt.split()
    typ, align, array = None, None, None
    name = toks[-1]
    for k, t in enumerate(toks):
        if t == ".align":
            align = int(toks[k + 1])
        elif t.startswith(".") and t[1:] in _TYPE_BITS:
            typ = t[1:]
    am = re.fullmatch(r"([\w$]+)\[(\d+)\]", name)
    if am:
        name, array = am.group(1), int(am.group(2))
    if ".param" not in toks or typ is None:
        raise PTXError(f"cannot read kernel parameter {ptxt!r} of {entry}", line=line)
    return Param(name, typ, _TYPE_BITS[typ], align, array)


#: a .reg declaration of plain names (no %r<N> range): what a { } block of inline asm declares
SCOPED_REG = re.compile(r"\.reg\s*(?:\.v[248]\s+)?\.(\w+)\s+((?:%?[A-Za-z_$][\w$]*\s*,\s*)*%?[A-Za-z_$][\w$]*)\s*\Z")


def scoped_names(text, chain, block_regs):
    """``text`` with the registers of its enclosing blocks under their block-scoped names (the
    innermost declaration of a name wins); the opcode itself is left alone."""
    names = {}
    for b in chain:
        names.update(block_regs.get(b, {}))
    if not names:
        return text
    pat = re.compile(r"(?<![\w$%.])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) +
                     r")(?![\w$])")
    head, _, rest = text.partition(" ")
    if head.startswith("@"):                       # a guard, then the opcode
        guard = pat.sub(lambda m: names[m.group(1)], head)
        op, _, rest = rest.partition(" ")
        return f"{guard} {op} {pat.sub(lambda m: names[m.group(1)], rest)}".rstrip()
    return f"{head} {pat.sub(lambda m: names[m.group(1)], rest)}".rstrip()
