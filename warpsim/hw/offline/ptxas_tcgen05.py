"""Ask ptxas which ``tcgen05.mma`` spellings and operand forms sm_100a accepts; write the acceptance table.

The qualifiers of ``tcgen05.mma`` (``.ws``, ``.sp``, ``.cta_group::N``, ``.kind::K``,
``.block_scale`` with its vector size, ``.ashift``, the collector-usage hints) are combined
exhaustively, each spelling with every operand form the PTX ISA names (A from a descriptor or
from tensor memory; with or without disable-output-lane, scale-input-d, zero-column-mask).
Many candidates go into one kernel, one statement per line; ptxas names the line of every
statement it refuses, those lines are dropped and the rest assembled again until ptxas accepts
the file, so every verdict is ptxas's own.  Element types, M and N live in the runtime
instruction descriptor, which ptxas cannot check (``warpsim.isa.tcgen05`` models them).

    python warpsim/hw/offline/ptxas_tcgen05.py [--arch sm_100a] [--out tests/golden/ptxas/tcgen05_sm100a.json.xz]

The table (xz-compressed JSON): ptxas version, PTX ISA version, the arch, and per accepted
spelling the sorted list of accepted operand-form names; ``tests/test_tcgen05.py`` checks that
``warpsim.isa.catalog.TCGEN05_CATALOG`` holds exactly these spellings and forms.
"""

from __future__ import annotations

import argparse
import itertools
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

KINDS = ("f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
BLOCK_SCALE = (None, "block_scale", "block_scale.scale_vec::1X", "block_scale.scale_vec::2X",
               "block_scale.scale_vec::4X", "block_scale.block16", "block_scale.block32")
COLLECTOR_OPS = ("fill", "use", "lastuse", "discard")
COLLECTORS_A = tuple(f"collector::a::{op}" for op in COLLECTOR_OPS)
COLLECTORS_B = tuple(f"collector::b{i}::{op}" for i in range(4) for op in COLLECTOR_OPS)


def spelling(ws, sp, cta, kind, bs, ashift=False, collector=None) -> str:
    parts = ["tcgen05", "mma"] + (["ws"] if ws else []) + (["sp"] if sp else []) + [f"cta_group::{cta}", f"kind::{kind}"]
    parts += [bs] if bs else []
    parts += ["ashift"] if ashift else []
    parts += [collector] if collector else []
    return ".".join(parts)


def operand_forms(ws, sp, cta, blockscaled):
    """(form name, operand text) for every operand list the PTX ISA writes for such a spelling."""
    meta = ", [r6]" if sp else ""
    dol = "{" + ",".join(f"r{8 + i}" for i in range(4 * cta)) + "}"
    out = []
    for a_name, a in (("adesc", "rd1"), ("atmem", "[r5]")):
        head = f"[r1], {a}, rd2{meta}, r2"
        if ws:
            out.append((f"{a_name}", f"{head}, p1"))
            out.append((f"{a_name}+zcm", f"{head}, p1, rd3"))
        elif blockscaled:
            out.append((f"{a_name}+sf", f"{head}, [r3], [r4], p1"))
            out.append((f"{a_name}+sf+dol", f"{head}, [r3], [r4], {dol}, p1"))
        else:
            out.append((f"{a_name}", f"{head}, p1"))
            out.append((f"{a_name}+dol", f"{head}, {dol}, p1"))
            out.append((f"{a_name}+sid", f"{head}, p1, 3"))
            out.append((f"{a_name}+dol+sid", f"{head}, {dol}, p1, 3"))
    return out


HEADER = """.version {ptx}
.target {arch}
.address_size 64
.visible .entry k(.param .u64 p){{
 .reg .b32 r<24>; .reg .b64 rd<4>; .reg .pred p<2>;
 ld.param.u64 rd1, [p];
 setp.ne.b32 p1, r1, 0;
"""
_LINE = re.compile(r"line (\d+);")


def verdicts(candidates, arch, ptx, ptxas="ptxas", batch=400):
    """Set of indices of ``candidates`` (statement strings) ptxas accepts, by iterated elimination."""
    accepted = set()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.ptx")
        for lo in range(0, len(candidates), batch):
            live = list(range(lo, min(lo + batch, len(candidates))))
            while live:
                head = HEADER.format(ptx=ptx, arch=arch)
                first = head.count("\n") + 1
                body = "".join(f" {candidates[i]};\n" for i in live)
                with open(path, "w") as f:
                    f.write(head + body + " ret;\n}\n")
                r = subprocess.run([ptxas, f"-arch={arch}", path, "-o", os.path.join(tmp, "t.cubin")],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    accepted.update(live)
                    break
                bad = {int(m) - first for m in _LINE.findall(r.stderr + r.stdout)}
                bad = {b for b in bad if 0 <= b < len(live)}
                if not bad:   # a whole-kernel refusal: decide these candidates one per kernel
                    if len(live) == 1:
                        break
                    single = verdicts([candidates[i] for i in live], arch, ptx, ptxas, batch=1)
                    accepted.update(live[j] for j in single)
                    break
                live = [i for j, i in enumerate(live) if j not in bad]
    return accepted


def _by_cta(cands, keys, cta_of, arch, ptx, ptxas):
    """verdicts() per cta_group: one kernel may not mix cta_group::1 and ::2."""
    ok = set()
    for cta in (1, 2):
        idx = [i for i in range(len(cands)) if cta_of(keys[i]) == cta]
        ok.update(idx[j] for j in verdicts([cands[i] for i in idx], arch, ptx, ptxas))
    return ok


def probe(arch="sm_100a", ptx="8.8", ptxas="ptxas"):
    # phase 1: every base spelling with every operand form
    cands, keys = [], []
    for ws, sp, cta, kind, bs in itertools.product((0, 1), (0, 1), (1, 2), KINDS, BLOCK_SCALE):
        op = spelling(ws, sp, cta, kind, bs)
        for form, text in operand_forms(ws, sp, cta, bs is not None):
            cands.append(f"{op} {text}")
            keys.append(((ws, sp, cta, kind, bs), form))
    ok = _by_cta(cands, keys, lambda k: k[0][2], arch, ptx, ptxas)
    base = {}
    for i in sorted(ok):
        base.setdefault(keys[i][0], set()).add(keys[i][1])
    # phase 2: .ashift and collector-usage hints on every accepted base spelling, with its forms
    cands, keys = [], []
    for (ws, sp, cta, kind, bs), forms in base.items():
        for ashift, coll in itertools.product((False, True), (None,) + COLLECTORS_A + COLLECTORS_B):
            if not ashift and coll is None:
                continue
            op = spelling(ws, sp, cta, kind, bs, ashift, coll)
            for form, text in operand_forms(ws, sp, cta, bs is not None):
                if form in forms or form.replace("adesc", "atmem") in forms:
                    cands.append(f"{op} {text}")
                    keys.append((op, form))
    ok2 = _by_cta(cands, keys, lambda k: 2 if 'cta_group::2' in k[0] else 1, arch, ptx, ptxas)
    table = {spelling(*k): sorted(v) for k, v in base.items()}
    for i in sorted(ok2):
        table.setdefault(keys[i][0], [])
        if keys[i][1] not in table[keys[i][0]]:
            table[keys[i][0]] = sorted(table[keys[i][0]] + [keys[i][1]])
    return dict(sorted(table.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_100a")
    ap.add_argument("--ptx", default="8.8", help="PTX ISA version of the probe kernels")
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--out", default="tests/golden/ptxas/tcgen05_sm100a.json.xz")
    args = ap.parse_args(argv)
    version = subprocess.run([args.ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    table = probe(args.arch, args.ptx, args.ptxas)
    doc = {"ptxas": version, "ptx_version": args.ptx, "arch": args.arch,
           "note": "accepted tcgen05.mma spellings -> accepted operand forms (warpsim/hw/offline/ptxas_tcgen05.py)",
           "accepted": table}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with lzma.open(args.out, "wt", preset=9) as f:
        json.dump(doc, f, indent=0, sort_keys=True)
    print(f"{len(table)} spellings accepted for {args.arch}; wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
