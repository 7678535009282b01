// A `while` loop whose condition the host can follow without reading the device: the
// condition reads only state entries (a counter and its bound, typically) that the body
// updates from each other alone, with a few small integer operations. The host then evaluates
// those with the reference interpreter, and the device runs the body's iterations back
// to back, several per submit, instead of one submit and one read-back of the predicate
// per iteration.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace nxv::runtime {

class HostLoop {
 public:
  // The loop's control, if the host can follow it; nullopt when the condition depends on
  // a value the body computes from anything else, or on a large one.
  static std::optional<HostLoop> of(const ir::Graph& condition, const ir::Graph& body);

  // The entries of the loop state the host follows, in increasing order.
  const std::vector<size_t>& followed() const { return followed_; }
  // Whether another iteration runs from these values of the followed entries.
  bool continues(const std::vector<ir::Literal>& values) const;
  // The followed entries after one iteration.
  std::vector<ir::Literal> next(const std::vector<ir::Literal>& values) const;

 private:
  std::vector<size_t> followed_;
  ir::Graph condition_, step_;  // over the followed entries: the predicate, their new values
};

// How many iterations of such a loop to record per submit, given what one took (recording
// and running) and the device memory one run allocates: enough to amortise a submit's
// own cost, within a memory budget, since iterations recorded together hold their
// buffers together. At least 1, and 4 for iterations under 50 ms within the budget.
size_t iterations_per_submit(double ms_per_iteration, uint64_t bytes_per_iteration);

}  // namespace nxv::runtime
