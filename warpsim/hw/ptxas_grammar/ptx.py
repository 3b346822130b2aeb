"""Which spellings of the PTX-layer families (wmma, ldmatrix/stmatrix/movmatrix, cvt) ptxas accepts.

The companion of :mod:`warpsim.hw.ptxas_grammar.mma` (mma / wgmma) for the statements the PTX
instruction table runs: every canonical form warpsim's table implements (each wmma shape,
fragment, layout, state space and type; every ``ldmatrix``/``stmatrix`` count, ``.trans`` and
space; ``movmatrix``; ``cvt`` over every type pair the handler converts with every subset of
rounding / ``.ftz`` / ``.sat`` / ``.satfinite`` / ``.relu``), then seeded spellings of each
form ptxas accepts (permutations keeping the types' and layouts' order, single moves,
duplicated, dropped and conflicting qualifiers).  Verdicts come from ptxas at -O0, a thousand
statements per call, errors attributed by line; a sample of accepted non-canonical spellings
is assembled next to its canonical form and must give the same cubin.  The verdicts go to
``tests/golden/ptxas/ptx_spellings.json.xz``.

    python -m warpsim.hw.ptxas_grammar ptx [--ptxas ptxas] [--out tests/golden/ptxas/ptx_spellings.json.xz]
"""

from __future__ import annotations

import itertools
import os

from . import probe
from .probe import ptxas_version

TARGET = "sm_90a"
PTX_VERSION = "8.8"
SEED = 2424
DEFAULT_OUT = os.path.join(probe.GOLDEN, "ptx_spellings.json.xz")
REGISTERS = (".reg .b32 %r<300>;", ".reg .b16 %h<300>;", ".reg .f32 %f<300>;", ".reg .f64 %fd<300>;",
             ".reg .b64 %rd<300>;")
HEADER = probe.kernel_header(*REGISTERS, ".reg .pred %p<2>;")

# ---- the canonical forms warpsim's PTX table implements (what to ask about) -------------------

WMMA_SHAPES = ("m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8")
WMMA_SPACES = ("", "global", "shared", "shared::cta")
WMMA_LOAD_TYPES = ("f16", "bf16", "tf32", "s8", "u8", "f32", "s32")
WMMA_STORE_TYPES = ("f16", "f32", "s32")
WMMA_MMA_TYPES = ([(d, c) for d in ("f16", "f32") for c in ("f16", "f32")] +
                  [(d, a, b, c) for d in ("f32", "s32") for a in ("bf16", "tf32", "s8", "u8")
                   for b in ("bf16", "tf32", "s8", "u8") for c in ("f32", "s32")])
#: 32-bit registers per wmma fragment (PTX ISA, "Matrix Fragments for WMMA"); forms not listed have none
_WMMA_REGS = {("a", "f16"): 8, ("b", "f16"): 8, ("c", "f16"): 4, ("c", "f32"): 8, ("c", "s32"): 8,
              ("a", "tf32"): 4, ("b", "tf32"): 4}
_WMMA_SHAPED = {"bf16": {"m16n16k16": (4, 4), "m8n32k16": (2, 8), "m32n8k16": (8, 2)},
                "s8": {"m16n16k16": (2, 2), "m8n32k16": (1, 4), "m32n8k16": (4, 1)}}
_WMMA_SHAPED["u8"] = _WMMA_SHAPED["s8"]
MATRIX_COUNTS = ("x1", "x2", "x4")
MATRIX_SPACES = ("", "shared", "shared::cta")
CVT_FLOATS = ("f64", "f32", "tf32", "f16", "bf16")
CVT_INTS = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")
CVT_PACKED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2")
CVT_ROUNDINGS = ("", "rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")
CVT_SATURATIONS = ("", "sat", "satfinite")


def wmma_registers(frag, shape, typ):
    """32-bit registers of a wmma fragment, or None where the PTX ISA has no such fragment."""
    if typ in _WMMA_SHAPED and frag in "ab":
        return _WMMA_SHAPED[typ].get(shape, (None, None))["ab".index(frag)]
    if shape == "m16n16k8" and typ not in ("tf32", "f32") and not (frag in "cd" and typ == "f16"):
        return None                           # (ptxas also takes an f16 C/D on m16n16k8)
    return _WMMA_REGS.get(("c" if frag == "d" else frag, typ))


def canonical_forms():
    """(family, canonical spelling, operand text) of every form to ask ptxas about."""
    out = []
    for frag, lay, shape, sp, t in itertools.product("abc", ("row", "col"), WMMA_SHAPES, WMMA_SPACES, WMMA_LOAD_TYPES):
        op = f"wmma.load.{frag}.sync.aligned.{lay}.{shape}{'.' + sp if sp else ''}.{t}"
        out.append(("wmma.load", op, f"{_group(wmma_registers(frag, shape, t), t)}, [%rd1], %r299"))
    for lay, shape, sp, t in itertools.product(("row", "col"), WMMA_SHAPES, WMMA_SPACES, WMMA_STORE_TYPES):
        op = f"wmma.store.d.sync.aligned.{lay}.{shape}{'.' + sp if sp else ''}.{t}"
        out.append(("wmma.store", op, f"[%rd1], {_group(wmma_registers('d', shape, t), t)}, %r299"))
    for al, bl, shape, ts, sat in itertools.product(("row", "col"), ("row", "col"), WMMA_SHAPES, WMMA_MMA_TYPES,
                                                    ("", ".satfinite")):
        op = f"wmma.mma.sync.aligned.{al}.{bl}.{shape}.{'.'.join(ts)}{sat}"
        d, c = ts[0], ts[-1]
        a = b = "f16" if len(ts) == 2 else None
        if len(ts) == 4:
            a, b = ts[1], ts[2]
        ops = [_group(wmma_registers(f, shape, t), t, base) for f, t, base in
               (("d", d, 0), ("a", a, 10), ("b", b, 20), ("c", c, 30))]
        out.append(("wmma.mma", op, ", ".join(ops)))
    for name in ("ldmatrix", "stmatrix"):
        for n, trans, sp in itertools.product(MATRIX_COUNTS, ("", ".trans"), MATRIX_SPACES):
            op = f"{name}.sync.aligned.m8n8.{n}{trans}{'.' + sp if sp else ''}.b16"
            regs = "{" + ", ".join(f"%r{i}" for i in range(int(n[1]))) + "}"
            out.append((name, op, f"{regs}, [%rd1]" if name == "ldmatrix" else f"[%rd1], {regs}"))
    out.append(("movmatrix", "movmatrix.sync.aligned.m8n8.trans.b16", "%r0, %r1"))
    types = CVT_FLOATS + CVT_INTS + CVT_PACKED
    for dt, st in itertools.product(types, types):
        if st in CVT_PACKED and dt not in CVT_PACKED:
            continue                          # the handler converts packed sources to packed destinations only
        for rnd, ftz, sat, relu in itertools.product(CVT_ROUNDINGS, ("", "ftz"), CVT_SATURATIONS, ("", "relu")):
            mods = [m for m in (rnd, ftz, sat if sat == "sat" else "", relu, sat if sat == "satfinite" else "") if m]
            op = ".".join(["cvt"] + mods + [dt, st])
            two = dt in CVT_PACKED and st == "f32"
            opnds = f"{_reg(dt, 0)}, {_reg(st, 1)}" + (f", {_reg(st, 2)}" if two else "")
            out.append(("cvt", op, opnds))
    return out


def _reg(t, i):
    if t in ("f16", "bf16", "e4m3x2", "e5m2x2", "s16", "u16"):
        return f"%h{i}"
    if t == "f32":
        return f"%f{i}"
    if t == "f64":
        return f"%fd{i}"
    if t in ("s64", "u64"):
        return f"%rd{i + 10}"
    return f"%r{i}"


def _group(n, t, base=0):
    n = n or 8
    return "{" + ", ".join((f"%f{base + i}" if t == "f32" else f"%r{base + i}") for i in range(n)) + "}"


# ---- candidate spellings -------------------------------------------------------------------------

HEADS = ("wmma.load.a", "wmma.load.b", "wmma.load.c", "wmma.store.d", "wmma.mma", "ldmatrix", "stmatrix",
         "movmatrix", "cvt")
_TYPES = set(CVT_FLOATS + CVT_INTS + CVT_PACKED + ("b16",))
_ROUND = set(CVT_ROUNDINGS) - {""}


def head_and_qualifiers(op):
    head = next(h for h in sorted(HEADS, key=len, reverse=True) if op == h or op.startswith(h + "."))
    return head, op[len(head) + 1:].split(".")


def _ordered(tok):
    """Qualifiers whose order among themselves is meaning (types: D before A/B/C, source last; layouts A then B)."""
    if tok in _TYPES:
        return "type"
    if tok in ("row", "col"):
        return "layout"
    return None


def _optional(family, tok):
    """Qualifiers whose removal names another form (not a broken spelling of this one)."""
    if family == "cvt":
        return tok not in _TYPES
    return tok in ("trans", "satfinite", "global", "shared", "shared::cta") and family != "movmatrix"


def candidates(family, op, rng, per_form):
    """``op`` and spellings of it, each meaning ``op`` or nothing at all."""
    head, q = head_and_qualifiers(op)

    def dropped(t, rng):                                # one required qualifier missing
        drop = [i for i, x in enumerate(t) if not _optional(family, x)]
        if not drop:
            return None
        t.pop(rng.choice(drop))
        return t

    def moved_and_more(t, rng):                         # moved, then a .sync / .aligned more
        probe.moved(t, rng)
        if family != "cvt":
            return probe.inserted(t, rng, ("sync", "aligned"))
        rs = [x for x in t if x in _ROUND]              # a second, different rounding mode
        return probe.inserted(t, rng, sorted(_ROUND - set(rs))) if rs else None

    def foreign(t, rng):                                # a qualifier of another family's vocabulary
        extra = ("sync", "aligned", "row", "trans", "x2") if family == "cvt" else ("ftz", "rn", "b32", "m16n8k16")
        return probe.inserted(t, rng, extra)            # never part of a form of this family

    mutations = (probe.shuffled, probe.moved, probe.repeated, dropped, probe.swapped, moved_and_more, foreign)
    return probe.spellings(head, q, rng, per_form, 6 * per_form, mutations, reorder=(0, 1, 3, 4, 5),
                           classify=_ordered)


def build(ptxas="ptxas", per_form=12, cubin_sample=600):
    """The verdict table: per family, the canonical forms ptxas accepts (with their spellings' verdicts)
    and the canonical forms it refuses (with the first error)."""
    t = probe.family_table(ptxas, canonical_forms(), lambda fam, op, rng: candidates(fam, op, rng, per_form), HEADER,
                           TARGET, SEED, per_form, cubin_sample)
    return {"ptxas": ptxas_version(ptxas), "ptx_version": PTX_VERSION, "target": TARGET, "seed": SEED,
            "per_form": per_form, **t}


def load(path=DEFAULT_OUT):
    return probe.load(path)
