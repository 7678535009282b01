// The cold-start log: with NXV_COMPILE_LOG=FILE set, one line per kernel an executable
// compiles (its graph, its name, code generation and pipeline creation times), appended to
// FILE, for finding the kernels that are slow to compile (scripts/compile_times.py).
#pragma once

#include <string>

namespace nxv::runtime {

// No-op unless NXV_COMPILE_LOG names a file. Safe to call from several threads.
void log_kernel_compile(const std::string& graph, const std::string& kernel, double codegen_ms, double pipeline_ms);

}  // namespace nxv::runtime
