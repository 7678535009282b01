// value(node, index): memoisation and dispatch to the op families.
#include "codegen/emitter.h"
#include "ir/ops.h"

#include <atomic>
#include <set>

namespace nxv::codegen {

namespace {
// Memo keys start with a tag no SPIR-V id reaches; each emitter of a module its own.
uint32_t next_memo_tag() {
  static std::atomic<uint32_t> tag{0xFFFFFFFFu};
  return tag--;
}

// Key on whichever form of the index is known; equal forms give equal ids because index
// arithmetic is value-numbered.
spirv::Words memo_key(uint32_t tag, const ir::Node& node, const Index& index) {
  spirv::Words key{tag, uint32_t(node.id), index.linear ? 1u : 0u};
  if (index.linear) key.push_back(index.linear);
  else key.insert(key.end(), index.dims.begin(), index.dims.end());
  return key;
}
}  // namespace

Emitter::Emitter(spirv::Builder& builder, const DeviceCaps& c, const ir::Graph& body)
    : b(builder), caps(c), body_(body), memo_tag_(next_memo_tag()) {}

void Emitter::provide(const ir::Node& node, const Index& index, Id v) {
  b.memo_put(memo_key(memo_tag_, node, index), v, b.level());
}

Id Emitter::value(const ir::Node& node, Index index) {
  spirv::Words key = memo_key(memo_tag_, node, index);
  if (const Id* hit = b.memo_find(key)) return *hit;
  Id v;
  try {
    v = compute(node, index);
  } catch (const ir::IrError&) {
    throw;
  } catch (const spirv::Unsupported& e) {
    throw ir::IrError(node, e.what());
  } catch (const std::exception& e) {  // malformed attrs (wrong JSON types, axes out of range)
    throw ir::IrError(node, std::string("malformed attributes: ") + e.what());
  }
  // A value the driver could derive from literals (constant-fold off, or an op it leaves)
  // reaches the ops that use it as a value it cannot fold (spirv::Builder::unfoldable).
  if (node.op != "constant") v = b.unfoldable(v);
  std::vector<Id> key_ids(key.begin() + 3, key.end());
  b.memo_put(key, v, std::max(b.level_of(key_ids), b.level_of(v)));
  return v;
}

const BufferRef* Emitter::input_buffer(const ir::Node& param) const {
  const int64_t i = param.attrs.value("index", int64_t(-1));
  if (param.op != "parameter" || i < 0 || size_t(i) < bound_.size() || size_t(i) >= inputs_.size()) return nullptr;
  return &inputs_[size_t(i)];
}

const BufferRef* Emitter::texel_input(const ir::Node& param) const {
  if (!input_buffer(param)) return nullptr;
  auto it = texel_inputs_.find(param.attrs.value("index", int64_t(-1)));
  return it == texel_inputs_.end() ? nullptr : &it->second;
}

Id Emitter::compute(const ir::Node& node, Index& index) {
  const std::string& op = node.op;
  if (op == "parameter") {
    int64_t i = node.attrs.value("index", int64_t(-1));
    if (i >= 0 && size_t(i) < bound_.size()) return bound_[i];
    if (i < 0 || size_t(i) >= inputs_.size())
      throw ir::IrError(node, "parameter index " + std::to_string(i) + " has no kernel argument");
    return load(inputs_[i], linear(index));
  }
  if (op == "constant") {
    if (!node.attrs.contains("value")) throw ir::IrError(node, "constant without attrs.value");
    return constant_attr(node, node.attrs["value"], node.type().dtype);
  }
  if (op == "metadata") return value(arg(node, 0), index);
  switch (ir::op_family(op)) {
    case ir::OpFamily::FloatUnary:
    case ir::OpFamily::Unary:
    case ir::OpFamily::Predicate: return emit_unary(node, index);
    case ir::OpFamily::Binary: return emit_binary(node, index);
    case ir::OpFamily::Compare: return emit_compare(node, index);
    case ir::OpFamily::Select:
    case ir::OpFamily::Convert: return emit_misc_elementwise(node, index);
    case ir::OpFamily::IndexMap:
    case ir::OpFamily::PutSlice: return emit_index_op(node, index);
    case ir::OpFamily::Gather: return emit_gather(node, index);
    case ir::OpFamily::Scatter: return emit_indexed(node, index);
    case ir::OpFamily::Reduction: return emit_reduction(node, index);
    case ir::OpFamily::ArgReduction: return emit_argreduce(node, index);
    case ir::OpFamily::Scan: return emit_scan_element(node, index);
    case ir::OpFamily::Sort:
      throw ir::IrError(node, "a sort runs as a kernel of its own (codegen/sort.h), not as a value inside another kernel");
    default: break;
  }
  if (op == "iota" || op == "eye") return emit_index_op(node, index);
  if (op == "dot") return emit_dot(node, index);
  if (op == "elem" && arg(node, 0).op == "repeat") return emit_repeat_result(node, index);
  if (op == "tensor")
    throw ir::IrError(node, "tensor literal inside a kernel body: lowering must pass it as a kernel argument");
  throw ir::IrError(node, "op not supported inside a kernel body");
}

// Nx broadcasting: operand axes align to the right; size-1 axes stretch.
Id Emitter::operand_at(const ir::Node& node, size_t k, Index& index) {
  const ir::Node& a = arg(node, k);
  const ir::Shape& as = a.type().shape;
  if (as == index.shape) return value(a, index);
  if (ir::num_elements(as) == 1) return value(a, index_from_dims(as, std::vector<Id>(as.size(), u32c(0))));
  auto d = dims(index);
  if (as.size() > d.size()) throw ir::IrError(node, "operand " + std::to_string(k) + " has a higher rank than the result");
  std::vector<Id> ad;
  const size_t off = d.size() - as.size();
  for (size_t i = 0; i < as.size(); ++i) {
    if (as[i] == 1) ad.push_back(u32c(0));
    else if (as[i] == index.shape[off + i]) ad.push_back(d[off + i]);
    else throw ir::IrError(node, "operand " + std::to_string(k) + " does not broadcast to the result shape");
  }
  return value(a, index_from_dims(as, std::move(ad)));
}

std::vector<Id> Emitter::operands_at(const ir::Node& node, Index& index) {
  std::vector<Id> v;
  for (size_t k = 0; k < node.args.size(); ++k) v.push_back(operand_at(node, k, index));
  return v;
}

}  // namespace nxv::codegen
