# Batched inference throughput of Nx.Serving over Nx.Vulkan with N partitions: an MLP
# (784 -> 512 -> 512 -> 10, f32, softmax), `batch_size` rows per batch, `callers`
# concurrent processes each sending single-row requests through `Nx.Serving.batched_run/2`
# for `seconds` seconds; prints rows/s, batches/s and the latency percentiles per setting.
#
# Partitions are one per device (`partitions: true`, `Nx.Vulkan.__partitions_options__/1`):
# by default every non-CPU device, else the default device; `--devices 0,1` chooses them,
# `--devices 0,0` puts two partitions on one device (one VkDevice each: the second is
# opened with another :timeout).
#
#   cd elixir && NX_PATH=... mix run ../bench/serving_bench.exs \
#     [--devices 0,1] [--batch-size 64] [--callers 128] [--seconds 10] [--output host|device]
#     [--json FILE]
defmodule ServingBench do
  import Nx.Defn

  defn predict({w1, b1, w2, b2, w3, b3}, x) do
    x
    |> Nx.dot(w1)
    |> Nx.add(b1)
    |> Nx.max(0)
    |> Nx.dot(w2)
    |> Nx.add(b2)
    |> Nx.max(0)
    |> Nx.dot(w3)
    |> Nx.add(b3)
    |> softmax()
  end

  defnp softmax(t) do
    e = Nx.exp(t - Nx.reduce_max(t, axes: [-1], keep_axes: true))
    e / Nx.sum(e, axes: [-1], keep_axes: true)
  end

  def params do
    key = Nx.Random.key(42)
    {w1, key} = Nx.Random.normal(key, 0.0, 0.05, shape: {784, 512}, type: :f32)
    {w2, key} = Nx.Random.normal(key, 0.0, 0.05, shape: {512, 512}, type: :f32)
    {w3, _key} = Nx.Random.normal(key, 0.0, 0.05, shape: {512, 10}, type: :f32)
    {w1, Nx.broadcast(0.01, {512}), w2, Nx.broadcast(0.01, {512}), w3, Nx.broadcast(0.01, {10})}
  end

  # One partition per entry of `devices` (nil: the compiler's default); each keeps the
  # parameters on its own device and pads every batch to `batch_size` (one executable).
  def serving(params, batch_size, devices, output) do
    # output: :host returns the batch's result to the host in the run: Nx.Serving then
    # slices each caller's rows out of a host tensor, not one device op per caller.
    defn_opts = [compiler: Nx.Vulkan, output: output] ++ if(devices, do: [devices: devices], else: [])

    Nx.Serving.new(
      fn opts ->
        device_opts = Keyword.take(opts, [:device, :cache_dir, :timeout])
        params = Nx.backend_copy(params, {Nx.Vulkan.Backend, device_opts})
        predict = Nx.Defn.jit(&predict/2, opts)

        fn batch ->
          predict.(params, Nx.Batch.pad(batch, batch_size - batch.size))
        end
      end,
      defn_opts
    )
    |> Nx.Serving.client_postprocessing(fn {output, _metadata}, _info ->
      Nx.backend_transfer(output, Nx.BinaryBackend)
    end)
  end

  def run(opts) do
    batch_size = opts[:batch_size]
    devices = parse_devices(opts[:devices])
    params = params()
    serving = serving(params, batch_size, devices, String.to_existing_atom(opts[:output] || "host"))

    partitions =
      Nx.Vulkan.__partitions_options__([compiler: Nx.Vulkan] ++ if(devices, do: [devices: devices], else: []))

    {:ok, sup} =
      Nx.Serving.start_link(
        serving: serving,
        name: __MODULE__,
        batch_size: batch_size,
        batch_timeout: 5,
        partitions: true
      )

    row = Nx.iota({1, 784}, type: :f32) |> Nx.divide(784)
    # warm up: compile once per partition
    for _ <- partitions, do: Nx.Serving.batched_run(__MODULE__, Nx.Batch.concatenate([row]))

    deadline = System.monotonic_time(:millisecond) + opts[:seconds] * 1000

    latencies =
      1..opts[:callers]
      |> Task.async_stream(
        fn _ -> loop(row, deadline, []) end,
        max_concurrency: opts[:callers],
        timeout: :infinity
      )
      |> Enum.flat_map(fn {:ok, l} -> l end)
      |> Enum.sort()

    rows = length(latencies)
    pct = fn p -> Enum.at(latencies, min(rows - 1, trunc(p * rows))) / 1000 end

    result = %{
      device: Enum.map(partitions, &device_name(&1[:device])),
      partitions: length(partitions),
      batch_size: batch_size,
      callers: opts[:callers],
      seconds: opts[:seconds],
      rows: rows,
      rows_per_s: Float.round(rows / opts[:seconds], 1),
      p50_ms: pct.(0.5),
      p99_ms: pct.(0.99)
    }

    Supervisor.stop(sup)

    IO.puts(
      "partitions=#{result.partitions} (#{Enum.join(result.device, ", ")}) batch_size=#{batch_size} " <>
        "callers=#{result.callers}: #{result.rows_per_s} rows/s, ~#{Float.round(result.rows_per_s / batch_size, 1)} batches/s, " <>
        "p50 #{result.p50_ms} ms, p99 #{result.p99_ms} ms"
    )

    if file = opts[:json], do: File.write!(file, Nx.Vulkan.JSON.encode(result) <> "\n")
    result
  end

  defp loop(row, deadline, acc) do
    if System.monotonic_time(:millisecond) >= deadline do
      acc
    else
      start = System.monotonic_time(:microsecond)
      Nx.Serving.batched_run(__MODULE__, Nx.Batch.concatenate([row]))
      loop(row, deadline, [System.monotonic_time(:microsecond) - start | acc])
    end
  end

  defp device_name(index) do
    Enum.find_value(Nx.Vulkan.devices(), index, &(Integer.to_string(&1.index) == index && &1.name))
  end

  defp parse_devices(nil), do: nil

  # A device named twice gets a VkDevice per partition: the second with another :timeout.
  defp parse_devices(spec) do
    spec
    |> String.split(",", trim: true)
    |> Enum.with_index(fn device, i -> [device: device, timeout: 120_000 + i] end)
  end
end

{opts, _, _} =
  OptionParser.parse(System.argv(),
    strict: [
      devices: :string,
      batch_size: :integer,
      callers: :integer,
      seconds: :integer,
      json: :string,
      output: :string
    ]
  )

opts = Keyword.merge([batch_size: 64, callers: 128, seconds: 10], opts)
ServingBench.run(opts)
