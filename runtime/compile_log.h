// The cold-start log: with NXV_COMPILE_LOG=FILE set, one line per kernel an executable
// compiles (its graph, its name, code generation and pipeline creation times, wall and the
// calling thread's CPU), appended to FILE, for finding the kernels that are slow to compile
// (scripts/compile_times.py). CPU times hold on a loaded machine, where wall times do not.
#pragma once

#include <string>

namespace nxv::runtime {

// The calling thread's CPU time in milliseconds.
double thread_cpu_ms();

struct CompileTimes {
  double codegen_ms = 0, pipeline_ms = 0;          // wall
  double codegen_cpu_ms = 0, pipeline_cpu_ms = 0;  // this thread's CPU
};

// No-op unless NXV_COMPILE_LOG names a file. Safe to call from several threads.
void log_kernel_compile(const std::string& graph, const std::string& kernel, const CompileTimes& t);

}  // namespace nxv::runtime
