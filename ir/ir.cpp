#include "ir/ir.h"

#include <algorithm>

namespace nxv::ir {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  int bits;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::S8, "s8", 8},     {DType::S16, "s16", 16},   {DType::S32, "s32", 32}, {DType::S64, "s64", 64},
    {DType::U8, "u8", 8},     {DType::U16, "u16", 16},   {DType::U32, "u32", 32}, {DType::U64, "u64", 64},
    {DType::F16, "f16", 16},  {DType::BF16, "bf16", 16}, {DType::F32, "f32", 32}, {DType::F64, "f64", 64},
};
const DTypeInfo& info(DType t) { return kDTypes[static_cast<int>(t)]; }

// Nx.Type's kind order for merge: u < s < bf < f.
int kind_rank(DType t) {
  if (is_unsigned_int(t)) return 0;
  if (is_signed_int(t)) return 1;
  if (t == DType::BF16) return 2;
  return 3;
}
DType make(int rank, int bits) {
  switch (rank) {
    case 0: return bits == 8 ? DType::U8 : bits == 16 ? DType::U16 : bits == 32 ? DType::U32 : DType::U64;
    case 1: return bits == 8 ? DType::S8 : bits == 16 ? DType::S16 : bits == 32 ? DType::S32 : DType::S64;
    case 2: return DType::BF16;
    default: return bits == 16 ? DType::F16 : bits == 32 ? DType::F32 : DType::F64;
  }
}
}  // namespace

const char* dtype_name(DType t) { return info(t).name; }
int dtype_bits(DType t) { return info(t).bits; }

DType parse_dtype(const std::string& name) {
  for (const auto& d : kDTypes)
    if (name == d.name) return d.t;
  if (name.size() > 1 && name[0] == 'c')
    throw IrError("complex type " + name + " is not supported");
  throw IrError("unknown type '" + name + "'");
}

bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
bool is_signed_int(DType t) { return t == DType::S8 || t == DType::S16 || t == DType::S32 || t == DType::S64; }
bool is_unsigned_int(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }

DType merge_types(DType a, DType b) {
  int ra = kind_rank(a), rb = kind_rank(b);
  if (ra == rb) return make(ra, std::max(dtype_bits(a), dtype_bits(b)));
  DType lo = ra < rb ? a : b, hi = ra < rb ? b : a;
  if (is_unsigned_int(lo) && is_signed_int(hi))
    return make(1, std::max(std::min(dtype_bits(lo) * 2, 64), dtype_bits(hi)));
  return hi;
}

DType to_floating(DType t) { return is_float(t) ? t : DType::F32; }

// Zero axes do not excuse the others: every shape's nonzero extents must multiply without
// overflow, so that strides and offsets computed from any of its axes stay in range.
int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0) throw IrError("shape " + shape_string(s) + " has a negative extent");
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n)) throw IrError("shape " + shape_string(s) + " has more than 2^63 elements");
  }
  return empty ? 0 : n;
}

int64_t TensorType::byte_size() const {
  int64_t bytes;
  if (__builtin_mul_overflow(num_elements(), int64_t(dtype_bytes(dtype)), &bytes))
    throw IrError(ir::to_string(*this) + " takes more than 2^63 bytes");
  return bytes;
}

std::string shape_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string to_string(const TensorType& t) { return dtype_name(t.dtype) + shape_string(t.shape); }

const TensorType& Node::type() const {
  if (results.size() != 1)
    throw IrError(*this, "expected a single result, node has " + std::to_string(results.size()));
  return results[0];
}

IrError::IrError(const Node& n, const std::string& msg) : IrError(n.id, n.op, msg) {}
IrError::IrError(NodeId id, const std::string& op, const std::string& msg)
    : std::runtime_error("node " + std::to_string(id) + " (" + op + "): " + msg) {}

const Node& Graph::node(NodeId id) const {
  auto it = index_.find(id);
  if (it == index_.end() || it->second >= nodes.size() || nodes[it->second].id != id)
    throw IrError("dangling id " + std::to_string(id) + ": no such node in graph" + (name.empty() ? "" : " '" + name + "'"));
  return nodes[it->second];
}
Node& Graph::node(NodeId id) { return const_cast<Node&>(static_cast<const Graph*>(this)->node(id)); }

bool Graph::has_node(NodeId id) const {
  auto it = index_.find(id);
  return it != index_.end() && it->second < nodes.size() && nodes[it->second].id == id;
}

void Graph::reindex() {
  index_.clear();
  for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i].id] = i;
}

NodeId Graph::next_id() const {
  NodeId m = -1;
  for (const auto& n : nodes) m = std::max(m, n.id);
  return m + 1;
}

std::vector<const Node*> Graph::parameters() const {
  std::vector<const Node*> ps;
  for (const auto& n : nodes)
    if (n.op == "parameter") ps.push_back(&n);
  std::sort(ps.begin(), ps.end(),
            [](const Node* a, const Node* b) { return a->attrs.value("index", 0) < b->attrs.value("index", 0); });
  return ps;
}

NodeId append_node(std::vector<Node>& out, NodeId& next, const std::string& op, std::vector<NodeId> args, DType t,
                   Shape shape, nlohmann::json attrs) {
  Node m;
  m.id = next++;
  m.op = op;
  m.args = std::move(args);
  m.results = {{t, std::move(shape)}};
  m.attrs = std::move(attrs);
  out.push_back(std::move(m));
  return out.back().id;
}

}  // namespace nxv::ir
