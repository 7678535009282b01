// compile_serial_loop: the stages of a loop nest in one workgroup (serial_loop.h).
//
// Every value of the nest has storage of its own in a scratch buffer of its type, written
// by the stage that computes it, so stages read what earlier ones wrote after a barrier.
// All invocations take every branch and loop trip together: predicates are read from
// storage after a barrier, so control flow stays uniform.
//
// Loop steps: where the driver ends a dispatch's loops after a number of steps (lavapipe),
// the kernel counts its own (each stage's, known statically, one per trip of a loop, and
// what the driver runs with no invocation active: the branches not taken, a loop's body
// on its last test; Builder::LoopSteps).
// Before each trip it checks that the steps left cover `reserve`, which bounds what the
// stretch of stages up to the next check can take plus what the enclosing iterations
// still run once every loop stops. If not, every loop stops at its next test and the loop's
// current iteration is not committed: its state stays as the last complete iteration left
// it, and the runtime dispatches again from there.
#include "codegen/serial_loop.h"

#include <algorithm>
#include <functional>

#include "codegen/emitter.h"
#include "codegen/targets/launch.h"
#include "ir/literal.h"

namespace nxv::codegen {

using ir::DType;

namespace {

// A dispatch's budget of loop steps where the driver sets none, as lavapipe's: it keeps a
// dispatch short (milliseconds), so that the host sees its deadline between dispatches.
constexpr uint64_t kStepsWithoutDriverLimit = 65535;

const ir::Graph& no_graph() {
  static const ir::Graph g;
  return g;
}

bool same_storage(const BufferRef& a, const BufferRef& b) { return a.variable == b.variable && a.base == b.base; }

struct Copy {
  BufferRef to, from;
  int64_t elements;
};

class SerialEmitter {
 public:
  SerialEmitter(spirv::Builder& b, const DeviceCaps& caps, uint64_t reserve, uint64_t limit)
      : b_(b), caps_(caps), util_(b, caps, no_graph()), wg_(serial_workgroup_size(caps)), reserve_(reserve),
        limit_(limit) {}

  SerialLoopBinary run(const ir::Node& loop, const SerialRegion& condition, const SerialRegion& body) {
    loop_ = &loop;
    std::vector<BufferRef> state;
    for (size_t k = 0; k < loop.results.size(); ++k)
      state.push_back(declare(Binding::Kind::Output, int(k), loop.results[k].dtype, false));
    const BufferRef control = declare(Binding::Kind::Control, 0, DType::U32, false);

    b_.begin_main();
    local_ = b_.builtin_x(spv::BuiltInLocalInvocationId);
    steps_ = private_u32();
    abort_ = private_u32();
    committed_ = private_u32();
    for (Id v : {steps_, abort_, committed_}) b_.op_void(spv::OpStore, {v, util_.u32c(0)});
    nested_loop(loop, condition, body, {}, &state);
    Id done = b_.op(spv::OpIEqual, util_.boolean(), {load_private(abort_), util_.u32c(0)});
    b_.if_then(b_.op(spv::OpIEqual, util_.boolean(), {local_, util_.u32c(0)}), [&] {
      util_.store(control, util_.u32c(kSerialDone), util_.select(DType::U32, done, util_.u32c(1), util_.u32c(0)));
      util_.store(control, util_.u32c(kSerialCommitted), load_private(committed_));
    });
    declare_float_controls(b_, caps_);
    b_.end_main(wg_);

    if (out_.kernel.bindings.size() > caps_.max_storage_buffers)
      throw ir::IrError(loop, "a serial loop needs " + std::to_string(out_.kernel.bindings.size()) +
                                  " storage buffers; " + caps_.name + " allows " +
                                  std::to_string(caps_.max_storage_buffers) + " per kernel");
    for (size_t s = 0; s < scratch_.size(); ++s)
      out_.scratch_bytes.push_back(std::max<uint64_t>(16, uint64_t(scratch_[s].elements) * ir::dtype_bytes(scratch_[s].dtype)));
    out_.kernel.workgroup_size[0] = wg_;
    out_.kernel.push_constant_bytes = b_.push_constant_bytes();
    out_.kernel.spirv = b_.finish();
    return std::move(out_);
  }

 private:
  struct Scratch {
    DType dtype;
    Id variable;
    int64_t elements = 0;
  };

  BufferRef declare(Binding::Kind kind, int index, DType t, bool read_only) {
    util_.require_type(*loop_, t);
    const uint32_t binding = uint32_t(out_.kernel.bindings.size());
    out_.kernel.bindings.push_back({kind, index, t});
    BufferRef ref{b_.storage_buffer(util_.storage_type(t), util_.storage_stride(t), binding, read_only), t};
    if (!read_only) {
      b_.decorate(ref.variable, spv::DecorationCoherent);
      ref.written_in_kernel = true;
    }
    return ref;
  }

  BufferRef scratch(const ir::TensorType& t) {
    auto it = std::find_if(scratch_.begin(), scratch_.end(), [&](const Scratch& s) { return s.dtype == t.dtype; });
    if (it == scratch_.end()) {
      const Id var = declare(Binding::Kind::Scratch, int(scratch_.size()), t.dtype, false).variable;
      scratch_.push_back({t.dtype, var});
      it = scratch_.end() - 1;
    }
    BufferRef ref{it->variable, t.dtype, 1, it->elements ? util_.u32c(uint64_t(it->elements)) : 0, true};
    it->elements += std::max<int64_t>(t.num_elements(), 1);
    if (it->elements >= (int64_t(1) << 31)) throw ir::IrError("a serial loop's scratch exceeds 32-bit indexing");
    return ref;
  }

  // Literals of one type share a buffer, as scratch does: a driver binds few buffers (32 on lavapipe).
  BufferRef constant(const ir::Node& n) {
    const ir::Literal lit = ir::literal_of(n);
    const DType t = lit.type.dtype;
    auto it = std::find_if(out_.constants.begin(), out_.constants.end(), [&](const ir::Literal& c) { return c.type.dtype == t; });
    if (it == out_.constants.end()) {
      constant_vars_.push_back(declare(Binding::Kind::Constant, int(out_.constants.size()), t, true).variable);
      out_.constants.push_back({{t, {0}}, {}});
      it = out_.constants.end() - 1;
    }
    const size_t slot = size_t(it - out_.constants.begin());
    const int64_t offset = it->type.shape[0];
    it->data.insert(it->data.end(), lit.data.begin(), lit.data.end());
    it->type.shape[0] += lit.type.num_elements();
    return BufferRef{constant_vars_[slot], t, 1, offset ? util_.u32c(uint64_t(offset)) : 0, false};
  }

  Id private_u32() {
    return b_.global_variable(b_.type_pointer(spv::StorageClassPrivate, util_.u32()), spv::StorageClassPrivate);
  }
  Id load_private(Id var) { return b_.op_in_place(spv::OpLoad, util_.u32(), {var}); }
  void add_steps(uint64_t n) {
    if (n == 0) return;
    b_.op_void(spv::OpStore, {steps_, b_.op(spv::OpIAdd, util_.u32(), {load_private(steps_), util_.u32c(n)})});
  }

  // Positions local, local + wg, ... below `items`, then a barrier; at(pos) computes one.
  void positions(int64_t items, const std::function<void(Id)>& at) {
    if (items <= 0) return;
    const uint64_t before = b_.loop_steps().outside;
    const int floor = b_.hoist_floor();
    b_.set_hoist_floor(b_.level());
    const uint64_t trips = (uint64_t(items) + wg_ - 1) / wg_;
    if (trips == 1) {  // straight-line: no loop steps, and smaller code for the driver to compile
      if (uint64_t(items) == wg_) at(local_);
      else b_.if_then(b_.op(spv::OpULessThan, util_.boolean(), {local_, util_.u32c(uint64_t(items))}), [&] { at(local_); });
    } else {
      b_.loop(
          {util_.u32()}, {local_},
          [&](const spirv::Builder::Values& p) { return b_.op(spv::OpULessThan, util_.boolean(), {p[0], util_.u32c(uint64_t(items))}); },
          [&](const spirv::Builder::Values& p) {
            at(p[0]);
            return spirv::Builder::Values{b_.op(spv::OpIAdd, util_.u32(), {p[0], util_.u32c(wg_)})};
          },
          trips);
    }
    b_.set_hoist_floor(floor);
    b_.storage_barrier(serial_subgroup_barriers(caps_) ? spv::ScopeSubgroup : spv::ScopeWorkgroup);
    add_steps(b_.loop_steps().outside - before);
  }

  // fn at a position of a stage over `items`, for a tensor of n <= items elements: where
  // pos < n, which the stage's positions already guarantee when n == items.
  void below(Id pos, int64_t n, int64_t items, const std::function<void()>& fn) {
    if (n == items) fn();
    else if (n > 0) b_.if_then(b_.op(spv::OpULessThan, util_.boolean(), {pos, util_.u32c(uint64_t(n))}), fn);
  }

  // One kernel of a lowered region: each result element at its position.
  void stage(const ir::Node& kernel, const std::vector<BufferRef>& ins, const std::vector<BufferRef>& outs) {
    const auto it = kernel.regions.find("body");
    if (it == kernel.regions.end() || !it->second) throw ir::IrError(kernel, "kernel without a body region");
    const ir::Graph& body = *it->second;
    Emitter e(b_, caps_, body);
    for (const auto& n : body.nodes)
      for (const auto& r : n.results) e.require_type(n, r.dtype);
    e.set_inputs(ins);
    int64_t items = 0;
    for (const auto& r : kernel.results) items = std::max(items, r.num_elements());
    positions(items, [&](Id pos) {
      for (size_t k = 0; k < kernel.results.size(); ++k) {
        below(pos, kernel.results[k].num_elements(), items, [&] {
          Index idx;
          idx.shape = kernel.results[k].shape;
          idx.linear = pos;
          e.store(outs[k], pos, e.value(body.node(body.outputs.at(k)), idx));
        });
      }
    });
  }

  void copy(const std::vector<Copy>& copies) {
    int64_t items = 0;
    for (const auto& c : copies) items = std::max(items, c.elements);
    positions(items, [&](Id pos) {
      for (const auto& c : copies) below(pos, c.elements, items, [&] { util_.store(c.to, pos, util_.load(c.from, pos)); });
    });
  }

  static const SerialRegion& nested(const SerialRegion& r, const ir::Node& n, const std::string& name) {
    const auto it = r.nested.find(n.id);
    if (it == r.nested.end() || !it->second.count(name) || !it->second.at(name))
      throw ir::IrError(n, "region '" + name + "' was not lowered for the serial loop");
    return *it->second.at(name);
  }

  // The region's nodes in order; returns where its outputs are.
  std::vector<BufferRef> region(const SerialRegion& r, const std::vector<BufferRef>& params) {
    std::map<ir::NodeId, std::vector<BufferRef>> at;
    auto args = [&](const ir::Node& n) {
      std::vector<BufferRef> refs;
      for (ir::NodeId a : n.args) refs.push_back(at.at(a).at(0));
      return refs;
    };
    for (const auto& n : r.graph.nodes) {
      if (n.op == "parameter") {
        const int64_t i = n.attrs.value("index", int64_t(-1));
        if (i < 0 || size_t(i) >= params.size())
          throw ir::IrError(n, "parameter index " + std::to_string(i) + " has no value in the serial loop");
        at[n.id] = {params[size_t(i)]};
      } else if (n.op == "constant" || n.op == "tensor") {
        at[n.id] = {constant(n)};
      } else if (n.op == "kernel") {
        std::vector<BufferRef> outs;
        for (const auto& t : n.results) outs.push_back(scratch(t));
        stage(n, args(n), outs);
        at[n.id] = outs;
      } else if (n.op == "elem") {
        at[n.id] = {at.at(n.args.at(0)).at(n.attrs.value("index", size_t(0)))};
      } else if (n.op == "while") {
        at[n.id] = nested_loop(n, nested(r, n, "condition"), nested(r, n, "body"), args(n), nullptr);
      } else if (n.op == "cond") {
        at[n.id] = cond(n, r, args(n));
      } else {
        throw ir::IrError(n, "a serial loop cannot run '" + n.op + "'");
      }
    }
    std::vector<BufferRef> outs;
    for (ir::NodeId o : r.graph.outputs) outs.push_back(at.at(o).at(0));
    return outs;
  }

  std::vector<BufferRef> cond(const ir::Node& n, const SerialRegion& r, const std::vector<BufferRef>& args) {
    const size_t preds = n.regions.size() - 1;
    std::vector<BufferRef> results;
    for (const auto& t : n.results) results.push_back(scratch(t));
    const std::vector<BufferRef> captured(args.begin() + std::ptrdiff_t(preds), args.end());
    std::vector<uint64_t> branch_loops(preds + 1);
    std::function<void(size_t)> from = [&](size_t k) {
      auto take = [&] {
        const uint64_t before = b_.loop_steps().loops;
        const auto outs = region(nested(r, n, "branch" + std::to_string(k)), captured);
        std::vector<Copy> copies;
        for (size_t i = 0; i < results.size(); ++i) copies.push_back({results[i], outs.at(i), n.results[i].num_elements()});
        copy(copies);
        branch_loops[k] = b_.loop_steps().loops - before;
      };
      if (k == preds) return take();
      b_.if_else(truthy(args.at(k)), {}, [&] { take(); return spirv::Builder::Values{}; },
                 [&] { from(k + 1); return spirv::Builder::Values{}; });
    };
    from(0);
    count_untaken(args, branch_loops);
    return results;
  }

  // The branches not taken run too where the driver's branches are masks (gallivm), with
  // no invocation active: a step for each loop in them (stages of more elements than the
  // group, nested whiles).
  void count_untaken(const std::vector<BufferRef>& preds, const std::vector<uint64_t>& branch_loops) {
    uint64_t total = 0;
    for (uint64_t l : branch_loops) total += l;
    if (total == 0) return;
    Id untaken = util_.u32c(total - branch_loops.back());
    for (size_t k = branch_loops.size() - 1; k-- > 0;)
      untaken = util_.select(DType::U32, truthy(preds.at(k)), util_.u32c(total - branch_loops[k]), untaken);
    b_.op_void(spv::OpStore, {steps_, b_.op(spv::OpIAdd, util_.u32(), {load_private(steps_), untaken})});
  }

  Id truthy(const BufferRef& scalar) { return util_.to_bool(util_.load(scalar, util_.u32c(0)), scalar.dtype); }

  // Whether the loop takes another trip: its predicate, and steps left for one more stretch.
  // Where they are not, every loop stops (abort).
  Id proceed(Id predicate) {
    Id ok = b_.op(spv::OpULessThanEqual, util_.boolean(), {load_private(steps_), util_.u32c(limit_ - reserve_)});
    Id aborted = b_.op(spv::OpINotEqual, util_.boolean(), {load_private(abort_), util_.u32c(0)});
    Id stop = b_.op(spv::OpLogicalAnd, util_.boolean(), {predicate, b_.op(spv::OpLogicalNot, util_.boolean(), {ok})});
    aborted = b_.op(spv::OpLogicalOr, util_.boolean(), {aborted, stop});
    b_.op_void(spv::OpStore, {abort_, util_.select(DType::U32, aborted, util_.u32c(1), util_.u32c(0))});
    return b_.op(spv::OpLogicalAnd, util_.boolean(),
                 {predicate, b_.op(spv::OpLogicalNot, util_.boolean(), {aborted})});
  }

  // The body's outputs become the state. An output that is another entry's current state
  // goes through scratch first: a stage's copies run in no particular order.
  void commit(const ir::Node& loop, const std::vector<BufferRef>& state, const std::vector<BufferRef>& outs) {
    std::vector<Copy> staged, direct;
    for (size_t k = 0; k < state.size(); ++k) {
      if (same_storage(outs.at(k), state[k])) continue;
      const int64_t n = loop.results[k].num_elements();
      const bool reads_state =
          std::any_of(state.begin(), state.end(), [&](const BufferRef& s) { return same_storage(outs[k], s); });
      if (!reads_state) {
        direct.push_back({state[k], outs[k], n});
        continue;
      }
      BufferRef tmp = scratch(loop.results[k]);
      staged.push_back({tmp, outs[k], n});
      direct.push_back({state[k], tmp, n});
    }
    if (!staged.empty()) copy(staged);
    if (!direct.empty()) copy(direct);
  }

  // A while: `root_state` set for the kernel's own loop, whose state bindings the runtime
  // initialises, and which commits only complete iterations.
  std::vector<BufferRef> nested_loop(const ir::Node& n, const SerialRegion& condition, const SerialRegion& body,
                                     const std::vector<BufferRef>& init, const std::vector<BufferRef>* root_state) {
    if (!root_state && init.size() != n.results.size())
      throw ir::IrError(n, "while with " + std::to_string(init.size()) + " arguments but " +
                               std::to_string(n.results.size()) + " results");
    std::vector<BufferRef> state;
    if (root_state) {
      state = *root_state;
    } else {
      // An entry the body passes on unchanged stays where its argument is: nothing writes
      // there while the loop runs (an enclosing loop commits after it). Nx code threads
      // whole arrays through its loops so (NNDescent's candidates, at every level).
      std::vector<Copy> from_init;
      for (size_t k = 0; k < n.results.size(); ++k) {
        const ir::Node& out = body.graph.node(body.graph.outputs.at(k));
        if (out.op == "parameter" && out.attrs.value("index", int64_t(-1)) == int64_t(k)) {
          state.push_back(init[k]);
          continue;
        }
        state.push_back(scratch(n.results[k]));
        from_init.push_back({state[k], init[k], n.results[k].num_elements()});
      }
      if (!from_init.empty()) copy(from_init);
    }

    auto predicate = [&] { return truthy(region(condition, state).at(0)); };
    const uint64_t loops_before = b_.loop_steps().loops;
    b_.loop(
        {util_.boolean()}, {proceed(predicate())}, [](const spirv::Builder::Values& go) { return go[0]; },
        [&](const spirv::Builder::Values&) {
          add_steps(1);
          const auto outs = region(body, state);
          if (root_state) {
            b_.if_then(b_.op(spv::OpIEqual, util_.boolean(), {load_private(abort_), util_.u32c(0)}), [&] {
              commit(n, state, outs);
              b_.op_void(spv::OpStore, {committed_, b_.op(spv::OpIAdd, util_.u32(), {load_private(committed_), util_.u32c(1)})});
            });
          } else {
            commit(n, state, outs);
          }
          return spirv::Builder::Values{proceed(predicate())};
        },
        1);
    // The last test, and the body once more with no invocation active (Builder::LoopSteps):
    // a step for this loop and each loop in it.
    add_steps(b_.loop_steps().loops - loops_before);
    return state;
  }

  spirv::Builder& b_;
  const DeviceCaps& caps_;
  Emitter util_;  // types, loads and stores outside any stage
  const uint32_t wg_;
  const uint64_t reserve_, limit_;
  const ir::Node* loop_ = nullptr;
  Id local_ = 0, steps_ = 0, abort_ = 0, committed_ = 0;
  std::vector<Scratch> scratch_;
  std::vector<Id> constant_vars_;  // by constant slot
  SerialLoopBinary out_;
};

}  // namespace

SerialLoopBinary compile_serial_loop(const ir::Node& loop, const SerialRegion& condition, const SerialRegion& body,
                                     const DeviceCaps& caps) {
  if (loop.op != "while") throw ir::IrError(loop, "a serial loop is a while");
  const uint64_t limit = caps.max_loop_steps ? caps.max_loop_steps : kStepsWithoutDriverLimit;
  // The kernel's loop steps with every loop taking one trip bound what runs from one check
  // to the next together with what the enclosing iterations still run after a stop (each
  // stage runs at most once in that stretch, and each loop ends at most once, its body
  // then running with no invocation active: no loop goes round without a check): that is
  // the reserve. The first emission measures it; the second uses it.
  auto emit = [&](uint64_t reserve, uint64_t* steps) {
    spirv::Builder b;
    b.emulate_64(caps.emulate_f64, caps.emulate_i64);
    b.set_native_int64(caps.int64);
    b.set_common_case_branches(branches_to_common_cases(caps));
    b.test_specials_on_bits(!caps.preserve_signed_zero_inf_nan_f32, !caps.preserve_signed_zero_inf_nan_f64);
    SerialEmitter e(b, caps, reserve, limit);
    SerialLoopBinary out = e.run(loop, condition, body);
    *steps = b.loop_steps().outside;
    return out;
  };
  uint64_t steps = 0;
  emit(0, &steps);
  const uint64_t reserve = steps + 16;
  if (reserve > limit / 2)
    throw ir::IrError(loop, "a serial loop would take " + std::to_string(steps) + " loop steps per iteration; " +
                                caps.name + " allows " + std::to_string(limit) + " per dispatch");
  SerialLoopBinary out = emit(reserve, &steps);
  if (const uint64_t max_words = serial_loop_max_words(caps); max_words && out.kernel.spirv.size() > max_words)
    throw ir::IrError(loop, "a serial loop of " + std::to_string(out.kernel.spirv.size()) + " SPIR-V words; " +
                                caps.name + " compiles at most " + std::to_string(max_words) + " in reasonable time");
  out.kernel.name = "k" + std::to_string(loop.id) + "_serial_while";
  out.kernel.fused_nodes = {loop.id};
  std::string err = validate(out.kernel.spirv, caps.api_version);
  if (!err.empty()) throw ir::IrError(loop, "generated SPIR-V does not validate (codegen bug): " + err);
  return out;
}

}  // namespace nxv::codegen
