"""Capture CUTLASS 3 Hopper GEMM launches on an H100 (issue 21's replay target, issue 33's kernel shapes).

    python3 -m warpsim.hw.gemm_cases cutlass3 .cap/cutlass3          # here: inputs + cases.json
    python3 -m warpsim.hw.gemm_cases cutlass3-more .cap/more         # the ping-pong and fused-epilogue cases
    CUTLASS=/path/to/cutlass_library/source IN=.cap/cutlass3 OUT=outdir python3 warpsim/hw/device/cutlass3.py
    # or with executables built beforehand (nvcc 13 on a machine without a GPU is enough):
    CUTLASS=... python3 warpsim/hw/device/cutlass3.py build BIN KERNEL...   # BIN/KERNEL/gemm + kernel.ptx
    BIN=BIN IN=... OUT=... python3 warpsim/hw/device/cutlass3.py

Builds ``cutlass3_gemm.cu`` once per kernel of :data:`KERNELS` that the cases name (f32 accumulate;
2x1 cluster; TMA warp-specialized mainloop and TMA-store epilogue) with nvcc for sm_90a, keeping
the PTX nvcc assembled; runs each case on the inputs of :func:`warpsim.hw.gemm_cases.cutlass3_inputs`
and writes ``$OUT/cutlass3.npz``: per case the PTX text, the parameter bytes, the launch geometry,
the buffers' device addresses and D's words.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

#: kernel name -> the cutlass3_gemm.cu switches that build it
KERNELS = {
    "cooperative": ["-DWS_FP8=0"],
    "cooperative_e4m3": ["-DWS_FP8=1"],
    "pingpong": ["-DWS_FP8=0", "-DWS_PINGPONG=1"],
    "rowbias_relu": ["-DWS_FP8=0", "-DWS_FUSION=1", "-DWS_D_F16=1"],
    "pingpong_colbias_gelu": ["-DWS_FP8=0", "-DWS_PINGPONG=1", "-DWS_FUSION=2"],
}


def kernel_of(case: dict) -> str:
    """The KERNELS entry a case runs (the first captures name none: cooperative, by input type)."""
    return case.get("kernel") or ("cooperative_e4m3" if case["dtype"] == "e4m3" else "cooperative")


def build(kernel, work):
    """-> (executable, PTX text) of one kernel, compiled into ``work/kernel``."""
    cutlass = os.environ["CUTLASS"]
    d = os.path.join(work, kernel)
    keep = os.path.join(d, "keep")
    os.makedirs(keep, exist_ok=True)
    exe = os.path.join(d, "gemm")
    cmd = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90a", "--expt-relaxed-constexpr", "-keep", "-keep-dir", keep,
           f"-I{cutlass}/include", f"-I{cutlass}/tools/util/include", *KERNELS[kernel],
           os.path.join(HERE, "cutlass3_gemm.cu"), "-o", exe]
    subprocess.run(cmd, check=True)
    ptx = [p for p in glob.glob(os.path.join(keep, "*.ptx")) if ".target sm_90a" in open(p).read()]
    assert len(ptx) == 1, ptx
    with open(os.path.join(d, "kernel.ptx"), "w") as f:
        f.write(open(ptx[0]).read())
    return exe, open(ptx[0]).read()


def prebuilt(kernel):
    d = os.path.join(os.environ["BIN"], kernel)
    return os.path.join(d, "gemm"), open(os.path.join(d, "kernel.ptx")).read()


def main():
    out, inp = os.environ["OUT"], os.environ["IN"]
    res, info = {}, []
    with tempfile.TemporaryDirectory() as work:
        exes = {}
        for i, case in enumerate(json.load(open(os.path.join(inp, "cases.json")))):
            kernel = kernel_of(case)
            if kernel not in exes:
                exes[kernel] = prebuilt(kernel) if os.environ.get("BIN") else build(kernel, work)
            exe, ptx = exes[kernel]
            d_in, d_out = os.path.join(inp, f"case{i}"), os.path.join(work, f"out{i}")
            os.makedirs(d_out)
            r = subprocess.run([exe, d_in, d_out, str(case["M"]), str(case["N"]), str(case["K"]),
                                str(case["alpha"]), str(case["beta"]), str(case.get("sm_count", 0))],
                               capture_output=True, text=True)
            print(i, case, r.returncode, r.stdout.strip(), r.stderr.strip()[-500:], flush=True)
            if r.returncode:
                continue
            launch = {}
            for line in open(os.path.join(d_out, "launch.txt")):
                k, *v = line.split()
                launch[k] = v
            res[f"{i}.params"] = np.fromfile(os.path.join(d_out, "params.bin"), np.uint8)
            res[f"{i}.D"] = np.fromfile(os.path.join(d_out, "D.bin"), np.uint16 if case.get("d") == "f16" else np.uint32)
            res[f"{i}.ptx"] = np.frombuffer(ptx.encode(), np.uint8)
            if os.path.exists(os.path.join(d_out, "ws_before.bin")):
                res[f"{i}.ws"] = np.fromfile(os.path.join(d_out, "ws_before.bin"), np.uint8)
            info.append(dict(case, index=i, launch=launch))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    np.savez_compressed(os.path.join(out, "cutlass3.npz"), info=np.array(json.dumps({"gpu": gpu, "cases": info})), **res)


if __name__ == "__main__" and sys.argv[1:2] == ["build"]:
    for name in sys.argv[3:]:
        build(name, sys.argv[2])
elif __name__ == "__main__":
    main()
