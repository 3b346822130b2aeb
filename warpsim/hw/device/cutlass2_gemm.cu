// A CUTLASS 2.x tensor-op GEMM as sm_80 code builds it: cutlass::gemm::device::Gemm with f16 A
// (row-major) and B (column-major), f32 accumulate, C and D (row-major), a 128x128x32 threadblock
// tile, 64x64x32 warp tile, the 16x8x16 mma.sync instruction and a 3-stage cp.async pipeline.
// One launch on seeded inputs; writes what warpsim needs to replay it from the kernel's own PTX:
//   <out>/params.bin   the kernel's one parameter (GemmKernel::Params) exactly as launched
//   <out>/launch.txt   grid, block, dynamic shared bytes, buffer device addresses, kernel name
//   <out>/D.bin        the output buffer after the launch (pre-filled with 0xEE bytes)
// Inputs <in>/A.bin (M x K f16 bits), B.bin (N x K f16 bits), C.bin (M x N f32 bits) are written
// by `python3 -m warpsim.hw.gemm_cases cutlass2 DIR`.
// With an 8th argument `dry` it needs no GPU: buffers get fixed made-up device addresses and only
// params.bin and launch.txt are written (Gemm::initialize makes no CUDA call without split-K), so
// the replay can be exercised before a capture exists.
//
//   nvcc -std=c++17 -O3 -arch=sm_80 -I$CUTLASS/include -I$CUTLASS/tools/util/include cutlass2_gemm.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm.h"
#include "cutlass/epilogue/thread/linear_combination.h"

using ElementA = cutlass::half_t;
using ElementB = cutlass::half_t;
using ElementC = float;
using ElementAcc = float;

using Gemm = cutlass::gemm::device::Gemm<
    ElementA, cutlass::layout::RowMajor,
    ElementB, cutlass::layout::ColumnMajor,
    ElementC, cutlass::layout::RowMajor,
    ElementAcc,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<128, 128, 32>,
    cutlass::gemm::GemmShape<64, 64, 32>,
    cutlass::gemm::GemmShape<16, 8, 16>,
    cutlass::epilogue::thread::LinearCombination<ElementC, 128 / cutlass::sizeof_bits<ElementC>::value,
                                                 ElementAcc, ElementAcc>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>,
    3>;
using GemmKernel = Gemm::GemmKernel;

// device::Gemm holds nothing but the kernel's Params, so its bytes are the bytes run() passes.
static_assert(sizeof(Gemm) == sizeof(GemmKernel::Params), "device::Gemm is expected to hold only Params");

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

static std::vector<char> slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) { fprintf(stderr, "cannot read %s\n", p.c_str()); exit(2); }
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

static void spill(const std::string& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), n);
}

int main(int argc, char** argv) {
  if (argc != 8 && !(argc == 9 && std::string(argv[8]) == "dry")) {
    fprintf(stderr, "usage: %s IN OUT M N K alpha beta [dry]\n", argv[0]);
    return 2;
  }
  bool dry = argc == 9;
  std::string in = argv[1], out = argv[2];
  int M = atoi(argv[3]), N = atoi(argv[4]), K = atoi(argv[5]);
  float alpha = atof(argv[6]), beta = atof(argv[7]);
  auto a = slurp(in + "/A.bin"), b = slurp(in + "/B.bin"), c = slurp(in + "/C.bin");
  if (a.size() != size_t(M) * K * sizeof(ElementA) || b.size() != size_t(N) * K * sizeof(ElementB) ||
      c.size() != size_t(M) * N * sizeof(ElementC)) { fprintf(stderr, "input sizes\n"); return 2; }
  size_t d_bytes = size_t(M) * N * sizeof(ElementC);
  void *dA, *dB, *dC, *dD;
  if (dry) {     // made-up addresses in the range CUDA uses, 2 MiB apart and aligned
    unsigned long long base = 0x7f1200000000ull, step = (size_t(M) * N * 4 + K * (M + N) * 2 + (2 << 20)) & ~((2ull << 20) - 1);
    dA = (void*)base; dB = (void*)(base + step); dC = (void*)(base + 2 * step); dD = (void*)(base + 3 * step);
  } else {
    CHECK(cudaMalloc(&dA, a.size())); CHECK(cudaMalloc(&dB, b.size()));
    CHECK(cudaMalloc(&dC, c.size())); CHECK(cudaMalloc(&dD, d_bytes));
    CHECK(cudaMemcpy(dA, a.data(), a.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b.data(), b.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dC, c.data(), c.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dD, 0xEE, d_bytes));
  }

  Gemm::Arguments args({M, N, K},
                       {static_cast<ElementA*>(dA), K},      // row-major A: ld = K
                       {static_cast<ElementB*>(dB), K},      // column-major B (N x K in memory): ld = K
                       {static_cast<ElementC*>(dC), N},
                       {static_cast<ElementC*>(dD), N},
                       {alpha, beta});
  Gemm gemm;
  size_t ws_bytes = Gemm::get_workspace_size(args);
  if (ws_bytes) { fprintf(stderr, "unexpected workspace %zu\n", ws_bytes); return 3; }
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) { fprintf(stderr, "cannot implement\n"); return 3; }
  if (gemm.initialize(args, nullptr) != cutlass::Status::kSuccess) { fprintf(stderr, "initialize failed\n"); return 3; }
  spill(out + "/params.bin", &gemm, sizeof(GemmKernel::Params));
  if (!dry) {
    cutlass::Status st = gemm.run();
    if (st != cutlass::Status::kSuccess) {
      fprintf(stderr, "run failed: %s\n", cutlass::cutlassGetStatusString(st));
      return 3;
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<char> d(d_bytes);
    CHECK(cudaMemcpy(d.data(), dD, d_bytes, cudaMemcpyDeviceToHost));
    spill(out + "/D.bin", d.data(), d_bytes);
  }

  // the geometry run() used (device/gemm.h): the swizzle's grid over the tiled shape
  cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<> swizzle;
  cutlass::gemm::GemmCoord tiled = swizzle.get_tiled_shape(
      {M, N, K}, {GemmKernel::Mma::Shape::kM, GemmKernel::Mma::Shape::kN, GemmKernel::Mma::Shape::kK}, 1);
  dim3 grid = swizzle.get_grid_shape(tiled);
  int smem = int(sizeof(GemmKernel::SharedStorage));
  const char* name = "?";
  if (!dry) CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(cutlass::Kernel<GemmKernel>)));
  FILE* f = fopen((out + "/launch.txt").c_str(), "w");
  fprintf(f, "grid %u %u %u\nblock %d 1 1\nsmem %d\nparams %zu\n", grid.x, grid.y, grid.z,
          int(GemmKernel::kThreadCount), smem, sizeof(GemmKernel::Params));
  fprintf(f, "A %llu\nB %llu\nC %llu\nD %llu\nkernel %s\n", (unsigned long long)dA, (unsigned long long)dB,
          (unsigned long long)dC, (unsigned long long)dD, name);
  fclose(f);
  printf("ok %s grid %u %u block %d smem %d params %zu\n", name, grid.x, grid.y, int(GemmKernel::kThreadCount),
         smem, sizeof(GemmKernel::Params));
  return 0;
}
