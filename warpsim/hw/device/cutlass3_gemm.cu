// A CUTLASS 3 Hopper GEMM as production code builds it (CollectiveBuilder, TMA warp-specialized
// cooperative or ping-pong kernel, 2-CTA cluster with multicast, TMA-store epilogue, optionally a
// fused bias + activation epilogue), launched once on seeded inputs; writes what warpsim needs to
// replay the launch from the kernel's own PTX:
//   <out>/params.bin   the kernel's parameter bytes exactly as launched (Params, CUtensorMaps inside)
//   <out>/launch.txt   grid, block, cluster, dynamic shared bytes, buffer device addresses, kernel name
//   <out>/D.bin        the output buffer after the launch
// Inputs <in>/A.bin, B.bin, C.bin (and bias.bin for a fused bias) are raw element bits written by
// warpsim/hw/device/cutlass3.py.  An SM count argument > 0 caps the persistent grid (so each CTA
// walks several tiles); 0 takes the device's.
//
//   nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I$CUTLASS/include -DWS_FP8=0|1 \
//        [-DWS_PINGPONG=1] [-DWS_FUSION=0|1|2] [-DWS_D_F16=1] cutlass3_gemm.cu
//   WS_FUSION 1: D = ReLU(alpha * acc + beta * C + per-row bias); 2: GELU(... + per-column bias)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <fstream>
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

#ifndef WS_PINGPONG
#define WS_PINGPONG 0
#endif
#ifndef WS_FUSION
#define WS_FUSION 0
#endif
#ifndef WS_D_F16
#define WS_D_F16 0
#endif

#if WS_FP8
using ElementA = cutlass::float_e4m3_t;
using ElementB = cutlass::float_e4m3_t;
#else
using ElementA = cutlass::half_t;
using ElementB = cutlass::half_t;
#endif
#if WS_PINGPONG   // each consumer warpgroup owns a whole 64-row tile; the two take turns on the math
using TileShape = Shape<_64, _128, Int<WS_FP8 ? 128 : 64>>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#else
using TileShape = Shape<_128, _128, Int<WS_FP8 ? 128 : 64>>;
using KernelSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif
using ElementC = float;
#if WS_D_F16
using ElementD = cutlass::half_t;
#else
using ElementD = float;
#endif
using ElementBias = float;
using ElementAcc = float;
using LayoutA = cutlass::layout::RowMajor;      // K-major A
using LayoutB = cutlass::layout::ColumnMajor;   // K-major B
using LayoutC = cutlass::layout::RowMajor;
using LayoutD = cutlass::layout::RowMajor;
constexpr int AlignA = 16 / sizeof(ElementA);
constexpr int AlignB = 16 / sizeof(ElementB);
constexpr int AlignC = 16 / sizeof(ElementC);
constexpr int AlignD = 16 / sizeof(ElementD);
using ClusterShape = Shape<_2, _1, _1>;

#if WS_FUSION == 1
using Fusion = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<
    cutlass::epilogue::thread::ReLu, ElementD, ElementAcc, ElementBias, ElementC, ElementAcc>;
#elif WS_FUSION == 2
using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
    cutlass::epilogue::thread::GELU, ElementD, ElementAcc, ElementBias, ElementC, ElementAcc>;
#else
using Fusion = cutlass::epilogue::fusion::LinearCombination<ElementD, ElementAcc, ElementC, ElementAcc>;
#endif

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementAcc,
    ElementC, LayoutC, AlignC, ElementD, LayoutD, AlignD, EpilogueSchedule, Fusion>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    ElementA, LayoutA, AlignA, ElementB, LayoutB, AlignB, ElementAcc,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    KernelSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

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
  if (argc != 8 && argc != 9) { fprintf(stderr, "usage: %s IN OUT M N K alpha beta [sm_count]\n", argv[0]); return 2; }
  std::string in = argv[1], out = argv[2];
  int M = atoi(argv[3]), N = atoi(argv[4]), K = atoi(argv[5]);
  float alpha = atof(argv[6]), beta = atof(argv[7]);
  int sm_count = argc == 9 ? atoi(argv[8]) : 0;
  auto a = slurp(in + "/A.bin"), b = slurp(in + "/B.bin"), c = slurp(in + "/C.bin");
  if (a.size() != size_t(M) * K * sizeof(ElementA) || b.size() != size_t(N) * K * sizeof(ElementB) ||
      c.size() != size_t(M) * N * sizeof(ElementC)) { fprintf(stderr, "input sizes\n"); return 2; }
  void *dA, *dB, *dC, *dD;
  CHECK(cudaMalloc(&dA, a.size())); CHECK(cudaMalloc(&dB, b.size()));
  CHECK(cudaMalloc(&dC, c.size())); CHECK(cudaMalloc(&dD, size_t(M) * N * sizeof(ElementD)));
  CHECK(cudaMemcpy(dA, a.data(), a.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), b.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dC, c.data(), c.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dD, 0xEE, size_t(M) * N * sizeof(ElementD)));
  void* dBias = nullptr;
#if WS_FUSION
  auto bias = slurp(in + "/bias.bin");
  if (bias.size() != size_t(WS_FUSION == 1 ? M : N) * sizeof(ElementBias)) { fprintf(stderr, "bias size\n"); return 2; }
  CHECK(cudaMalloc(&dBias, bias.size()));
  CHECK(cudaMemcpy(dBias, bias.data(), bias.size(), cudaMemcpyHostToDevice));
#endif

  auto sA = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideA{}, {M, K, 1});
  auto sB = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideB{}, {N, K, 1});
  auto sC = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideC{}, {M, N, 1});
  auto sD = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideD{}, {M, N, 1});
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = sm_count > 0 ? sm_count : cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, 1},
      {static_cast<ElementA*>(dA), sA, static_cast<ElementB*>(dB), sB},
      {{}, static_cast<ElementC*>(dC), sC, static_cast<ElementD*>(dD), sD}, hw};
  args.epilogue.thread.alpha = alpha;
  args.epilogue.thread.beta = beta;
#if WS_FUSION
  args.epilogue.thread.bias_ptr = static_cast<ElementBias const*>(dBias);
#endif

  Gemm gemm;
  size_t ws_bytes = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) { CHECK(cudaMalloc(&ws, ws_bytes)); CHECK(cudaMemset(ws, 0, ws_bytes)); }
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) { fprintf(stderr, "cannot implement\n"); return 3; }
  if (gemm.initialize(args, ws) != cutlass::Status::kSuccess) { fprintf(stderr, "initialize failed\n"); return 3; }
  // the bytes the launch passes: the kernel's one parameter, Params, by value
  spill(out + "/params.bin", &gemm.params(), sizeof(typename GemmKernel::Params));
  std::vector<char> ws_before(ws_bytes);
  if (ws_bytes) CHECK(cudaMemcpy(ws_before.data(), ws, ws_bytes, cudaMemcpyDeviceToHost));
  if (gemm.run() != cutlass::Status::kSuccess) { fprintf(stderr, "run failed\n"); return 3; }
  CHECK(cudaDeviceSynchronize());
  std::vector<char> d(size_t(M) * N * sizeof(ElementD));
  CHECK(cudaMemcpy(d.data(), dD, d.size(), cudaMemcpyDeviceToHost));
  spill(out + "/D.bin", d.data(), d.size());
  if (ws_bytes) spill(out + "/ws_before.bin", ws_before.data(), ws_bytes);

  dim3 grid = Gemm::get_grid_shape(gemm.params());
  dim3 block = GemmKernel::get_block_shape();
  const char* name = nullptr;
  CHECK(cudaFuncGetName(&name, reinterpret_cast<const void*>(cutlass::device_kernel<GemmKernel>)));
  FILE* f = fopen((out + "/launch.txt").c_str(), "w");
  fprintf(f, "grid %u %u %u\nblock %u %u %u\ncluster %d %d %d\nsmem %d\nparams %zu\n", grid.x, grid.y, grid.z,
          block.x, block.y, block.z, int(size<0>(ClusterShape{})), int(size<1>(ClusterShape{})),
          int(size<2>(ClusterShape{})), int(GemmKernel::SharedStorageSize), sizeof(typename GemmKernel::Params));
  fprintf(f, "A %llu\nB %llu\nC %llu\nD %llu\nworkspace %llu %zu\nkernel %s\n", (unsigned long long)dA,
          (unsigned long long)dB, (unsigned long long)dC, (unsigned long long)dD, (unsigned long long)ws, ws_bytes, name);
  if (dBias) fprintf(f, "bias %llu\n", (unsigned long long)dBias);
  fclose(f);
  printf("ok %s grid %u block %u smem %d params %zu ws %zu\n", name, grid.x, block.x, int(GemmKernel::SharedStorageSize),
         sizeof(typename GemmKernel::Params), ws_bytes);
  return 0;
}
