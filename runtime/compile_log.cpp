// NXV_COMPILE_LOG: the per-kernel compile times of the cold-start log (compile_log.h).
#include "runtime/compile_log.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace nxv::runtime {

namespace {

// The calling thread's CPU time in milliseconds.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

}  // namespace

CompileTimer::CompileTimer() : start_(std::chrono::steady_clock::now()), start_cpu_ms_(thread_cpu_ms()) {}

void CompileTimer::codegen_done() {
  codegen_end_ = std::chrono::steady_clock::now();
  codegen_end_cpu_ms_ = thread_cpu_ms();
}

void CompileTimer::log(const std::string& graph, const std::string& kernel) const {
  static const char* path = std::getenv("NXV_COMPILE_LOG");
  if (!path || !*path) return;
  using ms = std::chrono::duration<double, std::milli>;
  const double pipeline_ms = ms(std::chrono::steady_clock::now() - codegen_end_).count();
  const double pipeline_cpu_ms = thread_cpu_ms() - codegen_end_cpu_ms_;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  // Opened per line: the log is for rare diagnostic runs, and lines from several BEAM
  // processes' NIF calls then never interleave within a line.
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\n", graph.c_str(), kernel.c_str(), ms(codegen_end_ - start_).count(),
                 pipeline_ms, codegen_end_cpu_ms_ - start_cpu_ms_, pipeline_cpu_ms);
    std::fclose(f);
  }
}

}  // namespace nxv::runtime
