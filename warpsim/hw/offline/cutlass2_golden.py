"""Turn warpsim/hw/device/cutlass2.py's ``cutlass2.npz`` into the compact golden file the tests replay.

    python3 -m warpsim.hw.offline.cutlass2_golden CAPTURE.npz tests/golden/cutlass2_sm80.npz

A, B and C are stored as recipes (the ``cutlass3_inputs`` generator, checked word for word);
the PTX, parameter bytes and D words are stored; the capture's JSON becomes ``manifest``.
"""

import json
import sys

import numpy as np

from warpsim.hw.gemm_cases import CUTLASS2_CASES
from warpsim.hw.golden import save_golden


def convert(src, dst):
    z = np.load(src, allow_pickle=False)
    info = json.loads(str(z["info"]))
    arrays, recipes = {"manifest": np.array(json.dumps(info)), "ptx": z["ptx"]}, []
    for case in info["cases"]:
        i = case["index"]
        args = {k: case[k] for k in ("dtype", "M", "N", "K", "seed")}
        if args != {k: CUTLASS2_CASES[i][k] for k in args}:
            raise ValueError(f"case {i} of {src} is not CUTLASS2_CASES[{i}]: {args}")
        from warpsim.hw.gemm_cases import cutlass3_inputs

        for k, v in cutlass3_inputs(**args).items():
            arrays[f"{i}.{k}"] = v
        recipes.append({"generator": "cutlass3_inputs", "args": args, "arrays": {f"{i}.{k}": k for k in "ABC"}})
        arrays[f"{i}.params"] = z[f"{i}.params"]
        arrays[f"{i}.D"] = z[f"{i}.D"]
    return save_golden(dst, arrays, recipes=recipes, info={"source": "warpsim/hw/device/cutlass2.py", "gpu": info["gpu"]})


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
