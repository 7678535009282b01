// What f64 products reach on an H100 without tensor cores, written in CUDA as a reference
// for the Vulkan kernel (codegen/emit_matmul_simt.cpp, NVIDIA's tiles in codegen/targets/nvidia.cpp):
// the same 128x128 tiles of 8x8 per thread in two shared-memory sets, and a loop of
// independent FP64 fused multiply-adds on registers alone (the FP64 pipes' rate with no
// memory traffic). Not part of the build: nx_vulkan needs no CUDA. On a machine with nvcc:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o f64_simt f64_simt.cu && ./f64_simt
// bench/results/2026-11-26_h100_c5f43b0_ceilings.md has the figures and how power was read.
#include <cmath>
#include <vector>

#include "common.cuh"

// 128x128 tiles, 8x8 per thread (runs of 2 rows/cols 32 apart), k-step BK, two shared sets.
template <int BK>
__global__ __launch_bounds__(256) void dgemm(const double* __restrict__ A, const double* __restrict__ B, double* __restrict__ C, int N, int K) {
  __shared__ __align__(16) double As[2][BK][128 + 2];
  __shared__ __align__(16) double Bs[2][BK][128 + 2];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
  constexpr int AL = 128 * BK / 2 / 256, BL = BK * 64 / 256;  // double2 loads per thread
  double2 ra[AL], rb[BL];
  auto load = [&](int k0) {
#pragma unroll
    for (int r = 0; r < AL; ++r) {
      int idx = tid + r * 256, row = idx / (BK / 2), c2 = idx % (BK / 2);
      ra[r] = *reinterpret_cast<const double2*>(&A[size_t(m0 + row) * K + k0 + c2 * 2]);
    }
#pragma unroll
    for (int r = 0; r < BL; ++r) {
      int idx = tid + r * 256, row = idx / 64, c2 = idx % 64;
      rb[r] = *reinterpret_cast<const double2*>(&B[size_t(k0 + row) * N + n0 + c2 * 2]);
    }
  };
  auto store = [&](int s) {
#pragma unroll
    for (int r = 0; r < AL; ++r) {
      int idx = tid + r * 256, row = idx / (BK / 2), c2 = idx % (BK / 2);
      As[s][c2 * 2][row] = ra[r].x;
      As[s][c2 * 2 + 1][row] = ra[r].y;
    }
#pragma unroll
    for (int r = 0; r < BL; ++r) {
      int idx = tid + r * 256, row = idx / 64, c2 = idx % 64;
      *reinterpret_cast<double2*>(&Bs[s][row][c2 * 2]) = rb[r];
    }
  };
  double acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0;
  load(0);
  store(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) load(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      double a[8], b[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        double2 v = *reinterpret_cast<const double2*>(&As[s][kk][ty * 2 + i * 32]);
        a[2 * i] = v.x, a[2 * i + 1] = v.y;
        double2 w = *reinterpret_cast<const double2*>(&Bs[s][kk][tx * 2 + i * 32]);
        b[2 * i] = w.x, b[2 * i + 1] = w.y;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    if (more) store(s ^ 1);
    __syncthreads();
    s ^= 1;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) C[size_t(m0 + ty * 2 + (i / 2) * 32 + i % 2) * N + n0 + tx * 2 + (j / 2) * 32 + j % 2] = acc[i][j];
}

// 16 independent chains per thread: the pipes' latency is hidden.
__global__ __launch_bounds__(256) void dfma_loop(double* out, int iters, double s) {
  double a[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = threadIdx.x * 1e-9 + i;
  const double b = s, c = 1.0 - s;
  for (int t = 0; t < iters; ++t)
#pragma unroll
    for (int i = 0; i < 16; ++i) a[i] = fma(a[i], b, c);
  double r = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) r += a[i];
  if (r == 12345.0) out[threadIdx.x] = r;
}

int main() {
  const int n = 4096;
  const double flop = 2.0 * n * n * double(n);
  std::vector<double> ha(size_t(n) * n), hb(size_t(n) * n);
  srand(1);
  for (auto& x : ha) x = rand() / double(RAND_MAX) - 0.5;
  for (auto& x : hb) x = rand() / double(RAND_MAX) - 0.5;
  double *A, *B, *C;
  CK(cudaMalloc(&A, ha.size() * 8));
  CK(cudaMalloc(&B, hb.size() * 8));
  CK(cudaMalloc(&C, ha.size() * 8));
  CK(cudaMemcpy(A, ha.data(), ha.size() * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hb.data(), hb.size() * 8, cudaMemcpyHostToDevice));
  dim3 grid(n / 128, n / 128);
  dgemm<8><<<grid, 256>>>(A, B, C, n, n);
  CK(cudaDeviceSynchronize());
  std::vector<double> hc(size_t(n) * n);
  CK(cudaMemcpy(hc.data(), C, hc.size() * 8, cudaMemcpyDeviceToHost));
  // The kernel adds each output's terms in k order with fused multiply-adds, as this does.
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    int i = (t * 977) % n, j = (t * 1223 + 5) % n;
    double r = 0;
    for (int k = 0; k < n; ++k) r = fma(ha[size_t(i) * n + k], hb[size_t(k) * n + j], r);
    worst = std::max(worst, std::abs(r - hc[size_t(i) * n + j]));
  }
  printf("dgemm 4096^2 against the host, 64 outputs: worst |difference| %.3g\n", worst);
  for (int rep = 0; rep < 2; ++rep) {
    float t8 = time_ms([&] { dgemm<8><<<grid, 256>>>(A, B, C, n, n); }, 20);
    float t4 = time_ms([&] { dgemm<4><<<grid, 256>>>(A, B, C, n, n); }, 20);
    printf("f64 128x128 tiles of 8x8: k-steps of 8 %.3f ms %.1f TFLOP/s, of 4 %.3f ms %.1f TFLOP/s\n", t8, flop / t8 / 1e9, t4, flop / t4 / 1e9);
  }
  for (int per_sm : {1, 2, 4}) {
    const int blocks = 132 * per_sm, iters = 200000 / per_sm;
    float t = time_ms([&] { dfma_loop<<<blocks, 256>>>(C, iters, 0.999); }, 100);
    printf("f64 fused multiply-adds on registers, %d groups of 256 per SM: %.1f TFLOP/s\n", per_sm, 2.0 * 16 * double(iters) * blocks * 256 / t / 1e9);
  }
  return 0;
}
