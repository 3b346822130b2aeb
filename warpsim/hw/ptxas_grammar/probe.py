"""The machinery every ptxas verdict table shares: a kernel around candidate statements, ptxas's
verdict per line, twin-cubin checks, seeded qualifier mutations, the per-family table, the CLI.

Each table module (:mod:`.mma`, :mod:`.ptx`, :mod:`.async_forms`) says only what to ask about
(its canonical forms, operands and how a spelling of them may be mutated); asking is here.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "golden", "ptxas")
#: every modelled target (sm_70 through a CUDA 12 ptxas)
TARGETS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120",
           "sm_120a")
#: targets ptxas 13 no longer assembles: a CUDA 12 ptxas answers for them
PTXAS12_TARGETS = ("sm_70",)

_PROLOGUE = """.version {{version}}
.target {{target}}
.address_size 64
.visible .entry {{name}}(.param .u64 P)
{{{{
{decls}  ld.param.u64 %rd0, [P];
  ld.global.u64 %rd1, [%rd0];
  ld.global.b32 %r299, [%rd0+8];
"""


def kernel_header(*decls: str) -> str:
    """The kernel every probe's statements stand in: ``decls`` (register / shared declarations),
    then the loads that give %rd0 (the parameter), %rd1 (an address) and %r299 (a value)."""
    return _PROLOGUE.format(decls="".join(f"  {d}\n" for d in decls))


def assemble(ptxas, target, lines, header, name="k0"):
    """(returncode, {line index: [errors]}, cubin bytes or None) for one kernel holding ``lines``."""
    from ..ptxcheck import ptx_version

    hdr = header.format(version=ptx_version(target), target=target, name=name)
    first = hdr.count("\n") + 1
    text = hdr + "\n".join("  " + s for s in lines) + "\n  ret;\n}\n"
    with tempfile.TemporaryDirectory(prefix="warpsim_grammar_") as d:
        src, cub = os.path.join(d, "a.ptx"), os.path.join(d, "a.cubin")
        with open(src, "w") as f:
            f.write(text)
        # -O0: acceptance does not depend on optimisation, and wgmma codegen at -O3 takes minutes
        r = subprocess.run([ptxas, f"-arch={target}", "-O0", src, "-o", cub], capture_output=True, text=True,
                           timeout=600)
        blob = open(cub, "rb").read() if r.returncode == 0 else None
    bad = {}
    for ln in r.stderr.splitlines():
        m = re.search(r", line (\d+); error\s*:\s*(.*)", ln)
        if m:
            bad.setdefault(int(m.group(1)) - first, []).append(m.group(2).strip())
    if r.returncode != 0 and not bad:
        raise RuntimeError(f"ptxas failed without a line number: {r.stderr[-400:]}")
    return r.returncode, bad, blob


_UNPLACED = re.compile(r"(Unknown symbol|Call to) '__cuda")


def verdicts(ptxas, target, items, header, chunk=1000):
    """{key: first ptxas error or ''} for (key, statement line) items on ``target``."""
    out = {}
    for s in range(0, len(items), chunk):
        part = items[s:s + chunk]
        lines = [line for _, line in part]
        _, bad, _ = assemble(ptxas, target, lines, header)
        for i, (key, _) in enumerate(part):
            out[key] = bad[i][0] if i in bad else ""
        ok = [i for i in range(len(part)) if i not in bad]
        while ok:                                       # the accepted lines alone must assemble cleanly
            rc, bad2, _ = assemble(ptxas, target, [lines[i] for i in ok], header)
            if rc == 0:
                break
            if all(_UNPLACED.match(e) for errs in bad2.values() for e in errs):
                # a missing-library-symbol error lands on some line of the file, not always its own:
                # assemble each remaining line alone
                for i in ok:
                    _, alone, _ = assemble(ptxas, target, lines[i:i + 1], header)
                    out[part[i][0]] = alone[0][0] if alone else ""
                break
            for j in bad2:
                out[part[ok[j]][0]] = bad2[j][0]
            ok = [i for j, i in enumerate(ok) if j not in bad2]
    return out


def same_cubins(ptxas, target, twins, header, chunk=200):
    """Assemble (canonical line, spelt line) twins in two files; raise naming the pair whose cubins
    differ (that spelling would mean another instruction than its canonical one); count the twins."""
    for s in range(0, len(twins), chunk):
        part = twins[s:s + chunk]
        _, _, a = assemble(ptxas, target, [c for c, _ in part], header)
        _, _, b = assemble(ptxas, target, [sp for _, sp in part], header)
        if a is None or b is None or hashlib.sha256(a).digest() != hashlib.sha256(b).digest():
            if len(part) > 1:                           # find the pair(s) that differ
                for t in part:
                    same_cubins(ptxas, target, [t], header, 1)
            raise RuntimeError(f"{part[0][1]!r} does not assemble like {part[0][0]!r}" if len(part) == 1 else
                               f"spellings {part[0][1]} .. {part[-1][1]}: only together do they differ")
    return len(twins)


def ptxas_version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def find_ptxas12() -> str | None:
    """A CUDA 12 ptxas (the only kind that still targets sm_70): ``WARPSIM_PTXAS12``, the
    ``nvidia-cuda-nvcc-cu12`` wheel's, Triton 3.x's bundled one, or ``ptxas`` on PATH if it is 12.x."""
    import glob
    import shutil

    cands = [os.environ.get("WARPSIM_PTXAS12", "")]
    for p in sys.path:
        cands += glob.glob(os.path.join(p or ".", "nvidia", "cuda_nvcc", "bin", "ptxas"))
        cands += glob.glob(os.path.join(p or ".", "triton", "backends", "nvidia", "bin", "ptxas"))
    cands.append(shutil.which("ptxas") or "")
    for c in cands:
        if c and os.path.exists(c) and ptxas_version(c).startswith("12."):
            return c
    return None


# ---- seeded qualifier mutations -------------------------------------------------------------------
# Each takes the qualifier list (a fresh copy) and the generator, and returns the mutated list, or
# None where the mutation does not apply; a table module lists the ones it draws from.

def shuffled(t, rng):
    """Any order."""
    rng.shuffle(t)
    return t


def moved(t, rng):
    """One qualifier moved."""
    t.insert(rng.randrange(len(t)), t.pop(rng.randrange(len(t))))
    return t


def repeated(t, rng):
    """One qualifier twice."""
    t.insert(rng.randrange(len(t) + 1), rng.choice(t))
    return t


def swapped(t, rng):
    """Two neighbours swapped."""
    if len(t) < 2:
        return None
    i = rng.randrange(len(t) - 1)
    t[i], t[i + 1] = t[i + 1], t[i]
    return t


def inserted(t, rng, choices):
    """One of ``choices`` put anywhere."""
    t.insert(rng.randrange(len(t) + 1), rng.choice(choices))
    return t


def keep_order(t, original, classify):
    """``t`` with each class's qualifiers (``classify``: qualifier -> class or None; the classes whose
    order among themselves is meaning) put back in their ``original`` order, on the same positions."""
    out = list(t)
    for cls in {classify(x) for x in original} - {None}:
        seq = [x for x in original if classify(x) == cls]
        pos = [i for i, x in enumerate(out) if classify(x) == cls]
        if len(seq) == len(pos):
            for i, x in zip(pos, seq):
                out[i] = x
    return out


def spellings(head, q, rng, per_form, tries, mutations, reorder, classify, pick=None, accept=None):
    """The spelling ``head.q`` and up to ``per_form - 1`` seeded mutations of it: each try draws
    one of ``mutations`` (``pick(q, rng)``: its index; default uniform), keeps the order of the
    ordered classes for the indices in ``reorder``, and keeps the result if ``accept`` (default: all)."""
    out = {".".join([head] + q)}
    n = 0
    while len(out) < per_form and n < tries:
        n += 1
        how = pick(q, rng) if pick else rng.randrange(len(mutations))
        t = mutations[how](list(q), rng)
        if t is None:
            continue
        if how in reorder:
            t = keep_order(t, q, classify)
        sp = ".".join([head] + t)
        if accept is None or accept(sp):
            out.add(sp)
    return sorted(out)


def error_index(errors, msg):
    """The index of ``msg`` in the table's list of distinct ptxas errors (appended if new)."""
    if msg not in errors:
        errors.append(msg)
    return errors.index(msg)


# ---- the per-family table (the PTX-layer probes) --------------------------------------------------

def statement(spelling, operands):
    return f"{spelling} {operands};"


def family_table(ptxas, forms, spelt_of, header, target, seed, per_form, cubin_sample=600, once=False):
    """Ask ptxas about (family, canonical spelling, operands) ``forms`` and, for each it accepts,
    ``spelt_of(family, form, rng)``'s spellings; ``once``: a spelling is asked under the first form
    that spells it.  Returns {"errors": [...], "families": {family: {"forms": {form: {"ok": [...],
    "no": {spelling: error index}}}, "refused_forms": {form: error index}, "tried", "accepted"}},
    "cubins_compared": n}; a sample of accepted spellings must assemble to their form's cubin."""
    import random

    canon = verdicts(ptxas, target, [(op, statement(op, o)) for _, op, o in forms], header)
    rng = random.Random(seed)
    spelt, seen = [], {op for _, op, _ in forms}
    for fam, op, o in forms:
        if not canon[op]:
            for sp in spelt_of(fam, op, rng):
                if sp != op and not (once and sp in seen):
                    seen.add(sp)
                    spelt.append((fam, op, sp, o))
    v = verdicts(ptxas, target, [(sp, statement(sp, o)) for _, _, sp, o in spelt], header)
    ok = [(statement(op, o), statement(sp, o)) for _, op, sp, o in spelt if not v[sp]]
    checked = same_cubins(ptxas, target, random.Random(seed).sample(ok, min(cubin_sample, len(ok))), header)
    errors: list[str] = []
    index = lambda msg: error_index(errors, msg)  # noqa: E731
    fams: dict = {}
    for fam, op, _ in forms:
        ent = fams.setdefault(fam, {"forms": {}, "refused_forms": {}})
        if canon[op]:
            ent["refused_forms"][op] = index(canon[op])
        else:
            ent["forms"][op] = {"ok": [], "no": {}}
    for fam, op, sp, _ in spelt:
        ent = fams[fam]["forms"][op]
        if v[sp]:
            ent["no"][sp] = index(v[sp])
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
    return {"errors": errors, "families": fams, "cubins_compared": checked}


def load(path: str) -> dict:
    with lzma.open(path, "rt") as f:
        return json.load(f)


def save(table: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with lzma.open(path, "wt", preset=9) as f:
        json.dump(table, f, sort_keys=True, separators=(",", ":"))
