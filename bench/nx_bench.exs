# The issue-3 workloads through Nx: Nx.Vulkan (on the default device) against
# Nx.Defn.Evaluator on Nx.BinaryBackend, in one run, median of N calls after a warm-up.
# A call includes reading the result back to the host, so both sides do the same work.
#
#   cd elixir && NX_PATH=... mix run ../bench/nx_bench.exs [--runs 10] [--json FILE]
#     [--size tiny|million] [--filter chain,add]
#
# Sizes are small because the evaluator interprets element by element in Elixir; `million`
# runs the flat rows at 10^6 elements. Under NXV_EMULATE=f64 (or a profile without f64)
# the f64 rows measure emulated f64.
{opts, _, _} =
  OptionParser.parse(System.argv(), strict: [runs: :integer, json: :string, size: :string, filter: :string])

runs = Keyword.get(opts, :runs, 10)
flat = %{"tiny" => 4096, "million" => 1_000_000}[opts[:size]] || 262_144
side = if opts[:size] == "tiny", do: 64, else: 512
filter = if f = opts[:filter], do: String.split(f, ","), else: nil

defmodule Bench.Workloads do
  import Nx.Defn

  defn add(x, y), do: x + y
  defn chain(x, y), do: Nx.tanh(x * y + 1) * Nx.sigmoid(x) - Nx.exp(-y * y)
  defn full_sum(x), do: Nx.sum(x)
  defn row_sum(m), do: Nx.sum(m, axes: [1])
  defn softmax(m) do
    e = Nx.exp(m - Nx.reduce_max(m, axes: [-1], keep_axes: true))
    e / Nx.sum(e, axes: [-1], keep_axes: true)
  end
  defn transpose(m), do: Nx.transpose(m) + 0

  # 32 unrolled leapfrog steps on a standard normal (grad log p(q) = -q), unrolled at trace
  # time (a plain function: Enum.reduce runs while jit traces it).
  def leapfrog(q, p, eps) do
    half = Nx.multiply(eps, 0.5)

    Enum.reduce(1..32, {q, p}, fn _, {q, p} ->
      p = Nx.add(p, Nx.multiply(half, Nx.negate(q)))
      q = Nx.add(q, Nx.multiply(eps, p))
      {q, Nx.add(p, Nx.multiply(half, Nx.negate(q)))}
    end)
  end
end

key = Nx.Random.key(0)
{x32, key} = Nx.Random.uniform(key, -1.0, 1.0, shape: {flat}, type: :f32)
{y32, key} = Nx.Random.uniform(key, -1.0, 1.0, shape: {flat}, type: :f32)
{m32, key} = Nx.Random.uniform(key, -1.0, 1.0, shape: {side, side}, type: :f32)
{q8, key} = Nx.Random.normal(key, shape: {8}, type: :f64)
{p8, key} = Nx.Random.normal(key, shape: {8}, type: :f64)
{q1k, key} = Nx.Random.normal(key, shape: {1000}, type: :f64)
{p1k, _key} = Nx.Random.normal(key, shape: {1000}, type: :f64)
eps = Nx.tensor(0.01, type: :f64)

as = fn t, type -> Nx.as_type(t, type) end

workloads =
  for type <- [:f32, :f64] do
    x = as.(x32, type)
    y = as.(y32, type)
    m = as.(m32, type)

    [
      {"add", type, &Bench.Workloads.add/2, [x, y]},
      {"chain", type, &Bench.Workloads.chain/2, [x, y]},
      {"sum", type, &Bench.Workloads.full_sum/1, [x]},
      {"rowsum", type, &Bench.Workloads.row_sum/1, [m]},
      {"softmax", type, &Bench.Workloads.softmax/1, [m]},
      {"transpose", type, &Bench.Workloads.transpose/1, [m]}
    ]
  end
  |> List.flatten()
  |> Kernel.++([
    {"leapfrog_d8", :f64, &Bench.Workloads.leapfrog/3, [q8, p8, eps]},
    {"leapfrog_d1000", :f64, &Bench.Workloads.leapfrog/3, [q1k, p1k, eps]}
  ])
  |> Enum.filter(fn {name, _, _, _} -> filter == nil or name in filter end)

median = fn times ->
  sorted = Enum.sort(times)
  Enum.at(sorted, div(length(sorted), 2))
end

time_ms = fn fun ->
  {us, _} = :timer.tc(fun)
  us / 1000
end

to_host = fn result -> Nx.Defn.Composite.traverse(result, &Nx.backend_transfer(&1, Nx.BinaryBackend)) end

{:ok, device} = Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!())
emulated = Enum.filter([f64: device.caps.emulate_f64, i64: device.caps.emulate_i64], &elem(&1, 1)) |> Keyword.keys()
IO.puts("# emulated: #{inspect(emulated)}, profile: #{inspect(device.profile)}")
IO.puts("# Nx.Vulkan on #{device.name} (#{device.driver}) vs Nx.Defn.Evaluator/BinaryBackend, median of #{runs} after warm-up, #{Date.utc_today()}")
IO.puts("| workload | dtype | evaluator ms | nx_vulkan ms | speed-up |")
IO.puts("|---|---|---|---|---|")

rows =
  for {name, type, fun, args} <- workloads do
    host_args = Enum.map(args, &Nx.backend_transfer(&1, Nx.BinaryBackend))
    vk = Nx.Defn.jit(fun, compiler: Nx.Vulkan)
    ev = Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)
    to_host.(apply(vk, host_args))
    vk_ms = median.(for _ <- 1..runs, do: time_ms.(fn -> to_host.(apply(vk, host_args)) end))
    ev_runs = max(1, div(runs, 5))
    apply(ev, host_args)
    ev_ms = median.(for _ <- 1..ev_runs, do: time_ms.(fn -> apply(ev, host_args) end))
    ratio = ev_ms / vk_ms
    IO.puts("| #{name} | #{type} | #{Float.round(ev_ms, 3)} | #{Float.round(vk_ms, 3)} | #{Float.round(ratio, 1)} |")
    %{workload: name, dtype: type, evaluator_ms: ev_ms, nx_vulkan_ms: vk_ms, speedup: ratio}
  end

if path = opts[:json] do
  File.write!(path, Nx.Vulkan.JSON.encode(rows))
end
