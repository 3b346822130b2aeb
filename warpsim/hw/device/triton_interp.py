"""Hardware truth for warpsim.triton: compile and run tests/triton_kernels.py's matmul kernel on an H100.

Self-contained (numpy, torch, triton, cupy; nothing of warpsim).  For every case of
``triton_kernels.cases()`` (sm_80, sm_89 and sm_90a lowerings; f16, bf16, tf32, tf32x3, ieee f32, e4m3,
e5m2, int8; f16 and f32 accumulators; masked and unmasked; small and large tiles; 4 and 8 warps) it
compiles the kernel with ``triton.compile`` for that target, loads the PTX with the CUDA driver (which
JIT-compiles sm_80 / sm_89 PTX for the H100 it runs on), runs it on the seeded inputs, and stores the
output words, the PTX text (LZMA) and a manifest (seed, SHA-256 of the inputs, the tensor-core
instructions found in the PTX).  sm_90a cases also run through Triton's own launcher
(``kernel[grid](...)``) and the two runs must agree.

Run, from the repository root, on a machine with an H100, CUDA 13, Triton 3.6, torch, cupy:

    OUT=/some/dir python3 warpsim/hw/device/triton_interp.py        # writes $OUT/triton_interp.npz (< 8 MB) and $OUT/log.txt

then commit the npz as tests/golden/triton_interp.npz (tests/test_triton.py replays it).

    OUT=/some/dir python3 warpsim/hw/device/triton_interp.py --edges  # $OUT/triton_interp_edges.npz, $OUT/log_edges.txt

runs ``triton_kernels.edge_cases()`` instead (overflowing int8 sums, inf / NaN / f32-max / subnormal
floats; 14 runs, seconds); commit it as tests/golden/triton_interp_edges.npz.
"""

import json
import lzma
import os
import re
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests"))
OUT = os.environ.get("OUT", ".")
EDGES = "--edges" in sys.argv      # the edge-value runs (triton_kernels.edge_cases) into triton_interp_edges.npz
LOG = open(os.path.join(OUT, "log_edges.txt" if EDGES else "log.txt"), "w")


def log(*a):
    msg = " ".join(str(x) for x in a)
    print(msg, flush=True)
    LOG.write(msg + "\n")
    LOG.flush()


def bits(t):
    t = t.contiguous().cpu()
    w = t.element_size()
    import torch
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[w]).numpy().view({1: np.uint8, 2: np.uint16, 4: np.uint32}[w])


DRY = "--dry-run" in sys.argv      # compile only (no GPU): check every case lowers, print the instructions


def main():
    if not DRY:
        import cupy as cp
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    import triton_kernels as tk

    if DRY:
        log("dry run: compile only")
    else:
        log("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(),
            "cuda runtime", cp.cuda.runtime.runtimeGetVersion())
    PTRS = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float8_e4m3fn": "*fp8e4nv",
            "float8_e5m2": "*fp8e5", "int8": "*i8", "int32": "*i32"}
    CAP = {"sm_80": 80, "sm_89": 89, "sm_90a": 90}
    res, man, ptx_seen = {}, [], {}
    t0 = time.time()
    for case in (tk.edge_cases() if EDGES else tk.cases()):
        item = dict(case)
        try:
            A, B, C, digest = tk.make_inputs(case)
            item["inputs_sha256"] = digest
            tname, acc, _ = tk.ELEMS[case["elem"]]
            import triton.language as tl
            out = {"float32": tl.float32, "float16": tl.float16, "int32": tl.int32}[acc]
            sig = {"a_ptr": PTRS[tname], "b_ptr": PTRS[tname], "c_ptr": PTRS[acc], "d_ptr": PTRS[acc],
                   "M": "i32", "N": "i32", "K": "i32"}
            const = dict(BM=case["BM"], BN=case["BN"], BK=case["BK"], OUT=out, PREC=case["prec"],
                         IMPRECISE=case["imp"], MASKED=case["masked"], LOAD_C=case["load_c"])
            sig.update({k: "constexpr" for k in const})
            k = triton.compile(ASTSource(tk.matmul_kernel, sig, constexprs=const),
                               target=GPUTarget("cuda", CAP[case["target"]], 32),
                               options={"num_warps": case["num_warps"]})
            ptx = k.asm["ptx"]
            item["ptx_ops"] = sorted(set(re.findall(
                r"(mma\.sync[\w.]*|wgmma\.mma_async[\w.]*|cvt\.rna\.tf32\.f32|cvt\.rn\.f16x2\.e[45]m[23]x2|fma\.rn\.f32)", ptx)))
            pkey = ptx_seen.setdefault(ptx, f"ptx{len(ptx_seen)}")
            item["ptx"] = pkey
            if DRY:
                item["nparams"] = len(re.findall(r"\b\w+_param_\d+\b", ptx.split(".entry", 1)[1].split(")", 1)[0]))
                log(case["key"], item["ptx_ops"], "params", item["nparams"])
                man.append(item)
                continue
            name = re.search(r"\.entry\s+(\w+)", ptx).group(1)
            nparams = len(re.findall(r"\b\w+_param_\d+\b", ptx.split(".entry", 1)[1].split(")", 1)[0]))
            Ad, Bd, Cd = A.cuda(), B.cuda(), C.cuda()
            Dd = torch.full_like(Cd, 0)
            mod = cp.cuda.function.Module()
            mod.load(ptx.encode() + b"\0")          # cuModuleLoadData: the driver JIT-compiles the PTX for this GPU
            fn = mod.get_function(name)
            shared = int(k.metadata.shared)
            if shared > 48 * 1024:      # a driver Module's Function: set the attribute through the driver
                cp.cuda.driver.funcSetAttribute(fn.ptr, 8, shared)   # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            grid = (triton.cdiv(case["M"], case["BM"]), triton.cdiv(case["N"], case["BN"]), 1)
            args = [np.uint64(x.data_ptr()) for x in (Ad, Bd, Cd, Dd)]
            args += [np.int32(case["M"]), np.int32(case["N"]), np.int32(case["K"])]
            args += [np.uint64(0)] * (nparams - len(args))      # Triton's global / profile scratch pointers
            fn(grid, (32 * case["num_warps"], 1, 1), tuple(args), shared_mem=shared)
            torch.cuda.synchronize()
            res[case["key"] + ".d"] = bits(Dd)
            if case["target"] == "sm_90a":
                D2 = torch.full_like(Cd, 0)
                tk.launch(tk.matmul_kernel, case, Ad, Bd, Cd, D2)
                torch.cuda.synchronize()
                item["launcher_agrees"] = bool((bits(D2) == res[case["key"] + ".d"]).all())
            item["ok"] = True
            log(case["key"], item["ptx_ops"], item.get("launcher_agrees", ""))
        except Exception as ex:  # noqa: BLE001
            item["ok"] = False
            item["error"] = repr(ex)[:400]
            log(case["key"], "FAILED", repr(ex)[:400])
            traceback.print_exc(file=LOG)
        man.append(item)
    if DRY:
        return
    for text, key in ptx_seen.items():
        res[key] = np.frombuffer(lzma.compress(text.encode()), np.uint8)
    meta = dict(cases=man, triton=triton.__version__, torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                seconds=round(time.time() - t0, 1))
    res["manifest"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    path = os.path.join(OUT, "triton_interp_edges.npz" if EDGES else "triton_interp.npz")
    np.savez_compressed(path, **res)
    log("wrote", path, os.path.getsize(path), "bytes;", sum(c["ok"] for c in man), "of", len(man), "cases ok;",
        f"{time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
