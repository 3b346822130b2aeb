// Device kernels for warpsim/hw/device/tma_capture.py: one TMA tile load of a box into shared memory,
// completed through an mbarrier, then the whole shared window copied out.
// Build: nvcc -cubin -arch=sm_90a -o tma_capture.cubin tma_capture.cu
//
// tma_load takes the tensormap the way CUTLASS 3 does: a 64-byte aligned 128-byte struct passed by
// value as a `const __grid_constant__` kernel parameter, whose generic address (cvta.param) is the
// instruction's tensorMap operand.  The first version passed a pointer to a 128-byte global buffer and
// died with cudaErrorIllegalInstruction on the first case; tma_load_gmem keeps that form (with the
// tensormap proxy acquire fence the PTX ISA asks for) so that the capture's probe can tell whether the
// global-memory tensormap was the cause.
//
// Dynamic shared memory is only guaranteed 16-byte aligned, so the window is aligned to 1024 bytes
// here at run time (the launch asks for window + 1024 bytes): a tile copy's destination must be
// 128-byte aligned, and 1024 keeps the 128B swizzle pattern's phase at zero.
#include <cstdint>

struct __align__(64) TensorMapBytes { unsigned char raw[128]; };

__device__ __forceinline__ void tma_issue(int rank, uint32_t dst, uint64_t tmap, const int* c, uint32_t bar) {
  switch (rank) {
    case 1: asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2}], [%3];" :: "r"(dst), "l"(tmap), "r"(c[0]), "r"(bar) : "memory"); break;
    case 2: asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];" :: "r"(dst), "l"(tmap), "r"(c[0]), "r"(c[1]), "r"(bar) : "memory"); break;
    case 3: asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4}], [%5];" :: "r"(dst), "l"(tmap), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(bar)
                         : "memory"); break;
    case 4: asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3, %4, %5}], [%6];" :: "r"(dst), "l"(tmap), "r"(c[0]), "r"(c[1]), "r"(c[2]),
                         "r"(c[3]), "r"(bar) : "memory"); break;
    default: asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                          " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" :: "r"(dst), "l"(tmap), "r"(c[0]), "r"(c[1]),
                          "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(bar) : "memory"); break;
  }
}

// status[0]: 1 if the mbarrier phase completed, 2 if it completed only after status[3] more bytes were
// completed by hand, 0 on timeout; status[1]: shared address of the window; status[2]: shared address of
// the destination.
__device__ __forceinline__ void load_box(uint64_t tmap, bool global_tmap, const int* coords, int rank, unsigned nbytes,
                                         unsigned dst_off, unsigned window, uint8_t* out, int* status) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t bar;
  uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
  uint8_t* smem = smem_raw + ((1024u - raw % 1024u) % 1024u);
  for (unsigned i = threadIdx.x; i < window; i += blockDim.x) smem[i] = 0xA5;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
    uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    if (global_tmap) asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(tmap) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(nbytes) : "memory");
    tma_issue(rank, base + dst_off, tmap, coords, b);
    int done = 0;
    for (int it = 0; it < (1 << 18) && !done; ++it) {     // test_wait never suspends: a timeout costs ~10 ms
      asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0; selp.b32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b) : "memory");
    }
    // on a timeout, measure the bytes still pending: complete them 16 at a time until the phase flips
    // (status[3]; so expect_tx - status[3] is the transaction count the copy completed)
    int missing = 0;
    for (unsigned k = 16; !done && k <= nbytes; k += 16) {
      asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 16;" :: "r"(b) : "memory");
      asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0; selp.b32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b) : "memory");
      if (done) missing = (int)k;
    }
    status[0] = missing ? 2 : done; status[1] = (int)base; status[2] = (int)(base + dst_off); status[3] = missing;
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < window; i += blockDim.x) out[i] = smem[i];
}

extern "C" __global__ void tma_load(const __grid_constant__ TensorMapBytes tmap, const int* coords, int rank,
                                    unsigned nbytes, unsigned dst_off, unsigned window, uint8_t* out, int* status) {
  load_box(reinterpret_cast<uint64_t>(&tmap), false, coords, rank, nbytes, dst_off, window, out, status);
}

extern "C" __global__ void tma_load_gmem(const void* tmap, const int* coords, int rank, unsigned nbytes,
                                         unsigned dst_off, unsigned window, uint8_t* out, int* status) {
  load_box(reinterpret_cast<uint64_t>(tmap), true, coords, rank, nbytes, dst_off, window, out, status);
}
