# Nx.Serving over Erlang distribution: one peer BEAM node per entry of --devices, each owning
# that device and serving serving_model.exs's MLP under one name; this node serves nothing
# and sends requests with `batched_run({:distributed, name}, ...)`, which Nx spreads over the
# nodes. Rows/s and p50/p99 latency with the first node alone, then with all of them
# (closed loop, and at each --rate rows/s offered); the ratio is the scaling.
#
#   cd elixir && NX_PATH=... mix run ../bench/serving_distributed.exs \
#     [--devices 0,1] [--batch-size 64] [--callers 128] [--seconds 10] [--rate ROWS_PER_S ...] [--json FILE]
Code.require_file("serving_model.exs", __DIR__)

defmodule ServingDistributed do
  @name :nxv_serving_distributed

  def run(opts) do
    {_, 0} = System.cmd("epmd", ["-daemon"])
    unless Node.alive?(), do: {:ok, _} = Node.start(:"nxv_bench_client@127.0.0.1", :longnames)
    devices = String.split(opts[:devices], ",", trim: true)
    model = Path.expand("serving_model.exs", __DIR__)

    {nodes, results} =
      devices
      |> Enum.with_index()
      |> Enum.map_reduce([], fn {device, i}, results ->
        node = start_node(i, device, model, opts[:batch_size])

        if i == 0 or i == length(devices) - 1,
          do: {node, results ++ measure(i + 1, opts)},
          else: {node, results}
      end)

    IO.puts("nodes: #{Enum.map_join(Enum.zip(nodes, devices), ", ", fn {n, d} -> "#{n} (device #{d})" end)}")

    case results do
      [one | _] when length(results) > 1 ->
        last = List.last(Enum.filter(results, &(&1.rate == one.rate)))
        IO.puts("scaling: #{Float.round(last.rows_per_s / one.rows_per_s, 2)}x with #{last.nodes} nodes")

      _ ->
        :ok
    end

    if file = opts[:json], do: File.write!(file, Nx.Vulkan.JSON.encode(%{results: results}) <> "\n")
  end

  # A peer node with this node's code path, serving on `device` alone.
  defp start_node(i, device, model, batch_size) do
    {:ok, _peer, node} =
      :peer.start(%{
        name: :"nxv_bench_node#{i}@127.0.0.1",
        args: [~c"-setcookie", Atom.to_charlist(Node.get_cookie())]
      })

    true = :erpc.call(node, :code, :set_path, [:code.get_path()])
    {:ok, _} = :erpc.call(node, :application, :ensure_all_started, [:nx_vulkan])
    :erpc.call(node, Code, :require_file, [model])
    :erpc.call(node, ServingModel, :start, [@name, batch_size, [[device: device]]], 600_000)
    wait_until(fn -> Enum.any?(groups(), &(node(&1) == node)) end)
    node
  end

  # Nx.Serving's :pg groups: one of all servings up to Nx 0.9, one per serving name from 0.10.
  defp groups, do: :pg.get_members(Nx.Serving.PG, Nx.Serving) ++ :pg.get_members(Nx.Serving.PG, @name)

  defp wait_until(fun, tries \\ 300) do
    cond do
      fun.() -> :ok
      tries == 0 -> raise "the peer's serving never joined Nx.Serving's process group"
      true -> Process.sleep(100) && wait_until(fun, tries - 1)
    end
  end

  defp measure(nodes, opts) do
    for rate <- [nil | Keyword.get_values(opts, :rate)] do
      {latencies, seconds} = ServingModel.load({:distributed, @name}, opts[:callers], opts[:seconds], rate)

      result = %{
        nodes: nodes,
        rate: rate,
        batch_size: opts[:batch_size],
        callers: opts[:callers],
        rows_per_s: Float.round(length(latencies) / seconds, 1),
        p50_ms: ServingModel.percentile(latencies, 0.5),
        p99_ms: ServingModel.percentile(latencies, 0.99)
      }

      IO.puts(
        "RESULT distributed nodes=#{nodes} offered=#{rate || "closed-loop"} callers=#{opts[:callers]} " <>
          "batch_size=#{opts[:batch_size]}: #{result.rows_per_s} rows/s, p50 #{result.p50_ms} ms, p99 #{result.p99_ms} ms"
      )

      result
    end
  end
end

ServingDistributed.run(ServingModel.options(System.argv(), [], devices: "0,1"))
