"""Run the gen_alu2 capture plan on a GPU and write $OUT/cap_alu2.npz (the GPU's words only).

    OUT=/some/dir python3 warpsim/hw/device/ptx_alu2.py      # on an H100 with nvcc and CuPy

Builds alu2.cu with nvcc -arch=sm_90a -cubin, runs every form over the generator's inputs and
stores ``<kernel>.o<j>`` outputs plus ``meta.*``: generator, seed, input hash, form names, device,
nvcc version.  Takes well under a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ptx_alu2_cases as G  # noqa: E402  (the plan beside warpsim/hw, imported without warpsim: numpy only)


def main():
    import cupy as cp

    out_dir = os.environ.get("OUT") or (sys.argv[1] if len(sys.argv) > 1 else None)
    if not out_dir:
        raise SystemExit("set OUT (or pass a directory) for cap_alu2.npz")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.time()
    IN = G.inputs()
    with tempfile.TemporaryDirectory() as tmp:
        G.main(["--out", tmp, "--cubin"])
        mod = cp.RawModule(path=os.path.join(tmp, "alu2.cubin"))
        dev_in = {k: cp.asarray(v) for k, v in IN.items()}
        res = {}
        for f in G.FORMS:
            kern = mod.get_function(f.name)
            outs = [cp.zeros(G.N, dtype={16: cp.uint16, 32: cp.uint32, 64: cp.uint64}[w]) for w in f.outs]
            kern((G.N // G.BLOCK,), (G.BLOCK,), tuple(dev_in[k] for k in f.ins) + tuple(outs))
            for j, o in enumerate(outs):
                res[f"{f.name}.o{j}"] = cp.asnumpy(o)
        cp.cuda.Device().synchronize()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    props = cp.cuda.runtime.getDeviceProperties(0)
    res["meta.generator"] = np.array(G.GENERATOR)
    res["meta.seed"] = np.array(G.SEED)
    res["meta.input_hash"] = np.array(G.input_hash(IN))
    res["meta.forms"] = np.array([f.name for f in G.FORMS])
    res["meta.device"] = np.array(props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]))
    res["meta.nvcc"] = np.array(nvcc)
    path = os.path.join(out_dir, "cap_alu2.npz")
    np.savez_compressed(path, **res)
    print(f"{len(G.FORMS)} forms, {os.path.getsize(path) / 1e6:.2f} MB -> {path} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
