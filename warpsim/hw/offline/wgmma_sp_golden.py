"""Pack a sparse wgmma capture (plan, inputs, device outputs) into one committed corpus file.

    python3 warpsim/hw/offline/wgmma_sp_golden.py PLANDIR OUTDIR tests/golden/wgmma_sp_sm90a.npz

Three files, to keep each small: ``wgmma_sp_sm90a.npz`` (numerics, imm-scale and imm-trans
launches), ``wgmma_sp_sm90a_cover.npz`` (coverage, N <= 64) and ``wgmma_sp_sm90a_wide.npz``
(coverage, N > 64).  The imm-trans launches with N = 64 stay out of the committed files (size);
their words matched as well.

Same format as the dense corpus (warpsim/hw/offline/wgmma_corpus.py): per entry ``i``: ``i.smem``, ``i.desc``
(A, B descriptors per group, relative to the buffer), ``i.a`` (register A; zeros for descriptor A),
``i.d`` (D before), ``i.sd`` (scale-d), ``i.e`` (metadata words), ``i.dout`` (D after, from the GPU),
``i.base`` (the buffer's shared address); ``manifest``: JSON with the device and each entry's spec
(opcode|A source|scale-a|scale-b|trans-a|trans-b|selector), purpose, groups and per-group metadata
kind, distribution and shared-memory layouts.
"""
import json
import os
import sys

import numpy as np

from warpsim.hw.offline.convert_golden import write_compact


def main(plan_dir, out_dir, dest):
    parts = {dest: lambda p, n: p != "coverage" and not (p == "trans" and n == 64),
             dest.replace(".npz", "_cover.npz"): lambda p, n: p == "coverage" and n <= 64,
             dest.replace(".npz", "_wide.npz"): lambda p, n: p == "coverage" and n > 64}
    for path, keep in parts.items():
        write(plan_dir, out_dir, path, keep)


def _n(spec):
    return int(spec.split("|")[0].split(".m64n")[1].split("k")[0])


def write(plan_dir, out_dir, dest, keep):
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    z = np.load(os.path.join(plan_dir, "inputs.npz"))
    outs = {}
    for f in sorted(os.listdir(out_dir)):
        if f.startswith("out_") and f.endswith(".npz"):
            outs.update(dict(np.load(os.path.join(out_dir, f))))
    dev = json.load(open(os.path.join(out_dir, "device.json")))
    arrays, launches = {}, []
    for i, L in enumerate(plan["launches"]):
        if f"{i}.d" not in outs or not keep(L["purpose"], _n(L["spec"])):
            continue
        j = len(launches)
        for k in ("smem", "desc", "a", "d", "sd", "e"):
            arrays[f"{j}.{k}"] = z[f"{i}.{k}"]
        arrays[f"{j}.dout"] = outs[f"{i}.d"]
        arrays[f"{j}.base"] = outs[f"{i}.base"]
        launches.append(dict(spec=L["spec"], purpose=L["purpose"], groups=L["groups"], meta=L["meta"]))
    man = dict({k: dev[k] for k in ("gpu", "driver", "cuda_runtime")}, generator="warpsim/hw/wgmma_sp_cases.py",
               entries=launches)
    arrays["manifest"] = np.frombuffer(json.dumps(man).encode(), dtype=np.uint8)
    write_compact(dest, arrays, "wgmma_sp")
    print(dest, os.path.getsize(dest), "bytes,", len(launches), "launches")


if __name__ == "__main__":
    main(*sys.argv[1:4])
