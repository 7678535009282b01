// Command-line flags of the form --name=value, shared by nxv's tools (nxv_soak,
// nxv_pipeline_churn, nxv_fuzz_diff).
#pragma once

#include <cstring>

namespace nxv::cli {

// The value of `arg` when it is --NAME=VALUE, else nullptr.
inline const char* flag_value(const char* arg, const char* name) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, "--", 2) != 0 || std::strncmp(arg + 2, name, n) != 0 || arg[2 + n] != '=') return nullptr;
  return arg + 3 + n;
}

}  // namespace nxv::cli
