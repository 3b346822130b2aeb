// 256-bin byte histogram: per-block bins in shared memory, shared atomics, then global atomics.
#define BINS 256

extern "C" __global__ void histogram256(const unsigned char* data, unsigned int* bins, int n) {
    __shared__ unsigned int local_bins[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local_bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local_bins[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local_bins[b]) atomicAdd(&bins[b], local_bins[b]);
}
