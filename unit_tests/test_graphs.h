// Graph files of the unit tests: unit_tests/graphs, or $NXV_TEST_GRAPHS where the binary
// runs away from its source tree (the GPU machine).
#pragma once

#include <cstdlib>
#include <string>

#include "ir/json.h"

inline nxv::ir::Graph test_graph(const std::string& name) {
  const char* dir = std::getenv("NXV_TEST_GRAPHS");
  return nxv::ir::read_graph_file(std::string(dir && *dir ? dir : NXV_TEST_GRAPHS) + "/" + name);
}
