# Writes the graphs nxv_bench embeds (bench/graphs/*.json) as Elixir's compiler makes them,
# for no device in particular (f32 kept in f32). From elixir/, with Nx available:
#
#   NX_PATH=... mix run ../bench/graphs/dump.exs
#
# conv3x3: issue 16's convolution, input 32x64x56x56, 64 output channels, padding :same.
# cnn_train: one SGD step (value_and_grad, lr 0.01) of a small CNN on a 32x3x32x32 batch:
# conv3x3(3->32)-relu-conv3x3(32->64)-relu-maxpool 2x2-dense(10), mean softmax cross-entropy
# against one-hot labels; parameters are (k1, b1, k2, b2, w, b), the batch, the labels.
# bench/jax_bench.py has the same two workloads.
defmodule Bench.Graphs do
  import Nx.Defn

  defn(conv3x3(x, k), do: Nx.conv(x, k, padding: :same))

  defn loss({k1, b1, k2, b2, w, b}, x, y) do
    h = Nx.max(Nx.conv(x, k1, padding: :same) + Nx.reshape(b1, {1, :auto, 1, 1}), 0)
    h = Nx.max(Nx.conv(h, k2, padding: :same) + Nx.reshape(b2, {1, :auto, 1, 1}), 0)
    h = Nx.window_max(h, {1, 1, 2, 2}, strides: [1, 1, 2, 2])
    logits = Nx.dot(Nx.reshape(h, {Nx.axis_size(h, 0), :auto}), w) + b
    m = Nx.reduce_max(logits, axes: [1], keep_axes: true)
    lse = Nx.log(Nx.sum(Nx.exp(logits - m), axes: [1], keep_axes: true)) + m
    Nx.mean(Nx.sum((lse - logits) * y, axes: [1]))
  end

  defn cnn_train(params, x, y) do
    {value, grads} = value_and_grad(params, &loss(&1, x, y))
    {value, updated(params, grads)}
  end

  deftransformp updated(params, grads) do
    [Tuple.to_list(params), Tuple.to_list(grads)]
    |> Enum.zip_with(fn [p, g] -> Nx.subtract(p, Nx.multiply(g, 0.01)) end)
    |> List.to_tuple()
  end

  def write(name, fun, args) do
    expr = Nx.Defn.debug_expr_apply(fun, args)
    {graph, _used} = Nx.Vulkan.IR.build(expr, name: name, f32_in_f64: false)
    File.write!(Path.join(__DIR__, "#{name}.json"), Nx.Vulkan.JSON.encode(graph))
  end
end

f32 = &Nx.template(&1, :f32)
Bench.Graphs.write("conv3x3", &Bench.Graphs.conv3x3/2, [f32.({32, 64, 56, 56}), f32.({64, 64, 3, 3})])

params =
  {f32.({32, 3, 3, 3}), f32.({32}), f32.({64, 32, 3, 3}), f32.({64}), f32.({64 * 16 * 16, 10}), f32.({10})}

Bench.Graphs.write("cnn_train", &Bench.Graphs.cnn_train/3, [params, f32.({32, 3, 32, 32}), f32.({32, 10})])
