"""Hardware truth for the warpsim Triton driver: tests/triton_driver_kernels.py's cases run natively on an H100.

Self-contained (numpy, torch, triton; nothing of warpsim).  Each case launches its tutorial-style kernels with
Triton's own CUDA driver on the seeded inputs (moved to the GPU), twice (the words must agree: atomics and
locks included); the output words, the PTX Triton compiled (LZMA) and its digest without ``.file`` lines
go into one npz with a JSON manifest.  A ``tl.device_print`` kernel's stdout is captured too.

    OUT=/some/dir python3 warpsim/hw/device/triton_driver.py tests     # the folder holding triton_driver_kernels.py

then commit $OUT/triton_driver_sm90.npz as tests/golden/triton_driver_sm90.npz (tests/test_triton_driver.py).
"""

import json
import lzma
import os
import sys
import tempfile
import traceback

import numpy as np


def _capture_stdout(fn):
    """Run fn with file descriptor 1 redirected (device printf writes there at synchronisation)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as f:
        os.dup2(f.fileno(), 1)
        try:
            fn()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        return f.read().decode(errors="replace")


def main():
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "tests")
    import torch
    import triton

    import triton_driver_kernels as tk

    out_dir = os.environ.get("OUT", ".")
    arrays, manifest = {}, {"triton": triton.__version__, "torch": torch.__version__,
                            "gpu": torch.cuda.get_device_name(), "capability": list(torch.cuda.get_device_capability()),
                            "cases": {}}
    dev = lambda t: t.cuda()  # noqa: E731
    for name, (run, sfu) in tk.CASES.items():
        try:
            outs, k = run(dev)
            torch.cuda.synchronize()
            first = {o: tk.words(t) for o, t in outs.items()}
            outs2, _ = run(dev)
            torch.cuda.synchronize()
            again = {o: tk.words(t) for o, t in outs2.items()}
            ptx = k.asm["ptx"]
            for o, w in first.items():
                arrays[f"{name}.{o}"] = w
            arrays[f"{name}.ptx"] = np.frombuffer(lzma.compress(ptx.encode()), np.uint8)
            manifest["cases"][name] = {
                "ok": True, "outputs": list(first), "ptx_sha256": tk.ptx_digest(ptx),
                "deterministic": all((first[o] == again[o]).all() for o in first),
                "wgmma": "wgmma.mma_async" in ptx, "mma_sync": "mma.sync" in ptx, "n_regs": k.n_regs,
                "shared": k.metadata.shared}
            print(name, "ok", manifest["cases"][name], flush=True)
        except Exception as exc:  # noqa: BLE001  (recorded, the capture goes on)
            manifest["cases"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                       "trace": traceback.format_exc()[-3000:]}
            print(name, "FAILED", traceback.format_exc(), flush=True)
    # tl.device_print: what the GPU prints
    try:
        x = torch.arange(8, dtype=torch.float32).cuda() * 0.5 - 1

        def go():
            tk.print_kernel[(2, )](x, BLOCK=8, num_warps=1)
            torch.cuda.synchronize()
        manifest["device_print"] = _capture_stdout(go)
    except Exception:  # noqa: BLE001
        manifest["device_print_error"] = traceback.format_exc()[-3000:]
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    np.savez_compressed(os.path.join(out_dir, "triton_driver_sm90.npz"), **arrays)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
