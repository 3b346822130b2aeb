"""Which spellings ptxas accepts, per instruction family and target: the generators of the
verdict tables under ``tests/golden/ptxas/`` that the spelling tests compare warpsim against.

One entry point, one table per subcommand (each module says what it asks; :mod:`.probe` asks):

    python -m warpsim.hw.ptxas_grammar mma [--ptxas ptxas] [--ptxas12 PATH] [--per-opcode 12]   # spellings.json.xz
    python -m warpsim.hw.ptxas_grammar ptx [--ptxas ptxas] [--per-form 12]       # ptx_spellings.json.xz
    python -m warpsim.hw.ptxas_grammar async [--ptxas ptxas] [--per-form 10]     # async_spellings.json.xz
    python -m warpsim.hw.ptxas_grammar targets [--ptxas ptxas] [--ptxas12 PATH]  # ptx_targets.json.xz

- :mod:`.mma`: mma / mma.sp / kind:: / wgmma catalog opcodes, every modelled target;
- :mod:`.ptx`: wmma, ldmatrix / stmatrix / movmatrix, cvt (sm_90a);
- :mod:`.async_forms`: atom / red, mbarrier, bulk copies, cp.async, fences, cluster statements (sm_90a);
- :mod:`.targets`: the canonical forms of the last two on every modelled target.
"""

from __future__ import annotations

import argparse
import importlib

from .probe import PTXAS12_TARGETS, TARGETS, find_ptxas12, load, ptxas_version

__all__ = ["PTXAS12_TARGETS", "TARGETS", "find_ptxas12", "load", "main", "ptxas_version"]

#: subcommand -> (module, its size option and default, whether it asks a CUDA 12 ptxas too)
TABLES = {"mma": ("mma", "--per-opcode", 12, True), "ptx": ("ptx", "--per-form", 12, False),
          "async": ("async_forms", "--per-form", 10, False), "targets": ("targets", None, None, True)}


def main(argv=None):
    """Build one verdict table with ptxas and write it as LZMA'd JSON (to the committed path by default)."""
    from .probe import save

    ap = argparse.ArgumentParser(prog="python -m warpsim.hw.ptxas_grammar", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="table", required=True)
    for name, (mod, per_flag, per_default, ptxas12) in TABLES.items():
        p = sub.add_parser(name, help=importlib.import_module(f"{__name__}.{mod}").__doc__.split("\n")[0])
        p.add_argument("--ptxas", default="ptxas")
        if per_flag:
            p.add_argument(per_flag, dest="per", type=int, default=per_default)
        if ptxas12:
            p.add_argument("--ptxas12", default=None, help="a CUDA 12 ptxas for sm_70 (default: found by find_ptxas12)")
        p.add_argument("--out", default=None, help="where to write the table (default: its committed path)")
    a = ap.parse_args(argv)
    mod, per_flag, _, ptxas12 = TABLES[a.table]
    m = importlib.import_module(f"{__name__}.{mod}")
    kw = ({"ptxas12": a.ptxas12} if ptxas12 else {}) | ({} if per_flag is None else {"per_" + per_flag[6:]: a.per})
    save(m.build(a.ptxas, **kw), a.out or m.DEFAULT_OUT)
    return 0
