// f16 GEMM on nvcuda::wmma: C (M x N, f32 row-major) = A (M x K, f16 row-major) * B (K x N, f16 col-major) + C0.
// One warp per 16x16 output tile, 2 warps per CTA along N; M a multiple of 16, N of 32, K of 16.
// Written for warpsim's tests (issue 14).
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void __launch_bounds__(64)
gemm_wmma(const __half* __restrict__ A, const __half* __restrict__ B, const float* __restrict__ C0,
          float* __restrict__ C, int M, int N, int K)
{
    const int warp = threadIdx.x >> 5;
    const int row = blockIdx.y * 16, col = (blockIdx.x * 2 + warp) * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fc, C0 + (size_t)row * N + col, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + (size_t)row * K + k, K);
        wmma::load_matrix_sync(fb, B + (size_t)col * K + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(C + (size_t)row * N + col, fc, N, wmma::mem_row_major);
}
