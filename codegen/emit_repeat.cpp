// `repeat` (from detect-chains): the step region run attrs.count times in a loop whose
// carried values stay in registers. Every carried value is computed at the element being
// produced (scalars at their only element), so a step may only combine values of the
// kernel's element shape and scalars: elementwise chains such as an integrator.
#include "codegen/emitter.h"

namespace nxv::codegen {

Id Emitter::emit_repeat_result(const ir::Node& elem, Index& index) {
  const ir::Node& rep = arg(elem, 0);
  const size_t which = elem.attrs.value("index", size_t(0));
  const size_t carried = rep.results.size();
  // All results of one repeat at one position come out of one loop.
  auto key = [&](size_t k) {
    spirv::Words w{memo_tag_, uint32_t(rep.id), 2u, index.linear ? 1u : 0u, uint32_t(k)};
    if (index.linear) w.push_back(index.linear);
    else w.insert(w.end(), index.dims.begin(), index.dims.end());
    return w;
  };
  if (const Id* hit = b.memo_find(key(which))) return *hit;

  auto position = [&](const ir::Node& n, const ir::TensorType& t) -> Index {
    if (t.shape == index.shape) return index;
    if (t.shape.empty()) return index_from_dims({}, {});
    throw ir::IrError(rep, "a repeated step may only mix values of shape " + ir::to_string({t.dtype, index.shape}) +
                               " and scalars, not " + ir::to_string(t) + " (%" + std::to_string(n.id) + ")");
  };
  std::vector<Id> init, invariants, types{u32()}, used;
  for (size_t i = 0; i < rep.args.size(); ++i) {
    const ir::Node& a = arg(rep, i);
    Id v = value(a, position(a, a.type()));
    (i < carried ? init : invariants).push_back(v);
    used.push_back(v);
  }
  // The step reads its values at the position (a broadcast literal's index, an iota), so the
  // loop may not be hoisted above where the position is defined, even where every argument
  // is a literal (fuzz seed 70199308: an is_infinity of integers, 0, carried).
  if (index.linear) used.push_back(index.linear);
  else used.insert(used.end(), index.dims.begin(), index.dims.end());
  for (const auto& r : rep.results) types.push_back(reg_type(r.dtype));
  const ir::Graph& step = *rep.regions.at("step");
  const int64_t count = rep.attrs.at("count").get<int64_t>();
  std::vector<Id> start{u32c(0)};
  start.insert(start.end(), init.begin(), init.end());

  auto out = b.at_level(b.level_of(used), [&] {
    return b.loop(
        types, start, [&](const spirv::Builder::Values& s) { return b.op(spv::OpULessThan, boolean(), {s[0], u32c(count)}); },
        [&](const spirv::Builder::Values& s) {
          Emitter inner(b, caps, step);
          inner.bound_.assign(s.begin() + 1, s.end());
          inner.bound_.insert(inner.bound_.end(), invariants.begin(), invariants.end());
          spirv::Builder::Values next{b.op(spv::OpIAdd, u32(), {s[0], u32c(1)})};
          for (size_t k = 0; k < carried; ++k) {
            const ir::Node& o = step.node(step.outputs[k]);
            next.push_back(inner.value(o, position(o, o.type())));
          }
          return next;
        },
        uint64_t(count));
  });
  for (size_t k = 0; k < carried; ++k) b.memo_put(key(k), out[k + 1], b.level_of(out[k + 1]));
  return out[which + 1];
}

}  // namespace nxv::codegen
