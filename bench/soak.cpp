// nxv_soak: a long run of random valid graphs (fuzz/graph_gen.h) on one device from several
// threads at once: each compiles a graph (new ones and recently seen ones, so both the
// compile paths and the executable and pipeline caches' hits are exercised), runs it from
// host tensors and from device buffers, and drops everything; another thread returns pooled
// memory (Device::trim) now and then. Samples host RSS, malloc's heap (glibc's mallinfo2:
// bytes in use, and the arena holding them) and the device memory held by live buffers over
// time; at the end empties the caches step by step, sampling after each, and flags growth.
// Not a test: docs/reliability.md says how to run it and how to read the columns.
//   nxv_soak [--minutes=M] [--threads=T] [--device=SEL] [--sample-seconds=S] [--seed=N]
//            [--max-elements=N] [--malloc-trim-seconds=S] [--out=FILE.md]
// --malloc-trim-seconds: malloc_trim(0) that often besides (0, the default: never), to see what
// returning free heap to the system keeps off RSS and what it costs.
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/host_memory.h"
#include "fuzz/graph_gen.h"
#include "runtime/runtime.h"
#include "runtime/device_impl.h"
#include "runtime/vk_util.h"
#include "cli/flags.h"

using namespace nxv;
using bench::mib;

namespace {

struct Args {
  double minutes = 5;
  int threads = 4;
  std::string device, out;
  double sample_seconds = 15;
  double malloc_trim_seconds = 0;
  uint64_t seed = 1;
  fuzz::GenOptions gen;
};

Args parse(int argc, char** argv) {
  Args a;
  a.gen.max_elements = 1 << 16;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* name) { return cli::flag_value(argv[i], name); };
    if (const char* v = value("minutes")) a.minutes = std::stod(v);
    else if (const char* v = value("threads")) a.threads = std::max(1, std::stoi(v));
    else if (const char* v = value("device")) a.device = v;
    else if (const char* v = value("sample-seconds")) a.sample_seconds = std::stod(v);
    else if (const char* v = value("malloc-trim-seconds")) a.malloc_trim_seconds = std::stod(v);
    else if (const char* v = value("seed")) a.seed = std::stoull(v);
    else if (const char* v = value("max-elements")) a.gen.max_elements = std::stoll(v);
    else if (const char* v = value("out")) a.out = v;
    else throw std::invalid_argument("unknown argument " + s + " (see the comment atop bench/soak.cpp)");
  }
  return a;
}

struct Counters {
  std::atomic<uint64_t> compiles{0}, new_graphs{0}, runs{0}, declined{0}, errors{0};
};

struct Sample {
  std::string phase;  // "" while the threads run, else what was just done
  double t;
  uint64_t compiles, runs, rss, device_bytes;
  uint64_t heap_in_use, heap_arenas;  // bench::heap()
  size_t pipelines_alive, pipelines_cached, executables_cached;
};


class Soak {
 public:
  explicit Soak(const Args& a) : a_(a) {
    runtime::RuntimeOptions o;
    o.device = a.device;
    dev_ = runtime::Device::open(o);
    fuzz::fit_to_device(a_.gen, dev_->info().caps);
    next_seed_ = a.seed;
  }

  int run() {
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(a_.minutes * 60));
    sample(0);
    std::vector<std::thread> workers;
    for (int i = 0; i < a_.threads; ++i)
      workers.emplace_back([&, i] { work(end, 0x51ed + uint64_t(i)); });
    // Trims pooled memory now and then, samples on the interval.
    double next_sample = a_.sample_seconds, next_malloc_trim = a_.malloc_trim_seconds;
    for (int tick = 0; std::chrono::steady_clock::now() < end; ++tick) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (tick % 7 == 6) dev_->trim();
      if (a_.malloc_trim_seconds > 0 && t >= next_malloc_trim) {
        const auto t0 = std::chrono::steady_clock::now();
        malloc_trim(0);
        malloc_trim_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ++malloc_trims_;
        next_malloc_trim += a_.malloc_trim_seconds;
      }
      if (t >= next_sample) {
        sample(t);
        next_sample += a_.sample_seconds;
      }
    }
    for (auto& w : workers) w.join();
    // Every graph is dropped, but the runtime's caches keep executables (and their uploaded
    // constants) and pipelines (the driver's compiled code): emptied, any device memory
    // still in use at the end is a leak, and what host memory each step returns is told.
    auto now = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    sample(now(), "threads stopped");
    runtime::Executable::drop_cached(*dev_);
    dev_->trim();
    sample(now(), "executable cache emptied");
    dev_->drop_cached_pipelines();
    sample(now(), "pipeline cache emptied");
    malloc_trim(0);
    sample(now(), "malloc_trim(0)");
    return report();
  }

 private:
  Args a_;
  std::shared_ptr<runtime::Device> dev_;
  Counters c_;
  std::mutex mu_;
  uint64_t next_seed_;
  std::vector<uint64_t> recent_;  // seeds compiled lately: compiled again for cache hits
  std::vector<Sample> samples_;
  std::vector<std::string> first_errors_;
  int malloc_trims_ = 0;
  double malloc_trim_ms_ = 0;

  uint64_t seed_to_compile(uint64_t coin) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!recent_.empty() && coin % 2) return recent_[coin / 2 % recent_.size()];
    ++c_.new_graphs;
    const uint64_t s = next_seed_++;
    if (recent_.size() < 64) recent_.push_back(s);
    else recent_[s % 64] = s;
    return s;
  }

  void work(std::chrono::steady_clock::time_point end, uint64_t salt) {
    for (uint64_t k = 0; std::chrono::steady_clock::now() < end; ++k) {
      const uint64_t seed = seed_to_compile(k * 0x9e3779b97f4a7c15ull ^ salt);
      try {
        const ir::Graph g = fuzz::generate_graph(seed, a_.gen);
        const auto inputs = fuzz::generate_inputs(g, seed, a_.gen);
        auto exe = runtime::Executable::compile(dev_, g);
        ++c_.compiles;
        exe->run_host(inputs);
        // From device buffers, the way the NIF runs: upload, run, download, drop.
        std::vector<runtime::Upload> ups;
        for (const auto& in : inputs) ups.push_back({in.type, in.data.data(), in.data.size()});
        auto outs = exe->run(dev_->upload_all(ups));
        std::vector<std::vector<uint8_t>> host(outs.size());
        std::vector<runtime::Download> downs;
        for (size_t i = 0; i < outs.size(); ++i) {
          host[i].resize(outs[i]->bytes());
          downs.push_back({outs[i].get(), host[i].data(), host[i].size()});
        }
        dev_->download_all(downs);
        c_.runs += 2;
      } catch (const runtime::Error& e) {
        if (e.kind() == runtime::Error::Kind::Unsupported || e.kind() == runtime::Error::Kind::OutOfMemory) {
          ++c_.declined;
          continue;
        }
        error(seed, e.what());
      } catch (const std::exception& e) {
        error(seed, e.what());
      }
    }
  }

  void error(uint64_t seed, const std::string& what) {
    ++c_.errors;
    std::lock_guard<std::mutex> lock(mu_);
    if (first_errors_.size() < 10) first_errors_.push_back("seed " + std::to_string(seed) + ": " + what);
  }

  void sample(double t, const std::string& phase = "") {
    const bench::Heap h = bench::heap();
    Sample s{phase, t, c_.compiles, c_.runs, bench::rss_bytes(), dev_->bytes_in_use(), h.in_use, h.arenas,
             dev_->pipelines_alive(), dev_->pipelines_cached(), runtime::Executable::cached(*dev_)};
    samples_.push_back(s);
    std::printf("t=%6.0fs compiles=%llu runs=%llu rss=%.1f MiB heap_in_use=%.1f MiB heap_arenas=%.1f MiB "
                "device_in_use=%.2f MiB pipelines=%zu (%zu cached) executables=%zu%s%s\n",
                s.t, (unsigned long long)s.compiles, (unsigned long long)s.runs, mib(s.rss), mib(s.heap_in_use),
                mib(s.heap_arenas), mib(s.device_bytes), s.pipelines_alive, s.pipelines_cached, s.executables_cached,
                phase.empty() ? "" : " after: ", phase.c_str());
    std::fflush(stdout);
  }

  // Growth: device memory held by live buffers must be back where it started once every
  // graph and the caches are dropped. Host memory grows while the caches fill (on lavapipe
  // each pipeline holds about 0.4 MiB of heap), so warm-up ends at the first sample past a
  // tenth of the run at which the pipeline cache is full (a tenth of the run where it never
  // fills); from there to the threads' stop it is flagged past 20% + 64 MiB: heap in use
  // (what live allocations hold) and RSS each, so that growth of allocations is told from
  // free heap and the driver's mappings.
  int report() {
    const Sample& first = samples_.front();
    const Sample& last = samples_.back();
    const Sample* warm = &samples_.front();
    const Sample* stopped = &samples_.back();
    for (const auto& s : samples_)
      if (s.phase == "threads stopped") stopped = &s;
    const size_t bound = dev_->options().pipeline_cache_size;
    bool fills = false;
    for (const auto& s : samples_) fills |= s.pipelines_cached >= bound;
    for (const auto& s : samples_)
      if (s.t >= stopped->t / 10 && (!fills || s.pipelines_cached >= bound)) {
        warm = &s;
        break;
      }
    auto grew = [](uint64_t from, uint64_t to) { return to > from + from / 5 + (64ull << 20); };
    const bool device_leak = last.device_bytes != first.device_bytes;
    const bool heap_growth = grew(warm->heap_in_use, stopped->heap_in_use);
    const bool rss_growth = grew(warm->rss, stopped->rss);
    std::ostringstream md;
    md << "| t (s) | compiles | runs | host RSS (MiB) | heap in use (MiB) | heap arenas (MiB) | pipelines alive "
          "(cached) | executables cached | device memory in use (MiB) | after |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& s : samples_) {
      char row[320];
      std::snprintf(row, sizeof row, "| %.0f | %llu | %llu | %.1f | %.1f | %.1f | %zu (%zu) | %zu | %.2f | %s |\n", s.t,
                    (unsigned long long)s.compiles, (unsigned long long)s.runs, mib(s.rss), mib(s.heap_in_use),
                    mib(s.heap_arenas), s.pipelines_alive, s.pipelines_cached, s.executables_cached,
                    mib(s.device_bytes), s.phase.c_str());
      md << row;
    }
    char summary[1024];
    std::snprintf(summary, sizeof summary,
                  "\ndevice: %s; %d threads, %.1f min; %llu distinct graphs, %llu compiles, %llu runs, %llu declined "
                  "(unsupported/out of memory), %llu errors\n\n"
                  "heap in use %.1f MiB at start, %.1f after warm-up, %.1f when the threads stopped, %.1f at end: %s\n"
                  "host RSS %.1f MiB at start, %.1f after warm-up, %.1f when the threads stopped, %.1f at end: %s\n"
                  "device memory in use %.2f MiB at start, %.2f at end: %s\n",
                  dev_->info().name.c_str(), a_.threads, a_.minutes, (unsigned long long)c_.new_graphs.load(),
                  (unsigned long long)c_.compiles.load(), (unsigned long long)c_.runs.load(),
                  (unsigned long long)c_.declined.load(), (unsigned long long)c_.errors.load(), mib(first.heap_in_use),
                  mib(warm->heap_in_use), mib(stopped->heap_in_use), mib(last.heap_in_use),
                  heap_growth ? "GROWTH" : "ok", mib(first.rss), mib(warm->rss), mib(stopped->rss), mib(last.rss),
                  rss_growth ? "GROWTH" : "ok", mib(first.device_bytes), mib(last.device_bytes),
                  device_leak ? "LEAK" : "ok");
    md << summary;
    char warmed[160];
    std::snprintf(warmed, sizeof warmed, "warm-up ended at %.0f s%s; %llu pipelines created\n", warm->t,
                  fills ? ", the pipeline cache full" : "",
                  (unsigned long long)std::static_pointer_cast<runtime::DeviceImpl>(dev_)->pipeline_cache_misses());
    md << warmed;
    if (malloc_trims_)
      md << "malloc_trim(0) every " << a_.malloc_trim_seconds << " s: " << malloc_trims_ << " calls, "
         << malloc_trim_ms_ / malloc_trims_ << " ms each on average\n";
    // What each step at the end gave back.
    for (size_t i = 1; i < samples_.size(); ++i)
      if (!samples_[i].phase.empty() && !samples_[i - 1].phase.empty()) {
        char step[256];
        std::snprintf(step, sizeof step, "%s: host RSS %+.1f MiB, heap in use %+.1f MiB, heap arenas %+.1f MiB\n",
                      samples_[i].phase.c_str(), mib(samples_[i].rss) - mib(samples_[i - 1].rss),
                      mib(samples_[i].heap_in_use) - mib(samples_[i - 1].heap_in_use),
                      mib(samples_[i].heap_arenas) - mib(samples_[i - 1].heap_arenas));
        md << step;
      }
    for (const auto& e : first_errors_) md << "\nerror: " << e << "\n";
    std::printf("%s", md.str().c_str());
    if (!a_.out.empty()) std::ofstream(a_.out) << md.str();
    return device_leak || heap_growth || rss_growth || c_.errors ? 1 : 0;
  }
};

}  // namespace

int main(int argc, char** argv) try {
  return Soak(parse(argc, argv)).run();
} catch (const std::exception& e) {
  std::fprintf(stderr, "nxv_soak: error: %s\n", e.what());
  return 2;
}
