// NXV_COMPILE_LOG: the per-kernel compile times of the cold-start log (compile_log.h).
#include "runtime/compile_log.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace nxv::runtime {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

void log_kernel_compile(const std::string& graph, const std::string& kernel, const CompileTimes& t) {
  static const char* path = std::getenv("NXV_COMPILE_LOG");
  if (!path || !*path) return;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  // Opened per line: the log is for rare diagnostic runs, and lines from several BEAM
  // processes' NIF calls then never interleave within a line.
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\n", graph.c_str(), kernel.c_str(), t.codegen_ms, t.pipeline_ms,
                 t.codegen_cpu_ms, t.pipeline_cpu_ms);
    std::fclose(f);
  }
}

}  // namespace nxv::runtime
