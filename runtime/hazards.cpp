#include "runtime/hazards.h"

#include <algorithm>

namespace nxv::runtime {

bool Hazards::barrier_before(const std::vector<const void*>& reads, const std::vector<const void*>& writes) {
  const bool hazard =
      std::any_of(reads.begin(), reads.end(), [&](const void* b) { return written_.count(b) > 0; }) ||
      std::any_of(writes.begin(), writes.end(), [&](const void* b) { return written_.count(b) > 0 || read_.count(b) > 0; });
  if (hazard) {
    read_.clear();
    written_.clear();
  }
  read_.insert(reads.begin(), reads.end());
  written_.insert(writes.begin(), writes.end());
  return hazard;
}

}  // namespace nxv::runtime
