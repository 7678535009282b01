// This process's host memory, as nxv_soak and nxv_pipeline_churn sample it: the resident set
// and malloc's heap.
#pragma once

#include <malloc.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace nxv::bench {

inline uint64_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// glibc's mallinfo2: the bytes live allocations hold (uordblks + hblkhd), and the arenas
// holding them (arena + hblkhd). RSS beyond the arenas is memory malloc never saw (the
// driver's mappings: llvmpipe's compiled code, device memory); arenas beyond the bytes in
// use are free heap, resident or not.
struct Heap {
  uint64_t in_use, arenas;
};
inline Heap heap() {
  const struct mallinfo2 m = mallinfo2();
  return {m.uordblks + m.hblkhd, m.arena + m.hblkhd};
}

inline double mib(uint64_t bytes) { return double(bytes) / (1 << 20); }

}  // namespace nxv::bench
