// Inclusive prefix sum of each block's 256 elements: a shuffle scan inside each warp, the warp
// totals scanned by warp 0, then added back (the classic two-level block scan).
extern "C" __global__ void block_scan(const float* in, float* out, int n) {
    __shared__ float warp_totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float v = i < n ? in[i] : 0.0f;
    for (int d = 1; d < 32; d *= 2) {
        float up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < blockDim.x / 32 ? warp_totals[lane] : 0.0f;
        for (int d = 1; d < 32; d *= 2) {
            float up = __shfl_up_sync(0xffffffffu, t, d);
            if (lane >= d) t += up;
        }
        warp_totals[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += warp_totals[warp - 1];
    if (i < n) out[i] = v;
}

// The same for integers, with an exclusive result (a stream-compaction offset table).
extern "C" __global__ void block_scan_exclusive_int(const int* in, int* out, int n) {
    __shared__ int buf[2][256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    int src = 0;
    buf[0][t] = (i < n && t > 0) ? in[i - 1] : 0;
    __syncthreads();
    for (int d = 1; d < blockDim.x; d *= 2) {
        int s = buf[src][t];
        if (t >= d) s += buf[src][t - d];
        buf[1 - src][t] = s;
        src = 1 - src;
        __syncthreads();
    }
    if (i < n) out[i] = buf[src][t];
}
