// Recording and submitting a run's pending commands (batch.h).
#include "runtime/batch.h"

#include <algorithm>
#include <optional>

#include "runtime/hazards.h"

namespace nxv::runtime {

namespace {

// The buffers a pending command reads and writes, for ordering it against the others
// and for knowing what a batch writes.
void accesses(const Pending& p, std::vector<const void*>& reads, std::vector<const void*>& writes) {
  reads.clear();
  writes.clear();
  if (!p.kernel) {
    writes.push_back(p.buffers.at(0).get());
    if (p.copy) reads.push_back(p.buffers.at(1).get());
    return;
  }
  const auto& bindings = p.kernel->binary.bindings;
  for (size_t k = 0; k < bindings.size(); ++k) {
    const auto kind = bindings[k].kind;
    if (kind != codegen::Binding::Kind::Output) reads.push_back(p.buffers.at(k).get());
    if (kind != codegen::Binding::Kind::Input && kind != codegen::Binding::Kind::Constant)
      writes.push_back(p.buffers.at(k).get());
  }
  if (p.indirect) reads.push_back(p.indirect.get());
}

// Records the pending kernels and writes into `cb`, with barriers only where a command
// depends on one before it (runtime/hazards.h): kernels that do not depend on each other
// (a backward pass's weight and input gradients) run side by side on the GPU.
void record_batch(DeviceImpl& dev, const std::vector<Pending>& batch, VkCommandBuffer cb, SubmitContext& ctx) {
  std::vector<Command> commands(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    accesses(batch[i], commands[i].reads, commands[i].writes);
    commands[i].kind = {batch[i].kernel != nullptr, batch[i].kernel == nullptr, batch[i].indirect != nullptr};
  }
  const std::vector<std::optional<BarrierMasks>> barriers = plan_barriers(commands);
  std::vector<const Buffer*> buffers;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Pending& p = batch[i];
    if (barriers[i]) DeviceImpl::record_barrier(cb, *barriers[i]);
    if (!p.kernel) {
      if (p.copy) dev.record_copy(cb, *p.buffers.at(1), *p.buffers.at(0), p.buffers.at(0)->bytes());
      else dev.record_update(cb, *p.buffers.at(0), p.bytes);
      continue;
    }
    buffers.clear();
    for (const auto& b : p.buffers) buffers.push_back(b.get());
    dev.record_dispatch(cb, ctx, *p.kernel->pipeline, buffers, p.kernel->binary.group_count, {}, p.indirect.get(),
                        p.indirect_offset);
  }
}

}  // namespace

bool written_by(const std::vector<Pending>& batch, const Buffer* b) {
  std::vector<const void*> reads, writes;
  for (const auto& p : batch) {
    accesses(p, reads, writes);
    if (std::find(writes.begin(), writes.end(), b) != writes.end()) return true;
  }
  return false;
}

void BatchSubmitter::submit(std::vector<Pending>& batch, RunStats& stats) {
  if (batch.empty()) return;
  const auto t0 = Clock::now();
  stats.device_ms += dev_->submit([&](VkCommandBuffer cb, SubmitContext& ctx) { record_batch(*dev_, batch, cb, ctx); },
                                  spin(), &stats.dispatch_ms);
  stats.recorded += 1;
  finish(batch, stats, t0);
}

void BatchSubmitter::submit_kept(std::vector<Pending>& batch, RunStats& stats) {
  if (batch.empty()) return;
  const auto t0 = Clock::now();
  std::vector<VkBuffer> bound;
  for (const auto& p : batch)
    for (const auto& b : p.buffers) bound.push_back(static_cast<const BufferImpl&>(*b).alloc().buffer);
  const uint64_t destroyed = dev_->buffers_destroyed();
  if (!kept_.ctx || kept_.bound != bound || kept_.buffers_destroyed != destroyed) {
    kept_.ctx.reset();
    kept_.ctx = dev_->record_kept([&](VkCommandBuffer cb, SubmitContext& ctx) { record_batch(*dev_, batch, cb, ctx); });
    kept_.bound = std::move(bound);
    kept_.buffers_destroyed = destroyed;
    stats.recorded += 1;
  }
  try {
    stats.device_ms += dev_->submit_kept(*kept_.ctx, spin(), &stats.dispatch_ms);
  } catch (...) {
    kept_.ctx.reset();
    throw;
  }
  finish(batch, stats, t0);
}

std::chrono::microseconds BatchSubmitter::spin() const {
  using std::chrono::microseconds;
  const auto expected = microseconds(int64_t(1250 * last_submit_ms_.load(std::memory_order_relaxed)) + 50);
  return std::clamp(expected, microseconds(200), microseconds(2000));
}

void BatchSubmitter::finish(std::vector<Pending>& batch, RunStats& stats, Clock::time_point t0) {
  last_submit_ms_.store(ms_between(t0, Clock::now()), std::memory_order_relaxed);
  stats.dispatches += std::count_if(batch.begin(), batch.end(), [](const Pending& p) { return p.kernel != nullptr; });
  stats.submits += 1;
  batch.clear();
}

}  // namespace nxv::runtime
