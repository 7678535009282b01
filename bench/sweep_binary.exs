# The dense sweep's small shapes (nxv_bench --sweep-small, bench/sweep.cpp) as `defn`s, in f32:
# Nx.Defn.Evaluator on Nx.BinaryBackend, and the same functions jitted by Nx.Vulkan, with
# the largest difference between their results. bench/sweep_report.py joins the JSON with
# nxv_bench's by shape name (the reference time: `binary_ms`).
#
#   cd elixir && NX_PATH=... mix run ../bench/sweep_binary.exs [--runs 10] [--json FILE] [--filter SUBSTR,...]
#
# Inputs are seeded `:rand` values in [-1, 1] (one-hot labels for the training step).
# Nx.Vulkan: median of --runs warm calls, the result copied to the host; the evaluator: one
# call (it takes seconds to minutes).
defmodule SweepBinary do
  import Nx.Defn

  defnp softmax(x) do
    e = Nx.exp(x - Nx.reduce_max(x, axes: [-1], keep_axes: true))
    e / Nx.sum(e, axes: [-1], keep_axes: true)
  end

  defnp scores(q, k) do
    Nx.dot(q, [3], [0, 1], k, [3], [0, 1]) / Nx.sqrt(Nx.axis_size(q, 3))
  end

  defn causal_attention(q, k, v) do
    s = scores(q, k)
    n = Nx.axis_size(q, 2)
    keep = Nx.greater_equal(Nx.iota({n, 1}, type: :s32), Nx.iota({1, n}, type: :s32))
    masked = Nx.select(Nx.broadcast(keep, Nx.shape(s)), s, Nx.Constants.neg_infinity(:f32))
    Nx.dot(softmax(masked), [3], [0, 1], v, [2], [0, 1])
  end

  defnp logits({w1, b1, w2, b2, w3, b3}, x) do
    h = Nx.max(Nx.dot(x, w1) + b1, 0)
    h = Nx.max(Nx.dot(h, w2) + b2, 0)
    Nx.dot(h, w3) + b3
  end

  defn mlp_infer(x, params) do
    softmax(logits(params, x))
  end

  defnp loss(params, x, y) do
    z = logits(params, x)
    m = Nx.reduce_max(z, axes: [1], keep_axes: true)
    lse = Nx.log(Nx.sum(Nx.exp(z - m), axes: [1], keep_axes: true)) + m
    Nx.mean(Nx.squeeze(lse, axes: [1]) - Nx.sum(z * y, axes: [1]))
  end

  defn mlp_train(x, y, params) do
    {value, {g1, c1, g2, c2, g3, c3}} = value_and_grad(params, &loss(&1, x, y))
    {w1, b1, w2, b2, w3, b3} = params
    {value, {w1 - 0.01 * g1, b1 - 0.01 * c1, w2 - 0.01 * g2, b2 - 0.01 * c2, w3 - 0.01 * g3, b3 - 0.01 * c3}}
  end

  def input(shape) do
    for(_ <- 1..Tuple.product(shape), do: 2 * :rand.uniform() - 1)
    |> Nx.tensor(type: :f32)
    |> Nx.reshape(shape)
  end

  def mlp_params do
    widths = [784, 1024, 1024, 10]

    Enum.zip(widths, tl(widths))
    |> Enum.flat_map(fn {i, o} -> [input({i, o}), input({o})] end)
    |> List.to_tuple()
  end

  def one_hot(batch) do
    labels = Nx.tensor(for(_ <- 1..batch, do: [:rand.uniform(10) - 1]))
    Nx.equal(Nx.iota({batch, 10}, axis: 1), labels) |> Nx.as_type(:f32)
  end

  # The small set of bench/sweep.cpp, by its names.
  def workloads do
    [
      {"gpt2_small_attn_causal_b1s128", &causal_attention/3,
       Enum.map(1..3, fn _ -> input({1, 12, 128, 64}) end)},
      {"mlp_infer_b1", &mlp_infer/2, [input({1, 784}), mlp_params()]},
      {"mlp_train_b1", &mlp_train/3, [input({1, 784}), one_hot(1), mlp_params()]},
      {"mlp_infer_b16", &mlp_infer/2, [input({16, 784}), mlp_params()]}
    ]
  end

  def time_ms(fun), do: elem(:timer.tc(fun), 0) / 1000

  def max_diff(a, b) do
    [Nx.Defn.Composite.flatten_list([a]), Nx.Defn.Composite.flatten_list([b])]
    |> Enum.zip_with(fn [x, y] -> Nx.subtract(x, y) |> Nx.abs() |> Nx.reduce_max() |> Nx.to_number() end)
    |> Enum.max()
  end

  def row(name, fun, args, runs) do
    to_host = &Nx.Defn.Composite.traverse(&1, fn t -> Nx.backend_transfer(t, Nx.BinaryBackend) end)
    vk = Nx.Defn.jit(fun, compiler: Nx.Vulkan)
    want = to_host.(apply(vk, args))
    times = for _ <- 1..runs, do: time_ms(fn -> to_host.(apply(vk, args)) end)
    vulkan = Enum.at(Enum.sort(times), div(runs, 2))
    ev = Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)
    {us, got} = :timer.tc(fn -> apply(ev, args) end)
    binary = us / 1000
    diff = max_diff(want, got)

    IO.puts(
      "#{String.pad_trailing(name, 32)} binary #{Float.round(binary, 1)} ms  vulkan #{Float.round(vulkan, 3)} ms  " <>
        "ratio #{Float.round(binary / vulkan, 1)}x  max |diff| #{diff}"
    )

    %{workload: name, dtype: "f32", binary_ms: binary, vulkan_ms: vulkan, max_abs_diff: diff}
  end

  def main(argv) do
    {opts, _} = OptionParser.parse!(argv, strict: [runs: :integer, json: :string, filter: :string])
    runs = Keyword.get(opts, :runs, 10)
    filter = String.split(opts[:filter] || "", ",")
    :rand.seed(:exsss, 42)
    info = Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!()))
    IO.puts("Nx.Vulkan on #{info.name} against Nx.Defn.Evaluator on Nx.BinaryBackend")

    rows =
      for {name, fun, args} <- workloads(),
          Enum.any?(filter, &String.contains?(name, &1)),
          do: row(name, fun, args, runs)

    if path = opts[:json] do
      doc = %{
        device: "Nx.BinaryBackend",
        vulkan_device: info.name,
        date: Date.to_iso8601(Date.utc_today()),
        results: rows
      }

      File.write!(path, Nx.Vulkan.JSON.encode(doc))
      IO.puts("wrote #{path}")
    end
  end
end

SweepBinary.main(System.argv())
