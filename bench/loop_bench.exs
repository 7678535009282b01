# `while` loops on Nx.Vulkan against Nx.Defn.Evaluator on Nx.BinaryBackend: per call, the
# median wall time (result read back to the host), and the run's submits and dispatches
# (the [:nx_vulkan, :run] telemetry event), for the ways the runtime drives a loop:
#
# * counted: the condition reads only an integer counter and its bound, which the host
#   follows itself, several iterations per submit;
# * on data: the condition reads values the body computes; iterations run speculatively,
#   1, 2, 4, ... per submit, behind gate kernels that stop them on the device;
# * Nx.Random in a counted loop (a random-walk Metropolis chain): threefry's loops of
#   constant trip count are inlined by the `unroll` pass, leaving the counted outer loop;
# * nested: a loop on data inside a counted loop, which runs as one serial kernel
#   (codegen/serial_loop.h), a bounded number of steps per dispatch.
#
#   cd elixir && NX_PATH=... mix run ../bench/loop_bench.exs [--runs 5] [--json FILE]
defmodule LoopBench do
  import Nx.Defn

  # x <- x * 0.999 + 0.01, n times
  defn counted(x, n) do
    {x, _, _} = while {x, i = 0, n}, i < n, do: {x * 0.999 + 0.01, i + 1, n}
    x
  end

  # Newton's iteration for sqrt(a), elementwise, until every residual is below 1e-6 of a;
  # returns the iteration count too
  defn newton_sqrt(a) do
    {x, _, i} =
      while {x = a, a, i = 0}, Nx.any(Nx.abs(x * x - a) > 1.0e-6 * a) do
        {0.5 * (x + a / x), a, i + 1}
      end

    {x, i}
  end

  # A random-walk Metropolis chain on a standard normal: each step splits the key
  defn metropolis(q0, key, opts \\ []) do
    {q, _, _} =
      while {q = q0, key, i = 0}, i < opts[:steps] do
        {step, key} = Nx.Random.normal(key, shape: Nx.shape(q), type: Nx.type(q))
        {u, key} = Nx.Random.uniform(key, type: Nx.type(q))
        proposal = q + 0.5 * step
        accept = Nx.log(u) < 0.5 * (Nx.sum(q * q) - Nx.sum(proposal * proposal))
        {Nx.select(accept, proposal, q), key, i + 1}
      end

    q
  end

  # Newton's sqrt of a + k for k = 0..n-1, summed: a loop on data inside a counted one
  defn nested(a, n) do
    {acc, _, _, _} =
      while {acc = Nx.broadcast(0.0, Nx.shape(a)), a, k = 0, n}, k < n do
        {x, _} = newton_sqrt(a + k)
        {acc + x, a, k + 1, n}
      end

    acc
  end

  def handle(_event, measurements, _meta, pid), do: send(pid, {:run, measurements})
end

{opts, _, _} = OptionParser.parse(System.argv(), strict: [runs: :integer, json: :string])
runs = Keyword.get(opts, :runs, 5)

:telemetry.attach("loop-bench", [:nx_vulkan, :run], &LoopBench.handle/4, self())

last_run = fn ->
  Stream.repeatedly(fn -> receive do: ({:run, m} -> m), after: (0 -> nil) end)
  |> Enum.take_while(& &1)
  |> List.last()
end

median = fn xs -> xs |> Enum.sort() |> Enum.at(div(length(xs), 2)) end

time_ms = fn f ->
  {us, _} = :timer.tc(f)
  us / 1000
end

a = Nx.iota({1024}, type: :f32) |> Nx.add(1) |> Nx.multiply(37.5)

cases = [
  {"counted, 1000 iterations", &LoopBench.counted/2, [Nx.iota({256}, type: :f32), Nx.tensor(1000)], 1000},
  {"on data (Newton sqrt)", &LoopBench.newton_sqrt/1, [a], &(&1 |> elem(1) |> Nx.to_number())},
  {"Nx.Random in a counted loop (Metropolis)", &LoopBench.metropolis(&1, &2, steps: 100),
   [Nx.iota({8}, type: :f64), Nx.Random.key(42)], 100},
  {"nested: on data inside counted", &LoopBench.nested/2, [a, Nx.tensor(20)], 20}
]

device = Nx.Vulkan.devices() |> List.first()

IO.puts(
  "# while loops: Nx.Vulkan on #{device.name} vs Nx.Defn.Evaluator/BinaryBackend, " <>
    "Nx #{Application.spec(:nx, :vsn)}, median of #{runs}, #{Date.utc_today()}"
)

IO.puts("| loop | iterations | submits | dispatches | Nx.Vulkan ms | evaluator ms | evaluator / Nx.Vulkan |")
IO.puts("|---|---|---|---|---|---|---|")

rows =
  for {name, fun, args, iterations} <- cases do
    vk = Nx.Defn.jit(fun, compiler: Nx.Vulkan)
    ev = Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)
    to_host = &Nx.Defn.Composite.traverse(&1, fn t -> Nx.backend_copy(t, Nx.BinaryBackend) end)
    result = to_host.(apply(vk, args))
    _ = last_run.()
    run = median.(for _ <- 1..runs, do: time_ms.(fn -> to_host.(apply(vk, args)) end))
    stats = last_run.()
    eval = median.(for _ <- 1..max(1, div(runs, 2)), do: time_ms.(fn -> apply(ev, args) end))
    iterations = if is_function(iterations), do: iterations.(result), else: iterations
    r = &Float.round(&1 * 1.0, 2)

    IO.puts(
      "| #{name} | #{iterations} | #{stats.submits} | #{stats.dispatches} | #{r.(run)} | #{r.(eval)} | #{r.(eval / run)} |"
    )

    %{loop: name, submits: stats.submits, dispatches: stats.dispatches, run_ms: run, evaluator_ms: eval}
  end

if path = opts[:json], do: File.write!(path, Nx.Vulkan.JSON.encode(%{device: device.name, rows: rows}))
