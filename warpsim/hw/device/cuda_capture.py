"""Capture warpsim.cuda's hardware truth on a GPU: run prepared cubins / PTX through CuPy.

    python3 cuda_capture.py DIR [NAME]   # DIR from `python3 -m warpsim.hw.offline.cuda_sources prepare DIR`

Reads DIR/manifest.json and DIR/inputs.npz, launches every case on the GPU (the module file as the
toolchain built it: an nvcc cubin, numba-cuda's PTX text, or numba's nvJitLink-linked cubin),
and writes each output buffer and each read-back ``__device__`` variable to $OUT/NAME (cuda_sm90.npz).
Needs numpy and CuPy only.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np


def capture(src, outfile="cuda_sm90.npz"):
    import cupy as cp
    src = Path(src)
    out = Path(os.environ.get("OUT", "."))
    manifest = json.loads((src / "manifest.json").read_text())
    inputs = np.load(src / "inputs.npz")
    result = {"device": np.array(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())}
    for case in manifest:
        name = case["name"]
        try:
            mod = cp.RawModule(path=str(src / case["module"]))
            fn = mod.get_function(case["entry"])
            dev = {}
            args = []
            for kind, v in case["args"]:
                if kind == "array":
                    dev[v] = cp.asarray(inputs[f"{name}/in/{v}"])
                    args.append(dev[v])
                else:
                    args.append(np.dtype({"i64": "int64", "u64": "uint64"}.get(kind, kind)).type(v))
            for g in case["globals"]:
                host = np.ascontiguousarray(inputs[f"{name}/global_in/{g}"])
                ptr = mod.get_global(g)
                ptr.copy_from_host(host.ctypes.data, host.nbytes)
            grid = tuple(case["grid"]) if isinstance(case["grid"], list) else (case["grid"],)
            block = tuple(case["block"]) if isinstance(case["block"], list) else (case["block"],)
            fn(grid, block, tuple(args))
            cp.cuda.Device().synchronize()
            for k in case["outputs"]:
                result[f"{name}/out/{k}"] = cp.asnumpy(dev[k])
            for g in case["read_globals"]:
                like = inputs[f"{name}/global_in/{g}"]
                host = np.empty_like(like)
                mod.get_global(g).copy_to_host(host.ctypes.data, host.nbytes)
                result[f"{name}/global_out/{g}"] = host
            print("captured", name, flush=True)
        except Exception as exc:          # record and go on: one broken case must not cost the others
            result[f"{name}/error"] = np.array(f"{type(exc).__name__}: {exc}")
            print("FAILED", name, type(exc).__name__, exc, flush=True)
    np.savez_compressed(out / outfile, **result)


if __name__ == "__main__":
    capture(*sys.argv[1:3])
