"""Capture CUTLASS 3 Hopper GEMM launches on an H100 (issue 21's replay target).

    python3 -m warpsim.hw.gemm_cases cutlass3 .cap/cutlass3          # here: inputs + cases.json
    CUTLASS=/path/to/cutlass_library/source IN=.cap/cutlass3 OUT=outdir python3 warpsim/hw/device/cutlass3.py
    # or with executables built here (BIN holds gemm_fp80, gemm_fp81 and keep0/, keep1/ from nvcc -keep)

Builds ``cutlass3_gemm.cu`` twice (f16 and e4m3 inputs; f32 accumulate and output; 128x128 tiles,
a 2x1 cluster, TMA warp-specialized cooperative mainloop and TMA-store epilogue) with nvcc for
sm_90a, keeping the PTX nvcc assembled; runs each on the inputs of
:func:`warpsim.hw.gemm_cases.cutlass3_inputs` and writes ``$OUT/cutlass3.npz``: per case the PTX
text, the parameter bytes, the launch geometry, the buffers' device addresses and D's words.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CUTLASS = os.environ.get("CUTLASS", "")
OUT = os.environ["OUT"]
IN = os.environ["IN"]


def build(fp8, work):
    prebuilt = os.environ.get("BIN")           # executables and kept PTX built elsewhere (same nvcc 13)
    if prebuilt:
        ptx = glob.glob(os.path.join(prebuilt, f"keep{fp8}", "*.ptx"))
        assert len(ptx) == 1, ptx
        return os.path.join(prebuilt, f"gemm_fp8{fp8}"), open(ptx[0]).read()
    exe = os.path.join(work, f"gemm_fp8{fp8}")
    keep = os.path.join(work, f"keep{fp8}")
    os.makedirs(keep, exist_ok=True)
    cmd = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90a", "--expt-relaxed-constexpr", "-keep", "-keep-dir", keep,
           f"-I{CUTLASS}/include", f"-I{CUTLASS}/tools/util/include", f"-DWS_FP8={fp8}",
           os.path.join(HERE, "cutlass3_gemm.cu"), "-o", exe]
    subprocess.run(cmd, check=True)
    ptx = glob.glob(os.path.join(keep, "*.ptx"))
    assert len(ptx) == 1, ptx
    return exe, open(ptx[0]).read()


def main():
    res, info = {}, []
    with tempfile.TemporaryDirectory() as work:
        exes = {}
        for i, case in enumerate(json.load(open(os.path.join(IN, "cases.json")))):
            fp8 = int(case["dtype"] == "e4m3")
            if fp8 not in exes:
                exes[fp8] = build(fp8, work)
            exe, ptx = exes[fp8]
            d_in, d_out = os.path.join(IN, f"case{i}"), os.path.join(work, f"out{i}")
            os.makedirs(d_out)
            r = subprocess.run([exe, d_in, d_out, str(case["M"]), str(case["N"]), str(case["K"]),
                                str(case["alpha"]), str(case["beta"])], capture_output=True, text=True)
            print(i, case, r.returncode, r.stdout.strip(), r.stderr.strip()[-500:], flush=True)
            if r.returncode:
                continue
            launch = {}
            for line in open(os.path.join(d_out, "launch.txt")):
                k, *v = line.split()
                launch[k] = v
            res[f"{i}.params"] = np.fromfile(os.path.join(d_out, "params.bin"), np.uint8)
            res[f"{i}.D"] = np.fromfile(os.path.join(d_out, "D.bin"), np.uint32)
            res[f"{i}.ptx"] = np.frombuffer(ptx.encode(), np.uint8)
            if os.path.exists(os.path.join(d_out, "ws_before.bin")):
                res[f"{i}.ws"] = np.fromfile(os.path.join(d_out, "ws_before.bin"), np.uint8)
            info.append(dict(case, index=i, launch=launch))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    np.savez_compressed(os.path.join(OUT, "cutlass3.npz"), info=np.array(json.dumps({"gpu": gpu, "cases": info})), **res)


if __name__ == "__main__":
    main()
