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

// A scan's lines: `lines` of `length` elements of `bytes` each, consecutive ones `inner`
// apart in memory (1 for the innermost axis). With carries (split-scan's second operand) a
// line is a segment of the axis (`axis` long in all, the last segment possibly shorter),
// numbered as its carry: line l folds from element l of the carries. With carry_totals the
// carries are the segments' totals, and line l folds from those of the segments before its own.
struct ScanLines {
  int64_t lines = 0, length = 0, inner = 1, axis = 0, segments = 1;
  int bytes = 4;
  bool reverse = false, carries = false, carry_totals = false;
  // Throws IrError naming the scan when attrs.axis is not an axis of its result.
  static ScanLines of(const ir::Node& scan);
};

// Elements each invocation of a workgroup scanning a line takes per tile, consecutive ones:
// 32 bytes of them (4 to 8 elements), which its registers hold while the workgroup scans the
// runs' totals.
uint32_t scan_run(int bytes);
// The workgroup of a cooperative scan of long lines: a power of two up to 128 invocations.
uint32_t scan_workgroup_size(const DeviceCaps& caps);
// KernelBounds::scan_block for the device (codegen/targets: kernel_bounds).
void set_scan_bounds(const DeviceCaps& caps, passes::KernelBounds& bounds);

// The body's scan when the kernel is a scan kernel: one result, computed by the scan.
const ir::Node* scan_root(const ir::Node& kernel, const ir::Graph& body);

// Cooperative (the innermost axis, where scans_in_workgroups): a workgroup per line, each
// invocation a run of scan_run elements per tile of workgroup_size * scan_run, the runs'
// totals scanned in subgroups (the device's subgroup arithmetic for integer folds, shuffles
// in our own order for floats) or through shared memory; else an invocation per line walking
// it serially, which coalesces across lines when the axis is not the innermost.
LaunchConfig launch_scan(const DeviceCaps& caps, const ScanLines& l);
// The position loop's count: the lines.
inline int64_t scan_positions(const ir::Node& scan) { return ScanLines::of(scan).lines; }

// Emits main's body for launch_scan's launch. Adds the shared memory it declares to *shared_bytes.
void emit_scan_kernel(const ir::Graph& body, const ir::Node& scan, Emitter& e, const BufferRef& output,
                      const LaunchConfig& launch, uint64_t* shared_bytes);

// "scan lines of N, ..." for KernelBinary::launch.
std::string describe_scan(const ir::Node& scan, const LaunchConfig& launch);

}  // namespace nxv::codegen
