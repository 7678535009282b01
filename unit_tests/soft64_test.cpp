// The emulated 64-bit values' shared steps (codegen/soft64.h): words, pairs and selects.
#include "soft_testing.h"

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

}  // namespace
}  // namespace nxv::softtest
