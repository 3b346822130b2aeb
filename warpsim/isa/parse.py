"""Opcode parser: an opcode string -> its catalog entry, or an error that says what is allowed.

Accepted opcodes are exactly the catalog's.  For anything else the string is
split into its parts (form, shape, layouts, ``.satfinite``, the four types,
bit operation) and compared with the catalog, so the message can name the
part that is wrong and list what the catalog allows in its place.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from .catalog import BY_OPCODE, CATALOG, WGMMA_CATALOG, WGMMA_SP_CATALOG, Instruction
from .types import SCALE_TYPES, TYPES

# in the order a mismatch is blamed on: the shape last, since another part usually explains better
FIELDS = ("satfinite", "bitop", "scale", "kind", "layouts", "dtype", "ctype", "atype", "btype", "sparse", "shape")
_KINDS = sorted({i.kind for i in CATALOG if i.kind})
_LABEL = {
    "kind": "this MMA", "scale": "this MMA",
    "sparse": "form", "shape": "shape", "layouts": "layouts",
    "satfinite": "this MMA", "dtype": "D type", "atype": "A type", "btype": "B type",
    "ctype": "C type", "bitop": "bit operation",
}


def _show(field, value):
    if field == "sparse":
        return {None: "mma (dense)", "sp": "mma.sp", "sp::ordered_metadata": "mma.sp::ordered_metadata"}[value]
    if field == "satfinite":
        return "with .satfinite" if value else "without .satfinite"
    if field == "layouts":
        return ".{}.{}".format(*value)
    if field == "bitop":
        return "none" if value is None else f".{value}.popc"
    if field == "kind":
        return "without .kind" if value is None else f".kind::{value}"
    if field == "scale":
        if value is None:
            return "without .block_scale"
        return ".block_scale" + (f".scale_vec::{value[0]}" if value[0] else "") + f" with .{value[1]}"
    return f".{value}"


@functools.lru_cache(maxsize=None)
def _fields(ins: Instruction) -> dict:
    """The comparable fields of a catalog entry (cached: the refusal path scores every entry)."""
    out = {f: getattr(ins, f) for f in FIELDS if f not in ("layouts", "scale")}
    out["layouts"] = (ins.alayout, ins.blayout)
    out["scale"] = (ins.scale_vec, ins.stype) if ins.block_scaled else None
    return out


def _split(s: str) -> dict:
    """Structural parse; raises ValueError for text that is not shaped like an mma opcode."""
    toks = s.split(".")
    if not toks or toks[0] != "mma":
        raise ValueError(f"{s!r} is not an mma opcode: it must start with 'mma', 'mma.sp' or 'mma.sp::ordered_metadata'")
    i = 1
    sparse = None
    if i < len(toks) and toks[i].startswith("sp"):
        if toks[i] not in ("sp", "sp::ordered_metadata"):
            raise ValueError(f"{s!r}: unknown sparse form '.{toks[i]}'; allowed: '.sp', '.sp::ordered_metadata'")
        sparse = toks[i]
        i += 1
    if toks[i:i + 2] != ["sync", "aligned"]:
        raise ValueError(f"{s!r}: expected '.sync.aligned' after '{'.'.join(toks[:i])}' (warpsim models mma.sync.aligned only)")
    i += 2
    shapes = sorted({ins.shape for ins in CATALOG}, key=lambda x: (len(x), x))
    if i >= len(toks) or toks[i] not in shapes:
        got = toks[i] if i < len(toks) else "nothing"
        raise ValueError(f"{s!r}: unknown shape {got!r}; shapes: {', '.join(shapes)}")
    shape = toks[i]
    i += 1
    lay = toks[i:i + 2]
    if len(lay) < 2 or any(x not in ("row", "col") for x in lay):
        raise ValueError(f"{s!r}: expected the A and B layouts ('.row'/'.col') after the shape, got {'.'.join(lay) or 'nothing'}")
    i += 2
    kind = None
    if i < len(toks) and toks[i].startswith("kind"):
        kind = toks[i][len("kind::"):] if toks[i].startswith("kind::") else toks[i]
        if kind not in _KINDS:
            raise ValueError(f"{s!r}: unknown '.{toks[i]}'; kinds: {', '.join('.kind::' + k for k in _KINDS)}")
        i += 1
    block = False
    vec = None
    if i < len(toks) and toks[i] == "block_scale":
        block, i = True, i + 1
    if i < len(toks) and toks[i].startswith("scale_vec"):
        vec = toks[i].split("::", 1)[-1]
        if not block or vec not in ("1X", "2X", "4X"):
            raise ValueError(f"{s!r}: '.{toks[i]}' must follow '.block_scale' and be one of "
                             "'.scale_vec::1X', '.scale_vec::2X', '.scale_vec::4X'")
        i += 1
    sat = False
    if i < len(toks) and toks[i] == "satfinite":
        sat, i = True, i + 1
    types = toks[i:i + 4]
    if len(types) < 4:
        raise ValueError(f"{s!r}: expected four types (D, A, B, C) after the layouts, got {len(types)}")
    for t in types:
        if t not in TYPES:
            raise ValueError(f"{s!r}: unknown type '.{t}'; types: {', '.join('.' + x for x in TYPES)}")
    i += 4
    stype = None
    if i < len(toks) and toks[i] in SCALE_TYPES:
        stype, i = toks[i], i + 1
    if block and stype is None:
        raise ValueError(f"{s!r}: a '.block_scale' MMA ends with its scale type: "
                         f"{', '.join('.' + t for t in SCALE_TYPES)}")
    if stype is not None and not block:
        raise ValueError(f"{s!r}: scale type '.{stype}' given without '.block_scale'")
    rest = toks[i:]
    bitop = None
    if rest:
        if len(rest) == 2 and rest[0] in ("xor", "and") and rest[1] == "popc":
            bitop = rest[0]
        else:
            raise ValueError(f"{s!r}: unexpected trailing '.{'.'.join(rest)}'; only '.xor.popc' or '.and.popc' (b1) may follow the types")
    d, a, b, c = types
    return dict(sparse=sparse, shape=shape, layouts=tuple(lay), satfinite=sat,
                dtype=d, atype=a, btype=b, ctype=c, bitop=bitop, kind=kind,
                scale=(vec, stype) if block else None)


# ---------------------------------------------------------------------------------------------
# Spellings: ptxas reads the qualifiers after ``mma`` / ``wgmma.mma_async`` as a bag in which only
# the layouts (A, B), the types (D, A, B, C[, scale]) and the bit operation (op, popc) keep their
# order among themselves.  How many times each qualifier may appear is the table below, as
# ptxas 13.0 checks it (tests/golden/ptxas/spellings.json.xz holds its verdicts).

_SHAPE = re.compile(r"m\d+n\d+k\d+\Z")
#: (min, max) occurrences per qualifier class; None = no limit
_COUNTS = {
    "mma": {"sync": (1, None), "aligned": (1, 1), "shape": (1, 1), "layout": (2, 2), "satfinite": (0, None),
            "sparse": (0, 1), "kind": (0, 1), "block_scale": (0, 1), "scale_vec": (0, 1)},
    # wgmma: ptxas takes .sync alone and ignores .row/.col (the cubin is the same with or without them)
    "wgmma": {"sync": (1, None), "aligned": (0, 1), "shape": (1, 1), "layout": (0, None), "satfinite": (0, None),
              "sparse": (0, 1)},
}
_WHAT = {"sync": "'.sync' (as in '.sync.aligned')", "aligned": "'.aligned' (as in '.sync.aligned')",
         "shape": "a shape (.mMnNkK)", "layout": "the A and B layouts ('.row'/'.col')",
         "satfinite": "'.satfinite'", "sparse": "sparsity qualifier ('.sp' / '.sp::ordered_metadata')",
         "kind": "'.kind::'", "block_scale": "'.block_scale'", "scale_vec": "'.scale_vec::'"}


def _qualifier_class(tok: str, iclass: str):
    if tok in ("sync", "aligned", "satfinite", "block_scale"):
        return tok
    if tok == "sp" or (tok == "sp::ordered_metadata" and iclass == "mma"):
        return "sparse"
    if _SHAPE.match(tok):
        return "shape"
    if tok in ("row", "col"):
        return "layout"
    if tok in TYPES or tok in SCALE_TYPES:
        return "type"
    if tok in ("xor", "and", "popc"):
        return "op"
    if iclass == "mma" and tok.startswith("kind::"):
        return "kind"
    if iclass == "mma" and tok.startswith("scale_vec::"):
        return "scale_vec"
    return None


def _spelling_key(s: str):
    """The meaning of an opcode spelling as a hashable key, or raise ValueError naming what is wrong.

    None when ``s`` is not an mma / wgmma.mma_async spelling at all (the caller explains)."""
    if s.startswith("wgmma.mma_async."):
        iclass, head = "wgmma", "wgmma.mma_async"
    elif s.startswith("mma."):
        iclass, head = "mma", "mma"
    else:
        return None
    toks = s[len(head) + 1:].split(".")
    groups: dict[str, list[str]] = {}
    for t in toks:
        cls = _qualifier_class(t, iclass)
        if cls is None:
            if re.fullmatch(r"(?:[fsube]|bf|tf|ue)\d+(?:m\d+)?", t):
                raise ValueError(f"{s!r}: unknown type '.{t}'; types: {', '.join('.' + x for x in TYPES)}")
            if t.startswith("sp"):
                allowed = "'.sp', '.sp::ordered_metadata'" if iclass == "mma" else "'.sp' (wgmma has no other)"
                raise ValueError(f"{s!r}: unknown sparse form '.{t}'; allowed: {allowed}")
            raise ValueError(f"{s!r}: unknown qualifier '.{t}' for {head}; it takes .sync, .aligned, a shape, "
                             + ("layouts, .kind::, .block_scale, .scale_vec::, " if iclass == "mma" else "")
                             + ".satfinite, .sp, types and a bit operation ('.xor.popc' / '.and.popc')")
        groups.setdefault(cls, []).append(t)
    for cls, (lo, hi) in _COUNTS[iclass].items():
        n = len(groups.get(cls, ()))
        if n < lo:
            raise ValueError(f"{s!r}: {head} needs {_WHAT[cls]}" + (f", got {n}" if lo > 1 else ""))
        if hi is not None and n > hi:
            raise ValueError(f"{s!r}: {head} takes {_WHAT[cls]} " + ("once" if hi == 1 else f"{hi} times")
                             + f", got {n}")
    ops = tuple(groups.get("op", ()))
    if ops and (len(ops) != 2 or ops[0] not in ("xor", "and") or ops[1] != "popc"):
        raise ValueError(f"{s!r}: the bit operation is written '.xor.popc' or '.and.popc' (in that order), "
                         f"got '.{'.'.join(ops)}'")
    return (iclass, tuple(groups.get("sparse", ())), tuple(groups["shape"]),
            tuple(groups.get("layout", ())) if iclass == "mma" else (),
            tuple(groups.get("kind", ())), "block_scale" in groups, tuple(groups.get("scale_vec", ())),
            "satfinite" in groups, tuple(groups.get("type", ())), ops)


#: every catalog entry under the key of its canonical opcode
_BY_KEY: dict = {}
for _ins in CATALOG + WGMMA_CATALOG + WGMMA_SP_CATALOG:
    _BY_KEY[_spelling_key(_ins.opcode)] = _ins


def _canonical_order(key) -> str:
    """A spelling's qualifiers in the catalog's order, for the not-in-catalog explanations."""
    iclass, sparse, shape, lay, kind, block, vec, sat, types, ops = key
    if iclass == "wgmma":
        parts = ["wgmma", "mma_async", *sparse, "sync", "aligned", *shape, *(["satfinite"] if sat else []), *types]
    else:
        parts = ["mma", *sparse, "sync", "aligned", *shape, *lay, *kind, *(["block_scale"] if block else []), *vec,
                 *(["satfinite"] if sat else []), *types]
    return ".".join(parts + list(ops))


def parse(instruction, arch=None) -> Instruction:
    """The catalog entry of an opcode written as in PTX, operands left out.

    With ``arch`` (e.g. ``"sm_80"``; ``"sm_90a"`` means sm_90) the opcode must also
    exist on that target: otherwise a ValueError names the lowest target that has it.

    >>> parse("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32").k
    16

    A ``tcgen05.mma`` spelling (sm_100a) returns its :class:`~warpsim.isa.catalog.Tcgen05Opcode` instead:
    its shape and types live in the instruction descriptor (:mod:`warpsim.isa.tcgen05`).

    >>> ins = parse("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32")
    >>> ins.mnk, ins.atype, ins.dtype, ins.is_sparse, ins.selectors, ins.min_sm
    ((16, 8, 32), 'f16', 'f32', True, (0, 1), 80)
    """
    if isinstance(instruction, str) and instruction.strip().startswith("tcgen05"):
        from .tcgen05 import parse_tcgen05

        op = parse_tcgen05(instruction.strip().rstrip(";").rstrip())
        if arch is not None and (not isinstance(arch, str) or arch.strip().lower() not in op.targets):
            raise ValueError(f"{op.opcode} exists on {', '.join(op.targets)} only (ptxas 13.0), not on {arch!r}")
        return op
    if arch is not None:
        from .archs import require

        ins = parse(instruction)
        require(ins, arch)
        return ins
    if isinstance(instruction, Instruction):
        return instruction
    if not isinstance(instruction, str):
        raise TypeError(f"instruction must be an opcode string, not {type(instruction).__name__}")
    s = instruction.strip()
    if s.endswith(";"):
        s = s[:-1].rstrip()
    ins = BY_OPCODE.get(s)
    if ins is not None:
        return ins
    key = _spelling_key(s)
    if key is not None:
        ins = _BY_KEY.get(key)
        if ins is not None:
            return dataclasses.replace(ins, spelling=s)
        canon = _canonical_order(key)
        if canon != s:          # explain the catalog-ordered form; the message keeps what the user wrote
            try:
                parse(canon)
            except ValueError as exc:
                why = str(exc)
                why = why[len(repr(canon)):].lstrip(": ") if why.startswith(repr(canon)) else why
                raise ValueError(f"{s!r} (read as {canon!r}): {why}") from None
    if s.startswith("wgmma"):
        _wgmma_error(s)
    want = _split(s)
    # the catalog entries that differ from the request in the fewest parts
    scored = []
    for cand in CATALOG:
        have = _fields(cand)
        diff = [f for f in FIELDS if have[f] != want[f]]
        scored.append((len(diff), diff, cand))
    best = min(n for n, _, _ in scored)
    near = [(diff, cand) for n, diff, cand in scored if n == best]
    if best == 1:
        fields = {d[0] for d, _ in near}
        field = min(fields, key=FIELDS.index)
        near = [(d, c) for d, c in near if d[0] == field]
        if True:
            allowed = sorted({_show(field, _fields(c)[field]) for _, c in near})
            return _raise(s, f"{_LABEL[field]} {_show(field, want[field])} is not allowed with the rest of this opcode; "
                             f"allowed here: {', '.join(allowed)}", [c for _, c in near])
    return _raise(s, "no mma that ptxas 13.0 accepts (sm_90, or sm_120a for .kind::) has this combination "
                     "of shape, layouts and types", [c for _, c in near])


def _raise(s, why, near):
    alts = "\n  ".join(c.opcode for c in near[:6])
    more = f"\n  ... and {len(near) - 6} more" if len(near) > 6 else ""
    raise ValueError(f"{s!r}: {why}.\nClosest opcodes in the catalog:\n  {alts}{more}")


def _wgmma_error(s: str):
    """Explain why a ``wgmma`` opcode is not in the catalog (always raises ValueError)."""
    sparse = s.startswith("wgmma.mma_async.sp")
    head = "wgmma.mma_async.sp.sync.aligned." if sparse else "wgmma.mma_async.sync.aligned."
    if sparse and not s.startswith(head):
        raise ValueError(f"{s!r}: the sparse warpgroup MMA is written '{head}...' (no other sparse form, such as "
                         "'::ordered_metadata', exists for wgmma)")
    if not s.startswith(head):
        raise ValueError(f"{s!r}: a warpgroup MMA opcode starts with '{head}' or 'wgmma.mma_async.sp.sync.aligned.' "
                         "(fence, commit_group and wait_group are statements of the register file, not opcodes)")
    forms = list(WGMMA_SP_CATALOG if sparse else WGMMA_CATALOG)
    what = "sparse wgmma" if sparse else "wgmma"
    toks = s[len(head):].split(".")
    shape = toks[0]
    rest = toks[1:]
    sat = bool(rest) and rest[0] == "satfinite"
    rest = rest[1:] if sat else rest
    types = tuple(rest[:3])
    bitop = ".".join(rest[3:]) or None
    try:
        m, nk = shape[1:].split("n")
        n, k = (int(x) for x in nk.split("k"))
        m = int(m)
    except ValueError:
        raise ValueError(f"{s!r}: expected a shape m64nNkK after '{head}', got {shape!r}") from None
    same_types = [i for i in forms if (i.dtype, i.atype, i.btype) == types and i.satfinite == sat
                  and (i.bitop + ".popc" if i.bitop else None) == bitop]
    if same_types:
        ks = sorted({i.k for i in same_types})
        ns = sorted({i.n for i in same_types})
        if m != 64 or k not in ks:
            raise ValueError(f"{s!r}: D.{types[0]} = A.{types[1]} x B.{types[2]} has shape m64nNk{ks[0]}, not {shape}")
        raise ValueError(f"{s!r}: N = {n} is not allowed for this {what}; allowed N: {', '.join(map(str, ns))}")
    by_k = [i for i in forms if i.k == k] or forms
    combos = sorted({(".satfinite" if i.satfinite else "") + f".{i.dtype}.{i.atype}.{i.btype}"
                     + (f".{i.bitop}.popc" if i.bitop else "") for i in by_k})
    raise ValueError(f"{s!r}: no sm_90a {what} has {'.satfinite' if sat else ''}.{'.'.join(rest)} with k{k}; "
                     f"allowed after the shape: {', '.join(combos)}")
