"""Build tests/golden/gemm_sm90_{mma,triton}.npz from the capture payload (cap/) and the H100 results
(gemm_results.npz in the working directory): python3 build_golden.py tests/golden"""
import json, os, sys
import numpy as np

from warpsim.hw.offline.convert_golden import write_compact
from warpsim.isa.catalog import BY_OPCODE
from warpsim.hw.gemm import unpack_tiles

pay = np.load("cap/payload.npz"); meta = json.loads(str(pay["meta"]))
res = np.load("gemm_results.npz"); info = json.loads(str(res["info"]))
arrays = {}
for k in pay.files:
    if k.startswith("s."):
        arrays[k] = pay[k]
cases = []
for r, run in enumerate(meta["runs"]):
    ins = BY_OPCODE[run["opcode"]]
    m, n, k = ins.mnk
    D = unpack_tiles(ins.opcode, res[f"m{r}.d"], run["Tm"], run["Tn"])
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[ins.elem("d").bits]
    key = f"case{len(cases)}"
    arrays[key + ".D"] = D.astype(dt)
    cases.append(dict(key=key, source="mma_kernel", kernel="warpsim.hw.gemm.gemm_kernel_source (one warp per m x n tile, K in order)",
                      instruction=ins.opcode, selector=run["selector"],
                      promote_every=run["promote"] * k if run["promote"] else None, set=run["set"],
                      ctype=ins.ctype))
RE = {"f16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", }
for it in info["triton"]:
    if not it.get("ok"):
        continue
    key = f"case{len(cases)}"
    arrays[key + ".D"] = res[it["key"] + ".d"]
    c = dict(key=key, source="triton", triton="3.6.0", path=it["path"], elem=it["elem"], acc=it["acc"],
             input_precision=it["input_precision"], max_num_imprecise_acc=it["max_num_imprecise_acc"],
             BLOCK_M=it["BM"], BLOCK_N=it["BN"], BLOCK_K=it["BK"], num_warps=4, num_stages=2, set=it["set"],
             ptx_ops=it["ptx_ops"], ctype=it["acc"])
    cases.append(c)
def save(path, keep):
    used = {c["set"] for c in cases if keep(c)}
    arr = {k: v for k, v in arrays.items() if (k.startswith("s.") and k.split(".")[1] in used and k.split(".")[1] not in skip_sets)
           or (k.startswith("case") and keep(cases[int(k[4:].split(".")[0])]))}
    cs = [c for c in cases if keep(c)]
    man = dict(manifest, cases=cs, sets={n: s for n, s in meta["sets"].items() if n in used},
               sets_in_other_file=sorted(used & skip_sets))
    write_compact(path, dict(arr, manifest=np.array(json.dumps(man))), "gemm")
    return used
manifest = dict(format=1, gpu=info.get("gpu"), cuda_runtime=info.get("cuda_runtime"), torch="2.11.0+cu130", triton="3.6.0",
                sets=meta["sets"], cases=cases)
skip_sets = set()
tri = save(sys.argv[1] + "/gemm_sm90_triton.npz", lambda c: c["source"] == "triton")
skip_sets = tri
save(sys.argv[1] + "/gemm_sm90_mma.npz", lambda c: c["source"] == "mma_kernel")
print(len(cases), "cases", info.get("gpu"))
