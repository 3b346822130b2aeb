// A grid-stride reduction: per-thread partial sums, a warp-shuffle tree, and atomics from lane 0.
// The integer results (sum, max, count of negatives) are order-independent, so the GPU's words are
// deterministic; the float partial of each warp goes to its own slot (no float atomics).
extern "C" __global__ void warp_reduce(const int* x, int n, long long* sum, int* maxval, unsigned* negatives,
                                       float* warp_partial) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    long long s = 0;
    int m = -2147483647 - 1;
    unsigned neg = 0;
    float f = 0.0f;
    for (int i = tid; i < n; i += gridDim.x * blockDim.x) {      // lane-dependent trip counts
        int v = x[i];
        s += v;
        m = max(m, v);
        neg += v < 0;
        f += (float)v * 0.5f;
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, off);
        m = max(m, __shfl_down_sync(0xffffffffu, m, off));
        neg += __shfl_xor_sync(0xffffffffu, neg, off);
        f += __shfl_down_sync(0xffffffffu, f, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd((unsigned long long*)sum, (unsigned long long)s);
        atomicMax(maxval, m);
        if (threadIdx.x == 0) atomicAdd(negatives, neg);
        else atomicOr(negatives + 1, neg);
        warp_partial[tid / 32] = f;
    }
}
