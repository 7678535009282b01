// The nx_vulkan graph IR: one node per Nx.Defn.Expr operation.
//
// A Graph is a list of nodes in topological order (every argument is defined
// before it is used). Every node carries its result type(s). Ops, argument
// order and attribute names follow Nx; docs/ir.md is the normative schema.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace nxv::ir {

// Nx's real types. Booleans are u8, as in Nx.
enum class DType : uint8_t { S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64 };

const char* dtype_name(DType t);                  // "f32", "bf16", ...
DType parse_dtype(const std::string& name);       // throws IrError on unknown/complex names
int dtype_bits(DType t);
inline int dtype_bytes(DType t) { return dtype_bits(t) / 8; }
bool is_float(DType t);      // f16 bf16 f32 f64
bool is_signed_int(DType t); // s*
bool is_unsigned_int(DType t);
inline bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }

// Nx.Type.merge/2 and Nx.Type.to_floating/1.
DType merge_types(DType a, DType b);
DType to_floating(DType t);

using Shape = std::vector<int64_t>;
// Throws IrError for a negative extent or a count beyond int64 (the verifier checks every
// node's results, so past it these never throw).
int64_t num_elements(const Shape& s);
std::string shape_string(const Shape& s);  // "[2,3]"

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  int64_t num_elements() const { return ir::num_elements(shape); }
  int64_t byte_size() const;  // throws IrError beyond int64, as num_elements
  bool operator==(const TensorType&) const = default;
};
std::string to_string(const TensorType& t);  // "f32[2,3]"

// A host-side tensor value.
struct Literal {
  TensorType type;
  std::vector<uint8_t> data;  // row-major, little-endian, type.byte_size() bytes
};

using NodeId = int64_t;
struct Graph;

struct Node {
  NodeId id = -1;
  std::string op;
  std::vector<NodeId> args;
  // One entry for ordinary ops; several for ops that produce tuples
  // (while, cond, kernel with several outputs), whose parts are read by `elem`.
  std::vector<TensorType> results;
  nlohmann::json attrs = nlohmann::json::object();
  // Nested graphs: "body" of a kernel/fusion, "condition"/"body" of while,
  // "branch0".."branchN" of cond. Their parameters index this node's args.
  std::map<std::string, std::shared_ptr<Graph>> regions;

  const TensorType& type() const;  // the single result; throws IrError for tuples
  bool is_tuple() const { return results.size() != 1; }
};

struct Graph {
  int version = 1;
  std::string name;
  std::vector<Node> nodes;        // topological order
  std::vector<NodeId> outputs;    // the (flattened) results of the graph

  // Lookup by id; throws IrError("dangling id") when absent.
  const Node& node(NodeId id) const;
  Node& node(NodeId id);
  bool has_node(NodeId id) const;
  // Must be called after nodes are added/removed/reordered by a pass.
  void reindex();
  NodeId next_id() const;  // one past the largest id in use
  // Parameters sorted by their "index" attribute.
  std::vector<const Node*> parameters() const;

 private:
  std::unordered_map<NodeId, size_t> index_;
};

// Appends a one-result node with the fresh id `next++` to `out`; returns its id.
NodeId append_node(std::vector<Node>& out, NodeId& next, const std::string& op, std::vector<NodeId> args, DType t,
                   Shape shape, nlohmann::json attrs = nlohmann::json::object());

// Every error about a graph: names the node id and op when there is one.
class IrError : public std::runtime_error {
 public:
  explicit IrError(const std::string& msg) : std::runtime_error(msg) {}
  IrError(const Node& n, const std::string& msg);
  IrError(NodeId id, const std::string& op, const std::string& msg);
};

}  // namespace nxv::ir
