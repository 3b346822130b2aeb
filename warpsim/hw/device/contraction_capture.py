"""Hardware truth for ptxas' merge of a product / quotient into the add reading it (warpsim.ptx.contraction).

Self-contained (numpy, cupy; nothing of warpsim).  Each variant of tests/ptx_contraction_cases.py is loaded
as PTX with the CUDA driver (cuModuleLoadData: the driver's ptxas at its default -O3, --fmad=true) and run on
the seeded operands; the output words (and the product / quotient where a variant stores it as a second
reader) go into one npz with a JSON manifest.

    OUT=/some/dir python3 warpsim/hw/device/contraction_capture.py tests   # the folder holding the cases

then commit $OUT/ptx_contraction_sm90.npz, converted by ``warpsim.hw.golden.save_golden``, under tests/golden/
(tests/test_ptx_contraction.py replays it).
"""

import json
import os
import sys
import traceback

import numpy as np


def main():
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "tests")
    import cupy as cp

    import ptx_contraction_cases as pc

    out_dir = os.environ.get("OUT", ".")
    a, b, c = (cp.asarray(x) for x in pc.operands())
    arrays = {}
    manifest = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                "driver": cp.cuda.runtime.driverGetVersion(), "n": pc.N, "variants": {}}
    for name, (body, merged) in pc.VARIANTS.items():
        try:
            mod = cp.cuda.function.Module()
            mod.load(pc.ptx(body).encode() + b"\0")
            fn = mod.get_function("k")
            runs = []
            for _ in range(2):
                out, side = cp.zeros(pc.N, cp.float32), cp.zeros(pc.N, cp.float32)
                fn((pc.N // 128, 1, 1), (128, 1, 1), (out, side, a, b, c))
                cp.cuda.runtime.deviceSynchronize()
                runs.append((cp.asnumpy(out).view(np.uint32), cp.asnumpy(side).view(np.uint32)))
            arrays[f"{name}.out"] = runs[0][0]
            if "%rd6], %f7" in body:
                arrays[f"{name}.side"] = runs[0][1]
            manifest["variants"][name] = {"ok": True, "merged_by_ptxas": merged, "deterministic": bool(
                (runs[0][0] == runs[1][0]).all() and (runs[0][1] == runs[1][1]).all())}
            print(name, "ok", flush=True)
        except Exception as exc:  # noqa: BLE001  (recorded, the capture goes on)
            manifest["variants"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                          "trace": traceback.format_exc()[-2000:]}
            print(name, "FAILED", traceback.format_exc(), flush=True)
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    np.savez_compressed(os.path.join(out_dir, "ptx_contraction_sm90.npz"), **arrays)
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
