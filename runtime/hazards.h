// Where a submission needs barriers: commands recorded without one between them may run at
// the same time on the GPU, so only a command that depends on one of those gets a barrier.
#pragma once

#include <set>
#include <vector>

namespace nxv::runtime {

class Hazards {
 public:
  // Whether a command that reads `reads` and writes `writes` must wait for the commands
  // recorded since the last barrier: it reads or writes what they write (read after write,
  // write after write), or writes what they read (write after read). Records its accesses
  // either way; on true the caller records a barrier before the command.
  bool barrier_before(const std::vector<const void*>& reads, const std::vector<const void*>& writes);

 private:
  std::set<const void*> read_, written_;
};

}  // namespace nxv::runtime
