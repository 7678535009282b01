// OpIsNan and OpIsInf as integer tests on a float's bits, for the float widths whose kernels
// cannot declare SignedZeroInfNanPreserve (Builder::test_specials_on_bits).
#include "codegen/spirv_builder.h"

namespace nxv::codegen::spirv {

// Without the execution mode a driver's compiler may assume that no value is NaN or Inf and
// fold OpIsNan to false: NVIDIA's did, held to the apple-m1-moltenvk and vulkan-minimum
// profiles, so clip(NaN, lo, hi) gave lo. Integer compares are not float arithmetic, so no
// fast-math assumption reaches them.
void Builder::test_specials_on_bits(bool f32, bool f64) {
  bits_tested_f32_ = f32;
  bits_tested_f64_ = f64;
}

std::pair<int, uint32_t> Builder::float_shape(Id type) const {
  for (int bits : {32, 64}) {
    auto f = types_.find({uint32_t(spv::OpTypeFloat), uint32_t(bits)});
    if (f == types_.end()) continue;
    if (type == f->second) return {bits, 1};
    for (uint32_t n = 2; n <= 4; ++n)
      if (auto v = types_.find({uint32_t(spv::OpTypeVector), f->second, n}); v != types_.end() && v->second == type)
        return {bits, n};
  }
  return {0, 0};
}

Id Builder::special_on_bits(spv::Op opcode, Id type, Id x) {
  const auto [bits, n] = float_shape(type_of(x));
  if (!(bits == 32 ? bits_tested_f32_ : bits == 64 && bits_tested_f64_)) return 0;
  const Id u = type_int(32), boolean = type_bool();
  const bool nan = opcode == spv::OpIsNan;
  auto splat = [&](Id t, Id scalar, uint32_t lanes) {
    return lanes == 1 ? scalar : op(spv::OpCompositeConstruct, t, std::vector<Id>(lanes, scalar));
  };
  if (bits == 32) {
    const Id ut = n == 1 ? u : type_vector(u, n);
    const Id mag = op(spv::OpBitwiseAnd, ut, {op(spv::OpBitcast, ut, {x}), splat(ut, const_int(32, 0x7FFFFFFF), n)});
    return op(nan ? spv::OpUGreaterThan : spv::OpIEqual, type, {mag, splat(ut, const_int(32, 0x7F800000), n)});
  }
  // f64 as two words, low first (no Int64 needed): Inf is an exponent of all ones over a zero
  // fraction, NaN the same exponent over any other.
  const Id words = op(spv::OpBitcast, type_vector(u, 2 * n), {x});
  std::vector<Id> lanes;
  for (uint32_t i = 0; i < n; ++i) {
    const Id lo = op(spv::OpCompositeExtract, u, {words}, {2 * i});
    const Id hi = op(spv::OpBitwiseAnd, u, {op(spv::OpCompositeExtract, u, {words}, {2 * i + 1}), const_int(32, 0x7FFFFFFF)});
    const Id top = const_int(32, 0x7FF00000);
    const Id at_top = op(spv::OpIEqual, boolean, {hi, top});
    const Id lo_zero = op(spv::OpIEqual, boolean, {lo, const_int(32, 0)});
    lanes.push_back(nan ? op(spv::OpLogicalOr, boolean, {op(spv::OpUGreaterThan, boolean, {hi, top}),
                                                         op(spv::OpLogicalAnd, boolean, {at_top, op(spv::OpLogicalNot, boolean, {lo_zero})})})
                        : op(spv::OpLogicalAnd, boolean, {at_top, lo_zero}));
  }
  return n == 1 ? lanes[0] : op(spv::OpCompositeConstruct, type, lanes);
}

}  // namespace nxv::codegen::spirv
