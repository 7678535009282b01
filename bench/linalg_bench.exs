# Nx.LinAlg on Nx.Vulkan against Nx.Defn.Evaluator on Nx.BinaryBackend, by matrix size:
# compile time (trace, serialisation and native compilation, from the [:nx_vulkan, :compile]
# telemetry event), the first call's wall time (which adds the first run, where lavapipe
# compiles its shaders), and run time (median wall time of the calls after it, result
# read back to the host) separately, since they scale differently with n.
#
#   cd elixir && NX_PATH=... mix run ../bench/linalg_bench.exs \
#     [--ops solve,determinant,...] [--sizes 4,8,16,32,64] [--types f32,f64] [--runs 5] [--json FILE]
#     [--no-evaluator]   (the evaluator's SVD of a 64x64 matrix takes tens of minutes)
#
# Use a fresh NXV_CACHE_DIR so that compile times include pipeline creation.
{opts, _, _} =
  OptionParser.parse(System.argv(),
    strict: [ops: :string, sizes: :string, types: :string, runs: :integer, json: :string, evaluator: :boolean]
  )

split = fn key, default -> (opts[key] || default) |> String.split(",", trim: true) end
ops = split.(:ops, "solve,determinant,cholesky,lu,triangular_solve,qr,svd,eigh") |> Enum.map(&String.to_atom/1)
sizes = split.(:sizes, "4,8,16,32,64") |> Enum.map(&String.to_integer/1)
types = split.(:types, "f32,f64") |> Enum.map(&String.to_atom/1)
runs = Keyword.get(opts, :runs, 5)

# Well-conditioned inputs: pivoting still happens (the entries are unordered), and no
# iteration stalls on a near-singular matrix.
general = fn n, type ->
  a = Nx.iota({n, n}, type: :f64) |> Nx.pow(2) |> Nx.multiply(0.37) |> Nx.sin()
  a |> Nx.add(Nx.multiply(Nx.eye(n, type: :f64), 2.0)) |> Nx.as_type(type)
end

spd = fn n, type ->
  a = general.(n, :f64)
  a |> Nx.dot([1], a, [1]) |> Nx.add(Nx.eye(n, type: :f64)) |> Nx.as_type(type)
end

lower = fn n, type ->
  a = general.(n, :f64)
  Nx.select(Nx.greater_equal(Nx.iota({n, 1}), Nx.iota({1, n})), a, 0) |> Nx.as_type(type)
end

rhs = fn n, type -> Nx.iota({n}, type: :f64) |> Nx.cos() |> Nx.as_type(type) end

cases = %{
  solve: {&Nx.LinAlg.solve/2, fn n, t -> [general.(n, t), rhs.(n, t)] end},
  determinant: {&Nx.LinAlg.determinant/1, fn n, t -> [general.(n, t)] end},
  cholesky: {&Nx.LinAlg.cholesky/1, fn n, t -> [spd.(n, t)] end},
  lu: {&Nx.LinAlg.lu/1, fn n, t -> [general.(n, t)] end},
  triangular_solve: {&Nx.LinAlg.triangular_solve/2, fn n, t -> [lower.(n, t), rhs.(n, t)] end},
  qr: {&Nx.LinAlg.qr/1, fn n, t -> [general.(n, t)] end},
  svd: {&Nx.LinAlg.svd/1, fn n, t -> [general.(n, t)] end},
  eigh: {&Nx.LinAlg.eigh/1, fn n, t -> [spd.(n, t)] end}
}

median = fn times -> times |> Enum.sort() |> Enum.at(div(length(times), 2)) end
time_ms = fn fun -> fun |> :timer.tc() |> elem(0) |> Kernel./(1000) end
to_host = fn result -> Nx.Defn.Composite.traverse(result, &Nx.backend_transfer(&1, Nx.BinaryBackend)) end

defmodule LinAlgBench do
  # The compile event's measurements, sent to the process that compiled.
  def handle(_event, measurements, _meta, pid), do: send(pid, {:compiled, measurements})
end

:telemetry.attach("linalg-bench", [:nx_vulkan, :compile], &LinAlgBench.handle/4, self())

# The compile event's total for the last call (0 when it hit the cache).

compile_ms = fn ->
  receive do
    {:compiled, m} -> m.total_time / 1000
  after
    0 -> 0.0
  end
end

device = Nx.Vulkan.devices() |> List.first()

IO.puts(
  "# Nx.LinAlg: Nx.Vulkan on #{device.name} vs Nx.Defn.Evaluator/BinaryBackend, " <>
    "Nx #{Application.spec(:nx, :vsn)}, run = median of #{runs}, #{Date.utc_today()}"
)

IO.puts("| op | n | dtype | compile ms | first call ms | run ms | evaluator ms | nodes |")
IO.puts("|---|---|---|---|---|---|---|---|")

rows =
  for op <- ops, n <- sizes, type <- types do
    {fun, inputs} = cases[op]
    args = inputs.(n, type)
    nodes = fun |> Nx.Defn.debug_expr_apply(args) |> Nx.Vulkan.IR.build() |> elem(0) |> Nx.Vulkan.JSON.encode()
    nodes = nodes |> String.split(~s("op":)) |> length() |> Kernel.-(1)
    vk = Nx.Defn.jit(fun, compiler: Nx.Vulkan)
    ev = Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)
    first = time_ms.(fn -> to_host.(apply(vk, args)) end)
    compile = compile_ms.()
    run = median.(for _ <- 1..runs, do: time_ms.(fn -> to_host.(apply(vk, args)) end))
    eval =
      if Keyword.get(opts, :evaluator, true) do
        apply(ev, args)
        median.(for _ <- 1..max(1, div(runs, 2)), do: time_ms.(fn -> apply(ev, args) end))
      end

    r = fn ms -> if ms, do: Float.round(ms * 1.0, 1), else: "–" end
    IO.puts("| #{op} | #{n} | #{type} | #{r.(compile)} | #{r.(first)} | #{r.(run)} | #{r.(eval)} | #{nodes} |")
    %{op: op, n: n, dtype: type, compile_ms: compile, first_ms: first, run_ms: run, evaluator_ms: eval, nodes: nodes}
  end

if path = opts[:json], do: File.write!(path, Nx.Vulkan.JSON.encode(rows))
