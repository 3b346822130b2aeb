"""Which spellings of the atomic, mbarrier, bulk-copy and cluster statements ptxas accepts.

The sibling of :mod:`warpsim.hw.ptxas_grammar.ptx` for the rows added with the Hopper kernel
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

    python -m warpsim.hw.ptxas_grammar async [--ptxas ptxas] [--out tests/golden/ptxas/async_spellings.json.xz]
"""

from __future__ import annotations

import itertools
import os

from . import probe, ptx
from .probe import ptxas_version

TARGET = ptx.TARGET
PTX_VERSION = ptx.PTX_VERSION
SEED = 2425
DEFAULT_OUT = os.path.join(probe.GOLDEN, "async_spellings.json.xz")
HEADER = probe.kernel_header(*ptx.REGISTERS, ".reg .pred %p<4>;", ".shared .align 8 .b64 mbar[4];")

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
    return out + _group_forms("cp.async.bulk", ("commit_group", ""), ("wait_group", "1"), ("wait_group.read", "0"))


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
    return out + _group_forms("cp.async", ("commit_group", ""), ("wait_group", "1"), ("wait_all", ""))


def _group_forms(family, *ops):
    """The commit / wait statements of an asynchronous-copy family: (suffix, operand text) each."""
    return [(family, f"{family}.{op}", o) for op, o in ops]


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


def _bag(spelling):
    """What a spelling means if ptxas reads its qualifiers as a bag: head, qualifier set, space order."""
    head, q = head_and_qualifiers(spelling)
    return head, frozenset(q), tuple(t for t in q if t in SPACES)


def _space(tok):
    return "space" if tok in SPACES else None


def _pick(q, rng):
    """The mutation to try: those that need two qualifiers (or one) fall back to a repeat or a foreign one."""
    how = rng.randrange(6)
    if how in (0, 1, 3, 4) and len(q) < 2:
        how = rng.choice((2, 5))
    return 5 if how == 2 and not q else how


def _dropped(t, rng):                                   # one qualifier missing
    t.pop(rng.randrange(len(t)))
    return t


def candidates(op, rng, per_form, vocab=(), others=frozenset()):
    """``op`` and seeded mutations of its qualifiers, leaving out those that spell another form
    (``others``: their bags) or add a qualifier of the family's own ``vocab``."""
    head, q = head_and_qualifiers(op)

    def foreign(t, rng):                                # a qualifier foreign to the form
        return probe.inserted(t, rng, [x for x in _FOREIGN if x not in q and x not in vocab])

    mutations = (probe.shuffled, probe.moved, probe.repeated, _dropped, probe.swapped, foreign)
    return probe.spellings(head, q, rng, per_form, 8 * per_form, mutations, reorder=(0, 1, 4), classify=_space,
                           pick=_pick, accept=lambda sp: _bag(sp) not in others or _bag(sp) == _bag(op))


def build(ptxas="ptxas", per_form=10, cubin_sample=600):
    """The verdict table, per family (as :func:`warpsim.hw.ptxas_grammar.ptx.build`); a form is its
    spelling, the operands are part of the generator (one operand list per spelling)."""
    by_sp = {}
    for fam, op, o in canonical_forms():
        by_sp.setdefault(op, (fam, o))                  # cp.async: the first operand list is the form's
    uniq = [(fam, op, o) for op, (fam, o) in by_sp.items()]
    vocab, bags = {}, {_bag(op) for _, op, _ in uniq}
    for _, op, _ in uniq:
        h, q = head_and_qualifiers(op)
        vocab.setdefault(h, set()).update(q)

    def spelt_of(fam, op, rng):
        return candidates(op, rng, per_form, vocab[head_and_qualifiers(op)[0]], bags)

    t = probe.family_table(ptxas, uniq, spelt_of, HEADER, TARGET, SEED, per_form, cubin_sample, once=True)
    return {"ptxas": ptxas_version(ptxas), "ptx_version": PTX_VERSION, "target": TARGET, "seed": SEED,
            "per_form": per_form, **t}


def load(path=DEFAULT_OUT):
    return probe.load(path)
