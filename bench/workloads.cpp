#include "bench/workloads.h"

#include "bench/layers.h"
#include "ir/json.h"

namespace nxv::bench {

using ir::DType;
using ir::NodeId;
using ir::Shape;
using nlohmann::json;

NodeId last_axis_softmax(GraphWriter& w, NodeId x, DType t) {
  const Shape full = w.shape(x);
  Shape kept = full;
  kept.back() = 1;
  json keep = {{"axes", {int64_t(full.size()) - 1}}, {"keep_axes", true}};
  NodeId m = w.node("reduce_max", {x}, t, kept, keep);
  NodeId e = w.node("exp", {w.node("subtract", {x, m}, t, full)}, t, full);
  NodeId s = w.node("sum", {e}, t, kept, keep);
  return w.node("divide", {e, s}, t, full);
}

NodeId dense(GraphWriter& w, NodeId x, NodeId weight, NodeId bias, DType t) {
  int64_t rows = w.shape(x)[0], cols = w.shape(weight)[1];
  NodeId xw = w.node("dot", {x, weight}, t, {rows, cols},
                     {{"contract_axes1", {1}}, {"contract_axes2", {0}}, {"batch_axes1", json::array()},
                      {"batch_axes2", json::array()}});
  NodeId b = w.node("broadcast", {bias}, t, {rows, cols}, {{"shape", {rows, cols}}, {"axes", {1}}});
  return w.ew("add", {xw, b}, t);
}

namespace {

uint64_t bytes(int64_t elems, DType t) { return static_cast<uint64_t>(elems) * ir::dtype_bytes(t); }

Workload copy(DType t, int64_t n, const std::string& name = "copy") {
  GraphWriter w(name);
  NodeId x = w.param(0, t, {n});
  NodeId r = w.node("reshape", {x}, t, {n / 2, 2});
  return {name, t, w.finish({r}), 2 * bytes(n, t)};
}

Workload add(DType t, int64_t n) {
  GraphWriter w("add");
  NodeId x = w.param(0, t, {n}), y = w.param(1, t, {n});
  return {"add", t, w.finish({w.ew("add", {x, y}, t)}), 3 * bytes(n, t)};
}

// tanh(x*y + 1) * sigmoid(x) - exp(-y*y)
Workload chain(DType t, int64_t n) {
  GraphWriter w("chain");
  NodeId x = w.param(0, t, {n}), y = w.param(1, t, {n});
  NodeId th = w.ew("tanh", {w.ew("add", {w.ew("multiply", {x, y}, t), w.scalar(1, t)}, t)}, t);
  NodeId e = w.ew("exp", {w.ew("multiply", {w.ew("negate", {y}, t), y}, t)}, t);
  NodeId out = w.ew("subtract", {w.ew("multiply", {th, w.ew("sigmoid", {x}, t)}, t), e}, t);
  return {"chain", t, w.finish({out}), 3 * bytes(n, t)};
}

Workload full_sum(DType t, int64_t n) {
  GraphWriter w("sum");
  NodeId x = w.param(0, t, {n});
  NodeId s = w.node("sum", {x}, t, {}, {{"axes", nullptr}, {"keep_axes", false}});
  return {"sum", t, w.finish({s}), bytes(n, t)};
}

// cumulative_sum at a fixed shape (the name says it): split-scan reduces, scans and rescans
// lines longer than the target's block.
Workload cumsum(const std::string& name, DType t, Shape shape, int64_t axis) {
  GraphWriter w(name);
  NodeId x = w.param(0, t, shape);
  NodeId s = w.node("cumulative_sum", {x}, t, shape, {{"axis", axis}, {"reverse", false}});
  return {name, t, w.finish({s}), 2 * bytes(ir::num_elements(shape), t)};
}

// argsort along the last axis at a fixed shape (the name says it): lines past a
// workgroup's shared memory go through split-sort's stages. O(n log^2 n) work; the bytes
// are one read of the keys and one write of the s32 order.
Workload argsort(const std::string& name, DType t, Shape shape) {
  GraphWriter w(name);
  NodeId x = w.param(0, t, shape);
  NodeId o = w.node("argsort", {x}, DType::S32, shape, {{"axis", int64_t(shape.size()) - 1}, {"direction", "asc"}});
  return {name, t, w.finish({o}), bytes(ir::num_elements(shape), t) + bytes(ir::num_elements(shape), DType::S32)};
}

Workload row_sum(DType t, int64_t side) {
  GraphWriter w("rowsum");
  NodeId x = w.param(0, t, {side, side});
  NodeId s = w.node("sum", {x}, t, {side}, {{"axes", {1}}, {"keep_axes", false}});
  return {"rowsum", t, w.finish({s}), bytes(side * side + side, t)};
}

Workload softmax(DType t, int64_t side) {
  GraphWriter w("softmax");
  NodeId x = w.param(0, t, {side, side});
  return {"softmax", t, w.finish({last_axis_softmax(w, x, t)}), 2 * bytes(side * side, t)};
}

// Reductions over many rows: layer norm (x - mean) / sqrt(var + 1e-5) without its scale and
// shift, and a softmax, over rows of a batch times a sequence, as transformers take them.
Workload layer_norm(DType t, int64_t rows, int64_t cols) {
  GraphWriter w("layernorm_" + std::to_string(rows) + "x" + std::to_string(cols));
  NodeId x = w.param(0, t, {rows, cols});
  json keep = {{"axes", {1}}, {"keep_axes", true}};
  NodeId inv_n = w.scalar(1.0 / double(cols), t);
  NodeId mean = w.ew("multiply", {w.node("sum", {x}, t, {rows, 1}, keep), inv_n}, t);
  NodeId d = w.ew("subtract", {x, mean}, t);
  NodeId var = w.ew("multiply", {w.node("sum", {w.ew("multiply", {d, d}, t)}, t, {rows, 1}, keep), inv_n}, t);
  NodeId y = w.ew("multiply", {d, w.ew("rsqrt", {w.ew("add", {var, w.scalar(1e-5, t)}, t)}, t)}, t);
  return {"layernorm_" + std::to_string(rows) + "x" + std::to_string(cols), t, w.finish({y}), 2 * bytes(rows * cols, t)};
}

Workload row_softmax(DType t, int64_t rows, int64_t cols) {
  GraphWriter w("softmax_" + std::to_string(rows) + "x" + std::to_string(cols));
  NodeId x = w.param(0, t, {rows, cols});
  return {"softmax_" + std::to_string(rows) + "x" + std::to_string(cols), t, w.finish({last_axis_softmax(w, x, t)}),
          2 * bytes(rows * cols, t)};
}

Workload transpose(DType t, int64_t side) {
  GraphWriter w("transpose");
  NodeId x = w.param(0, t, {side, side});
  NodeId tr = w.node("transpose", {x}, t, {side, side}, {{"axes", {1, 0}}});
  return {"transpose", t, w.finish({tr}), 2 * bytes(side * side, t)};
}

// 32 unrolled leapfrog steps on a standard normal model (grad log p(q) = -q), as eXMC's NUTS
// integrator produces them: p += eps/2 * grad(q); q += eps * p; p += eps/2 * grad(q).
Workload leapfrog(DType t, int64_t d, int steps = 32) {
  GraphWriter w("leapfrog_d" + std::to_string(d));
  NodeId q = w.param(0, t, {d}), p = w.param(1, t, {d}), eps = w.param(2, t, {});
  NodeId half = w.ew("multiply", {eps, w.scalar(0.5, t)}, t);
  auto kick = [&](NodeId p_, NodeId q_) {
    return w.ew("add", {p_, w.ew("multiply", {half, w.ew("negate", {q_}, t)}, t)}, t);
  };
  for (int i = 0; i < steps; ++i) {
    p = kick(p, q);
    q = w.ew("add", {q, w.ew("multiply", {eps, p}, t)}, t);
    p = kick(p, q);
  }
  return {"leapfrog_d" + std::to_string(d), t, w.finish({q, p}), 4 * bytes(d, t)};
}

}  // namespace

Workload graph_workload(std::string name, ir::Graph g) {
  Workload w{std::move(name), g.node(g.outputs.at(0)).type().dtype, ir::Graph(), 0};
  for (const auto& n : g.nodes) {
    if (n.op == "parameter") w.min_bytes += n.type().byte_size();
    if (n.op != "dot") continue;
    const Shape& a = g.node(n.args.at(0)).type().shape;
    double k = 1;
    for (int64_t x : n.attrs.value("contract_axes1", std::vector<int64_t>{})) k *= double(a.at(x));
    w.flops += 2 * k * double(n.type().num_elements());
  }
  for (auto id : g.outputs) w.min_bytes += g.node(id).type().byte_size();
  w.graph = std::move(g);
  return w;
}

Workload square_dot(DType t, int64_t n, bool transpose_a, bool transpose_b) {
  const std::string name = "dot" + std::to_string(n) + (transpose_a ? "_at" : "") + (transpose_b ? "_bt" : "");
  GraphWriter w(name);
  NodeId a = w.param(0, t, {n, n}), b = w.param(1, t, {n, n});
  NodeId d = w.node("dot", {a, b}, t, {n, n},
                    {{"contract_axes1", {transpose_a ? 0 : 1}}, {"contract_axes2", {transpose_b ? 1 : 0}},
                     {"batch_axes1", json::array()}, {"batch_axes2", json::array()}});
  Workload r{name, t, w.finish({d}), 3 * bytes(n * n, t)};
  r.flops = 2.0 * double(n) * double(n) * double(n);
  return r;
}

// A long contraction into few outputs, 64 x 65536 by 65536 x 64: split-reduction's
// split-K (a batched dot over chunks of the contraction, then their sum) against XLA's.
Workload long_contraction_dot(DType t) {
  const int64_t m = 64, k = 65536;
  GraphWriter w("dot_splitk");
  NodeId a = w.param(0, t, {m, k}), b = w.param(1, t, {k, m});
  NodeId d = w.node("dot", {a, b}, t, {m, m},
                    {{"contract_axes1", {1}}, {"contract_axes2", {0}}, {"batch_axes1", json::array()},
                     {"batch_axes2", json::array()}});
  Workload r{"dot_splitk", t, w.finish({d}), bytes(2 * m * k + m * m, t)};
  r.flops = 2.0 * double(m) * double(m) * double(k);
  return r;
}

Workload attention_scores(DType t) {
  const int64_t heads = 16, len = 512, dim = 64;
  GraphWriter w("attention");
  NodeId q = w.param(0, t, {heads, len, dim}), k = w.param(1, t, {heads, len, dim});
  NodeId s = w.node("dot", {q, k}, t, {heads, len, len},
                    {{"contract_axes1", {2}}, {"contract_axes2", {2}}, {"batch_axes1", {0}}, {"batch_axes2", {0}}});
  Workload r{"attention", t, w.finish({s}), bytes(2 * heads * len * dim + heads * len * len, t)};
  r.flops = 2.0 * heads * len * len * dim;
  return r;
}

Workload mlp_inference(DType t, int64_t batch, const std::vector<int64_t>& widths) {
  GraphWriter w("mlp_infer");
  NodeId h = w.param(0, t, {batch, widths[0]});
  uint64_t moved = bytes(batch * (widths[0] + widths.back()), t);
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    NodeId weight = w.param(int(2 * l + 1), t, {widths[l], widths[l + 1]});
    NodeId bias = w.param(int(2 * l + 2), t, {widths[l + 1]});
    moved += bytes(widths[l] * widths[l + 1] + widths[l + 1], t);
    h = dense(w, h, weight, bias, t);
    if (l + 2 < widths.size()) h = w.ew("max", {h, w.scalar(0, t)}, t);
  }
  Workload r{"mlp_infer", t, w.finish({last_axis_softmax(w, h, t)}), moved};
  for (size_t l = 0; l + 1 < widths.size(); ++l) r.flops += 2.0 * double(batch) * double(widths[l]) * double(widths[l + 1]);
  return r;
}

Workload mlp_train_step(DType t, int64_t batch, const std::vector<int64_t>& widths) {
  GraphWriter w("mlp_train");
  const size_t layers = widths.size() - 1;
  const int64_t classes = widths.back();
  NodeId x = w.param(0, t, {batch, widths[0]}), y = w.param(1, t, {batch, classes});
  std::vector<NodeId> weights, biases, acts{x};
  for (size_t l = 0; l < layers; ++l) {
    weights.push_back(w.param(int(2 * l + 2), t, {widths[l], widths[l + 1]}));
    biases.push_back(w.param(int(2 * l + 3), t, {widths[l + 1]}));
  }
  auto matmul = [&](NodeId a, NodeId b, int64_t ca, int64_t cb, ir::Shape out) {
    return w.node("dot", {a, b}, t, std::move(out),
                  {{"contract_axes1", {ca}}, {"contract_axes2", {cb}}, {"batch_axes1", json::array()},
                   {"batch_axes2", json::array()}});
  };
  for (size_t l = 0; l < layers; ++l) {
    NodeId z = dense(w, acts.back(), weights[l], biases[l], t);
    acts.push_back(l + 1 < layers ? w.ew("max", {z, w.scalar(0, t)}, t) : z);
  }
  // loss = mean over the batch of logsumexp(logits) - <logits, y>
  NodeId logits = acts.back();
  json keep = {{"axes", {1}}, {"keep_axes", true}};
  NodeId m = w.node("reduce_max", {logits}, t, {batch, 1}, keep);
  NodeId e = w.node("exp", {w.node("subtract", {logits, m}, t, {batch, classes})}, t, {batch, classes});
  NodeId s = w.node("sum", {e}, t, {batch, 1}, keep);
  NodeId lse = w.node("add", {w.node("log", {s}, t, {batch, 1}), m}, t, {batch, 1});
  NodeId picked = w.node("sum", {w.ew("multiply", {logits, y}, t)}, t, {batch, 1}, keep);
  NodeId loss = w.node("divide", {w.node("sum", {w.node("subtract", {lse, picked}, t, {batch, 1})}, t, {},
                                         {{"axes", nullptr}, {"keep_axes", false}}),
                                  w.scalar(double(batch), t)},
                       t, {});
  // d loss / d logits = (softmax - y) / batch
  NodeId delta = w.node("divide", {w.node("subtract", {w.node("divide", {e, s}, t, {batch, classes}), y}, t, {batch, classes}),
                                   w.scalar(double(batch), t)},
                        t, {batch, classes});
  std::vector<NodeId> outputs{loss}, updated(2 * layers);
  for (size_t l = layers; l-- > 0;) {
    const int64_t in = widths[l], out = widths[l + 1];
    NodeId dw = matmul(acts[l], delta, 0, 0, {in, out});
    NodeId db = w.node("sum", {delta}, t, {out}, {{"axes", {0}}, {"keep_axes", false}});
    auto step = [&](NodeId p, NodeId g) { return w.ew("subtract", {p, w.ew("multiply", {g, w.scalar(0.01, t)}, t)}, t); };
    updated[2 * l] = step(weights[l], dw);
    updated[2 * l + 1] = step(biases[l], db);
    if (l == 0) break;
    NodeId dh = matmul(delta, weights[l], 1, 1, {batch, in});
    NodeId active = w.node("greater", {acts[l], w.scalar(0, t)}, DType::U8, {batch, in});
    delta = w.node("select", {active, dh, w.scalar(0, t)}, t, {batch, in});
  }
  outputs.insert(outputs.end(), updated.begin(), updated.end());
  Workload r{"mlp_train", t, w.finish(outputs), 0};
  for (size_t l = 0; l < layers; ++l) {
    const double macs = double(batch) * double(widths[l]) * double(widths[l + 1]);
    r.flops += 2 * macs * (l == 0 ? 2 : 3);  // forward, weight gradient, and input gradient above the first layer
    r.min_bytes += bytes(2 * (widths[l] * widths[l + 1] + widths[l + 1]), t);
  }
  return r;
}

std::vector<Workload> make_workloads(DType t, int64_t flat, int64_t side, const std::vector<int64_t>& leapfrog_dims) {
  std::vector<Workload> ws;
  ws.push_back(copy(t, flat));
  ws.push_back(add(t, flat));
  ws.push_back(chain(t, flat));
  ws.push_back(full_sum(t, flat));
  ws.push_back(row_sum(t, side));
  ws.push_back(softmax(t, side));
  // More rows than cooperative reductions of few outputs take (codegen/targets/launch.h).
  const bool full = side > 1024;
  ws.push_back(layer_norm(t, full ? 65536 : 16384, full ? 768 : 256));
  ws.push_back(row_softmax(t, full ? 65536 : 16384, full ? 2048 : 256));
  ws.push_back(transpose(t, side));
  ws.push_back(cumsum("cumsum_1024x1024", t, {1024, 1024}, 1));
  ws.push_back(cumsum("cumsum_1024x1024_axis0", t, {1024, 1024}, 0));
  ws.push_back(cumsum("cumsum_1e7", t, {10000000}, 0));
  // A copy of the scan's size: at 40 MB a launch's fixed cost is part of any kernel's time.
  ws.push_back(copy(t, 10000000, "copy_1e7"));
  ws.push_back(argsort("argsort_1e6", t, {1000000}));
  ws.push_back(argsort("argsort_4096x256", t, {4096, 256}));
  if (t == DType::F64)
    for (int64_t d : leapfrog_dims) ws.push_back(leapfrog(t, d));
  // Dense work: the full size adds the 4096-square product.
  ws.push_back(square_dot(t, 1024));
  // Operands read in place across their rows: xᵀ·w (a weight gradient's) and x·wᵀ (a
  // layer's input gradient, attention's q·kᵀ).
  ws.push_back(square_dot(t, 1024, true, false));
  ws.push_back(square_dot(t, 1024, false, true));
  if (side > 1024) ws.push_back(square_dot(t, 4096));
  ws.push_back(long_contraction_dot(t));
  ws.push_back(attention_scores(t));
  ws.push_back(mlp_inference(t, 256, {784, 1024, 1024, 10}));
  ws.push_back(mlp_train_step(t, 256, {784, 1024, 1024, 10}));
  if (side > 1024)
    for (const auto& e : embedded_graphs()) {
      Workload w = graph_workload(e.name, ir::parse_graph(e.json));
      if (w.dtype == t) ws.push_back(std::move(w));
    }
  return ws;
}

}  // namespace nxv::bench
