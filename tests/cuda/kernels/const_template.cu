// Polynomial evaluation with coefficients in __constant__ memory, templated on the element type
// and the degree; a __device__ counter records how many elements were evaluated.
__constant__ float poly_coeffs[8];
__device__ unsigned int evaluated;

template <typename T, int Degree>
__global__ void horner(const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T acc = T(poly_coeffs[Degree]);
    for (int d = Degree - 1; d >= 0; --d) acc = acc * x[i] + T(poly_coeffs[d]);
    y[i] = acc;
    atomicAdd(&evaluated, 1u);
}

template __global__ void horner<float, 7>(const float*, float*, int);
template __global__ void horner<double, 3>(const double*, double*, int);
