// The elemental emitter: value(node, index) computes one element of a body
// node, recursively through its operands, in the style of XLA's elemental IR
// emitter. Index-mapping ops remap the index instead of moving data;
// reductions and dot loop over their reduced index space per element.
//
// Values live in 32- or 64-bit registers (see register_bits): narrow integers
// stay sign-/zero-extended and f16/bf16 stay rounded to their precision after
// every op, so each op's result equals Nx's per-op result.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "codegen/spirv_builder.h"
#include "codegen/target.h"
#include "ir/ir.h"

namespace nxv::codegen {

using spirv::Id;

// A position in a tensor of static shape. Either form may be missing and is
// derived on demand (row-major, compile-time strides).
struct Index {
  ir::Shape shape;
  std::vector<Id> dims;  // per-axis u32 ids; empty until known (or for scalars)
  Id linear = 0;         // row-major u32 id; 0 until known
  bool has_dims() const { return !dims.empty() || shape.empty(); }
};

struct BufferRef {
  Id variable;
  ir::DType dtype;
  // Elements per entry of the declared array: above 1 an array of vectors (32- and 64-bit
  // types only), which the plain loop reads and writes a vector at a time.
  uint32_t lanes = 1;
  // Where the tensor starts in the array (a u32 id; 0: at its start), for tensors that share
  // one buffer (a serial loop's scratch).
  Id base = 0;
  // Written while the kernel runs (a serial loop's state and scratch): its loads stay where
  // they are, never value-numbered with or hoisted above an earlier store.
  bool written_in_kernel = false;
  // A uniform texel buffer (variable: the image) of u32 texels, `lanes` components each:
  // load_vector fetches texel `at`.
  bool texels = false;
};

// Set when all invocations of a workgroup compute each output element
// together (few outputs, long reductions): reductions at the output level
// are then split over the workgroup and combined through shared memory.
struct Cooperation {
  Id local_id;    // LocalInvocationId.x
  uint32_t size;  // the workgroup size, a power of two
  int level;      // builder level of the per-output code (uniform control flow)
  // Consecutive outputs the workgroup computes at once (a power of two dividing size):
  // invocation i takes output i % outputs, and folds every (size / outputs)-th position
  // from i / outputs.
  uint32_t outputs = 1;
  // Outputs in segments instead: invocation i takes output i / (size / outputs) and folds
  // every (size / outputs)-th position from i % (size / outputs), so a segment reads its
  // row's consecutive elements together. Where `full` holds (a uniform bool: subgroups are
  // full and each holds whole segments; 0 where the device has no shuffles), local_id
  // numbers invocations subgroup by subgroup and segments combine by shuffles; else
  // through shared memory.
  bool segments = false;
  Id full = 0;
  uint32_t reducers() const { return size / outputs; }
};

// A loop over r in [begin, count) folding step(acc, r) into the accumulators.
// combine(a, b) merges two partial results over disjoint, interleaved sets of r.
struct Fold {
  std::vector<Id> types;
  std::vector<Id> init;
  int64_t begin = 0, count = 0;
  std::function<std::vector<Id>(const std::vector<Id>& acc, Id r)> step;
  std::function<std::vector<Id>(const std::vector<Id>& a, const std::vector<Id>& b)> combine;
  // Optional, for partials on scales of their own that are dear to combine across scales
  // (emulated f64 sums' wide accumulators): settle(partial) may rewrite the partial and
  // gives its scale (a u32), rescale(partial, top) puts it on the largest scale among those
  // that meet, and combine then only ever merges partials of one scale.
  std::function<Id(std::vector<Id>& partial)> settle;
  std::function<std::vector<Id>(const std::vector<Id>& partial, Id top)> rescale;
  // Optional, for steps that test for a rare branch (emulated f64 sums): step_many folds
  // `group` positions under one test (a loop trip and a test cost about a sixth of a cheap
  // element's instructions); start gives the accumulator an invocation begins from in place
  // of init, given the first `group` positions it folds next, where they are folded
  // straight-line or by step_many before a loop.
  uint32_t group = 1;
  std::function<std::vector<Id>(const std::vector<Id>& rs)> start;
  std::function<std::vector<Id>(const std::vector<Id>& acc, const std::vector<Id>& rs)> step_many;
};

// A dot's axes: the contracted and batch pairs, and each operand's free axes in the order
// they appear in the result (batch axes, a's free axes, b's free axes).
struct DotAxes {
  std::vector<int64_t> c1, c2, b1, b2, free1, free2;
  // Throws IrError naming the dot when the lists do not pair up with its operands.
  static DotAxes of(const ir::Node& dot, const ir::Shape& a, const ir::Shape& b);
};

// Asks the driver to keep Nx's float semantics for the float widths the module uses
// (codegen of every module calls it before end_main).
void declare_float_controls(spirv::Builder& b, const DeviceCaps& caps);

class Emitter {
 public:
  Emitter(spirv::Builder& b, const DeviceCaps& caps, const ir::Graph& body);
  // The buffers that body parameter i reads (by attrs.index).
  void set_inputs(std::vector<BufferRef> inputs) { inputs_ = std::move(inputs); }
  // The buffer a parameter node reads (nullptr for a serial loop's bound values).
  const BufferRef* input_buffer(const ir::Node& param) const;
  // The texel view of the buffer a parameter node reads (Binding::texels), or nullptr.
  void set_texel_inputs(std::map<int64_t, BufferRef> views) { texel_inputs_ = std::move(views); }
  const BufferRef* texel_input(const ir::Node& param) const;
  void set_cooperation(const Cooperation& c) { coop_ = c; }
  // In cooperative code, the position `offset` past this invocation's first (its index
  // among the invocations of its output, Cooperation::outputs): every
  // straight-line fold and element loop names position k the same (value-numbered) id, so
  // what one loaded or computed there the next reuses.
  Id lane(uint64_t offset);
  // In cooperative code with several outputs, this invocation's among them
  // (Cooperation::outputs).
  Id output_lane();
  // Cooperative folds and row loops over at most this many positions per invocation are
  // straight-line code: a row then stays in registers between its passes.
  static constexpr int64_t kMaxUnrolledPositions = 32;
  // Workgroup (shared) memory the cooperative reductions use.
  uint64_t shared_bytes() const { return shared_bytes_; }

  // The register value of `node` at `index` (index.shape == node's shape).
  Id value(const ir::Node& node, Index index);
  // Makes value(node, index) return v (a value the caller computed another way, such as a
  // load from shared memory) at the current level of control flow.
  void provide(const ir::Node& node, const Index& index, Id v);
  // Converts a register value to storage form and writes it to element `linear`.
  void store(const BufferRef& buf, Id linear, Id value);

  // Throws IrError naming `node` if the device cannot compute in `t` (f64, s64/u64 without
  // the device's feature); narrow types are held in 32-bit registers, and packed in
  // buffers where the device lacks 8/16-bit storage.
  void require_type(const ir::Node& node, ir::DType t) const;

  spirv::Builder& b;
  const DeviceCaps& caps;

  // ---- types and conversions (emit_types.cpp) ----
  static int register_bits(ir::DType t);
  // The type sums, products and dots of type t are computed in: f64 for f32 where that is
  // cheap (computes_f32_in_f64), else t.
  ir::DType compute_type(ir::DType t) const;
  // The type transcendental functions, roots and pow of type t are computed in: f64 for f32,
  // f16 and bf16 where that is cheap, as Nx computes them in double and rounds once (an f32
  // result an ulp below 1.0 truncates to bf16 0.996), else t.
  ir::DType math_type(ir::DType t) const;
  Id reg_type(ir::DType t);
  // Narrow tensors without the device's 8/16-bit storage: packed in 32-bit words.
  bool packed(ir::DType t) const;
  Id storage_type(ir::DType t);
  uint32_t storage_stride(ir::DType t) const;  // bytes per element of a buffer's array
  Id u32();
  Id u32c(uint64_t v) { return b.const_int(32, v); }
  Id boolean();
  // The type of one entry of buf's declared array: its storage type, or a vector of buf.lanes.
  Id buffer_entry_type(const BufferRef& buf);
  Id load(const BufferRef& buf, Id linear);
  // Entry `at` of a vector buffer: elements at * lanes, ..., as declared (storage form).
  Id load_vector(const BufferRef& buf, Id at);
  void store_vector(const BufferRef& buf, Id at, Id vector);
  // The value's bit pattern in an integer register of its register width, and back.
  Id to_bits(Id v, ir::DType t);
  // f16 converts with OpFConvert rather than integer code (emit_types.cpp says when).
  bool hardware_f16() const;
  bool hardware_f16_subnormals() const;
  Id from_bits(Id bits, ir::DType t);
  // Restores the register invariant after an op whose raw result may leave it.
  Id normalize(Id v, ir::DType t);
  Id convert(Id v, ir::DType from, ir::DType to);
  Id constant(ir::DType t, double v);
  Id constant_int(ir::DType t, uint64_t bits);
  Id constant_attr(const ir::Node& node, const nlohmann::json& v, ir::DType t);
  // A float literal of the graph (a `constant` node's value) in t's register: special values
  // (±0, ±Inf, NaN, subnormals) hidden from the driver's constant folding.
  Id float_literal(ir::DType t, double v);
  Id from_bool(Id cond, ir::DType t);  // bool → 1/0 of type t
  Id to_bool(Id v, ir::DType t);       // nonzero test
  // |x| of a signed integer type, wrapping at its minimum, unnormalized. A select, never
  // GLSL's SAbs: NVIDIA's compiler (driver 580) made `0 - SAbs(x) > c` false for every x
  // (docs/reliability.md, GPU fuzzer seed 40302187).
  Id int_abs(Id x, ir::DType t);
  // The f16 bits (in a u32's low half, the rest zero) of f16 value v where they are known
  // without a conversion (f16_bits_), else 0.
  Id known_f16_bits(Id v) const {
    auto it = f16_bits_.find(v);
    return it == f16_bits_.end() ? 0 : it->second;
  }
  Id select(ir::DType t, Id cond, Id x, Id y);
  // x rounded toward zero, x of register type reg_type(t). f64 is floor or ceil by sign:
  // lavapipe without 512-bit vectors truncates f64 vectors on a path meant for f32, which
  // takes every value from 2^24 up for an integer (16777217.5 stays itself).
  Id truncate(Id x, ir::DType t);
  Id b_select(Id type, Id cond, Id x, Id y) { return b.op(spv::OpSelect, type, {cond, x, y}); }

  // ---- index arithmetic (emit_index.cpp) ----
  std::vector<Id> dims(Index& idx);
  Id linear(Index& idx);
  Index index_from_dims(const ir::Shape& shape, std::vector<Id> dims);
  // An integer register value of type t as a u32 position clamped to [0, hi] (hi >= 0).
  Id clamped_index(Id v, ir::DType t, int64_t hi);
  // The flat counter r over `extents` (row-major) as per-axis u32 ids.
  std::vector<Id> split(Id r, const std::vector<int64_t>& extents);
  // A dot operand's index from its batch, free and contracted positions (per axis lists).
  static Index operand_index(const ir::Shape& shape, const std::vector<int64_t>& batch_axes,
                             const std::vector<int64_t>& free_axes, const std::vector<int64_t>& contract_axes,
                             const std::vector<Id>& batch, const std::vector<Id>& free, const std::vector<Id>& contract);
  // The dot's product-and-add step in its compute type (one term of the contraction), and
  // the accumulator's start and final rounding: shared by the per-element and tiled kernels
  // so that both give the same bits.
  ir::DType dot_accumulator_type(const ir::Node& dot);
  Id dot_zero(const ir::Node& dot);
  Id dot_term(const ir::Node& dot, Id acc, Id x, Id y);  // x, y: operand values, converted here
  Id dot_result(const ir::Node& dot, Id acc);
  Id all_true(const std::vector<Id>& conds);  // true when empty
  // A reduction's fold (op: sum product reduce_max reduce_min all any) of accumulator a and
  // v in the registers of `at` (t: the result type; max and min propagate NaN), and its
  // identity (+0.0 for a float sum); shared by reductions and scans (emit_scan.cpp).
  Id reduce_step(const std::string& op, ir::DType t, ir::DType at, Id a, Id v);
  Id reduce_identity(const std::string& op, ir::DType t, ir::DType at);
  // The float function `op` (exp, log, ...) of x in t's register, as `node` would compute it
  // (errors name the node).
  Id math(const ir::Node& node, const std::string& op, Id x, ir::DType t) { return float_unary(node, op, x, t); }

 private:
  Id compute(const ir::Node& node, Index& index);
  std::vector<Id> operands_at(const ir::Node& node, Index& index);  // elementwise broadcasting
  Id operand_at(const ir::Node& node, size_t k, Index& index);

  // Families, each in its own file.
  Id emit_unary(const ir::Node& node, Index& index);
  Id count_bits(const ir::Node& node, Id x);
  Id emit_binary(const ir::Node& node, Index& index);
  Id float_divide(Id a, Id c, ir::DType t);
  Id corrected_quotient(Id q, Id a, Id c, ir::DType t);
  Id int_divide(bool quotient, Id a, Id c, ir::DType t);
  Id int_shift(bool left, Id a, Id c, ir::DType t);
  Id emit_compare(const ir::Node& node, Index& index);
  Id emit_misc_elementwise(const ir::Node& node, Index& index);  // select clip as_type bitcast
  Id emit_index_op(const ir::Node& node, Index& index);          // broadcast, slice, pad, ...
  // The operand index of an index map that reads one operand element per element, always
  // (reshape, squeeze, broadcast, transpose, reverse, slice); nullopt for other ops.
  std::optional<Index> operand_position(const ir::Node& node, Index& index);
  Index reshape_position(const ir::Node& node, const ir::Node& x, Index& index);
  Index squeeze_position(const ir::Node& node, const ir::Node& x, Index& index);
  Id map_operand(const ir::Node& node, Index idx);
  Id emit_put_slice(const ir::Node& node, Index& index);
  Id emit_pad(const ir::Node& node, Index& index);
  Id emit_concatenate(const ir::Node& node, Index& index);  // and stack
  // A concatenate's or stack's element at dims `d` where its operands read one value: that
  // value, read once; 0 where they do not.
  Id select_common_source(const ir::Node& node, const std::vector<Id>& d);
  // Its positions along axis i of that value as one base plus a computed offset, where they
  // differ by constants (emit_index.cpp); 0 where they do not.
  Id offset_candidates(const std::vector<std::vector<Id>>& candidates, size_t i, const std::vector<Id>& here, Id along,
                       bool unit_parts);
  Id emit_gather(const ir::Node& node, Index& index);            // emit_gather.cpp
  Id emit_indexed(const ir::Node& node, Index& index);           // indexed_add indexed_put (emit_gather.cpp)
  Id emit_indexed_sorted(const ir::Node& node, Index& index);    // their sorted form (ir::is_sorted_indexed)
  struct IndexedElement;
  IndexedElement indexed_element(const ir::Node& node, Index& index);
  Id emit_reduction(const ir::Node& node, Index& index);
  // An emulated f64 sum of x's elements operand(counter) over f.count positions, in a wide
  // accumulator (soft_f64_sum.h), as Nx's type t.
  Id emulated_f64_sum(const ir::Node& x, ir::DType t, const std::vector<Id>& out, Fold f, const std::function<Id(Id)>& operand);
  Id emit_argreduce(const ir::Node& node, Index& index);
  Id emit_dot(const ir::Node& node, Index& index);
  Id emit_scan_element(const ir::Node& node, Index& index);  // a scan read inside another kernel (emit_scan.cpp)
  Id emit_repeat_result(const ir::Node& elem, Index& index);  // elem of a `repeat` (emit_repeat.cpp)

  const ir::Node& arg(const ir::Node& node, size_t k) const { return body_.node(node.args.at(k)); }
  Id element_pointer(const BufferRef& buf, Id linear);
  struct PackedElement {
    Id word;   // pointer to the 32-bit word holding the element
    Id shift;  // the element's first bit in it
  };
  PackedElement packed_element(const BufferRef& buf, Id linear);
  Id entry_pointer(const BufferRef& buf, Id at);
  // Runs the fold at the level of `outer` (the ids the loop depends on); cooperatively when possible.
  std::vector<Id> fold(const std::vector<Id>& outer, const Fold& f);
  std::vector<Id> fold_cooperative(const Fold& f);
  std::vector<Id> combine_partials(const Fold& f, std::vector<Id> partial);
  std::vector<Id> fold_share(const Fold& f, uint32_t reducers);
  std::vector<Id> butterflies(const Fold& f, std::vector<Id> partial, uint32_t lanes);
  std::vector<Id> combine_in_subgroups(const Fold& f, std::vector<Id> partial);
  std::vector<Id> combine_in_tree(const Fold& f, const std::vector<Id>& partial);
  // Slot `slot` (one array per type and slot) of shared memory at index.
  Id slot_pointer(Id type, size_t slot, Id index);
  std::vector<Id> load_slots(const std::vector<Id>& types, Id index);
  void store_slots(const std::vector<Id>& types, Id index, const std::vector<Id>& values);
  Id shared_array(Id type, size_t slot, int bytes);

  Id float_unary(const ir::Node& node, const std::string& op, Id x, ir::DType t);
  // The math library (emit_math.cpp): functions computed from arithmetic in t's register width.
  static bool math_library_has(const std::string& op);
  // `remainder_type`: the type the exact remainder that reduces sin, cos and tan
  // arguments beyond 2^20 pi/2 is taken in (a loop per exponent step), if not t.
  Id math_unary(const std::string& op, Id x, ir::DType t, std::optional<ir::DType> remainder_type = std::nullopt);
  // Giles' approximation as Complex.erf_inv evaluates it, the values of Nx.BinaryBackend
  // (for f32 computed in f64: computes_f32_in_f64).
  Id math_erf_inv_as_binary_backend(Id x, ir::DType t);
  Id math_pow_magnitude(Id ax, Id y, ir::DType t);    // |x|^y for finite |x| > 0
  Id math_atan2_magnitude(Id ay, Id x, ir::DType t);  // atan2(|y|, x) for finite nonzero arguments
  Id int_pow(Id base, Id exponent, ir::DType t);
  // C99/IEEE semantics (signed zeros, infinities, NaN) around the device's core function.
  Id float_rem(Id x, Id y, ir::DType t);
  Id float_pow(Id x, Id y, ir::DType t);
  Id float_atan2(Id y, Id x, ir::DType t);

  const ir::Graph& body_;
  // Memo keys carry the emitter's tag: a nested emitter (a repeat's step) reuses node ids.
  uint32_t memo_tag_;
  // Parameters bound to register values (a repeat's step) instead of buffers.
  std::vector<Id> bound_;
  std::vector<BufferRef> inputs_;
  std::map<int64_t, BufferRef> texel_inputs_;  // by parameter index
  std::optional<Cooperation> coop_;
  std::map<std::pair<Id, size_t>, Id> shared_;
  uint64_t shared_bytes_ = 0;
  // f16 values whose bits are known (the bits dominate the value): normalize's, those loaded
  // from 16-bit storage, and selects of two such. A value normalized again, stored or packed
  // reuses them instead of converting once more. A dot's epilogue would otherwise convert
  // each result three times, which made the H100's f16 cooperative kernels 2.8-3.5 times the
  // size of the bf16 ones and up to 1.6 times slower.
  std::map<Id, Id> f16_bits_;
  // On the hardware path, normalize's f16 values and the f32 each was rounded from. Rounding
  // to f16 is idempotent (NaN, ±inf and the subnormal steps included), so a store converts
  // the unrounded value once, and the driver drops the round trip where nothing else reads
  // it: NVIDIA's compiler cannot fold the pair itself through the opaque word.
  std::map<Id, Id> f16_unrounded_;
  // u32 values that are one digit of a flat position in a mixed radix: (source / stride) %
  // extent, or source / stride for the leading digit (extent 0). An index split into digits
  // and recombined with matching strides (a contraction read through a broadcast, a reshape
  // of contiguous axes) is then one division and modulo of the source, not one per axis
  // (linear()): a 3x3 convolution's kernel operand took 8 integer operations per element.
  struct Digit {
    Id source;
    int64_t stride, extent;
  };
  std::map<Id, Digit> digits_;
  Id digit(Id source, int64_t stride, int64_t extent, bool leading);
};

}  // namespace nxv::codegen
