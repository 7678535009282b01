// compile_kernel: bindings, capabilities, and the grid-stride loop that
// evaluates every result of the kernel's body at each output position.
#include "codegen/kernel.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codegen/attention.h"
#include "codegen/emitter.h"
#include "codegen/matmul.h"
#include "codegen/scan.h"
#include "codegen/sort.h"
#include "codegen/targets/launch.h"
#include "ir/dot_epilogue.h"
#include "ir/ops.h"

namespace nxv::codegen {

using ir::DType;

namespace {
constexpr int64_t kMaxElements = int64_t(1) << 31;  // indices are 32-bit

void check_types(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps, Emitter& e,
                 const std::vector<Binding>& bindings) {
  for (const auto& n : body.nodes)
    for (const auto& r : n.results) {
      e.require_type(n, r.dtype);
      if (r.num_elements() >= kMaxElements)
        throw ir::IrError(n, ir::to_string(r) + " has too many elements for 32-bit indexing");
    }
  for (const auto& bnd : bindings) e.require_type(kernel, bnd.dtype);
}

// The longest reduced (or contracted) extent of any node in the body; for indexed_add/put,
// the number of updates (1 in their sorted form).
int64_t longest_reduction(const ir::Graph& body) {
  int64_t longest = 0;
  for (const auto& n : body.nodes) {
    if (n.args.empty() || n.is_tuple()) continue;
    const auto f = ir::op_family(n.op);
    const bool reduces = f == ir::OpFamily::Reduction || f == ir::OpFamily::ArgReduction || f == ir::OpFamily::Dot;
    if (!reduces && f != ir::OpFamily::Scatter) continue;
    const ir::Shape& in = body.node(n.args[0]).type().shape;
    int64_t extent = 1;
    if (f == ir::OpFamily::Scatter) {
      // Every element folds over the updates; in the sorted form each searches and walks its
      // own run, no fold that a workgroup could share.
      extent = ir::is_sorted_indexed(n) ? 1 : body.node(n.args.at(1)).type().shape.at(0);
    } else if (n.op == "dot") {
      for (int64_t a : n.attrs.value("contract_axes1", std::vector<int64_t>{})) extent *= in.at(a);
    } else {
      extent = ir::num_elements(in) / std::max<int64_t>(n.type().num_elements(), 1);
    }
    longest = std::max(longest, extent);
  }
  return longest;
}

// KernelShape::strided_reduction_bytes: 0 where a reduction or contraction runs along its
// operand's innermost axis (its elements lie next to each other) or the body reduces nothing.
int64_t strided_reduction_bytes(const ir::Graph& body) {
  int64_t bytes = 0;
  for (const auto& n : body.nodes) {
    if (n.args.empty() || n.is_tuple()) continue;
    const auto f = ir::op_family(n.op);
    if (f == ir::OpFamily::Scatter) return 0;
    if (f != ir::OpFamily::Reduction && f != ir::OpFamily::ArgReduction && f != ir::OpFamily::Dot) continue;
    auto along_innermost = [&](size_t arg, const char* key) {
      const ir::TensorType& x = body.node(n.args.at(arg)).type();
      if (x.shape.empty()) return true;
      const std::vector<int64_t> axes = ir::reduced_axes(n, key, x);
      return !axes.empty() && axes.back() == int64_t(x.shape.size()) - 1;
    };
    const bool contiguous = f == ir::OpFamily::Dot ? along_innermost(0, "contract_axes1") || along_innermost(1, "contract_axes2")
                            : f == ir::OpFamily::ArgReduction ? along_innermost(0, "axis")
                                                              : along_innermost(0, "axes");
    if (contiguous) return 0;
    for (ir::NodeId a : n.args) bytes = std::max<int64_t>(bytes, ir::dtype_bytes(body.node(a).type().dtype));
  }
  return bytes;
}

// KernelShape::weight_row_run: where the body's only folds are products that keep their
// second operand's innermost axis (x . w, w [K, N]), the most consecutive outputs a run can
// hold and stay within one of w's rows: the largest power of two dividing N whose elements
// (of the products' widest operand) fill no more than 32 bytes; else 0.
int64_t weight_row_run(const ir::Graph& body) {
  int64_t run = 0;
  for (const auto& n : body.nodes) {
    if (n.args.empty() || n.is_tuple()) continue;
    const auto f = ir::op_family(n.op);
    if (f == ir::OpFamily::Scatter || f == ir::OpFamily::Reduction || f == ir::OpFamily::ArgReduction) return 0;
    if (f != ir::OpFamily::Dot) continue;
    const auto& w = body.node(n.args.at(1)).type();
    const DotAxes axes = DotAxes::of(n, body.node(n.args.at(0)).type().shape, w.shape);
    if (axes.free2.empty() || axes.free2.back() != int64_t(w.shape.size()) - 1) return 0;
    const int64_t bytes = std::max(ir::dtype_bytes(body.node(n.args[0]).type().dtype), ir::dtype_bytes(w.dtype));
    int64_t r = 1;
    while (w.shape.back() % (r * 2) == 0 && r * 2 * bytes <= 32) r *= 2;
    run = run ? std::min(run, r) : r;
  }
  return run > 1 ? run : 0;
}

std::string kernel_name(const ir::Node& kernel, const ir::Graph& body) {
  std::string op = kernel.attrs.value("kind", std::string("kernel"));
  if (!body.outputs.empty() && body.has_node(body.outputs[0])) op = body.node(body.outputs[0]).op;
  return "k" + std::to_string(kernel.id) + "_" + op;
}

std::vector<ir::NodeId> fused_nodes(const ir::Node& kernel, const ir::Graph& body) {
  if (kernel.attrs.contains("fused_nodes")) return kernel.attrs["fused_nodes"].get<std::vector<ir::NodeId>>();
  std::vector<ir::NodeId> ids;
  for (const auto& n : body.nodes)
    if (n.op != "parameter" && n.op != "constant") ids.push_back(n.id);
  return ids;
}

// Row kernels (attrs.row_split = p): the results' first p axes index rows, the rest a row's
// elements. Values that depend only on the row — reductions over the row broadcast back,
// as in softmax or layer norm — are then computed once per row, before the loop over its
// elements (the builder hoists them to the row's level); cooperatively when the launch
// gives each row a workgroup.
struct RowSplit {
  ir::Shape outer, inner;
  int64_t rows() const { return ir::num_elements(outer); }
  int64_t cols() const { return ir::num_elements(inner); }
};

std::optional<RowSplit> row_split(const ir::Node& kernel) {
  if (!kernel.attrs.contains("row_split")) return std::nullopt;
  const ir::Shape& s = kernel.results.at(0).shape;
  const int64_t p = kernel.attrs["row_split"].get<int64_t>();
  if (p < 0 || p > int64_t(s.size())) throw ir::IrError(kernel, "row_split " + std::to_string(p) + " out of range");
  for (const auto& r : kernel.results)
    if (r.shape != s) throw ir::IrError(kernel, "a row kernel needs results of one shape");
  return RowSplit{ir::Shape(s.begin(), s.begin() + p), ir::Shape(s.begin() + p, s.end())};
}

// The loop over positions each invocation runs: elements (or vectors of them), rows of a
// row kernel, or tiles; `count` of them, one invocation's `stride` apart.
struct PositionLoop {
  int64_t count;
  uint64_t stride;
  uint64_t trips() const { return (uint64_t(std::max<int64_t>(count, 0)) + stride - 1) / stride; }
};

// Invocations that take positions of their own (a cooperative workgroup takes them together).
uint64_t position_takers(const LaunchConfig& launch) {
  return launch.cooperative ? uint64_t(launch.group_count) * launch.outputs_per_group
                            : uint64_t(launch.workgroup_size) * launch.group_count;
}

uint32_t unroll_of(const LaunchConfig& launch) { return launch.cooperative ? 1 : std::max<uint32_t>(1, launch.unroll); }

// The kernel's scan when it is a scan kernel (codegen/scan.h).
const ir::Node* scan_of(const ir::Node& kernel) { return scan_root(kernel, *kernel.regions.at("body")); }
// The kernel's sort when it is a sort kernel (codegen/sort.h).
const ir::Node* sort_of(const ir::Node& kernel) { return sort_root(kernel, *kernel.regions.at("body")); }

PositionLoop position_loop(const ir::Node& kernel, const LaunchConfig& launch, int64_t items, const DeviceCaps& caps) {
  if (launch.matmul.m) return {launch.matmul.tiles, launch.group_count};
  if (const ir::Node* sort = sort_of(kernel))
    return {sort_positions(SortStage::of(*kernel.regions.at("body"), *sort, caps)), position_takers(launch)};
  if (const ir::Node* scan = scan_of(kernel)) return {scan_positions(*scan), position_takers(launch)};
  if (auto rs = row_split(kernel); rs && items > 0) return {rs->rows(), position_takers(launch)};
  if (launch.tiles) return {items / (kTransposeTile * kTransposeTile), launch.group_count};
  return {items / launch.vector_width, position_takers(launch) * unroll_of(launch)};
}

// Transposes read the input across rows: in plain order the 32 lanes of a warp each
// touch a different cache line. Visiting the output in 32x32 tiles (lanes along a tile
// row, successive warps down the tile) makes the lines one warp misses the ones the
// next warps hit, so the reads coalesce through the cache without shared memory.
// Where the transposed value is a kernel argument, the tile is staged through shared
// memory instead (staged_transposes): reads and writes then both coalesce.
constexpr int64_t kTile = kTransposeTile;

bool wants_tiles(const ir::Graph& body, const ir::Shape& out) {
  if (out.size() < 2 || out[out.size() - 1] % kTile || out[out.size() - 2] % kTile) return false;
  for (const auto& n : body.nodes) {
    if (n.op != "transpose") continue;
    auto axes = n.attrs.value("axes", std::vector<int64_t>{});
    if (!axes.empty() && axes.back() != int64_t(axes.size()) - 1) return true;
  }
  return false;
}

// Whether `user` reads `operand` at its own linear position, under the same memo key:
// elementwise ops of one shape pass their index on (operand_at), reshapes its linear form.
bool reads_at_own_position(const ir::Node& user, const ir::Node& operand) {
  if (user.op == "reshape" || user.op == "squeeze" || user.op == "metadata") return true;
  return ir::is_elementwise(ir::op_family(user.op)) && user.type().shape == operand.type().shape;
}

// Nodes evaluated only at the output position: the output, and nodes all of whose users
// are such nodes and read them there.
std::set<ir::NodeId> at_output_position(const ir::Graph& body) {
  std::map<ir::NodeId, std::vector<const ir::Node*>> users;
  for (const auto& n : body.nodes)
    for (ir::NodeId a : n.args) users[a].push_back(&n);
  std::set<ir::NodeId> aligned{body.outputs.at(0)};
  for (auto it = body.nodes.rbegin(); it != body.nodes.rend(); ++it) {
    if (aligned.count(it->id) || it->is_tuple() || users[it->id].empty()) continue;
    bool all = true;
    for (const ir::Node* u : users[it->id]) all = all && aligned.count(u->id) && reads_at_own_position(*u, *it);
    if (all) aligned.insert(it->id);
  }
  return aligned;
}

// The body's dot when the kernel is a matrix multiplication for codegen/matmul.h: one
// result, each element of it computed from one of the dot's through its epilogue
// (ir/dot_epilogue.h), no other loop.
const ir::Node* matmul_dot(const ir::Node& kernel, const ir::Graph& body) {
  if (kernel.results.size() != 1) return nullptr;
  const ir::Node* dot = nullptr;
  for (const auto& n : body.nodes) {
    const auto f = ir::op_family(n.op);
    if (n.op == "dot") {
      if (dot) return nullptr;
      dot = &n;
    } else if (f == ir::OpFamily::Reduction || f == ir::OpFamily::ArgReduction || f == ir::OpFamily::Scatter ||
               n.op == "elem" || n.is_tuple()) {
      return nullptr;
    }
  }
  if (!dot || !ir::dot_epilogue(body, dot->id, body.outputs.at(0), [](ir::NodeId) { return true; })) return nullptr;
  return dot;
}

// Parameters read at the output position of some result (maybe elsewhere too).
std::vector<const ir::Node*> params_read_at_output_position(const ir::Graph& body) {
  std::set<ir::NodeId> reached(body.outputs.begin(), body.outputs.end());
  for (auto it = body.nodes.rbegin(); it != body.nodes.rend(); ++it) {
    if (!reached.count(it->id)) continue;
    for (ir::NodeId a : it->args)
      if (reads_at_own_position(*it, body.node(a))) reached.insert(a);
  }
  std::vector<const ir::Node*> params;
  for (const auto& n : body.nodes)
    if (n.op == "parameter" && reached.count(n.id)) params.push_back(&n);
  return params;
}

// Whether every element of the body is computed from single elements of its operands: no
// loop over a reduced extent or a repeat's steps, which a vectorised kernel would repeat
// per lane.
bool computes_per_element(const ir::Graph& body) {
  for (const auto& n : body.nodes) {
    const auto f = ir::op_family(n.op);
    if (!ir::is_elementwise(f) && f != ir::OpFamily::Source && f != ir::OpFamily::IndexMap &&
        f != ir::OpFamily::PutSlice && f != ir::OpFamily::Gather && f != ir::OpFamily::Metadata)
      return false;
  }
  return true;
}

// Whether the plain loop visits the output in tile order (see wants_tiles).
bool in_tile_order(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps) {
  return kernel.results.size() == 1 && tile_transposes(caps) && wants_tiles(body, kernel.results[0].shape);
}

// The widest element of the buffers the plain loop would access as vectors (the results and
// the parameters read at the output position), or 0 where it cannot compute consecutive
// elements together: in tile order, for results of different sizes, and with buffers of
// 8- or 16-bit elements (whose vectors would need repacking).
int64_t vector_element_bytes(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps) {
  if (kernel.results.empty() || in_tile_order(kernel, body, caps) || !computes_per_element(body)) return 0;
  std::vector<ir::TensorType> vectors(kernel.results.begin(), kernel.results.end());
  for (const ir::Node* p : params_read_at_output_position(body)) vectors.push_back(p->type());
  int64_t widest = 0;
  for (const auto& t : vectors) {
    // Emulated 64-bit values are uvec2s, which do not form vectors.
    if (t.num_elements() != kernel.results[0].num_elements() || ir::dtype_bits(t.dtype) < 32 || caps.emulated(t.dtype))
      return 0;
    widest = std::max<int64_t>(widest, ir::dtype_bytes(t.dtype));
  }
  return widest;
}

// Whether any op of the body computes (rather than reads, moves or makes) 64-bit integers.
bool computes_int64(const ir::Graph& body) {
  for (const auto& n : body.nodes) {
    const auto f = ir::op_family(n.op);
    if (f == ir::OpFamily::Source || f == ir::OpFamily::IndexMap || f == ir::OpFamily::Metadata) continue;
    for (const auto& t : n.results)
      if (ir::is_integer(t.dtype) && ir::dtype_bits(t.dtype) == 64) return true;
  }
  return false;
}

// Whether any value of the body is an f64 the device emulates (on 32-bit words:
// codegen/soft64.h).
bool computes_emulated_f64(const ir::Graph& body, const DeviceCaps& caps) {
  if (!caps.emulate_f64) return false;
  for (const auto& n : body.nodes)
    for (const auto& t : n.results)
      if (t.dtype == ir::DType::F64) return true;
  return false;
}

// Transposes of a kernel argument that swap its two innermost axes, in a kernel whose one
// result is tiled and which evaluates them only at the output position: each tile of them
// can be loaded into shared memory along the argument's rows, then read across.
std::vector<const ir::Node*> staged_transposes(const ir::Graph& body, const ir::Node& kernel) {
  std::vector<const ir::Node*> staged;
  if (kernel.results.size() != 1) return staged;
  const ir::Shape& out = kernel.results[0].shape;
  const size_t r = out.size();
  if (r < 2 || out[r - 1] % kTile || out[r - 2] % kTile) return staged;
  const auto aligned = at_output_position(body);
  for (const auto& n : body.nodes) {
    if (n.op != "transpose" || n.args.size() != 1 || !aligned.count(n.id) || n.type().shape != out) continue;
    if (body.node(n.args[0]).op != "parameter") continue;
    std::vector<int64_t> swap(r);
    for (size_t k = 0; k < r; ++k) swap[k] = int64_t(k);
    std::swap(swap[r - 1], swap[r - 2]);
    if (n.attrs.value("axes", std::vector<int64_t>{}) == swap) staged.push_back(&n);
  }
  return staged;
}

// Workgroup g takes tiles g, g + groups, ...: the staged arguments' tiles go to shared
// memory along their rows (coalesced), then each output element of the tile is computed
// with the staged transposes read from there, and stored along the output's rows.
void emit_staged_tiles(const ir::Graph& body, Emitter& e, const std::vector<BufferRef>& inputs, const BufferRef& output,
                       const LaunchConfig& launch, const PositionLoop& tiles, const ir::Shape& out,
                       const std::vector<const ir::Node*>& staged, uint64_t* shared_bytes) {
  spirv::Builder& b = e.b;
  const int64_t rows = out[out.size() - 2], cols = out.back();
  const int64_t tiles_per_row = cols / kTile;
  const uint32_t wg = launch.workgroup_size, per = uint32_t(kTile * kTile / wg), pitch = uint32_t(kTile + 1);  // +1: no bank conflicts
  auto u = [&](spv::Op op, Id a, Id c) { return b.op(op, e.u32(), {a, c}); };
  std::vector<std::pair<Id, Id>> arrays;  // (array, element type) per staged transpose
  for (const ir::Node* t : staged) {
    Id elem = e.reg_type(t->type().dtype);
    arrays.push_back({b.workgroup_array(elem, uint32_t(kTile) * pitch), elem});
    *shared_bytes += uint64_t(b.type_bytes(elem)) * uint64_t(kTile) * pitch;
  }
  auto slot = [&](size_t k, Id at) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, arrays[k].second), {arrays[k].first, at});
  };
  Id local = b.builtin_x(spv::BuiltInLocalInvocationId);
  b.position_loop(
      {e.u32()}, {b.builtin_x(spv::BuiltInWorkgroupId)},
      [&](const spirv::Builder::Values& t) { return b.op(spv::OpULessThan, e.boolean(), {t[0], e.u32c(tiles.count)}); },
      [&](const spirv::Builder::Values& t) {
        // Rows of all batches are counted together: a tile never spans two (rows % kTile == 0).
        Id row0 = u(spv::OpIMul, u(spv::OpUDiv, t[0], e.u32c(tiles_per_row)), e.u32c(kTile));
        Id col0 = u(spv::OpIMul, u(spv::OpUMod, t[0], e.u32c(tiles_per_row)), e.u32c(kTile));
        // The argument is [.., cols, rows]: its tile starts at batch (row0 / rows), row col0, column row0 % rows.
        Id arg0 = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpUDiv, row0, e.u32c(rows)), e.u32c(rows * cols)),
                    u(spv::OpIAdd, u(spv::OpIMul, col0, e.u32c(rows)), u(spv::OpUMod, row0, e.u32c(rows))));
        for (uint32_t k = 0; k < per; ++k) {
          Id l = u(spv::OpIAdd, local, e.u32c(uint64_t(k) * wg));
          Id a = u(spv::OpUDiv, l, e.u32c(kTile)), c = u(spv::OpUMod, l, e.u32c(kTile));
          Id from = u(spv::OpIAdd, arg0, u(spv::OpIAdd, u(spv::OpIMul, a, e.u32c(rows)), c));
          Id to = u(spv::OpIAdd, u(spv::OpIMul, a, e.u32c(pitch)), c);
          for (size_t s = 0; s < staged.size(); ++s) {
            const int64_t param = body.node(staged[s]->args[0]).attrs.value("index", int64_t(-1));
            b.op_void(spv::OpStore, {slot(s, to), e.load(inputs.at(size_t(param)), from)});
          }
        }
        b.workgroup_barrier();
        for (uint32_t k = 0; k < per; ++k) {
          Id l = u(spv::OpIAdd, local, e.u32c(uint64_t(k) * wg));
          Id i = u(spv::OpUDiv, l, e.u32c(kTile)), j = u(spv::OpUMod, l, e.u32c(kTile));
          Index idx;
          idx.shape = out;
          idx.linear = u(spv::OpIAdd, u(spv::OpIMul, u(spv::OpIAdd, row0, i), e.u32c(cols)), u(spv::OpIAdd, col0, j));
          Id from = u(spv::OpIAdd, u(spv::OpIMul, j, e.u32c(pitch)), i);
          for (size_t s = 0; s < staged.size(); ++s)
            e.provide(*staged[s], idx, b.op_in_place(spv::OpLoad, arrays[s].second, {slot(s, from)}));
          e.store(output, idx.linear, e.value(body.node(body.outputs[0]), idx));
        }
        b.workgroup_barrier();  // the arrays are refilled for the next tile
        return spirv::Builder::Values{u(spv::OpIAdd, t[0], e.u32c(tiles.stride))};
      });
}

// The output position of tile-order counter s (a bijection when both trailing dims are
// multiples of the tile).
Id tiled_linear(Emitter& e, Id s, const ir::Shape& out) {
  spirv::Builder& b = e.b;
  const int64_t cols = out.back(), tiles_per_row = cols / kTile;
  auto div = [&](Id a, int64_t d) { return b.op(spv::OpUDiv, e.u32(), {a, e.u32c(d)}); };
  auto mod = [&](Id a, int64_t d) { return b.op(spv::OpUMod, e.u32(), {a, e.u32c(d)}); };
  auto mul = [&](Id a, int64_t d) { return b.op(spv::OpIMul, e.u32(), {a, e.u32c(d)}); };
  auto add = [&](Id a, Id c) { return b.op(spv::OpIAdd, e.u32(), {a, c}); };
  Id tile = div(s, kTile * kTile), within = mod(s, kTile * kTile);
  Id row = add(mul(div(tile, tiles_per_row), kTile), div(within, kTile));  // batch folded into rows
  Id col = add(mul(mod(tile, tiles_per_row), kTile), mod(within, kTile));
  return add(mul(row, cols), col);
}

// A cooperative launch's Cooperation for per-position code at the builder's current level.
// Segments are numbered subgroup by subgroup where subgroups are full and each holds whole
// segments (checked at run time, uniformly: a driver may run smaller subgroups than it
// reports); elsewhere LocalInvocationId's order, and the segments combine through shared memory.
Cooperation cooperation(Emitter& e, const LaunchConfig& launch) {
  spirv::Builder& b = e.b;
  Cooperation c{b.builtin_x(spv::BuiltInLocalInvocationId), launch.workgroup_size, b.level(), launch.outputs_per_group,
                launch.segments};
  if (!launch.segments || !e.caps.subgroup_shuffle) return c;
  b.capability(spv::CapabilityGroupNonUniformShuffle);
  c.full = b.op(spv::OpLogicalAnd, e.boolean(),
                {b.full_subgroups(launch.workgroup_size),
                 b.op(spv::OpUGreaterThanEqual, e.boolean(), {b.builtin_u32(spv::BuiltInSubgroupSize), e.u32c(c.reducers())})});
  c.local_id = e.b_select(e.u32(), c.full, b.subgroup_numbering(), c.local_id);
  return c;
}

// Plain: invocation i takes rows i, i + stride, ... alone. Cooperative: workgroup g takes
// rows g, g + groups, ... each with all its invocations; in segments, rows g * outputs + o,
// o the invocation's segment (the loop runs over the groups' first rows, uniform across the
// workgroup as its barriers require; a segment past the last row computes the last and
// stores nothing).
void emit_rows(const ir::Node& kernel, const ir::Graph& body, Emitter& e, const std::vector<BufferRef>& outputs,
               const LaunchConfig& launch, const PositionLoop& rows, const RowSplit& rs) {
  spirv::Builder& b = e.b;
  const uint32_t outputs_per_group = launch.cooperative ? launch.outputs_per_group : 1;
  Id start = b.builtin_x(launch.cooperative ? spv::BuiltInWorkgroupId : spv::BuiltInGlobalInvocationId);
  if (outputs_per_group > 1) start = b.op(spv::OpIMul, e.u32(), {start, e.u32c(outputs_per_group)});
  b.position_loop(
      {e.u32()}, {start}, [&](const spirv::Builder::Values& r) { return b.op(spv::OpULessThan, e.boolean(), {r[0], e.u32c(rows.count)}); },
      [&](const spirv::Builder::Values& r) {
        std::optional<Cooperation> coop;
        if (launch.cooperative) e.set_cooperation(*(coop = cooperation(e, launch)));
        Id row_id = r[0], in_rows = 0;
        if (outputs_per_group > 1) {
          Id mine = b.op(spv::OpIAdd, e.u32(), {r[0], e.output_lane()});
          if (rows.count % outputs_per_group) in_rows = b.op(spv::OpULessThan, e.boolean(), {mine, e.u32c(rows.count)});
          row_id = in_rows ? b.ext(GLSLstd450UMin, e.u32(), {mine, e.u32c(rows.count - 1)}) : mine;
        }
        Index row{rs.outer, {}, row_id};
        std::vector<Id> row_dims = e.dims(row);
        Id base = b.op(spv::OpIMul, e.u32(), {row_id, e.u32c(rs.cols())});
        const uint32_t share = coop ? coop->reducers() : 1;
        auto store_at = [&](Id c) {
          Index col{rs.inner, {}, c};
          Index idx;
          idx.shape = kernel.results[0].shape;
          idx.dims = row_dims;
          for (Id d : e.dims(col)) idx.dims.push_back(d);
          idx.linear = b.op(spv::OpIAdd, e.u32(), {base, c});
          for (size_t k = 0; k < kernel.results.size(); ++k) e.store(outputs[k], idx.linear, e.value(body.node(body.outputs[k]), idx));
        };
        auto guarded = [&](Id cond, const std::function<void()>& store) {
          if (in_rows) cond = cond ? b.op(spv::OpLogicalAnd, e.boolean(), {cond, in_rows}) : in_rows;
          if (cond) b.if_then(cond, store);
          else store();
        };
        if (coop && rs.cols() <= int64_t(share) * Emitter::kMaxUnrolledPositions) {
          // Straight-line, at the positions the row's folds used: values are keyed by their
          // dims there, so the row's elements (and what was computed from them) are reused.
          for (int64_t first = 0; first < rs.cols(); first += share) {
            Id c = e.lane(uint64_t(first));
            guarded(first + share <= rs.cols() ? 0 : b.op(spv::OpULessThan, e.boolean(), {c, e.u32c(rs.cols())}), [&] { store_at(c); });
          }
          return spirv::Builder::Values{b.op(spv::OpIAdd, e.u32(), {r[0], e.u32c(rows.stride)})};
        }
        guarded(0, [&] {
          b.loop(
              {e.u32()}, {coop ? e.lane(0) : e.u32c(0)},
              [&](const spirv::Builder::Values& c) { return b.op(spv::OpULessThan, e.boolean(), {c[0], e.u32c(rs.cols())}); },
              [&](const spirv::Builder::Values& c) {
                store_at(c[0]);
                return spirv::Builder::Values{b.op(spv::OpIAdd, e.u32(), {c[0], e.u32c(share)})};
              },
              (uint64_t(rs.cols()) + share - 1) / share);
        });
        return spirv::Builder::Values{b.op(spv::OpIAdd, e.u32(), {r[0], e.u32c(rows.stride)})};
      });
}

// One storage buffer per binding. With lanes > 1 the arguments of `vector_params` are arrays
// of vectors, and so are the results with output_lanes > 1; any other reads of those
// arguments take a component.
void declare_bindings(Emitter& e, const std::vector<Binding>& bindings, uint32_t lanes, uint32_t output_lanes,
                      const std::vector<const ir::Node*>& vector_params, std::vector<BufferRef>* inputs,
                      std::vector<BufferRef>* outputs, std::map<int64_t, BufferRef>* texel_inputs) {
  auto read_as_vectors = [&](int arg) {
    return std::any_of(vector_params.begin(), vector_params.end(),
                       [&](const ir::Node* p) { return p->attrs.value("index", int64_t(-1)) == arg; });
  };
  for (size_t i = 0; i < bindings.size(); ++i) {
    const auto& bnd = bindings[i];
    if (bnd.texels) {
      BufferRef view{e.b.uniform_texel_buffer(uint32_t(i)), DType::U32, 4};
      view.texels = true;
      e.b.name(view.variable, "arg" + std::to_string(bnd.index) + "_texels");
      texel_inputs->emplace(bnd.index, view);
      continue;
    }
    bool in = bnd.kind == Binding::Kind::Input;
    BufferRef buf{0, bnd.dtype, !in ? output_lanes : read_as_vectors(bnd.index) ? lanes : 1};
    buf.variable = e.b.storage_buffer(e.buffer_entry_type(buf), e.storage_stride(bnd.dtype) * buf.lanes, uint32_t(i), in);
    e.b.name(buf.variable, (in ? "arg" : "result") + std::to_string(bnd.index));
    (in ? inputs : outputs)->push_back(buf);
  }
}

// A parameter read a vector at a time in a vectorised loop.
struct VectorRead {
  const ir::Node* param;
  BufferRef buf;
};

// The linear index of lane l of vector `at`.
Index lane_index(Emitter& e, const ir::Shape& shape, Id at, uint32_t lanes, uint32_t l) {
  Index idx;
  idx.shape = shape;
  idx.linear = e.b.op(spv::OpIMul, e.u32(), {at, e.u32c(lanes)});
  if (l > 0) idx.linear = e.b.op(spv::OpIAdd, e.u32(), {idx.linear, e.u32c(l)});
  return idx;
}

// Elements at * lanes, ... of `node` as one vector. The body's scalar code runs once per
// lane; the parameters read there come from one vector load each, handed to it lane by lane.
Id vector_at(Emitter& e, const ir::Node& node, Id at, uint32_t lanes, const std::vector<VectorRead>& reads) {
  spirv::Builder& b = e.b;
  for (const auto& r : reads) {
    Id v = e.load_vector(r.buf, at);
    for (uint32_t l = 0; l < lanes; ++l)
      e.provide(*r.param, lane_index(e, r.param->type().shape, at, lanes, l),
                b.op(spv::OpCompositeExtract, e.reg_type(r.buf.dtype), {v}, {l}));
  }
  std::vector<Id> elems;
  for (uint32_t l = 0; l < lanes; ++l) elems.push_back(e.value(node, lane_index(e, node.type().shape, at, lanes, l)));
  return b.op(spv::OpCompositeConstruct, b.type_vector(e.reg_type(node.type().dtype), lanes), elems);
}

// Plain: invocation i computes positions i, i + stride, ...  Cooperative: workgroup g
// computes positions g, g + groups, ... together and invocation 0 stores them; with
// several outputs per group, positions g * outputs + o, o = i % outputs (the loop runs over
// the groups' first positions, uniform across the workgroup as its barriers require), and
// invocation o stores position o; in segments, o is the invocation's segment, whose first
// invocation stores it. A position is an element, or in a vectorised loop `lanes`
// consecutive ones.
void emit_elements(const ir::Node& kernel, const ir::Graph& body, Emitter& e, const std::vector<BufferRef>& outputs,
                   const LaunchConfig& launch, const PositionLoop& positions, const std::vector<VectorRead>& vector_reads,
                   bool tiles) {
  spirv::Builder& b = e.b;
  const uint32_t lanes = launch.vector_width, group_outputs = launch.cooperative ? launch.outputs_per_group : 1;
  Id start = b.builtin_x(launch.cooperative ? spv::BuiltInWorkgroupId : spv::BuiltInGlobalInvocationId);
  if (group_outputs > 1) start = b.op(spv::OpIMul, e.u32(), {start, e.u32c(group_outputs)});
  const uint64_t stride = position_takers(launch);
  b.position_loop(
      {e.u32()}, {start}, [&](const spirv::Builder::Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s[0], e.u32c(positions.count)}); },
      [&](const spirv::Builder::Values& s) {
        std::optional<Cooperation> coop;
        if (launch.cooperative) e.set_cooperation(*(coop = cooperation(e, launch)));
        const Id local = coop ? coop->local_id : 0;
        const Id output_lane = group_outputs == 1 ? 0 : e.output_lane();
        const Id first = output_lane ? b.op(spv::OpIAdd, e.u32(), {s[0], output_lane}) : s[0];
        // With unrolling, an invocation computes positions s, s + stride, ... in one
        // iteration: every load is issued before the first store, so more memory requests
        // are in flight per invocation. Positions past the end are computed at a clamped
        // position (loads stay in bounds) and not stored; so are those of smaller outputs.
        const uint32_t unroll = unroll_of(launch);
        struct Pending {
          size_t k;
          Id pos, linear, v;  // linear: where v goes (a vector's index when vectorised)
        };
        std::vector<Pending> pending;
        for (uint32_t j = 0; j < unroll; ++j) {
          Id pos = j == 0 ? first : b.op(spv::OpIAdd, e.u32(), {first, e.u32c(uint64_t(j) * stride)});
          for (size_t k = 0; k < kernel.results.size(); ++k) {
            const int64_t n = kernel.results[k].num_elements() / lanes;
            if (n == 0) continue;
            const ir::Node& out = body.node(body.outputs[k]);
            Id at = n == positions.count && pos == s[0] ? pos : b.ext(GLSLstd450UMin, e.u32(), {pos, e.u32c(n - 1)});
            if (lanes > 1) {
              pending.push_back({k, pos, at, vector_at(e, out, at, lanes, vector_reads)});
              continue;
            }
            Index idx;
            idx.shape = kernel.results[k].shape;
            idx.linear = tiles ? tiled_linear(e, at, idx.shape) : at;
            pending.push_back({k, pos, idx.linear, e.value(out, idx)});
          }
        }
        for (const auto& p : pending) {
          const int64_t n = kernel.results[p.k].num_elements() / lanes;
          std::vector<Id> guards;
          if (n != positions.count || p.pos != s[0]) guards.push_back(b.op(spv::OpULessThan, e.boolean(), {p.pos, e.u32c(n)}));
          if (launch.cooperative)
            guards.push_back(group_outputs > 1 && !coop->segments ? b.op(spv::OpULessThan, e.boolean(), {local, e.u32c(group_outputs)})
                                                                  : b.op(spv::OpIEqual, e.boolean(), {e.lane(0), e.u32c(0)}));
          auto store = [&] {
            if (lanes > 1) e.store_vector(outputs[p.k], p.linear, p.v);
            else e.store(outputs[p.k], p.linear, p.v);
          };
          if (guards.empty()) store();
          else b.if_then(guards.size() == 1 ? guards[0] : b.op(spv::OpLogicalAnd, e.boolean(), guards), store);
        }
        // positions + unroll * stride < 2^32: items < 2^31 and unroll * stride is far below.
        return spirv::Builder::Values{b.op(spv::OpIAdd, e.u32(), {s[0], e.u32c(positions.stride)})};
      });
}

struct Module {
  std::vector<uint32_t> spirv;
  uint64_t shared_bytes = 0;  // workgroup memory of the cooperative reductions and staged tiles
  spirv::Builder::LoopSteps steps;
  uint32_t push_constant_bytes = 0;
  std::string emulated;  // spirv::Builder::emulated_types
};

Module emit_module(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps,
                   const std::vector<Binding>& bindings, const LaunchConfig& launch, int64_t items) {
  spirv::Builder b;
  b.emulate_64(caps.emulate_f64, caps.emulate_i64);
  b.set_native_int64(caps.int64);
  b.set_common_case_branches(branches_to_common_cases(caps));
  b.test_specials_on_bits(!caps.preserve_signed_zero_inf_nan_f32, !caps.preserve_signed_zero_inf_nan_f64);
  Emitter e(b, caps, body);
  check_types(kernel, body, caps, e, bindings);
  const ir::Node* dot = launch.matmul.m ? matmul_dot(kernel, body) : nullptr;
  const uint32_t lanes = dot ? launch.matmul.vector : launch.vector_width;
  const auto vector_params = dot         ? matmul_vector_operands(body, *dot, launch.matmul)
                             : lanes > 1 ? params_read_at_output_position(body)
                                         : std::vector<const ir::Node*>{};
  std::vector<BufferRef> inputs, outputs;
  std::map<int64_t, BufferRef> texel_inputs;
  declare_bindings(e, bindings, lanes, launch.vector_width, vector_params, &inputs, &outputs, &texel_inputs);
  e.set_inputs(inputs);
  e.set_texel_inputs(texel_inputs);
  std::vector<VectorRead> vector_reads;  // the plain loop's (emit_elements); a matmul reads its own
  if (!dot)
    for (const ir::Node* p : vector_params)
      vector_reads.push_back({p, inputs.at(size_t(p->attrs.value("index", int64_t(-1))))});

  Module m;
  const PositionLoop positions = position_loop(kernel, launch, items, caps);
  b.begin_main();
  const ir::Node* scan = scan_of(kernel);
  if (scan) {
    emit_scan_kernel(body, *scan, e, outputs.at(0), launch, &m.shared_bytes);
  } else if (const ir::Node* sort = sort_of(kernel)) {
    emit_sort_kernel(body, *sort, e, outputs.at(0), launch, &m.shared_bytes);
  } else if (launch.attention.fragment.m) {
    emit_cooperative_attention(body, *attention_of(body), e, inputs, outputs.at(0), launch, &m.shared_bytes);
  } else if (launch.attention.rows) {
    emit_attention(body, *attention_of(body), e, outputs.at(0), launch, &m.shared_bytes);
  } else if (auto rs = row_split(kernel); rs && items > 0) {
    emit_rows(kernel, body, e, outputs, launch, positions, *rs);
  } else if (launch.matmul.fragment.m) {
    emit_cooperative_matmul(body, *dot, e, inputs, outputs.at(0), launch, &m.shared_bytes);
  } else if (launch.matmul.m) {
    emit_matmul(body, *dot, e, outputs.at(0), launch, &m.shared_bytes);
  } else if (launch.tiles) {
    emit_staged_tiles(body, e, inputs, outputs.at(0), launch, positions, kernel.results[0].shape,
                      staged_transposes(body, kernel), &m.shared_bytes);
  } else {
    emit_elements(kernel, body, e, outputs, launch, positions, vector_reads, in_tile_order(kernel, body, caps));
  }
  declare_float_controls(b, caps);
  b.end_main(launch.workgroup_size);
  m.shared_bytes += e.shared_bytes();
  m.steps = b.loop_steps();
  m.push_constant_bytes = b.push_constant_bytes();
  m.emulated = b.emulated_types();
  m.spirv = b.finish();
  return m;
}

// The most trips of the position loop one invocation may take within `limit` loop steps:
// each costs its body's steps and one of its own; the loops outside it and the loop's last
// test take the rest. 0 when not even one trip fits.
uint64_t max_position_trips(const spirv::Builder::LoopSteps& steps, uint64_t limit) {
  if (steps.outside >= limit || steps.per_trip >= limit) return 0;
  return (limit - steps.outside - 1) / (steps.per_trip + 1);
}

// Where the device ends an invocation's loops after caps.max_loop_steps steps (lavapipe), a
// launch whose invocations each take few enough positions to stay below: more workgroups,
// or cooperative ones when a single position takes too many steps (its reductions are then
// split over a workgroup). nullopt when `launch` fits already; an IrError when nothing does.
std::optional<LaunchConfig> fit_loop_steps(const ir::Node& kernel, const std::string& name, const DeviceCaps& caps,
                                           const LaunchConfig& launch, int64_t items,
                                           const spirv::Builder::LoopSteps& steps) {
  const uint64_t limit = caps.max_loop_steps;
  const PositionLoop positions = position_loop(kernel, launch, items, caps);
  const uint64_t max_trips = limit == 0 ? 0 : max_position_trips(steps, limit);
  if (limit == 0 || positions.trips() <= max_trips) return std::nullopt;
  if (max_trips == 0) {
    if (!launch.cooperative && !launch.tiles && !launch.attention.rows && items > 0 && !scan_of(kernel) && !sort_of(kernel)) {
      const int64_t takers = row_split(kernel) ? positions.count : items;  // rows, or elements without vectors
      return cooperate(caps, takers, caps.max_workgroup_invocations, caps.max_workgroup_count_x);
    }
    // A cooperative workgroup narrower than the device allows: each invocation's share of a
    // position's reductions shrinks with a wider one (sum(sin(x)) of 16384 elements took
    // 71937 steps per invocation of 128 on lavapipe).
    if (launch.cooperative && !launch.tiles && !launch.matmul.m && !sort_of(kernel) &&
        launch.workgroup_size * 2 <= caps.max_workgroup_invocations)
      return cooperate(caps, launch.group_count, caps.max_workgroup_invocations, caps.max_workgroup_count_x);
    throw ir::IrError(kernel, name + ": one position takes " + std::to_string(steps.per_trip) + " loop steps (and " +
                                  std::to_string(steps.outside) + " more per invocation); " + caps.name +
                                  " ends a shader's loops after " + std::to_string(limit) +
                                  " steps, which would leave the results wrong");
  }
  const uint64_t per_group = positions.stride / launch.group_count;
  const uint64_t stride = (uint64_t(positions.count) + max_trips - 1) / max_trips;
  const uint64_t groups = (stride + per_group - 1) / per_group;
  if (groups > caps.max_workgroup_count_x)
    throw ir::IrError(kernel, name + " needs " + std::to_string(groups) + " workgroups to keep each invocation within " +
                                  std::to_string(limit) + " loop steps on " + caps.name + ", which allows " +
                                  std::to_string(caps.max_workgroup_count_x));
  LaunchConfig wider = launch;
  wider.group_count = uint32_t(groups);
  return wider;
}

std::string describe(const LaunchConfig& launch, bool rows) {
  std::string s;
  if (const AttentionTiles& a = launch.attention; a.fragment.m) {
    s = "cooperative attention " + std::to_string(a.rows) + " rows x " + std::to_string(a.keys) + " keys per step, " +
        std::to_string(a.rows / a.fragment.m) + " subgroups of " + to_string(a.fragment) + " fragments, " +
        (a.registers ? std::string("softmax in registers") : std::to_string(a.lanes) + " invocations per row");
  } else if (a.rows) {
    s = "attention " + std::to_string(a.rows) + " rows x " + std::to_string(a.keys) + " keys per step, " +
        std::to_string(a.row_step) + " rows x " + std::to_string(a.keys / a.lanes) + " keys per invocation" +
        (a.shuffles ? ", rows combined by subgroup shuffles" : "") + (a.own_v ? ", k and v slices apart" : "");
  } else if (const MatmulTiles& t = launch.matmul; t.fragment.m) {
    s = "cooperative matmul " + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k) + " tiles, " +
        std::to_string(t.subgroups_m) + "x" + std::to_string(t.subgroups_n) + " subgroups of " + to_string(t.fragment) +
        " fragments" + (t.split ? ", f32 operands as bf16 hi + lo (3 products)" : t.rounded_f32 ? ", f32 operands as bf16" : "");
  } else if (t.m) {
    s = "matmul " + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k) + " tiles, " +
        std::to_string(t.thread_m) + "x" + std::to_string(t.thread_n) + " per invocation, " +
               (t.staged ? "staged" : t.broadcast ? "subgroup broadcast" : "direct") +
               (t.vector > 1 ? ", vectors of " + std::to_string(t.vector) + (t.pairs ? " pairs" : "") : "") +
               (t.texels ? ", texels" : "") + (t.k_slices > 1 ? ", k-steps in " + std::to_string(t.k_slices) + " slices" : "");
  } else {
    s = launch.tiles ? "transpose tiles" : rows ? "rows" : "elements";
    if (launch.cooperative) s += ", cooperative";
    if (launch.cooperative && launch.outputs_per_group > 1)
      s += launch.segments ? " in segments of " + std::to_string(launch.workgroup_size / launch.outputs_per_group) + " invocations"
                           : " in runs of " + std::to_string(launch.outputs_per_group) + " outputs";
    if (launch.vector_width > 1) s += ", vectors of " + std::to_string(launch.vector_width);
  }
  return s + "; " + std::to_string(launch.workgroup_size) + " invocations x " + std::to_string(launch.group_count) + " groups";
}
}  // namespace

namespace {

// The kernel's buffers, inputs then outputs, checked against its body: each parameter's
// type its argument's, each output's its result's, and within the device's storage buffers.
void bind_buffers(const ir::Node& kernel, const ir::Graph& parent, const ir::Graph& body, const DeviceCaps& caps,
                  KernelBinary& out) {
  if (body.outputs.size() != kernel.results.size())
    throw ir::IrError(kernel, "body has " + std::to_string(body.outputs.size()) + " outputs but the kernel " +
                                  std::to_string(kernel.results.size()) + " results");
  for (size_t i = 0; i < kernel.args.size(); ++i)
    out.bindings.push_back({Binding::Kind::Input, int(i), parent.node(kernel.args[i]).type().dtype});
  for (const auto* p : body.parameters()) {
    int64_t i = p->attrs.value("index", int64_t(-1));
    if (i < 0 || size_t(i) >= kernel.args.size())
      throw ir::IrError(*p, "parameter index " + std::to_string(i) + " has no kernel argument");
    if (p->type() != parent.node(kernel.args[i]).type())
      throw ir::IrError(*p, "type " + ir::to_string(p->type()) + " differs from kernel argument " +
                                ir::to_string(parent.node(kernel.args[i]).type()));
  }
  for (size_t k = 0; k < kernel.results.size(); ++k) {
    if (body.node(body.outputs[k]).type() != kernel.results[k])
      throw ir::IrError(kernel, "result " + std::to_string(k) + " is " + ir::to_string(kernel.results[k]) +
                                    " but the body computes " + ir::to_string(body.node(body.outputs[k]).type()));
    out.bindings.push_back({Binding::Kind::Output, int(k), kernel.results[k].dtype});
  }
  // Past the limit a driver may crash rather than fail (lavapipe does): refuse here. Texel
  // views (added later) count against the sampled-image limit, not this one.
  if (out.bindings.size() > caps.max_storage_buffers)
    throw ir::IrError(kernel, "needs " + std::to_string(out.bindings.size()) + " storage buffers; " + caps.name +
                                  " allows " + std::to_string(caps.max_storage_buffers) +
                                  " per kernel (maxPerStageDescriptorStorageBuffers)");
}

// The module under `launch`, refitted where it needs more shared memory than the device has
// (`sized`: launches sized to fit, where that is a codegen bug) or more loop steps per
// invocation than it allows; `launch` is left as the module's.
Module emit_fitted(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps, const KernelBinary& out,
                   const KernelShape& shape, int64_t items, bool sized, LaunchConfig& launch) {
  Module m = emit_module(kernel, body, caps, out.bindings, launch, items);
  if (m.shared_bytes > caps.max_shared_memory_bytes && sized)
    throw ir::IrError(kernel, out.name + " needs " + std::to_string(m.shared_bytes) + " bytes of shared memory; " + caps.name +
                                  " has " + std::to_string(caps.max_shared_memory_bytes));
  if (m.shared_bytes > caps.max_shared_memory_bytes) {  // too many reductions to share: one invocation per output
    launch = choose_launch(caps, {shape.items, 0});
    m = emit_module(kernel, body, caps, out.bindings, launch, items);
  }
  // At most three times: to a cooperative launch, to its widest workgroup, then to more of its
  // groups (which leaves the steps per trip as they are, so the last fit holds).
  while (auto fitted = fit_loop_steps(kernel, out.name, caps, launch, items, m.steps)) {
    launch = *fitted;
    m = emit_module(kernel, body, caps, out.bindings, launch, items);
    if (m.shared_bytes > caps.max_shared_memory_bytes)
      throw ir::IrError(kernel, out.name + " needs " + std::to_string(m.shared_bytes) + " bytes of shared memory to stay within " +
                                    std::to_string(caps.max_loop_steps) + " loop steps per invocation on " + caps.name);
  }
  return m;
}

}  // namespace

KernelBinary compile_kernel(const ir::Node& kernel, const ir::Graph& parent, const DeviceCaps& caps) {
  if (kernel.op != "kernel") throw ir::IrError(kernel, "compile_kernel needs a kernel node");
  auto it = kernel.regions.find("body");
  if (it == kernel.regions.end() || !it->second) throw ir::IrError(kernel, "kernel without a body region");
  const ir::Graph& body = *it->second;

  KernelBinary out;
  out.name = kernel_name(kernel, body);
  out.fused_nodes = fused_nodes(kernel, body);
  bind_buffers(kernel, parent, body, caps, out);
  int64_t items = 0;
  for (const auto& r : kernel.results) items = std::max(items, r.num_elements());
  // A row kernel's parallel items are its rows; each row's elements form its "reduction".
  const auto rs = row_split(kernel);
  KernelShape shape = rs ? KernelShape{rs->rows(), std::max(rs->cols(), longest_reduction(body))}
                         : KernelShape{items, longest_reduction(body), vector_element_bytes(kernel, body, caps),
                                       computes_int64(body), strided_reduction_bytes(body), computes_emulated_f64(body, caps)};
  if (!rs) shape.weight_row_run = weight_row_run(body);
  shape.contracts_or_scatters = std::any_of(body.nodes.begin(), body.nodes.end(), [](const ir::Node& n) {
    return ir::op_family(n.op) == ir::OpFamily::Dot || ir::op_family(n.op) == ir::OpFamily::Scatter;
  });
  const ir::Node* scan = rs ? nullptr : scan_root(kernel, body);
  const ir::Node* sort = rs ? nullptr : sort_root(kernel, body);
  const std::optional<SortStage> stage = sort ? std::optional<SortStage>(SortStage::of(body, *sort, caps)) : std::nullopt;
  const ir::Node* attn = rs || scan || sort ? nullptr : attention_of(body);
  const ir::Node* dot = rs || scan || sort || attn ? nullptr : matmul_dot(kernel, body);
  const MatmulShape product = dot ? matmul_shape(body, *dot, caps) : MatmulShape{};
  const MatmulTiles tiles = dot ? choose_matmul_tiles(caps, product) : MatmulTiles{};
  for (const ir::Node* p : dot ? matmul_texel_operands(body, *dot, tiles) : std::vector<const ir::Node*>{}) {
    const int index = int(p->attrs.value("index", int64_t(-1)));
    const bool bound = std::any_of(out.bindings.begin(), out.bindings.end(), [&](const Binding& b) { return b.texels && b.index == index; });
    if (!bound) out.bindings.push_back({Binding::Kind::Input, index, p->type().dtype, true});
  }
  LaunchConfig launch = attn                                                           ? launch_attention(body, *attn, caps)
                        : scan                                                         ? launch_scan(caps, ScanLines::of(*scan))
                        : stage                                                        ? launch_sort(caps, *stage)
                        : tiles.m                                                      ? launch_matmul(caps, product, tiles)
                        : !rs && tile_transposes(caps) && !staged_transposes(body, kernel).empty() && items > 0
                            ? launch_tiles(caps, items / (kTile * kTile))
                            : choose_launch(caps, shape);
  Module m = emit_fitted(kernel, body, caps, out, shape, items, stage || attn, launch);
  out.spirv = std::move(m.spirv);
  out.push_constant_bytes = m.push_constant_bytes;
  out.workgroup_size[0] = launch.workgroup_size;
  out.group_count[0] = launch.group_count;
  out.launch = scan ? describe_scan(*scan, launch) : stage ? describe_sort(*stage, launch) : describe(launch, rs.has_value());
  if (!m.emulated.empty()) out.launch += "; emulated " + m.emulated;

  std::string err = validate(out.spirv, caps.api_version);
  if (!err.empty()) throw ir::IrError(kernel, "generated SPIR-V does not validate (codegen bug): " + err);
  return out;
}

}  // namespace nxv::codegen
