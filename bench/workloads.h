// The benchmark workloads of issue 3, built as IR graphs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace nxv::bench {

struct Workload {
  std::string name;          // "add", "chain", "sum", "rowsum", "softmax", "transpose", "cumsum_1e7", "leapfrog", "copy"
  ir::DType dtype;
  ir::Graph graph;
  // Bytes a perfect implementation must move per call (each input read once, each output
  // written once): the numerator of achieved bandwidth.
  uint64_t min_bytes = 0;
  // Floating-point operations per call where the work is compute-bound (dot: 2 per
  // multiply-add), the numerator of achieved FLOP/s; 0 elsewhere.
  double flops = 0;
};

// Dense products: an n x n square dot (named dotN; _at, _bt: the first or second operand
// read transposed, contracting its first or last axis), and attention's batched q·kᵀ
// ({16,512,64}·{16,64,512}).
Workload square_dot(ir::DType dtype, int64_t n, bool transpose_a = false, bool transpose_b = false);
Workload attention_scores(ir::DType dtype);

// One SGD step of that classifier (value and gradient of the mean cross-entropy, then
// w -= 0.01 dw for every parameter), as Nx.Defn.grad expresses it: parameters are the batch,
// its one-hot labels, then each layer's weight and bias; results the loss and the new
// parameters.
Workload mlp_train_step(ir::DType dtype, int64_t batch, const std::vector<int64_t>& widths);

// A graph as Elixir's compiler makes it (bench/graphs/NAME.json, compiled in).
struct EmbeddedGraph {
  const char* name;
  const char* json;
};
const std::vector<EmbeddedGraph>& embedded_graphs();

// A graph from elsewhere: bandwidth counts each input and output once, FLOP/s its dots'
// multiply-adds (2 FLOPs each, zeros of a dilated or padded operand included).
Workload graph_workload(std::string name, ir::Graph graph);

// `size` overrides the element count of the flat workloads and the side of the square ones,
// so the same workloads run small on lavapipe and full-size on a GPU.
// The full size adds the embedded graphs of that type (convolutions: too slow for a CPU).
std::vector<Workload> make_workloads(ir::DType dtype, int64_t flat_elems, int64_t square_side,
                                     const std::vector<int64_t>& leapfrog_dims);

// The dense sweep (bench/sweep.cpp): BERT-base/large and GPT-2 projections, feed-forward
// blocks and attention (plain and causal), ViT-B/16's patch embedding and layers,
// ResNet-50's convolutions, MLP inference and training steps, each named by model, layer and
// shape (bert_base_qkv_b8s512). Small: the few of them that Nx.BinaryBackend runs within
// minutes. Tiny: every one at batch 1 (MLPs at most 8) and at most 128 positions, for the
// reference interpreter.
enum class SweepSet { Full, Small, Tiny };
std::vector<Workload> sweep_workloads(ir::DType dtype, SweepSet set);

// A softmax classifier's forward pass, `widths` = {inputs, hidden..., classes}, ReLU between
// layers; parameters are the batch, then each layer's weight and bias.
Workload mlp_inference(ir::DType dtype, int64_t batch, const std::vector<int64_t>& widths);

}  // namespace nxv::bench
