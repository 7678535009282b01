// The runtime on the default device (lavapipe on CI): devices, buffers, the pool, the
// pipeline cache in memory and on disk, errors, and many threads running graphs at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "device_testing.h"
#include "ir/graph_writer.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "passes/pass.h"
#include "runtime/runtime.h"
#include "test_graphs.h"
#include "runtime/device_impl.h"
#include "runtime/vk_util.h"

namespace nxv::runtime {
namespace {

namespace fs = std::filesystem;

// f32[n] → exp(x) * y + x: three ops, so lowering yields several kernels.
ir::Graph exp_mul_add(int n) {
  std::string s = std::to_string(n);
  return ir::parse_graph(R"({"version": 1, "name": "ema", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": [)" + s + R"(], "attrs": {"index": 1}},
    {"id": 2, "op": "exp", "args": [0], "type": "f32", "shape": [)" + s + R"(]},
    {"id": 3, "op": "multiply", "args": [2, 1], "type": "f32", "shape": [)" + s + R"(]},
    {"id": 4, "op": "add", "args": [3, 0], "type": "f32", "shape": [)" + s + R"(]}],
    "outputs": [4]})");
}

HostTensor f32_tensor(const std::vector<float>& v) {
  HostTensor t{{ir::DType::F32, {int64_t(v.size())}}, std::vector<uint8_t>(v.size() * 4)};
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());  // no null pointers to memcpy
  return t;
}

std::vector<float> floats(const HostTensor& t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

// The reference: the same arithmetic in plain C++ (exp in double, rounded, as Nx does).
float exp_mul_add_at(const std::vector<float>& x, const std::vector<float>& y, size_t i) {
  return float(std::exp(double(x[i]))) * y[i] + x[i];
}

bool near_exp_mul_add(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& got, size_t i) {
  const float want = exp_mul_add_at(x, y, i);
  return std::fabs(got[i] - want) <= 1e-5f * (1 + std::fabs(want));
}

void expect_exp_mul_add(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& got) {
  ASSERT_EQ(got.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(near_exp_mul_add(x, y, got, i)) << "at " << i << ": " << got[i] << ", want " << exp_mul_add_at(x, y, i);
}

// For threads: whether every element matches (gtest's assertions report from the main thread).
bool all_near_exp_mul_add(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& got) {
  if (got.size() != x.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!near_exp_mul_add(x, y, got, i)) return false;
  return true;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Runtime, ListsDevicesInPreferenceOrder) {
  auto devs = list_devices();
  ASSERT_FALSE(devs.empty());
  for (size_t i = 0; i < devs.size(); ++i) EXPECT_EQ(devs[i].index, int(i));
  // CPU devices come last.
  bool seen_cpu = false;
  for (const auto& d : devs) {
    if (seen_cpu) {
      EXPECT_EQ(d.type, "cpu") << d.name << " listed after a CPU device";
    }
    seen_cpu |= d.type == "cpu";
  }
}

TEST(Runtime, SelectsByIndexAndNameAndRejectsUnknown) {
  auto devs = list_devices();
  RuntimeOptions by_index;
  by_index.device = "0";
  EXPECT_EQ(Device::open(by_index)->info().name, devs[0].name);
  RuntimeOptions by_name;
  by_name.device = devs[0].name.substr(0, 4);
  EXPECT_EQ(Device::open(by_name)->info().name, devs[0].name);
  RuntimeOptions bad;
  bad.device = "no-such-gpu-xyz";
  try {
    Device::open(bad);
    FAIL() << "expected NoDevice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::NoDevice);
    EXPECT_NE(std::string(e.what()).find("no-such-gpu-xyz"), std::string::npos);
  }
}

TEST(Runtime, UploadDownloadRoundTripIncludingEmpty) {
  auto dev = Device::open();
  for (int n : {0, 1, 257, 4099}) {
    auto v = random_floats(n, n);
    auto t = f32_tensor(v);
    auto buf = dev->upload(t.type, t.data.data(), t.data.size());
    std::vector<uint8_t> back(t.data.size());
    dev->download(*buf, back.data(), back.size());
    EXPECT_EQ(back, t.data) << "n=" << n;
  }
  ir::TensorType f32_4{ir::DType::F32, {4}};
  EXPECT_THROW(dev->upload(f32_4, nullptr, 3), Error);
}

// Where device memory is not host-visible (discrete GPUs) these go through one staging
// buffer at offsets; on lavapipe each is a copy into mapped memory.
TEST(Runtime, UploadAllAndDownloadAllRoundTripTogether) {
  auto dev = Device::open();
  std::vector<HostTensor> tensors;
  for (int n : {0, 1, 257, 3, 4099}) tensors.push_back(f32_tensor(random_floats(n, n + 7)));
  std::vector<Upload> uploads;
  for (const auto& t : tensors) uploads.push_back({t.type, t.data.data(), t.data.size()});
  auto bufs = dev->upload_all(uploads);
  ASSERT_EQ(bufs.size(), tensors.size());
  std::vector<std::vector<uint8_t>> back;
  for (const auto& t : tensors) back.emplace_back(t.data.size());
  std::vector<Download> downloads;
  // In reverse, so that no offset follows from the upload's order.
  for (size_t i = tensors.size(); i-- > 0;) downloads.push_back({bufs[i].get(), back[i].data(), back[i].size()});
  dev->download_all(downloads);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(bufs[i]->type(), tensors[i].type) << "tensor " << i;
    EXPECT_EQ(back[i], tensors[i].data) << "tensor " << i;
  }
  ir::TensorType f32_4{ir::DType::F32, {4}};
  EXPECT_THROW(dev->upload_all({{tensors[1].type, tensors[1].data.data(), 4}, {f32_4, nullptr, 3}}), Error);
  std::vector<uint8_t> too_many(tensors[1].data.size() + 4);
  EXPECT_THROW(dev->download_all({{bufs[1].get(), too_many.data(), too_many.size()}}), Error);
}

TEST(Runtime, RunsAGraphAgainstTheReference) {
  auto dev = Device::open();
  auto exe = Executable::compile(dev, exp_mul_add(1000));
  auto x = random_floats(1000, 1), y = random_floats(1000, 2);
  RunStats st;
  auto out = exe->run_host({f32_tensor(x), f32_tensor(y)}, &st);
  ASSERT_EQ(out.size(), 1u);
  expect_exp_mul_add(x, y, floats(out[0]));
  EXPECT_GE(st.dispatches, 1);
  EXPECT_EQ(st.submits, 1);  // the whole graph in one submit
}

// Buffers bound by descriptor sets, as on devices without VK_KHR_push_descriptor (or kernels
// with more bindings than it allows): the same results, one submit.
TEST(Runtime, RunsWithDescriptorSetsAsWellAsPushDescriptors) {
  RuntimeOptions sets;
  sets.push_descriptors = false;
  auto dev = Device::open(sets);
  auto exe = Executable::compile(dev, exp_mul_add(1000));
  auto x = random_floats(1000, 1), y = random_floats(1000, 2);
  for (int run = 0; run < 3; ++run) {  // the sets' pools are reset and reused between submits
    RunStats st;
    auto out = exe->run_host({f32_tensor(x), f32_tensor(y)}, &st);
    expect_exp_mul_add(x, y, floats(out.at(0)));
    EXPECT_EQ(st.submits, 1);
  }
}

// The driver's statistics of each pipeline, where asked for: every kernel has them or none
// does (lavapipe lists no VK_KHR_pipeline_executable_properties; an NVIDIA driver reports
// registers and more), results are unchanged, and a device not asked keeps none.
TEST(Runtime, PipelineStatisticsAreKeptOnlyWhereAskedFor) {
  const auto x = random_floats(1000, 1), y = random_floats(1000, 2);
  RuntimeOptions asked;
  asked.pipeline_statistics = true;
  auto dev = Device::open(asked);
  auto exe = Executable::compile(dev, exp_mul_add(1000));
  expect_exp_mul_add(x, y, floats(exe->run_host({f32_tensor(x), f32_tensor(y)}).at(0)));
  ASSERT_FALSE(exe->kernels().empty());
  const bool reported = !dev->pipeline_statistics(exe->kernels()[0]).empty();
  for (const auto& k : exe->kernels()) {
    const auto stats = dev->pipeline_statistics(k);
    EXPECT_EQ(!stats.empty(), reported) << k.name;
    for (const auto& s : stats) EXPECT_FALSE(s.name.empty() || s.value.empty()) << k.name;
  }
  auto plain = Device::open();
  auto again = Executable::compile(plain, exp_mul_add(1000));
  for (const auto& k : again->kernels()) EXPECT_TRUE(plain->pipeline_statistics(k).empty()) << k.name;
}

// RuntimeOptions::dispatch_times: a time per dispatch of the run, in order, that together
// make up the run's device time (the timestamps bracket the same work); none where not asked.
TEST(Runtime, DispatchTimesAddUpToTheRunsDeviceTime) {
  const ir::Graph softmax = ir::parse_graph(R"({"version": 1, "name": "norm", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [1000], "attrs": {"index": 0}},
    {"id": 1, "op": "exp", "args": [0], "type": "f32", "shape": [1000]},
    {"id": 2, "op": "sum", "args": [1], "type": "f32", "shape": [], "attrs": {"axes": [0]}},
    {"id": 3, "op": "broadcast", "args": [2], "type": "f32", "shape": [1000], "attrs": {"axes": [], "shape": [1000]}},
    {"id": 4, "op": "divide", "args": [1, 3], "type": "f32", "shape": [1000]}], "outputs": [4]})");
  const auto x = random_floats(1000, 3);
  double total = 0;
  for (float v : x) total += std::exp(double(v));
  RuntimeOptions asked;
  asked.dispatch_times = true;
  auto dev = Device::open(asked);
  auto exe = Executable::compile(dev, softmax);
  ASSERT_EQ(exe->kernels().size(), 2u);  // the sum, then the division reading it
  for (int run = 0; run < 3; ++run) {  // recorded, then the kept recording submitted again
    RunStats st;
    const auto out = floats(exe->run_host({f32_tensor(x)}, &st).at(0));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(out[i], std::exp(double(x[i])) / total, 1e-6) << i;
    if (st.device_ms == 0) {  // a queue without timestamps times nothing
      EXPECT_TRUE(st.dispatch_ms.empty()) << "run " << run;
      continue;
    }
    ASSERT_EQ(st.dispatch_ms.size(), size_t(st.dispatches)) << "run " << run;
    double sum = 0;
    for (double ms : st.dispatch_ms) {
      EXPECT_GE(ms, 0);
      sum += ms;
    }
    EXPECT_LE(sum, st.device_ms + 1e-9) << "run " << run;
  }
  RunStats plain;
  Executable::compile(Device::open(), softmax)->run_host({f32_tensor(x)}, &plain);
  EXPECT_TRUE(plain.dispatch_ms.empty());
}

// lavapipe ends all loops of an invocation after 65535 steps in total (its loop limiter,
// DeviceCaps::max_loop_steps): on its usual launch a 1024x256 . 256x1024 dot left most
// elements unwritten or partial, and a 32x100000 row sum (one row beyond the limit) was cut
// short. Small integers in f32 keep every sum exact: the results equal the C++ reference.
TEST(Runtime, LongLoopsRunToTheEndWithinLavapipesLoopLimit) {
  auto matrix = [](int64_t rows, int64_t cols, auto value) {
    HostTensor t{{ir::DType::F32, {rows, cols}}, std::vector<uint8_t>(size_t(rows * cols) * 4)};
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float v = float(value(i, j));
        std::memcpy(t.data.data() + 4 * size_t(i * cols + j), &v, 4);
      }
    return t;
  };
  auto dev = Device::open();
  {
    auto g = ir::parse_graph(R"({"version": 1, "name": "dot", "nodes": [
      {"id": 0, "op": "parameter", "type": "f32", "shape": [1024, 256], "attrs": {"index": 0}},
      {"id": 1, "op": "parameter", "type": "f32", "shape": [256, 1024], "attrs": {"index": 1}},
      {"id": 2, "op": "dot", "args": [0, 1], "type": "f32", "shape": [1024, 1024],
       "attrs": {"contract_axes1": [1], "contract_axes2": [0], "batch_axes1": [], "batch_axes2": []}}], "outputs": [2]})");
    auto a = [](int64_t i, int64_t k) { return (i + k) % 3; };
    auto b = [](int64_t k, int64_t j) { return (k * j) % 4; };
    auto got = floats(Executable::compile(dev, g)->run_host({matrix(1024, 256, a), matrix(256, 1024, b)})[0]);
    for (int64_t i = 0; i < 1024; ++i)
      for (int64_t j = 0; j < 1024; ++j) {
        int64_t want = 0;
        for (int64_t k = 0; k < 256; ++k) want += a(i, k) * b(k, j);
        ASSERT_EQ(got[size_t(i * 1024 + j)], float(want)) << "at " << i << "," << j;
      }
  }
  auto g = ir::parse_graph(R"({"version": 1, "name": "rows", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [32, 100000], "attrs": {"index": 0}},
    {"id": 1, "op": "sum", "args": [0], "type": "f32", "shape": [32], "attrs": {"axes": [1]}}], "outputs": [1]})");
  CompileOptions whole;  // without split-reduction, which would halve the rows' loops first
  whole.pipeline = {"fuse", "lower-to-kernels", "plan-buffers"};
  auto got = floats(Executable::compile(dev, g, whole)->run_host({matrix(32, 100000, [](int64_t i, int64_t j) { return (i + j) % 2; })})[0]);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(got[size_t(i)], 50000.0f) << "row " << i;
}

TEST(Runtime, RejectsWrongInputsWithTheParameterNamed) {
  auto dev = Device::open();
  auto exe = Executable::compile(dev, exp_mul_add(8));
  try {
    exe->run_host({f32_tensor(random_floats(8, 1)), f32_tensor(random_floats(9, 2))});
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("parameter 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(exe->run_host({f32_tensor(random_floats(8, 1))}), Error);
}

// Wider than a kernel may bind (lavapipe crashed past 32 buffers): the default pipeline
// splits the concatenate and the 40-input sum into kernels that fit; lowered one op per
// kernel instead, compiling fails with an error that names the kernel and the limit
// (where the device allows fewer than its 41 buffers).
TEST(Runtime, GraphsWiderThanAKernelsBindingsRunOrFailCleanly) {
  const int n = 40;
  ir::GraphWriter w("wide");
  std::vector<ir::NodeId> params;
  for (int i = 0; i < n; ++i) params.push_back(w.param(i, ir::DType::F32, {2}));
  const ir::NodeId all_of_them = w.node("concatenate", params, ir::DType::F32, {2 * n}, {{"axis", 0}});
  ir::NodeId acc = params[0];
  for (int i = 1; i < n; ++i) acc = w.node("add", {acc, params[size_t(i)]}, ir::DType::F32, {2});
  auto g = w.finish({all_of_them, acc});
  std::vector<ir::Literal> in;
  std::vector<float> all;
  for (int i = 0; i < n; ++i) {
    auto x = random_floats(2, unsigned(i));
    all.insert(all.end(), x.begin(), x.end());
    in.push_back(f32_tensor(x));
  }
  auto out = Executable::compile(Device::open(), g)->run_host(in);
  EXPECT_EQ(floats(out[0]), all);
  for (int j = 0; j < 2; ++j) {
    float sum = all[size_t(j)];
    for (int i = 1; i < n; ++i) sum += all[size_t(2 * i + j)];
    EXPECT_EQ(floats(out[1])[size_t(j)], sum);  // the same additions in the same order
  }
  CompileOptions one_op;
  one_op.pipeline = {"lower-to-kernels"};
  if (Device::open()->info().caps.max_storage_buffers > 41) {  // NVIDIA: the wide kernel fits
    EXPECT_EQ(floats(Executable::compile(Device::open(), g, one_op)->run_host(in)[0]), all);
    return;
  }
  try {
    Executable::compile(Device::open(), g, one_op);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("storage buffers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("node 40"), std::string::npos) << e.what();
  }
}

TEST(Runtime, PoolReusesMemoryAcrossRuns) {
  auto dev = Device::open();
  auto exe = Executable::compile(dev, exp_mul_add(4096));
  auto x = f32_tensor(random_floats(4096, 3)), y = f32_tensor(random_floats(4096, 4));
  uint64_t before = dev->bytes_in_use();
  exe->run_host({x, y});
  uint64_t after_first = dev->bytes_in_use();
  for (int i = 0; i < 20; ++i) exe->run_host({x, y});
  EXPECT_EQ(dev->bytes_in_use(), after_first);
  EXPECT_EQ(after_first, before);  // nothing outlives run_host
}

// A run that binds the buffers the last run bound submits that run's recording again
// (repeated calls on the same device tensors); other buffers, or a
// buffer destroyed since (its handle could name another buffer now), record afresh. The
// results match the reference every time.
TEST(Runtime, ARunBindingTheLastRunsBuffersSubmitsItsRecordingAgain) {
  auto dev = Device::open();
  auto exe = Executable::compile(dev, exp_mul_add(4096));
  const auto x = random_floats(4096, 5), y = random_floats(4096, 6), x2 = random_floats(4096, 7);
  const auto bx = dev->upload({ir::DType::F32, {4096}}, x.data(), 4 * x.size());
  const auto by = dev->upload({ir::DType::F32, {4096}}, y.data(), 4 * y.size());
  const auto bx2 = dev->upload({ir::DType::F32, {4096}}, x2.data(), 4 * x2.size());
  // Idle buffers of the outputs' size in the pool: a run still gets the last run's.
  for (auto held = std::vector<BufferPtr>(3); auto& b : held) b = dev->allocate({ir::DType::F32, {4096}});
  // Each run's outputs are dropped before the next, as a loop that keeps only what it
  // needs does, so the next run can have the same memory.
  auto run = [&](const BufferPtr& a, const std::vector<float>& av) {
    RunStats st;
    auto out = exe->run({a, by}, &st);
    std::vector<float> got(4096);
    dev->download(*out.at(0), got.data(), 4 * got.size());
    expect_exp_mul_add(av, y, got);
    EXPECT_EQ(st.submits, 1);
    return st.recorded;
  };
  EXPECT_EQ(run(bx, x), 1);
  EXPECT_EQ(run(bx, x), 0);
  EXPECT_EQ(run(bx, x), 0);
  EXPECT_EQ(run(bx2, x2), 1);
  EXPECT_EQ(run(bx, x), 1);
  dev->trim();  // destroys the pool's idle buffers
  EXPECT_EQ(run(bx, x), 1);
  EXPECT_EQ(run(bx, x), 0);
}

// lavapipe keeps no pipeline binaries, so its cache file may be just the header: check that
// the header names this device (which is what makes a later process accept it).
void expect_valid_cache_header(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  std::vector<char> blob((std::istreambuf_iterator<char>(f)), {});
  VkPipelineCacheHeaderVersionOne h{};
  ASSERT_GE(blob.size(), sizeof h);
  std::memcpy(&h, blob.data(), sizeof h);
  EXPECT_EQ(h.headerVersion, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
  EXPECT_EQ(h.vendorID, Device::open()->info().caps.vendor_id);
}

TEST(Runtime, PipelineCacheHitsInMemoryAndPersistsToDisk) {
  fs::path dir = fs::temp_directory_path() / ("nxv_cache_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RuntimeOptions opts;
  opts.cache_dir = dir.string();
  opts.timeout_ms = 120001;  // a distinct option set: a device of its own, with this cache dir
  auto dev = std::static_pointer_cast<DeviceImpl>(Device::open(opts));
  uint64_t misses = dev->pipeline_cache_misses();
  Executable::compile(dev, exp_mul_add(77));
  EXPECT_GT(dev->pipeline_cache_misses(), misses);
  uint64_t hits = dev->pipeline_cache_hits();
  // The same kernels in another graph (another size changes the module, the same size does not).
  auto g = exp_mul_add(77);
  g.name = "renamed";
  Executable::compile(dev, g);
  EXPECT_GT(dev->pipeline_cache_hits(), hits);
  ASSERT_TRUE(fs::exists(dir));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  expect_valid_cache_header(files[0]);

  // A corrupt file is ignored by the next process (here: the next device) and rewritten.
  { std::ofstream(files[0], std::ios::binary) << "garbage that is not a pipeline cache"; }
  opts.timeout_ms = 120002;
  auto dev2 = Device::open(opts);
  auto exe = Executable::compile(dev2, exp_mul_add(78));
  auto x = random_floats(78, 5), y = random_floats(78, 6);
  expect_exp_mul_add(x, y, floats(exe->run_host({f32_tensor(x), f32_tensor(y)})[0]));
  expect_valid_cache_header(files[0]);
  fs::remove_all(dir);
}

// Pipelines are created outside the cache's lock: threads compiling graphs that share
// kernels at once must still create each pipeline exactly once, and every graph must run.
TEST(Runtime, ThreadsCompilingAtOnceCreateEachPipelineOnce) {
  RuntimeOptions opts;
  opts.cache_dir = "none";
  opts.timeout_ms = 120003;  // a device of its own, so the counts below are this test's
  auto dev = std::static_pointer_cast<DeviceImpl>(Device::open(opts));
  const std::vector<int> sizes = {101, 102, 103, 104};
  size_t kernels = 0;
  for (int n : sizes) {
    auto g = exp_mul_add(n);
    g.name = "count";
    kernels += Executable::compile(std::static_pointer_cast<Device>(Device::open()), g)->kernels().size();
  }
  const uint64_t misses = dev->pipeline_cache_misses(), hits = dev->pipeline_cache_hits();
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int n : sizes) {
        auto g = exp_mul_add(n);
        g.name = "thread" + std::to_string(t);  // another executable, the same kernels
        auto x = random_floats(n, t), y = random_floats(n, t + 50);
        auto got = floats(Executable::compile(dev, g)->run_host({f32_tensor(x), f32_tensor(y)})[0]);
        if (!all_near_exp_mul_add(x, y, got)) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(dev->pipeline_cache_misses() - misses, kernels);
  EXPECT_EQ(dev->pipeline_cache_hits() - hits, kernels * (kThreads - 1));
}

// f32[n, n] · f32[n, n] as Nx.dot lowers it.
ir::Graph square_dot(int n) {
  const std::string s = std::to_string(n);
  return ir::parse_graph(R"({"version": 1, "name": "dot", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [)" + s + "," + s + R"(], "attrs": {"index": 0}},
    {"id": 1, "op": "parameter", "type": "f32", "shape": [)" + s + "," + s + R"(], "attrs": {"index": 1}},
    {"id": 2, "op": "dot", "args": [0, 1], "type": "f32", "shape": [)" + s + "," + s + R"(],
     "attrs": {"contract_axes1": [1], "contract_axes2": [0], "batch_axes1": [], "batch_axes2": []}}],
    "outputs": [2]})");
}

// Where a kernel reads inputs through texel views (Binding::texels; lavapipe's dots), each
// buffer's view is made by the first dispatch that binds it as texels, reused by the later
// ones, kept with the allocation while the buffer is pooled and destroyed with it; the
// results match the interpreter's throughout.
TEST(Runtime, TexelViewsAreMadeOncePerBufferAndFreedWithIt) {
  RuntimeOptions opts;
  opts.cache_dir = "none";
  opts.timeout_ms = 120004;  // a device of its own, so the counts below are this test's
  auto dev = std::static_pointer_cast<DeviceImpl>(Device::open(opts));
  const int n = 64;
  const ir::Graph g = square_dot(n);
  CompileOptions as_lavapipe;  // whose kernels read f32 graph inputs as texels, on any device
  as_lavapipe.as_vendor = 0x10005;
  auto exe = Executable::compile(dev, g, as_lavapipe);
  size_t texel_bindings = 0;
  for (const auto& k : exe->kernels())
    for (const auto& b : k.bindings) texel_bindings += b.texels;
  if (!texel_bindings) GTEST_SKIP() << dev->info().name << "'s kernels read no texels";
  ASSERT_EQ(texel_bindings, 2u);
  auto square = [&](unsigned seed) {
    HostTensor t{{ir::DType::F32, {n, n}}, std::vector<uint8_t>(n * n * 4)};
    auto v = random_floats(n * n, seed);
    for (auto& f : v) f = std::round(f * 8) / 8;  // every partial sum exact: any order gives the interpreter's bits
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  };
  const HostTensor x = square(1), y = square(2);
  const auto want = ir::interpret(g, {ir::Literal{x.type, x.data}, ir::Literal{y.type, y.data}}).at(0).data;
  const int64_t before = dev->texel_views();
  {
    std::vector<BufferPtr> in = {dev->upload(x.type, x.data.data(), x.data.size()), dev->upload(y.type, y.data.data(), y.data.size())};
    for (int run = 0; run < 2; ++run) {
      auto out = exe->run(in);
      std::vector<uint8_t> got(out[0]->bytes());
      dev->download(*out[0], got.data(), got.size());
      EXPECT_EQ(got, want) << "run " << run;
      EXPECT_EQ(dev->texel_views() - before, 2) << "run " << run << ": one view per input buffer";
    }
  }
  EXPECT_EQ(dev->texel_views() - before, 2) << "pooled allocations keep their views";
  dev->trim();
  EXPECT_EQ(dev->texel_views(), before) << "destroyed with their allocations";
}

TEST(Runtime, OutOfMemoryIsAnErrorAndTheDeviceStaysUsable) {
  auto dev = Device::open();
  ir::TensorType huge{ir::DType::F64, {int64_t(1) << 40}};  // 8 TiB
  try {
    dev->allocate(huge);
    FAIL() << "expected OutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::OutOfMemory);
  }
  auto exe = Executable::compile(dev, exp_mul_add(64));
  auto x = random_floats(64, 7), y = random_floats(64, 8);
  expect_exp_mul_add(x, y, floats(exe->run_host({f32_tensor(x), f32_tensor(y)})[0]));
}

TEST(Runtime, ManyThreadsRunGraphsAtOnce) {
  auto dev = Device::open();
  auto exe = Executable::compile(dev, exp_mul_add(513));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto x = random_floats(513, t * 100 + i), y = random_floats(513, t * 100 + i + 50);
        auto got = floats(exe->run_host({f32_tensor(x), f32_tensor(y)})[0]);
        if (!all_near_exp_mul_add(x, y, got)) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// The devices a 2-GPU Nx.Serving spreads its partitions over: every GPU listed, or the
// first device opened twice where there is one GPU or none (two VkDevices on lavapipe in CI:
// Device::open shares one VkDevice per configuration, so the second differs in its timeout).
std::vector<std::shared_ptr<Device>> two_or_more_devices() {
  std::vector<std::shared_ptr<Device>> devs;
  for (const auto& d : list_devices())
    if (d.type != "cpu") {
      RuntimeOptions o;
      o.device = std::to_string(d.index);
      devs.push_back(Device::open(o));
    }
  while (devs.size() < 2) {
    RuntimeOptions o;
    o.timeout_ms = 120000 + devs.size();
    devs.push_back(Device::open(o));
  }
  return devs;
}

TEST(Runtime, EachDeviceRunsItsOwnExecutableAtOnce) {
  auto devs = two_or_more_devices();
  std::vector<std::thread> threads;
  std::vector<int> failures(devs.size());
  for (size_t d = 0; d < devs.size(); ++d)
    threads.emplace_back([&, d] {
      auto exe = Executable::compile(devs[d], exp_mul_add(777));
      for (int i = 0; i < 10; ++i) {
        auto x = random_floats(777, d * 100 + i), y = random_floats(777, d * 100 + i + 50);
        if (!all_near_exp_mul_add(x, y, floats(exe->run_host({f32_tensor(x), f32_tensor(y)})[0]))) ++failures[d];
      }
    });
  for (auto& th : threads) th.join();
  for (size_t d = 0; d < devs.size(); ++d) EXPECT_EQ(failures[d], 0) << "device " << d;
}

TEST(Runtime, BuffersStayOnTheirDevice) {
  auto devs = two_or_more_devices();
  auto x = random_floats(64, 3);
  auto t = f32_tensor(x);
  auto on_first = devs[0]->upload(t.type, t.data.data(), t.data.size());
  EXPECT_EQ(&on_first->device(), devs[0].get());
  auto exe = Executable::compile(devs[1], exp_mul_add(64));
  auto on_second = devs[1]->upload(t.type, t.data.data(), t.data.size());
  try {
    exe->run({on_first, on_second});
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("parameter 0 of graph 'ema' lives on device"), std::string::npos) << e.what();
  }
  std::vector<uint8_t> back(t.data.size());
  EXPECT_THROW(devs[1]->download(*on_first, back.data(), back.size()), Error);
  // Copied across explicitly, the same values run there.
  devs[0]->download(*on_first, back.data(), back.size());
  auto copied = devs[1]->upload(t.type, back.data(), back.size());
  std::vector<uint8_t> out(t.data.size());
  devs[1]->download(*exe->run({copied, on_second})[0], out.data(), out.size());
  std::vector<float> got(x.size());
  std::memcpy(got.data(), out.data(), out.size());
  expect_exp_mul_add(x, x, got);
}

// Narrow signed integers compared with a 64-bit constant (Nx types the literal in `x > 1`
// as s64): sign extension must survive the driver's constant folding.
TEST(Runtime, NarrowIntegersCompareWithWideConstants) {
  NXV_SKIP_WITHOUT(ir::DType::S64);
  for (const char* t : {"s8", "s16", "s32"}) {
    SCOPED_TRACE(t);
    auto g = ir::parse_graph(std::string(R"({"version": 1, "nodes": [
      {"id": 0, "op": "parameter", "type": ")") + t + R"(", "shape": [5], "attrs": {"index": 0}},
      {"id": 1, "op": "constant", "type": "s64", "shape": [], "attrs": {"value": 1}},
      {"id": 2, "op": "greater", "args": [0, 1], "type": "u8", "shape": [5]},
      {"id": 3, "op": "less_equal", "args": [1, 0], "type": "u8", "shape": [5]}], "outputs": [2, 3]})");
    auto exe = Executable::compile(Device::open(), g);
    const int bytes = ir::dtype_bytes(ir::parse_dtype(t));
    const int64_t x[5] = {1, -2, 3, 0, -1};
    HostTensor in{{ir::parse_dtype(t), {5}}, std::vector<uint8_t>(5 * bytes)};
    for (int i = 0; i < 5; ++i) std::memcpy(in.data.data() + i * bytes, &x[i], bytes);
    auto out = exe->run_host({in});
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(out[0].data[i], x[i] > 1) << i;
      EXPECT_EQ(out[1].data[i], 1 <= x[i]) << i;
    }
  }
}

// A counter loop squaring a vector five times, then a cond on the final count: the
// runtime drives the loop from the host, each region compiled as an executable of its own;
// the host follows the loop's counter itself (HostLoop), so the device never evaluates
// the loop's condition. The default pipeline turns the small cond into selects
// (if-convert); without that pass the host drives the cond too.
TEST(Runtime, RunsWhileAndCondFromTheHost) {
  auto dev = Device::open();
  // (The loop counts to a constant from a constant: unroll would inline it.)
  std::vector<std::string> host_loop = passes::default_pipeline();
  std::erase(host_loop, "unroll");
  std::vector<std::string> host_cond = host_loop;
  std::erase(host_cond, "if-convert");
  // The vector's kernel per iteration (the host writes the count, whose initial value is
  // uploaded with the executable) and the kernels after the loop: the selects, or the
  // cond's predicate and its branch. (How many submits they take depends on the speed of
  // the iterations.) Unrolled, no loop is left: two kernels, one submit.
  for (const auto& [pipeline, dispatches] :
       {std::pair{host_loop, 6}, std::pair{host_cond, 7}, std::pair{passes::default_pipeline(), 2}}) {
    auto exe = Executable::compile(dev, test_graph("while_cond.json"), {pipeline});
    auto x = random_floats(4, 11);
    RunStats st;
    auto out = exe->run_host({f32_tensor(x)}, &st);
    int32_t count;
    std::memcpy(&count, out.at(0).data.data(), 4);
    EXPECT_EQ(count, 5);
    auto got = floats(out.at(1));
    for (size_t k = 0; k < x.size(); ++k) {
      float want = x[k];
      for (int i = 0; i < 5; ++i) want *= want;
      EXPECT_FLOAT_EQ(got[k], -want);  // count > 0 takes branch0: negate
    }
    EXPECT_EQ(st.dispatches, dispatches);
  }
}

// A cond the host drives (if-convert left out) between two kernels: the predicate's kernel
// is submitted for the host to read, then the branch taken shares one submit with the
// kernel after the cond. (Exact ops: the results equal the interpreter's on any device.)
TEST(Runtime, AHostCondsBranchSharesTheSubmitOfWhatFollows) {
  auto dev = Device::open();
  std::vector<std::string> host_cond = passes::default_pipeline();
  std::erase(host_cond, "if-convert");
  auto g = ir::parse_graph(R"({"version": 1, "name": "g", "nodes": [
    {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
    {"id": 1, "op": "sum", "args": [0], "type": "f32", "shape": [], "attrs": {"axes": [0], "keep_axes": false}},
    {"id": 2, "op": "constant", "type": "f32", "shape": [], "attrs": {"value": 0}},
    {"id": 3, "op": "greater", "args": [1, 2], "type": "u8", "shape": []},
    {"id": 4, "op": "cond", "args": [3, 0], "type": "f32", "shape": [4], "regions": {
      "branch0": {"nodes": [
        {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
        {"id": 1, "op": "negate", "args": [0], "type": "f32", "shape": [4]}], "outputs": [1]},
      "branch1": {"nodes": [
        {"id": 0, "op": "parameter", "type": "f32", "shape": [4], "attrs": {"index": 0}},
        {"id": 1, "op": "abs", "args": [0], "type": "f32", "shape": [4]}], "outputs": [1]}}},
    {"id": 5, "op": "multiply", "args": [4, 4], "type": "f32", "shape": [4]}],
   "outputs": [5]})");
  auto exe = Executable::compile(dev, g, {host_cond});
  for (float sign : {1.0f, -1.0f}) {
    const std::vector<float> x{0.5f * sign, 1.5f * sign, -0.25f * sign, 2.0f * sign};
    const std::vector<HostTensor> inputs{f32_tensor(x)};
    RunStats st;
    auto got = exe->run_host(inputs, &st);
    EXPECT_EQ(got.at(0).data, ir::interpret(g, inputs).at(0).data);
    EXPECT_EQ(st.dispatches, 3);
    EXPECT_EQ(st.submits, 2);
  }
}

// Runs endless_while.json (x + 1 while x > -1e30: never ends) on dev, expecting a timeout
// whose message holds `says`.
void expect_endless_while_times_out(const std::shared_ptr<Device>& dev, const std::string& says) {
  auto exe = Executable::compile(dev, test_graph("endless_while.json"));
  try {
    exe->run_host({HostTensor{{ir::DType::F32, {}}, std::vector<uint8_t>(4)}});
    ADD_FAILURE() << "the loop ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Timeout);
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

// Each submit of the endless loop is quick, so only the limit on the run as a whole stops
// it; the device stays usable.
TEST(Runtime, AnEndlessWhileEndsInATimeoutNamingTheLoop) {
  RuntimeOptions opts;
  opts.timeout_ms = 300;  // a distinct option set: a device of its own
  auto dev = Device::open(opts);
  auto start = std::chrono::steady_clock::now();
  expect_endless_while_times_out(dev, "node 1 (while) of graph 'forever'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  auto ok = Executable::compile(dev, exp_mul_add(5));
  auto x = random_floats(5, 1), y = random_floats(5, 2);
  expect_exp_mul_add(x, y, floats(ok->run_host({f32_tensor(x), f32_tensor(y)})[0]));
}

// A device opened without a timeout takes $NXV_TIMEOUT_MS's, else two minutes; one given
// wins over the environment, and a value that is no positive integer is an error naming it.
TEST(Runtime, TheTimeoutComesFromTheEnvironmentUnlessGiven) {
  {
    devtest::ScopedEnv unset("NXV_TIMEOUT_MS", nullptr);
    EXPECT_EQ(Device::open()->options().timeout_ms, 120000u);
  }
  devtest::ScopedEnv env("NXV_TIMEOUT_MS", "250");
  auto dev = Device::open();
  EXPECT_EQ(dev->options().timeout_ms, 250u);
  expect_endless_while_times_out(dev, "250 ms");
  RuntimeOptions given;
  given.timeout_ms = 120005;
  EXPECT_EQ(Device::open(given)->options().timeout_ms, 120005u);
  for (const char* bad : {"0", "-5", "2s", "many", "99999999999999999999999"}) {
    devtest::ScopedEnv wrong("NXV_TIMEOUT_MS", bad);
    try {
      Device::open();
      ADD_FAILURE() << "NXV_TIMEOUT_MS=" << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("NXV_TIMEOUT_MS"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace nxv::runtime
