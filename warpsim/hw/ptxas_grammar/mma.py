"""Which spellings of the catalog's opcodes ptxas accepts: generate candidates, ask ptxas, store verdicts.

ptxas reads the qualifiers after an MMA's name as a bag: ``.sync``/``.aligned``/the shape/
``.satfinite``/``.sp`` may stand anywhere, only the layouts and the types keep their order
among themselves.  The canonical catalog opcode is one spelling of many; a kernel written
another way must replay too.  This module writes candidate spellings of every catalog opcode
(random permutations, single moves, duplicated, dropped and inserted qualifiers; seeded, so
the set is reproducible), assembles thousands per ptxas call (one statement per line; ptxas
reports errors by line), and stores the verdicts in ``tests/golden/ptxas/spellings.json.xz``.
Per target it also records ptxas's verdict on every canonical catalog opcode (``refused``: the
mma / wgmma opcodes the target lacks) and on the catalog's one-step neighbours (another D/C
type, the other sparse forms, any layout, ``.satfinite``, no ``.kind``, fp6/fp4 without
``.kind``: ``neighbours``), so an opcode the catalog misses shows up as accepted there.
Each accepted line is re-assembled in an all-accepted file (so a check ptxas makes only after
parsing cannot hide), and a sample of accepted spellings is assembled next to the canonical
opcodes: identical cubins prove the spelling means the canonical instruction.

    python -m warpsim.hw.ptxas_grammar mma [--ptxas ptxas] [--ptxas12 PATH] [--out tests/golden/ptxas/spellings.json.xz]
"""


from __future__ import annotations

import os
import random
import sys

from ...isa.catalog import CATALOG, WGMMA_CATALOG, WGMMA_SP_CATALOG
from ...isa.parse import _qualifier_class
from ..ptxcheck import PTX_VERSION, PTX_VERSION_FOR
from . import probe
from .probe import PTXAS12_TARGETS, find_ptxas12, ptxas_version

#: ptxas targets whose spellings are asked, per instruction class (the a-suffixed targets enable
#: wgmma / kind::); every target is also asked about every canonical opcode and the neighbours
TARGETS = {"mma": probe.TARGETS, "wgmma": ("sm_90a",)}
DEFAULT_OUT = os.path.join(probe.GOLDEN, "spellings.json.xz")
SEED = 24
HEADER = probe.kernel_header(".reg .b32 %r<300>;", ".reg .f64 %fd<300>;", ".reg .b64 %rd<4>;",
                             ".reg .pred %p<2>;") + "  setp.ne.b32 %p0, %r299, 0;\n"


def base_and_qualifiers(opcode: str) -> tuple[str, list[str]]:
    """``wgmma.mma_async.sync...`` -> (``wgmma.mma_async``, [``sync``, ...]); mma likewise with ``mma``."""
    head = "wgmma.mma_async" if opcode.startswith("wgmma.mma_async") else opcode.split(".")[0]
    return head, opcode[len(head) + 1:].split(".")


def operands(ins) -> str:
    """Operand text that ptxas accepts for ``ins`` (registers loaded from nowhere: verdicts only)."""
    def group(n, wide=False):
        return "{" + ", ".join(f"%fd{i}" if wide else f"%r{i}" for i in range(n)) + "}"
    if ins.is_wgmma:
        d = group(ins.words("d"))
        sp = ", %r298, 0" if ins.is_sparse else ""
        imms = (", 1, 1" if ins.imm_scale else "") + (", 0, 0" if ins.imm_trans else "")
        return f"{d}, %rd1, %rd1{sp}, %p0{imms}"
    ops = [group(ins.registers(r), ins.elem(r).bits == 64) for r in "dabc"]
    tail = ", %r298, 0" if ins.is_sparse else ""
    if ins.block_scaled:
        tail += ", %r298, {0, 0}, %r298, {0, 0}"
    return ", ".join(ops) + tail


def statement(ins, spelling: str) -> str:
    """One line: the instruction spelt ``spelling``, then a store that keeps its D alive."""
    wide = not ins.is_wgmma and ins.elem("d").bits == 64
    store = "st.global.f64 [%rd0], %fd0;" if wide else "st.global.b32 [%rd0], %r0;"
    return f"{spelling} {operands(ins)}; {store}"



def _required(ins, tok: str) -> bool:
    """Qualifiers whose removal leaves no spelling of ``ins`` (dropping .satfinite/.sp/.kind names another opcode)."""
    return tok not in ("satfinite", "sp", "sp::ordered_metadata") and not tok.startswith(("kind::", "scale_vec::"))


def _ordered_class(tok: str):
    """Qualifiers whose order among themselves is meaning (A before B layout; D, A, B, C types; op before popc)."""
    cls = _qualifier_class(tok, "mma")
    return cls if cls in ("layout", "type", "op") else None


def candidates(ins, rng: random.Random, per_opcode: int = 12) -> list[str]:
    """The canonical opcode and spellings of it, each either meaning ``ins`` or nothing at all."""
    head, q = base_and_qualifiers(ins.opcode)

    def dropped(t, rng):                              # one required qualifier missing
        t.pop(rng.choice([i for i, x in enumerate(t) if _required(ins, x)]))
        return t

    def layouts_more(t, rng):                         # a layout more (wgmma: ptxas ignores layouts)
        for _ in range(rng.randrange(1, 3)):
            probe.inserted(t, rng, ("row", "col"))
        return t

    def moved_and_more(t, rng):                       # moved, then a .sync / .satfinite more
        probe.inserted(probe.moved(t, rng), rng, ("sync", "satfinite", "aligned"))
        return None if "satfinite" not in q and t.count("satfinite") else t   # would name the .satfinite opcode

    mutations = (probe.shuffled, probe.moved, probe.repeated, dropped, layouts_more, probe.swapped, moved_and_more)
    return probe.spellings(head, q, rng, per_opcode, 4 * per_opcode, mutations, reorder=(0, 1, 2, 3, 5, 6),
                           classify=_ordered_class)


def verdicts(ptxas: str, target: str, pairs, chunk: int = 1000):
    """{spelling: first ptxas error or ""} for (instruction, spelling) pairs on ``target``."""
    return probe.verdicts(ptxas, target, [(sp, statement(ins, sp)) for ins, sp in pairs], HEADER, chunk)


def same_cubins(ptxas: str, target: str, pairs, chunk: int = 200) -> int:
    """Assemble accepted spellings and their canonical opcodes in twin files; count the pairs checked.

    Raises if the cubins differ: that spelling would mean another instruction than its canonical one."""
    twins = [(statement(ins, ins.opcode), statement(ins, sp)) for ins, sp in pairs]
    return probe.same_cubins(ptxas, target, twins, HEADER, chunk)


def neighbours() -> dict:
    """{opcode: Instruction-like entry} of one-step variants of the catalog's mma rows that are not
    catalog opcodes (another D/C type pair, the other sparse forms, any layout, .satfinite, no
    ``.kind``, the fp6/fp4 types on a legacy fp8 row); operand counts follow from the variant."""
    import dataclasses
    import itertools

    from ...isa import catalog as cat

    floats = ("f16", "f32")

    def variants(row):
        rep = dataclasses.replace
        if all(x in floats for dc in row.dc for x in dc):
            yield rep(row, dc=tuple(itertools.product(floats, repeat=2)))
        yield rep(row, layouts=cat.ANY_LAYOUT)
        yield rep(row, satfinite=cat.ANY_SAT)
        yield rep(row, selectors=0, forms=None) if row.selectors else rep(row, selectors=1, forms=None)
        if row.kind and not row.scales:
            yield rep(row, kind=None, container=0)
        if row.family == "fp8":
            yield rep(row, ab=cat._mix(cat.F8F6F4))

    known = {ins.opcode for ins in CATALOG}
    out = {}
    for row in cat.ROWS:
        for v in variants(row):
            for ins in cat._expand((v,)):
                whole = all(ins.registers(r) > 0 and ins.elements_per_lane(r) * ins.elem(r).bits % 32 == 0
                            for r in "abcd")
                if ins.opcode not in known and whole:
                    out.setdefault(ins.opcode, ins)
    return out


def build(ptxas: str = "ptxas", per_opcode: int = 12, cubin_sample: int = 600, ptxas12: str | None = None) -> dict:
    """The verdict table: per target, per canonical opcode, the accepted and the refused spellings;
    the canonical catalog opcodes the target refuses; the neighbours' verdicts."""
    rng = random.Random(SEED)
    every = list(CATALOG) + list(WGMMA_CATALOG) + list(WGMMA_SP_CATALOG)
    cands = {ins.opcode: candidates(ins, rng, per_opcode) for ins in every}
    near = neighbours()
    ptxas12 = ptxas12 or find_ptxas12()
    table = {"ptxas": ptxas_version(ptxas), "ptxas12": ptxas_version(ptxas12), "ptx_version": PTX_VERSION,
             "ptx_version_for": PTX_VERSION_FOR, "seed": SEED, "targets": {}}
    for target in sorted({t for ts in TARGETS.values() for t in ts}):
        tool = ptxas12 if target in PTXAS12_TARGETS else ptxas
        if tool is None:
            raise RuntimeError(f"{target} needs a CUDA 12 ptxas (ptxas 13 dropped it): pass --ptxas12 or set "
                               "WARPSIM_PTXAS12 (pip install --target DIR nvidia-cuda-nvcc-cu12)")
        canon = verdicts(tool, target, [(ins, ins.opcode) for ins in every])
        refused = {op: why for op, why in canon.items() if why}
        nv = verdicts(tool, target, [(ins, op) for op, ins in near.items()])
        rows = [ins for ins in every if target in TARGETS[ins.iclass] and not refused.get(ins.opcode)]
        pairs = [(ins, sp) for ins in rows for sp in cands[ins.opcode]]
        v = verdicts(tool, target, pairs)
        ok = [(ins, sp) for ins, sp in pairs if not v[sp] and sp != ins.opcode]
        checked = same_cubins(tool, target, random.Random(SEED).sample(ok, min(cubin_sample, len(ok))))
        per = {}
        for ins, sp in pairs:
            ent = per.setdefault(ins.opcode, {"ok": [], "no": {}})
            if v[sp]:
                ent["no"][sp] = v[sp]
            else:
                ent["ok"].append(sp)
        table["targets"][target] = {"opcodes": per, "candidates": len(pairs), "cubins_compared": checked,
                                    "ptxas": ptxas_version(tool), "refused": refused,
                                    "neighbours": {"ok": sorted(op for op, why in nv.items() if not why),
                                                   "no": {op: why for op, why in nv.items() if why}}}
        print(f"{target} (ptxas {ptxas_version(tool)}): {len(every) - len(refused)} of {len(every)} catalog opcodes, "
              f"{len(pairs)} spellings, {sum(len(e['ok']) for e in per.values())} accepted, {checked} accepted "
              f"non-canonical spellings assemble to the canonical cubin; {sum(not w for w in nv.values())}"
              f" of {len(near)} neighbours accepted", file=sys.stderr)
    return table


def load(path: str = DEFAULT_OUT) -> dict:
    return probe.load(path)
