// A `while` or `cond` at a graph's top level, run from the host. Its regions are
// executables of their own; a loop runs as one serial kernel where codegen can make one,
// else speculatively behind gates where its iteration is kernels alone, else with its
// condition followed on the host where it can be, else one submit per iteration.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/batch.h"
#include "runtime/host_loop.h"

namespace nxv::runtime {

class ExecutableImpl;
struct SerialStep;

class ControlStep {
 public:
  // Node n of `graph` (lowered), its regions compiled for `dev`; their kernels are appended
  // to `kernels`. Errors name n and the region.
  ControlStep(std::shared_ptr<DeviceImpl> dev, const ir::Node& n, const ir::Graph& graph, const CompileOptions& opts,
              std::vector<codegen::KernelBinary>& kernels);
  ~ControlStep();

  // n's results from its arguments, with the kernels pending before it in `batch`, which
  // `submitter` (the graph's) submits. Kernels it leaves in `batch` (a branch taken, a
  // host-followed loop's last iterations) hold the results once the caller submits it.
  std::vector<BufferPtr> run(std::vector<BufferPtr> args, std::vector<Pending>& batch, RunStats& stats,
                             Clock::time_point deadline, BatchSubmitter& submitter);

 private:
  void compile_gate(const CompileOptions& opts, std::vector<codegen::KernelBinary>& kernels);
  std::shared_ptr<SerialStep> serial_step(const CompileOptions& opts, std::vector<codegen::KernelBinary>& kernels);

  bool run_serial(const std::vector<BufferPtr>& args, std::vector<BufferPtr>& state, std::vector<Pending>& batch,
                  RunStats& stats, Clock::time_point deadline, BatchSubmitter& submitter);
  std::vector<BufferPtr> run_while(std::vector<BufferPtr> state, std::vector<Pending>& batch, RunStats& stats,
                                   Clock::time_point deadline, BatchSubmitter& submitter);
  std::vector<BufferPtr> run_host_loop(std::vector<BufferPtr> state, std::vector<Pending>& batch, RunStats& stats,
                                       Clock::time_point deadline, BatchSubmitter& submitter);
  std::vector<BufferPtr> run_speculative(std::vector<BufferPtr> state, std::vector<Pending>& batch, RunStats& stats,
                                         Clock::time_point deadline, BatchSubmitter& submitter);
  std::vector<BufferPtr> run_cond(const std::vector<BufferPtr>& args, std::vector<Pending>& batch, RunStats& stats,
                                  Clock::time_point deadline);

  // A failure inside a region names the node and region it is in: the loop that meets the
  // deadline may be nested deep in regions, whose graphs have no names.
  template <typename F>
  auto in_region(const std::string& name, F&& f);
  std::vector<BufferPtr> run_region(const std::string& name, const std::vector<BufferPtr>& inputs, RunStats& stats,
                                    Clock::time_point deadline);
  std::vector<BufferPtr> record_region(const std::string& name, const std::vector<BufferPtr>& inputs,
                                       std::vector<Pending>& batch, RunStats& stats, Clock::time_point deadline);
  Error loop_timeout(uint64_t done) const;
  // A loop's submit that runs past the timeout is the loop still looping when the run
  // reached its limit, and says so (the submit alone cannot name the loop).
  void submit_in_loop(uint64_t done, std::vector<Pending>& batch, RunStats& stats, BatchSubmitter& submitter) const;

  std::shared_ptr<DeviceImpl> dev_;
  const ir::Node& node_;
  std::string graph_name_;
  std::map<std::string, std::shared_ptr<ExecutableImpl>> regions_;
  std::optional<HostLoop> host_loop_;  // a `while` whose condition the host follows
  std::vector<BufferPtr> gate_start_;  // a speculative `while`'s first gate's inputs: running, none passed
  std::shared_ptr<SerialStep> serial_;
};

}  // namespace nxv::runtime
