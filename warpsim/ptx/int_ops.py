"""Integer ALU rows that compilers emit beyond the basic table: division, carry chains, funnel
shifts, byte permutes, lop3, bit search, dot products, sad.

Semantics follow the PTX ISA; where the ISA leaves a result to the hardware (division by zero,
the carry flag of subtraction) warpsim returns what the H100 captures show (docs/ptx_alu.md).
The carry flag (CC.CF) is per thread state kept beside the register file.
"""

from __future__ import annotations

import numpy as np

from .alu_rows import EXACT, note_status, row
from .instructions import TYPES, UINT, _mulhi, instr

_ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mask(bits):
    return np.uint64((1 << bits) - 1) if bits < 64 else _ALL64


def _u64(x):
    """Bits of an integer array as uint64 (sign extension dropped: two's complement of its width)."""
    bits = x.dtype.itemsize * 8
    return x.view(UINT[bits]).astype(np.uint64)


def _signed_u64(x):
    """Value sign-extended to 64 bits, as uint64 bits."""
    return x.astype(np.int64).view(np.uint64) if x.dtype.kind == "i" else x.astype(np.uint64)


def _out(v, t):
    """uint64 bits -> the numpy type of PTX type t (truncating)."""
    bits = TYPES[t][0]
    return (v & _mask(bits)).astype(UINT[bits]).view(TYPES[t][1])


# ----------------------------------------------------------------------------------------------
# division and remainder: truncating; x / 0 and x % 0 give all ones (captured)

_DIV_NOTE = ("division by zero: quotient and remainder all ones, signed or unsigned, every width (H100 "
             "capture); MIN / -1 wraps to MIN, MIN % -1 is 0")


def _divmod(a, b, t):
    bits = TYPES[t][0]
    signed = t[0] == "s"
    if signed:
        sa, sb = a < 0, b < 0
        ma = np.where(sa, (~_u64(a) + np.uint64(1)) & _mask(bits), _u64(a))
        mb = np.where(sb, (~_u64(b) + np.uint64(1)) & _mask(bits), _u64(b))
    else:
        sa = sb = np.zeros(a.shape, bool)
        ma, mb = _u64(a), _u64(b)
    zero = mb == 0
    safe = np.where(zero, np.uint64(1), mb)
    q, r = ma // safe, ma % safe
    q = np.where(sa != sb, (~q + np.uint64(1)), q)
    r = np.where(sa, (~r + np.uint64(1)), r)
    q = np.where(zero, _mask(bits), q)
    r = np.where(zero, _mask(bits), r)
    return _out(q, t), _out(r, t)


_IT = r"(?P<t>[us](?:16|32|64))"


@row(r"div\." + _IT, "{t}", ["{t}", "{t}"], note=_DIV_NOTE)
def _div(m, a, b):
    return _divmod(a, b, m["t"])[0]


@row(r"rem\." + _IT, "{t}", ["{t}", "{t}"], note=_DIV_NOTE)
def _rem(m, a, b):
    return _divmod(a, b, m["t"])[1]


# ----------------------------------------------------------------------------------------------
# carry chains: add.cc / addc / sub.cc / subc / mad.cc / madc.  CC.CF is per lane; it starts at 0.

def _carry(ctx):
    mach = ctx.machine
    cf = getattr(mach, "carry_flag", None)
    if cf is None or cf.shape != (mach.warps, 32):
        cf = np.zeros((mach.warps, 32), bool)
        mach.carry_flag = cf
    return cf


def read_carry(ctx):
    """CC.CF of the executing warps, (g, 32) bool."""
    cf = _carry(ctx)
    return cf if ctx.rows is None else cf[ctx.rows]


def write_carry(ctx, value):
    """Set CC.CF in the executing lanes only."""
    cf = _carry(ctx)
    sel = slice(None) if ctx.rows is None else ctx.rows
    cur = cf[sel]
    new = np.broadcast_to(np.asarray(value, bool), cur.shape)
    cf[sel] = new if ctx.mask is None else np.where(ctx.mask, new, cur)


_CT = r"(?P<t>[us](?:32|64))"


def _add_carry(a, b, cin, bits):
    """(sum bits, carry out) of unsigned a + b + cin over ``bits`` bits."""
    ua, ub = _u64(a), _u64(b)
    if bits == 32:
        s = ua + ub + cin.astype(np.uint64)
        return s & _mask(32), (s >> np.uint64(32)) != 0
    s1 = ua + ub
    c1 = s1 < ua
    s2 = s1 + cin.astype(np.uint64)
    c2 = s2 < s1
    return s2, c1 | c2


# (plain add/sub/mad.lo/mad.hi also match; the basic rows registered earlier take those)
_CARRY_PAT = r"(?P<op>add|sub)(?P<cin>c)?(?P<cc>\.cc)?\." + _CT
_MADC_PAT = r"mad(?P<cin>c)?\.(?P<half>lo|hi)(?P<cc>\.cc)?\." + _CT


@instr(_CARRY_PAT)
def _add_sub_carry(ctx, m):
    """add.cc / addc(.cc) / sub.cc / subc(.cc) as the H100 runs them: one adder and one flag.
    Subtraction is a + ~b + carry-in (1 for sub.cc, CC.CF for subc) and CC.CF is the adder's
    carry out, i.e. NOT the borrow: after an add.cc that did not carry, subc gives a - b - 1
    (captured, tests/ptx/data/cap_alu2.npz: carry_addsub_*, carry_subadd_*)."""
    t = m["t"]
    bits = TYPES[t][0]
    d, a, b = ctx.need(3)
    va = ctx.read(a, t, what=f"source 1 of {ctx.opcode}")
    vb = ctx.read(b, t, what=f"source 2 of {ctx.opcode}")
    if m["cin"] is not None:
        cin = read_carry(ctx)
    else:
        cin = np.full(ctx.shape, m["op"] == "sub", bool)
    if m["op"] == "add":
        s, cout = _add_carry(va, vb, cin, bits)
    else:
        nb = ((~_u64(vb)) & _mask(bits)).astype(UINT[bits])
        s, cout = _add_carry(va, nb, cin, bits)
    ctx.write(d, _out(s, t), t, what=f"destination of {ctx.opcode}")
    if m["cc"]:
        write_carry(ctx, cout)


@instr(_MADC_PAT)
def _mad_carry(ctx, m):
    """mad.lo.cc / mad.hi.cc / madc.lo / madc.hi (.cc): the lo or hi half of a*b, plus c and CC.CF."""
    t = m["t"]
    bits = TYPES[t][0]
    d, a, b, c = ctx.need(4)
    va, vb, vc = (ctx.read(x, t, what=f"source {i + 1} of {ctx.opcode}") for i, x in enumerate((a, b, c)))
    half = m["half"]
    with np.errstate(all="ignore"):
        p = va * vb if half == "lo" else _mulhi(va, vb, t)
    cin = read_carry(ctx) if m["cin"] is not None else np.zeros(ctx.shape, bool)
    s, cout = _add_carry(p, vc, cin, bits)
    ctx.write(d, _out(s, t), t, what=f"destination of {ctx.opcode}")
    if m["cc"]:
        write_carry(ctx, cout)


note_status(_CARRY_PAT, EXACT, "CC.CF per lane, the adder's carry out (subtraction: a + ~b + CF, so CF "
            "is NOT the borrow); 0 before the first .cc (not captured)")
note_status(_MADC_PAT, EXACT, "CC.CF per lane, the adder's carry out; 0 before the first .cc (not captured)")


# ----------------------------------------------------------------------------------------------
# min/max with .relu, sad, funnel shifts

@row(r"(?P<op>min|max)\.relu\.(?P<t>s32)", "s32", ["s32", "s32"])
def _minmax_relu(m, a, b):
    r = np.minimum(a, b) if m["op"] == "min" else np.maximum(a, b)
    return np.maximum(r, 0).astype(np.int32)


@row(r"sad\." + _IT, "{t}", ["{t}", "{t}", "{t}"])
def _sad(m, a, b, c):
    t = m["t"]
    sa, sb = _signed_u64(a), _signed_u64(b)
    if t[0] == "s":
        ge = a >= b
    else:
        ge = _u64(a) >= _u64(b)
    diff = np.where(ge, sa - sb, sb - sa)
    return _out(diff + _u64(c), t)


@row(r"shf\.(?P<dir>l|r)\.(?P<mode>wrap|clamp)\.b32", "b32", ["b32", "b32", "u32"])
def _shf(m, a, b, c):
    n = np.minimum(c, 32) if m["mode"] == "clamp" else c & np.uint32(31)
    n = n.astype(np.uint64)
    pair = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
    if m["dir"] == "l":
        r = (pair << n) >> np.uint64(32)
        r = np.where(n == 32, a.astype(np.uint64), r)
    else:
        r = np.where(n == 32, b.astype(np.uint64), pair >> np.minimum(n, np.uint64(31)))
    return (r & _mask(32)).astype(np.uint32)


@row(r"(?P<op>min|max)(?P<relu>\.relu)?\.(?P<t>[us]16x2)", "b32", ["b32", "b32"])
def _minmax_x2(m, a, b):
    """Per 16-bit half; .relu (s16x2 only in PTX) clamps each half at 0."""
    signed = m["t"][0] == "s"
    out = np.zeros(a.shape, np.uint32)
    for sh in (0, 16):
        ha = ((a >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16)
        hb = ((b >> np.uint32(sh)) & np.uint32(0xFFFF)).astype(np.uint16)
        if signed:
            ha, hb = ha.view(np.int16), hb.view(np.int16)
        r = np.minimum(ha, hb) if m["op"] == "min" else np.maximum(ha, hb)
        if m["relu"]:
            r = np.maximum(r, 0).astype(r.dtype)
        out |= r.view(np.uint16).astype(np.uint32) << np.uint32(sh)
    return out


# ----------------------------------------------------------------------------------------------
# prmt modes (byte index of d -> byte index of {b, a}), indexed [mode][c & 3][byte]

_PRMT_MODES = {
    "f4e": [[(i + s) for i in range(4)] for s in range(4)],
    "b4e": [[(s - i) % 8 for i in range(4)] for s in range(4)],
    "rc8": [[s] * 4 for s in range(4)],
    "ecl": [[max(i, s) for i in range(4)] for s in range(4)],
    "ecr": [[min(i, s) for i in range(4)] for s in range(4)],
    "rc16": [[2 * (s & 1) + (i & 1) for i in range(4)] for s in range(4)],
}


@row(r"prmt\.b32\.(?P<mode>f4e|b4e|rc8|ecl|ecr|rc16)", "b32", ["b32", "b32", "b32"])
def _prmt_mode(m, a, b, c):
    src = a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))
    sel = np.asarray(_PRMT_MODES[m["mode"]], dtype=np.uint64)[(c & np.uint32(3)).astype(np.int64)]
    out = np.zeros(a.shape, np.uint64)
    for i in range(4):
        out |= ((src >> (sel[..., i] * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return out.astype(np.uint32)


# ----------------------------------------------------------------------------------------------
# lop3, bfind, dp4a / dp2a

@row(r"lop3\.b32", "b32", ["b32", "b32", "b32", "b32"])
def _lop3(m, a, b, c, lut):
    out = np.zeros(a.shape, np.uint32)
    for i in range(8):
        term = (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
        out |= np.where((lut >> np.uint32(i)) & np.uint32(1), term, np.uint32(0))
    return out


@row(r"bfind(?P<amt>\.shiftamt)?\.(?P<t>[us](?:32|64))", "u32", ["{t}"])
def _bfind(m, a):
    t = m["t"]
    bits = TYPES[t][0]
    x = _u64(a)
    if t[0] == "s":
        x = np.where(a < 0, ~x & _mask(bits), x)      # negative: the most significant 0
    pos = np.full(a.shape, -1, np.int64)
    for i in range(bits):
        pos = np.where((x >> np.uint64(i)) & np.uint64(1), i, pos)
    if m["amt"]:
        pos = np.where(pos < 0, -1, bits - 1 - pos)
    return pos.astype(np.int64).astype(np.uint32)


def _bytes(x, signed):
    x = x.view(np.uint32).astype(np.int64)
    out = [(x >> (8 * i)) & 0xFF for i in range(4)]
    return [np.where(v >= 128, v - 256, v) if signed else v for v in out]


def _halves(x, signed):
    x = x.view(np.uint32).astype(np.int64)
    out = [(x >> (16 * i)) & 0xFFFF for i in range(2)]
    return [np.where(v >= 32768, v - 65536, v) if signed else v for v in out]


_DPT = r"(?P<at>[us]32)\.(?P<bt>[us]32)"


def _dp_dst(m):
    return "s32" if "s" in (m["at"][0], m["bt"][0]) else "u32"


def _dot_product(ctx, m, products):
    """dp4a / dp2a: d = c + products(a, b) (the sum of the byte / half products, int64), wrapped to 32 bits."""
    d, a, b, c = ctx.need(4)
    dt = _dp_dst(m)
    va, vb = ctx.read(a, m["at"]), ctx.read(b, m["bt"])
    vc = ctx.read(c, dt).view(np.uint32).astype(np.int64)
    acc = vc + products(va, vb)
    ctx.write(d, (acc & 0xFFFFFFFF).astype(np.uint32).view(TYPES[dt][1]), dt)


@instr(r"dp4a\." + _DPT)
def _dp4a(ctx, m):
    _dot_product(ctx, m, lambda va, vb: sum(x * y for x, y in zip(_bytes(va, m["at"][0] == "s"),
                                                                   _bytes(vb, m["bt"][0] == "s"))))


@instr(r"dp2a\.(?P<half>lo|hi)\." + _DPT)
def _dp2a(ctx, m):
    def products(va, vb):
        hb = _bytes(vb, m["bt"][0] == "s")
        j = 0 if m["half"] == "lo" else 2
        ha = _halves(va, m["at"][0] == "s")
        return ha[0] * hb[j] + ha[1] * hb[j + 1]
    _dot_product(ctx, m, products)


note_status(r"dp4a\." + _DPT, EXACT)
note_status(r"dp2a\.(?:lo|hi)\." + _DPT, EXACT)
