"""Capture CUTLASS 2.x sm_80 tensor-op GEMM launches on an H100 (issue 20's CUTLASS 2 target).

    python3 -m warpsim.hw.gemm_cases cutlass2 .cap/c2/in             # here: inputs + cases.json
    BIN=.cap/c2 OUT=outdir python3 warpsim/hw/device/cutlass2.py     # on the GPU machine
    # BIN holds gemm_cutlass2, keep/cutlass2_gemm.ptx (nvcc -keep) and in/ (the inputs above);
    # without BIN, CUTLASS=/path/to/cutlass_library/source builds it there (nvcc -arch=sm_80).
    python3 -m warpsim.hw.offline.cutlass2_golden outdir/cutlass2.npz tests/golden/cutlass2_sm80.npz

``cutlass2_gemm.cu`` is ``cutlass::gemm::device::Gemm`` (f16 A row-major, f16 B column-major, f32
accumulate, C and D f32 row-major, 128x128x32 threadblock, 64x64x32 warp, 16x8x16 mma.sync, 3
stages).  Each case of :data:`warpsim.hw.gemm_cases.CUTLASS2_CASES` runs once; ``$OUT/cutlass2.npz``
gets the PTX nvcc assembled, and per case the parameter bytes, the launch geometry, the buffers'
device addresses and D's words.
"""

import glob
import json
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def build(work):
    """-> (executable, PTX text): prebuilt in $BIN, or compiled here against $CUTLASS."""
    prebuilt = os.environ.get("BIN")
    if prebuilt:
        ptx = glob.glob(os.path.join(prebuilt, "keep", "*.ptx"))
        assert len(ptx) == 1, ptx
        exe = os.path.abspath(os.path.join(prebuilt, "gemm_cutlass2"))
        if not os.access(exe, os.X_OK):          # a copy may lose the mode bit
            os.chmod(exe, 0o755)
        return exe, open(ptx[0]).read()
    cutlass = os.environ["CUTLASS"]
    exe, keep = os.path.join(work, "gemm_cutlass2"), os.path.join(work, "keep")
    os.makedirs(keep, exist_ok=True)
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_80", "-keep", "-keep-dir", keep,
                    f"-I{cutlass}/include", f"-I{cutlass}/tools/util/include",
                    os.path.join(HERE, "cutlass2_gemm.cu"), "-o", exe], check=True)
    ptx = glob.glob(os.path.join(keep, "*.ptx"))
    assert len(ptx) == 1, ptx
    return exe, open(ptx[0]).read()


def main():
    out = os.environ["OUT"]
    inputs = os.environ.get("IN") or os.path.join(os.environ.get("BIN", ""), "in")
    res, info = {}, []
    with tempfile.TemporaryDirectory() as work:
        exe, ptx = build(work)
        res["ptx"] = np.frombuffer(ptx.encode(), np.uint8)
        for i, case in enumerate(json.load(open(os.path.join(inputs, "cases.json")))):
            d_in, d_out = os.path.join(inputs, f"case{i}"), os.path.join(work, f"out{i}")
            os.makedirs(d_out)
            r = subprocess.run([exe, d_in, d_out, str(case["M"]), str(case["N"]), str(case["K"]),
                                str(case["alpha"]), str(case["beta"])], capture_output=True, text=True, timeout=120)
            print(i, case, r.returncode, r.stdout.strip(), r.stderr.strip()[-500:], flush=True)
            if r.returncode:
                continue
            launch = {}
            for line in open(os.path.join(d_out, "launch.txt")):
                k, *v = line.split()
                launch[k] = v
            res[f"{i}.params"] = np.fromfile(os.path.join(d_out, "params.bin"), np.uint8)
            res[f"{i}.D"] = np.fromfile(os.path.join(d_out, "D.bin"), np.uint32).reshape(case["M"], case["N"])
            info.append(dict(case, index=i, launch=launch))
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        gpu = "unknown (no nvidia-smi)"
    np.savez_compressed(os.path.join(out, "cutlass2.npz"), info=np.array(json.dumps({"gpu": gpu, "cases": info})),
                        **res)


if __name__ == "__main__":
    main()
