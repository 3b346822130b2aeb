"""Which spellings of the atomic, mbarrier, bulk-copy and cluster statements ptxas accepts.

The sibling of :mod:`warpsim.hw.ptxas_ptx_grammar` for the rows added with the Hopper kernel
machinery: ``atom`` / ``red`` (global and shared, every op and type the table runs, with
``.sem`` / ``.scope`` / cache hints), ``mbarrier.*``, ``cp.async.bulk(.tensor)`` and
``cp.reduce.async.bulk(.tensor)``, ``cp.async``, ``fence`` / ``membar``, ``elect.sync``,
``mapa``, ``barrier.cluster``, ``setmaxnreg``.  The canonical forms are the spellings the
instruction table matches, each with valid operands; the seeded spellings of each accepted form
are the same mutations the sibling uses (permutations of the qualifiers after the instruction
name keeping the order of the state spaces, moves, repeats, drops, foreign qualifiers).  ptxas
13.0 at -O0 for sm_90a, a thousand statements per call, errors attributed by line; a sample of
the accepted non-canonical spellings assembles to the canonical form's cubin.  The verdicts go to
``tests/golden/ptxas/async_spellings.json.xz``.

    python -m warpsim.hw.ptxas_async_grammar [--ptxas ptxas] [--out tests/golden/ptxas/async_spellings.json.xz]
"""

from __future__ import annotations

import itertools
import os
import random
import sys

from . import ptxas_ptx_grammar as base
from . import ptxas_grammar as _verdicts
from .ptxas_grammar import ptxas_version

TARGET = base.TARGET
PTX_VERSION = base.PTX_VERSION
SEED = 2425
DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "ptxas", "async_spellings.json.xz")

HEADER = base.HEADER.replace("  .reg .pred %p<2>;", "  .reg .pred %p<4>;\n  .shared .align 8 .b64 mbar[4];")

# ---- the canonical forms the table implements ---------------------------------------------------

ATOM_TYPES = {
    "add": ("u32", "s32", "u64", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"),
    "exch": ("b32", "b64"), "cas": ("b32", "b64", "b16"), "inc": ("u32",), "dec": ("u32",),
}
ATOM_SPACES = ("", "global", "shared", "shared::cta", "shared::cluster")
SEMS = ("", "relaxed", "acquire", "release", "acq_rel")
SCOPES = ("", "cta", "cluster", "gpu", "sys")
REDUCE_TYPES = {"add": ("u32", "s32", "u64", "f32", "f64", "f16", "bf16"),
                "min": ("u32", "s32", "u64", "s64", "f16", "bf16"), "max": ("u32", "s32", "u64", "s64", "f16", "bf16"),
                "inc": ("u32",), "dec": ("u32",), "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64")}


def _r(t, i):
    """A register of PTX type ``t``."""
    if t in ("f16", "bf16", "b16"):
        return f"%h{i}"
    if t == "f32":
        return f"%f{i}"
    if t == "f64":
        return f"%fd{i}"
    if t.endswith("64"):
        return f"%rd{i + 10}"
    return f"%r{i}"


def _join(*parts):
    return ".".join(p for p in parts if p)


def _atom_forms():
    out = []
    pairs = [(op, t, nf) for op, ts in ATOM_TYPES.items() for t in ts
             for nf in (("", "noftz") if op == "add" and t[:2] in ("f1", "bf") else ("",))]
    combos = [("", "", sp, p, "") for sp in ATOM_SPACES for p in pairs]                           # every op/type/space
    combos += [(se, sc, sp, p, "") for se in SEMS for sc in SCOPES for sp in ATOM_SPACES
               for p in (("add", "u32", ""), ("cas", "b32", ""), ("add", "f32", ""))
               if (se or sc)]                                                                     # every sem/scope
    combos += [("", "", sp, p, "L2::cache_hint") for sp in ("", "global") for p in pairs]        # cache hints
    for name in ("atom", "red"):
        for se, sc, sp, (op, t, nf), hint in combos:
            if name == "red" and op in ("exch", "cas"):
                continue
            spelling = _join(name, se, sc, sp, op, nf, t, hint)
            srcs = [_r(t, 2)] + ([_r(t, 3)] if op == "cas" else []) + (["%rd5"] if hint else [])
            opnds = ", ".join(([_r(t, 1)] if name == "atom" else []) + ["[%rd1]"] + srcs)
            out.append((name, spelling, opnds))
    return out


MB_SPACES = ("", "shared", "shared::cta", "shared::cluster")


def _mbarrier_forms():
    out = []
    for sp in MB_SPACES:
        out.append(("mbarrier", _join("mbarrier.init", sp, "b64"), "[%rd1], %r2"))
        out.append(("mbarrier", _join("mbarrier.inval", sp, "b64"), "[%rd1]"))
        for op, nc, tx in itertools.product(("arrive", "arrive_drop"), ("", "noComplete"), ("", "expect_tx")):
            for se, sc in itertools.product(("", "release", "relaxed", "acquire"), ("", "cta", "cluster")):
                spelling = _join("mbarrier", op, tx, nc, se, sc, sp, "b64")     # .expect_tx is part of the name
                d = "_" if sp == "shared::cluster" else "%rd2"
                opnds = f"{d}, [%rd1]" + (", %r3" if tx else "") + (", %r4" if nc else "")
                out.append(("mbarrier", spelling, opnds))
        for op in ("expect_tx", "complete_tx"):
            for se, sc in itertools.product(("", "relaxed", "release", "acquire"), ("", "cta", "cluster")):
                out.append(("mbarrier", _join("mbarrier", op, se, sc, sp, "b64"), "[%rd1], %r3"))
        for op, par in itertools.product(("test_wait", "try_wait"), ("", "parity")):
            for se, sc in itertools.product(("", "acquire", "relaxed", "release"), ("", "cta", "cluster")):
                out.append(("mbarrier", _join("mbarrier", op, par, se, sc, sp, "b64"),
                            "%p1, [%rd1], " + ("%r3" if par else "%rd2")))
    out.append(("mbarrier", "mbarrier.pending_count.b64", "%r1, %rd2"))
    return out


def _tensor_coords(dim):
    return "{" + ", ".join(f"%r{20 + i}" for i in range(dim)) + "}"


def _bulk_forms():
    out = []
    for dim, dst, tile, mc, hint in itertools.product(range(1, 6), ("shared::cluster", "shared::cta"), ("", "tile"),
                                                      ("", "multicast::cluster"), ("", "L2::cache_hint")):
        spelling = _join(f"cp.async.bulk.tensor.{dim}d", dst, "global", tile, "mbarrier::complete_tx::bytes", mc, hint)
        opnds = f"[%rd1], [%rd2, {_tensor_coords(dim)}], [%rd3]" + (", %h4" if mc else "") + (", %rd5" if hint else "")
        out.append(("cp.async.bulk.tensor", spelling, opnds))
    for dim, red, tile, hint in itertools.product(range(1, 6), ("",) + tuple(REDUCE_TYPES), ("", "tile"),
                                                  ("", "L2::cache_hint")):
        head = "cp.reduce.async.bulk.tensor" if red else "cp.async.bulk.tensor"
        spelling = _join(f"{head}.{dim}d", "global.shared::cta", red, tile, "bulk_group", hint)
        opnds = f"[%rd2, {_tensor_coords(dim)}], [%rd1]" + (", %rd5" if hint else "")
        out.append((head, spelling, opnds))
    for dst, src, mc, hint in itertools.product(("shared::cluster", "shared::cta"), ("global", "shared::cta"),
                                                ("", "multicast::cluster"), ("", "L2::cache_hint")):
        spelling = _join("cp.async.bulk", dst, src, "mbarrier::complete_tx::bytes", mc, hint)
        opnds = "[%rd1], [%rd2], %r3, [%rd3]" + (", %h4" if mc else "") + (", %rd5" if hint else "")
        out.append(("cp.async.bulk", spelling, opnds))
    for hint in ("", "L2::cache_hint"):
        out.append(("cp.async.bulk", _join("cp.async.bulk.global.shared::cta.bulk_group", hint),
                    "[%rd1], [%rd2], %r3" + (", %rd5" if hint else "")))
        for op, ts in REDUCE_TYPES.items():
            for t in ts:
                for nf in (("", "noftz") if op == "add" and t in ("f16", "bf16") else ("",)):
                    spelling = _join("cp.reduce.async.bulk.global.shared::cta.bulk_group", hint, op, nf, t)
                    out.append(("cp.reduce.async.bulk", spelling, "[%rd1], [%rd2], %r3" + (", %rd5" if hint else "")))
    out.append(("cp.async.bulk", "cp.async.bulk.commit_group", ""))
    out.append(("cp.async.bulk", "cp.async.bulk.wait_group", "1"))
    out.append(("cp.async.bulk", "cp.async.bulk.wait_group.read", "0"))
    return out


def _cp_async_forms():
    out = []
    for cache, sp, hint, pf, size in itertools.product(("ca", "cg"), ("shared", "shared::cta"), ("", "L2::cache_hint"),
                                                       ("", "L2::64B", "L2::128B", "L2::256B"), (4, 8, 16)):
        if cache == "cg" and size != 16:
            continue                      # ptxas: .cg copies 16 bytes (a cp-size operand, not a qualifier)
        spelling = _join("cp.async", cache, sp, "global", hint, pf)
        out.append(("cp.async", spelling, f"[%rd1], [%rd2], {size}" + (", %rd5" if hint else "")))
        if size == 16 and not pf:
            out.append(("cp.async", spelling, f"[%rd1], [%rd2], 16, %r3" + (", %rd5" if hint else "")))
    out.append(("cp.async", "cp.async.commit_group", ""))
    out.append(("cp.async", "cp.async.wait_group", "1"))
    out.append(("cp.async", "cp.async.wait_all", ""))
    return out


def _fence_forms():
    out = []
    for sem, scope in itertools.product(("", "sc", "acq_rel", "acquire", "release"), ("cta", "cluster", "gpu", "sys")):
        out.append(("fence", _join("fence", sem, scope), ""))
    out.append(("fence", "fence.proxy.alias", ""))
    for sp in ("", "global", "shared::cta", "shared::cluster"):
        out.append(("fence", _join("fence.proxy.async", sp), ""))
    for scope in ("cta", "cluster", "gpu", "sys"):
        out.append(("fence", f"fence.proxy.tensormap::generic.release.{scope}", ""))
        out.append(("fence", f"fence.proxy.tensormap::generic.acquire.{scope}", "[%rd1], 128"))
    out.append(("fence", "fence.mbarrier_init.release.cluster", ""))
    for lvl in ("cta", "gl", "sys"):
        out.append(("membar", f"membar.{lvl}", ""))
    out.append(("membar", "membar.proxy.alias", ""))
    return out


def _cluster_forms():
    out = [("elect", "elect.sync", "%r1|%p1, %r2")]
    for sp, t in itertools.product(("", "shared::cluster"), ("u32", "u64")):
        out.append(("mapa", _join("mapa", sp, t), f"{_r(t, 1)}, {_r(t, 2)}, %r3"))
    for sem, al in itertools.product(("", "release", "relaxed", "acquire"), ("", "aligned")):
        out.append(("barrier.cluster", _join("barrier.cluster.arrive", sem, al), ""))
        out.append(("barrier.cluster", _join("barrier.cluster.wait", sem, al), ""))
    for d in ("inc", "dec"):
        out.append(("setmaxnreg", f"setmaxnreg.{d}.sync.aligned.u32", "232" if d == "inc" else "40"))
    return out


def canonical_forms():
    """(family, canonical spelling, operand text) of every form to ask ptxas about."""
    return _atom_forms() + _mbarrier_forms() + _bulk_forms() + _cp_async_forms() + _fence_forms() + _cluster_forms()


# ---- candidate spellings -------------------------------------------------------------------------

HEADS = ("atom", "red", "mbarrier.init", "mbarrier.inval", "mbarrier.arrive", "mbarrier.arrive_drop",
         "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.test_wait", "mbarrier.try_wait",
         "mbarrier.pending_count", "cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "cp.async.bulk",
         "cp.reduce.async.bulk", "cp.async", "fence", "membar", "elect", "mapa", "barrier.cluster", "setmaxnreg")
#: qualifiers whose order among themselves is meaning: destination space before source space
SPACES = ("global", "shared", "shared::cta", "shared::cluster")
_FOREIGN = ("sync", "aligned", "ftz", "rn", "b32", "u32", "global", "release", "cta", "trans", "x2")


def head_and_qualifiers(op):
    head = next(h for h in sorted(HEADS, key=len, reverse=True) if op == h or op.startswith(h + "."))
    return head, (op[len(head) + 1:].split(".") if op != head else [])


def _keep_order(moved, original):
    out = list(moved)
    seq = [t for t in original if t in SPACES]
    pos = [i for i, t in enumerate(out) if t in SPACES]
    if len(seq) == len(pos):
        for i, t in zip(pos, seq):
            out[i] = t
    return out


def _bag(spelling):
    """What a spelling means if ptxas reads its qualifiers as a bag: head, qualifier set, space order."""
    head, q = head_and_qualifiers(spelling)
    return head, frozenset(q), tuple(t for t in q if t in SPACES)


def candidates(op, rng, per_form, vocab=(), others=frozenset()):
    """``op`` and seeded mutations of its qualifiers, leaving out those that spell another form
    (``others``: their bags) or add a qualifier of the family's own ``vocab``."""
    head, q = head_and_qualifiers(op)
    out = {op}
    tries = 0
    while len(out) < per_form and tries < 8 * per_form:
        tries += 1
        t = list(q)
        how = rng.randrange(6)
        if how in (0, 1, 3, 4) and len(t) < 2:
            how = rng.choice((2, 5))
        if how == 2 and not t:
            how = 5
        if how == 0:                                    # any order
            rng.shuffle(t)
        elif how == 1:                                  # one qualifier moved
            t.insert(rng.randrange(len(t)), t.pop(rng.randrange(len(t))))
        elif how == 2:                                  # one qualifier twice
            t.insert(rng.randrange(len(t) + 1), rng.choice(t))
        elif how == 3:                                  # one qualifier missing
            t.pop(rng.randrange(len(t)))
        elif how == 4:                                  # two neighbours swapped
            i = rng.randrange(len(t) - 1)
            t[i], t[i + 1] = t[i + 1], t[i]
        else:                                           # a qualifier foreign to the form
            extra = [x for x in _FOREIGN if x not in q and x not in vocab]
            t.insert(rng.randrange(len(t) + 1), rng.choice(extra))
        if how in (0, 1, 4):
            t = _keep_order(t, q)
        sp = ".".join([head] + t)
        if _bag(sp) in others and _bag(sp) != _bag(op):
            continue
        out.add(sp)
    return sorted(out)


def build(ptxas="ptxas", per_form=10, cubin_sample=600):
    """The verdict table, per family (as :func:`warpsim.hw.ptxas_ptx_grammar.build`); a form is its
    spelling, the operands are part of the generator (one operand list per spelling)."""
    forms = canonical_forms()
    by_sp = {}
    for fam, op, o in forms:
        by_sp.setdefault(op, (fam, o))                  # cp.async: the first operand list is the form's
    uniq = [(fam, op, o) for op, (fam, o) in by_sp.items()]
    canon = base.verdicts(ptxas, [(op, o) for _, op, o in uniq], header=HEADER)
    rng = random.Random(SEED)
    vocab, bags = {}, {_bag(op) for _, op, _ in uniq}
    for _, op, _ in uniq:
        h, q = head_and_qualifiers(op)
        vocab.setdefault(h, set()).update(q)
    spelt = []
    seen = set(by_sp)
    for fam, op, o in uniq:
        if not canon[op]:
            for sp in candidates(op, rng, per_form, vocab[head_and_qualifiers(op)[0]], bags):
                if sp not in seen:
                    seen.add(sp)
                    spelt.append((fam, op, sp, o))
    v = base.verdicts(ptxas, [(sp, o) for _, _, sp, o in spelt], header=HEADER)
    ok = [(op, sp, o) for _, op, sp, o in spelt if not v[sp]]
    checked = base.same_cubins(ptxas, random.Random(SEED).sample(ok, min(cubin_sample, len(ok))), header=HEADER)
    errors: list[str] = []
    fams: dict = {}
    for fam, op, _ in uniq:
        ent = fams.setdefault(fam, {"forms": {}, "refused_forms": {}})
        if canon[op]:
            ent["refused_forms"][op] = base._index(errors, canon[op])
        else:
            ent["forms"][op] = {"ok": [], "no": {}}
    for fam, op, sp, _ in spelt:
        ent = fams[fam]["forms"][op]
        if v[sp]:
            ent["no"][sp] = base._index(errors, v[sp])
        else:
            ent["ok"].append(sp)
    for fam, ent in sorted(fams.items()):
        ok_n = len(ent["forms"]) + sum(len(e["ok"]) for e in ent["forms"].values())
        tried = len(ent["forms"]) + len(ent["refused_forms"]) + sum(len(e["ok"]) + len(e["no"])
                                                                    for e in ent["forms"].values())
        ent["tried"], ent["accepted"] = tried, ok_n
        print(f"{fam}: {tried} spellings tried, {ok_n} accepted ({len(ent['forms'])} canonical forms accepted, "
              f"{len(ent['refused_forms'])} refused)", file=sys.stderr)
    print(f"{checked} accepted non-canonical spellings assemble to their canonical cubin", file=sys.stderr)
    return {"ptxas": ptxas_version(ptxas), "ptx_version": PTX_VERSION, "target": TARGET, "seed": SEED,
            "per_form": per_form, "cubins_compared": checked, "errors": errors, "families": fams}


#: every modelled target the per-target table asks (sm_70 through a CUDA 12 ptxas)
TARGETS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120",
           "sm_120a")
TARGETS_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "ptxas", "ptx_targets.json.xz")


def build_targets(ptxas="ptxas", ptxas12=None):
    """ptxas's verdict on every canonical form of the PTX-layer families (this module's and
    :mod:`warpsim.hw.ptxas_ptx_grammar`'s) for every modelled target: {"forms": [[family, form]],
    "targets": {target: {"ptxas": version, "refused": {form index: error index}}}, "errors": [...]}."""
    ptxas12 = ptxas12 or _verdicts.find_ptxas12()
    HDR = base.HEADER
    forms, seen = [], set()
    for fam, op, o, hdr in ([(f, op, o, HDR) for f, op, o in base.canonical_forms()] +
                            [(f, op, o, HEADER) for f, op, o in canonical_forms()]):
        if op not in seen:
            seen.add(op)
            forms.append((fam, op, o, hdr))
    errors: list[str] = []
    out = {"ptxas": ptxas_version(ptxas), "ptxas12": ptxas_version(ptxas12) if ptxas12 else None,
           "forms": [[f, op] for f, op, _, _ in forms], "targets": {}, "errors": errors}
    for target in TARGETS:
        tool = ptxas12 if target in _verdicts.PTXAS12_TARGETS else ptxas
        refused = {}
        for hdr in (HDR, HEADER):
            part = [(i, op, o) for i, (_, op, o, h) in enumerate(forms) if h is hdr]
            v = base.verdicts(tool, [(op, o) for _, op, o in part], header=hdr, target=target)
            refused.update({i: base._index(errors, v[op]) for i, op, _ in part if v[op]})
        out["targets"][target] = {"ptxas": ptxas_version(tool), "refused": refused}
        print(f"{target} (ptxas {ptxas_version(tool)}): {len(forms) - len(refused)} of {len(forms)} forms accepted",
              file=sys.stderr)
    return out


def load(path=DEFAULT_OUT):
    return _verdicts.load(path)


def main(argv=None):
    return _verdicts.verdicts_main(argv, __doc__, build, DEFAULT_OUT, "--per-form", 10)


if __name__ == "__main__":
    sys.exit(main())
