// Module-level parts of the builder: declarations, deduplication, serialisation.
#include "codegen/spirv_builder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace nxv::codegen::spirv {

Words string_literal(const std::string& s) {
  Words w((s.size() + 4) / 4, 0);  // always room for the terminating NUL
  for (size_t i = 0; i < s.size(); ++i) w[i / 4] |= uint32_t(uint8_t(s[i])) << (8 * (i % 4));
  return w;
}

Builder::Builder() { capability(spv::CapabilityShader); }
Builder::~Builder() = default;

void Builder::append_inst(Words& out, spv::Op opcode, const Words& operands) {
  out.push_back(uint32_t(operands.size() + 1) << spv::WordCountShift | uint32_t(opcode));
  out.insert(out.end(), operands.begin(), operands.end());
}

void Builder::capability(spv::Capability c) {
  if (std::find(capabilities_.begin(), capabilities_.end(), c) == capabilities_.end()) capabilities_.push_back(c);
}

void Builder::extension(const std::string& name) {
  if (std::find(extensions_.begin(), extensions_.end(), name) == extensions_.end()) extensions_.push_back(name);
}

Id Builder::glsl_std_450() {
  if (!glsl_) glsl_ = fresh_id();
  return glsl_;
}

Id Builder::declare_type(spv::Op opcode, const Words& operands) {
  Words key{uint32_t(opcode)};
  key.insert(key.end(), operands.begin(), operands.end());
  if (auto it = types_.find(key); it != types_.end()) return it->second;
  Id id = fresh_id();
  Words ops{id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  append_inst(globals_, opcode, ops);
  types_.emplace(std::move(key), id);
  return id;
}

Id Builder::declare_constant(spv::Op opcode, Id type, const Words& operands) {
  Words key{uint32_t(opcode), type};
  key.insert(key.end(), operands.begin(), operands.end());
  if (auto it = constants_.find(key); it != constants_.end()) return it->second;
  Id id = fresh_id();
  Words ops{type, id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  append_inst(globals_, opcode, ops);
  constants_.emplace(std::move(key), id);
  foldable_.emplace(id, std::pair{type, false});
  set_type(id, type);
  return id;
}

Id Builder::type_void() { return declare_type(spv::OpTypeVoid, {}); }
Id Builder::type_bool() { return declare_type(spv::OpTypeBool, {}); }
// Types wider or narrower than 32 bits bring their capability along. 8/16-bit
// integers are only ever loaded, stored and converted, which the storage
// capabilities allow without Int8/Int16.
Id Builder::type_int(int bits) {
  if (bits == 64 && emulate_i64_) {
    if (!emulated_i64_) emulated_i64_ = fresh_id(), scalar_bytes_[emulated_i64_] = 8;
    return emulated_i64_;
  }
  if (bits == 64) capability(spv::CapabilityInt64);
  if (bits == 16) {
    capability(spv::CapabilityStorageBuffer16BitAccess);
    extension("SPV_KHR_16bit_storage");
  }
  if (bits == 8) {
    capability(spv::CapabilityStorageBuffer8BitAccess);
    extension("SPV_KHR_8bit_storage");
  }
  Id id = declare_type(spv::OpTypeInt, {uint32_t(bits), 0});
  scalar_bytes_[id] = bits / 8;
  return id;
}
Id Builder::type_float(int bits) {
  if (bits == 64 && emulate_f64_) {
    if (!emulated_f64_) emulated_f64_ = fresh_id(), scalar_bytes_[emulated_f64_] = 8;
    return emulated_f64_;
  }
  if (bits == 64) capability(spv::CapabilityFloat64);
  if (bits == 16) capability(spv::CapabilityFloat16);
  Id id = declare_type(spv::OpTypeFloat, {uint32_t(bits)});
  scalar_bytes_[id] = bits / 8;
  return id;
}
Id Builder::type_vector(Id elem, uint32_t n) {
  if (emulated(elem)) throw std::logic_error("spirv::Builder: no vectors of an emulated 64-bit type");
  return declare_type(spv::OpTypeVector, {elem, n});
}
Id Builder::type_pointer(spv::StorageClass sc, Id pointee) {
  return declare_type(spv::OpTypePointer, {uint32_t(sc), real_type(pointee)});
}
Id Builder::type_function(Id ret, const std::vector<Id>& params) {
  Words ops{ret};
  ops.insert(ops.end(), params.begin(), params.end());
  return declare_type(spv::OpTypeFunction, ops);
}
Id Builder::type_struct(const std::vector<Id>& members) { return declare_type(spv::OpTypeStruct, members); }

Id Builder::type_bfloat16() {
  capability(spv::Capability(5116));  // BFloat16TypeKHR
  capability(spv::Capability(5118));  // BFloat16CooperativeMatrixKHR
  extension("SPV_KHR_bfloat16");
  Id id = declare_type(spv::OpTypeFloat, {16, 0 /* FPEncoding BFloat16KHR */});
  scalar_bytes_[id] = 2;
  return id;
}

Id Builder::type_cooperative_matrix(bool nv, Id component, uint32_t rows, uint32_t cols, uint32_t use) {
  const Id scope = const_int(32, uint32_t(spv::ScopeSubgroup)), r = const_int(32, rows), c = const_int(32, cols);
  if (nv) {
    capability(spv::CapabilityCooperativeMatrixNV);
    extension("SPV_NV_cooperative_matrix");
    return declare_type(spv::OpTypeCooperativeMatrixNV, {component, scope, r, c});
  }
  capability(CapabilityCooperativeMatrixKHR);
  extension("SPV_KHR_cooperative_matrix");
  return declare_type(OpTypeCooperativeMatrixKHR, {component, scope, r, c, const_int(32, use)});
}

Id Builder::type_buffer_pointer(Id elem, uint32_t stride) {
  elem = real_type(elem);
  auto key = std::make_pair(elem, stride);
  if (auto it = buffer_pointers_.find(key); it != buffer_pointers_.end()) return it->second;
  // Not deduplicated through types_: the decorations make each array/struct distinct.
  Id array = fresh_id();
  append_inst(globals_, spv::OpTypeRuntimeArray, {array, elem});
  decorate(array, spv::DecorationArrayStride, {stride});
  Id block = fresh_id();
  append_inst(globals_, spv::OpTypeStruct, {block, array});
  decorate(block, spv::DecorationBlock);
  member_decorate(block, 0, spv::DecorationOffset, {0});
  Id ptr = type_pointer(spv::StorageClassStorageBuffer, block);
  buffer_pointers_.emplace(key, ptr);
  return ptr;
}

Id Builder::const_bool(bool v) { return declare_constant(v ? spv::OpConstantTrue : spv::OpConstantFalse, type_bool(), {}); }

Id Builder::const_int(int bits, uint64_t v) {
  if (bits < 64) v &= (uint64_t(1) << bits) - 1;
  const Id id = bits == 64 && emulate_i64_ ? emulated_constant(type_int(64), v)
                : bits == 64             ? declare_constant(spv::OpConstant, type_int(64), {uint32_t(v), uint32_t(v >> 32)})
                           : declare_constant(spv::OpConstant, type_int(bits), {uint32_t(v)});
  int_constants_.emplace(id, std::pair{bits, v});
  return id;
}

std::optional<uint64_t> Builder::int_constant(Id id) const {
  auto it = int_constants_.find(id);
  if (it == int_constants_.end()) return std::nullopt;
  return it->second.second;
}

Id Builder::const_f32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return declare_constant(spv::OpConstant, type_float(32), {bits});
}

Id Builder::const_f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  if (emulate_f64_) return emulated_constant(type_float(64), bits);
  return declare_constant(spv::OpConstant, type_float(64), {uint32_t(bits), uint32_t(bits >> 32)});
}

void Builder::decorate(Id target, spv::Decoration d, const Words& args) {
  Words ops{target, uint32_t(d)};
  ops.insert(ops.end(), args.begin(), args.end());
  append_inst(annotations_, spv::OpDecorate, ops);
}

void Builder::member_decorate(Id struct_type, uint32_t member, spv::Decoration d, const Words& args) {
  Words ops{struct_type, member, uint32_t(d)};
  ops.insert(ops.end(), args.begin(), args.end());
  append_inst(annotations_, spv::OpMemberDecorate, ops);
}

void Builder::name(Id target, const std::string& n) {
  Words ops{target};
  Words s = string_literal(n);
  ops.insert(ops.end(), s.begin(), s.end());
  append_inst(names_, spv::OpName, ops);
}

Id Builder::global_variable(Id pointer_type, spv::StorageClass sc) {
  Id id = fresh_id();
  append_inst(globals_, spv::OpVariable, {pointer_type, id, uint32_t(sc)});
  return id;
}

Id Builder::storage_buffer(Id elem, uint32_t stride, uint32_t binding, bool read_only) {
  Id var = global_variable(type_buffer_pointer(elem, stride), spv::StorageClassStorageBuffer);
  decorate(var, spv::DecorationDescriptorSet, {0});
  decorate(var, spv::DecorationBinding, {binding});
  if (read_only) decorate(var, spv::DecorationNonWritable);
  return var;
}

Id Builder::type_texel_buffer() {
  capability(spv::CapabilitySampledBuffer);
  return declare_type(spv::OpTypeImage, {type_int(32), uint32_t(spv::DimBuffer), 0, 0, 0, 1, uint32_t(spv::ImageFormatUnknown)});
}

Id Builder::uniform_texel_buffer(uint32_t binding) {
  Id var = global_variable(type_pointer(spv::StorageClassUniformConstant, type_texel_buffer()), spv::StorageClassUniformConstant);
  decorate(var, spv::DecorationDescriptorSet, {0});
  decorate(var, spv::DecorationBinding, {binding});
  return var;
}

Id Builder::builtin_x(spv::BuiltIn builtin) {
  if (auto it = builtins_.find(uint32_t(builtin)); it != builtins_.end()) return it->second;
  Id u32 = type_int(32);
  Id var = global_variable(type_pointer(spv::StorageClassInput, type_vector(u32, 3)), spv::StorageClassInput);
  decorate(var, spv::DecorationBuiltIn, {uint32_t(builtin)});
  interface_.push_back(var);
  Id x = op(spv::OpCompositeExtract, u32, {op(spv::OpLoad, type_vector(u32, 3), {var})}, {0});
  builtins_.emplace(uint32_t(builtin), x);
  return x;
}

Id Builder::builtin_u32(spv::BuiltIn builtin) {
  if (auto it = builtins_.find(uint32_t(builtin)); it != builtins_.end()) return it->second;
  Id u32 = type_int(32);
  Id var = global_variable(type_pointer(spv::StorageClassInput, u32), spv::StorageClassInput);
  decorate(var, spv::DecorationBuiltIn, {uint32_t(builtin)});
  interface_.push_back(var);
  Id x = op(spv::OpLoad, u32, {var});
  builtins_.emplace(uint32_t(builtin), x);
  return x;
}

Id Builder::subgroup_numbering() {
  capability(spv::CapabilityGroupNonUniform);
  const Id u32 = type_int(32);
  return op(spv::OpIAdd, u32, {op(spv::OpIMul, u32, {builtin_u32(spv::BuiltInSubgroupId), builtin_u32(spv::BuiltInSubgroupSize)}),
                               builtin_u32(spv::BuiltInSubgroupLocalInvocationId)});
}

Id Builder::full_subgroups(uint32_t size) {
  capability(spv::CapabilityGroupNonUniform);
  const Id u32 = type_int(32);
  return op(spv::OpIEqual, type_bool(),
            {op(spv::OpIMul, u32, {builtin_u32(spv::BuiltInSubgroupSize), builtin_u32(spv::BuiltInNumSubgroups)}), const_int(32, size)});
}

Id Builder::push_constant_zero() {
  Id u32 = type_int(32);
  if (!push_constant_) {
    Id block = fresh_id();  // struct { uint zero; }, distinct from deduplicated types
    append_inst(globals_, spv::OpTypeStruct, {block, u32});
    decorate(block, spv::DecorationBlock);
    member_decorate(block, 0, spv::DecorationOffset, {0});
    push_constant_ = global_variable(type_pointer(spv::StorageClassPushConstant, block), spv::StorageClassPushConstant);
  }
  Id field = op(spv::OpAccessChain, type_pointer(spv::StorageClassPushConstant, u32), {push_constant_, const_int(32, 0)});
  return op(spv::OpLoad, u32, {field});
}

Id Builder::opaque(Id value, Id type) {
  if (auto it = opaque_of_.find({value, type}); it != opaque_of_.end()) return it->second;
  const int bits = scalar_bytes_.at(type) * 8;
  auto f = types_.find(Words{uint32_t(spv::OpTypeFloat), uint32_t(bits)});
  const bool is_float = (f != types_.end() && f->second == type) || (type && type == emulated_f64_);
  Id it = type_int(bits);
  // A zero of its own (the push-constant word AND'd with a mask no other call uses): NIR
  // rewrites select(c, x | z, y | z) to select(c, x, y) | z, where x and y meet again, and
  // may do as much for ^.
  opaque_masks_ = opaque_masks_ == 0xFFFFFFFFu ? 1 : opaque_masks_ + 1;
  Id zero = op(spv::OpBitwiseAnd, type_int(32), {push_constant_zero(), const_int(32, opaque_masks_)});
  if (bits == 64) zero = op(spv::OpUConvert, it, {zero});
  Id r = op(spv::OpBitwiseXor, it, {is_float ? op(spv::OpBitcast, it, {value}) : value, zero});
  if (is_float) r = op(spv::OpBitcast, type, {r});
  if (level_of(r) == 0) opaque_of_.emplace(std::pair{value, type}, r);  // visible everywhere
  return r;
}

Id Builder::unfoldable(Id id) {
  auto it = foldable_.find(id);
  return it == foldable_.end() || !it->second.second ? id : unknown(id);
}

Id Builder::unknown(Id id) {
  auto it = foldable_.find(id);
  if (it == foldable_.end()) return id;
  auto bytes = scalar_bytes_.find(it->second.first);
  if (bytes == scalar_bytes_.end() || bytes->second < 4) return id;  // bools, vectors
  return opaque(id, it->second.first);
}

Id Builder::type_array(Id elem, uint32_t length) {
  return declare_type(spv::OpTypeArray, {real_type(elem), const_int(32, length)});
}

Id Builder::workgroup_array(Id elem, uint32_t length) {
  return global_variable(type_pointer(spv::StorageClassWorkgroup, type_array(elem, length)),
                         spv::StorageClassWorkgroup);
}

Id Builder::constant_words(const std::vector<uint32_t>& words) {
  const Id array = type_array(type_int(32), uint32_t(words.size()));
  Words elems;
  for (uint32_t w : words) elems.push_back(const_int(32, w));
  const Id init = declare_constant(spv::OpConstantComposite, array, elems);
  if (auto it = tables_.find(init); it != tables_.end()) return it->second;
  const Id var = fresh_id(), pointer = type_pointer(spv::StorageClassPrivate, array);
  append_inst(globals_, spv::OpVariable, {pointer, var, uint32_t(spv::StorageClassPrivate), init});
  tables_.emplace(init, var);
  // A driver folds a load at a constant index to the word: as foldable as a constant.
  foldable_.emplace(var, std::pair{pointer, false});
  return var;
}

Id Builder::table_word(Id table, Id index) {
  const Id u32 = type_int(32);
  return op(spv::OpLoad, u32, {op(spv::OpAccessChain, type_pointer(spv::StorageClassPrivate, u32), {table, index})});
}

Words Builder::finish() {
  if (!finished_main_) throw std::logic_error("spirv::Builder::finish before end_main");
  Words out{spv::MagicNumber, 0x00010300 /* SPIR-V 1.3: core in Vulkan 1.1 */, 0, next_id_, 0};
  for (auto c : capabilities_) append_inst(out, spv::OpCapability, {uint32_t(c)});
  for (const auto& e : extensions_) append_inst(out, spv::OpExtension, string_literal(e));
  if (glsl_) {
    Words ops{glsl_};
    Words s = string_literal("GLSL.std.450");
    ops.insert(ops.end(), s.begin(), s.end());
    append_inst(out, spv::OpExtInstImport, ops);
  }
  append_inst(out, spv::OpMemoryModel, {uint32_t(spv::AddressingModelLogical), uint32_t(spv::MemoryModelGLSL450)});
  out.insert(out.end(), entry_and_modes_.begin(), entry_and_modes_.end());
  out.insert(out.end(), names_.begin(), names_.end());
  out.insert(out.end(), annotations_.begin(), annotations_.end());
  out.insert(out.end(), globals_.begin(), globals_.end());
  Words fn = serialize_function();
  out.insert(out.end(), fn.begin(), fn.end());
  return out;
}

}  // namespace nxv::codegen::spirv
