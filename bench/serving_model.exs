# The model and the load of the Elixir serving benchmarks (serving_bench.exs,
# serving_distributed.exs): the C++ serve bench's MLP (`nxv_bench --serve`: 784 -> 512 -> 512
# -> 10, f32, softmax) behind Nx.Serving, and callers that send it single-row requests.
defmodule ServingModel do
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
  # output: :host returns the batch's result to the host in the run: Nx.Serving then slices
  # each caller's rows out of a host tensor, not one device op per caller. :null computes
  # nothing and answers zeros: the same partitions and callers measure Nx.Serving's own
  # ceiling, the rows/s that no compiler can raise.
  def serving(params, batch_size, devices, output) do
    defn_opts =
      [compiler: Nx.Vulkan, output: if(output == :null, do: :host, else: output)] ++
        if(devices, do: [devices: devices], else: [])

    Nx.Serving.new(
      fn
        _opts when output == :null ->
          zeros = Nx.broadcast(0.0, {batch_size, 10})
          fn _batch -> zeros end

        opts ->
          device_opts = Keyword.take(opts, [:device, :cache_dir, :timeout])
          params = Nx.backend_copy(params, {Nx.Vulkan.Backend, device_opts})
          predict = Nx.Defn.jit(&predict/2, opts)

          fn batch ->
            predict.(params, pad(batch, batch_size))
          end
      end,
      defn_opts
    )
    |> Nx.Serving.client_postprocessing(fn {output, _metadata}, _info ->
      Nx.backend_transfer(output, Nx.BinaryBackend)
    end)
  end

  # A partial batch filled up to `batch_size` rows with a zero entry. Not `Nx.Batch.pad/2`:
  # its `Nx.pad` runs on the requests' Nx.BinaryBackend, 4-5 ms for 63 rows of 784 on a
  # 2-core machine, against 0.1 ms to concatenate zeros; at offered loads that leave batches
  # partial it bounded the throughput below the load (bench/results/*serving*).
  defp pad(%Nx.Batch{size: size} = batch, batch_size) when size < batch_size,
    do: Nx.Batch.concatenate(batch, [Nx.broadcast(0.0, {batch_size - size, 784})])

  defp pad(batch, _batch_size), do: batch

  # Starts the serving as `name`, one partition per entry of `devices`, unlinked from the
  # caller (an :erpc call from another node returns at once), and runs one request through
  # each partition so that compiling stays out of the figures. Returns the partitions' options.
  def start(name, batch_size, devices, output \\ :host) do
    {:ok, sup} =
      Nx.Serving.start_link(
        serving: serving(params(), batch_size, devices, output),
        name: name,
        batch_size: batch_size,
        batch_timeout: 5,
        partitions: true
      )

    Process.unlink(sup)

    partitions =
      Nx.Vulkan.__partitions_options__([compiler: Nx.Vulkan] ++ if(devices, do: [devices: devices], else: []))

    for _ <- partitions, do: Nx.Serving.batched_run({:local, name}, Nx.Batch.concatenate([row()]))
    partitions
  end

  def row, do: Nx.iota({1, 784}, type: :f32) |> Nx.divide(784)

  # `callers` processes send single-row requests to `target` for `seconds`: each as soon as its
  # last returned (closed loop), or, given `rate` (rows/s over all callers), on a fixed
  # schedule of one every callers/rate seconds each (open loop: the offered load does not
  # fall when the server slows, and a request's latency counts from its scheduled time).
  # Returns the latencies in microseconds, sorted, and the seconds the load took.
  def load(target, callers, seconds, rate \\ nil) do
    row = row()
    start = System.monotonic_time(:microsecond)
    deadline = start + seconds * 1_000_000
    interval = rate && max(round(callers * 1_000_000 / rate), 1)

    latencies =
      1..callers
      |> Task.async_stream(
        fn i ->
          loop(target, row, start + div((interval || 0) * (i - 1), callers), interval, deadline, [])
        end,
        max_concurrency: callers,
        timeout: :infinity
      )
      |> Enum.flat_map(fn {:ok, l} -> l end)
      |> Enum.sort()

    {latencies, (System.monotonic_time(:microsecond) - start) / 1.0e6}
  end

  defp loop(target, row, due, interval, deadline, acc) do
    now = System.monotonic_time(:microsecond)

    cond do
      now >= deadline ->
        acc

      interval && now < due ->
        Process.sleep(max(div(due - now, 1000), 1))
        loop(target, row, due, interval, deadline, acc)

      true ->
        sent = if interval, do: due, else: now
        Nx.Serving.batched_run(target, Nx.Batch.concatenate([row]))
        acc = [System.monotonic_time(:microsecond) - sent | acc]
        loop(target, row, interval && due + interval, interval, deadline, acc)
    end
  end

  # The benches' command line: the options both take, and `extra` (OptionParser's strict
  # form), over the defaults and `defaults`. --rate may be given several times.
  def options(argv, extra, defaults \\ []) do
    strict = [
      devices: :string,
      batch_size: :integer,
      callers: :integer,
      seconds: :integer,
      rate: [:integer, :keep],
      json: :string
    ]

    {opts, _, _} = OptionParser.parse(argv, strict: strict ++ extra)
    Keyword.merge([batch_size: 64, callers: 128, seconds: 10] ++ defaults, opts)
  end

  # The p-th percentile (0..1) of sorted microsecond latencies, in ms.
  def percentile([], _p), do: nil
  def percentile(sorted, p), do: Enum.at(sorted, min(length(sorted) - 1, trunc(p * length(sorted)))) / 1000

  # Device options per partition from "0,1": a device named twice gets a VkDevice per
  # partition, the second opened with another :timeout.
  def parse_devices(nil), do: nil

  def parse_devices(spec) do
    spec
    |> String.split(",", trim: true)
    |> Enum.with_index(fn device, i -> [device: device, timeout: 120_000 + i] end)
  end

  def device_name(index) do
    Enum.find_value(Nx.Vulkan.devices(), index, &(Integer.to_string(&1.index) == index && &1.name))
  end
end
