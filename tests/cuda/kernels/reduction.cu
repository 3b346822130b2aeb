// Block sum: each thread folds a grid-stride slice, then shuffles reduce each warp and one warp
// reduces the warps' partial sums through shared memory.  One partial sum per block.
#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void block_sum(const float* __restrict__ in, float* __restrict__ partial, int n) {
    __shared__ float per_warp[WARPS_PER_BLOCK];
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        acc += in[i];
    acc = warp_sum(acc);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) per_warp[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        float v = lane < blockDim.x / 32 ? per_warp[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
