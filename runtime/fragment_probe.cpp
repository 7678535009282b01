// Runs codegen's fragment-layout probe on the device and reads the layouts back.
#include "runtime/fragment_probe.h"

#include "codegen/fragment_layout.h"
#include "runtime/device_impl.h"

namespace nxv::runtime {

namespace {

// One workgroup of the module, writing new buffers of `outputs`; as run_spirv without its
// checks, which rest on a SPIRV-Tools and SPIRV-Cross that may predate the cooperative-matrix
// opcodes.
std::vector<BufferPtr> run_probe(DeviceImpl& dev, const std::vector<uint32_t>& spirv, uint32_t invocations,
                                 const std::vector<ir::TensorType>& outputs) {
  codegen::KernelBinary k;
  k.name = "fragment_layout_probe";
  k.spirv = spirv;
  for (size_t i = 0; i < outputs.size(); ++i) k.bindings.push_back({codegen::Binding::Kind::Output, int(i), outputs[i].dtype});
  k.workgroup_size[0] = invocations, k.workgroup_size[1] = k.workgroup_size[2] = 1;
  k.group_count[0] = k.group_count[1] = k.group_count[2] = 1;
  const PipelinePtr p = dev.pipeline(k, {0, false});
  std::vector<BufferPtr> outs;
  std::vector<const Buffer*> buffers;
  for (const auto& t : outputs) buffers.push_back(outs.emplace_back(dev.allocate(t)).get());
  dev.submit([&](VkCommandBuffer cb, SubmitContext& ctx) { dev.record_dispatch(cb, ctx, *p, buffers, k.group_count, {}); });
  return outs;
}

}  // namespace

std::vector<codegen::CooperativeMatrixShape> probe_fragment_layouts(DeviceImpl& dev) {
  Device& device = dev;
  const codegen::DeviceCaps& caps = device.info().caps;
  std::vector<codegen::CooperativeMatrixShape> shapes = caps.cooperative_matrix_shapes;
  const uint32_t sg = caps.subgroup_size;
  for (auto& f : shapes) {
    if (!codegen::probes_layout(f, sg)) continue;
    const ir::DType half = f.operands == codegen::MatrixComponent::F16 ? ir::DType::F16 : ir::DType::BF16;
    const int64_t mn = int64_t(f.m) * f.n, mk = int64_t(f.m) * f.k;
    try {
      const std::vector<ir::TensorType> types{{ir::DType::U32, {mn}}, {half, {mk}}, {half, {mk}}, {ir::DType::U32, {4}}};
      const auto out = run_probe(dev, codegen::fragment_layout_probe(f, sg), sg, types);
      std::vector<uint32_t> acc(mn), lengths(4);
      std::vector<uint16_t> a_lane(mk), a_element(mk);
      device.download_all({{out[0].get(), acc.data(), acc.size() * 4},
                           {out[1].get(), a_lane.data(), a_lane.size() * 2},
                           {out[2].get(), a_element.data(), a_element.size() * 2},
                           {out[3].get(), lengths.data(), lengths.size() * 4}});
      codegen::read_fragment_layouts(acc, a_lane, a_element, lengths, sg, f);
    } catch (const std::exception&) {
      // A probe the driver refuses leaves the shape unmeasured: kernels then stage through
      // shared memory, as on devices where the layout has no register plan.
    }
  }
  return shapes;
}

}  // namespace nxv::runtime
