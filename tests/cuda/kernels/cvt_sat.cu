// .sat on float destinations, one input word per thread: cvt.sat.f32.f32 (with and without .ftz),
// cvt.rn.sat.f32.f64 and cvt.rn.sat.f16.f32 as inline PTX, so ptxas sees exactly these forms.
#include <stdint.h>

extern "C" __global__ void cvt_sat(const uint32_t* x32, const uint64_t* x64, uint32_t* sat32, uint32_t* sat32_ftz,
                                   uint32_t* sat_from64, uint16_t* sat16, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t a = x32[i], r, rf, rd;
    uint64_t b = x64[i];
    uint16_t h;
    asm volatile("{ .reg .f32 s, d; mov.b32 s, %1; cvt.sat.f32.f32 d, s; mov.b32 %0, d; }" : "=r"(r) : "r"(a));
    asm volatile("{ .reg .f32 s, d; mov.b32 s, %1; cvt.ftz.sat.f32.f32 d, s; mov.b32 %0, d; }" : "=r"(rf) : "r"(a));
    asm volatile("{ .reg .f64 s; .reg .f32 d; mov.b64 s, %1; cvt.rn.sat.f32.f64 d, s; mov.b32 %0, d; }"
                 : "=r"(rd) : "l"(b));
    asm volatile("{ .reg .f32 s; .reg .b16 d; mov.b32 s, %1; cvt.rn.sat.f16.f32 d, s; mov.b16 %0, d; }"
                 : "=h"(h) : "r"(a));
    sat32[i] = r;
    sat32_ftz[i] = rf;
    sat_from64[i] = rd;
    sat16[i] = h;
}
