// split-dot: a mid-size product with too few output tiles for the device's compute units (a
// ResNet stage-4 convolution: 1568 x 512 outputs, 52 tiles of 128x128 for 132 SMs) would
// leave most of them idle, or take smaller tiles that do less per load. Its contraction is
// split instead (split-K): the first contracted axis of the first operand and its pair (a
// convolution's input channels, ahead of its taps) are cut into S parts, a new batch axis of
// the dot, and a sum over that axis adds the partial products; the epilogue (bias,
// activation) fuses into the sum. A dot is split where the count that brings its tiles to
// the target's fill leaves each part the target's minimum of terms, and not where it reads
// its operands in place and the target's smaller tiles for it (64x128 f32 tiles on NVIDIA)
// fill the device whole. S is then the count up to twice that whose parts take the fewest
// waves of tiles times terms per part (plus a part's fixed cost), among those with the
// target's minimum of tiles: a count that leaves the last wave nearly empty loses to a
// smaller one with longer parts. Where S does not divide the axis, the axis is padded with
// zeros. The bounds (tile, tile counts, types) are the target's (KernelBounds::dot_tile and
// the rest); targets that do not know their compute units split nothing. The sum adds the
// parts in a different order than one accumulator would, as any tiling may
// (docs/numerics.md); integer sums wrap as the dot does, exactly.
#include <algorithm>
#include <cmath>

#include "ir/ops.h"
#include "passes/fusion_cost.h"
#include "passes/pass.h"
#include "passes/split_contraction.h"

namespace nxv::passes {
namespace {

using ir::Graph;
using ir::Node;

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

// Whether a dot reads operand `id` in place (through transposes and reshapes) rather than
// computing it in its prologue (a convolution's windows, sliced and padded; a conversion):
// the target's smaller tiles fill the device only for the former, and products whose
// prologue gathers run faster split. What fuse gives a buffer of its own (a gather, any
// arithmetic) is read in place.
bool read_in_place(const Graph& g, ir::NodeId id) {
  const Node* n = &g.node(id);
  while (n->op == "transpose" || n->op == "reshape") n = &g.node(n->args.at(0));
  return !cheap_prologue(*n);
}

class SplitDot : public Pass {
 public:
  std::string name() const override { return "split-dot"; }

  void run(Graph& g) override {
    if (bounds_.dot_tile <= 0) return;
    std::vector<Node> out;
    ir::NodeId next = g.next_id();
    // Nodes are copied, not moved: later nodes still look up their operands in g.
    for (const Node& n : g.nodes) {
      const int64_t parts = n.op == "dot" ? parts_of(g, n) : 1;
      if (parts > 1) split_contraction(g, n, 0, parts, bounds_.f32_accumulates_in_f64, next, out);
      else out.push_back(n);
    }
    g.nodes = std::move(out);
    g.reindex();
  }

 private:
  // The parts of the dot's first contracted axis pair; 1: the dot stays whole.
  int64_t parts_of(const Graph& g, const Node& n) const {
    if (!bounds_.dot_split_types.count(n.type().dtype)) return 1;
    const ir::Shape& a = g.node(n.args.at(0)).type().shape;
    const ir::Shape& b = g.node(n.args.at(1)).type().shape;
    const ContractionAxes ax = ContractionAxes::of(n);
    if (ax.c1.empty() || ax.c1.size() != ax.c2.size() || ax.b1.size() != ax.b2.size()) return 1;  // the verifier names it
    int64_t batch = 1, contraction = 1;
    for (int64_t x : ax.b1) batch *= a.at(x);
    for (int64_t x : ax.c1) contraction *= a.at(x);
    const int64_t rows = ir::num_elements(a) / std::max<int64_t>(1, batch * contraction);
    const int64_t cols = ir::num_elements(b) / std::max<int64_t>(1, batch * contraction);
    // Tiles' worth of outputs, as the target's tile choice counts them (outputs, not whole
    // tiles: a ragged edge does not fill the device any more).
    const double outputs = double(batch) * double(rows) * double(cols);
    const double tiles = outputs / double(bounds_.dot_tile * bounds_.dot_tile);
    if (tiles <= 0 || tiles >= double(bounds_.dot_min_tiles)) return 1;
    if (bounds_.dot_whole_types.count(n.type().dtype) && read_in_place(g, n.args[0]) && read_in_place(g, n.args[1]) &&
        outputs >= double(bounds_.dot_min_tiles) * double(bounds_.dot_whole_tile))
      return 1;
    const int64_t want = int64_t(std::ceil(double(bounds_.dot_fill_tiles) / tiles));
    const int64_t extent = a.at(ax.c1[0]);
    if (want < 2 || want > extent || contraction / want < bounds_.dot_min_part) return 1;
    // Whole tiles, as the parts launch them, in waves of dot_wave_tiles: a part count whose
    // tiles spill a few past a wave pays for the whole wave.
    const int64_t whole_tiles = batch * ceil_div(rows, bounds_.dot_tile) * ceil_div(cols, bounds_.dot_tile);
    auto cost = [&](int64_t s) {
      const int64_t part = ceil_div(extent, s) * (contraction / extent);  // padded where s does not divide
      return ceil_div(s * whole_tiles, bounds_.dot_wave_tiles) * (part + bounds_.dot_part_overhead);
    };
    int64_t best = 1;
    for (int64_t s = 2; s <= 2 * want && s <= extent && contraction / s >= bounds_.dot_min_part; ++s)
      if (double(s) * tiles >= double(bounds_.dot_min_tiles) && (best == 1 || cost(s) < cost(best))) best = s;
    return best;
  }
};

NXV_REGISTER_PASS(SplitDot, "split-dot");

}  // namespace
}  // namespace nxv::passes
