"""``wmma.load`` / ``wmma.mma`` / ``wmma.store`` (nvcuda::wmma) for the f16, bf16, tf32 and s8/u8 forms of sm_90.

Fragment layouts come from captures on an H100 (:mod:`warpsim.ptx.wmma_layouts`, data).  The
arithmetic of ``wmma.mma`` is the catalog's ``mma`` of the same element types, one 16x8 tile
at a time (m16n8k16, or m16n8k8 for tf32), computed by :func:`warpsim.mma`:

* f16 with ``.f32`` D and ``.f16`` C: C widened to f32 (exact), then the f32 mma;
* f16 with ``.f16`` D and ``.f32`` C: the f32 mma, then D rounded to f16 (nearest even);
* m8n32k16: A's 8 rows padded with zero rows to 16 (rows of an mma are independent).

Each of these choices reproduced every captured word (tests/ptx/test_ptx_captures.py).  f16 A and B
fragments hold every element twice (registers 4-7 repeat 0-3 for m16n16k16); ``wmma.mma`` reads
the first copy -- registers written by ``wmma.load`` always agree.
"""

from __future__ import annotations

import base64
import zlib
from functools import lru_cache

import numpy as np

from ..isa.bits import elements_to_words, words_to_elements
from .instructions import instr
from .wmma_layouts import TABLES

SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8)}
AB_TYPES = {"m16n16k16": ("f16", "bf16", "s8", "u8"), "m32n8k16": ("f16", "bf16", "s8", "u8"),
            "m8n32k16": ("f16", "bf16", "s8", "u8"), "m16n16k8": ("tf32",)}
BITS = {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "tf32": 32, "f32": 32, "s32": 32}


@lru_cache(maxsize=None)
def fragment(frag: str, shape: str, typ: str) -> np.ndarray:
    """(32, elements, 2) int table: the (row, col) each lane's element holds, for fragment
    ``a``, ``b``, ``c`` or ``d`` of a wmma shape and element type (captured on an H100)."""
    if frag == "d":
        frag = "c"
    for (f, s, t, n), blob in TABLES.items():
        if (f, s, t) == (frag, shape, typ):
            tab = np.frombuffer(zlib.decompress(base64.b64decode(blob)), dtype=np.int8).reshape(32, n, 2)
            tab = tab.astype(np.int64)
            tab.setflags(write=False)
            return tab
    forms = sorted({(f, s, t) for f, s, t, _ in TABLES})
    raise ValueError(f"no wmma fragment {frag}/{shape}/{typ}; captured forms: {forms}")


def registers(frag, shape, typ):
    return fragment(frag, shape, typ).shape[1] * BITS[typ] // 32


def _dims(frag, shape):
    m, n, k = SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[frag]


_SHAPE = r"(?P<shape>m16n16k16|m32n8k16|m8n32k16|m16n16k8)"
_SS = r"(?:\.(?P<space>global|shared(?:::cta)?))?"


def _ldm(ctx, op, elems_bytes):
    ld = ctx.read(op, "u32", what="the stride (ldm)")
    if not (ld == ld[:, :1]).all():
        ctx.fail("the wmma stride (ldm) must be the same in every lane of a warp", token=op)
    return ld[:, 0].astype(np.int64)


def _base(ctx, op):
    addr = ctx.address(op)
    if not (addr == addr[:, :1]).all():
        ctx.fail("wmma takes one matrix address per warp: every lane must pass the same address", token=op)
    return addr[:, 0]


def _element_addresses(base, ldm, tab, layout, esize):
    r, c = tab[..., 0], tab[..., 1]
    lin = (r * ldm[:, None, None] + c) if layout == "row" else (c * ldm[:, None, None] + r)
    return base[:, None, None] + (lin * esize).astype(np.uint64)


@instr(r"wmma\.load\.(?P<frag>a|b|c)\.sync\.aligned\.(?P<layout>row|col)\." + _SHAPE + _SS +
       r"\.(?P<t>f16|bf16|tf32|s8|u8|f32|s32)")
def _wmma_load(ctx, m):
    d, src, *rest = ctx.operands if len(ctx.operands) in (2, 3) else ctx.need(3)
    frag, shape, typ = m["frag"], m["shape"], m["t"]
    ctx.require_converged()
    tab = _table(ctx, frag, shape, typ)
    regs = d if isinstance(d, list) else [d]
    nreg = registers(frag, shape, typ)
    if len(regs) != nreg:
        ctx.fail(f"{ctx.opcode} fills {nreg} 32-bit registers, the destination lists {len(regs)}")
    esize = BITS[typ] // 8
    ldm = _ldm(ctx, rest[0], esize) if rest else np.full(ctx.shape[0], _dims(frag, shape)[1 if m["layout"] == "row" else 0])
    base = _base(ctx, src)
    addr = _element_addresses(base, ldm, tab, m["layout"], esize)           # (g, 32, n)
    space = (m["space"] or "generic").replace("::cta", "")
    if (base % np.uint64(32)).any():
        ctx.fail("the wmma matrix address must be 256-bit (32-byte) aligned", token=src)
    g, _, n = addr.shape
    data = ctx.memory.load(space, addr.reshape(g, 32 * n), esize, esize, _Whole(ctx))
    el = np.ascontiguousarray(data).view({1: np.uint8, 2: np.uint16, 4: np.uint32}[esize]).reshape(g, 32, n)
    words = elements_to_words(el, BITS[typ])
    for i, r in enumerate(regs):
        ctx.write(r, words[..., i], "b32")


@instr(r"wmma\.store\.d\.sync\.aligned\.(?P<layout>row|col)\." + _SHAPE + _SS + r"\.(?P<t>f16|f32|s32)")
def _wmma_store(ctx, m):
    dst, s, *rest = ctx.operands if len(ctx.operands) in (2, 3) else ctx.need(3)
    shape, typ = m["shape"], m["t"]
    ctx.require_converged()
    tab = _table(ctx, "c", shape, typ)
    regs = s if isinstance(s, list) else [s]
    nreg = registers("c", shape, typ)
    if len(regs) != nreg:
        ctx.fail(f"{ctx.opcode} stores {nreg} 32-bit registers, the source lists {len(regs)}")
    esize = BITS[typ] // 8
    ldm = _ldm(ctx, rest[0], esize) if rest else np.full(ctx.shape[0], _dims("c", shape)[1 if m["layout"] == "row" else 0])
    base = _base(ctx, dst)
    addr = _element_addresses(base, ldm, tab, m["layout"], esize)
    words = np.stack([ctx.read(r, "b32") for r in regs], axis=-1)
    el = words_to_elements(words, BITS[typ]).astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[esize])
    g, _, n = addr.shape
    data = np.ascontiguousarray(el).view(np.uint8).reshape(g, 32 * n, esize)
    space = (m["space"] or "generic").replace("::cta", "")
    ctx.memory.store(space, addr.reshape(g, 32 * n), data, esize, _Whole(ctx))


class _Whole:
    """A context view for element-wise (g, 32*n) memory accesses of a whole warp."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.rows = ctx.rows
        self.opcode = ctx.opcode

    def lane_mask(self, lanes=None):
        return None

    def fail(self, message, token=None):
        self._ctx.fail(message, token)


def _table(ctx, frag, shape, typ):
    f = "c" if frag == "d" else frag
    ok = typ in AB_TYPES[shape] if f in "ab" else typ in (("f32",) if shape == "m16n16k8" else ("f16", "f32", "s32"))
    if not ok:
        allowed = AB_TYPES[shape] if f in "ab" else (("f32",) if shape == "m16n16k8" else ("f16", "f32", "s32"))
        ctx.fail(f"wmma {shape} has no .{typ} {f.upper()} fragment (allowed: {', '.join('.' + t for t in allowed)})")
    return fragment(f, shape, typ)


# ---- wmma.mma ----------------------------------------------------------------------------------

_MMA = (r"wmma\.mma\.sync\.aligned\.(?P<al>row|col)\.(?P<bl>row|col)\." + _SHAPE +
        r"(?:\.(?P<dt>f16|f32)\.(?P<ct>f16|f32)|\.(?P<dt2>f32|s32)\.(?P<at>bf16|tf32|s8|u8)\.(?P<bt>bf16|tf32|s8|u8)"
        r"\.(?P<ct2>f32|s32))(?P<sat>\.satfinite)?")


def _unpack(words, tab, rows, cols):
    """(g, 32, nwords) words -> (g, rows, cols) raw elements (the first copy of a duplicated one)."""
    bits = 32 * words.shape[-1] // tab.shape[1]
    el = words_to_elements(words, bits)
    out = np.zeros((words.shape[0], rows, cols), dtype=np.uint64)
    # write in reverse so that the first copy of a duplicated element wins
    out[:, tab[::-1, ::-1, 0], tab[::-1, ::-1, 1]] = el[:, ::-1, ::-1]
    return out


def _pack(mat, tab, bits):
    el = mat[:, tab[..., 0], tab[..., 1]]
    return elements_to_words(el, bits)


@lru_cache(maxsize=None)
def f16_c_as_f32() -> np.ndarray:
    """f16 C word -> the f32 word an f32-accumulating wmma.mma starts from (every f16 word; uint64): the
    interpreter's conversion and the compiled engine's (rt_wmma) table."""
    from .convert import decode

    return decode(np.arange(1 << 16, dtype=np.uint64), "f16").astype(np.float32).view(np.uint32).astype(np.uint64)


@instr(_MMA)
def _wmma_mma(ctx, m):
    from ..engine.warp_mma import execute as mma
    from ..isa.layouts import layout

    shape = m["shape"]
    if m["dt"]:
        at = bt = "f16"
        dt, ct = m["dt"], m["ct"]
    else:
        at, bt, dt, ct = m["at"], m["bt"], m["dt2"], m["ct2"]
        if at != bt:
            ctx.fail(f"wmma.mma needs the same A and B types, got .{at} and .{bt}")
    if at not in AB_TYPES[shape]:
        ctx.fail(f"wmma.mma {shape} takes {', '.join('.' + t for t in AB_TYPES[shape])} A/B, not .{at}")
    intk = at in ("s8", "u8")
    if intk != (dt == "s32") or intk != (ct == "s32"):
        ctx.fail(f"wmma.mma with .{at} inputs needs {'.s32' if intk else 'float'} C and D")
    if m["sat"] and not intk:
        ctx.fail(".satfinite on a floating-point wmma.mma is not modelled (sm_90 deprecates it)")
    ctx.require_converged()
    d, a, b, c = ctx.need(4)
    M, N, K = SHAPES[shape]
    ta, tb = fragment("a", shape, at), fragment("b", shape, bt)
    tc, td = fragment("c", shape, ct), fragment("c", shape, dt)
    words = {}
    for role, op, typ in (("a", a, at), ("b", b, bt), ("c", c, ct)):
        regs = op if isinstance(op, list) else [op]
        n = registers(role, shape, typ)
        if len(regs) != n:
            ctx.fail(f"operand {role.upper()} of {ctx.opcode} needs {n} register(s), got {len(regs)}")
        words[role] = np.stack([ctx.read(r, "b32", what=f"operand {role.upper()}") for r in regs], axis=-1)
    dregs = d if isinstance(d, list) else [d]
    if len(dregs) != registers("c", shape, dt):
        ctx.fail(f"operand D of {ctx.opcode} needs {registers('c', shape, dt)} register(s), got {len(dregs)}")
    A = _unpack(words["a"], ta, M, K)
    B = _unpack(words["b"], tb, K, N)
    C = _unpack(words["c"], tc, M, N)
    g = A.shape[0]
    # tile the product into the catalog's mma: 16 x 8 tiles, k 16 (k 8 for tf32)
    if at == "f16":
        acc = "f32" if "f32" in (dt, ct) else "f16"
        opcode = f"mma.sync.aligned.m16n8k16.row.col.{acc}.f16.f16.{acc}"
        if acc == "f32" and ct == "f16":
            C = f16_c_as_f32()[C]
    elif at == "bf16":
        acc, opcode = "f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    elif at == "tf32":   # captured: two chained k4 products, not one k8 product
        acc, opcode = "f32", "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32"
    else:
        acc = "s32"
        opcode = f"mma.sync.aligned.m16n8k16.row.col{'.satfinite' if m['sat'] else ''}.s32.{at}.{bt}.s32"
    Mp = max(M, 16)
    if Mp != M:
        A = np.concatenate([A, np.zeros((g, Mp - M, K), np.uint64)], axis=1)
        C = np.concatenate([C, np.zeros((g, Mp - M, N), np.uint64)], axis=1)
    mt, nt = Mp // 16, N // 8
    kk = 4 if at == "tf32" else K
    la, lb, lc = layout(opcode, "a"), layout(opcode, "b"), layout(opcode, "c")
    abits = 32 if at == "tf32" else (8 if intk else 16)
    cbits = 16 if acc == "f16" else 32
    Ct = C.reshape(g, mt, 16, nt, 8).transpose(0, 1, 3, 2, 4)
    shp = (g * mt * nt, 32)
    dw = elements_to_words(Ct[..., lc[..., 1], lc[..., 2]], cbits).reshape(shp + (-1,))
    for k0 in range(0, K, kk):       # a chain over k in order, each step's D the next step's C
        At = A[:, :, k0:k0 + kk].reshape(g, mt, 16, kk)
        Bt = B[:, k0:k0 + kk].reshape(g, kk, nt, 8).transpose(0, 2, 1, 3)
        wa = elements_to_words(At[:, :, None][..., la[..., 1], la[..., 2]].repeat(nt, axis=2), abits)
        wb = elements_to_words(Bt[:, None][..., lb[..., 1], lb[..., 2]].repeat(mt, axis=1), abits)
        try:
            dw = mma(opcode, wa.reshape(shp + wa.shape[-1:]), wb.reshape(shp + wb.shape[-1:]), dw,
                     arch=ctx.machine.arch)
        except (ValueError, TypeError) as exc:
            ctx.fail(str(exc))
    de = words_to_elements(dw, cbits).reshape(g, mt, nt, 32, -1)
    D = np.zeros((g, mt, nt, 16, 8), dtype=np.uint64)
    gi = np.arange(g)[:, None, None, None, None]
    mi = np.arange(mt)[None, :, None, None, None]
    ni = np.arange(nt)[None, None, :, None, None]
    D[gi, mi, ni, lc[None, None, None, ..., 1], lc[None, None, None, ..., 2]] = de
    D = D.transpose(0, 1, 3, 2, 4).reshape(g, Mp, N)[:, :M]
    if acc == "f32" and dt == "f16":
        from .convert import decode, encode
        D = encode(decode(D.astype(np.uint32), "f32"), "f16", "rn").astype(np.uint64)
    out = _pack(D, td, BITS[dt])
    for i, r in enumerate(dregs):
        ctx.write(r, out[..., i], "b32")
