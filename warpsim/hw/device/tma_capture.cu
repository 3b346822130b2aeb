// Device kernel for warpsim/hw/device/tma_capture.py: one TMA tile load of a box into shared memory,
// completed through an mbarrier, then the whole shared window copied out.
// Build: nvcc -cubin -arch=sm_90a -o tma_capture.cubin tma_capture.cu
#include <cstdint>

__device__ __forceinline__ void tma_issue(int rank, uint32_t dst, const void* tmap, const int* c, uint32_t bar) {
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

// status[0]: 1 if the mbarrier phase completed, 0 on timeout; status[1]: shared address of the window;
// status[2]: shared address of the destination.
extern "C" __global__ void tma_load(const void* tmap, const int* coords, int rank, unsigned nbytes,
                                    unsigned dst_off, unsigned window, uint8_t* out, int* status) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar;
  for (unsigned i = threadIdx.x; i < window; i += blockDim.x) smem[i] = 0xA5;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
    uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(tmap) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(nbytes) : "memory");
    tma_issue(rank, base + dst_off, tmap, coords, b);
    int done = 0;
    for (int it = 0; it < (1 << 20) && !done; ++it) {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.b32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(b) : "memory");
    }
    status[0] = done; status[1] = (int)base; status[2] = (int)(base + dst_off);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < window; i += blockDim.x) out[i] = smem[i];
}
