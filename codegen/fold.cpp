// Emitter::fold: the loop behind every reduction, dot and argmax/argmin,
// either sequential per invocation or split over the workgroup.
#include <algorithm>

#include "codegen/emitter.h"

namespace nxv::codegen {

using Values = spirv::Builder::Values;

namespace {
// n positions from r, `stride` apart.
std::vector<Id> positions(Emitter& e, Id r, uint32_t stride, uint32_t n) {
  std::vector<Id> rs;
  for (uint32_t k = 0; k < n; ++k) rs.push_back(k ? e.b.op(spv::OpIAdd, e.u32(), {r, e.u32c(uint64_t(k) * stride)}) : r);
  return rs;
}

// r = from, from + stride * width, ... while r < bound, folding `width` positions a trip;
// the accumulators after it, and r last.
Values loop_from(Emitter& e, const Fold& f, Values acc, Id from, uint64_t bound, uint32_t stride, uint32_t width,
                 uint64_t max_trips) {
  auto& b = e.b;
  std::vector<Id> types = f.types;
  types.push_back(e.u32());
  acc.push_back(from);
  return b.loop(
      types, acc, [&](const Values& s) { return b.op(spv::OpULessThan, e.boolean(), {s.back(), e.u32c(bound)}); },
      [&](const Values& s) {
        const Values a(s.begin(), s.end() - 1);
        Values next = width == 1 ? f.step(a, s.back()) : f.step_many(a, positions(e, s.back(), stride, width));
        next.push_back(b.op(spv::OpIAdd, e.u32(), {s.back(), e.u32c(uint64_t(width) * stride)}));
        return next;
      },
      max_trips);
}

// r = start, start + stride, ... < count, folding f.step, or f.step_many over f.group
// positions a trip and f.step over the rest; start >= f.begin.
Values strided_loop(Emitter& e, const Fold& f, Id start, uint32_t stride) {
  const uint64_t span = uint64_t(std::max<int64_t>(f.count - f.begin, 0));
  const uint64_t trips = (span + stride - 1) / stride;
  const uint32_t u = f.group;
  // (Without step_many, beginning a loop from f.start after a first group folded one by one
  // measured slower than the plain loop: docs/portability.md, "Sums round once".)
  if (!f.step_many || span / stride < 2 * uint64_t(u)) {
    Values r = loop_from(e, f, f.init, start, uint64_t(f.count), stride, 1, trips);
    r.pop_back();
    return r;
  }
  // The first group (every invocation has one, and one more) outside the loop, from
  // f.start: its elements are computed once for both.
  const std::vector<Id> first = positions(e, start, stride, u);
  Values r = f.step_many(f.start ? f.start(first) : f.init, first);
  // Whole groups while r + (u - 1) stride < count; then the rest, fewer than u trips,
  // unless every invocation's trips are a multiple of u.
  r = loop_from(e, f, r, e.b.op(spv::OpIAdd, e.u32(), {start, e.u32c(uint64_t(u) * stride)}),
                uint64_t(f.count) - uint64_t(u - 1) * stride, stride, u, trips / u - 1);
  if (span % (uint64_t(u) * stride) != 0) {
    Id at = r.back();
    r.pop_back();
    r = loop_from(e, f, r, at, uint64_t(f.count), stride, 1, u - 1);
  }
  r.pop_back();
  return r;
}
}  // namespace

Values Emitter::fold(const std::vector<Id>& outer, const Fold& f) {
  // One position (an indexed_put of one update, a reduction over an axis of 1): its step
  // alone. A loop of one trip would still cost loop steps, which lavapipe bounds.
  if (f.count - f.begin == 1) return f.step(f.init, u32c(uint64_t(f.begin)));
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

Id Emitter::lane(uint64_t offset) {
  const Id reducer = coop_->outputs == 1 ? coop_->local_id
                     : coop_->segments  ? b.op(spv::OpUMod, u32(), {coop_->local_id, u32c(coop_->reducers())})
                                        : b.op(spv::OpUDiv, u32(), {coop_->local_id, u32c(coop_->outputs)});
  return offset == 0 ? reducer : b.op(spv::OpIAdd, u32(), {reducer, u32c(offset)});
}

Id Emitter::output_lane() {
  return coop_->segments ? b.op(spv::OpUDiv, u32(), {coop_->local_id, u32c(coop_->reducers())})
                         : b.op(spv::OpUMod, u32(), {coop_->local_id, u32c(coop_->outputs)});
}

// Each invocation folds every reducers-th r from its reducer index, then its output's
// partials are combined (by subgroup butterflies, or a tree over shared memory); every
// invocation gets its output's result. Runs in uniform control flow (the level of the
// per-output code), as barriers require.
Values Emitter::fold_cooperative(const Fold& f) {
  Values partial = fold_share(f, coop_->size / coop_->outputs);
  if (f.rescale) {
    // The partials' largest scale first (a u32 maximum, a few instructions a step), so that
    // their combinations are the cheap ones of one scale.
    Fold largest;
    largest.types = {u32()};
    largest.combine = [&](const Values& a, const Values& c) { return Values{b.ext(GLSLstd450UMax, u32(), {a[0], c[0]})}; };
    const Id scale = f.settle(partial);
    partial = f.rescale(partial, combine_partials(largest, {scale})[0]);
  }
  return combine_partials(f, partial);
}

// The partials of each output combined, every invocation getting its output's.
Values Emitter::combine_partials(const Fold& f, Values partial) {
  const uint32_t outputs = coop_->outputs;
  const uint32_t sg = caps.subgroup_size, size = coop_->size;
  const bool shuffles = std::all_of(f.types.begin(), f.types.end(),
                                    [&](Id t) { return b.type_bytes(t) == 4 || b.emulated(t) || caps.subgroup_extended_types; });
  // Segments lie within subgroups where `full` holds (uniform, as the tree's barriers
  // require): butterflies there, the tree elsewhere.
  if (coop_->segments) {
    const uint32_t reducers = coop_->reducers();
    if (!coop_->full || !shuffles || sg % reducers != 0) return combine_in_tree(f, partial);
    return b.if_else(coop_->full, f.types, [&] { return butterflies(f, partial, reducers / 2); },
                     [&] { return combine_in_tree(f, partial); });
  }
  // With several outputs the invocations of one output need not share a subgroup's lanes in
  // any known pattern: the tree.
  if (outputs == 1 && caps.subgroup_shuffle && shuffles && sg >= 2 && sg < size && size % sg == 0)
    return combine_in_subgroups(f, partial);
  return combine_in_tree(f, partial);
}

// This invocation's share of the fold: positions lane(begin), + reducers, ...; straight-line
// where they are few.
Values Emitter::fold_share(const Fold& f, uint32_t reducers) {
  if (f.count - f.begin > int64_t(reducers) * kMaxUnrolledPositions) return strided_loop(*this, f, lane(uint64_t(f.begin)), reducers);
  std::vector<Id> whole;
  int64_t first = f.begin;
  for (; first + reducers <= f.count; first += reducers) whole.push_back(lane(uint64_t(first)));
  Values partial = f.init;
  size_t i = 0;
  if (f.group > 1 && whole.size() >= f.group) {
    if (f.start) partial = f.start({whole.begin(), whole.begin() + f.group});
    if (f.step_many)
      for (; i + f.group <= whole.size(); i += f.group) partial = f.step_many(partial, {whole.begin() + i, whole.begin() + i + f.group});
  }
  for (; i < whole.size(); ++i) partial = f.step(partial, whole[i]);
  if (first < f.count) {
    // The last, partial round: positions past the end fold a clamped one and keep the accumulator.
    Id r = lane(uint64_t(first));
    Id valid = b.op(spv::OpULessThan, boolean(), {r, u32c(f.count)});
    Values stepped = f.step(partial, b.ext(GLSLstd450UMin, u32(), {r, u32c(f.count - 1)}));
    for (size_t j = 0; j < partial.size(); ++j) partial[j] = b_select(f.types[j], valid, stepped[j], partial[j]);
  }
  return partial;
}

Values Emitter::load_slots(const std::vector<Id>& types, Id index) {
  Values v;
  for (size_t i = 0; i < types.size(); ++i) v.push_back(b.op_in_place(spv::OpLoad, types[i], {slot_pointer(types[i], i, index)}));
  return v;
}

void Emitter::store_slots(const std::vector<Id>& types, Id index, const Values& v) {
  for (size_t i = 0; i < v.size(); ++i) b.op_void(spv::OpStore, {slot_pointer(types[i], i, index), v[i]});
}

Id Emitter::slot_pointer(Id type, size_t slot, Id index) {
  return b.op(spv::OpAccessChain, b.type_pointer(spv::StorageClassWorkgroup, type), {shared_array(type, slot, b.type_bytes(type)), index});
}

// Butterflies over the lanes `lanes` apart and nearer: each lane ends with the combination
// of its aligned block of 2 * lanes.
Values Emitter::butterflies(const Fold& f, Values partial, uint32_t lanes) {
  b.capability(spv::CapabilityGroupNonUniform);
  b.capability(spv::CapabilityGroupNonUniformShuffle);
  for (uint32_t off = lanes; off > 0; off /= 2) {
    Values other;
    for (size_t i = 0; i < partial.size(); ++i)
      other.push_back(b.op_in_place(spv::OpGroupNonUniformShuffleXor, f.types[i], {u32c(spv::ScopeSubgroup), partial[i], u32c(off)}));
    partial = f.combine(partial, other);
  }
  return partial;
}

// One output per workgroup: butterflies within each subgroup leave its total in every lane;
// lane 0 of each subgroup publishes it, and every subgroup combines the few totals by
// butterflies again (lane i taking total i mod their count), or, where the totals outnumber
// the lanes, every invocation combines them in turn: two barriers instead of one per halving.
Values Emitter::combine_in_subgroups(const Fold& f, Values partial) {
  const uint32_t sg = caps.subgroup_size, totals = coop_->size / sg;
  partial = butterflies(f, partial, sg / 2);
  Id lane = b.builtin_u32(spv::BuiltInSubgroupLocalInvocationId);
  b.if_then(b.op(spv::OpIEqual, boolean(), {lane, u32c(0)}), [&] { store_slots(f.types, b.builtin_u32(spv::BuiltInSubgroupId), partial); });
  b.workgroup_barrier();
  Values result;
  if (totals <= sg) {
    result = butterflies(f, load_slots(f.types, b.op(spv::OpBitwiseAnd, u32(), {lane, u32c(totals - 1)})), totals / 2);
  } else {
    result = load_slots(f.types, u32c(0));
    for (uint32_t k = 1; k < totals; ++k) result = f.combine(result, load_slots(f.types, u32c(k)));
  }
  b.workgroup_barrier();  // the arrays are reused by the next fold
  return result;
}

// Outputs interleaved: slot lid = reducer * outputs + output, and halving the reducers pairs
// each slot with the one half * outputs above it, of the same output. In segments: slot lid
// = output * reducers + reducer, paired with the one half above it.
Values Emitter::combine_in_tree(const Fold& f, const Values& partial) {
  const Id lid = coop_->local_id;
  const uint32_t outputs = coop_->outputs, gap = coop_->segments ? 1 : outputs;
  store_slots(f.types, lid, partial);
  b.workgroup_barrier();
  for (uint32_t half = coop_->reducers() / 2; half > 0; half /= 2) {
    const Id pairs = coop_->segments ? b.op(spv::OpULessThan, boolean(), {lane(0), u32c(half)})
                                     : b.op(spv::OpULessThan, boolean(), {lid, u32c(uint64_t(half) * outputs)});
    b.if_then(pairs, [&] {
      Values a = load_slots(f.types, lid);
      Values c = load_slots(f.types, b.op(spv::OpIAdd, u32(), {lid, u32c(uint64_t(half) * gap)}));
      store_slots(f.types, lid, f.combine(a, c));
    });
    b.workgroup_barrier();
  }
  const Id first = outputs == 1     ? u32c(0)
                   : coop_->segments ? b.op(spv::OpISub, u32(), {lid, lane(0)})
                                     : b.op(spv::OpUMod, u32(), {lid, u32c(outputs)});
  Values result = load_slots(f.types, first);
  b.workgroup_barrier();  // the arrays are reused by the next fold
  return result;
}

}  // namespace nxv::codegen
