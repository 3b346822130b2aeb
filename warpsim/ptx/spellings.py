"""Spellings of the table's wmma / ldmatrix / stmatrix / movmatrix / cvt statements, as ptxas reads them.

ptxas reads the qualifiers after these instruction names as a bag: ``.sync``, ``.aligned``, the
shape, the state space, ``.trans``, rounding and saturation modifiers may stand anywhere; only
the types (destination first) and wmma.mma's two layouts (A, then B) keep their order among
themselves.  :func:`canonical` maps any spelling ptxas 13.0 accepts for sm_90a to the one
spelling the instruction table matches, and refuses, naming the qualifier, every spelling ptxas
refuses -- also forms whose qualifiers are each allowed but not together (``cvt.rn.f32.f16``,
``wmma.load.a...m16n16k8.f16``).  The tables below are the grammar as data; the verdicts they
agree with are in tests/golden/ptxas/ptx_spellings.json.xz (``warpsim.hw.ptxas_grammar.ptx``).
Other instructions pass through unchanged.
"""

from __future__ import annotations

import itertools
import re
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
    (("tf32",), ("f32",), "{rn,rz}[.relu][.satfinite] rna[.satfinite]"),   # rn/rz .satfinite: sm_100 (ptx/targets.py)
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
        spelt = _async_canonical(opcode)
        return opcode if spelt is None else spelt
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


# ---- the atomic, mbarrier, bulk-copy and cluster statements ------------------------------------------
# ptxas 13.0 (sm_90a) reads these as a fixed name (``mbarrier.arrive.expect_tx``, ``fence.proxy``,
# ``barrier.cluster.wait``, ``setmaxnreg.inc``) followed by a bag of qualifiers, each at most once
# (``elect``'s ``.sync`` may repeat); only the state spaces keep their order (destination first).
# A bag is put in the class order below, then must spell one of the family's accepted forms
# (``valid``: regular expressions over the qualifiers after the name, in canonical order).
# Verdicts: tests/golden/ptxas/async_spellings.json.xz (``warpsim.hw.ptxas_grammar.async_forms``).

_SEMS = ("relaxed", "acquire", "release", "acq_rel", "sc")
_SCOPES = ("cta", "cluster", "gpu", "sys")
_MEM_SPACES = ("global", "shared", "shared::cta", "shared::cluster")
_ATOM_OPS = ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")
_ATOM_TYPES = ("b16", "b32", "b64", "u32", "s32", "u64", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2")
_ASYNC_CLASSES = {
    "sem": _SEMS, "scope": _SCOPES, "space": _MEM_SPACES, "op": _ATOM_OPS, "noftz": ("noftz",),
    "type": _ATOM_TYPES, "hint": ("L2::cache_hint",), "dim": ("1d", "2d", "3d", "4d", "5d"), "mode": ("tile",),
    "completion": ("mbarrier::complete_tx::bytes", "bulk_group"), "multicast": ("multicast::cluster",),
    "cache": ("ca", "cg"), "prefetch": ("L2::64B", "L2::128B", "L2::256B"), "noComplete": ("noComplete",),
    "proxy": ("alias", "async", "tensormap::generic"), "mbarrier_init": ("mbarrier_init",), "read": ("read",),
    "sync": ("sync",), "aligned": ("aligned",), "mtype": ("b64",), "level": ("cta", "gl", "sys"),
}


class BagFamily:
    """A fixed instruction name, its qualifier classes in canonical order, and the accepted forms."""

    def __init__(self, head, order, valid, repeat=(), vocab=None, ignored=()):
        self.head, self.order, self.repeat, self.ignored = head, order, frozenset(repeat), frozenset(ignored)
        self.vocab = {c: (vocab or {}).get(c, _ASYNC_CLASSES[c]) for c in order}
        self.valid = [re.compile(v + r"\Z") for v in valid]


_S = r"(?:\.(?:{}))"
_OPT = r"(?:\.(?:{}))?"
_ATOM_OPTYPES = (r"\.(?:add\.(?:u32|s32|u64|f32|f64)|add\.noftz\.(?:f16|f16x2|bf16|bf16x2)|(?:min|max)\.(?:u32|s32|u64|s64)"
                 r"|(?:and|or|xor|exch)\.b(?:32|64)|cas\.b(?:16|32|64)|(?:inc|dec)\.u32)")
_RED_OPTYPES = _ATOM_OPTYPES.replace(r"|(?:and|or|xor|exch)\.b(?:32|64)|cas\.b(?:16|32|64)", r"|(?:and|or|xor)\.b(?:32|64)")
_SCOPE = _OPT.format("cta|cluster|gpu|sys")
_ATOM_SPACE = _OPT.format("global|shared|shared::cta|shared::cluster")
_MB_CTA = _OPT.format("shared|shared::cta")
_MB_ANY = _OPT.format("shared|shared::cta|shared::cluster")
_MB_SEMSCOPE = r"(?:\.(?:{})\.(?:cta|cluster))?"
_BULK_OP = _OPT.format("add|min|max|inc|dec|and|or|xor")
_RED_BULK = (r"\.(?:add\.(?:u32|s32|u64|f32|f64)|add\.noftz\.(?:f16|bf16)|(?:min|max)\.(?:u32|s32|u64|s64|f16|bf16)"
             r"|(?:inc|dec)\.u32|(?:and|or|xor)\.b(?:32|64))")
_ATOM_ORDER = ("sem", "scope", "space", "op", "noftz", "type", "hint")
_MB_ORDER = ("noComplete", "sem", "scope", "space", "mtype")
_MB_WAIT = (_MB_SEMSCOPE.format("acquire|relaxed") + _MB_CTA + r"\.b64",)
_TENSOR_ORDER = ("dim", "space", "op", "mode", "completion", "multicast", "hint")

ASYNC_FAMILIES = {f.head: f for f in (
    BagFamily("atom", _ATOM_ORDER, [_OPT.format("relaxed|acquire|release|acq_rel") + _SCOPE + _ATOM_SPACE + _ATOM_OPTYPES,
                                    _OPT.format("relaxed|acquire|release|acq_rel") + _SCOPE + r"(?:\.global)?"
                                    + _ATOM_OPTYPES.replace(r"|cas\.b(?:16|32|64)", "") + r"\.L2::cache_hint"]),
    BagFamily("red", _ATOM_ORDER, [_OPT.format("relaxed|release") + _SCOPE + _ATOM_SPACE + _RED_OPTYPES
                                   + _OPT.format("L2::cache_hint")]),
    BagFamily("mbarrier.init", ("space", "mtype"), [_MB_CTA + r"\.b64"]),
    BagFamily("mbarrier.inval", ("space", "mtype"), [_MB_CTA + r"\.b64"]),
    *(BagFamily(f"mbarrier.{n}", _MB_ORDER,
                [_MB_SEMSCOPE.format("release|relaxed") + _MB_ANY + r"\.b64",
                 r"\.noComplete" + _MB_SEMSCOPE.format("release").replace("cta|cluster", "cta") + _MB_CTA + r"\.b64"])
      for n in ("arrive", "arrive_drop")),
    *(BagFamily(f"mbarrier.{n}.expect_tx", _MB_ORDER, [_MB_SEMSCOPE.format("release|relaxed") + _MB_ANY + r"\.b64"])
      for n in ("arrive", "arrive_drop")),
    *(BagFamily(f"mbarrier.{n}", _MB_ORDER, [_MB_SEMSCOPE.format("relaxed") + _MB_ANY + r"\.b64"])
      for n in ("expect_tx", "complete_tx")),
    *(BagFamily(f"mbarrier.{n}", _MB_ORDER, _MB_WAIT)
      for n in ("test_wait", "test_wait.parity", "try_wait", "try_wait.parity")),
    BagFamily("mbarrier.pending_count", ("mtype",), [r"\.b64"]),
    BagFamily("cp.async.bulk.tensor", _TENSOR_ORDER,
              [r"\.[1-5]d\.shared::cluster\.global(?:\.tile)?\.mbarrier::complete_tx::bytes(?:\.multicast::cluster)?"
               + _OPT.format("L2::cache_hint"),
               r"\.[1-5]d\.shared::cta\.global(?:\.tile)?\.mbarrier::complete_tx::bytes" + _OPT.format("L2::cache_hint"),
               r"\.[1-5]d\.global\.shared::cta(?:\.tile)?\.bulk_group" + _OPT.format("L2::cache_hint")]),
    BagFamily("cp.reduce.async.bulk.tensor", _TENSOR_ORDER,
              [r"\.[1-5]d\.global\.shared::cta" + _S.format("add|min|max|inc|dec|and|or|xor") + r"(?:\.tile)?\.bulk_group"
               + _OPT.format("L2::cache_hint")]),
    # ptxas takes a .cta on the cluster-destination copy and assembles the same cubin as without it
    BagFamily("cp.async.bulk", ("space", "scope", "completion", "multicast", "hint"),
              [r"\.shared::cluster\.global(?:\.cta)?\.mbarrier::complete_tx::bytes(?:\.multicast::cluster)?"
               + _OPT.format("L2::cache_hint"),
               r"\.shared::cta\.global\.mbarrier::complete_tx::bytes" + _OPT.format("L2::cache_hint"),
               r"\.shared::cluster\.shared::cta\.mbarrier::complete_tx::bytes",
               r"\.global\.shared::cta\.bulk_group" + _OPT.format("L2::cache_hint")],
              vocab={"scope": ("cta",)}, ignored=("scope",)),
    BagFamily("cp.reduce.async.bulk", ("space", "completion", "hint", "op", "noftz", "type"),
              [r"\.global\.shared::cta\.bulk_group" + _OPT.format("L2::cache_hint") + _RED_BULK]),
    BagFamily("cp.async.bulk.commit_group", (), [""]),
    BagFamily("cp.async.bulk.wait_group", ("read",), [_OPT.format("read")]),
    BagFamily("cp.async", ("cache", "space", "hint", "prefetch"),
              [r"\.(?:ca|cg)\.(?:shared|shared::cta)\.global" + _OPT.format("L2::cache_hint")
               + _OPT.format("L2::64B|L2::128B|L2::256B")]),
    BagFamily("cp.async.commit_group", (), [""]),
    BagFamily("cp.async.wait_group", (), [""]),
    BagFamily("cp.async.wait_all", (), [""]),
    BagFamily("fence", ("mbarrier_init", "sem", "scope"),
              [_OPT.format("sc|acq_rel|acquire|release") + _S.format("cta|cluster|gpu|sys"),
               r"\.mbarrier_init\.release\.cluster"]),
    BagFamily("fence.proxy", ("proxy", "sem", "scope", "space"),
              [r"\.alias", r"\.async" + _OPT.format("global|shared::cta|shared::cluster"),
               r"\.tensormap::generic\.(?:release|acquire)\.(?:cta|cluster|gpu|sys)"]),
    BagFamily("membar", ("level",), [_S.format("cta|gl|sys")]),
    BagFamily("membar.proxy", ("proxy",), [r"\.alias"]),
    BagFamily("elect", ("sync",), [r"\.sync"], repeat=("sync",)),
    BagFamily("mapa", ("space", "type"), [_OPT.format("shared::cluster") + _S.format("u32|u64")],
              vocab={"space": ("shared::cluster",), "type": ("u32", "u64")}),
    BagFamily("barrier.cluster.arrive", ("sem", "aligned"), [_OPT.format("release|relaxed") + _OPT.format("aligned")]),
    BagFamily("barrier.cluster.wait", ("sem", "aligned"), [_OPT.format("acquire") + _OPT.format("aligned")]),
    *(BagFamily(f"setmaxnreg.{d}", ("sync", "aligned", "type"), [r"\.sync\.aligned\.u32"], vocab={"type": ("u32",)})
      for d in ("inc", "dec")),
)}
_ASYNC_HEADS = sorted(ASYNC_FAMILIES, key=len, reverse=True)
#: names ptxas knows only with one of the words after them (``barrier.cluster.arrive``)
_ASYNC_ROOTS = {"barrier.cluster": ("arrive", "wait"), "setmaxnreg": ("inc", "dec")}
#: left to their own rows (refused there with the reason warpsim does not run them)
_ASYNC_PASS = ("cp.async.bulk.prefetch", "cp.async.bulk.tensor.")


def _async_canonical(opcode):
    if opcode.startswith(_ASYNC_PASS) and (not opcode.startswith(_ASYNC_PASS[1]) or ".im2col" in opcode):
        return None
    head = next((h for h in _ASYNC_HEADS if opcode == h or opcode.startswith(h + ".")), None)
    if head is None:
        for root, words in _ASYNC_ROOTS.items():
            if opcode == root or opcode.startswith(root + "."):
                _fail(opcode, f"ptxas knows {root} only as {', '.join(root + '.' + w for w in words)}, "
                              "that word right after the name")
        return None
    fam = ASYNC_FAMILIES[head]
    toks = opcode[len(head) + 1:].split(".") if opcode != head else []
    groups: dict[str, list[str]] = {c: [] for c in fam.order}
    for t in toks:
        cls = next((c for c in fam.order if t in fam.vocab[c] and (c != "space" or len(groups[c]) < 2)
                    and (c == "space" or c in fam.repeat or not groups[c])), None)
        if cls is None:
            if any(t in fam.vocab[c] for c in fam.order):
                _fail(opcode, f"'.{t}' twice (or a second qualifier of its kind) in {head}: ptxas takes each once")
            known = sorted({x for c in fam.order for x in fam.vocab[c]})
            _fail(opcode, f"unknown qualifier '.{t}' for {head} (it takes: "
                          f"{', '.join('.' + x for x in known) or 'none'})")
        groups[cls].append(t)
    for c in fam.repeat:
        groups[c] = groups[c][:1]
    rest = "".join("." + t for c in fam.order for t in groups[c])
    kept = "".join("." + t for c in fam.order if c not in fam.ignored for t in groups[c])
    if not any(v.match(rest) for v in fam.valid):
        _fail(opcode, f"ptxas (sm_90a) does not accept {head} with the qualifiers "
                      f"{rest or '(none)'}, or warpsim does not run that form (warpsim.ptx.spellings."
                      f"ASYNC_FAMILIES['{head}'] lists the accepted forms)")
    return head + kept
