"""Turn warpsim/hw/device/cutlass3.py's ``cutlass3.npz`` into the compact golden file the tests replay.

    python3 -m warpsim.hw.offline.cutlass3_golden CAPTURE.npz tests/golden/cutlass3_more_sm90a.npz

For :data:`warpsim.hw.gemm_cases.CUTLASS3_MORE_CASES` (the ping-pong and fused-epilogue launches).
A, B, C and the bias are stored as ``cutlass3_inputs`` recipes (checked word for word); each case's
PTX, parameter bytes and D words are stored; the capture's JSON becomes ``manifest``.
"""

import json
import sys

import numpy as np

from warpsim.hw.gemm_cases import CUTLASS3_MORE_CASES, cutlass3_input_args, cutlass3_inputs
from warpsim.hw.golden import save_golden


def case_arrays(z, info, cases, keys=("params", "D")):
    """(arrays, recipes) of every captured case: inputs as recipes, ``keys`` stored as captured.
    A case whose inputs are not those of ``cases[index]`` is refused."""
    arrays, recipes = {}, []
    for case in info["cases"]:
        i = case["index"]
        args = cutlass3_input_args(case)
        if args != cutlass3_input_args(cases[i]):
            raise ValueError(f"case {i} of the capture is not the planned case {i}: {args}")
        made = cutlass3_inputs(**args)
        for k, v in made.items():
            arrays[f"{i}.{k}"] = v
        recipes.append({"generator": "cutlass3_inputs", "args": args, "arrays": {f"{i}.{k}": k for k in made}})
        for k in keys:
            arrays[f"{i}.{k}"] = z[f"{i}.{k}"]
    return arrays, recipes


def convert(src, dst):
    z = np.load(src, allow_pickle=False)
    info = json.loads(str(z["info"]))
    arrays, recipes = case_arrays(z, info, CUTLASS3_MORE_CASES, keys=("params", "D", "ptx"))
    arrays["manifest"] = np.array(json.dumps(info))
    return save_golden(dst, arrays, recipes=recipes, info={"source": "warpsim/hw/device/cutlass3.py", "gpu": info["gpu"],
                                                           "kind": "CUTLASS 3 kernel launches"})


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
