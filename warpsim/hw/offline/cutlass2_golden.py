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
from warpsim.hw.offline.cutlass3_golden import case_arrays


def convert(src, dst):
    z = np.load(src, allow_pickle=False)
    info = json.loads(str(z["info"]))
    arrays, recipes = case_arrays(z, info, CUTLASS2_CASES)
    arrays.update(manifest=np.array(json.dumps(info)), ptx=z["ptx"])
    return save_golden(dst, arrays, recipes=recipes, info={"source": "warpsim/hw/device/cutlass2.py", "gpu": info["gpu"]})


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
