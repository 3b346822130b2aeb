"""Capture the committed compiled kernels' outputs on a GPU (run on an H100; CuPy + nvcc).

    python3 warpsim/hw/device/compiled_kernels.py          # writes $OUT/compiled_kernels.npz

Every case of tests/ptx/compiled/cases.py is launched from its committed PTX file unmodified
(the driver compiles it for the GPU, as warpsim reads it), on the seeded inputs the replay tests
build the same way; the npz holds each output buffer as '<case>/<buffer>' (raw words), the seed
and, per .cu source, whether nvcc here emits the committed PTX byte for byte ('nvcc_same/<file>').
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[3] / "tests" / "ptx" / "compiled"
sys.path.insert(0, str(HERE))
from cases import CASES, SEED, inputs  # noqa: E402


def main():
    import cupy as cp

    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    result = {"seed": np.array(SEED)}
    flags = {"simt_calls": [], "simt_calls_G": ["-G"], "warp_reduce": [], "warp_reduce_G": ["-G"],
             "wmma_gemm_epilogue": [], "wmma_gemm_epilogue_lineinfo": ["-lineinfo"]}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in flags.items():
            src = HERE / (name.replace("_G", "").replace("_lineinfo", "") + ".cu")
            o = Path(tmp) / f"{name}.ptx"
            opt = [] if "-G" in extra else ["-O3"]
            r = subprocess.run(["nvcc", *opt, *extra, "-ptx", "-arch=sm_90a", str(src), "-o", str(o)],
                               capture_output=True, text=True)
            same = r.returncode == 0 and o.read_text() == (HERE / f"{name}.ptx").read_text()
            result[f"nvcc_same/{name}"] = np.array(same)
            print(name, "nvcc output identical to the committed PTX:", same, r.stderr[-300:] if r.returncode else "")
    for name, case in sorted(CASES.items()):
        bufs, make_args, grid, block, shared, outs = inputs(name)
        dev = {k: cp.asarray(v) for k, v in bufs.items()}
        addr = {k: int(v.data.ptr) for k, v in dev.items()}
        args = []
        for a in make_args(addr):
            if isinstance(a, bytes):
                args.append(np.frombuffer(a, dtype=np.dtype([("raw", np.uint8, (len(a),))]))[0])   # by-value struct
            elif isinstance(a, int) and a in addr.values():
                args.append(np.uint64(a))
            else:
                args.append(np.int32(a))
        try:
            mod = cp.RawModule(path=str(HERE / case["ptx"]))
            fn = mod.get_function(case["entry"])
            if shared > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = shared
            fn(grid, block, tuple(args), shared_mem=shared)
            cp.cuda.Device().synchronize()
            for o in outs:
                result[f"{name}/{o}"] = cp.asnumpy(dev[o])
            print(name, "ok")
        except Exception as exc:             # record and go on: one bad case must not lose the rest
            result[f"{name}/error"] = np.array(str(exc))
            print(name, "FAILED", exc)
    np.savez_compressed(out / "compiled_kernels.npz", **result)
    print("wrote", out / "compiled_kernels.npz")


if __name__ == "__main__":
    main()
