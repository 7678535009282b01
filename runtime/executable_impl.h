// The runtime's Executable (runtime.h): a graph lowered by the pass pipeline, its kernels
// compiled and its control flow steps built, and a run recorded into as few submits as
// its control flow allows.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/batch.h"
#include "runtime/control_step.h"

namespace nxv::runtime {

class ExecutableImpl : public Executable {
 public:
  // `inputs` are the types the graph receives; parameter i reads inputs[attrs.index].
  ExecutableImpl(std::shared_ptr<DeviceImpl> dev, ir::Graph source, std::vector<ir::TensorType> inputs,
                 const CompileOptions& opts);

  std::shared_ptr<Device> device() const override { return dev_; }
  const ir::Graph& source() const override { return source_; }
  const ir::Graph& lowered() const override { return lowered_; }
  const std::vector<codegen::KernelBinary>& kernels() const override { return binaries_; }
  const std::vector<ir::TensorType>& input_types() const override { return inputs_; }
  const std::vector<ir::TensorType>& output_types() const override { return outputs_; }

  std::vector<BufferPtr> run(const std::vector<BufferPtr>& inputs, RunStats* stats) override;
  // As run, each submit and host-driven loop held to `deadline`.
  std::vector<BufferPtr> run_until(const std::vector<BufferPtr>& inputs, RunStats* stats, Clock::time_point deadline);

  // Appends the graph's kernels to `batch` with their buffers bound, and returns its
  // outputs, which hold their values once the batch is submitted. Control flow submits
  // the batch first, because the host must see the values it branches on; a speculative
  // loop, which the device decides, takes it into its first submit, and a host-followed
  // loop whose followed values no pending kernel computes records behind it.
  // `reuse` lists the buffers a kept run allocated, in order: this run takes the same ones
  // where they are idle, and the list is updated to what it got
  // (BatchSubmitter::kept_allocations).
  std::vector<BufferPtr> record(const std::vector<BufferPtr>& inputs, std::vector<Pending>& batch, RunStats& stats,
                                Clock::time_point deadline, std::vector<VkBuffer>* reuse = nullptr);

  // Device memory one run allocates (its kernels' results).
  uint64_t bytes_per_run() const;
  // Whether a run only records kernels, never submitting on its own (no control flow the
  // host drives), and the group counts of those kernels in the order they are recorded.
  bool records_only_kernels() const;
  std::vector<uint32_t> group_counts() const;

 private:
  // One top-level node that is not a parameter/literal: a kernel dispatch, an `elem` of a
  // kernel's results, or a `while`/`cond` driven from the host.
  struct Step {
    const ir::Node* node;
    std::optional<KernelStep> kernel;
    std::unique_ptr<ControlStep> control;
  };

  KernelStep compile_kernel_step(const ir::Node& n, const codegen::DeviceCaps& caps);

  std::shared_ptr<DeviceImpl> dev_;
  ir::Graph source_, lowered_;
  std::vector<ir::TensorType> inputs_, outputs_;
  std::vector<codegen::KernelBinary> binaries_;
  std::vector<Step> steps_;
  std::map<ir::NodeId, BufferPtr> constants_;
  std::vector<uint64_t> slot_bytes_;  // per plan-buffers slot, the largest value it holds
  bool only_kernels_ = false;         // records_only_kernels(), known once compiled
  BatchSubmitter submitter_;
};

}  // namespace nxv::runtime
