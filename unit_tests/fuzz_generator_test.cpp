// The differential fuzzer's graph generator (fuzz/graph_gen.h): a seed gives one graph and
// one set of inputs, and a thousand seeds reach every op family it is meant to cover.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fuzz/graph_gen.h"
#include "ir/json.h"
#include "ir/literal.h"

using namespace nxv;

namespace {

void collect_ops(const ir::Graph& g, std::set<std::string>& ops) {
  for (const auto& n : g.nodes) {
    ops.insert(n.op);
    for (const auto& [name, region] : n.regions) collect_ops(*region, ops);
  }
}

TEST(FuzzGenerator, ASeedGivesOneGraphAndItsInputs) {
  const fuzz::GenOptions opts;
  for (uint64_t seed : {7u, 176u, 8678u}) {
    const ir::Graph a = fuzz::generate_graph(seed, opts), b = fuzz::generate_graph(seed, opts);
    EXPECT_EQ(ir::write_graph(a), ir::write_graph(b)) << "seed " << seed;
    const auto ia = fuzz::generate_inputs(a, seed, opts), ib = fuzz::generate_inputs(b, seed, opts);
    ASSERT_EQ(ia.size(), ib.size());
    for (size_t i = 0; i < ia.size(); ++i) EXPECT_EQ(ia[i].data, ib[i].data) << "seed " << seed << " input " << i;
  }
}

// Each graph is verified as it is made (generate_graph throws otherwise); a generator that
// stopped making some family would leave the fuzzer blind to it without failing anything.
TEST(FuzzGenerator, AThousandSeedsReachEveryFamily) {
  const fuzz::GenOptions opts;
  std::set<std::string> ops;
  for (uint64_t seed = 1; seed <= 1000; ++seed) collect_ops(fuzz::generate_graph(seed, opts), ops);
  for (const char* op : {"parameter", "constant", "tensor", "iota", "eye", "exp", "negate", "is_nan", "add",
                         "bitwise_and", "equal", "select", "clip", "as_type", "bitcast", "reshape", "transpose",
                         "reverse", "slice", "broadcast", "concatenate", "pad", "squeeze", "stack", "put_slice",
                         "gather", "indexed_add", "indexed_put", "sum", "product", "reduce_max", "all", "argmax",
                         "argmin", "cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max",
                         "argsort", "dot", "attention", "while", "cond", "elem"})
    EXPECT_TRUE(ops.count(op)) << op << " in none of seeds 1-1000";
}

}  // namespace
