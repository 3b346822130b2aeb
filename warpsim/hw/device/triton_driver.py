"""Hardware truth for the warpsim Triton driver: tests/triton_driver_kernels.py's cases run natively on an H100.

Self-contained (numpy, torch, triton; nothing of warpsim).  Each case launches its tutorial-style kernels with
Triton's own CUDA driver on the seeded inputs (moved to the GPU), twice (the words must agree: atomics and
locks included); the output words, the PTX Triton compiled (LZMA) and its digest without ``.file`` lines
go into one npz with a JSON manifest.  A ``tl.device_print`` kernel's stdout is captured too.

    OUT=/some/dir python3 warpsim/hw/device/triton_driver.py tests     # the folder holding triton_driver_kernels.py
    OUT=/some/dir python3 warpsim/hw/device/triton_driver.py tests --sfu   # issue 29's kernels (SFU_CASES)

then commit $OUT/triton_driver_sm90.npz (or triton_driver_sfu_sm90.npz), converted to the compact format by
``warpsim.hw.golden.save_golden``, under tests/golden/ (tests/test_triton_driver.py).

A case listed in ``TARGET`` compiles for that target (sm_80): Triton's CUDA driver is told the GPU is one,
and the kernel is loaded from its PTX, which the CUDA driver JIT-compiles for the GPU it runs on -- as it
runs the PTX embedded in an sm_80 binary.
"""

import contextlib
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


@contextlib.contextmanager
def _compiled_for(arch, kernels):
    """Launches inside compile for ``arch`` ("sm_80"; None: the GPU's own target) and load each kernel from its
    PTX (cuModuleLoadData JIT-compiles it for this GPU).  ``kernels``: the JITFunctions whose per-device
    caches (which fix the target when first made) are emptied on the way in and out."""
    if arch is None:
        yield
        return
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.driver import driver

    active = driver.active
    target = GPUTarget("cuda", int(arch[3:5]), 32)
    load_cubin = CompiledKernel._init_handles

    def load_ptx(self):
        if self.module is None and self.metadata.target.arch == target.arch:
            self.kernel = self.asm["ptx"].encode()
        load_cubin(self)

    for k in kernels:
        k.device_caches.clear()
    active.get_current_target = lambda: target
    CompiledKernel._init_handles = load_ptx
    try:
        yield
    finally:
        del active.get_current_target
        CompiledKernel._init_handles = load_cubin
        for k in kernels:
            k.device_caches.clear()


def main():
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "tests")
    import torch
    import triton
    from triton.runtime.jit import JITFunction

    import triton_driver_kernels as tk

    sfu = "--sfu" in sys.argv
    cases, stem = (tk.SFU_CASES, "triton_driver_sfu_sm90") if sfu else (tk.CASES, "triton_driver_sm90")
    kernels = [v for v in vars(tk).values() if isinstance(v, JITFunction)]
    out_dir = os.environ.get("OUT", ".")
    arrays, manifest = {}, {"triton": triton.__version__, "torch": torch.__version__,
                            "gpu": torch.cuda.get_device_name(), "capability": list(torch.cuda.get_device_capability()),
                            "cases": {}}
    dev = lambda t: t.cuda()  # noqa: E731
    for name, (run, _) in cases.items():
        target = tk.TARGET.get(name)
        try:
            with _compiled_for(target, kernels):
                outs, k = run(dev)
            torch.cuda.synchronize()
            first = {o: tk.words(t) for o, t in outs.items()}
            with _compiled_for(target, kernels):
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
                "shared": k.metadata.shared, "target": target or "sm_90a"}
            print(name, "ok", manifest["cases"][name], flush=True)
        except Exception as exc:  # noqa: BLE001  (recorded, the capture goes on)
            manifest["cases"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                       "trace": traceback.format_exc()[-3000:]}
            print(name, "FAILED", traceback.format_exc(), flush=True)
    if not sfu:
        _capture_device_print(tk, manifest)
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), np.uint8)
    np.savez_compressed(os.path.join(out_dir, stem + ".npz"), **arrays)
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)


def _capture_device_print(tk, manifest):
    """tl.device_print: what the GPU prints, into the manifest."""
    import torch

    try:
        x = torch.arange(8, dtype=torch.float32).cuda() * 0.5 - 1

        def go():
            tk.print_kernel[(2, )](x, BLOCK=8, num_warps=1)
            torch.cuda.synchronize()
        manifest["device_print"] = _capture_stdout(go)
    except Exception:  # noqa: BLE001
        manifest["device_print_error"] = traceback.format_exc()[-3000:]


if __name__ == "__main__":
    main()
