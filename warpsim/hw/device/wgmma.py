"""Device side of the wgmma capture (numpy + CuPy only; no warpsim import).

    python3 wgmma_device.py PLANDIR OUTDIR

Loads PLANDIR/part*.cubin, inputs.npz and plan.json (from warpsim/hw/wgmma_cases.py),
runs every launch and writes OUTDIR/out_<purpose>.npz with ``<i>.d`` (the D words
after the instruction) and ``<i>.base`` (the shared address of the buffer), plus
OUTDIR/device.json (GPU, driver, failures).  A launch that faults is recorded and
skipped: the remaining launches run in a fresh process.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np


def child(plan_dir, out_dir, start):
    import cupy as cp

    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    z = np.load(os.path.join(plan_dir, "inputs.npz"))
    nparts = len([f for f in os.listdir(plan_dir) if f.startswith("part") and f.endswith(".cubin")])
    mods = [cp.RawModule(path=os.path.join(plan_dir, f"part{i}.cubin")) for i in range(nparts)]
    res = {}
    failed = None
    i = start
    try:
        only = os.environ.get("WG_ONLY")
        only = set(json.load(open(only))) if only else None
        for i in range(start, len(plan["launches"])):
            if only is not None and i not in only:
                continue
            L = plan["launches"][i]
            k = L["kernel"]
            fn = mods[k % nparts].get_function(f"wg_{k}")
            sb = L["sbytes"]
            if sb > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = sb
            G = L["groups"]
            smem = cp.asarray(z[f"{i}.smem"])
            desc = cp.asarray(z[f"{i}.desc"])
            a = cp.asarray(z[f"{i}.a"])
            din = cp.asarray(z[f"{i}.d"])
            sd = cp.asarray(z[f"{i}.sd"])
            dout = cp.zeros_like(din)
            base = cp.zeros(G, dtype=cp.uint32)
            args = (smem, np.int32(sb), desc, a, din, sd, dout, base)
            if f"{i}.e" in z.files:   # sparse kernels: every thread's metadata word
                args += (cp.asarray(z[f"{i}.e"]),)
            fn((G,), (128,), args, shared_mem=sb)
            cp.cuda.Device().synchronize()
            res[f"{i}.d"] = cp.asnumpy(dout)
            res[f"{i}.base"] = cp.asnumpy(base)
        i = len(plan["launches"])
    except Exception as e:  # noqa: BLE001
        failed = (i, repr(e)[:500])
    np.savez(os.path.join(out_dir, f"chunk_{start}.npz"), **res)
    json.dump({"failed": failed, "next": i + 1 if failed else i}, open(os.path.join(out_dir, f"chunk_{start}.json"), "w"))


def main(plan_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    t0 = time.time()
    start, failures, chunks = 0, [], []
    while start < len(plan["launches"]):
        subprocess.run([sys.executable, __file__, "--child", plan_dir, out_dir, str(start)], check=False)
        info_p = os.path.join(out_dir, f"chunk_{start}.json")
        if not os.path.exists(info_p):
            failures.append((start, "child died"))
            start += 1
            continue
        info = json.load(open(info_p))
        chunks.append(start)
        if info["failed"]:
            failures.append(info["failed"])
        start = info["next"]
    merged = {}
    for c in chunks:
        merged.update(dict(np.load(os.path.join(out_dir, f"chunk_{c}.npz"))))
        os.remove(os.path.join(out_dir, f"chunk_{c}.npz"))
        os.remove(os.path.join(out_dir, f"chunk_{c}.json"))
    # inputs and outputs together, in files of at most ~14 MB compressed
    import hashlib
    import zlib

    z = np.load(os.path.join(plan_dir, "inputs.npz"))
    part, size, files = {}, 0, 0
    for i, L in enumerate(plan["launches"]):
        if f"{i}.d" not in merged:
            continue
        arrs = {f"{i}.{k}": z[f"{i}.{k}"] for k in ("smem", "desc", "a", "d", "sd")}
        arrs[f"{i}.dout"] = merged.get(f"{i}.d", np.zeros(0, np.uint32))
        arrs[f"{i}.base"] = merged.get(f"{i}.base", np.zeros(0, np.uint32))
        est = sum(len(zlib.compress(v.tobytes(), 1)) for v in arrs.values())
        if part and size + est > 13_000_000:
            np.savez_compressed(os.path.join(out_dir, f"io_{files}.npz"), **part)
            files, part, size = files + 1, {}, 0
        part.update(arrs)
        size += est
    if part:
        np.savez_compressed(os.path.join(out_dir, f"io_{files}.npz"), **part)
    plan_sha = hashlib.sha256(open(os.path.join(plan_dir, "plan.json"), "rb").read()).hexdigest()
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001
        drv = "unknown"
    json.dump(dict(gpu=name, driver=drv, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), failures=failures,
                   seconds=time.time() - t0, launches=len(plan["launches"]), done=len(merged) // 2, plan_sha=plan_sha),
              open(os.path.join(out_dir, "device.json"), "w"), indent=1)
    print(json.dumps(dict(gpu=name, failures=failures[:20], seconds=time.time() - t0, done=len(merged) // 2)))


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main(sys.argv[1], sys.argv[2])
