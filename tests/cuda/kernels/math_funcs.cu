// CUDA's math library applied elementwise, one kernel per function: y[i] = f(x[i]) (or f(x[i], z[i])).
// Built with the default options, --use_fast_math, --ftz=true and --prec-div=false --prec-sqrt=false:
// each maps the same source onto different PTX (MUFU approximations, flushed subnormals, div.approx).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define UNARY(NAME, T, EXPR)                                                       \
    extern "C" __global__ void NAME(const T* x, T* y, int n) {                     \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                             \
        if (i < n) { T a = x[i]; y[i] = (EXPR); }                                  \
    }
#define BINARY(NAME, T, EXPR)                                                      \
    extern "C" __global__ void NAME(const T* x, const T* z, T* y, int n) {         \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                             \
        if (i < n) { T a = x[i], b = z[i]; y[i] = (EXPR); }                        \
    }
// packed pairs: n counts scalars, each thread one pair
#define PAIRED(NAME, T2, EXPR)                                                     \
    extern "C" __global__ void NAME(const T2* x, T2* y, int n) {                   \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                             \
        if (2 * i < n) { T2 a = x[i]; y[i] = (EXPR); }                             \
    }

UNARY(f_expf, float, expf(a))
UNARY(f_exp2f, float, exp2f(a))
UNARY(f_exp10f, float, exp10f(a))
UNARY(f_expm1f, float, expm1f(a))
UNARY(f_logf, float, logf(a))
UNARY(f_log2f, float, log2f(a))
UNARY(f_log10f, float, log10f(a))
UNARY(f_log1pf, float, log1pf(a))
UNARY(f_sinf, float, sinf(a))
UNARY(f_cosf, float, cosf(a))
UNARY(f_tanf, float, tanf(a))
UNARY(f_tanhf, float, tanhf(a))
UNARY(f_sinhf, float, sinhf(a))
UNARY(f_sqrtf, float, sqrtf(a))
UNARY(f_rsqrtf, float, rsqrtf(a))
UNARY(f_cbrtf, float, cbrtf(a))
UNARY(f_erff, float, erff(a))
UNARY(f_recip, float, 1.0f / a)
UNARY(f___expf, float, __expf(a))
UNARY(f___exp10f, float, __exp10f(a))
UNARY(f___logf, float, __logf(a))
UNARY(f___log2f, float, __log2f(a))
UNARY(f___sinf, float, __sinf(a))
UNARY(f___cosf, float, __cosf(a))
UNARY(f___tanf, float, __tanf(a))
UNARY(f___frcp_rn, float, __frcp_rn(a))
UNARY(f___fsqrt_rn, float, __fsqrt_rn(a))
BINARY(f_powf, float, powf(a, b))
BINARY(f___powf, float, __powf(a, b))
BINARY(f_div, float, a / b)
BINARY(f___fdividef, float, __fdividef(a, b))
BINARY(f___fdiv_rn, float, __fdiv_rn(a, b))

UNARY(h_hexp, __half, hexp(a))
UNARY(h_hexp2, __half, hexp2(a))
UNARY(h_hlog, __half, hlog(a))
UNARY(h_hlog2, __half, hlog2(a))
UNARY(h_hsin, __half, hsin(a))
UNARY(h_hcos, __half, hcos(a))
UNARY(h_hsqrt, __half, hsqrt(a))
UNARY(h_hrsqrt, __half, hrsqrt(a))
UNARY(h_hrcp, __half, hrcp(a))
UNARY(h_htanh, __half, htanh(a))
UNARY(h_htanh_approx, __half, htanh_approx(a))
PAIRED(h_h2exp, __half2, h2exp(a))
PAIRED(h_h2log, __half2, h2log(a))
PAIRED(h_h2tanh, __half2, h2tanh(a))
PAIRED(h_h2tanh_approx, __half2, h2tanh_approx(a))

UNARY(b_hexp, __nv_bfloat16, hexp(a))
UNARY(b_hexp2, __nv_bfloat16, hexp2(a))
UNARY(b_hlog, __nv_bfloat16, hlog(a))
UNARY(b_hsin, __nv_bfloat16, hsin(a))
UNARY(b_hsqrt, __nv_bfloat16, hsqrt(a))
UNARY(b_hrsqrt, __nv_bfloat16, hrsqrt(a))
UNARY(b_htanh, __nv_bfloat16, htanh(a))
UNARY(b_htanh_approx, __nv_bfloat16, htanh_approx(a))
PAIRED(b_h2exp, __nv_bfloat162, h2exp(a))
PAIRED(b_h2tanh, __nv_bfloat162, h2tanh(a))

UNARY(d_exp, double, exp(a))
UNARY(d_log, double, log(a))
UNARY(d_sin, double, sin(a))
UNARY(d_cos, double, cos(a))
