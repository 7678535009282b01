// Emitter::fold: the loop behind every reduction, dot and argmax/argmin,
// either sequential per invocation or split over the workgroup.
#include "codegen/emitter.h"

namespace nxv::codegen {

using Values = spirv::Builder::Values;

namespace {
// r = start, start + stride, ... < count, folding f.step.
Values strided_loop(Emitter& e, const Fold& f, Id start, uint32_t stride) {
  auto& b = e.b;
  std::vector<Id> types = f.types;
  types.push_back(e.u32());
  Values init = f.init;
  init.push_back(start);
  auto r = b.loop(
      types, init, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s.back(), e.u32c(f.count)}); },
      [&](const Values& s) {
        Values next = f.step(Values(s.begin(), s.end() - 1), s.back());
        next.push_back(b.op(spv::OpIAdd, e.u32(), {s.back(), e.u32c(stride)}));
        return next;
      });
  r.pop_back();
  return r;
}
}  // namespace

Values Emitter::fold(const std::vector<Id>& outer, const Fold& f) {
  std::vector<Id> place = outer;
  place.insert(place.end(), f.init.begin(), f.init.end());
  const int lvl = b.level_of(place);
  return b.at_level(lvl, [&] {
    if (coop_ && lvl <= coop_->level) return fold_cooperative(f);
    return strided_loop(*this, f, u32c(f.begin), 1);
  });
}

Id Emitter::shared_array(Id type, size_t slot, int bytes) {
  auto key = std::make_pair(type, slot);
  if (auto it = shared_.find(key); it != shared_.end()) return it->second;
  shared_bytes_ += uint64_t(bytes) * coop_->size;
  return shared_[key] = b.workgroup_array(type, coop_->size);
}

// Each invocation folds every size-th r, then a tree over shared memory
// combines the partials; every invocation gets the result. Runs in uniform
// control flow (the level of the per-output code), as barriers require.
Values Emitter::fold_cooperative(const Fold& f) {
  const Id lid = coop_->local_id;
  const uint32_t size = coop_->size;
  Values partial = strided_loop(*this, f, b.op(spv::OpIAdd, u32(), {lid, u32c(f.begin)}), size);
  auto slot_ptr = [&](size_t i, Id index) {
    return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, f.types[i]),
                {shared_array(f.types[i], i, b.type_bytes(f.types[i])), index});
  };
  auto load_all = [&](Id index) {
    Values v;
    for (size_t i = 0; i < f.types.size(); ++i) v.push_back(b.op_in_place(spv::OpLoad, f.types[i], {slot_ptr(i, index)}));
    return v;
  };
  auto store_all = [&](Id index, const Values& v) {
    for (size_t i = 0; i < v.size(); ++i) b.op_void(spv::OpStore, {slot_ptr(i, index), v[i]});
  };
  store_all(lid, partial);
  b.workgroup_barrier();
  for (uint32_t half = size / 2; half > 0; half /= 2) {
    b.if_then(b.op(spv::OpULessThan, boolean(), {lid, u32c(half)}), [&] {
      Values a = load_all(lid);
      Values c = load_all(b.op(spv::OpIAdd, u32(), {lid, u32c(half)}));
      store_all(lid, f.combine(a, c));
    });
    b.workgroup_barrier();
  }
  Values result = load_all(u32c(0));
  b.workgroup_barrier();  // the arrays are reused by the next fold
  return result;
}

}  // namespace nxv::codegen
