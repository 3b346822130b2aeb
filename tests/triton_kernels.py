"""The @triton.jit matmul kernels that tests/test_triton.py runs under warpsim.triton.exact on CPU and
tools/triton_capture.py compiles and runs on an H100: one source for both, so the captured words and
the emulated ones come from the same program."""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, OUT: tl.constexpr,
                  PREC: tl.constexpr, IMPRECISE: tl.constexpr, MASKED: tl.constexpr, LOAD_C: tl.constexpr):
    """D = A @ B (+ C): one (BM, BN) tile per program, a plain tl.dot main loop over K in BK steps.

    MASKED: M, N, K need not be multiples of the tile (masked loads fill zeros, masked store);
    LOAD_C: the accumulator starts from C (else from zeros); OUT: the accumulator's dtype."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if LOAD_C:
        if MASKED:
            acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0)
        else:
            acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    else:
        acc = tl.zeros((BM, BN), dtype=OUT)
    for k0 in range(0, K, BK):
        if MASKED:
            a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                        mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        else:
            a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
            b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PREC, max_num_imprecise_acc=IMPRECISE, out_dtype=OUT)
    if MASKED:
        tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
    else:
        tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)


# ---- the captured cases: data shared by tools/triton_capture.py (on the GPU) and tests/test_triton.py (CPU) ----
# Plain numpy and torch only, so the capture script needs nothing of warpsim.

#: element type -> (torch dtype name of A/B, accumulator dtype name, input_precision)
ELEMS = {
    "f16": ("float16", "float32", None), "f16acc16": ("float16", "float16", None),
    "bf16": ("bfloat16", "float32", None), "tf32": ("float32", "float32", "tf32"),
    "tf32x3": ("float32", "float32", "tf32x3"), "ieee": ("float32", "float32", "ieee"),
    "e4m3": ("float8_e4m3fn", "float32", None), "e4m3acc16": ("float8_e4m3fn", "float16", None),
    "e5m2": ("float8_e5m2", "float32", None), "int8": ("int8", "int32", None),
}
#: (name, BM, BN, BK, num_warps, unmasked M, N, K, masked M, N, K): a small mma.sync tile and large tiles
TILES = [
    ("small", 16, 32, 32, 4, 32, 32, 96, 29, 27, 90),
    ("large4", 64, 64, 64, 4, 64, 64, 128, 61, 53, 120),
    ("large8", 128, 64, 64, 8, 128, 64, 128, 125, 57, 100),
]
TARGETS = ("sm_80", "sm_89", "sm_90a")


def cases():
    """Every captured kernel run: dicts with a stable key, the kernel's constexprs, sizes, seed."""
    out = []
    seed = 7000
    for target in TARGETS:
        for elem, (_, acc, prec) in ELEMS.items():
            if elem.startswith("e4m3") and target == "sm_80":
                continue                      # Triton 3.6 refuses fp8e4nv before sm_89
            if elem in ("tf32x3", "ieee") and target == "sm_89":
                continue                      # the same lowering as on sm_80 (kept short: the replay is slow)
            imps = [None]
            if elem == "e4m3" and target == "sm_90a":
                imps = [None, 16, 32, 64]       # 16: mma.sync path; 32/64: wgmma with promotion
            for tile in TILES:
                name, BM, BN, BK, nw = tile[:5]
                for masked in (False, True):
                    M, N, K = tile[8:11] if masked else tile[5:8]
                    for imp in imps:
                        if imp is not None and imp > BK:
                            continue
                        seed += 1
                        out.append(dict(key=f"{target}.{elem}.{name}.{'m' if masked else 'u'}.{imp or 0}",
                                        target=target, elem=elem, BM=BM, BN=BN, BK=BK, num_warps=nw,
                                        masked=masked, M=M, N=N, K=K, imp=imp, prec=prec, seed=seed,
                                        load_c=True))
    return out


#: edge-value runs (warpsim/hw/device/triton_interp.py --edges): overflowing int8 sums, special floats
EDGE_ELEMS = ("tf32x3", "ieee", "tf32", "f16", "f16acc16", "bf16", "int8")
#: per storage type: huge finite words (the maximum, a word cvt.rna rounds to inf, one it does not, large
#: powers of two whose products or sums overflow), tiny ones (subnormals, -0, the smallest normal) and
#: non-finite ones (inf, -inf, NaN)
EDGE_WORDS = {
    "float32": ([0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FF000, 0x7F7FEFFF, 0x5F000000, 0x7E800000],
                [0x00000001, 0x80400000, 0x00800000, 0x80000000], [0x7F800000, 0xFF800000, 0x7FC00000]),
    "float16": ([0x7BFF, 0xFBFF, 0x7800, 0x5C00], [0x0001, 0x8200, 0x0400, 0x8000], [0x7C00, 0xFC00, 0x7E00]),
    "bfloat16": ([0x7F7F, 0xFF7F, 0x7F00, 0x5F00], [0x0001, 0x8040, 0x0080, 0x8000], [0x7F80, 0xFF80, 0x7FC0]),
}
#: the share of A / B words replaced by huge, tiny, non-finite words (C: 1% non-finite)
EDGE_RATES = (0.002, 0.03, 0.0005)


def edge_cases():
    """The edge-value runs, keys "edge.<target>...": the sm_90a lowering, whose small unmasked tile is the
    mma.sync path (the sm_80 / sm_89 lowering of these types too) and large4 masked tile the wgmma path."""
    out = []
    seed = 9000
    for target in ("sm_90a",):
        for elem in EDGE_ELEMS:
            for tile, masked in ((TILES[0], False), (TILES[1], True)):
                name, BM, BN, BK, nw = tile[:5]
                M, N, K = tile[8:11] if masked else tile[5:8]
                seed += 1
                out.append(dict(key=f"edge.{target}.{elem}.{name}.{'m' if masked else 'u'}.0", target=target, elem=elem,
                                BM=BM, BN=BN, BK=BK, num_warps=nw, masked=masked, M=M, N=N, K=K, imp=None,
                                prec=ELEMS[elem][2], seed=seed, load_c=True, inputs="edges"))
    return out


def _edge_inputs(case, rng):
    """Edge inputs as numpy arrays (A, B, C): int8 with C within 2^16 of the s32 limits (about half the sums overflow);
    floats as make_inputs's with words replaced by EDGE_WORDS at EDGE_RATES (rare enough that most
    output words stay finite)."""
    import numpy as np

    tname, acc, _ = ELEMS[case["elem"]]
    M, N, K = case["M"], case["N"], case["K"]
    if tname == "int8":
        A = rng.integers(-128, 128, (M, K)).astype(np.int8)
        B = rng.integers(-128, 128, (K, N)).astype(np.int8)
        near = rng.integers(0, 2**16, (M, N))
        C = np.where(rng.random((M, N)) < 0.5, 2**31 - 1 - near, -2**31 + near).astype(np.int32)
        return A, B, C

    def gen(shape, spread, t, rates):
        import torch

        v = (rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))).astype(np.float32)
        width = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}[t]
        w = torch.from_numpy(v).to(getattr(torch, t))
        w = w.view({np.uint32: torch.int32, np.uint16: torch.int16}[width]).numpy().view(width).copy()
        for words, rate in zip(EDGE_WORDS[t], rates):
            words = np.array(words, width)
            w = np.where(rng.random(shape) < rate, words[rng.integers(0, len(words), shape)], w)
        return w

    return gen((M, K), 6, tname, EDGE_RATES), gen((K, N), 6, tname, EDGE_RATES), gen((M, N), 3, acc, (0, 0.03, 0.01))


def make_inputs(case):
    """Seeded A (M, K), B (K, N), C (M, N) as CPU torch tensors of the case's types, and a SHA-256 of their bytes.

    Floats: normal values times powers of two from 2^-6 to 2^6 (so products meet at different
    exponents); C of the accumulator type; int8 with C spread over the whole s32 range (saturation).
    Cases of edge_cases() take _edge_inputs instead."""
    import hashlib
    import numpy as np
    import torch

    tname, acc, _ = ELEMS[case["elem"]]
    rng = np.random.default_rng(case["seed"])
    M, N, K = case["M"], case["N"], case["K"]
    if case.get("inputs") == "edges":
        def tensor(x, t):
            x = torch.from_numpy(x)
            return x if t in ("int8", "int32") else x.view(getattr(torch, t))
        A, B, C = (tensor(x, t) for x, t in zip(_edge_inputs(case, rng), (tname, tname, acc)))
    elif tname == "int8":
        A = torch.from_numpy(rng.integers(-128, 128, (M, K)).astype(np.int8))
        B = torch.from_numpy(rng.integers(-128, 128, (K, N)).astype(np.int8))
        C = torch.from_numpy(rng.integers(-2**31, 2**31, (M, N), dtype=np.int64).astype(np.int32))
    else:
        def gen(shape, spread):
            return (rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))).astype(np.float32)
        A = torch.from_numpy(gen((M, K), 6)).to(getattr(torch, tname))
        B = torch.from_numpy(gen((K, N), 6)).to(getattr(torch, tname))
        C = torch.from_numpy(gen((M, N), 3)).to(getattr(torch, acc))
    h = hashlib.sha256()
    for t in (A, B, C):
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes() if t.element_size() == 1 else
                 t.contiguous().view({2: torch.int16, 4: torch.int32}[t.element_size()]).numpy().tobytes())
    return A, B, C, h.hexdigest()


def launch(kernel, case, A, B, C, D):
    """Launch ``kernel`` (matmul_kernel, compiled or interpreted) on the case's tensors."""
    import triton
    import triton.language as tl

    out = {"float32": tl.float32, "float16": tl.float16, "int32": tl.int32}[ELEMS[case["elem"]][1]]
    grid = (triton.cdiv(case["M"], case["BM"]), triton.cdiv(case["N"], case["BN"]))
    return kernel[grid](A, B, C, D, case["M"], case["N"], case["K"], BM=case["BM"], BN=case["BN"], BK=case["BK"],
                        OUT=out, PREC=case["prec"], IMPRECISE=case["imp"], MASKED=case["masked"],
                        LOAD_C=case["load_c"], num_warps=case["num_warps"])
