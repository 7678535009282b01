// The dense sweep: real models' layers (BERT, GPT-2, ViT-B/16, ResNet-50, MLPs) at their
// own shapes, each graph written as Nx gives it, one stable name per shape.
#include <algorithm>
#include <cmath>
#include <set>

#include "bench/layers.h"
#include "bench/workloads.h"

namespace nxv::bench {
namespace {

using ir::DType;
using ir::NodeId;
using ir::Shape;
using nlohmann::json;

// The set's sizes: `tiny` shrinks batches to one (MLPs to at most 8) and sequences to at
// most 128, so that the reference interpreter can check every graph.
struct Scale {
  bool tiny;
  int64_t batch(int64_t b) const { return tiny ? 1 : b; }
  int64_t seq(int64_t s) const { return tiny ? std::min<int64_t>(s, 128) : s; }
  int64_t mlp_batch(int64_t b) const { return tiny ? std::min<int64_t>(b, 8) : b; }
};

std::string batch_seq(int64_t b, int64_t s) { return "_b" + std::to_string(b) + "s" + std::to_string(s); }

json dot_axes(std::vector<int64_t> c1, std::vector<int64_t> b1, std::vector<int64_t> c2, std::vector<int64_t> b2) {
  return {{"contract_axes1", c1}, {"batch_axes1", b1}, {"contract_axes2", c2}, {"batch_axes2", b2}};
}

// A projection of `rows` token vectors: x·w + b.
Workload linear(const std::string& name, DType t, int64_t rows, int64_t in, int64_t out) {
  GraphWriter w(name);
  NodeId x = w.param(0, t, {rows, in}), weight = w.param(1, t, {in, out}), bias = w.param(2, t, {out});
  return graph_workload(name, w.finish({dense(w, x, weight, bias, t)}));
}

// BERT's GELU, x/2 (1 + erf(x/√2)), or GPT-2's tanh approximation of it.
NodeId gelu(GraphWriter& w, NodeId x, DType t, bool tanh_form) {
  NodeId inner;
  if (tanh_form) {
    NodeId cube = w.ew("multiply", {w.ew("multiply", {x, x}, t), x}, t);
    NodeId poly = w.ew("add", {x, w.ew("multiply", {cube, w.scalar(0.044715, t)}, t)}, t);
    inner = w.ew("tanh", {w.ew("multiply", {poly, w.scalar(std::sqrt(2 / M_PI), t)}, t)}, t);
  } else {
    inner = w.ew("erf", {w.ew("multiply", {x, w.scalar(M_SQRT1_2, t)}, t)}, t);
  }
  NodeId half = w.ew("multiply", {x, w.scalar(0.5, t)}, t);
  return w.ew("multiply", {half, w.ew("add", {inner, w.scalar(1, t)}, t)}, t);
}

// A transformer's feed-forward block: dense to `hidden`, GELU, dense back to `width`.
Workload feed_forward(const std::string& name, DType t, int64_t rows, int64_t width, int64_t hidden, bool tanh_gelu) {
  GraphWriter w(name);
  NodeId x = w.param(0, t, {rows, width});
  NodeId w1 = w.param(1, t, {width, hidden}), b1 = w.param(2, t, {hidden});
  NodeId w2 = w.param(3, t, {hidden, width}), b2 = w.param(4, t, {width});
  NodeId h = gelu(w, dense(w, x, w1, b1, t), t, tanh_gelu);
  return graph_workload(name, w.finish({dense(w, h, w2, b2, t)}));
}

// The causal mask of [batch, heads, seq, seq] scores: an iota comparison (key <= query),
// broadcast to the scores' shape, at which Nx.select takes its predicate.
NodeId causal_keep(GraphWriter& w, const Shape& scores_shape) {
  const int64_t s = scores_shape[2];
  NodeId row = w.node("iota", {}, DType::S32, {s, 1}, {{"axis", 0}});
  NodeId col = w.node("iota", {}, DType::S32, {1, s}, {{"axis", 1}});
  NodeId keep = w.node("greater_equal", {row, col}, DType::U8, {s, s});
  return w.node("broadcast", {keep}, DType::U8, scores_shape, {{"shape", scores_shape}, {"axes", {2, 3}}});
}

NodeId minus_inf(GraphWriter& w, DType t) { return w.node("constant", {}, t, {}, {{"value", "-inf"}}); }

// softmax(q·kᵀ/√d [masked where key > query])·v over [batch, heads, seq, dim]: two dots
// with batch axes, the causal mask selecting -inf.
Workload attention(const std::string& name, DType t, int64_t b, int64_t heads, int64_t s, int64_t d, bool causal) {
  GraphWriter w(name);
  const Shape qkv{b, heads, s, d}, scores_shape{b, heads, s, s};
  NodeId q = w.param(0, t, qkv), k = w.param(1, t, qkv), v = w.param(2, t, qkv);
  NodeId scores = w.node("dot", {q, k}, t, scores_shape, dot_axes({3}, {0, 1}, {3}, {0, 1}));
  scores = w.ew("multiply", {scores, w.scalar(1 / std::sqrt(double(d)), t)}, t);
  if (causal) scores = w.node("select", {causal_keep(w, scores_shape), scores, minus_inf(w, t)}, t, scores_shape);
  NodeId probs = last_axis_softmax(w, scores, t);
  return graph_workload(name, w.finish({w.node("dot", {probs, v}, t, qkv, dot_axes({3}, {0, 1}, {2}, {0, 1}))}));
}

// The gradients of sum(attention(q, k, v) * g) with respect to q, k and v, as
// Nx.Defn.grad writes them (Nx 0.7.2; the scores divided by √d): dP = g·vᵀ, the softmax's
// gradient e·(dP/l - rowsum(dP·e/l²)) with the max's own term (an `equal` against it over
// the count of ties), dQ = dS·k/√d, dK = dSᵀ·q/√d, dV = (gᵀ·P)ᵀ. The forward's max, sum
// and probabilities are recomputed from q and k; a causal mask selects dS against 0.
Workload attention_grad(const std::string& name, DType t, int64_t b, int64_t heads, int64_t s, int64_t d, bool causal) {
  GraphWriter w(name);
  const Shape qkv{b, heads, s, d}, scores_shape{b, heads, s, s}, rows{b, heads, s}, kept{b, heads, s, 1};
  NodeId q = w.param(0, t, qkv), k = w.param(1, t, qkv), v = w.param(2, t, qkv), g = w.param(3, t, qkv);
  NodeId dp = w.node("dot", {g, v}, t, scores_shape, dot_axes({3}, {0, 1}, {3}, {0, 1}));
  NodeId root_d = w.scalar(std::sqrt(double(d)), t);
  NodeId scores = w.node("divide", {w.node("dot", {q, k}, t, scores_shape, dot_axes({3}, {0, 1}, {3}, {0, 1})), root_d}, t, scores_shape);
  const NodeId keep = causal ? causal_keep(w, scores_shape) : -1;
  if (causal) scores = w.node("select", {keep, scores, minus_inf(w, t)}, t, scores_shape);
  const json keep_last = {{"axes", {3}}, {"keep_axes", true}}, drop_last = {{"axes", {3}}, {"keep_axes", false}};
  auto spread = [&](NodeId row_values) {
    return w.node("broadcast", {row_values}, t, scores_shape, {{"shape", scores_shape}, {"axes", {0, 1, 2}}});
  };
  NodeId m = w.node("reduce_max", {scores}, t, kept, keep_last);
  NodeId e = w.node("exp", {w.node("subtract", {scores, m}, t, scores_shape)}, t, scores_shape);
  NodeId l = w.node("sum", {e}, t, kept, keep_last);
  NodeId probs = w.node("divide", {e, l}, t, scores_shape);
  NodeId over_l2 = w.node("negate", {w.node("divide", {probs, l}, t, scores_shape)}, t, scores_shape);
  NodeId centred = w.node("add", {w.node("divide", {dp, l}, t, scores_shape),
                                  spread(w.node("sum", {w.node("multiply", {dp, over_l2}, t, scores_shape)}, t, rows, drop_last))},
                          t, scores_shape);
  NodeId ds = w.node("multiply", {centred, e}, t, scores_shape);
  // The max's gradient: -rowsum(dS) shared among the row's maxima.
  NodeId at_max = w.node("equal", {scores, m}, DType::U8, scores_shape);
  NodeId max_share = w.node("multiply", {spread(w.node("sum", {w.node("negate", {ds}, t, scores_shape)}, t, rows, drop_last)), at_max},
                            t, scores_shape);
  ds = w.node("add", {ds, w.node("divide", {max_share, w.node("sum", {at_max}, DType::U64, kept, keep_last)}, t, scores_shape)},
              t, scores_shape);
  if (causal) ds = w.node("select", {keep, ds, w.scalar(0, t)}, t, scores_shape);
  ds = w.node("divide", {ds, root_d}, t, scores_shape);
  NodeId dq = w.node("dot", {ds, k}, t, qkv, dot_axes({3}, {0, 1}, {2}, {0, 1}));
  NodeId dk = w.node("dot", {ds, q}, t, qkv, dot_axes({2}, {0, 1}, {2}, {0, 1}));
  NodeId gp = w.node("dot", {g, probs}, t, {b, heads, d, s}, dot_axes({2}, {0, 1}, {2}, {0, 1}));
  NodeId dv = w.node("transpose", {gp}, t, qkv, {{"axes", {0, 1, 3, 2}}});
  return graph_workload(name, w.finish({dq, dk, dv}));
}

// Nx.conv(x, k, strides: [s, s], padding: [{p, p}, {p, p}]) on NCHW as Nx.Vulkan.Conv
// writes it for the IR (one group, no dilation): the input padded, strided slices of it
// stacked per spatial axis (per tap, or per window where windows are fewer), one dot of
// the patches with the kernel: for a kernel of several taps contracting 256 terms or more,
// the kernel times the windows of every image, transposed after; otherwise the kernel first
// where an image has many windows.
class ConvWriter {
 public:
  ConvWriter(GraphWriter& w, DType t) : w_(w), t_(t) {}

  NodeId conv(NodeId x, NodeId k, int64_t stride, int64_t pad) {
    const Shape xs = w_.shape(x), ks = w_.shape(k);
    const int64_t batch = xs[0], cin = xs[1], cout = ks[0], taps = ks[2];
    if (pad > 0) {
      json config = {{0, 0, 0}, {0, 0, 0}, {pad, pad, 0}, {pad, pad, 0}};
      x = w_.node("pad", {x, w_.scalar(0, t_)}, t_, {batch, cin, xs[2] + 2 * pad, xs[3] + 2 * pad}, {{"config", config}});
    }
    const int64_t side = w_.shape(x)[2], windows = (side - taps) / stride + 1;
    NodeId grouped = w_.node("reshape", {x}, t_, {1, batch, 1, cin, side, side});
    grouped = w_.node("transpose", {grouped}, t_, {1, 1, batch, cin, side, side}, {{"axes", {0, 2, 1, 3, 4, 5}}});
    grouped = w_.node("reshape", {grouped}, t_, {1, batch, cin, side, side});
    const bool per_tap = taps * taps <= windows * windows;
    NodeId patches = grouped;
    for (int64_t axis : {3, 4}) patches = stack_slices(patches, axis, taps, windows, stride, per_tap);
    const Shape out{batch, cout, windows, windows};
    if (per_tap && taps > 1 && cin * taps * taps >= 256) {
      NodeId kr = w_.node("reshape", {k}, t_, {1, cout, cin, taps, taps});
      NodeId d = w_.node("dot", {kr, patches}, t_, {1, cout, batch, windows, windows}, dot_axes({2, 3, 4}, {0}, {2, 5, 6}, {0}));
      d = w_.node("transpose", {d}, t_, {1, batch, cout, windows, windows}, {{"axes", {0, 2, 1, 3, 4}}});
      return w_.node("reshape", {d}, t_, out);
    }
    if (per_tap && windows * windows >= 256) {
      NodeId kb = w_.node("broadcast", {k}, t_, {batch, cout, cin, taps, taps},
                          {{"shape", {batch, cout, cin, taps, taps}}, {"axes", {1, 2, 3, 4}}});
      NodeId flat = w_.node("reshape", {patches}, t_, {batch, cin, windows, windows, taps, taps});
      NodeId d = w_.node("dot", {kb, flat}, t_, out, dot_axes({2, 3, 4}, {0}, {1, 4, 5}, {0}));
      return w_.node("reshape", {w_.node("reshape", {d}, t_, {1, batch, cout, windows, windows})}, t_, out);
    }
    NodeId kr = w_.node("reshape", {k}, t_, {1, cout, cin, taps, taps});
    const std::vector<int64_t> contract = per_tap ? std::vector<int64_t>{2, 5, 6} : std::vector<int64_t>{2, 3, 4};
    NodeId d = w_.node("dot", {patches, kr}, t_, {1, batch, windows, windows, cout}, dot_axes(contract, {0}, {2, 3, 4}, {0}));
    d = w_.node("transpose", {d}, t_, {1, batch, cout, windows, windows}, {{"axes", {0, 1, 4, 2, 3}}});
    return w_.node("reshape", {d}, t_, out);
  }

 private:
  // Along `axis`, one slice per tap (strided over the windows) or per window (over the
  // taps), stacked on a new last axis.
  NodeId stack_slices(NodeId x, int64_t axis, int64_t taps, int64_t windows, int64_t stride, bool per_tap) {
    const Shape xs = w_.shape(x);
    const int64_t count = per_tap ? taps : windows;
    std::vector<NodeId> parts;
    for (int64_t i = 0; i < count; ++i) {
      std::vector<int64_t> start(xs.size(), 0), lengths = xs, strides(xs.size(), 1);
      start[size_t(axis)] = per_tap ? i : i * stride;
      lengths[size_t(axis)] = per_tap ? (windows - 1) * stride + 1 : taps;
      strides[size_t(axis)] = per_tap ? stride : 1;
      Shape s = xs;
      s[size_t(axis)] = per_tap ? windows : taps;
      NodeId slice = w_.node("slice", {x}, t_, s, {{"start", start}, {"lengths", lengths}, {"strides", strides}});
      s.push_back(1);
      parts.push_back(w_.node("reshape", {slice}, t_, s));
    }
    Shape stacked = w_.shape(parts[0]);
    stacked.back() = count;
    return w_.node("concatenate", parts, t_, stacked, {{"axis", int64_t(stacked.size()) - 1}});
  }

  GraphWriter& w_;
  DType t_;
};

Workload conv(const std::string& name, DType t, int64_t batch, int64_t cin, int64_t side, int64_t cout, int64_t taps,
              int64_t stride, int64_t pad) {
  GraphWriter w(name);
  NodeId x = w.param(0, t, {batch, cin, side, side}), k = w.param(1, t, {cout, cin, taps, taps});
  NodeId y = ConvWriter(w, t).conv(x, k, stride, pad);
  return graph_workload(name, w.finish({y}));
}

struct Transformer {
  const char* name;
  int64_t width, heads;
  bool tanh_gelu;
};

void transformer_rows(std::vector<Workload>& ws, DType t, const Scale& sc, const Transformer& m, int64_t b, int64_t s,
                      bool attn_causal, bool projections, bool grad) {
  b = sc.batch(b);
  s = sc.seq(s);
  const std::string p = m.name;
  if (projections) {
    ws.push_back(linear(p + "_qkv" + batch_seq(b, s), t, b * s, m.width, 3 * m.width));
    ws.push_back(linear(p + "_out" + batch_seq(b, s), t, b * s, m.width, m.width));
    ws.push_back(feed_forward(p + "_ffn" + batch_seq(b, s), t, b * s, m.width, 4 * m.width, m.tanh_gelu));
  }
  const std::string attn = p + (attn_causal ? "_attn_causal" : "_attn");
  ws.push_back(attention(attn + batch_seq(b, s), t, b, m.heads, s, m.width / m.heads, attn_causal));
  if (grad) ws.push_back(attention_grad(attn + "_grad" + batch_seq(b, s), t, b, m.heads, s, m.width / m.heads, attn_causal));
}

void resnet50_rows(std::vector<Workload>& ws, DType t, const Scale& sc) {
  const int64_t b = sc.batch(32);
  const std::string n = "resnet50_", bn = "_b" + std::to_string(b);
  ws.push_back(conv(n + "conv1_7x7s2" + bn, t, b, 3, 224, 64, 7, 2, 3));
  // Stage i at side 56 >> (i-1) with bottleneck width c: 1x1 reduce (4c -> c), 3x3, 1x1
  // expand (c -> 4c); stages 2-4 open with a stride-2 3x3 and a stride-2 1x1 projection.
  for (int stage = 1; stage <= 4; ++stage) {
    const int64_t side = 56 >> (stage - 1), c = 64 << (stage - 1);
    const std::string sn = n + "s" + std::to_string(stage) + "_";
    ws.push_back(conv(sn + "1x1reduce" + bn, t, b, 4 * c, side, c, 1, 1, 0));
    ws.push_back(conv(sn + "3x3" + bn, t, b, c, side, c, 3, 1, 1));
    ws.push_back(conv(sn + "1x1expand" + bn, t, b, c, side, 4 * c, 1, 1, 0));
    if (stage > 1) {
      ws.push_back(conv(sn + "3x3s2" + bn, t, b, c, 2 * side, c, 3, 2, 1));
      ws.push_back(conv(sn + "proj1x1s2" + bn, t, b, 2 * c, 2 * side, 4 * c, 1, 2, 0));
    }
  }
}

void mlp_rows(std::vector<Workload>& ws, DType t, const Scale& sc, const std::vector<int64_t>& batches) {
  for (int64_t b : batches) {
    b = sc.mlp_batch(b);
    ws.push_back(mlp_inference(t, b, {784, 1024, 1024, 10}));
    ws.back().name = "mlp_infer_b" + std::to_string(b);
  }
  for (int64_t b : batches) {
    b = sc.mlp_batch(b);
    ws.push_back(mlp_train_step(t, b, {784, 1024, 1024, 10}));
    ws.back().name = "mlp_train_b" + std::to_string(b);
  }
}

}  // namespace

std::vector<Workload> sweep_workloads(DType t, SweepSet set) {
  const Transformer bert_base{"bert_base", 768, 12, false}, bert_large{"bert_large", 1024, 16, false},
      gpt2_small{"gpt2_small", 768, 12, true}, gpt2_medium{"gpt2_medium", 1024, 16, true},
      vit_b16{"vit_b16", 768, 12, false}, d128{"h16d128", 2048, 16, false},
      d64{"h12d64", 768, 12, true};
  std::vector<Workload> ws;
  if (set == SweepSet::Small) {  // what Nx.BinaryBackend finishes within minutes (bench/sweep_binary.exs)
    const Scale sc{false};
    transformer_rows(ws, t, sc, gpt2_small, 1, 128, true, false, false);
    mlp_rows(ws, t, sc, {1});
    ws.push_back(mlp_inference(t, 16, {784, 1024, 1024, 10}));
    ws.back().name = "mlp_infer_b16";
    return ws;
  }
  const Scale sc{set == SweepSet::Tiny};
  // Projections and feed-forward blocks at 128 to 8192 rows (batch x sequence; GPT-2's
  // widths equal BERT's, so each row count appears once), attention at 128 to 4096
  // positions, head dims 128 and 64 at the longest; attention's gradient at six of them.
  struct Block {
    const Transformer& model;
    int64_t batch, seq;
    bool causal, projections, grad;
  };
  for (const Block& k : {Block{bert_base, 1, 128, false, false, false}, Block{bert_base, 8, 128, false, true, true},
                         Block{bert_base, 8, 512, false, true, true}, Block{bert_large, 4, 512, false, false, false},
                         Block{bert_large, 16, 512, false, true, true}, Block{gpt2_small, 1, 128, true, true, false},
                         Block{gpt2_small, 4, 1024, true, false, true}, Block{gpt2_medium, 2, 1024, true, true, false},
                         Block{gpt2_medium, 8, 1024, true, false, false}, Block{d128, 2, 2048, false, false, true},
                         Block{d128, 1, 4096, true, false, false}, Block{d64, 1, 4096, true, false, false}})
    transformer_rows(ws, t, sc, k.model, k.batch, k.seq, k.causal, k.projections, k.grad);
  // ViT-B/16 on 224x224 images: the patch embedding (a 16x16 stride-16 conv), then its
  // encoder's layers over 197 tokens
  const int64_t vb = sc.batch(32);
  ws.push_back(conv("vit_b16_patch_b" + std::to_string(vb), t, vb, 3, 224, 768, 16, 16, 0));
  transformer_rows(ws, t, sc, vit_b16, 32, 197, false, true, true);
  resnet50_rows(ws, t, sc);
  mlp_rows(ws, t, sc, {1, 16, 128, 1024});
  // shrunk, several shapes meet: the first of each name stays
  std::set<std::string> seen;
  ws.erase(std::remove_if(ws.begin(), ws.end(), [&](const Workload& w) { return !seen.insert(w.name).second; }), ws.end());
  return ws;
}

}  // namespace nxv::bench
