// The emulated 64-bit values' shared steps (codegen/soft64.h): words, pairs and selects.
#include <cstdio>

#include "codegen/soft_f64.h"
#include "codegen/soft_f64_sum.h"
#include "soft_testing.h"
#include "spirv_testing.h"

namespace nxv::softtest {
namespace {

TEST(Soft64, WordsAndSelectsKeepEveryBit) {
  auto dev = soft_device();
  std::mt19937_64 rng(7);
  std::vector<uint64_t> a(1000), b(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = rng(), b[i] = rng();
  // Swapping words, then choosing by the low bit of a's low word.
  auto r = run_soft(
      dev,
      [](Soft64& s, const std::vector<Id>& x) {
        Id swapped = s.pair(s.hi(x[0]), s.lo(x[0]));
        Id odd = s.test(spv::OpINotEqual, {s.op(spv::OpBitwiseAnd, {s.lo(x[0]), s.c(1)}), s.c(0)});
        return s.select(odd, swapped, x[1]);
      },
      {a, b});
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t swapped = (a[i] << 32) | (a[i] >> 32);
    ASSERT_EQ(r[i], (a[i] & 1) ? swapped : b[i]) << i;
  }
}


// A module computing `routine` on loaded operands (or returning its first operand).
std::vector<uint32_t> routine_module(int operands, const std::function<Id(Soft64&, const std::vector<Id>&)>& routine,
                                     bool with_routine, bool native_int64 = false) {
  spirv::Builder b;
  b.set_native_int64(native_int64);
  Soft64 s(b);
  Id buffer = b.storage_buffer(s.uvec2, 8, 0, false);
  b.begin_main();
  Id ptr = b.type_pointer(spv::StorageClassStorageBuffer, s.uvec2);
  std::vector<Id> args;
  for (int i = 0; i < operands; ++i)
    args.push_back(b.op(spv::OpLoad, s.uvec2, {b.op(spv::OpAccessChain, ptr, {buffer, s.c(0), s.c(uint32_t(i))})}));
  Id r = with_routine ? routine(s, args) : args[0];
  b.op_void(spv::OpStore, {b.op(spv::OpAccessChain, ptr, {buffer, s.c(0), s.c(0)}), r});
  b.end_main(1);
  return b.finish();
}

// A wide sum's accumulator from two uvec2s' words, added in 64-bit integers where the
// builder has them.
codegen::soft::WideSum wide(Soft64& s, Id a, Id b) {
  const auto adds = s.b.native_int64() ? codegen::soft::SumAdds::int64 : codegen::soft::SumAdds::words;
  return {s.lo(a), {s.hi(a), s.lo(b), s.hi(b), s.lo(a)}, s.hi(b), adds};
}

// The emulated routines' sizes, which is what emulated f64 costs a device where it has work
// enough to fill it, and their longest dependent chains, which is what it costs where it has
// not: printed for the record (bench/results) and held under budgets (a few percent above
// them) so that a change that grows one shows here. Beside them, the same with native 64-bit
// integer steps (Builder::native_int64), for the record.
TEST(Soft64, RoutineSizesStayWithinBudget) {
  namespace soft = codegen::soft;
  using Routine = std::function<Id(Soft64&, const std::vector<Id>&)>;
  struct Row {
    const char* name;
    int operands;
    size_t budget;
    Routine routine;
    size_t depth_budget = 0;  // 0: none
  };
  const Row rows[] = {
      {"add", 2, 140, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_add(s, x[0], x[1]); }, 44},
      {"mul", 2, 190, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul(s, x[0], x[1]); }},
      {"div", 2, 320, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_div(s, x[0], x[1]); }},
      {"fma", 3, 390, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_fma(s, x[0], x[1], x[2]); }},
      {"sqrt", 1, 240, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_sqrt(s, x[0]); }},
      {"mul normal", 2, 102, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul_normal(s, x[0], x[1]); }, 16},
      // Both forms and the test between them (each side's copies of the operands included).
      {"mul branching", 2, 340, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_mul_branching(s, x[0], x[1]); }},
      {"div normal", 2, 230, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_div_normal(s, x[0], x[1]); }},
      {"fma normal", 3, 280, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_fma_normal(s, x[0], x[1], x[2]); }},
      {"less than", 2, 48,
       [](Soft64& s, const std::vector<Id>& x) {
         return s.select(soft::f64_compare(s, spv::OpFOrdLessThan, x[0], x[1]), s.c64(1), s.c64(0));
       }},
      {"floor", 1, 62, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_floor(s, x[0]); }},
      {"round_even", 1, 88, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_round_even(s, x[0]); }},
      {"ldexp", 2, 104, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_ldexp(s, x[0], s.lo(x[1])); }},
      {"to f32", 1, 53,
       [](Soft64& s, const std::vector<Id>& x) {
         Id f = soft::f64_to_f32(s, x[0]);
         return s.pair(s.b.op(spv::OpBitcast, s.u32, {f}), s.c(0));
       }},
      {"from f32", 1, 30,
       [](Soft64& s, const std::vector<Id>& x) {
         return soft::f64_from_f32(s, s.b.op(spv::OpBitcast, s.b.type_float(32), {s.lo(x[0])}));
       }},
      {"from s32", 1, 23, [](Soft64& s, const std::vector<Id>& x) { return soft::f64_from_int(s, s.lo(x[0]), 32, true); }},
      {"to s32", 1, 23,
       [](Soft64& s, const std::vector<Id>& x) { return s.pair(soft::f64_to_int(s, x[0], 32, true), s.c(0)); }},
      // An emulated sum's step (its rare branch included), combination and rounding
      // (soft_f64_sum.h), on accumulators made of the operands' words.
      {"sum step", 3, 215,
       [](Soft64& s, const std::vector<Id>& x) {
         auto r = soft::wide_sum_add(s, wide(s, x[1], x[2]), x[0]);
         return s.pair(s.op(spv::OpBitwiseXor, {r.m[0], r.m[3]}), s.op(spv::OpBitwiseXor, {r.m[1], r.m[2]}));
       }},
      {"sum settle", 2, 92,
       [](Soft64& s, const std::vector<Id>& x) {
         auto r = soft::wide_sum_settled(s, wide(s, x[0], x[1]));
         return s.pair(s.op(spv::OpBitwiseXor, {r.m[0], r.m[3]}), s.op(spv::OpBitwiseXor, {r.m[1], r.exp}));
       }},
      {"sum rescale", 3, 46,
       [](Soft64& s, const std::vector<Id>& x) {
         auto r = soft::wide_sum_rescaled(s, wide(s, x[0], x[1]), s.lo(x[2]));
         return s.pair(s.op(spv::OpBitwiseXor, {r.m[0], r.m[3]}), s.op(spv::OpBitwiseXor, {r.m[1], r.m[2]}));
       }},
      {"sum combine", 4, 33,
       [](Soft64& s, const std::vector<Id>& x) {
         auto r = soft::wide_sum_combine(s, wide(s, x[0], x[1]), wide(s, x[2], x[3]));
         return s.pair(s.op(spv::OpBitwiseXor, {r.m[0], r.m[3]}), s.op(spv::OpBitwiseXor, {r.m[1], r.m[2]}));
       }},
      {"sum round", 2, 135, [](Soft64& s, const std::vector<Id>& x) { return soft::wide_sum_round(s, wide(s, x[0], x[1])); }},
  };
  for (const Row& row : rows) {
    const auto module = routine_module(row.operands, row.routine, true);
    const size_t size =
        spirvtest::function_instructions(module) - spirvtest::function_instructions(routine_module(row.operands, row.routine, false));
    const size_t depth = spirvtest::dependent_depth(module);
    const auto native = routine_module(row.operands, row.routine, true, true);
    const size_t native_size =
        spirvtest::function_instructions(native) - spirvtest::function_instructions(routine_module(row.operands, row.routine, false, true));
    std::printf("[ size     ] %-13s %4zu instructions, %3zu deep; with int64 %4zu, %3zu deep\n", row.name, size, depth, native_size,
                spirvtest::dependent_depth(native));
    EXPECT_GT(size, 0u) << row.name;
    EXPECT_LE(size, row.budget) << row.name;
    if (row.depth_budget) {
      EXPECT_LE(depth, row.depth_budget) << row.name;
    }
  }
}

}  // namespace
}  // namespace nxv::softtest
