// Tiled f16 GEMM on ldmatrix + mma.sync + stmatrix, K loop over 16-wide slices.
// C32 (M x N, f32) = A (M x K, f16 row-major) * B (K x N, f16 row-major); C16 = C32 rounded to f16.
// A CTA of 4 warps computes a 32x32 tile; each warp a 16x16 tile (two m16n8k16 MMAs per slice).
// M, N multiples of 32, K a multiple of 16. Written for warpsim's tests (issue 14).
#include <cuda_fp16.h>
#include <stdint.h>

extern "C" __global__ void __launch_bounds__(128)
gemm_ldmatrix(const __half* __restrict__ A, const __half* __restrict__ B,
              float* __restrict__ C32, __half* __restrict__ C16, int M, int N, int K)
{
    __shared__ __align__(16) __half As[32][16];   // 32 rows x 16 k
    __shared__ __align__(16) __half Bs[16][32];   // 16 k x 32 cols
    __shared__ __align__(16) __half Cs[32][32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    const int wr = (warp >> 1) * 16, wc = (warp & 1) * 16;   // warp tile origin inside the CTA tile
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};

    for (int k0 = 0; k0 < K; k0 += 16) {
        // every thread copies 8 bytes of A and 8 bytes of B
        {
            int r = tid >> 2, c = (tid & 3) * 4;
            *(uint2*)&As[r][c] = *(const uint2*)&A[(size_t)(row0 + r) * K + k0 + c];
            int kr = tid >> 3, kc = (tid & 7) * 4;
            *(uint2*)&Bs[kr][kc] = *(const uint2*)&B[(size_t)(k0 + kr) * N + col0 + kc];
        }
        __syncthreads();
        uint32_t a[4], b[4];
        uint32_t aaddr = (uint32_t)__cvta_generic_to_shared(&As[wr + (lane & 15)][(lane >> 4) * 8]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(aaddr));
        // B: matrices (k0-7, n0-7), (k8-15, n0-7), (k0-7, n8-15), (k8-15, n8-15), transposed on load
        uint32_t baddr = (uint32_t)__cvta_generic_to_shared(&Bs[(lane & 7) + ((lane >> 3) & 1) * 8][wc + (lane >> 4) * 8]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(baddr));
        #pragma unroll
        for (int j = 0; j < 2; ++j)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * j]), "r"(b[2 * j + 1]));
        __syncthreads();
    }
    // f32 result straight to global
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
        float* p = C32 + (size_t)(row0 + wr + g) * N + col0 + wc + j * 8 + 2 * t;
        *(float2*)p = make_float2(acc[j][0], acc[j][1]);
        *(float2*)(p + 8 * (size_t)N) = make_float2(acc[j][2], acc[j][3]);
    }
    // f16 result through cvt.rn.f16x2.f32 + stmatrix into shared, then 16-byte copies to global
    uint32_t h[4];
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h[2 * j]) : "f"(acc[j][1]), "f"(acc[j][0]));
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h[2 * j + 1]) : "f"(acc[j][3]), "f"(acc[j][2]));
    }
    // matrices: (rows 0-7, n-tile 0), (rows 8-15, n-tile 0), (rows 0-7, n-tile 1), (rows 8-15, n-tile 1)
    uint32_t caddr = (uint32_t)__cvta_generic_to_shared(&Cs[wr + (lane & 7) + ((lane >> 3) & 1) * 8][wc + (lane >> 4) * 8]);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
                 :: "r"(caddr), "r"(h[0]), "r"(h[1]), "r"(h[2]), "r"(h[3]) : "memory");
    __syncthreads();
    {
        int r = tid >> 2, c = (tid & 3) * 8;
        *(uint4*)&C16[(size_t)(row0 + r) * N + col0 + c] = *(const uint4*)&Cs[r][c];
    }
}
