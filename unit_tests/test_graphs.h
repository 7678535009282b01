// Data files of the unit tests (graphs/, spirv/): under unit_tests/, or under $NXV_TEST_DATA
// where the binary runs away from its source tree (the GPU machine).
#pragma once

#include <cstdlib>
#include <string>

#include "ir/json.h"

inline std::string test_data_path(const std::string& relative) {
  const char* dir = std::getenv("NXV_TEST_DATA");
  return std::string(dir && *dir ? dir : NXV_TEST_DATA) + "/" + relative;
}

inline nxv::ir::Graph test_graph(const std::string& name) { return nxv::ir::read_graph_file(test_data_path("graphs/" + name)); }
