// What f16 products reach on an H100 through warp-level tensor-core instructions (as
// VK_KHR_cooperative_matrix's fragments are: a subgroup's, one warp), written in CUDA as a
// reference for the Vulkan kernel (emit_cooperative_matmul in codegen/emit_matmul_cooperative.cpp):
// wmma 16x16x16 fragments over tiles of several shapes, staged through registers as the
// Vulkan kernel does or with cp.async and up to 204 KiB of shared memory (which Vulkan does
// not offer), and a loop of independent mma.sync on registers alone (the tensor cores' rate
// for that instruction with no memory traffic). Not part of the build. With nvcc:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o f16_wmma f16_wmma.cu && ./f16_wmma
// bench/results/2026-11-26_h100_c5f43b0_ceilings.md has the figures.
#include <cuda_fp16.h>
#include <mma.h>
#include <cmath>
#include <vector>

#include "common.cuh"

using namespace nvcuda;

// 16 independent accumulators per warp: the instruction's latency is hidden.
__global__ __launch_bounds__(256) void mma_loop(float* out, int iters) {
  unsigned a[4], b[2];
  float d[16][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ threadIdx.x;
  b[0] = b[1] = 0x3c003c00u;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[j][i] = 0.f;
  for (int t = 0; t < iters; ++t)
#pragma unroll
    for (int j = 0; j < 16; ++j)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  float r = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) r += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  if (r == 12345.f) out[threadIdx.x] = r;
}

// Tile BM x BN x BK, WM x WN warps of (BM / WM) x (BN / WN), STAGES shared-memory sets of
// slices, rows padded by 16 bytes; filled by cp.async (ASYNC) or through registers.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool ASYNC, int MINB>
__global__ __launch_bounds__(WM * WN * 32, MINB) void hgemm(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int N, int K) {
  constexpr int T = WM * WN * 32, AP = BK + 8, BP = BN + 8, FM = BM / WM / 16, FN = BN / WN / 16;
  constexpr int ACH = BM * BK / 8 / T, BCH = BK * BN / 8 / T;  // 16-byte chunks per thread
  extern __shared__ __align__(16) unsigned char smem_raw[];
  half* smem = reinterpret_cast<half*>(smem_raw);
  auto As = [&](int s) { return smem + s * (BM * AP + BK * BP); };
  auto Bs = [&](int s) { return As(s) + BM * AP; };
  const int tid = threadIdx.x, warp = tid / 32, wm = warp / WN, wn = warp % WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  auto arow = [&](int r) { return (tid + r * T) / (BK / 8); };
  auto acol = [&](int r) { return (tid + r * T) % (BK / 8) * 8; };
  auto brow = [&](int r) { return (tid + r * T) / (BN / 8); };
  auto bcol = [&](int r) { return (tid + r * T) % (BN / 8) * 8; };
  uint4 ra[ACH], rb[BCH];
  auto load = [&](int k0) {
#pragma unroll
    for (int r = 0; r < ACH; ++r) ra[r] = *reinterpret_cast<const uint4*>(&A[size_t(m0 + arow(r)) * K + k0 + acol(r)]);
#pragma unroll
    for (int r = 0; r < BCH; ++r) rb[r] = *reinterpret_cast<const uint4*>(&B[size_t(k0 + brow(r)) * N + n0 + bcol(r)]);
  };
  auto store = [&](int s) {
#pragma unroll
    for (int r = 0; r < ACH; ++r) *reinterpret_cast<uint4*>(As(s) + arow(r) * AP + acol(r)) = ra[r];
#pragma unroll
    for (int r = 0; r < BCH; ++r) *reinterpret_cast<uint4*>(Bs(s) + brow(r) * BP + bcol(r)) = rb[r];
  };
  auto copy_async = [&](int k0, int s) {
#pragma unroll
    for (int r = 0; r < ACH; ++r) {
      unsigned d = __cvta_generic_to_shared(As(s) + arow(r) * AP + acol(r));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(&A[size_t(m0 + arow(r)) * K + k0 + acol(r)]));
    }
#pragma unroll
    for (int r = 0; r < BCH; ++r) {
      unsigned d = __cvta_generic_to_shared(Bs(s) + brow(r) * BP + bcol(r));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(&B[size_t(k0 + brow(r)) * N + n0 + bcol(r)]));
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  auto multiply = [&](int s) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], As(s) + (wm * (BM / WM) + i * 16) * AP + kk, AP);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], Bs(s) + kk * BP + wn * (BN / WN) + j * 16, BP);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  };
  const int steps = K / BK;
  if (ASYNC) {
    for (int st = 0; st < STAGES - 1; ++st) copy_async(st * BK, st);
    for (int t = 0; t < steps; ++t) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
      __syncthreads();
      int nt = t + STAGES - 1;
      if (nt < steps) copy_async(nt * BK, nt % STAGES);
      else asm volatile("cp.async.commit_group;\n" ::);
      multiply(t % STAGES);
    }
  } else {
    load(0);
    store(0);
    __syncthreads();
    for (int t = 0; t < steps; ++t) {
      const bool more = t + 1 < steps;
      if (more) load((t + 1) * BK);
      multiply(t & 1);
      if (more) store((t + 1) & 1);
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(C + size_t(m0 + wm * (BM / WM) + i * 16) * N + n0 + wn * (BN / WN) + j * 16, acc[i][j], N, wmma::mem_row_major);
}

const int n = 4096;
half *HA, *HB;
float* HC;
std::vector<float> fa, fb;

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool ASYNC, int MINB>
void run(const char* name) {
  auto k = hgemm<BM, BN, BK, WM, WN, STAGES, ASYNC, MINB>;
  const int bytes = STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, WM * WN * 32, bytes));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  dim3 grid(n / BN, n / BM);
  CK(cudaMemset(HC, 0, size_t(n) * n * 4));
  k<<<grid, WM * WN * 32, bytes>>>(HA, HB, HC, n, n);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> hc(size_t(n) * n);
  CK(cudaMemcpy(hc.data(), HC, hc.size() * 4, cudaMemcpyDeviceToHost));
  double rel = 0;
  for (int t = 0; t < 32; ++t) {
    int i = (t * 977) % n, j = (t * 1223 + 5) % n;
    double r = 0, mag = 0;
    for (int q = 0; q < n; ++q) {
      double p = double(fa[size_t(i) * n + q]) * fb[size_t(q) * n + j];
      r += p, mag += std::abs(p);
    }
    rel = std::max(rel, std::abs(r - hc[size_t(i) * n + j]) / mag);
  }
  const double flop = 2.0 * n * n * double(n);
  float t1 = time_ms([&] { k<<<grid, WM * WN * 32, bytes>>>(HA, HB, HC, n, n); }, 30);
  float t2 = time_ms([&] { k<<<grid, WM * WN * 32, bytes>>>(HA, HB, HC, n, n); }, 30);
  printf("%-44s regs %3d smem %6d B groups/SM %d err %.1e: %.1f / %.1f TFLOP/s\n", name, at.numRegs, bytes, per_sm, rel, flop / t1 / 1e9, flop / t2 / 1e9);
}

int main() {
  float* o;
  CK(cudaMalloc(&o, 4096));
  for (int per_sm : {1, 2}) {
    const int blocks = 132 * per_sm, iters = 200000 / per_sm;
    float t = time_ms([&] { mma_loop<<<blocks, 256>>>(o, iters); }, 100);
    printf("mma.sync m16n8k16 on registers, %d groups of 8 warps per SM: %.1f TFLOP/s\n", per_sm, 4096.0 * 16 * double(iters) * blocks * 8 / t / 1e9);
  }
  fa.resize(size_t(n) * n), fb.resize(size_t(n) * n);
  std::vector<half> h(size_t(n) * n);
  srand(1);
  for (auto& x : fa) x = float(__float2half(rand() / float(RAND_MAX) - 0.5f));
  for (auto& x : fb) x = float(__float2half(rand() / float(RAND_MAX) - 0.5f));
  CK(cudaMalloc(&HA, h.size() * 2));
  CK(cudaMalloc(&HB, h.size() * 2));
  CK(cudaMalloc(&HC, h.size() * 4));
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half(fa[i]);
  CK(cudaMemcpy(HA, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half(fb[i]);
  CK(cudaMemcpy(HB, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  run<128, 256, 32, 2, 4, 2, false, 1>("128x256x32 2x4 warps, 2 sets, via registers");
  run<128, 256, 32, 2, 4, 3, true, 1>("128x256x32 2x4 warps, cp.async 3 stages");
  run<128, 256, 64, 2, 4, 3, true, 1>("128x256x64 2x4 warps, cp.async 3 stages");
  run<128, 256, 64, 2, 4, 4, true, 1>("128x256x64 2x4 warps, cp.async 4 stages");
  run<256, 128, 64, 4, 2, 3, true, 1>("256x128x64 4x2 warps, cp.async 3 stages");
  run<128, 128, 32, 2, 2, 2, false, 2>("128x128x32 2x2 warps, 2 sets, via registers");
  run<128, 128, 32, 2, 2, 4, true, 2>("128x128x32 2x2 warps, cp.async 4 stages");
  run<128, 128, 64, 2, 2, 3, true, 2>("128x128x64 2x2 warps, cp.async 3 stages");
  run<128, 128, 32, 2, 4, 2, false, 1>("128x128x32 2x4 warps (64x32), 2 sets");
  run<256, 128, 32, 4, 4, 4, true, 1>("256x128x32 4x4 warps (64x32), cp.async 4");
  return 0;
}
