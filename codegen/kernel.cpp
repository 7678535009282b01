// compile_kernel: bindings, capabilities, and the grid-stride loop that
// evaluates every result of the kernel's body at each output position.
#include "codegen/kernel.h"

#include <algorithm>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"

namespace nxv::codegen {

using ir::DType;

namespace {
constexpr int64_t kMaxElements = int64_t(1) << 31;  // indices are 32-bit

void check_types(const ir::Node& kernel, const ir::Graph& body, const DeviceCaps& caps, Emitter& e,
                 const std::vector<Binding>& bindings) {
  for (const auto& n : body.nodes)
    for (const auto& r : n.results) {
      e.require_type(n, r.dtype, false);
      if (r.num_elements() >= kMaxElements)
        throw ir::IrError(n, ir::to_string(r) + " has too many elements for 32-bit indexing");
    }
  for (const auto& bnd : bindings) e.require_type(kernel, bnd.dtype, true);
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
}  // namespace

KernelBinary compile_kernel(const ir::Node& kernel, const ir::Graph& parent, const DeviceCaps& caps) {
  if (kernel.op != "kernel") throw ir::IrError(kernel, "compile_kernel needs a kernel node");
  auto it = kernel.regions.find("body");
  if (it == kernel.regions.end() || !it->second) throw ir::IrError(kernel, "kernel without a body region");
  const ir::Graph& body = *it->second;
  if (body.outputs.size() != kernel.results.size())
    throw ir::IrError(kernel, "body has " + std::to_string(body.outputs.size()) + " outputs but the kernel " +
                                  std::to_string(kernel.results.size()) + " results");

  KernelBinary out;
  out.name = kernel_name(kernel, body);
  out.fused_nodes = fused_nodes(kernel, body);
  std::vector<DType> arg_types(kernel.args.size());
  for (size_t i = 0; i < kernel.args.size(); ++i) {
    arg_types[i] = parent.node(kernel.args[i]).type().dtype;
    out.bindings.push_back({Binding::Kind::Input, int(i), arg_types[i]});
  }
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

  spirv::Builder b;
  Emitter e(b, caps, body);
  check_types(kernel, body, caps, e, out.bindings);
  std::vector<BufferRef> inputs, outputs;
  for (size_t i = 0; i < out.bindings.size(); ++i) {
    const auto& bnd = out.bindings[i];
    bool in = bnd.kind == Binding::Kind::Input;
    Id var = b.storage_buffer(e.storage_type(bnd.dtype), ir::dtype_bytes(bnd.dtype), uint32_t(i), in);
    b.name(var, (in ? "arg" : "result") + std::to_string(bnd.index));
    (in ? inputs : outputs).push_back({var, bnd.dtype});
  }
  e.set_inputs(inputs);

  int64_t items = 0;
  for (const auto& r : kernel.results) items = std::max(items, r.num_elements());
  LaunchConfig launch = choose_launch(caps, items);
  out.workgroup_size[0] = launch.workgroup_size;
  out.group_count[0] = launch.group_count;
  const uint64_t stride = uint64_t(launch.workgroup_size) * launch.group_count;

  b.begin_main();
  Id start = b.global_invocation_x();
  b.loop(
      {e.u32()}, {start}, [&](const spirv::Builder::Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s[0], e.u32c(items)}); },
      [&](const spirv::Builder::Values& s) {
        for (size_t k = 0; k < kernel.results.size(); ++k) {
          const auto& shape = kernel.results[k].shape;
          auto emit_store = [&] {
            Index idx;
            idx.shape = shape;
            idx.linear = s[0];
            e.store(outputs[k], s[0], e.value(body.node(body.outputs[k]), idx));
          };
          if (kernel.results[k].num_elements() == items) emit_store();
          else b.if_then(b.op(spv::OpULessThan, e.boolean(), {s[0], e.u32c(kernel.results[k].num_elements())}), emit_store);
        }
        // items + stride < 2^32 because both are below 2^31.
        return spirv::Builder::Values{b.op(spv::OpIAdd, e.u32(), {s[0], e.u32c(stride)})};
      });
  b.end_main(launch.workgroup_size);
  out.spirv = b.finish();

  std::string err = validate(out.spirv, caps.api_version);
  if (!err.empty()) throw ir::IrError(kernel, "generated SPIR-V does not validate (codegen bug): " + err);
  return out;
}

}  // namespace nxv::codegen
