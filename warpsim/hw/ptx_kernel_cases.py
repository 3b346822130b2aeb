import numpy as np
rng = np.random.default_rng(1414)
IN = {}
def f16w(n, special):
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-3, 4, n))).astype(np.float16).view(np.uint16).copy()
    if special:
        sp = rng.random(n) < 0.02
        pool = np.array([0x8000, 0x0000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x0400], np.uint16)
        x[sp] = rng.choice(pool, sp.sum())
        big = rng.random(n) < 0.05
        x[big] = (rng.standard_normal(big.sum()) * 3e4).astype(np.float16).view(np.uint16)
    return x
CASES = []
for name, (M, N, K) in {"ldm": (64, 64, 80), "ldm_small": (32, 32, 32)}.items():
    for sp in (0, 1):
        IN[f"{name}{sp}_A"] = f16w(M * K, sp); IN[f"{name}{sp}_B"] = f16w(K * N, sp)
        CASES.append({"kernel": "gemm_ldmatrix", "key": f"{name}{sp}", "M": M, "N": N, "K": K})
for sp in (0, 1):
    M, N, K = 32, 64, 80
    IN[f"wmma{sp}_A"] = f16w(M * K, sp); IN[f"wmma{sp}_B"] = f16w(K * N, sp)
    c = (rng.standard_normal(M * N) * 4).astype(np.float32).view(np.uint32)
    if sp:
        c[rng.random(M * N) < 0.02] = 0x7F800000
    IN[f"wmma{sp}_C0"] = c
    CASES.append({"kernel": "gemm_wmma", "key": f"wmma{sp}", "M": M, "N": N, "K": K})
np.savez_compressed("kernels_in.npz", **IN)
import json; json.dump(CASES, open("kernels.json", "w"))
