// Scan kernels (codegen/emit_scan.cpp): a kernel whose one result is a cumulative_* op
// (with elementwise work on its operand fused before it, the prologue) runs the scan line
// by line, O(n) work: a line is the elements along the scan's axis at one position of the
// other axes. passes/split-scan keeps lines short enough that the lines themselves give
// the device its parallelism.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"

namespace nxv::codegen {

// A scan's lines: `lines` of `length` elements, consecutive ones `inner` apart in memory
// (1 for the innermost axis).
struct ScanLines {
  int64_t lines = 0, length = 0, inner = 1;
  bool reverse = false;
  // Throws IrError naming the scan when attrs.axis is not an axis of its result.
  static ScanLines of(const ir::Node& scan);
};

// Elements each invocation of a workgroup scanning a line takes, consecutive ones.
constexpr uint32_t kScanRun = 4;

// The body's scan when the kernel is a scan kernel: one result, computed by the scan.
const ir::Node* scan_root(const ir::Node& kernel, const ir::Graph& body);

// Cooperative (the innermost axis, where scans_in_workgroups): a workgroup per line, each
// invocation a run of kScanRun elements per tile of workgroup_size * kScanRun, the runs'
// totals scanned in subgroups (integer folds, where the device has subgroup arithmetic) or
// through shared memory; else an invocation per line walking it serially, which coalesces
// across lines when the axis is not the innermost.
LaunchConfig launch_scan(const DeviceCaps& caps, const ScanLines& l);
// The position loop's count: the lines.
inline int64_t scan_positions(const ir::Node& scan) { return ScanLines::of(scan).lines; }

// Emits main's body for launch_scan's launch. Adds the shared memory it declares to *shared_bytes.
void emit_scan_kernel(const ir::Graph& body, const ir::Node& scan, Emitter& e, const BufferRef& output,
                      const LaunchConfig& launch, uint64_t* shared_bytes);

// "scan lines of N, ..." for KernelBinary::launch.
std::string describe_scan(const ir::Node& scan, const LaunchConfig& launch);

}  // namespace nxv::codegen
