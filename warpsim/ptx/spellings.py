"""Spellings of the table's wmma / ldmatrix / stmatrix / movmatrix / cvt statements, as ptxas reads them.

ptxas reads the qualifiers after these instruction names as a bag: ``.sync``, ``.aligned``, the
shape, the state space, ``.trans``, rounding and saturation modifiers may stand anywhere; only
the types (destination first) and wmma.mma's two layouts (A, then B) keep their order among
themselves.  :func:`canonical` maps any spelling ptxas 13.0 accepts for sm_90a to the one
spelling the instruction table matches, and refuses, naming the qualifier, every spelling ptxas
refuses -- also forms whose qualifiers are each allowed but not together (``cvt.rn.f32.f16``,
``wmma.load.a...m16n16k8.f16``).  The tables below are the grammar as data; the verdicts they
agree with are in tests/golden/ptxas/ptx_spellings.json.xz (``warpsim.hw.ptxas_ptx_grammar``).
Other instructions pass through unchanged.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

# ---- vocabulary ------------------------------------------------------------------------------------

WMMA_SHAPES = ("m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8")
_K16 = WMMA_SHAPES[:3]
#: (fragment, element type) -> the wmma shapes that have it
WMMA_FRAGMENTS = {**{(f, t): _K16 for f in "ab" for t in ("f16", "bf16", "s8", "u8")},
                  ("a", "tf32"): ("m16n16k8",), ("b", "tf32"): ("m16n16k8",),
                  ("c", "f16"): _K16, ("c", "s32"): _K16, ("c", "f32"): WMMA_SHAPES}
#: wmma.mma type lists (D, C) / (D, A, B, C) -> (shapes, .satfinite allowed)
WMMA_MMA_TYPES = {**{(d, c): (_K16, False) for d in ("f16", "f32") for c in ("f16", "f32")},
                  ("f32", "bf16", "bf16", "f32"): (_K16, False),
                  ("f32", "tf32", "tf32", "f32"): (("m16n16k8",), False),
                  ("s32", "s8", "s8", "s32"): (_K16, True), ("s32", "u8", "u8", "s32"): (_K16, True)}

CVT_FLOATS = ("f64", "f32", "tf32", "f16", "bf16")
CVT_INTS = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")
CVT_PACKED = ("f16x2", "bf16x2", "e4m3x2", "e5m2x2")
CVT_ROUNDINGS = ("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")

# qualifier classes: the canonical order of a family's spelling is its classes in this order
_CLASSES = {
    "sync": ("sync",), "aligned": ("aligned",), "layout": ("row", "col"),
    "shape": WMMA_SHAPES + ("m8n8",), "count": ("x1", "x2", "x4"), "trans": ("trans",),
    "space": ("global", "shared", "shared::cta"), "rounding": CVT_ROUNDINGS, "ftz": ("ftz",), "sat": ("sat",),
    "relu": ("relu",), "type": CVT_FLOATS + CVT_INTS + CVT_PACKED + ("b16",),
    "satfinite": ("satfinite",),
}

_ANY = None   # no upper limit on repeats (ptxas takes '.sync.sync')


class Family:
    """One instruction family: its qualifier classes with (min, max) counts, and their canonical order."""

    def __init__(self, head, counts, order, vocab=None):
        self.head, self.counts, self.order = head, counts, order
        self.vocab = {c: (vocab or {}).get(c, _CLASSES[c]) for c in counts}


_WMMA_LS = {"sync": (1, _ANY), "aligned": (1, 1), "layout": (1, 1), "shape": (1, 1), "space": (0, 1),
            "type": (1, 1)}
_LS_ORDER = ("sync", "aligned", "layout", "shape", "space", "type")
_MATRIX = {"sync": (1, _ANY), "aligned": (1, 1), "shape": (1, 1), "count": (1, 1), "trans": (0, 1),
           "space": (0, 1), "type": (1, 1)}
_MATRIX_VOCAB = {"shape": ("m8n8",), "space": ("shared", "shared::cta"), "type": ("b16",)}
FAMILIES = {f.head: f for f in (
    *(Family(f"wmma.load.{x}", _WMMA_LS, _LS_ORDER,
             {"shape": WMMA_SHAPES, "type": ("f16", "bf16", "tf32", "s8", "u8", "f32", "s32")}) for x in "abc"),
    Family("wmma.store.d", _WMMA_LS, _LS_ORDER, {"shape": WMMA_SHAPES, "type": ("f16", "f32", "s32")}),
    Family("wmma.mma", {"sync": (1, _ANY), "aligned": (1, 1), "layout": (2, 2), "shape": (1, 1), "type": (2, 4),
                        "satfinite": (0, _ANY)},
           ("sync", "aligned", "layout", "shape", "type", "satfinite"),
           {"shape": WMMA_SHAPES, "type": ("f16", "f32", "bf16", "tf32", "s8", "u8", "s32")}),
    Family("ldmatrix", _MATRIX, ("sync", "aligned", "shape", "count", "trans", "space", "type"), _MATRIX_VOCAB),
    Family("stmatrix", _MATRIX, ("sync", "aligned", "shape", "count", "trans", "space", "type"), _MATRIX_VOCAB),
    Family("movmatrix", {"sync": (1, _ANY), "aligned": (1, 1), "shape": (1, 1), "trans": (1, 1), "type": (1, 1)},
           ("sync", "aligned", "shape", "trans", "type"), _MATRIX_VOCAB),
    Family("cvt", {"rounding": (0, 1), "ftz": (0, 1), "sat": (0, _ANY), "relu": (0, _ANY), "satfinite": (0, _ANY),
                   "type": (2, 2)},
           ("rounding", "ftz", "sat", "relu", "satfinite", "type"),
           {"type": CVT_FLOATS + CVT_INTS + CVT_PACKED}),
)}
_HEADS = sorted(FAMILIES, key=len, reverse=True)

# ---- cvt: which modifiers each (destination, source) pair takes ------------------------------------
# A pattern lists modifier sets: 'R' is one of rn/rz/rm/rp, 'I' one of rni/rzi/rmi/rpi, '[x]' is
# optional, '-' is no modifier.  ptxas 13.0, sm_90a (PTX ISA "cvt", with its own exceptions: no
# bf16 <-> 8-bit integer conversions; a rounding mode on f64 <- bf16 and f16 <-> bf16 is optional).

_CVT_RULES = (
    (("bf16",), ("bf16",), "- I"),
    (("f16", "f64"), ("bf16",), "- R"), (("bf16",), ("f16",), "- R"),
    (("f16",), ("f16",), "- sat I[.sat]"), (("f64",), ("f64",), "- sat I[.sat]"),
    (("f32",), ("bf16",), "[R][.ftz]"),
    (("f32",), ("f16",), "[.ftz][.sat]"), (("f64",), ("f32",), "[.ftz][.sat]"),
    (("f64",), ("f16",), "- sat"),
    (("f32",), ("f32",), "[I][.ftz][.sat]"),
    (("bf16",), ("f32",), "R[.ftz] {rn,rz}[.relu][.satfinite]"),
    (("f16",), ("f32",), "R[.ftz][.sat] {rn,rz}[.relu][.satfinite]"),
    (("bf16",), ("f64", "s16", "s32", "s64", "u16", "u32", "u64"), "R"),
    (("f16",), ("f64",) + CVT_INTS, "R[.sat]"), (("f64",), CVT_INTS, "R[.sat]"),
    (("f32",), ("f64",) + CVT_INTS, "R[.ftz][.sat]"),
    (CVT_INTS, ("f32",), "I[.ftz][.sat]"),
    (("s16", "s32", "s64", "u16", "u32", "u64"), ("bf16",), "I"),
    (CVT_INTS, ("f16", "f64"), "I[.sat]"),
    (("f16x2", "bf16x2"), ("f32",), "{rn,rz}[.relu][.satfinite]"),
    (("f16x2",), ("e4m3x2", "e5m2x2"), "rn[.relu]"),
    (("e4m3x2", "e5m2x2"), ("f16x2", "f32"), "rn[.relu].satfinite"),
    (("tf32",), ("f32",), "{rn,rz}[.relu] rna[.satfinite]"),
)


def _expand(pattern):
    """'R[.ftz] rn[.relu]' -> {'rn', 'rn.ftz', 'rz', ...} (modifier strings in canonical order)."""
    out = set()
    for alt in pattern.split():
        if alt == "-":
            out.add("")
            continue
        parts, i = [], 0
        while i < len(alt):               # tokens: R, I, {a,b}, [x], literal up to the next of those
            if alt[i] in "RI":
                parts.append(("rn", "rz", "rm", "rp") if alt[i] == "R" else ("rni", "rzi", "rmi", "rpi"))
                i += 1
            elif alt[i] == "{":
                j = alt.index("}", i)
                parts.append(tuple(alt[i + 1:j].split(",")))
                i = j + 1
            elif alt[i] == "[":
                j = alt.index("]", i)
                inner = alt[i + 1:j].lstrip(".")
                parts.append(("",) + tuple(_expand(inner)))
                i = j + 1
            else:
                j = i
                while j < len(alt) and alt[j] not in "RI{[":
                    j += 1
                parts.append((alt[i:j].strip("."),))
                i = j
        for combo in itertools.product(*parts):
            out.add(".".join(c for c in combo if c))
    return out


def _int_range(t):
    bits = int(t[1:])
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t[0] == "s" else (0, (1 << bits) - 1)


@lru_cache(maxsize=None)
def cvt_modifiers(dt: str, st: str) -> frozenset:
    """The modifier strings (canonical order, '' for none) ptxas takes on ``cvt.<mods>.dt.st``."""
    if dt in CVT_INTS and st in CVT_INTS:
        (dlo, dhi), (slo, shi) = _int_range(dt), _int_range(st)
        return frozenset({""} | (set() if dlo <= slo and shi <= dhi else {"sat"}))   # .sat where it can clamp
    out = set()
    for dts, sts, pattern in _CVT_RULES:
        if dt in dts and st in sts:
            out |= _expand(pattern)
    return frozenset(out)


# ---- the matcher -------------------------------------------------------------------------------------

def family_of(opcode: str):
    for h in _HEADS:
        if opcode == h or opcode.startswith(h + "."):
            return FAMILIES[h]
    return None


def _fail(spelling, why):
    raise ValueError(f"'{spelling}': {why}")


def _classify(fam, tok):
    for cls in fam.order:
        if tok in fam.vocab[cls]:
            return cls
    return None


@lru_cache(maxsize=4096)
def canonical(opcode: str) -> str:
    """The instruction table's spelling of ``opcode`` (unchanged outside the families above).

    ValueError naming the qualifier when ptxas would refuse the spelling."""
    fam = family_of(opcode)
    if fam is None:
        return opcode
    toks = opcode[len(fam.head) + 1:].split(".") if opcode != fam.head else []
    groups: dict[str, list[str]] = {c: [] for c in fam.order}
    for t in toks:
        cls = _classify(fam, t)
        if cls is None:
            known = sorted({x for c in fam.order for x in fam.vocab[c]})
            _fail(opcode, f"unknown qualifier '.{t}' for {fam.head} (it takes: "
                          f"{', '.join('.' + x for x in known)})")
        groups[cls].append(t)
    for cls, (lo, hi) in fam.counts.items():
        n = len(groups[cls])
        if n < lo or (hi is not None and n > hi):
            allowed = (f"exactly {lo}" if lo == hi else f"at least {lo}" if hi is None else
                       f"at most {hi}" if lo == 0 else f"{lo} to {hi}")
            what = "/".join("." + x for x in fam.vocab[cls][:6]) + ("/..." if len(fam.vocab[cls]) > 6 else "")
            _fail(opcode, f"{fam.head} takes {allowed} {cls} qualifier(s) ({what}), got {n}"
                          + (f": {', '.join('.' + x for x in groups[cls])}" if n else ""))
    canon_groups = {c: list(v) for c, v in groups.items()}
    for cls in ("sync", "sat", "relu", "satfinite"):        # repeats mean the same as one
        if cls in canon_groups:
            canon_groups[cls] = canon_groups[cls][:1]
    spelt = ".".join([fam.head] + [t for c in fam.order for t in canon_groups[c]])
    _check_form(fam, groups, opcode)
    return spelt


def _check_form(fam, g, spelling):
    """Refuse qualifier combinations ptxas refuses although each qualifier is known."""
    head = fam.head
    if head.startswith(("wmma.load", "wmma.store")):
        frag = "c" if head[-1] == "d" else head[-1]
        shape, typ = g["shape"][0], g["type"][0]
        shapes = WMMA_FRAGMENTS.get((frag, typ))
        if shapes is None:
            types = sorted(t for f, t in WMMA_FRAGMENTS if f == frag)
            _fail(spelling, f"{head} has no .{typ} fragment (it takes {', '.join('.' + t for t in types)})")
        if shape not in shapes:
            _fail(spelling, f"{head} .{typ} is for {', '.join('.' + s for s in shapes)}, not .{shape}")
    elif head == "wmma.mma":
        types, shape = tuple(g["type"]), g["shape"][0]
        ent = WMMA_MMA_TYPES.get(types)
        if ent is None:
            _fail(spelling, f"wmma.mma has no type list .{'.'.join(types)} (it takes "
                            f"{', '.join('.' + '.'.join(k) for k in WMMA_MMA_TYPES)})")
        shapes, sat = ent
        if shape not in shapes:
            _fail(spelling, f"wmma.mma .{'.'.join(types)} is for {', '.join('.' + s for s in shapes)}, not .{shape}")
        if g["satfinite"] and not sat:
            _fail(spelling, "'.satfinite' on a floating-point wmma.mma is refused since PTX ISA 6.5")
    elif head == "cvt":
        dt, st = g["type"]
        mods = ".".join(t for c in ("rounding", "ftz", "sat", "relu", "satfinite") for t in g[c][:1])
        allowed = cvt_modifiers(dt, st)
        if not allowed:
            _fail(spelling, f"ptxas has no cvt from .{st} to .{dt}")
        if mods not in allowed:
            shown = ", ".join(sorted(("." + a if a else "(none)") for a in allowed))
            _fail(spelling, f"cvt.{dt}.{st} takes the modifiers {shown}; not "
                            f"{'.' + mods if mods else 'none'}")
