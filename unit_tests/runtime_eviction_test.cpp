// The bounded executable and pipeline caches (RuntimeOptions::executable_cache_size,
// pipeline_cache_size): they stay within their bounds, what a caller holds outlives its
// eviction and still runs, threads compile, run and evict at once, and device memory returns.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <unistd.h>

#include "ir/json.h"
#include "runtime/runtime.h"
#include "runtime/device_impl.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

// The constant tensor of offset_graph(n, k): k - i / n at i.
std::vector<float> offsets(int n, int k) {
  std::vector<float> t(n);
  for (int i = 0; i < n; ++i) t[i] = float(k) - float(i) / float(n);
  return t;
}

// f32[n] x → exp(x) * t + x, t the constant tensor offsets(n, k): the executable uploads t
// (device memory it holds), and another n means other kernels (other pipelines).
ir::Graph offset_graph(int n, int k) {
  const std::string s = std::to_string(n);
  return ir::parse_graph(R"({"version": 1, "name": "offset", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "tensor", "type": "f32", "shape": [)" + s + R"(], "attrs": {"data": )" +
                         nlohmann::json(offsets(n, k)).dump() + R"(}},
    {"id": 2, "op": "exp", "args": [0], "type": "f32", "shape": [)" + s + R"(]},
    {"id": 3, "op": "multiply", "args": [2, 1], "type": "f32", "shape": [)" + s + R"(]},
    {"id": 4, "op": "add", "args": [3, 0], "type": "f32", "shape": [)" + s + R"(]}],
    "outputs": [4]})");
}

// Runs `exe` (offset_graph(n, k)) on random inputs and compares with the same arithmetic in
// C++ (exp in double, rounded, as Nx does), to 1e-5 relative. No gtest assertions: threads call it.
bool runs_correctly(Executable& exe, int n, int k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  HostTensor in{{ir::DType::F32, {n}}, std::vector<uint8_t>(4 * size_t(n))};
  std::memcpy(in.data.data(), x.data(), in.data.size());
  const auto out = exe.run_host({in});
  if (out.size() != 1 || out[0].data.size() != 4 * size_t(n)) return false;
  std::vector<float> got(n);
  std::memcpy(got.data(), out[0].data.data(), out[0].data.size());
  const auto t = offsets(n, k);
  for (int i = 0; i < n; ++i) {
    const float want = float(std::exp(double(x[i]))) * t[i] + x[i];
    if (!(std::fabs(got[i] - want) <= 1e-5f * (1 + std::fabs(want)))) return false;
  }
  return true;
}

// A device of its own (Device::open shares one per configuration, and the bounds are part of it).
std::shared_ptr<DeviceImpl> device_with_caches(size_t executables, size_t pipelines) {
  RuntimeOptions o;
  o.cache_dir = "none";
  o.executable_cache_size = executables;
  o.pipeline_cache_size = pipelines;
  return std::static_pointer_cast<DeviceImpl>(Device::open(o));
}

TEST(Eviction, CachesStayWithinTheirBounds) {
  auto dev = device_with_caches(3, 4);
  Executable::drop_cached(*dev);
  size_t most_kernels = 0;
  const uint64_t created = dev->pipeline_cache_misses();
  for (int i = 0; i < 24; ++i) {
    const int n = 256 + 8 * i;
    auto exe = Executable::compile(dev, offset_graph(n, i));
    most_kernels = std::max(most_kernels, exe->kernels().size());
    EXPECT_TRUE(runs_correctly(*exe, n, i, i)) << "n = " << n;
    EXPECT_LE(Executable::cached(*dev), 3u);
    EXPECT_LE(dev->pipelines_cached(), 4u);
    // The pipelines left are the cache's and those of the executables cached.
    EXPECT_LE(dev->pipelines_alive(), 4 + 3 * most_kernels);
  }
  EXPECT_GE(dev->pipeline_cache_misses() - created, 24u);  // every graph made pipelines; most were evicted
  Executable::drop_cached(*dev);
  EXPECT_EQ(Executable::cached(*dev), 0u);
  EXPECT_EQ(dev->pipelines_alive(), dev->pipelines_cached());
}

TEST(Eviction, AnEvictedExecutableItsCallerHoldsStillRuns) {
  auto dev = device_with_caches(2, 2);
  auto held = Executable::compile(dev, offset_graph(1000, 7));
  EXPECT_TRUE(runs_correctly(*held, 1000, 7, 1));
  for (int i = 0; i < 6; ++i) {
    auto other = Executable::compile(dev, offset_graph(500 + 8 * i, i));
    EXPECT_TRUE(runs_correctly(*other, 500 + 8 * i, i, i));
  }
  EXPECT_LE(Executable::cached(*dev), 2u);
  EXPECT_LE(dev->pipelines_cached(), 2u);
  // Evicted from both caches: compiling the graph again makes another executable.
  EXPECT_NE(Executable::compile(dev, offset_graph(1000, 7)), held);
  EXPECT_GE(dev->pipelines_alive(), held->kernels().size());
  EXPECT_TRUE(runs_correctly(*held, 1000, 7, 2));
}

// Emptying the pipeline cache destroys every pipeline nothing else holds and renews the
// driver's VkPipelineCache; an executable held keeps its pipelines and still runs, and
// compiling afterwards creates pipelines afresh.
TEST(Eviction, EmptyingThePipelineCacheDestroysWhatNothingHolds) {
  auto dev = device_with_caches(4, 16);
  Executable::drop_cached(*dev);
  dev->drop_cached_pipelines();
  EXPECT_EQ(dev->pipelines_alive(), 0u);
  auto held = Executable::compile(dev, offset_graph(900, 3));
  for (int i = 0; i < 5; ++i) {
    auto other = Executable::compile(dev, offset_graph(700 + 8 * i, i));
    EXPECT_TRUE(runs_correctly(*other, 700 + 8 * i, i, i));
  }
  Executable::drop_cached(*dev);
  EXPECT_GT(dev->pipelines_cached(), held->kernels().size());
  const uint64_t renewals = dev->pipeline_store_renewals();
  dev->drop_cached_pipelines();
  EXPECT_EQ(dev->pipelines_cached(), 0u);
  EXPECT_EQ(dev->pipelines_alive(), held->kernels().size());
  EXPECT_EQ(dev->pipeline_store_renewals(), renewals + 1);
  EXPECT_TRUE(runs_correctly(*held, 900, 3, 4));
  const uint64_t misses = dev->pipeline_cache_misses();
  EXPECT_TRUE(runs_correctly(*Executable::compile(dev, offset_graph(700, 0)), 700, 0, 5));
  EXPECT_GT(dev->pipeline_cache_misses(), misses);
  held.reset();
  Executable::drop_cached(*dev);
  dev->drop_cached_pipelines();
  EXPECT_EQ(dev->pipelines_alive(), 0u);
}

// The driver's VkPipelineCache keeps every pipeline created through it (about 1.5 KiB each on
// NVIDIA: host memory grew 190 MiB in an 8-minute soak on an H200), so it is written and begun
// afresh after 4 x pipeline_cache_size creations, while threads keep creating through it; the
// file stays a valid cache of this device.
TEST(Eviction, ThePipelineCacheIsRenewedAfterItsBound) {
  const auto dir = std::filesystem::temp_directory_path() / ("nxv_store_" + std::to_string(::getpid()));
  RuntimeOptions o;
  o.cache_dir = dir.string();
  o.executable_cache_size = 2;
  o.pipeline_cache_size = 2;
  auto dev = std::static_pointer_cast<DeviceImpl>(Device::open(o));
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 8; ++i) {
          const int g = t * 8 + i, n = 200 + 8 * g;
          if (!runs_correctly(*Executable::compile(dev, offset_graph(n, g)), n, g, g)) ++failures;
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(dev->pipeline_store_renewals(), 3u);  // 32 graphs' pipelines, renewed every 8
  bool written = false;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    written |= f.path().filename().string().rfind("pipelines-", 0) == 0 && std::filesystem::file_size(f) >= 32;
  EXPECT_TRUE(written);
  std::filesystem::remove_all(dir);
}

// Threads compile graphs from a set larger than the caches, run them, and keep the last one
// to run again after others have evicted it; every result matches the reference.
TEST(Eviction, ThreadsCompileRunAndEvictAtOnce) {
  auto dev = device_with_caches(2, 3);
  constexpr int kThreads = 6, kGraphs = 8, kIterations = 12;
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        std::shared_ptr<Executable> last;
        int last_n = 0, last_k = 0;
        for (int i = 0; i < kIterations; ++i) {
          const int g = (t * 7 + i * 3) % kGraphs, n = 300 + 16 * g;
          auto exe = Executable::compile(dev, offset_graph(n, g));
          if (!runs_correctly(*exe, n, g, t * 100 + i)) ++failures;
          if (last && !runs_correctly(*last, last_n, last_k, t * 100 + i + 50)) ++failures;
          last = exe;
          last_n = n;
          last_k = g;
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_LE(Executable::cached(*dev), 2u);
  EXPECT_LE(dev->pipelines_cached(), 3u);
  Executable::drop_cached(*dev);
  EXPECT_EQ(dev->pipelines_alive(), dev->pipelines_cached());
}

TEST(Eviction, DeviceMemoryReturnsToItsStartOnceEverythingIsDropped) {
  auto dev = device_with_caches(4, 8);
  Executable::drop_cached(*dev);
  dev->trim();
  const uint64_t start = dev->bytes_in_use();
  std::vector<std::shared_ptr<Executable>> held;
  for (int i = 0; i < 10; ++i) {
    const int n = 4096 + 64 * i;
    auto exe = Executable::compile(dev, offset_graph(n, i));
    EXPECT_TRUE(runs_correctly(*exe, n, i, i));
    if (i % 4 == 0) held.push_back(exe);
  }
  // The executables cached and held keep their constant tensors on the device.
  EXPECT_GT(dev->bytes_in_use(), start);
  held.clear();
  Executable::drop_cached(*dev);
  dev->trim();
  EXPECT_EQ(dev->bytes_in_use(), start);
  EXPECT_EQ(dev->pipelines_alive(), dev->pipelines_cached());
}

}  // namespace
}  // namespace nxv::runtime
