// The nx_vulkan C++ API: devices, device buffers, and executables compiled
// from IR graphs. The NIF (nif/) and the CLI (cli/) are thin layers over this.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ir/ir.h"

namespace nxv::runtime {

// Every runtime failure. `kind` lets callers react (retry after freeing memory, reopen a lost device).
class Error : public std::runtime_error {
 public:
  enum class Kind { OutOfMemory, DeviceLost, Timeout, Unsupported, InvalidArgument, NoDevice, Vulkan };
  Error(Kind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};
const char* error_kind_name(Error::Kind k);  // "out_of_memory", "device_lost", ...

struct DeviceInfo {
  int index = -1;              // position in list_devices()
  std::string name;
  std::string type;            // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver;
  codegen::DeviceCaps caps;
  // The profile `caps` are restricted to (RuntimeOptions::profile; "": none), and what it
  // asks for that the device cannot meet (runtime/profile.h: restrict_to_profile).
  std::string profile;
  std::vector<std::string> unmet;
};

// Devices in preference order: discrete GPUs, integrated, virtual, others, CPU (lavapipe) last.
std::vector<DeviceInfo> list_devices();

struct Profile;
// Restricts info.caps to the profile `p`, recording the profile and what the device cannot meet.
void restrict_device(DeviceInfo& info, const Profile& p);
// Sets caps' emulated types for RuntimeOptions::emulate's value (Error naming a bad item).
void apply_emulation(codegen::DeviceCaps& caps, const std::string& emulate);

struct RuntimeOptions {
  // "" → $NXV_DEVICE → first of list_devices(). An integer picks by index, anything
  // else is a case-insensitive substring of the device name.
  std::string device;
  // "" → $NXV_CACHE_DIR → $XDG_CACHE_HOME/nx_vulkan → ~/.cache/nx_vulkan. "none" disables the disk cache.
  std::string cache_dir;
  // Fence wait limit per submit, and limit on a run with host-driven loops, in ms:
  // 0 → $NXV_TIMEOUT_MS → 120000 (sanitizer builds, where lavapipe's LLVM compiles a kernel at
  // its first dispatch several times slower, take more).
  uint64_t timeout_ms = 0;
  // Bounds-check every kernel, on devices that cannot bounds-check just the modules built
  // elsewhere (run_spirv) — lavapipe, where an unchecked write lands in the host's memory.
  // It roughly halves lavapipe's speed, so it is opt-in, for the device run_spirv uses.
  bool robust_buffer_access = false;
  // Bind a dispatch's buffers with VK_KHR_push_descriptor where the device has it, else with
  // a descriptor set per dispatch (off: always the latter, so that tests cover both).
  bool push_descriptors = true;
  // Keep the driver's statistics of each pipeline it compiles (registers, spills, code size:
  // whatever VK_KHR_pipeline_executable_properties reports on the device), for tuning kernels
  // (`nxv_bench --pipeline-stats`). Off by default: a driver may bypass its pipeline cache
  // for pipelines that capture them.
  bool pipeline_statistics = false;
  // Time each dispatch of a submission on the GPU (RunStats::dispatch_ms), for tuning:
  // `nxv_bench --dispatch-times`. A timestamp after every dispatch, the first 4096 of a
  // submission; off by default, as each one waits for the compute work before it.
  bool dispatch_times = false;
  // "" → $NXV_PROFILE → none ("none": none, whatever $NXV_PROFILE says). A device profile (runtime/profile.h: a shipped name, FILE.json
  // or FILE.json#PROFILE): the device enables, and codegen assumes, only what both the device
  // and the profile have.
  std::string profile;
  // Which 64-bit types codegen computes in software on 32-bit words (codegen/soft64.h):
  // "" → $NXV_EMULATE → "auto". "auto": the ones the device (or profile) lacks; "f64",
  // "i64" or "f64,i64": those as well, even where the device has them (for tests and
  // benchmarks); "none": none (a graph with a missing type is then a compile error).
  std::string emulate;
  // How many compiled executables, and how many pipelines, the device keeps for reuse; the
  // least recently used go beyond that (whatever a caller still holds stays alive). 0 →
  // $NXV_EXECUTABLE_CACHE_SIZE / $NXV_PIPELINE_CACHE_SIZE → 256 / 1024 (each pipeline
  // holds the driver's compiled code, in host memory on lavapipe: with its other state
  // about 0.4 MiB of heap each, so 1024 hold about 500 MiB there).
  size_t executable_cache_size = 0;
  size_t pipeline_cache_size = 0;
};

// One statistic of a compiled pipeline, as the driver names and describes it.
struct PipelineStatistic {
  std::string name, value;
};

class Device;

// A device-local buffer holding one tensor. Its memory returns to the device's
// pool when the last reference goes.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const ir::TensorType& type() const = 0;
  virtual uint64_t bytes() const = 0;
  // The device whose memory holds it: it can be read or computed on there only, and moves
  // to another device by a download and an upload.
  virtual const Device& device() const = 0;
};
using BufferPtr = std::shared_ptr<Buffer>;

using HostTensor = ir::Literal;

// One tensor of a batched upload (Device::upload_all) or download (Device::download_all).
struct Upload {
  ir::TensorType type;
  const void* data;
  size_t bytes;
};
struct Download {
  const Buffer* buffer;
  void* dst;
  size_t bytes;
};

class Device {
 public:
  virtual ~Device() = default;
  // Opens (or returns the already open) device for these options. Thread-safe.
  static std::shared_ptr<Device> open(const RuntimeOptions& opts = {});

  virtual const DeviceInfo& info() const = 0;
  virtual const RuntimeOptions& options() const = 0;
  virtual BufferPtr upload(const ir::TensorType& type, const void* data, size_t bytes) = 0;
  virtual void download(const Buffer& buf, void* dst, size_t bytes) = 0;
  // Several transfers through one staging buffer and one submit: where the host cannot map
  // device memory each transfer is a submit and a fence wait, which dominate a small
  // graph's run (its scalar arguments and results).
  virtual std::vector<BufferPtr> upload_all(const std::vector<Upload>& uploads) = 0;
  virtual void download_all(const std::vector<Download>& downloads) = 0;
  virtual BufferPtr allocate(const ir::TensorType& type) = 0;
  // Bytes of device memory held by live buffers (pool free lists excluded).
  virtual uint64_t bytes_in_use() const = 0;
  // Returns pooled but unused memory to the driver.
  virtual void trim() = 0;
  // The driver's statistics of the pipeline compiled for `kernel` (RuntimeOptions::
  // pipeline_statistics); empty where they were not asked for, the device has none, or the
  // kernel has no pipeline on this device.
  virtual std::vector<PipelineStatistic> pipeline_statistics(const codegen::KernelBinary& kernel) const = 0;
  // Pipelines in the device's cache, and pipelines alive (cached or held by an executable).
  virtual size_t pipelines_cached() const = 0;
  virtual size_t pipelines_alive() const = 0;
  // Empties the pipeline cache (the pipelines executables hold live on), starts the
  // driver's VkPipelineCache afresh after writing it to the cache directory, and submits
  // empty batches, after which drivers that free destroyed pipelines lazily have freed them.
  virtual void drop_cached_pipelines() = 0;
};

struct CompileOptions {
  std::vector<std::string> pipeline;  // pass names; empty → passes::default_pipeline()
  // Generates code as for this PCI vendor's devices (launch shapes, tiling) on whatever
  // device runs it: tests run the NVIDIA and AMD code paths on lavapipe. 0: the device's own.
  uint32_t as_vendor = 0;
  // Like as_vendor: the compute units codegen assumes the device has (DeviceCaps::
  // compute_units), so that tests run the split-K a count selects (passes/split-dot) where
  // the device counts none; 0: the device's own.
  uint32_t as_compute_units = 0;
  // Loops whose body holds loops or conds run as one kernel (codegen/serial_loop.h) where
  // they can; false keeps them driven from the host (tests compare the two).
  bool serial_loops = true;
  // How f32 dots may compute on cooperative matrices (codegen::Precision); Highest, exact f32,
  // unless asked. Ignored on devices without bf16 cooperative matrices.
  codegen::Precision precision = codegen::Precision::Highest;
  // 64-bit types this executable's kernels compute in software besides those the device
  // emulates (RuntimeOptions::emulate): "", "f64", "i64" or "f64,i64".
  std::string emulate{};
};

// The caps an executable's kernels are generated for: the device's, with `opts`' vendor,
// precision and emulated types (an Error naming a bad `emulate`).
codegen::DeviceCaps compile_caps(const DeviceInfo& device, const CompileOptions& opts);

struct RunStats {
  double wall_ms = 0;      // the whole call
  double device_ms = 0;    // GPU time between the first and last dispatch (timestamp queries)
  int dispatches = 0;
  int submits = 0;
  int recorded = 0;        // command buffers recorded: below `submits` where a recording was submitted again
  // With RuntimeOptions::dispatch_times: each dispatch's GPU time in the order recorded,
  // from the end of the one before (Submitter::submit).
  std::vector<double> dispatch_ms;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Runs the pass pipeline, generates and validates every kernel, and creates
  // the pipelines (through the device's pipeline cache). Executables are
  // cached by a content hash of the graph and the device, the RuntimeOptions::
  // executable_cache_size most recently used per device.
  static std::shared_ptr<Executable> compile(std::shared_ptr<Device> device, const ir::Graph& graph,
                                             const CompileOptions& opts = {});
  // Executables in `device`'s cache; drop_cached empties it (those held elsewhere live on).
  static size_t cached(const Device& device);
  static void drop_cached(const Device& device);

  virtual std::shared_ptr<Device> device() const = 0;
  virtual const ir::Graph& source() const = 0;   // as given
  virtual const ir::Graph& lowered() const = 0;  // after the pipeline
  virtual const std::vector<codegen::KernelBinary>& kernels() const = 0;
  virtual const std::vector<ir::TensorType>& input_types() const = 0;
  virtual const std::vector<ir::TensorType>& output_types() const = 0;

  // Thread-safe: many threads may run the same executable at once.
  virtual std::vector<BufferPtr> run(const std::vector<BufferPtr>& inputs, RunStats* stats = nullptr) = 0;
  std::vector<HostTensor> run_host(const std::vector<HostTensor>& inputs, RunStats* stats = nullptr);
};

// A compute module built outside this compiler: eXMC synthesises its leapfrog shaders as
// GLSL and compiles them itself, and calls them through the earlier nx_vulkan's API.
// Its storage buffers are descriptor set 0, bindings 0..n-1: the inputs, then the outputs.
struct SpirvLaunch {
  std::vector<uint8_t> push_constants;  // at most kMaxPushConstantBytes
  uint32_t group_count[3] = {1, 1, 1};
};
constexpr size_t kMaxPushConstantBytes = 128;  // what every Vulkan device allows

// Validates the module, checks its entry point, bindings, push-constant block and
// capabilities against what it is given and what the device has (errors name the mismatch),
// then runs it bounds-checked in one submit. Outputs are new buffers of `outputs`' types;
// what the module does not write in them is unspecified.
std::vector<BufferPtr> run_spirv(const std::shared_ptr<Device>& device, const std::vector<uint32_t>& spirv,
                                 const std::vector<BufferPtr>& inputs, const std::vector<ir::TensorType>& outputs,
                                 const SpirvLaunch& launch, RunStats* stats = nullptr);

}  // namespace nxv::runtime
