// nxv_fuzz_diff: the differential fuzzer. Generates seeded random graphs (graph_gen.h), runs
// each on the default device through the runtime API and in the reference interpreter, and
// compares the outputs with `nxv run --check`'s tolerances (ir/check.h). Each finding prints
// the seed, what went wrong, and the graph and inputs as JSON (`--out DIR` also writes them
// as files for `nxv run DIR/seedN.json --inputs DIR/seedN.inputs.json --check`; with
// --count=1 it writes them whether or not the seed is a finding here).
//   nxv_fuzz_diff [--seed=N] [--count=N] [--seconds=S] [--max-ops=N] [--max-elements=N]
//                 [--out=DIR] [--verbose]
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/graph_gen.h"
#include "ir/check.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/literal.h"
#include "runtime/runtime.h"
#include "cli/flags.h"

using namespace nxv;

// Set by ASan/UBSan builds only.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

// "died on seed N", kept current, for a crash (a signal or a sanitizer report) to name the
// seed that replays it.
char g_died_on[64] = "";

void tell_seed() {
  if (ssize_t n = ssize_t(std::strlen(g_died_on)); n > 0 && write(STDERR_FILENO, g_died_on, size_t(n)) < 0) _exit(3);
}

void on_fatal_signal(int sig) {
  tell_seed();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Args {
  uint64_t seed = 1, count = 100;
  double seconds = 0;  // 0: no time limit
  std::string out;
  bool verbose = false;
  fuzz::GenOptions gen;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* name) { return cli::flag_value(argv[i], name); };
    if (const char* v = value("seed")) a.seed = std::stoull(v);
    else if (const char* v = value("count")) a.count = std::stoull(v);
    else if (const char* v = value("seconds")) a.seconds = std::stod(v);
    else if (const char* v = value("max-ops")) a.gen.max_ops = std::max(1, std::stoi(v));
    else if (const char* v = value("max-elements")) a.gen.max_elements = std::max<int64_t>(1, std::stoll(v));
    else if (const char* v = value("out")) a.out = v;
    else if (s == "--verbose") a.verbose = true;
    else throw std::invalid_argument("unknown argument " + s + " (see the comment atop fuzz/nxv_fuzz_diff.cpp)");
  }
  return a;
}

// Subnormals of the widths the device flushes as zeros of the same sign.
std::vector<ir::Literal> flushed(std::vector<ir::Literal> lits, const std::set<ir::DType>& flushes) {
  for (auto& lit : lits)
    if (flushes.count(lit.type.dtype)) ir::flush_subnormals(lit);
  return lits;
}

std::string inputs_json(const std::vector<ir::Literal>& inputs) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& in : inputs) j.push_back(ir::literal_to_json(in));
  return j.dump();
}

struct Tally {
  uint64_t graphs = 0, compared = 0, unsupported = 0, findings = 0, flushed_between = 0;
};

// DIR/seedN.json and DIR/seedN.inputs.json, for `nxv run --check`.
void write_case(const Args& a, uint64_t seed, const ir::Graph& g, const std::vector<ir::Literal>& inputs) {
  // A folder that is not there yet is made (an unopened stream would drop the case unsaid).
  std::filesystem::create_directories(a.out);
  const std::string base = a.out + "/seed" + std::to_string(seed);
  std::ofstream(base + ".json") << ir::write_graph(g) << "\n";
  std::ofstream(base + ".inputs.json") << inputs_json(inputs) << "\n";
}

void report(const Args& a, uint64_t seed, const std::string& what, const ir::Graph* g,
            const std::vector<ir::Literal>* inputs) {
  std::printf("seed %llu: %s\n", (unsigned long long)seed, what.c_str());
  if (g) std::printf("  graph: %s\n", ir::write_graph(*g).c_str());
  // Large inputs are left to --out (or a replay: --seed=S --count=1 --out=DIR).
  if (inputs) {
    const std::string text = inputs_json(*inputs);
    if (text.size() <= 4096) std::printf("  inputs: %s\n", text.c_str());
    else std::printf("  inputs: %zu characters of JSON (--out=DIR writes them)\n", text.size());
  }
  if (!a.out.empty() && g && inputs) write_case(a, seed, *g, *inputs);
  std::fflush(stdout);
}

// Generates, runs and compares the graph of one seed.
void one(const Args& a, const std::shared_ptr<runtime::Device>& dev, uint64_t seed, Tally& t) {
  ++t.graphs;
  std::snprintf(g_died_on, sizeof g_died_on, "nxv_fuzz_diff: died on seed %llu\n", (unsigned long long)seed);
  if (a.verbose) std::printf("seed %llu\n", (unsigned long long)seed), std::fflush(stdout);
  ir::Graph g;
  try {
    g = fuzz::generate_graph(seed, a.gen);
  } catch (const std::exception& e) {
    ++t.findings;
    return report(a, seed, std::string("the generator made a graph the verifier rejects: ") + e.what(), nullptr, nullptr);
  }
  // Printed before the run, so that a crash (a signal ends the process) leaves its graph.
  if (a.verbose) std::printf("  graph: %s\n", ir::write_graph(g).c_str()), std::fflush(stdout);
  const auto inputs = fuzz::generate_inputs(g, seed, a.gen);
  // A replay of one seed keeps its case even where this device agrees (a finding of another
  // device's, replayed here under a profile that generates its inputs).
  if (!a.out.empty() && a.count == 1) write_case(a, seed, g, inputs);
  std::vector<ir::Literal> want, got;
  try {
    want = ir::interpret(g, inputs);
  } catch (const std::exception& e) {
    ++t.findings;
    return report(a, seed, std::string("the interpreter rejects a verified graph: ") + e.what(), &g, &inputs);
  }
  try {
    got = runtime::Executable::compile(dev, g)->run_host(inputs);
  } catch (const runtime::Error& e) {
    if (e.kind() == runtime::Error::Kind::Unsupported || e.kind() == runtime::Error::Kind::OutOfMemory) {
      ++t.unsupported;
      if (a.verbose) std::printf("  %s: %s\n", runtime::error_kind_name(e.kind()), e.what());
      return;
    }
    ++t.findings;
    return report(a, seed, std::string("device: ") + runtime::error_kind_name(e.kind()) + ": " + e.what(), &g, &inputs);
  } catch (const std::exception& e) {
    ++t.findings;
    return report(a, seed, std::string("device: ") + e.what(), &g, &inputs);
  }
  ++t.compared;
  const std::string diff = ir::check_outputs(want, got);
  if (diff.empty()) return;
  if (!a.gen.flushes.empty()) {
    const std::vector<ir::Literal> got_flushed = flushed(got, a.gen.flushes);
    if (ir::check_outputs(flushed(want, a.gen.flushes), got_flushed).empty()) return;
    // A device that keeps no subnormals flushes what one op hands the next too (x * x of a
    // small x, then a comparison): the interpreter doing the same is the oracle there.
    ir::InterpretOptions o;
    o.flush_subnormals = a.gen.flushes;
    if (ir::check_outputs(flushed(ir::interpret(g, inputs, o), a.gen.flushes), got_flushed).empty()) {
      ++t.flushed_between;
      return;
    }
  }
  ++t.findings;
  report(a, seed, "device and interpreter differ: " + diff, &g, &inputs);
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (__sanitizer_set_death_callback)  // the sanitizers' own handlers report crashes there
    __sanitizer_set_death_callback(tell_seed);
  else
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
  auto dev = runtime::Device::open();
  fuzz::fit_to_device(a.gen, dev->info().caps);
  std::printf("nxv_fuzz_diff: %s, seeds from %llu\n", dev->info().name.c_str(), (unsigned long long)a.seed);
  const auto start = std::chrono::steady_clock::now();
  Tally t;
  for (uint64_t s = a.seed; s < a.seed + a.count; ++s) {
    if (a.seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > a.seconds) break;
    one(a, dev, s, t);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("nxv_fuzz_diff: %llu graphs (seeds %llu-%llu) in %.0f s: %llu compared, %llu unsupported, "
              "%llu findings, %llu matched once subnormals between ops are flushed\n",
              (unsigned long long)t.graphs, (unsigned long long)a.seed, (unsigned long long)(a.seed + t.graphs - 1), secs,
              (unsigned long long)t.compared, (unsigned long long)t.unsupported,
              (unsigned long long)t.findings, (unsigned long long)t.flushed_between);
  return t.findings ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "nxv_fuzz_diff: error: %s\n", e.what());
  return 2;
}
