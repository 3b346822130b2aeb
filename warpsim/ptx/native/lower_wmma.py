"""The native translator's rows of ``wmma.load`` / ``wmma.store`` / ``wmma.mma`` (issue 32): warp statements
calling :mod:`.rt_wmma` with the captured fragment layouts of :mod:`warpsim.ptx.wmma` and, for ``wmma.mma``,
the engine's jitted ``mma.sync`` of the path the kernel is generated for (as :mod:`.lower_mma`'s rows).

Translated: the global and shared spaces; ``wmma.mma`` with 32-bit C and D (f16 / bf16 / tf32 -> .f32, s8 / u8 ->
.s32); f16 C or D (a rounding the interpreter adds around the mma) falls back.  They register into
:data:`warpsim.ptx.native.lower.ROWS`.
"""

from __future__ import annotations

import hashlib

from ..wmma import BITS, SHAPES, AB_TYPES, _dims, f16_c_as_f32, fragment, registers
from .lower import row
from .lower_mma import _checked, _register_rows, engine_path, mma_values

_IMPORTS = ("from warpsim.ptx.native.rt_wmma import (load as rt_wmma_load, mma_generic as rt_wmma_mma_generic,\n"
            "    mma_int as rt_wmma_mma_int, mma_tc as rt_wmma_mma_tc, store as rt_wmma_store)")
_SHAPE = r"(?P<shape>m16n16k16|m32n8k16|m8n32k16|m16n16k8)"


class _Tables:
    """values(arch) of a wmma statement's launch argument: its tables, and for wmma.mma the plan of the mma.sync
    it tiles into on ``arch`` (lower_mma.mma_values: Untranslatable where that takes another engine path)."""

    def __init__(self, tables, opcode=None, path=None):
        self.tables, self.opcode, self.path = tables, opcode, path

    def __call__(self, arch):
        if self.opcode is None:
            return self.tables
        return (mma_values(self.opcode, self.path, arch),) + self.tables


def _argument(o, what, value):
    """The kernel argument holding a statement's tables (named by what they are)."""
    name = f"WMMA_{hashlib.sha256(what.encode()).hexdigest()[:10]}"
    o.launch_args.append((name, value))
    o.prelude.append(_IMPORTS)
    o.refcounted = True         # rt_wmma's calls make their matrices
    return name


def _table(o, frag, shape, typ):
    try:
        return fragment(frag, shape, typ)
    except ValueError as exc:
        o.fail(str(exc))


@row(r"wmma\.(?P<op>load|store)\.(?P<frag>a|b|c|d)\.sync\.aligned\.(?P<layout>row|col)\." + _SHAPE +
     r"\.(?P<space>global|shared(?:::cta)?)\.(?P<t>f16|bf16|tf32|s8|u8|f32|s32)")
def _wmma_memory(o, m):
    """One fragment between the warp's registers and the matrix at the (per-warp) address, stride ldm elements
    (absent: the matrix's own width)."""
    op, frag, shape, typ = m["op"], m["frag"], m["shape"], m["t"]
    if (op == "store") != (frag == "d"):
        o.fail(f"{o.st.opcode}: wmma.load takes a, b or c, wmma.store d")
    ops = o.st.operands
    if len(ops) not in (2, 3):
        o.fail(f"{o.st.opcode} with {len(ops)} operands")
    regs, where = (ops[0], ops[1]) if op == "load" else (ops[1], ops[0])
    regs = regs if isinstance(regs, list) else [regs]
    if len(regs) != registers(frag, shape, typ):
        o.fail(f"{o.st.opcode} takes {registers(frag, shape, typ)} registers")
    tab = _table(o, frag, shape, typ)
    rows = _register_rows(o, regs, op == "load")
    base, kind, off = o.address(where)
    shared = m["space"].startswith("shared")
    if kind == "symbol":
        if not shared or base not in o.ir.shared_symbols:
            o.fail(f"address {where!r}")
        base = f"np.uint64({o.ir.shared_symbols[base]})"
    col = m["layout"] == "col"
    ldm = f"np.int64({o.src(ops[2], 'u32')})" if len(ops) == 3 else str(_dims(frag, shape)[0 if col else 1])
    name = _argument(o, f"{frag} {shape} {typ}", _Tables(tab))
    call = (f"rt_wmma_{op}(R32, base, act, {rows}, {name}, {BITS[typ]}, SHV, SHJ, {col}, {shared}, SMEMP, SMEM_BYTES, "
            "BASES, SIZES, PTRS, TRK, TOFF)")
    return "warp", ["for l in range(32):", "    t = base + l",
                    f"    SHV[l] = np.uint64({base}) + np.uint64({off & 0xFFFFFFFFFFFFFFFF})", f"    SHJ[l] = {ldm}",
                    *_checked(call, o.st.line)]


@row(r"wmma\.mma\.sync\.aligned\.(?P<al>row|col)\.(?P<bl>row|col)\." + _SHAPE +
     r"(?:\.(?P<dt>f16|f32)\.(?P<ct>f16|f32)|\.(?P<dt2>f32|s32)\.(?P<at>bf16|tf32|s8|u8)\.(?P<bt>bf16|tf32|s8|u8)"
     r"\.(?P<ct2>f32|s32))(?P<sat>\.satfinite)?")
def _wmma_mma(o, m):
    """wmma._wmma_mma's tiling: the catalog's m16n8k16 mma (m16n8k4 for tf32, two chained per k 8)."""
    shape = m["shape"]
    at, bt, dt, ct = ("f16", "f16", m["dt"], m["ct"]) if m["dt"] else (m["at"], m["bt"], m["dt2"], m["ct2"])
    intk = at in ("s8", "u8")
    if at != bt or at not in AB_TYPES[shape] or intk != (dt == "s32") or intk != (ct == "s32"):
        o.fail(f"{o.st.opcode}: A, B, C and D types the interpreter refuses")
    if m["sat"] and not intk:
        o.fail(f"{o.st.opcode}: .satfinite on a floating-point wmma.mma (the interpreter refuses it too)")
    half = dt == ct == "f16"           # f16 C and D: the f16-accumulating mma, 16-bit elements in C's words
    if half:
        op = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
    elif at == "tf32":
        op = "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32"
    elif intk:
        op = f"mma.sync.aligned.m16n8k16.row.col{'.satfinite' if m['sat'] else ''}.s32.{at}.{bt}.s32"
    else:
        op = f"mma.sync.aligned.m16n8k16.row.col.f32.{at}.{bt}.f32"
    from ...isa.layouts import layout

    path = engine_path(o, op)
    regs = {}
    for role, x, typ in zip("dabc", o.need(4), (dt, at, bt, ct)):
        regs[role] = x if isinstance(x, list) else [x]
        if len(regs[role]) != registers("c" if role == "d" else role, shape, typ):
            o.fail(f"operand {role.upper()} of {o.st.opcode} needs {registers(role, shape, typ)} registers")
    rows = {r: _register_rows(o, regs[r], r == "d") for r in "abcd"}
    tables = tuple(_table(o, f, shape, t) for f, t in (("a", at), ("b", bt), ("c", ct), ("c", dt))) + \
        tuple(layout(op, r) for r in "abc") + (f16_c_as_f32(),)
    name = _argument(o, o.st.opcode, _Tables(tables, op, path))
    M, N, K = SHAPES[shape]
    kk = 4 if at == "tf32" else K
    return "warp", _checked(f"rt_wmma_mma_{path}({name}, R32, base, act, {rows['a']}, {rows['b']}, {rows['c']}, "
                            f"{rows['d']}, {M}, {N}, {K}, {kk}, {BITS[at]}, {16 if half else 32}, {BITS[ct]}, "
                            f"{BITS[dt]})", o.st.line)
