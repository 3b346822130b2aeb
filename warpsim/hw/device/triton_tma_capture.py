"""Device script: a Triton 3.6 matmul fed by host-side tensor descriptors (TMA), launched on an H100.

Run from the repository root on a machine with an H100, CUDA 13, PyTorch and Triton 3.6:
    OUT=/some/dir python3 warpsim/hw/device/triton_tma_capture.py
(about 30 s).  Writes $OUT/triton_tma.npz; commit it as tests/golden/triton_tma_sm90.npz
(tests/test_triton_tma.py replays it).  Per case: the PTX Triton compiled (the launch runs it,
through Triton's own launcher), grid / block / shared bytes, the device addresses of A, B and C,
the seeded f16 inputs, the f32 words the H100 wrote into C, and every kernel parameter's bytes
in PTX order.  The three 128-byte CUtensorMaps are read out of the PyCUtensorMap objects
Triton's launcher passes (its ``fill_tma_descriptor`` is wrapped; the bytes sit at offset 128 of
the object, ``_Alignas(128)`` after the Python header), so they are the launch's own bytes.
Triton expands each descriptor argument into (tensormap, shape as i32 x rank, strides as
i64 x rank); then M, N, K and the global / profile scratch pointers (both 0: asserted).
No warpsim import: this runs on a bare GPU machine.
"""

import ctypes
import os
import time

import numpy as np

SEED = 2603
#: (M, N, K): one exact fit of the 64 x 64 x 64 blocks, one ragged (TMA zero fill and clipped stores)
SHAPES = [(128, 128, 128), (100, 72, 80)]
BLOCK = 64


def main():
    import torch
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def matmul_tma(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc)

    utils = triton.runtime.driver.active.utils
    fill = utils.fill_tma_descriptor
    seen = []

    def recording_fill(*args):
        desc = fill(*args)
        seen.append((args, np.frombuffer(ctypes.string_at(id(desc) + 128, 128), dtype=np.uint8).copy()))
        return desc

    utils.fill_tma_descriptor = recording_fill
    out = os.environ.get("OUT", ".")
    res = {"seed": np.array(SEED), "shapes": np.array(SHAPES, np.int64), "triton_version": np.array(triton.__version__)}
    rng = np.random.default_rng(SEED)
    t0 = time.time()
    for case, (M, N, K) in enumerate(SHAPES):
        A = rng.standard_normal((M, K)).astype(np.float16)
        B = rng.standard_normal((N, K)).astype(np.float16)      # B is N x K (C = A @ B.T)
        a, b = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        c = torch.full((M, N), float("nan"), dtype=torch.float32, device="cuda")
        descs = [TensorDescriptor.from_tensor(t, [BLOCK, BLOCK]) for t in (a, b, c)]
        seen.clear()
        grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
        k = matmul_tma[grid](*descs, M, N, K, BLOCK_M=BLOCK, BLOCK_N=BLOCK, BLOCK_K=BLOCK, num_warps=4, num_stages=3)
        torch.cuda.synchronize()
        md = k.metadata
        assert getattr(md, "global_scratch_size", 0) == 0 and getattr(md, "profile_scratch_size", 0) == 0, \
            "the kernel needs scratch memory: its pointers would have to be recorded too"
        assert len(seen) == 3, f"expected 3 tensormaps from fill_tma_descriptor, saw {len(seen)}"
        params, kinds = [], []
        for t, (args, raw) in zip((a, b, c), seen):
            assert int(args[0]) == t.data_ptr()
            params += [raw.tobytes()] + [np.int32(v).tobytes() for v in t.shape] + \
                      [np.int64(v).tobytes() for v in t.stride()]
            kinds += ["tensormap", "i32", "i32", "i64", "i64"]
        params += [np.int32(v).tobytes() for v in (M, N, K)] + [np.uint64(0).tobytes()] * 2
        kinds += ["i32"] * 3 + ["u64"] * 2
        p = f"{case}."
        res.update({p + "A": A.view(np.uint16), p + "B": B.view(np.uint16),
                    p + "C": c.cpu().numpy().view(np.uint32),
                    p + "addr": np.array([a.data_ptr(), b.data_ptr(), c.data_ptr()], np.uint64),
                    p + "grid": np.array(list(grid) + [1], np.int64), p + "block": np.array([md.num_warps * 32, 1, 1]),
                    p + "shared": np.array(md.shared), p + "name": np.array(md.name),
                    p + "ptx": np.frombuffer(k.asm["ptx"].encode(), dtype=np.uint8),
                    p + "param_sizes": np.array([len(x) for x in params], np.int64),
                    p + "params": np.frombuffer(b"".join(params), dtype=np.uint8), p + "param_kinds": np.array(kinds),
                    p + "fill_args": np.array(repr([s[0] for s in seen]))})
        want = (A.astype(np.float64) @ B.astype(np.float64).T)
        print(f"case {case} M,N,K={M, N, K}: max |C - A@B.T| = {np.abs(c.cpu().numpy() - want).max()}", flush=True)
    np.savez_compressed(os.path.join(out, "triton_tma.npz"), **res)
    print(f"{len(SHAPES)} launches, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
