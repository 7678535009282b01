// A small SPIR-V module builder for one compute shader.
//
// Module level: capabilities, extensions, deduplicated types and constants,
// decorations, globals, the entry point; finish() serialises the words.
//
// Function level: one function ("main") built from nested *scopes*. Level 0 is
// the function entry; each structured construct (loop, if/else) opens a new
// level for its body. Pure instructions are value-numbered per scope and
// placed in the shallowest scope where all their operands exist, which hoists
// loop-invariant work (index arithmetic, loads of scalars, ...) out of loops
// for free. at_level() lets a caller emit a whole construct (e.g. a reduction
// loop) at a shallower level: the open block of that level is split, so the
// construct ends up in front of everything already nested under it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <spirv/unified1/GLSL.std.450.h>
#include <spirv/unified1/spirv.hpp>

namespace nxv::codegen {
class Soft64;  // emulated 64-bit arithmetic (soft64.h), which lowering calls
}  // namespace nxv::codegen

namespace nxv::codegen::spirv {

using Id = uint32_t;
using Words = std::vector<uint32_t>;

// SPV_KHR_cooperative_matrix, which Debian 12's spirv-headers (1.3.239) predate: its
// opcodes, capability and operand values from the SPIR-V registry.
inline constexpr auto OpTypeCooperativeMatrixKHR = spv::Op(4456);
inline constexpr auto OpCooperativeMatrixLoadKHR = spv::Op(4457);
inline constexpr auto OpCooperativeMatrixStoreKHR = spv::Op(4458);
inline constexpr auto OpCooperativeMatrixMulAddKHR = spv::Op(4459);
inline constexpr auto CapabilityCooperativeMatrixKHR = spv::Capability(6022);
inline constexpr uint32_t kMatrixA = 0, kMatrixB = 1, kMatrixAccumulator = 2;  // CooperativeMatrixUse
inline constexpr uint32_t kRowMajor = 0, kColumnMajor = 1;                   // CooperativeMatrixLayout

// What the builder cannot emit for a valid request (an instruction on an emulated type it has
// no lowering for): the emitter names the node.
struct Unsupported : std::logic_error {
  using std::logic_error::logic_error;
};

// A SPIR-V literal string: UTF-8, NUL-terminated, packed little-endian into words.
Words string_literal(const std::string& s);

class Builder {
 public:
  Builder();
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  Id fresh_id() { return next_id_++; }

  // ---- emulated 64-bit types (lowering in emulate64.cpp) ----
  // Called before any type is declared: f64 and/or s64/u64 then live in uvec2 registers
  // (codegen/soft64.h). type_float(64) / type_int(64) return a type id that names the
  // emulated type in this builder's calls but is never declared; op() and ext() lower every
  // instruction on it to 32-bit arithmetic, so emitters need not know.
  void emulate_64(bool f64, bool i64);
  bool emulated(Id type) const { return type != 0 && (type == emulated_f64_ || type == emulated_i64_); }
  // OpIsNan/OpIsInf on f32 and/or f64 values become tests on their bits (special_bits.cpp):
  // for the widths whose kernels cannot declare SignedZeroInfNanPreserve.
  void test_specials_on_bits(bool f32, bool f64);
  // What the module computes in software so far: "f64", "i64", "f64, i64" or "".
  std::string emulated_types() const;
  // The type of a result, phi or constant made through this builder (0 for others).
  Id type_of(Id id) const { return id < type_of_.size() ? type_of_[id] : 0; }

  // ---- module level ----
  void capability(spv::Capability c);
  void extension(const std::string& name);
  Id glsl_std_450();

  Id type_void();
  Id type_bool();
  // Integer registers are unsigned-typed; signedness lives in the instructions.
  Id type_int(int bits);
  Id type_float(int bits);
  // Size of a scalar int/float type declared through this builder.
  int type_bytes(Id scalar_type) const { return scalar_bytes_.at(scalar_type); }
  bool uses_float(int bits) const { return types_.count({uint32_t(spv::OpTypeFloat), uint32_t(bits)}) > 0; }
  // Whether the module converts to f16 in hardware (declare_float_controls asks the device
  // for round-to-nearest-even f16 results then); a kernel's f16 fragments alone do not.
  void note_f16_conversion() { converts_f16_ = true; }
  bool converts_f16() const { return converts_f16_; }
  Id type_vector(Id elem, uint32_t n);
  Id type_pointer(spv::StorageClass sc, Id pointee);
  Id type_function(Id ret, const std::vector<Id>& params);
  // An undecorated struct, e.g. the result of OpIAddCarry or OpUMulExtended.
  Id type_struct(const std::vector<Id>& members);
  // A subgroup's cooperative matrix of `rows` x `cols` components (declares the capability
  // and extension). nv: SPV_NV_cooperative_matrix's type, which has no use; else
  // SPV_KHR_cooperative_matrix's for `use` (kMatrixA, kMatrixB, kMatrixAccumulator).
  // bf16 (SPV_KHR_bfloat16: a 16-bit float of the BFloat16KHR encoding), for cooperative matrices.
  Id type_bfloat16();
  Id type_cooperative_matrix(bool nv, Id component, uint32_t rows, uint32_t cols, uint32_t use);
  // struct { elem data[]; } decorated Block, ArrayStride/Offset set; pointer to it in StorageBuffer.
  Id type_buffer_pointer(Id elem, uint32_t stride);

  Id const_bool(bool v);
  Id const_int(int bits, uint64_t v);  // the low `bits` bits of v
  // The value of an integer constant declared through this builder (nullopt for any other
  // id). op() folds integer arithmetic on such constants, so index computations with
  // static parts stay constant and emitters can choose statically (concatenate).
  std::optional<uint64_t> int_constant(Id id) const;
  // A 32-bit integer `id` as base + offset: the base and offset of an OpIAdd of a value and a
  // constant (or OpISub of a constant from it) made through op(), followed through chains of
  // them; (id, 0) for any other id. Emitters use it to see that values differ by constants
  // (a convolution's taps: a window's position plus each tap's).
  std::pair<Id, uint32_t> split_offset(Id id) const;
  Id const_f32(float v);
  Id const_f64(double v);
  Id const_float(int bits, double v) { return bits == 64 ? const_f64(v) : const_f32(static_cast<float>(v)); }

  void decorate(Id target, spv::Decoration d, const Words& args = {});
  void member_decorate(Id struct_type, uint32_t member, spv::Decoration d, const Words& args = {});
  void name(Id target, const std::string& n);

  Id global_variable(Id pointer_type, spv::StorageClass sc);
  // A storage buffer at descriptor set 0, `binding`; read-only ones are NonWritable.
  Id storage_buffer(Id elem, uint32_t stride, uint32_t binding, bool read_only);
  // A uniform texel buffer of u32 texels at descriptor set 0, `binding` (an OpTypeImage of
  // Dim Buffer, sampled, format left to the view), for OpImageFetch.
  Id uniform_texel_buffer(uint32_t binding);
  Id type_texel_buffer();
  // The x component of a uvec3 compute built-in (GlobalInvocationId, LocalInvocationId,
  // WorkgroupId), loaded once in the entry block.
  Id builtin_x(spv::BuiltIn builtin);
  // A scalar u32 built-in (SubgroupId, SubgroupLocalInvocationId).
  Id builtin_u32(spv::BuiltIn builtin);
  // Invocations numbered subgroup by subgroup: SubgroupId * SubgroupSize +
  // SubgroupLocalInvocationId.
  Id subgroup_numbering();
  // Whether a workgroup of `size` invocations runs in full subgroups: only then is
  // subgroup_numbering a permutation of LocalInvocationId (Vulkan promises full subgroups
  // only where a pipeline asks for them).
  Id full_subgroups(uint32_t size);
  // The u32 at offset 0 of the module's push-constant block (declared on first use), loaded
  // where it is used (value-numbered and hoisted). The runtime pushes zeros: it is a zero the
  // driver cannot know when it compiles the module (opaque, Emitter::float_literal).
  Id push_constant_zero();
  // `value` (a 32- or 64-bit int or float of `type`) XOR'd on its bits with a zero derived
  // from the push-constant word: the same value, but one no driver can fold. (OR'd, a bit
  // already set in the value would stay provably set: 255 | z is 255 where z is at most 1,
  // and 1e-45's single bit the same.) Each value gets a zero of its own; the same value,
  // the same result.
  Id opaque(Id value, Id type);
  // `id`, or opaque(id) where the driver could fold it to a constant when it compiles the
  // module: pure arithmetic on constants only. A driver's algebraic rules match a pattern's
  // 0.0 against -0.0 (Mesa 22.3 turns select(c, -0.0, 1.0) into b2f(!c) = +0.0), so values
  // the driver derives must not meet selects and arithmetic as constants.
  Id unfoldable(Id id);
  // `id`, or opaque(id) where the driver knows its value when it compiles the module: a
  // constant too. For the operands of comparisons, whose folds drivers get wrong with NaN
  // (NVIDIA's 580 made clip(abs(NaN), -2.5, -1.0) -1, abs(x) being above -1.0 "always").
  Id unknown(Id id);
  // Bytes of the push-constant block the module declares (0 or 4).
  uint32_t push_constant_bytes() const { return push_constant_ ? 4 : 0; }
  Id type_array(Id elem, uint32_t length);
  // An array in Workgroup storage (shared memory), one per call.
  Id workgroup_array(Id elem, uint32_t length);
  // While set, emulated f64 multiplies, divides and fmas take soft_f64.h's *_normal forms:
  // the caller promises every operand zero or normal and every exact result zero or of a
  // normal magnitude. The math library sets it around steps on reduced arguments. Native
  // f64 is unaffected.
  void set_normal_range(bool on) { normal_range_ = on; }
  bool normal_range() const { return normal_range_; }
  // While set, emulated f64 multiplies outside a normal range branch to the *_normal form
  // where their operands and product are normal (soft::f64_mul_branching): for devices
  // whose branches skip the side no invocation takes (codegen/targets: branches_to_common_cases).
  void set_common_case_branches(bool on) { common_case_branches_ = on; }
  bool common_case_branches() const { return common_case_branches_; }
  // While set, emulated f64 routines may compute on 64-bit integers: for devices with
  // shaderInt64 whose s64 is not emulated (Apple's, Intel Arc's), where a 64-bit add keeps
  // its carry in the driver's add-with-carry instructions and 32-bit words' carries are
  // compares.
  void set_native_int64(bool on) { native_int64_ = on; }
  bool native_int64() const { return native_int64_ && !emulate_i64_; }
  // A table of u32 words that kernels read and never write: a Private array with the words
  // as its initializer (drivers place such arrays in constant memory), one per content.
  Id constant_words(const std::vector<uint32_t>& words);
  // The word of a constant_words table at a computed index.
  Id table_word(Id table, Id index);

  // ---- the function ----
  // Opens "main" with its entry block at level 0.
  void begin_main();
  // An extra execution mode of "main" (besides LocalSize).
  void execution_mode(spv::ExecutionMode mode, const Words& literals);
  // Closes "main", declares it as the GLCompute entry point with this local size.
  void end_main(uint32_t local_x, uint32_t local_y = 1, uint32_t local_z = 1);

  // A pure instruction: value-numbered and hoisted. `literals` follow the id operands.
  Id op(spv::Op opcode, Id type, const std::vector<Id>& ids, const Words& literals = {});
  Id ext(GLSLstd450 inst, Id type, const std::vector<Id>& ids);
  // An instruction with side effects or no result, emitted in the current block.
  void op_void(spv::Op opcode, const Words& operands);
  // An instruction with a result that must stay where it is (e.g. a load of shared memory).
  Id op_in_place(spv::Op opcode, Id type, const std::vector<Id>& ids);
  // barrier() in GLSL: all invocations of the workgroup, workgroup memory made visible.
  void workgroup_barrier();
  // A control barrier over `scope` (Workgroup, or Subgroup for a workgroup that is one
  // subgroup) that makes storage-buffer and shared-memory writes visible across it.
  void storage_barrier(spv::Scope scope);

  // Structured loop. `carried` values start as `init`; the loop runs while
  // cond(carried) is true and body(carried) returns the next values. Returns
  // the carried values after the loop. The body runs at most `max_trips` times
  // each time the loop is entered (see loop_steps).
  using Values = std::vector<Id>;
  Values loop(const std::vector<Id>& types, const Values& init, const std::function<Id(const Values&)>& cond,
              const std::function<Values(const Values&)>& body, uint64_t max_trips);
  // The next loop's OpLoopMerge asks the driver not to unroll it.
  void dont_unroll_next_loop() { loop_control_ = spv::LoopControlDontUnrollMask; }
  // The loop over a kernel's positions (elements, rows, tiles): the steps of the loops in
  // its body are counted per trip of it (LoopSteps::per_trip), its own steps not at all,
  // so that the caller can bound an invocation's steps for any trip count.
  Values position_loop(const std::vector<Id>& types, const Values& init, const std::function<Id(const Values&)>& cond,
                       const std::function<Values(const Values&)>& body);

  // Loop steps, an upper bound on the loop iterations of one invocation: each time a loop
  // runs it takes its trips + 1 steps (the last test of the condition), and each loop in
  // its body one more. They matter because lavapipe's gallivm ends every loop of a shader
  // once one invocation's steps reach 65535 (its loop limiter), whatever the loops'
  // conditions say. gallivm branches by masks: code that no invocation runs still runs
  // with none active (the branch not taken, the body on the test that ends a loop), each
  // loop in it for one step.
  struct LoopSteps {
    uint64_t outside = 0;   // in loops outside the position loop (saturating)
    uint64_t per_trip = 0;  // in loops inside it, per trip of the position loop (saturating)
    uint64_t loops = 0;     // loops emitted: what code emitted in between takes with no invocation active
  };
  const LoopSteps& loop_steps() const { return steps_; }
  // Structured if/else whose branches each yield `types.size()` values; returns the merged values.
  Values if_else(Id cond, const std::vector<Id>& types, const std::function<Values()>& then_fn,
                 const std::function<Values()>& else_fn);
  void if_then(Id cond, const std::function<void()>& then_fn);

  int level() const { return static_cast<int>(scopes_.size()) - 1; }
  // The level of the scope that defines `id` (0 for globals and constants).
  int level_of(Id id) const;
  int level_of(const std::vector<Id>& ids) const;
  // Runs fn with `lvl` as the current level (hoisting a construct out of deeper ones), or
  // the hoist floor where that is deeper.
  template <class F>
  auto at_level(int lvl, F&& fn) {
    suspend_above(std::max(lvl, hoist_floor_));
    struct Resume {
      Builder* b;
      ~Resume() { b->resume(); }
    } resume_on_exit{this};
    return fn();
  }

  // Constructs are hoisted no shallower than this level: code that reads memory written
  // earlier in the same invocation (a serial loop's stages) must stay after the writes.
  int hoist_floor() const { return hoist_floor_; }
  void set_hoist_floor(int lvl) { hoist_floor_ = lvl; }

  // Caller-side memoisation in the scope of `level`, same lifetime rules as value numbering.
  const Id* memo_find(const Words& key) const;
  void memo_put(const Words& key, Id value, int lvl);

  Words finish();

 private:
  bool converts_f16_ = false;
  struct Block;
  struct Phi {
    Id result, type;  // type: as declared (an emulated type's uvec2)
    std::vector<std::pair<Id, Block*>> incoming;
  };
  struct Block {
    Id label;
    std::vector<std::unique_ptr<Phi>> phis;
    Words body;
    Words terminator;  // may include the OpSelectionMerge/OpLoopMerge in front of the branch
    std::vector<Block*> successors;
  };
  struct Scope {
    Block* open;                 // where instructions of this level are appended
    std::map<Words, Id> memo;    // value numbering and caller memoisation
    uint64_t runs = 1;           // how often this level's code runs: per invocation, or per
    bool in_positions = false;   // trip of the position loop when in_positions
    uint64_t loops = 0;          // loops emitted inside this level
  };

  Block* new_block();
  Block* open_block() const;
  void set_branch(Block* from, Block* to);
  void redirect_phis(Block* from, Block* to);
  Block* split_for_construct(Block** merge_out);
  Values structured_loop(const std::vector<Id>& types, const Values& init, const std::function<Id(const Values&)>& cond,
                         const std::function<Values(const Values&)>& body, uint64_t body_runs, bool in_positions);
  // A new level whose code runs as often as the current one's (set otherwise for loop bodies).
  void push_scope(Block* open);
  void pop_scope();
  void set_level(Id id, int lvl);
  void suspend_above(int lvl);
  void resume();
  Id declare_type(spv::Op opcode, const Words& operands);
  Id declare_constant(spv::Op opcode, Id type, const Words& operands);
  Id emit_pure(spv::Op opcode, Id type, const Words& operands, const std::vector<Id>& placement_ids);
  void set_type(Id id, Id type);
  // The declared type for `type`: uvec2 for an emulated one.
  Id real_type(Id type);
  // Whether op(opcode, type, ids) computes on an emulated value: its result is of an emulated
  // type, or a scalar from an emulated operand (comparisons, conversions).
  bool lowers(spv::Op opcode, Id type, const std::vector<Id>& ids) const;
  Id lower(spv::Op opcode, Id type, const std::vector<Id>& ids, const Words& literals);
  // lower()'s f64 arithmetic and conversions (0 for any other opcode), and its s64/u64 ones.
  Id lower_float(Soft64& s, spv::Op opcode, Id type, const std::vector<Id>& ids, const std::vector<Id>& a);
  Id lower_integer(Soft64& s, spv::Op opcode, Id type, const std::vector<Id>& ids, const std::vector<Id>& a);
  bool is_64_bit_type(Id type) const;
  // A routine's uvec2 result r as a value of `type`: named where emulated, bitcast where native 64-bit.
  Id lowered(Id r, Id type);
  Id lower_ext(GLSLstd450 inst, Id type, const std::vector<Id>& ids);
  Id emulated_constant(Id type, uint64_t bits);
  // (bits, lanes) of a float scalar or vector type declared here; (0, 0) for any other.
  std::pair<int, uint32_t> float_shape(Id type) const;
  // OpIsNan/OpIsInf of x on its bits, or 0 where x's width keeps the float instruction.
  Id special_on_bits(spv::Op opcode, Id type, Id x);
  // r (a uvec2) as a value of the emulated `type`.
  Id named(Id r, Id type);
  static void append_inst(Words& out, spv::Op opcode, const Words& operands);
  Words serialize_function() const;

  Id next_id_ = 1;
  std::vector<spv::Capability> capabilities_;
  std::vector<std::string> extensions_;
  Id glsl_ = 0;
  Words names_, annotations_, globals_;  // globals_: types, constants, global variables in order
  std::map<Words, Id> types_, constants_;
  std::map<Id, int> scalar_bytes_;
  std::map<Id, std::pair<int, uint64_t>> int_constants_;  // id -> (bits, value)
  std::map<Id, std::pair<Id, uint32_t>> offsets_;         // id -> (base, offset), see split_offset
  void note_offset(spv::Op opcode, Id id, Id a, Id b);
  // Ids the driver can compute when it compiles the module -> (type, false for constants,
  // true for instructions on them).
  std::map<Id, std::pair<Id, bool>> foldable_;
  std::map<std::pair<Id, uint32_t>, Id> buffer_pointers_;
  std::map<Id, Id> tables_;  // initializer -> constant_words variable
  std::map<uint32_t, Id> builtins_;
  Id push_constant_ = 0;  // the variable of the push-constant block
  uint32_t opaque_masks_ = 0;  // the last mask opaque() used
  std::map<std::pair<Id, Id>, Id> opaque_of_;  // (value, type) -> opaque(value, type) at level 0
  std::vector<Id> interface_;
  bool emulate_f64_ = false, emulate_i64_ = false;
  bool normal_range_ = false;
  bool common_case_branches_ = false;
  bool native_int64_ = false;
  bool bits_tested_f32_ = false, bits_tested_f64_ = false;
  Id emulated_f64_ = 0, emulated_i64_ = 0;
  std::vector<Id> type_of_;  // by id
  std::map<std::pair<Id, uint64_t>, Id> emulated_constants_;  // (emulated type, bits) -> uvec2

  Id main_ = 0, void_type_ = 0, main_type_ = 0;
  Words entry_and_modes_, extra_modes_;
  std::vector<std::unique_ptr<Block>> blocks_;  // creation order; serialised in reverse post-order
  std::vector<Scope> scopes_;
  std::vector<std::vector<Scope>> suspended_;
  std::vector<int> levels_;  // by id
  bool finished_main_ = false;
  uint32_t loop_control_ = spv::LoopControlMaskNone;
  int hoist_floor_ = 0;
  LoopSteps steps_;
};

}  // namespace nxv::codegen::spirv
