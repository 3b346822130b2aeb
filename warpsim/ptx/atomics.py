"""The ``atom`` and ``red`` rows of the instruction table: read-modify-write on global or shared memory.

Order: the lanes of one statement update memory one at a time, in increasing lane order within a
warp and in increasing warp order within a launch (warps that reach the statement at different
steps of the scheduler update in that step order).  ``atom`` returns each lane's old value.

Float adds: ``.f32`` rounds to nearest even and flushes subnormal inputs and results to
sign-preserving zero (as the PTX ISA states); ``.f64``, ``.f16``/``.f16x2`` and
``.bf16``/``.bf16x2`` round to nearest even and keep subnormals.  Modelled from the ISA text;
the captures in tests/ptx/compiled check the integer forms.
"""

from __future__ import annotations

import numpy as np

from . import convert as cv
from .instructions import TYPES, UINT, instr

_SEM = r"(?:\.(?:relaxed|acquire|release|acq_rel|sys|gpu|cta|cluster))*"
_SPACE = r"(?:\.(?P<space>global|shared(?:::cta|::cluster)?))?"
_OP = r"\.(?P<op>add|min|max|and|or|xor|exch|cas|inc|dec)"
_TYPE = r"(?:\.noftz)?\.(?P<t>[bus](?:32|64)|b16|f32|f64|f16|f16x2|bf16|bf16x2)"
_HINT = r"(?:\.L2::cache_hint)?"

_ALLOWED = {
    "add": ("u32", "s32", "u64", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "exch": ("b32", "b64"), "cas": ("b32", "b64", "b16"), "inc": ("u32",), "dec": ("u32",),
}


def _f32_ftz(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    sub = (bits & np.uint32(0x7F800000)) == 0
    return np.where(sub, bits & np.uint32(0x80000000), bits).view(np.float32)


def _half_add(a, b, fmt):
    """Round-to-nearest-even sum of two f16 or bf16 values (uint16 words) via exact f64."""
    fa = cv.float_to_float(a.astype(np.uint64), fmt, "f64", None).astype(np.uint64).view(np.float64)
    fb = cv.float_to_float(b.astype(np.uint64), fmt, "f64", None).astype(np.uint64).view(np.float64)
    s = (fa + fb).view(np.uint64)          # exact: two 11- or 8-bit significands fit in f64
    return cv.float_to_float(s, "f64", fmt, "rn").astype(np.uint16)


def _combine(op, t, old, val, cmp=None):
    """One lane's update: old and val are numpy scalars/arrays of the type's unsigned words."""
    bits = TYPES[t][0]
    u = UINT[bits]
    if op == "exch":
        return val
    if op == "cas":
        return np.where(old == cmp, val, old).astype(u)
    if op in ("and", "or", "xor"):
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](old, val)
    if op == "inc":
        return np.where(old >= val, u(0), old + u(1)).astype(u)
    if op == "dec":
        return np.where((old == 0) | (old > val), val, old - u(1)).astype(u)
    if t in ("f16x2", "bf16x2"):
        fmt = t[:-2]
        lo = _half_add(old & u(0xFFFF), val & u(0xFFFF), fmt).astype(u)
        hi = _half_add(old >> u(16), val >> u(16), fmt).astype(u)
        return lo | (hi << u(16))
    if t in ("f16", "bf16"):
        return _half_add(old, val, t).astype(u)
    sdt = TYPES[t][1]
    a, b = np.asarray(old).view(sdt), np.asarray(val).view(sdt)
    with np.errstate(all="ignore"):
        if op == "add":
            r = _f32_ftz(_f32_ftz(a) + _f32_ftz(b)) if t == "f32" else a + b
        else:
            r = np.minimum(a, b) if op == "min" else np.maximum(a, b)
    return np.asarray(r, dtype=sdt).view(u)


def _run(ctx, m, returns):
    op, t = m["op"], m["t"]
    if t not in _ALLOWED[op]:
        ctx.fail(f"{'atom' if returns else 'red'}.{op} takes {', '.join('.' + x for x in _ALLOWED[op])}, "
                 f"not .{t}")
    ops = ctx.operands
    want = (3 if returns else 2) + (op == "cas")
    if len(ops) not in (want, want + 1):     # an optional cache-policy operand last
        ctx.fail(f"{ctx.opcode} takes {want} operands ({'d, ' if returns else ''}[address], b"
                 f"{', c' if op == 'cas' else ''}), got {len(ops)}")
    bits = TYPES[t][0]
    u = UINT[bits]
    rt = f"b{bits}"
    addr = ctx.address(ops[1 if returns else 0])
    srcs = ops[2:] if returns else ops[1:]
    val = ctx.read(srcs[0], rt).view(u).reshape(-1)
    cmp = ctx.read(srcs[1], rt).view(u).reshape(-1) if op == "cas" else None
    if op == "cas":
        val, cmp = cmp, val                  # atom.cas d, [a], b, c: store c if old == b
    space = (m["space"] or "generic").split("::")[0]

    def update(cur, lanes):
        old = cur.view(u)[0]
        olds = np.empty(len(lanes), dtype=u)
        for i, lane in enumerate(lanes):
            olds[i] = old
            old = u(_combine(op, t, old, val[lane], None if cmp is None else cmp[lane]))
        return olds.view(np.uint8).reshape(len(lanes), bits // 8), np.array([old], dtype=u).view(np.uint8)

    ctx.relaxed = True
    old = ctx.memory.atomic(space, addr, bits // 8, ctx, update)
    if returns:
        ctx.write(ops[0], np.ascontiguousarray(old).view(u).reshape(ctx.shape), rt)


@instr(r"atom" + _SEM + _SPACE + _SEM + _OP + _TYPE + _HINT)
def _atom(ctx, m):
    _run(ctx, m, True)


@instr(r"red" + _SEM + _SPACE + _SEM + _OP + _TYPE + _HINT)
def _red(ctx, m):
    _run(ctx, m, False)
