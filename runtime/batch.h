// A run's pending commands (kernels with their buffers bound, buffer writes and copies),
// recorded into one command buffer with barriers only where one depends on another, and
// their submission: afresh, or again as the last run's recording.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/device_impl.h"

namespace nxv::runtime {

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

struct KernelStep {
  const ir::Node* node;
  codegen::KernelBinary binary;
  PipelinePtr pipeline;
};

// A kernel with its buffers bound, or (kernel null) bytes to write into buffers[0] or, with
// `copy`, buffers[1]'s contents to copy there, waiting for the submit that records it. It
// holds the buffers until then: one freed earlier could go to another thread's run
// meanwhile. A kernel with `indirect` takes its group counts from that buffer at
// `indirect_offset` when it runs.
struct Pending {
  const KernelStep* kernel;
  std::vector<BufferPtr> buffers;
  std::vector<uint8_t> bytes = {};
  BufferPtr indirect = nullptr;
  uint64_t indirect_offset = 0;
  bool copy = false;
};

// Whether a kernel or update waiting in `batch` writes `b`.
bool written_by(const std::vector<Pending>& batch, const Buffer* b);

// One executable's submissions. Several threads may run the executable at once; one at a
// time holds the kept recording.
class BatchSubmitter {
 public:
  explicit BatchSubmitter(std::shared_ptr<DeviceImpl> dev) : dev_(std::move(dev)) {}

  // Submits `batch`, waits for it and clears it.
  void submit(std::vector<Pending>& batch, RunStats& stats);

  // The kept recording, locked where no other run holds it (else not locked): a run that
  // holds it allocates through kept_allocations() and submits with submit_kept.
  std::unique_lock<std::mutex> try_keep() {
    std::unique_lock<std::mutex> lock(kept_mutex_, std::try_to_lock);
    return lock;
  }
  // The buffers the last kept run allocated, in order: the next takes the same ones where
  // they are idle, and the list is updated to what it got.
  std::vector<VkBuffer>& kept_allocations() { return kept_.allocations; }
  // Submits a batch of kernels alone (a run without control flow), again submitting the
  // last run's recording where this run binds the same buffers: repeated calls on the same
  // device tensors. The caller holds try_keep()'s lock.
  void submit_kept(std::vector<Pending>& batch, RunStats& stats);

 private:
  // How long to poll for a submit's end before sleeping: about as long as the last submit
  // took, so that a run of a few hundred microseconds does not also pay the wake-up from a
  // sleeping wait, within a bound that keeps a long run from holding a CPU core for all of
  // it.
  std::chrono::microseconds spin() const;
  void finish(std::vector<Pending>& batch, RunStats& stats, Clock::time_point t0);

  std::shared_ptr<DeviceImpl> dev_;
  std::atomic<double> last_submit_ms_{0};  // a hint for spin(), not state
  struct Kept {
    std::vector<VkBuffer> allocations;  // the buffers the run allocated, in order
    std::vector<VkBuffer> bound;        // each dispatch's buffers in order
    uint64_t buffers_destroyed = 0;
    std::shared_ptr<SubmitContext> ctx;
  };
  std::mutex kept_mutex_;
  Kept kept_;
};

}  // namespace nxv::runtime
