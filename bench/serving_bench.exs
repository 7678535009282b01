# Batched inference throughput of Nx.Serving over Nx.Vulkan with N partitions: serving_model.exs's
# MLP (the C++ serve bench's: 784 -> 512 -> 512 -> 10, f32, softmax), `batch_size` rows per
# batch, `callers` concurrent processes each sending single-row requests through
# `Nx.Serving.batched_run/2` for `seconds` seconds, each as soon as its last returned, and
# again at `--rate` rows/s offered when given; prints rows/s and the latency percentiles.
#
# Partitions are one per device (`partitions: true`, `Nx.Vulkan.__partitions_options__/1`):
# by default every non-CPU device, else the default device; `--devices 0,1` chooses them,
# `--devices 0,0` puts two partitions on one device (one VkDevice each: the second is
# opened with another :timeout).
#
#   cd elixir && NX_PATH=... mix run ../bench/serving_bench.exs \
#     [--devices 0,1] [--batch-size 64] [--callers 128] [--seconds 10] [--rate ROWS_PER_S ...]
#     [--output host|device|null] [--json FILE]
Code.require_file("serving_model.exs", __DIR__)

defmodule ServingBench do
  def run(opts) do
    batch_size = opts[:batch_size]
    devices = ServingModel.parse_devices(opts[:devices])
    output = String.to_existing_atom(opts[:output] || "host")
    partitions = ServingModel.start(__MODULE__, batch_size, devices, output)
    names = Enum.map(partitions, &ServingModel.device_name(&1[:device]))

    results =
      for rate <- [nil | Keyword.get_values(opts, :rate)] do
        {latencies, seconds} = ServingModel.load(__MODULE__, opts[:callers], opts[:seconds], rate)

        result = %{
          device: names,
          partitions: length(partitions),
          output: output,
          batch_size: batch_size,
          callers: opts[:callers],
          rate: rate,
          seconds: Float.round(seconds, 2),
          rows: length(latencies),
          rows_per_s: Float.round(length(latencies) / seconds, 1),
          p50_ms: ServingModel.percentile(latencies, 0.5),
          p99_ms: ServingModel.percentile(latencies, 0.99)
        }

        IO.puts(
          "RESULT partitions=#{result.partitions} (#{Enum.join(names, ", ")}) output=#{output} offered=#{rate || "closed-loop"} " <>
            "batch_size=#{batch_size} callers=#{result.callers}: #{result.rows_per_s} rows/s, " <>
            "~#{Float.round(result.rows_per_s / batch_size, 1)} batches/s, p50 #{result.p50_ms} ms, p99 #{result.p99_ms} ms"
        )

        result
      end

    Supervisor.stop(Module.concat(__MODULE__, "Supervisor"))
    if file = opts[:json], do: File.write!(file, Nx.Vulkan.JSON.encode(%{results: results}) <> "\n")
    results
  end
end

ServingBench.run(ServingModel.options(System.argv(), output: :string))
