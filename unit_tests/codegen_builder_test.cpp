// The SPIR-V builder on its own: deduplication, structured control flow and
// hoisting (at_level) must always yield valid modules.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "codegen/kernel.h"
#include "codegen/spirv_builder.h"

namespace nxv::codegen {
namespace {

using spirv::Builder;
using spirv::Id;

uint32_t vk11() { return generic_caps().api_version; }

TEST(SpirvBuilder, TypesAndConstantsAreDeduplicated) {
  Builder b;
  EXPECT_EQ(b.type_int(32), b.type_int(32));
  EXPECT_NE(b.type_int(32), b.type_int(64));
  EXPECT_EQ(b.const_int(32, 7), b.const_int(32, 7));
  EXPECT_NE(b.const_f32(0.0f), b.const_f32(-0.0f));  // by bits: -0.0 stays distinct
  EXPECT_EQ(b.type_buffer_pointer(b.type_float(32), 4), b.type_buffer_pointer(b.type_float(32), 4));
}

TEST(SpirvBuilder, PureInstructionsAreValueNumbered) {
  Builder b;
  Id u = b.type_int(32);
  b.begin_main();
  Id x = b.builtin_x(spv::BuiltInGlobalInvocationId);
  Id a = b.op(spv::OpIAdd, u, {x, b.const_int(32, 1)});
  EXPECT_EQ(a, b.op(spv::OpIAdd, u, {x, b.const_int(32, 1)}));
  b.end_main(1);
  EXPECT_EQ(validate(b.finish(), vk11()), "");
}

// Index arithmetic on constants folds to constants, so emitters can decide statically
// (concatenate reads only the operand a constant position falls in); anything else is
// emitted, division by zero included (SPIR-V leaves it undefined: not ours to define).
TEST(SpirvBuilder, IntegerArithmeticOnConstantsFolds) {
  Builder b;
  Id u = b.type_int(32);
  b.begin_main();
  auto c = [&](uint64_t v) { return b.const_int(32, v); };
  EXPECT_EQ(b.op(spv::OpIAdd, u, {c(2), c(3)}), c(5));
  EXPECT_EQ(b.op(spv::OpISub, u, {c(2), c(3)}), c(0xffffffff));  // wraps in 32 bits
  EXPECT_EQ(b.op(spv::OpIMul, u, {c(6), c(7)}), c(42));
  EXPECT_EQ(b.op(spv::OpUDiv, u, {c(7), c(2)}), c(3));
  EXPECT_EQ(b.op(spv::OpUMod, u, {c(7), c(2)}), c(1));
  EXPECT_EQ(b.ext(GLSLstd450UMin, u, {c(7), c(2)}), c(2));
  EXPECT_EQ(b.ext(GLSLstd450UMax, u, {c(7), c(2)}), c(7));
  EXPECT_EQ(b.int_constant(c(9)), std::optional<uint64_t>(9));
  Id x = b.builtin_x(spv::BuiltInGlobalInvocationId);
  EXPECT_EQ(b.int_constant(x), std::nullopt);
  EXPECT_EQ(b.int_constant(b.op(spv::OpIAdd, u, {x, c(1)})), std::nullopt);
  EXPECT_EQ(b.int_constant(b.op(spv::OpUDiv, u, {c(1), c(0)})), std::nullopt);
  b.end_main(1);
  EXPECT_EQ(validate(b.finish(), vk11()), "");
}

// unknown() hides from the driver what it could know when it compiles the module, a constant
// or arithmetic on constants, behind the push-constant zero (comparisons' literal operands);
// unfoldable() hides only the arithmetic; a value computed at run time stays itself.
TEST(SpirvBuilder, UnknownHidesConstantsAndArithmeticOnThem) {
  Builder b;
  Id f = b.type_float(32);
  b.begin_main();
  Id k = b.const_f32(-1.0f);
  Id hidden = b.unknown(k);
  EXPECT_NE(hidden, k);
  EXPECT_EQ(b.unknown(k), hidden);
  EXPECT_EQ(b.unfoldable(k), k);
  Id sum = b.op(spv::OpFAdd, f, {k, b.const_f32(2.0f)});
  EXPECT_NE(b.unknown(sum), sum);
  EXPECT_EQ(b.unfoldable(sum), b.unknown(sum));
  Id x = b.op(spv::OpConvertUToF, f, {b.builtin_x(spv::BuiltInGlobalInvocationId)});
  EXPECT_EQ(b.unknown(x), x);
  EXPECT_EQ(b.unknown(b.op(spv::OpFAdd, f, {x, k})), b.op(spv::OpFAdd, f, {x, k}));
  EXPECT_EQ(b.push_constant_bytes(), 4u);
  b.end_main(1);
  EXPECT_EQ(validate(b.finish(), vk11()), "");
}

// A loop containing an if/else, then a loop hoisted out of the inner construct.
TEST(SpirvBuilder, NestedConstructsAndHoistingValidate) {
  Builder b;
  Id u = b.type_int(32), boolean = b.type_bool();
  Id buf = b.storage_buffer(u, 4, 0, false);
  Id ptr = b.type_pointer(spv::StorageClassStorageBuffer, u);
  b.begin_main();
  Id gid = b.builtin_x(spv::BuiltInGlobalInvocationId);
  auto c = [&](uint32_t v) { return b.const_int(32, v); };
  Id hoisted_sum = 0;
  auto out = b.loop(
      {u}, {c(0)}, [&](const Builder::Values& s) { return b.op(spv::OpULessThan, boolean, {s[0], c(10)}); },
      [&](const Builder::Values& s) {
        auto r = b.if_else(
            b.op(spv::OpULessThan, boolean, {s[0], c(5)}), {u},
            [&] {
              // Depends only on gid: emitted at level 0, before the outer loop.
              auto sum = b.at_level(b.level_of(gid), [&] {
                return b.loop(
                    {u, u}, {c(0), c(0)},
                    [&](const Builder::Values& t) { return b.op(spv::OpULessThan, boolean, {t[1], gid}); },
                    [&](const Builder::Values& t) {
                      return Builder::Values{b.op(spv::OpIAdd, u, {t[0], t[1]}), b.op(spv::OpIAdd, u, {t[1], c(1)})};
                    },
                    64);
              });
              hoisted_sum = sum[0];
              return Builder::Values{b.op(spv::OpIAdd, u, {s[0], sum[0]})};
            },
            [&] { return Builder::Values{s[0]}; });
        b.if_then(b.op(spv::OpIEqual, boolean, {r[0], c(3)}), [&] {
          b.op_void(spv::OpStore, {b.op(spv::OpAccessChain, ptr, {buf, c(0), gid}), r[0]});
        });
        return Builder::Values{b.op(spv::OpIAdd, u, {s[0], c(1)})};
      },
      10);
  b.op_void(spv::OpStore, {b.op(spv::OpAccessChain, ptr, {buf, c(0), c(1)}), out[0]});
  b.end_main(8);
  EXPECT_EQ(b.level_of(hoisted_sum), 0);
  auto words = b.finish();
  EXPECT_EQ(validate(words, vk11()), "") << disassemble(words);
  EXPECT_NE(to_glsl(words).find("void main()"), std::string::npos);
}

// Loop steps (each run of a loop: its trips + 1, and a step for each loop in its body, which
// its last test runs with no invocation active): inside the position loop per trip of it,
// nested loops multiplied by their enclosing trips; a loop hoisted out of it counts once.
TEST(SpirvBuilder, LoopStepsBoundTheIterationsOfAnInvocation) {
  Builder b;
  Id u = b.type_int(32), boolean = b.type_bool();
  b.begin_main();
  Id gid = b.builtin_x(spv::BuiltInGlobalInvocationId);
  auto c = [&](uint32_t v) { return b.const_int(32, v); };
  auto counting = [&](Id start, uint32_t n, const std::function<void(Id)>& inside, uint64_t max_trips) {
    return b.loop(
        {u}, {start}, [&](const Builder::Values& s) { return b.op(spv::OpULessThan, boolean, {s[0], c(n)}); },
        [&](const Builder::Values& s) {
          inside(s[0]);
          return Builder::Values{b.op(spv::OpIAdd, u, {s[0], c(1)})};
        },
        max_trips);
  };
  b.position_loop(
      {u}, {gid}, [&](const Builder::Values& p) { return b.op(spv::OpULessThan, boolean, {p[0], c(1000)}); },
      [&](const Builder::Values& p) {
        b.at_level(b.level_of(gid), [&] { return counting(gid, 7, [](Id) {}, 7); });
        counting(p[0], 10, [&](Id i) { counting(i, 5, [](Id) {}, 5); }, 10);
        return Builder::Values{b.op(spv::OpIAdd, u, {p[0], c(64)})};
      });
  b.end_main(64);
  EXPECT_EQ(b.loop_steps().outside, 8u + 2u);            // the hoisted loop; the position loop's last test
  EXPECT_EQ(b.loop_steps().per_trip, 11u + 10u * 6u + 1u);  // the outer loop's last test runs the inner once
  EXPECT_EQ(b.loop_steps().loops, 4u);
  EXPECT_EQ(validate(b.finish(), vk11()), "");
}

TEST(SpirvBuilder, ValidatorReportsBrokenModules) {
  std::vector<uint32_t> junk = {0x07230203, 0x00010300, 0, 5, 0, 42};
  EXPECT_NE(validate(junk, vk11()), "");
}

}  // namespace
}  // namespace nxv::codegen
