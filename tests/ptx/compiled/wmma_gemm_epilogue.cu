// One warp per 16x16 tile of C = A @ B (f16 in, f32 out) with wmma; the epilogue goes through
// shared memory, writes only the elements inside M x N (a bounds check per lane) and counts the
// elements written with an atomic counter.  A is (Mp, K) and B (K, Np) row-major with Mp, Np
// rounded up to 16 (the padding is zero); C is (M, N) row-major.  blockDim = 64 (two warps, two
// tiles side by side in N), grid = (ceil(Np / 32), Mp / 16).
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm_epilogue(const half* A, const half* B, float* C, int M, int N, int K,
                                              int Np, unsigned* counter) {
    __shared__ float tile[2][16 * 16];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row0 = blockIdx.y * 16, col0 = (blockIdx.x * 2 + warp) * 16;
    if (col0 >= Np) return;                       // a whole warp past the padded width leaves
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + row0 * K + k, K);
        wmma::load_matrix_sync(b, B + k * Np + col0, Np);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(tile[warp], acc, 16, wmma::mem_row_major);
    __syncwarp();
    unsigned written = 0;
    for (int i = lane; i < 256; i += 32) {
        int r = row0 + i / 16, c = col0 + i % 16;
        if (r < M && c < N) {                     // divergent: the tiles on the edge
            C[r * N + c] = tile[warp][i];
            written++;
        }
    }
    if (written) atomicAdd(counter, written);
}
