"""Ask ptxas which catalog opcodes each target accepts; write tests/golden/ptxas_archs.json.xz.

For every catalog opcode and every target, one tiny .ptx file (one kernel: load the
operand registers, execute the opcode, store D) is assembled with ``ptxas -arch=<target>``.
The result table records, per target, the ptxas version used and every opcode it rejected
with ptxas's own reason; ``tests/test_archs.py`` checks that the catalog's per-architecture
derivation (``warpsim.isa.archs``) gives exactly the accepted set.

    python warpsim/hw/offline/ptxas_archs.py [--ptxas12 PATH] [--out tests/golden/ptxas_archs.json.xz]

ptxas 13 (on PATH) no longer targets sm_70: give the CUDA 12 ptxas for it (the
``nvidia-cuda-nvcc-cu12`` wheel ships one: ``pip install --target DIR nvidia-cuda-nvcc-cu12``,
then ``DIR/nvidia/cuda_nvcc/bin/ptxas``).  ``--sass`` also prints the tensor-core SASS
instructions of one opcode per row and target (needs cuobjdump and nvdisasm on PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from warpsim.isa.catalog import CATALOG  # noqa: E402

from warpsim.hw.ptxcheck import assemble as _assemble, error_reason, ptx_module  # noqa: E402

#: targets asked; the ``a`` forms are asked too, to record that none needs the suffix
TARGETS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103a", "sm_110a",
           "sm_120", "sm_120a", "sm_121a")


def assemble(ptxas: str, ins, target: str, workdir: str):
    """(accepted, ptxas's first error message, cubin path or None) for one opcode on one target."""
    rc, errs, cubin = _assemble(ptxas, ptx_module([ins], target), target, workdir, f"{target}_{CATALOG.index(ins)}")
    return rc == 0, error_reason(errs[0]) if errs else "", cubin


def ptxas_version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


def table(ptxas13: str, ptxas12: str | None, jobs: int = 2) -> dict:
    work = tempfile.mkdtemp(prefix="ptxas_archs_")
    pick = {t: (ptxas12 if t == "sm_70" else ptxas13) for t in TARGETS}
    pick = {t: p for t, p in pick.items() if p}
    todo = [(t, ins) for t in pick for ins in CATALOG]
    with ThreadPoolExecutor(jobs) as ex:
        res = list(ex.map(lambda j: assemble(pick[j[0]], j[1], j[0], work), todo))
    from warpsim.hw.ptxcheck import PTX_VERSION

    out = {"catalog_opcodes": len(CATALOG), "ptx_version": PTX_VERSION, "targets": {}}
    for t, p in pick.items():
        out["targets"][t] = {"ptxas": ptxas_version(p), "rejected": {}}
    for (t, ins), (ok, reason, _) in zip(todo, res):
        if not ok:
            out["targets"][t]["rejected"][ins.opcode] = reason
    return out


def sass_summary(ptxas13: str):
    """One opcode per catalog row: the tensor-core / float SASS ptxas emits per target."""
    work = tempfile.mkdtemp(prefix="ptxas_sass_")
    seen = {}
    for ins in CATALOG:
        seen.setdefault((ins.family, ins.shape, ins.sparse, ins.dtype, ins.satfinite, ins.bitop), ins)
    for ins in seen.values():
        print(ins.opcode)
        for t in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"):
            ok, _, cubin = assemble(ptxas13, ins, t, work)
            if not ok:
                continue
            sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
            ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass)
            keep = [o for o in ops if re.match(r"(HMMA|IMMA|DMMA|BMMA|QMMA|FFMA|FMUL|FADD|HADD2|F2FP|IADD3)", o)]
            counts = {}
            for o in keep:
                counts[o] = counts.get(o, 0) + 1
            print(f"    {t:7s}", " ".join(f"{o}x{n}" if n > 1 else o for o, n in counts.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptxas", default="ptxas", help="ptxas 13 (sm_75 and later)")
    ap.add_argument("--ptxas12", help="a CUDA 12 ptxas, for sm_70")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                  "golden", "ptxas_archs.json.xz"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sass", action="store_true", help="print the SASS summary instead of writing the table")
    a = ap.parse_args(argv)
    if a.sass:
        sass_summary(a.ptxas)
        return 0
    t = table(a.ptxas, a.ptxas12, a.jobs)
    import lzma

    with (lzma.open(a.out, "wt", preset=9) if a.out.endswith(".xz") else open(a.out, "w")) as f:
        json.dump(t, f, indent=1, sort_keys=True)
        f.write("\n")
    for name, row in t["targets"].items():
        print(f"{name:8s} ptxas {row['ptxas']}: {t['catalog_opcodes'] - len(row['rejected'])} of "
              f"{t['catalog_opcodes']} accepted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
