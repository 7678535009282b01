// Function-level parts of the builder: blocks, scopes, value numbering and
// structured control flow.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "codegen/spirv_builder.h"

namespace nxv::codegen::spirv {

Builder::Block* Builder::new_block() {
  blocks_.push_back(std::make_unique<Block>());
  blocks_.back()->label = fresh_id();
  return blocks_.back().get();
}

Builder::Block* Builder::open_block() const { return scopes_.back().open; }

void Builder::set_branch(Block* from, Block* to) {
  from->terminator.clear();
  append_inst(from->terminator, spv::OpBranch, {to->label});
  from->successors = {to};
}

void Builder::redirect_phis(Block* from, Block* to) {
  for (const auto& b : blocks_)
    for (const auto& phi : b->phis)
      for (auto& in : phi->incoming)
        if (in.second == from) in.second = to;
}

// Starts a construct in the open block of the current level. The block's
// pending terminator (if any: a shallower level may be split while deeper ones
// are suspended) moves to the construct's merge block, which becomes the open
// block of this level once the construct is done.
Builder::Block* Builder::split_for_construct(Block** merge_out) {
  Block* pre = open_block();
  Block* merge = new_block();
  redirect_phis(pre, merge);
  merge->terminator = std::move(pre->terminator);
  merge->successors = std::move(pre->successors);
  pre->terminator.clear();
  pre->successors.clear();
  *merge_out = merge;
  return pre;
}

void Builder::push_scope(Block* open) {
  Scope s{open, {}};
  if (!scopes_.empty()) s.runs = scopes_.back().runs, s.in_positions = scopes_.back().in_positions;
  scopes_.push_back(std::move(s));
}
void Builder::pop_scope() { scopes_.pop_back(); }

void Builder::set_level(Id id, int lvl) {
  if (id >= levels_.size()) levels_.resize(id + 1, 0);
  levels_[id] = lvl;
}

void Builder::set_type(Id id, Id type) {
  if (id >= type_of_.size()) type_of_.resize(id + 1, 0);
  type_of_[id] = type;
}

int Builder::level_of(Id id) const { return std::min(id < levels_.size() ? levels_[id] : 0, level()); }

int Builder::level_of(const std::vector<Id>& ids) const {
  int l = 0;
  for (Id id : ids) l = std::max(l, level_of(id));
  return l;
}

void Builder::suspend_above(int lvl) {
  if (lvl < 0 || lvl > level()) throw std::logic_error("spirv::Builder::at_level: no such level");
  suspended_.emplace_back(std::make_move_iterator(scopes_.begin() + lvl + 1), std::make_move_iterator(scopes_.end()));
  scopes_.resize(lvl + 1);
}

void Builder::resume() {
  auto saved = std::move(suspended_.back());
  suspended_.pop_back();
  for (auto& s : saved) scopes_.push_back(std::move(s));
}

const Id* Builder::memo_find(const Words& key) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto m = it->memo.find(key); m != it->memo.end()) return &m->second;
  return nullptr;
}

void Builder::memo_put(const Words& key, Id value, int lvl) {
  scopes_[std::min(lvl, level())].memo[key] = value;
}

Id Builder::emit_pure(spv::Op opcode, Id type, const Words& operands, const std::vector<Id>& placement_ids) {
  // No SPIR-V id is 0: a literal among the ids (an index written as {x, 0}) encodes the same
  // word but leaves the result out of the foldable set, and literal special values with it.
  if (std::find(placement_ids.begin(), placement_ids.end(), Id{0}) != placement_ids.end())
    throw std::logic_error("spirv::Builder: operand id 0 (a literal passed as an id?)");
  int lvl = level_of(placement_ids);
  Words key{uint32_t(opcode), type};
  key.insert(key.end(), operands.begin(), operands.end());
  auto& scope = scopes_[lvl];
  if (auto it = scope.memo.find(key); it != scope.memo.end()) return it->second;
  Id id = fresh_id();
  Words ops{real_type(type), id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  append_inst(scope.open->body, opcode, ops);
  set_level(id, lvl);
  set_type(id, type);
  scope.memo.emplace(std::move(key), id);
  if (!placement_ids.empty() &&
      std::all_of(placement_ids.begin(), placement_ids.end(), [&](Id i) { return foldable_.count(i) > 0; }))
    foldable_.emplace(id, std::pair{type, true});
  return id;
}

namespace {
// a op b in `bits`-bit unsigned arithmetic, where SPIR-V defines it (no division by zero).
std::optional<uint64_t> fold(spv::Op opcode, uint64_t a, uint64_t b, int bits) {
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  switch (opcode) {
    case spv::OpIAdd: return (a + b) & mask;
    case spv::OpISub: return (a - b) & mask;
    case spv::OpIMul: return (a * b) & mask;
    case spv::OpUDiv: return b ? std::optional(a / b) : std::nullopt;
    case spv::OpUMod: return b ? std::optional(a % b) : std::nullopt;
    default: return std::nullopt;
  }
}
}  // namespace

Id Builder::op(spv::Op opcode, Id type, const std::vector<Id>& ids, const Words& literals) {
  if (ids.size() == 2 && literals.empty()) {
    auto a = int_constants_.find(ids[0]), b = int_constants_.find(ids[1]);
    if (a != int_constants_.end() && b != int_constants_.end() && a->second.first == b->second.first &&
        type == type_int(a->second.first))
      if (auto v = fold(opcode, a->second.second, b->second.second, a->second.first))
        return const_int(a->second.first, *v);
  }
  if (lowers(opcode, type, ids)) return lower(opcode, type, ids, literals);
  if ((opcode == spv::OpIsNan || opcode == spv::OpIsInf) && ids.size() == 1)
    if (Id r = special_on_bits(opcode, type, ids[0])) return r;
  Words operands(ids.begin(), ids.end());
  operands.insert(operands.end(), literals.begin(), literals.end());
  Id id = emit_pure(opcode, type, operands, ids);
  if ((opcode == spv::OpIAdd || opcode == spv::OpISub) && ids.size() == 2 && literals.empty() && type == type_int(32))
    note_offset(opcode, id, ids[0], ids[1]);
  return id;
}

void Builder::note_offset(spv::Op opcode, Id id, Id a, Id b) {
  auto constant = [&](Id x) -> std::optional<uint32_t> {
    auto c = int_constants_.find(x);
    if (c == int_constants_.end() || c->second.first != 32) return std::nullopt;
    return uint32_t(c->second.second);
  };
  std::optional<uint32_t> ca = constant(a), cb = constant(b);
  if (ca.has_value() == cb.has_value()) return;
  if (opcode == spv::OpISub && ca) return;  // c - x is not x plus a constant
  const Id x = ca ? b : a;
  const uint32_t c = ca ? *ca : opcode == spv::OpISub ? uint32_t(0) - *cb : *cb;
  auto [base, offset] = split_offset(x);
  offsets_[id] = {base, offset + c};
}

std::pair<Id, uint32_t> Builder::split_offset(Id id) const {
  auto it = offsets_.find(id);
  return it == offsets_.end() ? std::pair{id, uint32_t(0)} : it->second;
}

Id Builder::ext(GLSLstd450 inst, Id type, const std::vector<Id>& ids) {
  if ((inst == GLSLstd450UMin || inst == GLSLstd450UMax) && ids.size() == 2) {
    auto a = int_constants_.find(ids[0]), b = int_constants_.find(ids[1]);
    if (a != int_constants_.end() && b != int_constants_.end() && a->second.first == b->second.first) {
      const bool a_less = a->second.second < b->second.second;
      return (inst == GLSLstd450UMin) == a_less ? ids[0] : ids[1];
    }
  }
  if (lowers(spv::OpExtInst, type, ids)) return lower_ext(inst, type, ids);
  Words operands{glsl_std_450(), uint32_t(inst)};
  operands.insert(operands.end(), ids.begin(), ids.end());
  return emit_pure(spv::OpExtInst, type, operands, ids);
}

void Builder::op_void(spv::Op opcode, const Words& operands) { append_inst(open_block()->body, opcode, operands); }

Id Builder::op_in_place(spv::Op opcode, Id type, const std::vector<Id>& ids) {
  Id id = fresh_id();
  Words ops{real_type(type), id};
  ops.insert(ops.end(), ids.begin(), ids.end());
  append_inst(open_block()->body, opcode, ops);
  set_level(id, level());
  set_type(id, type);
  return id;
}

void Builder::workgroup_barrier() {
  Id workgroup = const_int(32, uint32_t(spv::ScopeWorkgroup));
  Id semantics = const_int(32, uint32_t(spv::MemorySemanticsAcquireReleaseMask) |
                                   uint32_t(spv::MemorySemanticsWorkgroupMemoryMask));
  op_void(spv::OpControlBarrier, {workgroup, workgroup, semantics});
}

void Builder::storage_barrier(spv::Scope scope) {
  Id s = const_int(32, uint32_t(scope));
  Id semantics = const_int(32, uint32_t(spv::MemorySemanticsAcquireReleaseMask) |
                                   uint32_t(spv::MemorySemanticsUniformMemoryMask) |
                                   uint32_t(spv::MemorySemanticsWorkgroupMemoryMask));
  op_void(spv::OpControlBarrier, {s, s, semantics});
}

void Builder::execution_mode(spv::ExecutionMode mode, const Words& literals) {
  if (!main_) throw std::logic_error("spirv::Builder::execution_mode before begin_main");
  Words ops{main_, uint32_t(mode)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  append_inst(extra_modes_, spv::OpExecutionMode, ops);
}

void Builder::begin_main() {
  main_ = fresh_id();
  push_scope(new_block());
}

void Builder::end_main(uint32_t local_x, uint32_t local_y, uint32_t local_z) {
  if (level() != 0) throw std::logic_error("spirv::Builder::end_main inside a construct");
  append_inst(open_block()->terminator, spv::OpReturn, {});
  Words ep{uint32_t(spv::ExecutionModelGLCompute), main_};
  Words s = string_literal("main");
  ep.insert(ep.end(), s.begin(), s.end());
  ep.insert(ep.end(), interface_.begin(), interface_.end());
  append_inst(entry_and_modes_, spv::OpEntryPoint, ep);
  append_inst(entry_and_modes_, spv::OpExecutionMode,
              {main_, uint32_t(spv::ExecutionModeLocalSize), local_x, local_y, local_z});
  entry_and_modes_.insert(entry_and_modes_.end(), extra_modes_.begin(), extra_modes_.end());
  void_type_ = type_void();
  main_type_ = type_function(void_type_, {});
  finished_main_ = true;
}

namespace {
uint64_t saturating_mul(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
}  // namespace

Builder::Values Builder::loop(const std::vector<Id>& types, const Values& init,
                              const std::function<Id(const Values&)>& cond,
                              const std::function<Values(const Values&)>& body, uint64_t max_trips) {
  const Scope& here = scopes_.back();
  uint64_t& steps = here.in_positions ? steps_.per_trip : steps_.outside;
  steps = saturating_add(steps, saturating_mul(here.runs, saturating_add(max_trips, 1)));
  return structured_loop(types, init, cond, body, saturating_mul(here.runs, max_trips), here.in_positions);
}

Builder::Values Builder::position_loop(const std::vector<Id>& types, const Values& init,
                                       const std::function<Id(const Values&)>& cond,
                                       const std::function<Values(const Values&)>& body) {
  return structured_loop(types, init, cond, body, 1, true);
}

Builder::Values Builder::structured_loop(const std::vector<Id>& types, const Values& init,
                                         const std::function<Id(const Values&)>& cond,
                                         const std::function<Values(const Values&)>& body, uint64_t body_runs,
                                         bool in_positions) {
  ++steps_.loops;
  for (Scope& s : scopes_) ++s.loops;
  Block* merge;
  Block* pre = split_for_construct(&merge);
  Block* header = new_block();
  Block* test = new_block();
  Block* first = new_block();
  Block* cont = new_block();
  set_branch(pre, header);

  const int outer = level();
  push_scope(test);
  scopes_.back().runs = body_runs;
  scopes_.back().in_positions = in_positions;
  Values carried;
  std::vector<Phi*> phis;
  for (size_t i = 0; i < types.size(); ++i) {
    auto phi = std::make_unique<Phi>(Phi{fresh_id(), real_type(types[i]), {{init[i], pre}}});
    set_level(phi->result, outer + 1);
    set_type(phi->result, types[i]);
    carried.push_back(phi->result);
    phis.push_back(phi.get());
    header->phis.push_back(std::move(phi));
  }
  append_inst(header->terminator, spv::OpLoopMerge, {merge->label, cont->label, std::exchange(loop_control_, spv::LoopControlMaskNone)});
  append_inst(header->terminator, spv::OpBranch, {test->label});
  header->successors = {test};

  Id c = cond(carried);
  Block* test_end = open_block();
  append_inst(test_end->terminator, spv::OpBranchConditional, {c, first->label, merge->label});
  test_end->successors = {merge, first};  // DFS order that lays the body out before the merge

  scopes_.back().open = first;
  Values next = body(carried);
  set_branch(open_block(), cont);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->incoming.emplace_back(next[i], cont);
  set_branch(cont, header);
  const uint64_t inside = scopes_.back().loops;
  pop_scope();
  // The test that ends the loop runs its body once more with no invocation active (LoopSteps).
  uint64_t& steps = scopes_.back().in_positions ? steps_.per_trip : steps_.outside;
  steps = saturating_add(steps, saturating_mul(scopes_.back().runs, inside));

  scopes_.back().open = merge;
  for (Id v : carried) set_level(v, outer);  // the header dominates the merge
  return carried;
}

Builder::Values Builder::if_else(Id cond, const std::vector<Id>& types, const std::function<Values()>& then_fn,
                                 const std::function<Values()>& else_fn) {
  Block* merge;
  Block* pre = split_for_construct(&merge);
  Block* then_block = new_block();
  Block* else_block = new_block();
  append_inst(pre->terminator, spv::OpSelectionMerge, {merge->label, uint32_t(spv::SelectionControlMaskNone)});
  append_inst(pre->terminator, spv::OpBranchConditional, {cond, then_block->label, else_block->label});
  pre->successors = {else_block, then_block};  // DFS order that lays "then" out first

  auto branch = [&](Block* start, const std::function<Values()>& fn, Block** end) {
    push_scope(start);
    Values v = fn();
    *end = open_block();
    set_branch(*end, merge);
    pop_scope();
    return v;
  };
  Block *then_end, *else_end;
  Values tv = branch(then_block, then_fn, &then_end);
  Values ev = branch(else_block, else_fn, &else_end);

  scopes_.back().open = merge;
  Values out;
  for (size_t i = 0; i < types.size(); ++i) {
    auto phi = std::make_unique<Phi>(Phi{fresh_id(), real_type(types[i]), {{tv[i], then_end}, {ev[i], else_end}}});
    set_level(phi->result, level());
    set_type(phi->result, types[i]);
    out.push_back(phi->result);
    merge->phis.push_back(std::move(phi));
  }
  return out;
}

void Builder::if_then(Id cond, const std::function<void()>& then_fn) {
  Block* merge;
  Block* pre = split_for_construct(&merge);
  Block* then_block = new_block();
  append_inst(pre->terminator, spv::OpSelectionMerge, {merge->label, uint32_t(spv::SelectionControlMaskNone)});
  append_inst(pre->terminator, spv::OpBranchConditional, {cond, then_block->label, merge->label});
  pre->successors = {merge, then_block};
  push_scope(then_block);
  then_fn();
  set_branch(open_block(), merge);
  pop_scope();
  scopes_.back().open = merge;
}

// Blocks in reverse post-order from the entry: every block after its dominators, as SPIR-V requires.
Words Builder::serialize_function() const {
  std::vector<const Block*> post;
  std::map<const Block*, bool> seen;
  std::vector<std::pair<const Block*, size_t>> stack{{blocks_.front().get(), 0}};
  seen[blocks_.front().get()] = true;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < b->successors.size()) {
      const Block* s = b->successors[next++];
      if (!seen[s]) {
        seen[s] = true;
        stack.emplace_back(s, 0);
      }
    } else {
      post.push_back(b);
      stack.pop_back();
    }
  }
  Words out;
  append_inst(out, spv::OpFunction, {void_type_, main_, uint32_t(spv::FunctionControlMaskNone), main_type_});
  for (auto it = post.rbegin(); it != post.rend(); ++it) {
    const Block* b = *it;
    append_inst(out, spv::OpLabel, {b->label});
    for (const auto& phi : b->phis) {
      Words ops{phi->type, phi->result};
      for (const auto& [value, from] : phi->incoming) {
        ops.push_back(value);
        ops.push_back(from->label);
      }
      append_inst(out, spv::OpPhi, ops);
    }
    out.insert(out.end(), b->body.begin(), b->body.end());
    out.insert(out.end(), b->terminator.begin(), b->terminator.end());
  }
  append_inst(out, spv::OpFunctionEnd, {});
  return out;
}

}  // namespace nxv::codegen::spirv
