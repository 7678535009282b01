// The cold-start log: with NXV_COMPILE_LOG=FILE set, one line per kernel an executable
// compiles (its graph, its name, code generation and pipeline creation times, wall and the
// calling thread's CPU), appended to FILE, for finding the kernels that are slow to compile
// (scripts/compile_times.py). CPU times hold on a loaded machine, where wall times do not.
#pragma once

#include <chrono>
#include <string>

namespace nxv::runtime {

// One kernel's compile, timed from its construction (code generation starts) through
// codegen_done() to log() (its pipeline exists).
class CompileTimer {
 public:
  CompileTimer();
  void codegen_done();
  // No-op unless NXV_COMPILE_LOG names a file. Safe to call from several threads.
  void log(const std::string& graph, const std::string& kernel) const;

 private:
  std::chrono::steady_clock::time_point start_, codegen_end_;
  double start_cpu_ms_ = 0, codegen_end_cpu_ms_ = 0;
};

}  // namespace nxv::runtime
