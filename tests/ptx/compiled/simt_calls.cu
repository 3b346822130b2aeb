// SIMT control flow, calls and memory as nvcc emits them: a by-value parameter struct holding
// device pointers, lanes that leave early, loops with lane-dependent trip counts (Collatz steps),
// a non-inlined recursive device function, a dynamically indexed local array (.local memory),
// a divergent if/else with shared memory and a barrier, and atomics on global and shared memory.
struct Params {
    const int* in;
    int* out;
    unsigned* stats;
    int n;
    int salt;
};

__device__ __noinline__ int gcd_rec(int a, int b) { return b == 0 ? a : gcd_rec(b, a % b); }

__device__ __noinline__ int collatz_steps(unsigned v) {
    int steps = 0;
    while (v > 1 && steps < 1000) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        steps++;
    }
    return steps;
}

extern "C" __global__ void simt_calls(Params p) {
    __shared__ int hist[8];
    __shared__ unsigned order[128];
    int t = threadIdx.x;
    if (t < 8) hist[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    int v = i < p.n ? p.in[i] : 0;
    int local[16];
    for (int k = 0; k < 16; k++) local[k] = v * k + p.salt;
    int pick = local[(v ^ t) & 15];                   // dynamic index: .local memory
    int r;
    if (v & 1) {                                      // divergent if/else
        r = collatz_steps((unsigned)(v & 0xffff) + 1);
    } else {
        r = gcd_rec(v & 0xfff, (t + 1) * 6) + pick % 7;
    }
    atomicAdd(&hist[r & 7], 1);
    atomicInc(p.stats + 2, 1000000u);
    order[t] = (unsigned)(t & 3);
    __syncthreads();
    if (i >= p.n) return;                             // lanes past the end leave
    p.out[i] = r * 1000 + hist[r & 7] + (int)order[t];
    atomicMax(p.stats, (unsigned)r);
    atomicMin(p.stats + 1, (unsigned)r);
    atomicXor(p.stats + 3, (unsigned)v);
    atomicCAS(p.stats + 4 + (i & 3), 0u, 7u);         // the first lane of each class swaps, the rest see 7
}
