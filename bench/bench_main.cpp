// nxv_bench: times whole graphs (compile once, run many) and prints a table.
//
//   nxv_bench [--size small|full] [--dtypes f32,f64] [--runs N] [--warmup N] [--warmup-ms MS]
//             [--filter SUBSTR,...] [--device SEL] [--profile NAME] [--json FILE] [--graph FILE.json ...] [--dump DIR]
//             [--precision highest,high,default] [--error] [--pipeline-stats] [--dispatch-times]
//   nxv_bench --sweep|--sweep-small|--sweep-tiny [--dtypes f32,bf16,f16] [--filter SUBSTR,...] [...]
//   nxv_bench --serve SECONDS [--devices SEL,SEL...] [--batch N] [--json FILE]
//
// --dump writes each selected workload's graph to DIR/NAME_DTYPE.json (for `nxv run --check`
// and `nxv explore`) and exits.
// --precision compiles and times each workload once per listed compile option (how f32 dots
// may compute on bf16 cooperative matrices; runtime::CompileOptions::precision). --error adds,
// for the square dots (dotN), the largest error against a float64 product of the same
// inputs, relative to its largest element (as bench/jax_bench.py --error).
// --dispatch-times prints, under each workload, each dispatch's GPU time in the last run
// (RuntimeOptions::dispatch_times).
// --pipeline-stats prints, under each workload, what the driver reports of each kernel's
// compiled pipeline (VK_KHR_pipeline_executable_properties: registers, spills, ...; nothing
// where the device lacks it): how a kernel's tiles fit the device's registers.
// --sweep times the dense sweep instead of the issue-3 workloads (bench/sweep.cpp: real
// models' layers at their shapes, in f32, bf16 and f16 unless --dtypes says otherwise);
// --sweep-small the few of its shapes that Nx.BinaryBackend runs within minutes (bench/sweep_binary.exs),
// --sweep-tiny every one of its graphs shrunk for the reference interpreter (with --dump,
// then `nxv run --check`).
// --graph times the given IR graphs (random inputs; bandwidth counts each input and output
// once) instead of the built-in workloads: how to time one op or variant of a kernel.
//
// Inputs live on the device before timing starts, so the figures are the graph's own cost:
// `device` is GPU time between the first and last dispatch (timestamp queries), `wall` the
// whole run() call including submission and the fence wait.
//
// --serve measures batched inference throughput as Nx.Serving with one partition per device
// drives it: an MLP 784-512-512-10 (f32, softmax) with its weights resident on each device,
// one host thread per device uploading a batch, running it and reading the result back, for
// SECONDS. Listing devices 0,1 gives the 2-GPU figure; a selector may repeat (0,0 opens the
// device twice). bench/serving_bench.exs is the same measurement through Elixir.
//
// Warm-up runs for at least --warmup-ms as well as --warmup runs: GPUs drop to their idle
// clock while the host prepares inputs and take a few hundred ms of load to boost again, and
// 30 sub-millisecond runs would otherwise all fall in that ramp (on an H100 the SM clock sat
// at 345 MHz instead of 1980, halving bandwidth, depending on what the process did before).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "runtime/runtime.h"

namespace {

using namespace nxv;

struct Options {
  bool full = false;
  std::vector<ir::DType> dtypes = {ir::DType::F32, ir::DType::F64};
  bool dtypes_given = false;
  std::optional<bench::SweepSet> sweep;
  int runs = 30;
  int warmup = 3;
  double warmup_ms = 1500;
  std::string filter;
  std::string device;
  std::string profile;  // runtime::RuntimeOptions::profile
  std::string json_path;
  std::vector<std::string> graphs;
  std::vector<codegen::Precision> precisions = {codegen::Precision::Highest};
  bool error = false;
  bool pipeline_stats = false;
  bool dispatch_times = false;
  std::string dump_dir;
  double serve_seconds = 0;
  std::vector<std::string> devices = {""};
  int64_t batch = 64;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "nxv_bench: error: %s\n", msg.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--size") {
      std::string v = value();
      if (v != "small" && v != "full") usage_error("--size takes small or full");
      o.full = v == "full";
    } else if (a == "--sweep") {
      o.sweep = bench::SweepSet::Full;
    } else if (a == "--sweep-small") {
      o.sweep = bench::SweepSet::Small;
    } else if (a == "--sweep-tiny") {
      o.sweep = bench::SweepSet::Tiny;
    } else if (a == "--dtypes") {
      o.dtypes_given = true;
      o.dtypes.clear();
      std::string v = value();
      for (size_t s = 0; s <= v.size();) {
        size_t e = v.find(',', s);
        if (e == std::string::npos) e = v.size();
        o.dtypes.push_back(ir::parse_dtype(v.substr(s, e - s)));
        s = e + 1;
      }
    } else if (a == "--runs") {
      o.runs = std::max(1, std::stoi(value()));
    } else if (a == "--warmup") {
      o.warmup = std::max(0, std::stoi(value()));
    } else if (a == "--warmup-ms") {
      o.warmup_ms = std::max(0.0, std::stod(value()));
    } else if (a == "--filter") {
      o.filter = value();
    } else if (a == "--device") {
      o.device = value();
    } else if (a == "--profile") {
      o.profile = value();
    } else if (a == "--dump") {
      o.dump_dir = value();
    } else if (a == "--serve") {
      o.serve_seconds = std::stod(value());
    } else if (a == "--devices") {
      o.devices.clear();
      std::stringstream list(value());
      for (std::string sel; std::getline(list, sel, ',');) o.devices.push_back(sel);
    } else if (a == "--batch") {
      o.batch = std::stoll(value());
    } else if (a == "--precision") {
      o.precisions.clear();
      std::stringstream list(value());
      try {
        for (std::string p; std::getline(list, p, ',');) o.precisions.push_back(codegen::parse_precision(p));
      } catch (const std::invalid_argument& e) {
        usage_error(std::string("--precision: ") + e.what());
      }
    } else if (a == "--error") {
      o.error = true;
    } else if (a == "--pipeline-stats") {
      o.pipeline_stats = true;
    } else if (a == "--dispatch-times") {
      o.dispatch_times = true;
    } else if (a == "--graph") {
      o.graphs.push_back(value());
    } else if (a == "--json") {
      o.json_path = value();
    } else if (a == "--help" || a == "-h") {
      std::puts("usage: nxv_bench [--size small|full] [--dtypes f32,f64] [--runs N] [--warmup N] "
                "[--warmup-ms MS] [--filter SUBSTR,...] [--device SEL] [--profile NAME] [--json FILE] [--graph FILE.json ...] [--dump DIR] "
                "[--precision highest,high,default] [--error] [--pipeline-stats] [--dispatch-times]\n"
                "       nxv_bench --sweep|--sweep-small|--sweep-tiny [--dtypes f32,bf16,f16] [--filter SUBSTR,...] [...]\n"
                "       nxv_bench --serve SECONDS [--devices SEL,SEL...] [--batch N] [--json FILE]");
      std::exit(0);
    } else {
      usage_error("unknown argument " + a);
    }
  }
  if (o.sweep && !o.dtypes_given) o.dtypes = {ir::DType::F32, ir::DType::BF16, ir::DType::F16};
  if (o.sweep && !o.graphs.empty()) usage_error("--sweep and --graph exclude each other");
  return o;
}

// --filter: names containing any of its comma-separated substrings.
bool selected(const Options& o, const std::string& name) {
  if (o.filter.empty()) return true;
  std::stringstream list(o.filter);
  for (std::string part; std::getline(list, part, ',');)
    if (name.find(part) != std::string::npos) return true;
  return false;
}

// --dispatch-times: the last run's time per dispatch, named by kernel where the run
// dispatched each kernel once, in order (no loops the host drives).
void print_dispatch_times(const runtime::Executable& exe, const std::vector<double>& ms) {
  const auto& kernels = exe.kernels();
  for (size_t i = 0; i < ms.size(); ++i)
    std::printf("  dispatch %zu %s: %.4f ms\n", i, ms.size() == kernels.size() ? kernels[i].name.c_str() : "", ms[i]);
}

ir::Literal random_input(const ir::TensorType& t, std::mt19937_64& rng) {
  ir::Literal lit{t, std::vector<uint8_t>(t.byte_size())};
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  int64_t n = t.num_elements();
  // Scalars are step sizes: keep them small so 32 leapfrog steps stay finite.
  double scale = t.shape.empty() ? 0.01 : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    ir::Scalar v;
    v.f = dist(rng) * scale;
    ir::set_element(lit, i, v);  // rounded to the element type (f16 and bf16 too)
  }
  return lit;
}


struct Row {
  std::string name, dtype, precision;
  int64_t elems;
  int dispatches;
  double compile_ms, wall_ms, device_ms, gbps, tflops;
  double error = -1;  // --error's figure; -1: not measured
};

// max |c - a·b| / max |a·b| for n x n matrices a, b and c, the product in float64 (rows
// split over the host's threads).
double product_error(const ir::Literal& a, const ir::Literal& b, const ir::Literal& c) {
  const int64_t n = a.type.shape.at(0);
  std::vector<double> bd(size_t(n * n));
  for (int64_t i = 0; i < n * n; ++i) bd[size_t(i)] = ir::get_f64(b, i);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> worst(threads, 0), largest(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<double> row(static_cast<size_t>(n));
      for (int64_t i = t; i < n; i += threads) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int64_t k = 0; k < n; ++k) {
          const double x = ir::get_f64(a, i * n + k);
          const double* bk = &bd[size_t(k * n)];
          for (int64_t j = 0; j < n; ++j) row[size_t(j)] += x * bk[j];
        }
        for (int64_t j = 0; j < n; ++j) {
          worst[t] = std::max(worst[t], std::fabs(ir::get_f64(c, i * n + j) - row[size_t(j)]));
          largest[t] = std::max(largest[t], std::fabs(row[size_t(j)]));
        }
      }
    });
  for (auto& th : pool) th.join();
  return *std::max_element(worst.begin(), worst.end()) / *std::max_element(largest.begin(), largest.end());
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// The rows so far, rewritten after each one: a run cut short (a sweep under `timeout`)
// still leaves the rows it finished.
void write_rows(const Options& o, const runtime::Device& dev, const std::vector<Row>& rows) {
  if (o.json_path.empty()) return;
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) {
    j.push_back({{"workload", r.name}, {"dtype", r.dtype}, {"precision", r.precision}, {"elements", r.elems}, {"dispatches", r.dispatches},
                 {"compile_ms", r.compile_ms}, {"wall_ms", r.wall_ms}, {"device_ms", r.device_ms},
                 {"gbps", r.gbps}, {"tflops", r.tflops}});
    if (r.error >= 0) j.back()["max_rel_error"] = r.error;
  }
  // through a rename, so that a kill mid-write leaves the previous rows whole
  const std::string part = o.json_path + ".part";
  std::ofstream(part) << nlohmann::json{{"device", dev.info().name}, {"profile", dev.info().profile}, {"results", j}}.dump(2) << "\n";
  std::filesystem::rename(part, o.json_path);
}

// One device serving the MLP: its compiled graph, its copy of the weights, and the
// latencies of the batches it ran.
struct Partition {
  std::shared_ptr<runtime::Device> dev;
  std::shared_ptr<runtime::Executable> exe;
  std::vector<runtime::BufferPtr> weights;
  std::vector<double> latency_ms;

  void run_batch(const ir::Literal& batch, std::vector<uint8_t>& result) {
    std::vector<runtime::BufferPtr> inputs{dev->upload(batch.type, batch.data.data(), batch.data.size())};
    inputs.insert(inputs.end(), weights.begin(), weights.end());
    auto outs = exe->run(inputs);
    dev->download(*outs[0], result.data(), result.size());
  }
};

std::vector<Partition> open_partitions(const Options& o, const ir::Graph& g, std::mt19937_64& rng) {
  std::vector<Partition> parts(o.devices.size());
  for (size_t d = 0; d < parts.size(); ++d) {
    runtime::RuntimeOptions ro;
    ro.device = o.devices[d];
    ro.profile = o.profile;
    auto& p = parts[d];
    p.dev = runtime::Device::open(ro);
    p.exe = runtime::Executable::compile(p.dev, g);
    for (size_t k = 1; k < p.exe->input_types().size(); ++k) {
      auto lit = random_input(p.exe->input_types()[k], rng);
      p.weights.push_back(p.dev->upload(lit.type, lit.data.data(), lit.data.size()));
    }
    std::printf("partition %zu: %s (%s)\n", d, p.dev->info().name.c_str(), p.dev->info().type.c_str());
  }
  return parts;
}

// Every partition runs batches back to back on its own thread for `seconds`; returns the
// wall time taken.
double serve_for(std::vector<Partition>& parts, const ir::Literal& batch, size_t result_bytes, double seconds) {
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(parts.size());
  for (size_t d = 0; d < parts.size(); ++d)
    threads.emplace_back([&, d] {
      try {
        std::vector<uint8_t> result(result_bytes);
        while (std::chrono::steady_clock::now() < deadline) {
          auto t0 = std::chrono::steady_clock::now();
          parts[d].run_batch(batch, result);
          parts[d].latency_ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      } catch (const std::exception& e) {
        errors[d] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (size_t d = 0; d < parts.size(); ++d)
    if (!errors[d].empty()) throw std::runtime_error("partition " + std::to_string(d) + ": " + errors[d]);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report_serve(const Options& o, const std::string& workload, const std::vector<Partition>& parts, double secs) {
  std::vector<double> all;
  for (const auto& p : parts) all.insert(all.end(), p.latency_ms.begin(), p.latency_ms.end());
  double batches = static_cast<double>(all.size());
  std::printf("serve %s: %zu partition(s), batch %lld, %.1f s: %.0f rows/s, %.1f batches/s, latency p50 %.3f ms, "
              "p99 %.3f ms\n",
              workload.c_str(), parts.size(), static_cast<long long>(o.batch), secs, batches * o.batch / secs,
              batches / secs, percentile(all, 0.5), percentile(all, 0.99));
  if (o.json_path.empty()) return;
  nlohmann::json devs = nlohmann::json::array(), per = nlohmann::json::array();
  for (const auto& p : parts) {
    devs.push_back(p.dev->info().name);
    per.push_back(p.latency_ms.size());
  }
  std::ofstream(o.json_path) << nlohmann::json{{"workload", workload},       {"devices", devs},
                                               {"batch", o.batch},           {"seconds", secs},
                                               {"rows_per_s", batches * o.batch / secs},
                                               {"batches_per_partition", per},
                                               {"p50_ms", percentile(all, 0.5)},
                                               {"p99_ms", percentile(all, 0.99)}}
                                    .dump(2)
                             << "\n";
}

int serve(const Options& o) {
  bench::Workload w = bench::mlp_inference(ir::DType::F32, o.batch, {784, 512, 512, 10});
  std::mt19937_64 rng(42);
  const ir::Literal batch = random_input(w.graph.node(0).results[0], rng);  // the batch is parameter 0
  std::vector<Partition> parts = open_partitions(o, w.graph, rng);
  const size_t result_bytes = size_t(parts[0].exe->output_types()[0].byte_size());
  for (auto& p : parts) {  // compile-time effects and clock ramp-up stay out of the figure
    std::vector<uint8_t> result(result_bytes);
    auto w0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() < o.warmup_ms)
      p.run_batch(batch, result);
  }
  report_serve(o, w.name, parts, serve_for(parts, batch, result_bytes, o.serve_seconds));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  if (o.serve_seconds > 0) return serve(o);
  runtime::RuntimeOptions ro;
  ro.device = o.device;
  ro.profile = o.profile;
  ro.pipeline_statistics = o.pipeline_stats;
  ro.dispatch_times = o.dispatch_times;
  auto dev = runtime::Device::open(ro);
  std::printf("device: %s (%s)%s\n", dev->info().name.c_str(), dev->info().type.c_str(),
              dev->info().profile.empty() ? "" : (" as profile " + dev->info().profile).c_str());

  std::vector<bench::Workload> workloads;
  for (const auto& path : o.graphs)
    workloads.push_back(bench::graph_workload(std::filesystem::path(path).stem().string(), ir::read_graph_file(path)));
  // Full size is issue 3's: 64M f32 / 16M f64 flat elements, 8192x8192 squares.
  for (ir::DType t : o.sweep ? o.dtypes : std::vector<ir::DType>{})
    for (auto& w : bench::sweep_workloads(t, *o.sweep)) workloads.push_back(std::move(w));
  for (ir::DType t : o.graphs.empty() && !o.sweep ? o.dtypes : std::vector<ir::DType>{}) {
    int64_t flat = o.full ? (t == ir::DType::F64 ? 16 << 20 : 64 << 20) : 1 << 20;
    int64_t side = o.full ? 8192 : 1024;
    for (auto& w : bench::make_workloads(t, flat, side, {8, 1000})) workloads.push_back(std::move(w));
  }
  if (!o.dump_dir.empty()) {
    std::filesystem::create_directories(o.dump_dir);
    for (const auto& w : workloads)
      if (selected(o, w.name))
        std::ofstream(o.dump_dir + "/" + w.name + "_" + ir::dtype_name(w.dtype) + ".json") << ir::write_graph(w.graph);
    return 0;
  }
  std::vector<Row> rows;
  int name_width = 14;
  for (const auto& w : workloads) name_width = std::max(name_width, static_cast<int>(w.name.size()));
  for (auto& w : workloads)
  for (codegen::Precision precision : o.precisions) {
    const ir::DType t = w.dtype;
    if (!selected(o, w.name)) continue;
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<runtime::Executable> exe;
    runtime::CompileOptions copts;
    copts.precision = precision;
    try {  // a workload the compiler cannot take yet is reported, and the others still run
      exe = runtime::Executable::compile(dev, w.graph, copts);
    } catch (const std::exception& e) {
      std::printf("%-*s %-4s not compiled: %s\n", name_width, w.name.c_str(), ir::dtype_name(t), e.what());
      continue;
    }
    double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::mt19937_64 rng(42);  // the same inputs at every precision
    std::vector<ir::Literal> host_inputs;
    runtime::RunStats st;
    std::vector<double> wall, device;
    try {  // nor does one the device has no memory for stop the others
      std::vector<runtime::BufferPtr> inputs;
      for (const auto& ty : exe->input_types()) {
        host_inputs.push_back(random_input(ty, rng));
        inputs.push_back(dev->upload(ty, host_inputs.back().data.data(), host_inputs.back().data.size()));
      }
      auto w0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.warmup ||
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() <
                          o.warmup_ms;
           ++i)
        exe->run(inputs, &st);
      for (int i = 0; i < o.runs; ++i) {
        exe->run(inputs, &st);
        wall.push_back(st.wall_ms);
        device.push_back(st.device_ms);
      }
    } catch (const std::exception& e) {
      std::printf("%-*s %-4s not run: %s\n", name_width, w.name.c_str(), ir::dtype_name(t), e.what());
      continue;
    }
    Row r{w.name, ir::dtype_name(t), codegen::to_string(precision), exe->input_types()[0].num_elements(), st.dispatches, compile_ms,
          percentile(wall, 0.5), percentile(device, 0.5), 0, 0};
    if (o.error && w.name.rfind("dot", 0) == 0)
      r.error = product_error(host_inputs.at(0), host_inputs.at(1), exe->run_host(host_inputs).at(0));
    double secs = (r.device_ms > 0 ? r.device_ms : r.wall_ms) / 1e3;
    r.gbps = w.min_bytes / secs / 1e9;
    r.tflops = w.flops / secs / 1e12;
    rows.push_back(r);
    write_rows(o, *dev, rows);
    std::printf("%-*s %-4s %10lld elems  %2d dispatch  compile %8.1f ms  wall %9.3f ms  device %9.3f ms  %8.1f GB/s",
                name_width, r.name.c_str(), r.dtype.c_str(), static_cast<long long>(r.elems), r.dispatches, r.compile_ms,
                r.wall_ms, r.device_ms, r.gbps);
    if (w.flops > 0) std::printf("  %8.3f TFLOP/s", r.tflops);
    if (r.error >= 0) std::printf("  error %.3g", r.error);
    if (precision != codegen::Precision::Highest) std::printf("  precision %s", r.precision.c_str());
    std::printf("\n");
    if (o.dispatch_times) print_dispatch_times(*exe, st.dispatch_ms);
    if (o.pipeline_stats)
      for (const auto& k : exe->kernels()) {
        std::printf("  %s:", k.name.c_str());
        for (const auto& [name, value] : dev->pipeline_statistics(k)) std::printf("  %s %s", name.c_str(), value.c_str());
        std::printf("\n");
      }
    std::fflush(stdout);
  }
  write_rows(o, *dev, rows);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "nxv_bench: error: %s\n", e.what());
  return 1;
}
