// Tensor-core GEMM with inline PTX mma.sync m16n8k16 (f16 in, f32 accumulate).  One warp per
// 16x8 tile of D = A B; A row-major MxK, B column-major (stored as NxK), D row-major.
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t pair(const half* p) {
    return *reinterpret_cast<const uint32_t*>(p);
}

extern "C" __global__ void mma_gemm(const half* A, const half* Bt, float* D, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    int tiles_n = N / 8;
    int m0 = (warp / tiles_n) * 16, n0 = (warp % tiles_n) * 8;
    if (m0 >= M) return;
    int group = lane / 4, quad = lane % 4;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        const half* a_lo = A + (m0 + group) * K + k0 + quad * 2;
        const half* a_hi = A + (m0 + group + 8) * K + k0 + quad * 2;
        uint32_t a0 = pair(a_lo), a1 = pair(a_hi), a2 = pair(a_lo + 8), a3 = pair(a_hi + 8);
        const half* b_col = Bt + (n0 + group) * K + k0 + quad * 2;
        uint32_t b0 = pair(b_col), b1 = pair(b_col + 8);
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    float* out_lo = D + (m0 + group) * N + n0 + quad * 2;
    float* out_hi = D + (m0 + group + 8) * N + n0 + quad * 2;
    out_lo[0] = d[0]; out_lo[1] = d[1];
    out_hi[0] = d[2]; out_hi[1] = d[3];
}
