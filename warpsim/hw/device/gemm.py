"""On the H100: run the tiled mma GEMM kernels (cupy) and Triton matmul kernels over the payload's input sets."""
import json, os, sys, time, traceback
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", "/tmp/out")
T0 = time.time()


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


pay = np.load(os.path.join(HERE, "payload.npz"))
meta = json.loads(str(pay["meta"]))
res = {}
info = {"mma": [], "triton": []}

# ---- (a) tiled mma.sync kernels ----
try:
    import cupy as cp
    mod = cp.RawModule(path=os.path.join(HERE, "gemm_mma.cubin"))
    for r, run in enumerate(meta["runs"]):
        try:
            a, b, c, e = (cp.asarray(pay[f"m{r}.{x}"]) for x in "abce")
            nw = run["Tm"] * run["Tn"]
            d = cp.full((nw, 32, run["dwords"]), 0xDEADBEEF, dtype=cp.uint32)
            fn = mod.get_function(f"warpsim_gemm_{run['kernel']}")
            fn(((nw + 3) // 4,), (128,), (a, b, c, e, d, np.int32(run["Tm"]), np.int32(run["Tn"]), np.int32(run["S"])))
            cp.cuda.runtime.deviceSynchronize()
            res[f"m{r}.d"] = cp.asnumpy(d)
            info["mma"].append(dict(run, ok=True))
            log("mma", r, run["opcode"], run["set"], "promote", run["promote"], "ok")
        except Exception as ex:  # noqa: BLE001
            info["mma"].append(dict(run, ok=False, error=repr(ex)[:300]))
            log("mma", r, "FAILED", repr(ex)[:300])
except Exception as ex:  # noqa: BLE001
    log("mma kernels FAILED", repr(ex)[:500])
    traceback.print_exc()

# ---- (b) Triton ----
try:
    import torch
    import triton
    sys.path.insert(0, HERE)
    from tkern import gemm_kernel
    log("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())
    TD = {"f16": (torch.float16, np.uint16, torch.int16), "bf16": (torch.bfloat16, np.uint16, torch.int16),
          "tf32": (torch.float32, np.uint32, torch.int32), "f32": (torch.float32, np.uint32, torch.int32),
          "e4m3": (torch.float8_e4m3fn, np.uint8, torch.uint8), "e5m2": (torch.float8_e5m2, np.uint8, torch.uint8)}

    def tens(bits, t):
        tdt, ndt, idt = TD[t]
        x = torch.from_numpy(np.ascontiguousarray(bits.astype(ndt)).view(np.int16 if ndt == np.uint16 else np.int32 if ndt == np.uint32 else np.uint8))
        return x.cuda().view(tdt).contiguous()

    sets = meta["sets"]
    # (elem type, acc type, input precision, max_num_imprecise_acc, BK per path, set names)
    base = lambda t, extra=(): [n for n in sets if n.startswith(t + "_")] + list(extra)
    CONFIGS = [
        ("f16", "f32", None, None, {"mma": 32, "wgmma": 64}, base("f16")),
        ("f16", "f16", None, None, {"mma": 32, "wgmma": 64}, base("f16")),
        ("bf16", "f32", None, None, {"mma": 32, "wgmma": 64}, base("bf16")),
        ("tf32", "f32", "tf32", None, {"mma": 32, "wgmma": 32}, base("tf32")),
        ("e4m3", "f32", None, None, {"mma": 64, "wgmma": 64}, base("e4m3")),
        ("e5m2", "f32", None, None, {"mma": 64, "wgmma": 64}, base("e5m2")),
        ("e4m3", "f16", None, None, {"mma": 64, "wgmma": 64}, base("e4m3")),
        ("e4m3", "f32", None, 32, {"mma": 64, "wgmma": 64}, base("e4m3")),
        ("e4m3", "f32", None, 64, {"mma": 64, "wgmma": 64}, base("e4m3")),
        ("e4m3", "f32", None, 64, {"wgmma": 128}, base("e4m3")),
        ("e5m2", "f32", None, 32, {"wgmma": 64}, base("e5m2")),
    ]
    tcount = 0
    for (t, acc, prec, imp, bks, snames) in CONFIGS:
        for path, BK in bks.items():
            BM = 16 if path == "mma" else 64
            for sn in snames:
                s = sets[sn]
                M, N, K = s["M"], s["N"], s["K"]
                BN = min(64, N)
                key = f"t{tcount}"
                item = dict(key=key, elem=t, acc=acc, input_precision=prec, max_num_imprecise_acc=imp, path=path,
                            BM=BM, BN=BN, BK=BK, num_warps=4, set=sn)
                tcount += 1
                try:
                    A = tens(pay[f"s.{sn}.A"], t)
                    B = tens(pay[f"s.{sn}.B"], t)
                    C = tens(pay[f"s.{sn}.C_{acc}"], acc)
                    D = torch.empty_like(C)
                    grid = (M // BM, N // BN)
                    k = gemm_kernel[grid](A, B, C, D, M, N, K, BM=BM, BN=BN, BK=BK, ACC16=(acc == "f16"), PREC=prec,
                                          IMPRECISE=imp, num_warps=4, num_stages=2)
                    torch.cuda.synchronize()
                    dn = D.view(torch.int16 if acc == "f16" else torch.int32).cpu().numpy()
                    res[key + ".d"] = dn.view(np.uint16 if acc == "f16" else np.uint32)
                    try:
                        ptx = k.asm["ptx"]
                        import re
                        item["ptx_ops"] = sorted(set(re.findall(r"(mma\.sync[\w.]*|wgmma\.mma_async[\w.]*|cvt\.rna\.tf32\.f32|cvt\.rn\.f16x2\.e[45]m[23]x2|add\.f32)", ptx)))
                    except Exception as ex2:  # noqa: BLE001
                        item["ptx_ops"] = repr(ex2)[:100]
                    item["ok"] = True
                    log("triton", key, t, acc, path, BK, imp, sn, item.get("ptx_ops"))
                except Exception as ex:  # noqa: BLE001
                    item["ok"] = False
                    item["error"] = repr(ex)[:400]
                    log("triton", key, t, acc, path, BK, imp, sn, "FAILED", repr(ex)[:400])
                info["triton"].append(item)
except Exception as ex:  # noqa: BLE001
    log("triton FAILED", repr(ex)[:500])
    traceback.print_exc()

try:
    import subprocess
    info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip()
    import cupy as cp
    info["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
except Exception:  # noqa: BLE001
    pass
np.savez_compressed(os.path.join(OUT, "gemm_results.npz"), info=np.array(json.dumps(info)), **res)
log("saved", len(res), "arrays")
