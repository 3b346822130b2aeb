"""Capture kernels for ``tcgen05.mma`` (sm_100a): one CUDA kernel per case, and the B200 runner.

Each kernel (one CTA of 128 threads) copies a shared-memory image prepared on the host (A and B
K-major, unswizzled, laid out by :mod:`warpsim.isa.smem`), allocates tensor memory, stores C (and,
for block-scaled kinds, the scale-factor cells) with ``tcgen05.st.32x32b``, issues one
``tcgen05.mma`` from one thread with sm_100 shared-memory descriptors and the instruction
descriptor, commits to an mbarrier, waits, reads D back with ``tcgen05.ld.32x32b`` and stores it.
``warpsim/hw/offline/tcgen05_replay.py`` then compares D with :func:`warpsim.tcgen05_mma` on the same bytes.

    python -m warpsim.hw.tcgen05_capture --out DIR          # compile; run where an sm_100 GPU is
    python -m warpsim.hw.tcgen05_capture --source k.cu      # only write the CUDA source
    python warpsim/hw/offline/tcgen05_replay.py DIR/tcgen05_sm100a.npz   # compare with the model

Without an sm_100 device (an H100, say) it still compiles the kernels with ``nvcc -arch=sm_100a`` and
writes ``DIR/tcgen05_capture.json`` saying so; nothing runs.  ``DIR/tcgen05_sm100a.npz`` holds, per
case, the inputs, the descriptors and the GPU's D words.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# (spelling, A type, B type, D type, N[, flags]): cta_group::1, A and B from descriptors, M = 128 -- or
# M = 64 with "m64" (data-path layout F, or E with .ws); with "atmem", A from tensor memory (its cells in the
# scale-cell columns from SF_COL_A; layout and .ashift are warpsim's guesses, warpsim.ptx.tmem.read_a,
# which these cases would settle).  Sparse spellings keep their metadata in tensor memory from META_COL
# (warpsim.ptx.tmem.sparse_columns: a guessed place these cases would settle too).  "pair": cta_group::2 on a
# 2-CTA cluster, M = 256 (or 128 with "m128"), each CTA's image holding its half of A's rows and B's columns.
CASES = (
    ("tcgen05.mma.cta_group::1.kind::f16", "f16", "f16", "f32", 64),
    ("tcgen05.mma.cta_group::1.kind::f16", "bf16", "bf16", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::f16", "f16", "f16", "f16", 32),
    ("tcgen05.mma.cta_group::1.kind::tf32", "tf32", "tf32", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::f8f6f4", "e4m3", "e5m2", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::f8f6f4", "e2m1", "e3m2", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::i8", "s8", "u8", "s32", 32),
    ("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale", "e4m3", "e4m3", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16", "e2m1", "e2m1", "f32", 32),
    ("tcgen05.mma.cta_group::1.kind::f16", "f16", "f16", "f32", 32, "atmem"),
    ("tcgen05.mma.cta_group::1.kind::f16.ashift.collector::a::discard", "bf16", "bf16", "f32", 32, "atmem"),
    ("tcgen05.mma.cta_group::1.kind::tf32", "tf32", "tf32", "f32", 32, "atmem"),
    ("tcgen05.mma.ws.cta_group::1.kind::f16", "f16", "f16", "f32", 64, "m64"),
    ("tcgen05.mma.cta_group::1.kind::f16", "f16", "f16", "f32", 32, "m64"),
    ("tcgen05.mma.sp.cta_group::1.kind::f16", "f16", "f16", "f32", 32),
    ("tcgen05.mma.sp.cta_group::1.kind::mxf8f6f4.block_scale", "e4m3", "e4m3", "f32", 32),
    ("tcgen05.mma.cta_group::2.kind::f16", "f16", "f16", "f32", 32, "pair"),
    ("tcgen05.mma.cta_group::2.kind::f16", "f16", "f16", "f32", 64, "pair", "m128"),
)
NCOLS = 256     # tensor-memory columns allocated per kernel: D from column 0, scale cells from column 128
SF_COL_A, SF_COL_B = 128, 136
META_COL = SF_COL_A + 4      # sparsity metadata: up to 4 cells per row between the A and B scale cells

_PRELUDE = r"""
#include <cstdint>
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
"""

_KERNEL = r"""
extern "C" __global__ void {cluster}__launch_bounds__(128) {name}(const uint8_t* __restrict__ img, int img_bytes,
    unsigned long long adesc, unsigned long long bdesc, uint32_t idesc, const uint32_t* __restrict__ c_in,
    const uint32_t* __restrict__ sf_in, uint32_t* __restrict__ d_out, int enable_d) {{
  extern __shared__ __align__(1024) uint8_t sm[];
  __shared__ uint32_t tmem_base;
  __shared__ __align__(8) uint64_t mbar;
  const int tid = threadIdx.x, warp = tid / 32;
  uint32_t rank = 0;
  {rank}
  img += rank * img_bytes; c_in += rank * 128 * {n}; sf_in += rank * 128 * 16; d_out += rank * 128 * {n};
  for (int i = tid; i < img_bytes; i += 128) sm[i] = img[i];
  if (warp == 0) {{
    asm volatile("tcgen05.alloc.cta_group::{g}.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem_u32(&tmem_base)), "r"({ncols}));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::{g}.sync.aligned;");
  }}
  if (tid == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&mbar)));
  asm volatile("fence.proxy.async.shared::cta;");
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;");
  const uint32_t tmem = tmem_base;
  const uint32_t lane_addr = tmem + ((uint32_t)(warp * 32) << 16);
  for (int j = 0; j < {n}; ++j)
    asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {{%1}};" :: "r"(lane_addr + j), "r"(c_in[tid * {n} + j]));
  for (int j = 0; j < 16; ++j)
    asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {{%1}};" :: "r"(lane_addr + {sfa} + j), "r"(sf_in[tid * 16 + j]));
  asm volatile("tcgen05.wait::st.sync.aligned;");
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  {sync}
  asm volatile("tcgen05.fence::after_thread_sync;");
  if (tid == 0 && rank == 0) {{
    const unsigned long long base = (unsigned long long)(smem_u32(sm) >> 4);
    asm volatile("{{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n {mma}\n}}"
                 :: "r"(tmem), "l"(adesc + base), "l"(bdesc + base), "r"(idesc), "r"(enable_d),
                    "r"(tmem + {sfa}), "r"(tmem + {sfb}), "r"(tmem + {meta}));
    {commit}
  }}
  asm volatile("{{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra WAIT_%=;\n}}"
               :: "r"(smem_u32(&mbar)));
  asm volatile("tcgen05.fence::after_thread_sync;");
  for (int j = 0; j < {n}; ++j) {{
    uint32_t r;
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%0}}, [%1];" : "=r"(r) : "r"(lane_addr + j));
    asm volatile("tcgen05.wait::ld.sync.aligned;");
    d_out[tid * {n} + j] = r;
  }}
  asm volatile("tcgen05.fence::before_thread_sync;");
  __syncthreads();
  {sync}
  if (warp == 0)
    asm volatile("tcgen05.dealloc.cta_group::{g}.sync.aligned.b32 %0, %1;" :: "r"(tmem), "r"({ncols}));
}}
"""


#: the kernel's cta_group-dependent parts: one CTA, or a 2-CTA cluster whose rank 0 issues for the pair and
#: commits to both CTAs' mbarriers (each CTA copies its own image, C and scale cells, and reads its own D)
_GROUP = {
    False: dict(cluster="", g=1, rank="", sync="", commit='asm volatile("tcgen05.commit.cta_group::1.mbarrier::'
                'arrive::one.shared::cluster.b64 [%0];" :: "r"(smem_u32(&mbar)));'),
    True: dict(cluster="__cluster_dims__(2, 1, 1) ", g=2,
               rank='asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));',
               sync='asm volatile("barrier.cluster.arrive.aligned;\\n barrier.cluster.wait.aligned;" ::: "memory");',
               commit='asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::'
                      'cluster.b64 [%0], %1;" :: "r"(smem_u32(&mbar)), "h"((unsigned short)3));'),
}


def _mma_statement(spelling: str, a_tmem: bool = False) -> str:
    a = "[%5]" if a_tmem else "%1"
    meta = ", [%7]" if ".sp." in spelling else ""
    scales = ", [%5], [%6]" if ".block_scale" in spelling else ""
    return f"{spelling} [%0], {a}, %2{meta}, %3{scales}, p;"


def kernel_source(cases=CASES) -> str:
    """CUDA source with one kernel per case (``tc05_<i>``)."""
    parts = [_PRELUDE]
    for i, (sp, _, _, _, n, *rest) in enumerate(cases):
        parts.append(_KERNEL.format(name=f"tc05_{i}", n=n, ncols=NCOLS, sfa=SF_COL_A, sfb=SF_COL_B, meta=META_COL,
                                    mma=_mma_statement(sp, "atmem" in rest), **_GROUP["pair" in rest]))
    return "\n".join(parts)


def compile_cubin(source: str, nvcc: str = "nvcc") -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        cu, out = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.cubin")
        with open(cu, "w") as f:
            f.write(source)
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_100a", "-O2", "-o", out, cu], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"nvcc failed for sm_100a:\n{r.stderr[-4000:]}")
        with open(out, "rb") as f:
            return f.read()


def case_inputs(case, seed: int):
    """Host-side inputs of one case: smem image, descriptors, idesc, C words, scale cells, A/B/scale values."""

    from ..isa import smem as S
    from ..isa import tcgen05 as t5
    from ..isa.catalog import TCGEN05_K
    from ..isa.types import TYPES

    sp, at, bt, dt, n, *rest = case
    op = t5.parse_tcgen05(sp)
    k = TCGEN05_K[op.kind] * (2 if op.sparse else 1)     # logical K
    ka = k // 2 if op.sparse else k                        # A's stored elements per row
    ncta = 2 if "pair" in rest else 1
    m = 64 if "m64" in rest else 128 if ncta == 1 or "m128" in rest else 256
    rng = np.random.default_rng(seed)

    def bits(t, shape):
        e = TYPES[t]
        if e.kind == "int":
            return rng.integers(0, 1 << e.bits, shape).astype(np.uint64)
        vals = rng.choice([0.5, 1.0, 1.5, 2.0, -1.0, -0.5, 3.0, 0.25], size=shape)
        from ..isa.codec import to_bits as _values_to_bits

        return _values_to_bits(vals.astype(np.float32 if t == "tf32" else e.numpy_dtype), e)

    A, B = bits(at, (m, ka)), bits(bt, (n, k))         # B as B^T (N, K)
    cont = 8 if op.kind in ("f8f6f4", "mxf8f6f4") else TYPES[at].bits
    # each CTA's image (two for a pair: A's rows and B's columns in halves, even rank first)
    da, sa = S.dense_layout(m // ncta, cont, "K", "none", 0, kbytes=ka * cont // 8)
    b0 = -(-sa // 1024) * 1024
    db, sb = S.dense_layout(n // ncta, cont, "K", "none", b0, kbytes=k * cont // 8)
    img = np.zeros((ncta, b0 + sb), np.uint8)
    for p in range(ncta):
        S.write_operand(img[p:p + 1], da, A[None, p * m // ncta:(p + 1) * m // ncta], cont)
        S.write_operand(img[p:p + 1], db, B[None, p * n // ncta:(p + 1) * n // ncta], cont)
    to100 = lambda d: t5.encode_smem_desc(*(lambda x: (x.start, x.lbo, x.sbo))(S.decode_descriptor(d)))  # noqa: E731
    stype = ("ue4m3" if op.scale_block == 16 else "ue8m0") if op.block_scaled else None
    idesc = t5.encode_idesc(op.kind, at, bt, dt, m, n, scale_type=stype, sparse=op.sparse)
    cbits = 16 if dt == "f16" else 32
    C = rng.integers(0, 4, (ncta, 128, n)).astype(np.float32)
    cw = (C.astype(np.float16).view(np.uint16).astype(np.uint32) if cbits == 16 else
          (C.astype(np.int32).view(np.uint32) if dt == "s32" else C.view(np.uint32)))
    sf = np.zeros((ncta, 128, 16), np.uint32)
    if ncta == 2 and (op.block_scaled or op.sparse or rest != ["pair"] + (["m128"] if "m128" in rest else [])):
        raise NotImplementedError("pair cases are dense, from descriptors, without scale factors (for now)")
    if op.block_scaled:   # scale cells: byte s of column SF_COL_A (row i, lane i) / SF_COL_B (column j, lane j)
        nscale = k // op.scale_block
        sa_b = rng.integers(124, 131, (128, nscale)) if stype == "ue8m0" else \
            np.array([0x30, 0x38, 0x40, 0x44], np.int64)[rng.integers(0, 4, (128, nscale))]
        sb_b = rng.integers(124, 131, (n, nscale)) if stype == "ue8m0" else \
            np.array([0x30, 0x38, 0x40, 0x44], np.int64)[rng.integers(0, 4, (n, nscale))]
        sf[0, :, 0] = (sa_b << (8 * np.arange(nscale))).sum(axis=1).astype(np.uint32)
        sf[0, :n, SF_COL_B - SF_COL_A] = (sb_b << (8 * np.arange(nscale))).sum(axis=1).astype(np.uint32)
    if "atmem" in rest:   # A's rows in lanes, its K elements packed along the cells (warpsim.ptx.tmem.read_a)
        per = 32 // cont
        cells = (A.reshape(128, -1, per) << (cont * np.arange(per, dtype=np.uint64))).sum(axis=2)
        sf[0, :, :cells.shape[1]] = cells.astype(np.uint32)
    if op.sparse:         # two distinct sorted 2-bit indices per group of four, 16 per cell, row i in lane i
        idx = np.sort(np.argsort(rng.random((m, ka // 2, 4)), axis=-1)[..., :2], axis=-1).reshape(m, ka).astype(np.uint64)
        cells = (idx.reshape(m, -1, 16) << (2 * np.arange(16, dtype=np.uint64))).sum(axis=2)
        sf[0, :m, META_COL - SF_COL_A:META_COL - SF_COL_A + cells.shape[1]] = cells.astype(np.uint32)
    one = ncta == 1     # one CTA's arrays keep their single-CTA shapes
    return dict(img=img[0] if one else img, adesc=to100(da), bdesc=to100(db), idesc=idesc,
                c=np.ascontiguousarray(cw[0] if one else cw), sf=sf[0] if one else sf, A=A, B=B)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="directory for tcgen05_sm100a.npz and tcgen05_capture.json")
    ap.add_argument("--source", help="only write the CUDA source here")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    src = kernel_source()
    if a.source:
        with open(a.source, "w") as f:
            f.write(src)
        return 0
    if not a.out:
        ap.error("--out DIR (or --source FILE)")
    os.makedirs(a.out, exist_ok=True)
    report = {"cases": [list(c) for c in CASES]}
    cubin = compile_cubin(src, a.nvcc)
    report["compiled"] = f"{len(cubin)} bytes of sm_100a cubin"
    try:
        import cupy as cp

        cc = cp.cuda.Device().compute_capability
    except Exception as exc:   # no CuPy / no GPU: the compile check is the result
        cc = None
        report["device"] = f"none usable ({exc})"
    if cc is not None and not str(cc).startswith("10"):
        report["device"] = f"compute capability {cc}: tcgen05 needs an sm_100 GPU (B200/GB200); nothing run"
        cc = None
    arrays = {}
    if cc is not None:
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(cubin)
            path = f.name
        mod = cp.RawModule(path=path)
        report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        report["results"] = []
        for i, case in enumerate(CASES):
            inp = case_inputs(case, a.seed + i)
            ncta = 2 if "pair" in case else 1
            d = cp.zeros(inp["c"].shape, cp.uint32)
            fn = mod.get_function(f"tc05_{i}")
            smem = int(inp["img"].size) // ncta
            fn.max_dynamic_shared_size_bytes = max(smem, 1024)
            fn((ncta,), (128,), (cp.asarray(inp["img"]), np.int32(smem), np.uint64(inp["adesc"]), np.uint64(inp["bdesc"]),
                              np.uint32(inp["idesc"]), cp.asarray(inp["c"]), cp.asarray(inp["sf"]), d, np.int32(1)),
               shared_mem=smem)
            gpu = cp.asnumpy(d)
            report["results"].append({"case": list(case), "words": int(gpu.size)})
            for key in ("img", "c", "sf", "A", "B"):
                arrays[f"{i}.{key}"] = inp[key]
            arrays[f"{i}.desc"] = np.array([inp["adesc"], inp["bdesc"], inp["idesc"]], np.uint64)
            arrays[f"{i}.gpu"] = gpu
        arrays["cases"] = np.array([json.dumps(list(c)) for c in CASES])
        np.savez_compressed(os.path.join(a.out, "tcgen05_sm100a.npz"), **arrays)
    with open(os.path.join(a.out, "tcgen05_capture.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
