"""PTX statements -> lines of the generated kernel: the native translator's table of statement forms.

Each row is (opcode pattern, lowering).  A lowering reads the statement's operands through
:class:`Operands` (register widths checked against the type, immediates through the interpreter's
own ``immediate_bits``) and returns a :class:`Lowered`: its kind (``lane``: lines run per active lane
``l`` of warp ``w``, thread ``t``; ``warp``: lines run once per warp; ``branch``, ``ret``, ``bar``:
the block's end) and its lines.  Registers hold words (``R_x`` arrays of the register's width,
``P_x`` of bool); values are computed as uint64 / host floats and stored truncated.  The arithmetic
is the interpreter's rows restated for scalars: integer rows as wrapped uint64 arithmetic, f32 rows on
the host's IEEE unit (exact while it rounds to nearest with subnormals kept, which the kernel checks
before it starts) with the canonical NaN, the special-function forms through the jitted unit of
:mod:`warpsim.engine.sfu`.  A statement no row takes raises :class:`Untranslatable` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..instructions import TYPES
from ..syntax import immediate_bits, parse_int
from ..memory import _WINDOW as WINDOW
from ..memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from ..regfile import _SPECIAL as _INTERPRETER_SPECIAL
from ..regfile import NSM
from .rt import BAD_ADDRESS, MISALIGNED, READ, SHFL_MEMBERS, WRITTEN


class Untranslatable(Exception):
    """The statement has no native lowering (the message says why)."""


@dataclass
class Lowered:
    kind: str                     # lane | warp | wait | park | branch | ret | bar | call | return
    lines: list = field(default_factory=list)
    target: str | None = None     # branch label
    sfu: tuple | None = None      # (engine form code, ftz, table names) of a special-function statement
    reads: tuple = ()             # registers read
    writes: tuple = ()            # registers written (whole destination)
    prelude: tuple = ()           # module-level lines of the generated source it needs (imports, digests)
    launch_args: tuple = ()       # (name, values(arch)): kernel arguments chosen per launch (an mma's plan)
    scratch: tuple = ()           # (name, expression): working arrays the kernel makes once a run (an mma's)
    refcounted: bool = False      # its code makes arrays: its group function keeps numba's reference counting
    unit: "UnitCall | None" = None   # a special-function statement, which codegen may run with its neighbours


@dataclass(frozen=True)
class UnitCall:
    """A special-function statement as codegen.sfu_batch_lines runs it: its operands' expressions ``a`` and ``b``
    (the unit's two operands: a div's, or one operand twice), its destination ``dst``, and what its call of the
    unit passes (``call``: the form code, ftz, the tables).  Consecutive statements with the same ``call`` share
    one call of the unit over all their lanes."""
    a: str
    b: str
    dst: str
    call: str


class ExplicitCluster:
    """values(arch, explicit) of %is_explicit_cluster's launch argument: whether the launch named its cluster
    (``cluster=``, .reqnctapercluster or .explicitcluster; Module.launch), not a property of the arch."""
    per_launch = True

    def __call__(self, arch, explicit=False):
        return np.uint32(bool(explicit))


EXPLICIT_CLUSTER = ExplicitCluster()


_SPECIAL = re.compile(r"%(tid|ntid|ctaid|nctaid|cluster_ctaid|cluster_nctaid|clusterid|nclusterid)\.([xyz])\Z|"
                      r"%(laneid|warpid|nwarpid|cluster_ctarank|cluster_nctarank|lanemask_(?:eq|lt|le|gt|ge)|smid|nsmid|"
                      r"gridid|dynamic_smem_size|total_smem_size|aggr_smem_size|is_explicit_cluster)\Z")
#: special registers -> the generated code's values (per thread, CTA, warp or launch; the kernel sets them)
_SPECIAL_AXES = {"tid": "TID_{}[t]", "ntid": "NTID_{}", "ctaid": "CTAID_{}", "nctaid": "NCTAID_{}",
                 "cluster_ctaid": "CCTA_{}", "cluster_nctaid": "np.uint32(C{})", "clusterid": "CLID_{}",
                 "nclusterid": "NCL_{}"}
_SPECIAL_WORDS = {"laneid": "np.uint32(l)", "warpid": "np.uint32(w % W)", "nwarpid": "np.uint32(W)",
                  "cluster_ctarank": "CRANK", "cluster_nctarank": "np.uint32(CS)",
                  # the interpreter's launch values (regfile / simt): lane masks, SMs, the grid, shared sizes
                  "lanemask_eq": "(np.uint32(1) << np.uint32(l))",
                  "lanemask_lt": "((np.uint32(1) << np.uint32(l)) - np.uint32(1))",
                  "lanemask_le": "(((np.uint32(1) << np.uint32(l)) - np.uint32(1)) | (np.uint32(1) << np.uint32(l)))",
                  "lanemask_gt": "np.uint32(~(((np.uint32(1) << np.uint32(l)) - np.uint32(1)) | (np.uint32(1) << np.uint32(l))))",
                  "lanemask_ge": "np.uint32(~((np.uint32(1) << np.uint32(l)) - np.uint32(1)))",
                  "smid": f"np.uint32((CTAID_x + NCTAID_x * (CTAID_y + NCTAID_y * CTAID_z)) % {NSM})",
                  "nsmid": f"np.uint32({NSM})", "gridid": "np.uint32(1)",
                  "dynamic_smem_size": "np.uint32(SMEM_BYTES - SMEM_STATIC)",
                  "total_smem_size": "np.uint32(SMEM_BYTES)", "aggr_smem_size": "np.uint32(SMEM_BYTES)",
                  "is_explicit_cluster": "np.uint32(XCLUSTER)"}      # a launch argument (ExplicitCluster)
_ADDR = re.compile(r"\[\s*([%\w$.]+)\s*(?:([+-])\s*(-?\w+))?\s*\]\Z")


FILES = {1: "P", 16: "R16", 32: "R32", 64: "R64"}
#: the prelude line of the rows that call :mod:`.rt_scalar`
SCALAR_IMPORTS = ("from warpsim.ptx.native.rt_scalar import (absneg64 as rt_absneg64, bfi as rt_bfi, f64 as rt_f64,\n"
                  "    div64 as rt_div64, flush16 as rt_flush16, flush32 as rt_flush32, fma_directed as rt_fma_directed,\n"
                  "    fminmax as rt_fminmax,\n"
                  "    half_value as rt_half_value, mul_hi64 as rt_mul_hi64,\n"
                  "    narrow64 as rt_narrow64, sqrt64 as rt_sqrt64, w64_cvt as rt_w64_cvt,\n"
                  "    relu16 as rt_relu16, round_integral as rt_round_integral, saturate as rt_saturate, to_int as rt_to_int,\n"
                  "    w64_ba as rt_w64_ba, w64_first as rt_w64_first, widen32 as rt_widen32)")


def register_file(bits):
    """The generated code's register file of a width: (registers, threads) of words (bool: predicates)."""
    return FILES[bits]


class Operands:
    """Operand access for one statement: reads give uint64 (or bool) expressions, writes targets."""

    def __init__(self, ir, st):
        self.ir, self.st = ir, st
        self.reads, self.writes = [], []
        self.sfu = None              # the special-function tables the statement reads
        self.prelude, self.launch_args, self.scratch = [], [], []      # see Lowered
        self.refcounted = False

    def fail(self, why):
        raise Untranslatable(why)

    def _reg(self, name, bits):
        have = self.ir.regs.get(name)
        if have is None:
            self.fail(f"{name} is not a declared register")
        if have != bits:
            self.fail(f"{name} is {have}-bit, the statement's type is {bits}-bit")
        return self.ir.ref(name)

    def src(self, op, typ):
        """A source of PTX type ``typ``: a uint64 expression of its word (bool for .pred)."""
        bits = TYPES[typ][0]
        if isinstance(op, list):
            if len(op) != 1:
                self.fail(f"vector operand {op} where one value is read")
            op = op[0]
        if not isinstance(op, str):
            self.fail(f"operand {op!r}")
        if typ == "pred":
            if op in ("0", "1", "-1"):          # the predicate immediates the interpreter takes
                return "False" if op == "0" else "True"
            neg = op.startswith("!")
            name = op[1:] if neg else op
            if self.ir.regs.get(name) != 1:
                self.fail(f"{op} is not a predicate register")
            self.reads.append(name)
            return f"(not {self.ir.ref(name)})" if neg else self.ir.ref(name)
        m = _SPECIAL.match(op)
        if m:
            if bits != 32:
                self.fail(f"special register {op} read as {bits}-bit")
            kind, axis, other = m.groups()
            if other == "is_explicit_cluster":
                self.launch_args.append(("XCLUSTER", EXPLICIT_CLUSTER))
            return _SPECIAL_AXES[kind].format(axis.upper() if kind == "cluster_nctaid" else axis) if kind \
                else _SPECIAL_WORDS[other]
        m = _INTERPRETER_SPECIAL.match(op)
        if m:       # one the interpreter has and the translator does not take
            self.fail(f"special register {op}" + (": the clocks count the interpreter's scheduler steps, which the "
                                                  "compiled engine does not keep" if "clock" in m[1]
                                                  or "globaltimer" in m[1] else ""))
        if op.startswith("%") or self.ir.regs.get(op) is not None:     # (inline asm's registers: p$b1)
            self.reads.append(op)
            return self._reg(op, bits)
        if op in self.ir.local_symbols:         # (the interpreter's symbol table: a local name shadows a shared one)
            return f"np.uint64({self.ir.local_symbols[op]})"
        if op in self.ir.shared_symbols:
            return f"np.uint64({self.ir.shared_symbols[op]})"
        if op in self.ir.param_offsets:         # a kernel parameter's address in the .param space (simt._symbols)
            return f"np.uint64({self.ir.param_offsets[op][0]})"
        if op in self.ir.module_variables:      # a module variable's global address (mapped at the launch)
            return f"GSYM[{self.ir.module_variables.index(op)}]"
        try:
            v = immediate_bits(op, typ, bits)
        except ValueError as exc:
            self.fail(str(exc))
        if v is None:
            self.fail(f"operand {op!r} (a symbol or special register the translator does not take)")
        return f"np.uint64({v})"

    def dst(self, op, typ):
        """The assignment target of a destination of type ``typ``."""
        if isinstance(op, list):
            if len(op) != 1:
                self.fail(f"vector destination {op}")
            op = op[0]
        if not isinstance(op, str) or _SPECIAL.match(op) or not (op.startswith("%") or self.ir.regs.get(op)):
            self.fail(f"destination {op!r}")
        self.writes.append(op)
        return self._reg(op, TYPES[typ][0] if typ != 'pred' else 1)

    def need(self, n):
        if len(self.st.operands) != n:
            self.fail(f"{self.st.opcode} with {len(self.st.operands)} operands")
        return self.st.operands

    def shared_address(self, op):
        """The uint64 expression of a ``[reg+imm]`` / ``[shared symbol+imm]`` shared-memory address."""
        base, kind, off = self.address(op)
        if kind == "symbol":
            if base not in self.ir.shared_symbols:
                self.fail(f"address {op!r}")
            base = f"np.uint64({self.ir.shared_symbols[base]})"
        return f"np.uint64({base}) + np.uint64({off & 0xFFFFFFFFFFFFFFFF})"

    def address(self, op):
        """(base expression or None, base kind, offset) of [reg+imm] / [symbol+imm]."""
        m = _ADDR.match(op.strip()) if isinstance(op, str) else None
        if not m:
            self.fail(f"address {op!r}")
        base, sign, off = m.groups()
        o = parse_int(off) if off else 0
        if o is None:
            self.fail(f"address offset {off!r}")
        o = -o if sign == "-" else o
        if base.startswith("%") or self.ir.regs.get(base) is not None:     # (inline asm's registers: x$b56)
            bits = self.ir.regs.get(base)
            if bits not in (32, 64):
                self.fail(f"address register {base}")
            self.reads.append(base)
            return self.ir.ref(base), "reg", o
        return base, "symbol", o


def int_tuple(values):
    """Source of a tuple of int64 values that numba types as one UniTuple, not as literals: a runtime helper
    called with literal tuples is compiled again for every call site's values (and indexing a heterogeneous
    tuple by a loop variable is a switch)."""
    return "(" + "".join(f"np.int64({v}), " for v in values) + ")"


def sparse_operands(o, ins, meta, token):
    """A sparse form's (``mma.sp``, ``wgmma.mma_async.sp``) metadata register and sparsity selector, as the
    interpreter reads them: (the selector, the register's row in the 32-bit file)."""
    sel = parse_int(token) if isinstance(token, str) else None
    if sel is None or sel not in ins.selectors:
        o.fail(f"the sparsity selector {token!r} of {ins.opcode}: an integer immediate in {list(ins.selectors)}")
    if not isinstance(meta, str) or meta not in o.ir.index or o.ir.regs.get(meta) != 32:
        o.fail(f"the metadata operand {meta!r} of {ins.opcode} (a 32-bit register is translated)")
    o.src(meta, "b32")
    return sel, o.ir.index[meta]


def _sx(expr, bits):
    """A uint64 word of ``bits`` sign-extended to int64."""
    return f"np.int64(np.int{bits}({expr}))" if bits < 64 else f"np.int64({expr})"


def _u(expr):
    return f"np.uint64({expr})"


ROWS: list = []


def row(pattern):
    def deco(fn):
        ROWS.append((re.compile(pattern + r"\Z"), fn))
        return fn
    return deco


_IT = r"(?P<t>[bus](?:16|32|64))"


@row(r"(?P<op>add|sub|mul\.lo|mad\.lo)\.(?P<t>[us](?:16|32|64))")
def _int_arith(o, m):
    t, op = m["t"], m["op"]
    n = 3 if op == "mad.lo" else 2
    d, *s = o.need(n + 1)
    a = [o.src(x, t) for x in s]
    expr = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul.lo": "{0} * {1}", "mad.lo": "{0} * {1} + {2}"}[op]
    return [f"{o.dst(d, t)} = {expr.format(*(f'np.uint64({x})' for x in a))}"]


@row(r"(?P<op>mul|mad)\.wide\.(?P<st>[us](?:16|32))")
def _wide(o, m):
    st, op = m["st"], m["op"]
    bits = TYPES[st][0]
    d, *s = o.need(4 if op == "mad" else 3)
    a, b = (o.src(x, st) for x in s[:2])
    if st[0] == "s":
        prod = _u(f"{_sx(a, bits)} * {_sx(b, bits)}")
    else:
        prod = f"np.uint64({a}) * np.uint64({b})"
    dt = f"{st[0]}{2 * bits}"
    if op == "mad":
        prod = f"{prod} + {o.src(s[2], dt)}"
    return [f"{o.dst(d, dt)} = {prod}"]


@row(r"mul\.hi\.(?P<t>[us](?:16|32|64))")
def _mul_hi(o, m):
    """The upper half of the double-width product (16- and 32-bit types: the product fits 64 bits; 64-bit:
    rt_scalar.mul_hi64)."""
    t = m["t"]
    bits = TYPES[t][0]
    d, a, b = o.need(3)
    x, y = o.src(a, t), o.src(b, t)
    if bits == 64:
        o.prelude.append(SCALAR_IMPORTS)
        return [f"{o.dst(d, t)} = rt_mul_hi64(np.uint64({x}), np.uint64({y}), {t[0] == 's'})"]
    if t[0] == "s":
        return [f"{o.dst(d, t)} = np.uint64(({_sx(x, bits)} * {_sx(y, bits)}) >> np.int64({bits}))"]
    return [f"{o.dst(d, t)} = (np.uint64({x}) * np.uint64({y})) >> np.uint64({bits})"]


@row(r"(?P<op>and|or|xor)\.(?P<t>pred)")
def _logic_pred(o, m):
    d, a, b = o.need(3)
    py = {"and": "and", "or": "or", "xor": "!="}[m["op"]]
    return [f"{o.dst(d, 'pred')} = ({o.src(a, 'pred')}) {py} ({o.src(b, 'pred')})"]


@row(r"not\.pred")
def _not_pred(o, m):
    d, a = o.need(2)
    return [f"{o.dst(d, 'pred')} = not ({o.src(a, 'pred')})"]


@row(r"(?P<op>and|or|xor)\." + _IT)
def _logic(o, m):
    d, a, b = o.need(3)
    t = m["t"]
    py = {"and": "&", "or": "|", "xor": "^"}[m["op"]]
    return [f"{o.dst(d, t)} = {o.src(a, t)} {py} {o.src(b, t)}"]


@row(r"not\." + _IT)
def _not(o, m):
    d, a = o.need(2)
    return [f"{o.dst(d, m['t'])} = ~{o.src(a, m['t'])}"]


@row(r"shl\.(?P<t>b(?:16|32|64))")
def _shl(o, m):
    d, a, b = o.need(3)
    t = m["t"]
    bits = TYPES[t][0]
    s = o.src(b, "u32")
    return [f"_s = {s}", f"{o.dst(d, t)} = ({o.src(a, t)} << _s) if _s < np.uint64({bits}) else np.uint64(0)"]


@row(r"shr\.(?P<t>[bus](?:16|32|64))")
def _shr(o, m):
    d, a, b = o.need(3)
    t = m["t"]
    bits = TYPES[t][0]
    s = o.src(b, "u32")
    if t[0] == "s":
        return [f"_s = min({s}, np.uint64(63))",
                f"{o.dst(d, t)} = np.uint64({_sx(o.src(a, t), bits)} >> np.int64(_s))"]
    return [f"_s = {s}", f"{o.dst(d, t)} = ({o.src(a, t)} >> _s) if _s < np.uint64({bits}) else np.uint64(0)"]


@row(r"(?P<op>min|max)\.(?P<t>[us](?:16|32|64))")
def _minmax(o, m):
    d, a, b = o.need(3)
    t = m["t"]
    bits = TYPES[t][0]
    x, y = o.src(a, t), o.src(b, t)
    if t[0] == "s":
        x, y = _sx(x, bits), _sx(y, bits)
    return [f"{o.dst(d, t)} = np.uint64({m['op']}({x}, {y}))"]


@row(r"(?P<op>div|rem)\.(?P<t>[us](?:16|32|64))")
def _divrem(o, m):
    d, a, b = o.need(3)
    t = m["t"]
    signed, rem = t[0] == "s", m["op"] == "rem"
    return [f"{o.dst(d, t)} = rt_divrem({o.src(a, t)}, {o.src(b, t)}, {TYPES[t][0]}, {signed}, {rem})"]


@row(r"(?P<op>neg|abs)\.(?P<t>s(?:16|32|64))")
def _neg(o, m):
    d, a = o.need(2)
    t = m["t"]
    x = _sx(o.src(a, t), TYPES[t][0])
    expr = f"-{x}" if m["op"] == "neg" else f"abs({x})"
    return [f"{o.dst(d, t)} = np.uint64({expr})"]


@row(r"bfe\.(?P<t>[us](?:32|64))")
def _bfe(o, m):
    d, a, b, c = o.need(4)
    t = m["t"]
    return [f"{o.dst(d, t)} = rt_bfe({o.src(a, t)}, {o.src(b, 'u32')}, {o.src(c, 'u32')}, "
            f"{TYPES[t][0]}, {t[0] == 's'})"]


@row(r"bfi\.(?P<t>b(?:32|64))")
def _bfi(o, m):
    d, a, b, c, e = o.need(5)
    t = m["t"]
    o.prelude.append(SCALAR_IMPORTS)
    return [f"{o.dst(d, t)} = rt_bfi({o.src(a, t)}, {o.src(b, t)}, {o.src(c, 'u32')}, {o.src(e, 'u32')}, "
            f"{TYPES[t][0]})"]


_INTS = ("u16", "u32", "u64", "s16", "s32", "s64", "b16", "b32", "b64")


@row(r"cvt\.(?P<dt>[us](?:16|32|64))\.(?P<st>[us](?:16|32|64))")
def _cvt_int(o, m):
    d, a = o.need(2)
    dt, st = m["dt"], m["st"]
    x = o.src(a, st)
    if st[0] == "s" and TYPES[st][0] < 64:
        x = _u(_sx(x, TYPES[st][0]))
    return [f"{o.dst(d, dt)} = {x}"]


@row(r"cvta(?:\.to)?\.(?:global|const)\.(?P<t>u32|u64)")
def _cvta_global(o, m):
    """Global and constant addresses are their generic addresses (memory.cvta): a copy."""
    d, a = o.need(2)
    return [f"{o.dst(d, m['t'])} = {o.src(a, m['t'])}"]


#: the state spaces whose addresses sit in a window of the generic addresses (memory._WINDOWS)
WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}


@row(r"cvta(?P<to>\.to)?\.(?P<space>shared(?:::cta)?|local|param)\.(?P<t>u32|u64)")
def _cvta_window(o, m):
    """Shared, local and parameter offsets and their generic addresses differ by the space's window
    (memory.cvta; a generic load from the parameter window is not translated: it fails as unmapped)."""
    d, a = o.need(2)
    sign = "-" if m["to"] else "+"
    window = {**WINDOWS, "param": PARAM_WINDOW}[m["space"].split("::")[0]]
    return [f"{o.dst(d, m['t'])} = np.uint64({o.src(a, m['t'])}) {sign} np.uint64({window})"]


@row(r"cvt(?:\.rn)?\.(?P<dt>f32|f64)\.(?P<st>[us](?:16|32|64))")
def _cvt_float_int(o, m):
    """Integers to f32 / f64 (rounding to nearest: the interpreter's default): the host's conversion, correctly
    rounded."""
    d, a = o.need(2)
    st, dt = m["st"], m["dt"]
    x = o.src(a, st)
    v = _sx(x, TYPES[st][0]) if st[0] == "s" else x
    return [f"{o.dst(d, dt)} = " + (f"rt_w32(np.float32({v}))" if dt == "f32" else f"np.float64({v}).view(np.uint64)")]


@row(r"(?P<op>add|sub|mul)(?:\.rn)?\.f32")
def _f32_arith(o, m):
    d, a, b = o.need(3)
    py = {"add": "+", "sub": "-", "mul": "*"}[m["op"]]
    return [f"{o.dst(d, 'f32')} = rt_w32(rt_f32({o.src(a, 'f32')}) {py} rt_f32({o.src(b, 'f32')}))"]


@row(r"(?:fma|mad)\.rn\.f32")
def _fma(o, m):
    d, a, b, c = o.need(4)
    x, y, z = (f"rt_f32({o.src(v, 'f32')})" for v in (a, b, c))
    return [f"{o.dst(d, 'f32')} = rt_w32(fma_native({x}, {y}, {z}))"]


@row(r"contracted\.mul\.f32\.(?P<op>add|sub|rsub)\.f32")
def _contracted_product(o, m):
    """A mul.f32 merged into the add / sub reading it (warpsim.ptx.contraction): one FFMA; sub negates the
    addend, rsub the product (sign-bit flips on the words, as the interpreter's row)."""
    d, a, b, c = o.need(4)
    x, y, z = (o.src(v, "f32") for v in (a, b, c))
    if m["op"] == "rsub":
        x = f"({x} ^ np.uint32(2147483648))"
    if m["op"] == "sub":
        z = f"({z} ^ np.uint32(2147483648))"
    return [f"{o.dst(d, 'f32')} = rt_w32(fma_native(rt_f32({x}), rt_f32({y}), rt_f32({z})))"]


@row(r"contracted\.div\.(?P<form>full|approx)\.f32\.(?P<op>add|sub|rsub)\.f32")
def _contracted_division(o, m):
    d, a, b, c = o.need(4)
    x, y, z = (o.src(v, "f32") for v in (a, b, c))
    op = {"add": 0, "sub": 1, "rsub": 2}[m["op"]]
    o.sfu = ("rcp", "rcp")
    return [f"{o.dst(d, 'f32')} = rt_div_contracted({x}, {y}, {z}, {m['form'] == 'full'}, {op}, TAB_rcp)"]


@row(r"(?P<op>min|max)(?P<nan>\.NaN)?\.f32")
def _fminmax(o, m):
    d, a, b = o.need(3)
    return [f"{o.dst(d, 'f32')} = rt_fminmax32({o.src(a, 'f32')}, {o.src(b, 'f32')}, {m['op'] == 'max'}, "
            f"{bool(m['nan'])})"]


@row(r"(?P<op>neg|abs)\.f32")
def _fneg(o, m):
    d, a = o.need(2)
    expr = f"-rt_f32({o.src(a, 'f32')})" if m["op"] == "neg" else f"abs(rt_f32({o.src(a, 'f32')}))"
    return [f"{o.dst(d, 'f32')} = rt_w32({expr})"]


_CMP_INT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
            "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}


def _compare(cmp, st, x, y):
    bits = TYPES[st][0]
    if st in ("f32", "f64"):
        fx, fy = "_x", "_y"
        pre = [f"_x = rt_{st}({x})", f"_y = rt_{st}({y})"]
        nan = "(_x != _x or _y != _y)"
        if cmp in ("eq", "lt", "le", "gt", "ge"):
            return pre, f"{fx} {_CMP_INT[cmp]} {fy}"
        if cmp == "ne":
            return pre, f"({fx} != {fy} and not {nan})"
        if cmp in ("equ", "neu", "ltu", "leu", "gtu", "geu"):
            return pre, f"({fx} {_CMP_INT[cmp[:2]]} {fy} or {nan})"
        if cmp == "num":
            return pre, f"not {nan}"
        if cmp == "nan":
            return pre, nan
        raise Untranslatable(f"setp .{cmp}")
    if cmp not in _CMP_INT:
        raise Untranslatable(f"setp .{cmp} on .{st}")
    if st[0] == "s" and cmp not in ("lo", "ls", "hi", "hs"):
        x, y = _sx(x, bits), _sx(y, bits)
    return [], f"{x} {_CMP_INT[cmp]} {y}"


@row(r"setp\.(?P<cmp>\w+?)(?:\.(?P<bop>and|or|xor))?\.(?P<st>[bus](?:16|32|64)|f32|f64)")
def _setp(o, m):
    ops = o.st.operands
    if m["st"] == "f64":
        o.prelude.append(SCALAR_IMPORTS)
    if len(ops) != (4 if m["bop"] else 3) or not isinstance(ops[0], str):
        o.fail("setp operands")
    dst, q = ops[0], None
    if "|" in dst:
        dst, q = [x.strip() for x in dst.split("|")]
    pre, r = _compare(m["cmp"], m["st"], o.src(ops[1], m["st"]), o.src(ops[2], m["st"]))
    lines = pre + [f"_r = {r}"]
    rq = "not _r"
    if m["bop"]:
        c = o.src(ops[3], "pred")
        f = {"and": "({0}) and _c", "or": "({0}) or _c", "xor": "({0}) != _c"}[m["bop"]]
        lines.append(f"_c = {c}")
        r, rq = f.format("_r"), f.format("not _r")
        lines.append(f"_rq = {rq}")
        lines.append(f"_r = {r}")
        rq = "_rq"
    lines.append(f"{o.dst(dst, 'pred')} = _r")
    if q is not None:
        lines.append(f"{o.dst(q, 'pred')} = {rq}")
    return lines


@row(r"selp\.(?P<t>[bus](?:16|32|64)|f32|f64)")
def _selp(o, m):
    d, a, b, c = o.need(4)
    t = m["t"]
    return [f"{o.dst(d, t)} = {o.src(a, t)} if {o.src(c, 'pred')} else {o.src(b, t)}"]


@row(r"mov\.(?P<t>[bus](?:16|32|64)|f32|f64|pred)")
def _mov(o, m):
    d, a = o.need(2)
    t = m["t"]
    vec = d if isinstance(d, list) else a if isinstance(a, list) else None
    both = isinstance(d, list) and isinstance(a, list)
    if vec is not None and not both and t[0] == "b" and TYPES[t][0] % len(vec) == 0:
        part = TYPES[t][0] // len(vec)      # pack {lo, hi} into a wide register, or unpack one: part i at bits part * i
        if isinstance(a, list):
            parts = " | ".join(f"(np.uint64({o.src(r, f'b{part}')}) << np.uint64({part * i}))" for i, r in enumerate(a))
            return [f"{o.dst(d, t)} = {parts}"]
        lines = [f"_v = np.uint64({o.src(a, t)})"]
        return lines + [f"{o.dst(r, f'b{part}')} = (_v >> np.uint64({part * i})) & np.uint64({(1 << part) - 1})"
                        for i, r in enumerate(d) if r != "_"]
    if isinstance(d, list) or isinstance(a, list):
        o.fail("vector mov")
    return [f"{o.dst(d, t)} = {o.src(a, t)}"]


# ---------------------------------------------------------------------------------------------
# memory: ld / st of the param (kernel parameters), global, shared and local spaces

_LDST = re.compile(r"(?P<op>ld|st)(?:\.(?:weak|relaxed\.cta|relaxed\.gpu|ca|cg|cs|lu|cv|wb|wt|nc|L1::no_allocate|"
                   r"L1::evict_\w+|L2::evict_\w+|L2::\d+B))*"
                   r"(?:\.(?P<space>global|shared(?:::cta|::cluster)?|local|param(?:::entry)?))?"
                   r"(?:\.(?:ca|cg|cs|lu|cv|nc|L1::no_allocate|L1::evict_\w+|L2::evict_\w+|L2::\d+B))*"
                   r"(?:\.v(?P<vec>2|4))?\.(?P<t>[bus](?:8|16|32|64)|f32|f64)\Z")


def _pointer(o, where, address, space, nb, total, how):
    """Lines that set ``_p``, the host address of the ``total`` bytes at ``address`` (Operands.address of
    ``where``) of the global, shared or local space or a generic address, failing the kernel when they are
    misaligned to ``nb`` or outside every mapped array / the CTA's shared memory / the thread's local memory;
    global bytes are recorded as read and / or written (``how``: rt.READ, rt.WRITTEN) for a tracked launch
    (rt.track)."""
    base, kind, off = address
    if kind == "symbol":
        symbols = {"shared": o.ir.shared_symbols, "cluster": o.ir.shared_symbols,
                   "local": o.ir.local_symbols}.get(space, {})
        if base not in symbols:
            o.fail(f"address {where!r}")
        base = f"np.uint64({symbols[base]})"
    lines = [f"_a = {base} + np.uint64({off & 0xFFFFFFFFFFFFFFFF})"]
    # a space's address: the call checks its alignment too (one line, not three); a generic one: here, on the
    # generic address (the error names it, as the interpreter's does)
    al = f", {nb}" if space != "generic" else ""
    at = {"shared": f"rt_shared_at(status, {o.st.line}, t, SMEMP, SMEM_BYTES, _a, {total}{al})",
          "cluster": f"rt_sync.cluster_at(status, {o.st.line}, t, SMEM0, SMEM_BYTES, CRANK, CS, _a, {total}{al})",
          "local": f"rt_local_at(status, {o.st.line}, t, LMEMP, LMEM_STRIDE, LMEM_BYTES, _a, {total}{al})",
          "global": f"rt_global_at(status, {o.st.line}, t, BASES, SIZES, PTRS, TRK, TOFF, _a, {total}, {how}{al})"}
    found = ["if _p == 0:", "    return 1"]        # 0: it failed (status says why)
    if space != "generic":
        return lines + [f"_p = {at[space]}"] + found
    lines += [f"if _a % np.uint64({nb}) != np.uint64(0):", f"    return fail(status, {MISALIGNED}, {o.st.line}, t, _a)"]
    # a generic address: a window's space, or a global address (memory._split; the parameter window is not
    # translated, nor the local window of a kernel without local memory: an address there fails as outside
    # every mapped array)
    for k, (sp, w) in enumerate((sp, w) for sp, w in WINDOWS.items() if sp != "local" or o.ir.local_bytes):
        lines += [f"{'el' if k else ''}if np.uint64({w}) <= _a < np.uint64({w + WINDOW}):",
                  f"    _a = _a - np.uint64({w})", f"    _p = {at['cluster' if sp == 'shared' else sp]}"]
    return lines + ["else:", f"    _p = {at['global']}"] + found


def _widened(o, r, t, bits):
    """The type a load of ``t`` writes register r as: a wider register takes the word zero- (``.s``:
    sign-) extended, as the interpreter's narrower access of a wider register."""
    have = o.ir.regs.get(r)
    if have is not None and have > bits and have != 1:
        return f"{'s' if t[0] == 's' else 'b'}{have}"
    return t


def _param_word(o, r, t, bits, at):
    v = f"rt_load(PARAMS, {at}, {bits // 8})"
    return _u(_sx(v, bits)) if _widened(o, r, t, bits) != t and t[0] == "s" else v


def lower_memory(o, m):
    op, space, t = m["op"], m["space"] or "generic", m["t"]
    space = "cluster" if space == "shared::cluster" else space.split("::")[0]
    n = int(m["vec"] or 1)
    bits = TYPES[t][0]
    nb = bits // 8
    where, regs = (o.st.operands[1], o.st.operands[0]) if op == "ld" else (o.st.operands[0], o.st.operands[1])
    o.need(2)
    regs = regs if isinstance(regs, list) else [regs]
    if len(regs) != n:
        o.fail(f"{o.st.opcode} with {len(regs)} registers")
    base, kind, off = o.address(where)
    lines = []
    if space == "param" and op == "ld" and kind == "reg":     # a .param-space address (mov of a parameter's name)
        lines += [f"_a = np.int64({base}) + {off}", f"if _a < 0 or _a + {n * nb} > PARAMS.size:",
                  f"    return fail(status, {BAD_ADDRESS}, {o.st.line}, t, np.uint64(_a))"]
        return lines + [f"{o.dst(r, _widened(o, r, t, bits))} = {_param_word(o, r, t, bits, f'_a + {i * nb}')}"
                        for i, r in enumerate(regs)]
    if space == "param":
        if op == "st" or kind != "symbol" or base not in o.ir.param_offsets:
            o.fail("a .param access other than ld.param of a kernel parameter")
        poff, psize = o.ir.param_offsets[base]
        if not 0 <= off <= psize - n * nb:
            o.fail("ld.param past its parameter")
        for i, r in enumerate(regs):
            lines.append(f"{o.dst(r, _widened(o, r, t, bits))} = {_param_word(o, r, t, bits, poff + off + i * nb)}")
        return lines
    lines += _pointer(o, where, (base, kind, off), space, nb, n * nb, READ if op == "ld" else WRITTEN)
    for i, r in enumerate(regs):
        rt = t
        have = o.ir.regs.get(r) if r != "_" else bits
        if bits == 8 and have not in (16, 32, 64):      # bytes live in 16-bit and wider registers
            o.fail(f"{o.st.opcode} with register {r}")
        if have is not None and have > bits and have != 1:
            # a narrower access of a wider register: loads zero- (.s: sign-) extend, stores take its low bits
            rt = f"{'s' if t[0] == 's' else 'b'}{have}"
        if op == "ld":
            if r == "_":
                continue
            v = f"rt_peek{nb}(_p + {i * nb})"
            lines.append(f"{o.dst(r, rt)} = {_u(_sx(v, bits)) if rt != t and t[0] == 's' else v}")
        else:
            lines.append(f"rt_poke{nb}(_p + {i * nb}, {o.src(r, rt)})")
    return lines


@row(r"inline\.local\.(?P<op>save|restore)")
def _inline_local(o, m):
    """An inlined call's copy of its callee's .local bytes (inline.Flat): saved into the callee's slot at the
    call, restored from it at the return, as the interpreter's call keeps the caller's view of them."""
    lo, n, slot = (int(x) for x in o.need(3))
    src, dst = (lo, slot) if m["op"] == "save" else (slot, lo)
    return [f"rt_local_copy(LMEMP + t * LMEM_STRIDE, {src}, {dst}, {n})"]


@row(r"inline\.(?P<op>call|return)")
def _inline_frame(o, m):
    """A call of a recursive function and its body's return (inline.Frame): block ends whose code (the frame's
    registers saved and restored, the warp's reconvergence stack) codegen writes."""
    if o.st.guard is not None:
        o.fail(f"a guarded {o.st.opcode}")
    return m["op"], []


_SCOPE = r"(?:\.(?:relaxed|gpu|cta|sys))*"


def _pick(cmp, bits, signed):
    x, y = (_sx("_o", bits), _sx("_v", bits)) if signed else ("_o", "_v")
    return f"(_o if {x} {cmp} {y} else _v)"


#: atom / red operations (atomics._combine): their types, whether any two lanes' updates commute, and the new word
#: from the old one ``_o``, the operand ``_v`` (cas: the compared word) and cas's new word ``_c``
_ATOMIC = {
    "add": (("u32", "s32", "u64", "s64"), True,
            lambda bits, signed: "_o + _v" if bits == 64 else f"(_o + _v) & np.uint64({(1 << bits) - 1})"),
    "min": (("u32", "s32", "u64", "s64"), True, lambda bits, signed: _pick("<=", bits, signed)),
    "max": (("u32", "s32", "u64", "s64"), True, lambda bits, signed: _pick(">=", bits, signed)),
    "and": (("b32", "b64"), True, lambda *_: "_o & _v"),
    "or": (("b32", "b64"), True, lambda *_: "_o | _v"),
    "xor": (("b32", "b64"), True, lambda *_: "_o ^ _v"),
    "exch": (("b32", "b64"), False, lambda *_: "_v"),
    "cas": (("b32", "b64"), False, lambda *_: "(_c if _o == _v else _o)"),
    "inc": (("u32",), False, lambda *_: "(np.uint64(0) if _o >= _v else _o + np.uint64(1))"),
    "dec": (("u32",), False, lambda *_: "(_v if _o == np.uint64(0) or _o > _v else _o - np.uint64(1))"),
}


@row(r"(?P<op>atom|red)" + _SCOPE + r"(?:\.(?P<space>global|shared(?:::cta)?))?" + _SCOPE +
     r"\.(?P<f>" + "|".join(_ATOMIC) + r")\.(?P<t>[bus](?:32|64))")
def _atomic(o, m):
    """atom / red of the integer forms whose final memory word does not depend on the order of the updates
    (atomics.py): forms whose updates commute, and the others (exch, cas, inc, dec) when every lane applies the
    same update (operands that are immediates or constant registers, KernelIR.check_uniform).  A warp statement,
    so that the lanes update one at a time in increasing lane order, as the interpreter's; atom returns each
    lane's old word.  Between warps the updates go in the compiled engine's order (CTA by CTA, each warp to its
    next barrier), the interpreter's where each address is updated by one statement between barriers; other old
    words may differ, the final words do not."""
    f, t, returns = m["f"], m["t"], m["op"] == "atom"
    types, commute, update = _ATOMIC[f]
    if t not in types:
        o.fail(f"{o.st.opcode}: .{f} takes .{'/.'.join(types)}")
    ops = o.need((3 if returns else 2) + (f == "cas"))
    srcs = ops[2:] if returns else ops[1:]
    if not commute:
        o.ir.uniform_operands += [(x, o.st) for x in srcs if isinstance(x, str) and x.startswith("%")]
    bits = TYPES[t][0]
    nb = bits // 8
    where = ops[1 if returns else 0]
    body = _pointer(o, where, o.address(where), (m["space"] or "generic").split("::")[0], nb, nb, READ | WRITTEN)
    body += [f"_v = np.uint64({o.src(srcs[0], t)})", f"_o = rt_peek{nb}(_p)"]
    if f == "cas":
        body.append(f"_c = np.uint64({o.src(srcs[1], t)})")
    body.append(f"rt_poke{nb}(_p, {update(bits, t[0] == 's')})")
    if returns:
        body.append(f"{o.dst(ops[0], t)} = _o")
    return "warp", ["for l in range(32):", "    if act[l]:", "        t = base + l", *("        " + x for x in body)]


# ---------------------------------------------------------------------------------------------
# warp-level: shfl.sync; the special-function forms (one call of the jitted unit per warp)

def _members(o, mask):
    """Lines failing the kernel unless each executing lane's membermask is the set of lanes executing the
    statement together (context.require_members; an immediate whole-warp mask: every lane)."""
    if not str(mask).startswith("%") and immediate_bits(mask, "b32", 32) == 0xFFFFFFFF:
        return ["if not rt_all(act):",
                f"    return fail(status, {SHFL_MEMBERS}, {o.st.line}, w * 32, np.uint64(0xFFFFFFFF))"]
    return ["_am = np.uint64(0)", "for l in range(32):", "    if act[l]:",
            "        _am |= np.uint64(1) << np.uint64(l)", "for l in range(32):", "    t = w * 32 + l",
            f"    if act[l] and (np.uint64({o.src(mask, 'b32')}) & np.uint64(0xFFFFFFFF)) != _am:",
            f"        return fail(status, {SHFL_MEMBERS}, {o.st.line}, t, np.uint64({o.src(mask, 'b32')}))"]


@row(r"bar\.warp\.sync")
def _bar_warp(o, m):
    """The membermask's check only (instructions._bar_warp_sync): a warp runs its lanes together here."""
    (mask,) = o.need(1)
    return "warp", _members(o, mask)


def _warp_result(o, d, typ, value, fold):
    """A warp statement folding one value per active lane (``fold``: lines reading ``_v``, lane ``l``) and
    writing ``value`` to every active lane's ``d``."""
    dst = o.dst(d, typ)
    return ["for l in range(32):", "    if act[l]:", "        t = w * 32 + l", *("        " + x for x in fold),
            "for l in range(32):", "    if act[l]:", "        t = w * 32 + l", f"        {dst} = {value}"]


@row(r"vote\.sync\.(?:(?P<mode>all|any|uni)\.pred|ballot\.b32)")
def _vote(o, m):
    """instructions._vote / _ballot: the executing lanes' (the members') votes."""
    d, p, mask = o.need(3)
    lines = _members(o, mask) + ["_all = True", "_any = False", "_bal = np.uint64(0)"]
    fold = [f"_v = {o.src(p, 'pred')}", "_all = _all and _v", "_any = _any or _v", "if _v:",
            "    _bal |= np.uint64(1) << np.uint64(l)"]
    if m["mode"] is None:
        return "warp", lines + _warp_result(o, d, "b32", "_bal", fold)
    value = {"all": "_all", "any": "_any", "uni": "(_all or not _any)"}[m["mode"]]
    return "warp", lines + _warp_result(o, d, "pred", value, fold)


@row(r"activemask\.b32")
def _activemask(o, m):
    """instructions._activemask: the lanes executing the statement together (its guard's lanes where it has one)."""
    (d,) = o.need(1)
    return "warp", ["_am = np.uint64(0)"] + _warp_result(o, d, "b32", "_am",
                                                        ["_am |= np.uint64(1) << np.uint64(l)"])


@row(r"redux\.sync\.(?:(?P<arith>add|min|max)\.(?P<t>u32|s32)|(?P<bit>and|or|xor)\.b32)")
def _redux(o, m):
    """instructions._redux: add wraps mod 2^32, min / max compare as the type says, over the executing lanes."""
    d, a, mask = o.need(3)
    t = m["t"] or "b32"
    x = o.src(a, t)
    x = _sx(x, 32) if t == "s32" else f"np.int64({x})"
    f = m["arith"] or m["bit"]
    init = {"add": "0", "min": "np.int64(2**62)", "max": "np.int64(-2**62)", "and": "np.int64(0xFFFFFFFF)",
            "or": "0", "xor": "0"}[f]
    step = {"add": "_r + _v", "min": "min(_r, _v)", "max": "max(_r, _v)", "and": "_r & _v", "or": "_r | _v",
            "xor": "_r ^ _v"}[f]
    lines = _members(o, mask) + [f"_r = np.int64({init})"]
    return "warp", lines + _warp_result(o, d, t, "np.uint64(_r) & np.uint64(0xFFFFFFFF)", [f"_v = {x}", f"_r = {step}"])


@row(r"match\.(?P<mode>any|all)\.sync\.(?P<t>b32|b64)")
def _match(o, m):
    """instructions._match: every lane's a first (SHV), then each member's mask of the members equal to it
    (any), or the membermask and true when all members are equal (all)."""
    d, a, mask = o.need(3)
    if not isinstance(d, str):
        o.fail(f"match destination {d!r}")
    d, p = [x.strip() for x in d.split("|")] if "|" in d else (d, None)
    if p is not None and m["mode"] == "any":
        o.fail("match.any.sync has no predicate destination (d|p is match.all's)")
    lines = _members(o, mask) + [
        "for l in range(32):", "    t = w * 32 + l", f"    SHV[l] = np.uint64({o.src(a, m['t'])})",
        "_mm = np.uint64(0)", "_eq = True", "_f = -1", "for l in range(32):", "    if act[l]:",
        "        _mm |= np.uint64(1) << np.uint64(l)", "        if _f < 0:", "            _f = l",
        "        elif SHV[l] != SHV[_f]:", "            _eq = False"]
    if m["mode"] == "any":
        per_lane = ["_m = np.uint64(0)", "for _k in range(32):", "    if act[_k] and SHV[_k] == SHV[l]:",
                    "        _m |= np.uint64(1) << np.uint64(_k)", f"{o.dst(d, 'b32')} = _m"]
    else:
        per_lane = [f"{o.dst(d, 'b32')} = _mm if _eq else np.uint64(0)"]
        if p is not None:
            per_lane.append(f"{o.dst(p, 'pred')} = _eq")
    return "warp", lines + ["for l in range(32):", "    if act[l]:", "        t = w * 32 + l",
                            *("        " + x for x in per_lane)]


@row(r"shfl\.sync\.(?P<mode>up|down|bfly|idx)\.b32")
def _shfl(o, m):
    d, a, b, c, mask = o.need(5)
    if not isinstance(d, str):
        o.fail(f"shfl destination {d!r}")
    d, p = [x.strip() for x in d.split("|")] if "|" in d else (d, None)
    mode = m["mode"]
    j = {"up": "_ln - _b", "down": "_ln + _b", "bfly": "_ln ^ _b", "idx": "_mn | (_b & ~_sg)"}[mode]
    ok = "_j >= _mx" if mode == "up" else "_j <= _mx"
    per_lane = [f"_b = np.int64({o.src(b, 'u32')}) & 31", f"_c = np.int64({o.src(c, 'u32')})",
                "_sg = (_c >> 8) & 31", "_ln = np.int64(l)", "_mn = _ln & _sg", "_mx = _mn | ((_c & 31) & ~_sg)",
                f"_j = {j}", f"_ok = {ok}", "if not _ok:", "    _j = _ln", "SHJ[l] = _j"]
    if p is not None:       # whether lane l's source lane lies inside its segment
        per_lane.append(f"{o.dst(p, 'pred')} = _ok")
    members = _members(o, mask)
    src = o.src(a, "b32").replace(", t]", ", w * 32 + _l]")
    dst = o.dst(d, "b32")
    return ("warp", [
        *members,
        "for _l in range(32):",
        f"    SHV[_l] = {src}",
        "for l in range(32):",
        "    if act[l]:",
        "        t = w * 32 + l",
        *("        " + x for x in per_lane),
        "for l in range(32):",
        "    if act[l]:",
        "        t = w * 32 + l",
        f"        {dst} = SHV[SHJ[l]]"])


def _sfu_forms():
    from ...engine import sfu as u

    f32 = {"rcp": (u.RCP, "rcp", None), "rsqrt": (u.RSQRT, "rsq_odd", "rsq_even"),
           "sqrt": (u.SQRT, "sqrt_odd", "sqrt_even"), "ex2": (u.EX2, "ex2_pos", "ex2_neg")}
    forms = {}
    for name, (code, t0, t1) in f32.items():
        for ftz in (False, True):
            forms[f"{name}.approx{'.ftz' if ftz else ''}.f32"] = (code, ftz, t0, t1, 1)
    for kind, code in (("full", u.DIV_FULL), ("approx", u.DIV_APPROX)):
        for ftz in (False, True):
            forms[f"div.{kind}{'.ftz' if ftz else ''}.f32"] = (code, ftz, "rcp", None, 2)
    return forms


_SFU: dict = {}


def sfu_forms():
    """PTX form -> (the engine's form code, ftz, table, second table, operands): the f32 forms the
    jitted unit computes (the same entries :data:`warpsim.engine.sfu.FORMS` runs)."""
    if not _SFU:
        _SFU.update(_sfu_forms())
    return _SFU


def sfu_fit(code):
    """The kernel arguments (table names) of the fitted quadratics a form's unit predicts with."""
    from ...engine.sfu import fit_name

    return f"fitc0_{fit_name(code)}", f"fitc12_{fit_name(code)}"


def _sfu(o, opcode):
    """One call of the unit's lane kernel per warp on the active lanes' operands (the fitted
    prediction, the exact table path for the lanes it leaves)."""
    code, ftz, t0, t1, nsrc = sfu_forms()[opcode]
    d, *s = o.need(nsrc + 1)
    srcs = [o.src(x, "f32") for x in s]
    dst = o.dst(d, "f32")
    b = srcs[1] if nsrc == 2 else srcs[0]
    seg = "SEG" if t0 == "ex2_pos" else "NOSEG"
    c0, c12 = sfu_fit(code)
    unit = UnitCall(srcs[0], b, dst, f"{code}, {ftz}, @, TAB_{t0}, TAB_{t1 or t0}, {seg}, TAB_{c0}, TAB_{c12}")
    return sfu_batch_lines([unit]), (t0, t1 or t0, c0, c12), unit


def sfu_batch_lines(units):
    """One call of the unit (``engine.sfu.f32_range``) for consecutive statements of one form: each statement's
    active lanes' operands gathered after the previous one's (``_m`` lanes each), one call over all of them, then
    each statement's results written back in order.  A call per statement cost a Triton softmax or attention
    kernel numba's typing and LLVM's code of a sixteen-argument call each, and a run of the unit on 32 lanes."""
    lines = ["_n = np.int64(0)"]
    for u in units:
        lines += ["for l in range(32):", "    if act[l]:", "        t = base + l", f"        SA[_n] = {u.a}",
                  f"        SB[_n] = {u.b}", "        SHJ[_n] = l", "        _n += 1"]
        if u is units[0]:
            lines.append("_m = _n")
    lines.append(f"sfu_range({units[0].call.replace('@', 'SA, SB, SO, 0, _n')}, SP0, SP1, SSL, SLF)")
    for k, u in enumerate(units):
        lines += [f"for _i in range({k} * _m, {k + 1} * _m):" if k else "for _i in range(_m):",
                  "    t = base + SHJ[_i]", f"    {u.dst} = SO[_i]"]
    return lines


_BAR = re.compile(r"(?:bar|barrier)(?:\.cta)?\.(?P<op>sync|arrive)(?:\.aligned)?\Z|bar\.cta\.(?P<op2>sync|arrive)\Z")


def lower(ir, st):
    """The :class:`Lowered` form of statement ``st`` (Untranslatable: none)."""
    o = Operands(ir, st)
    op = st.opcode
    if op in ("bra", "bra.uni"):
        return Lowered("branch", target=st.operands[0] if st.operands else None)
    if op in ("ret", "exit"):
        if st.operands:
            o.fail(f"{op} with operands")
        return Lowered("ret")
    bm = _BAR.match(op)
    if bm:
        if st.guard is not None:
            o.fail(f"a guarded {op}")
        arrive = (bm["op"] or bm["op2"]) == "arrive"
        if not 1 + arrive <= len(st.operands) <= 2:
            o.fail(f"{op} with {len(st.operands)} operands")
        # the barrier number and thread count: warp lane 0's (the interpreter reads them per warp)
        lines = [f"_bid = np.int64({o.src(st.operands[0], 'u32')})".replace(", t]", ", base]"),
                 f"_bcnt = np.int64({o.src(st.operands[1], 'u32') if len(st.operands) == 2 else 0})"
                 .replace(", t]", ", base]"), f"_bgiven = {len(st.operands) == 2}", f"_bsync = {not arrive}"]
        return Lowered("bar", lines, reads=tuple(o.reads))
    if op in sfu_forms():
        lines, tabs, unit = _sfu(o, op)
        return Lowered("warp", lines, sfu=tabs, reads=tuple(o.reads), writes=tuple(o.writes), unit=unit)
    mm = _LDST.match(op)
    if mm:
        return Lowered("lane", lower_memory(o, mm), reads=tuple(o.reads), writes=tuple(o.writes))
    for pat, fn in ROWS:
        mm = pat.match(op)
        if mm:
            out = fn(o, mm)
            kind, lines = out if isinstance(out, tuple) else ("lane", out)
            return Lowered(kind, lines, sfu=o.sfu, reads=tuple(o.reads), writes=tuple(o.writes),
                           prelude=tuple(o.prelude), launch_args=tuple(o.launch_args), scratch=tuple(o.scratch),
                           refcounted=o.refcounted)
    o.fail(f"no native form of {op!r}")
