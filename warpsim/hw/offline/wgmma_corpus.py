"""Build tests/golden/wgmma_sm90a.npz from a wgmma capture (warpsim/hw/wgmma_cases.py + warpsim/hw/device/wgmma.py).

    python3 warpsim/hw/offline/wgmma_corpus.py CAPDIR OUT.npz PURPOSE[,PURPOSE...]

Keeps the launches of the given purposes (coverage: every dense opcode, register and
descriptor A; numerics; scale; trans; probe), at most ``CAPS[purpose]`` groups of each; the manifest (JSON, key ``manifest``) lists per entry
the spec (opcode|A source|scale-a|scale-b|trans-a|trans-b), purpose, per-group
distribution and shared-memory layouts, and the GPU it was captured on.
"""

import json
import os
import sys

import numpy as np

from warpsim.hw.offline.convert_golden import write_compact

from .wgmma_replay import load


from warpsim.hw.wgmma_cases import CORPUS_CAPS as CAPS  # noqa: E402


def keep(L):
    op, a_src = L["spec"].split("|")[:2]
    n = int(op.split(".")[4].split("n")[1].split("k")[0])
    if L["purpose"] == "coverage" and n > 32:
        return (a_src == "reg") == ((n // 8) % 2 == 1)
    return True


def main(capdir, out, purposes):
    plan, io = load(capdir)
    dev = json.load(open(os.path.join(capdir, "device.json")))
    arrays, entries = {}, []
    for i, L in enumerate(plan["launches"]):
        if L["purpose"] not in purposes or not keep(L):
            continue
        if f"{i}.dout" not in io or io[f"{i}.dout"].size == 0:
            raise SystemExit(f"launch {i} has no output")
        g = min(L["groups"], CAPS[L["purpose"]])
        sel = np.unique(np.linspace(0, L["groups"] - 1, g).round().astype(int))   # spread over distributions
        e = len(entries)
        for k in ("smem", "desc", "a", "d", "sd", "dout", "base"):
            arrays[f"{e}.{k}"] = io[f"{i}.{k}"][sel]
        entries.append(dict(spec=L["spec"], purpose=L["purpose"], groups=len(sel), capture_groups=[int(x) for x in sel],
                            meta=[L["meta"][j] for j in sel]))
    manifest = dict(gpu=dev["gpu"], driver=dev["driver"], cuda_runtime=dev["cuda_runtime"],
                    generator="warpsim/hw/wgmma_cases.py (seed 2026)", plan_sha=dev["plan_sha"], entries=entries)
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    write_compact(out, arrays, "wgmma")
    print(out, os.path.getsize(out), "bytes,", len(entries), "entries,",
          sum(int(arrays[f"{e}.dout"].size) for e in range(len(entries))), "D words")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(","))
