// Row softmax, one block of 128 threads per row: max and sum reduced through shared memory,
// expf from the math library (the fast-math build turns it into ex2.approx).
#include <math.h>

__device__ float block_reduce(float v, float* scratch, bool take_max) {
    int t = threadIdx.x;
    scratch[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) scratch[t] = take_max ? fmaxf(scratch[t], scratch[t + s]) : scratch[t] + scratch[t + s];
        __syncthreads();
    }
    float r = scratch[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
    __shared__ float scratch[128];
    const float* row = x + blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_reduce(m, scratch, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    s = block_reduce(s, scratch, false);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = expf(row[c] - m) / s;
}
