"""Which canonical forms of the PTX-layer families ptxas accepts on every modelled target.

The per-target companion of :mod:`.ptx` and :mod:`.async_forms` (which ask sm_90a about seeded
spellings): ptxas's verdict on each of their canonical forms, for every target in
:data:`.probe.TARGETS`.  The table goes to ``tests/golden/ptxas/ptx_targets.json.xz``.

    python -m warpsim.hw.ptxas_grammar targets [--ptxas ptxas] [--ptxas12 PATH]
"""

from __future__ import annotations

import os
import sys

from . import async_forms, probe, ptx
from .probe import PTXAS12_TARGETS, TARGETS, ptxas_version

DEFAULT_OUT = os.path.join(probe.GOLDEN, "ptx_targets.json.xz")


def build(ptxas="ptxas", ptxas12=None):
    """ptxas's verdict on every canonical form of :mod:`.ptx` and :mod:`.async_forms` for every
    modelled target: {"forms": [[family, form]], "targets": {target: {"ptxas": version, "refused":
    {form index: error index}}}, "errors": [...]}."""
    ptxas12 = ptxas12 or probe.find_ptxas12()
    forms, seen = [], set()
    for fam, op, o, hdr in ([(f, op, o, ptx.HEADER) for f, op, o in ptx.canonical_forms()] +
                            [(f, op, o, async_forms.HEADER) for f, op, o in async_forms.canonical_forms()]):
        if op not in seen:
            seen.add(op)
            forms.append((fam, op, o, hdr))
    errors: list[str] = []
    out = {"ptxas": ptxas_version(ptxas), "ptxas12": ptxas_version(ptxas12) if ptxas12 else None,
           "forms": [[f, op] for f, op, _, _ in forms], "targets": {}, "errors": errors}
    for target in TARGETS:
        tool = ptxas12 if target in PTXAS12_TARGETS else ptxas
        refused = {}
        for hdr in (ptx.HEADER, async_forms.HEADER):
            part = [(i, op, o) for i, (_, op, o, h) in enumerate(forms) if h is hdr]
            v = probe.verdicts(tool, target, [(op, probe.statement(op, o)) for _, op, o in part], hdr)
            refused.update({i: probe.error_index(errors, v[op]) for i, op, _ in part if v[op]})
        out["targets"][target] = {"ptxas": ptxas_version(tool), "refused": refused}
        print(f"{target} (ptxas {ptxas_version(tool)}): {len(forms) - len(refused)} of {len(forms)} forms accepted",
              file=sys.stderr)
    return out


def load(path=DEFAULT_OUT):
    return probe.load(path)
