# Nx.cumulative_sum on f32[1024, 1024] (axis 1 and axis 0), f32[10^6] and f32[10^7]: Nx.Vulkan's scan
# kernels (jitted, compile excluded) against Nx.BinaryBackend, which runs Nx's
# associative-scan expansion (log2(n) levels of slices, adds, pads and concatenations).
# Inputs are seeded `:rand` values in [-1, 1]; each backend is timed `--runs` times after a
# warm-up call, the median reported; the BinaryBackend figure is one run (it takes seconds).
#
#   cd elixir && NX_PATH=... mix run ../bench/scan_bench.exs [--runs 10] [--json FILE]
defmodule ScanBench do
  def input(shape) do
    :rand.seed(:exsss, 42)
    for(_ <- 1..Tuple.product(shape), do: 2 * :rand.uniform() - 1) |> Nx.tensor(type: :f32) |> Nx.reshape(shape)
  end

  def time_ms(fun, runs) do
    times = for _ <- 1..runs, do: elem(:timer.tc(fun), 0) / 1000
    Enum.at(Enum.sort(times), div(runs, 2))
  end

  def row(name, shape, axis, runs) do
    x = input(shape)
    scan = &Nx.cumulative_sum(&1, axis: axis)
    jitted = Nx.Defn.jit(scan, compiler: Nx.Vulkan)
    device_x = Nx.backend_transfer(x, Nx.Vulkan.Backend)
    run = fn -> jitted.(device_x) |> Nx.backend_copy(Nx.BinaryBackend) end
    want = run.()
    vulkan = time_ms(run, runs)
    {binary, got} = :timer.tc(fn -> scan.(x) end)
    binary = binary / 1000
    err = Nx.subtract(want, got) |> Nx.abs() |> Nx.reduce_max() |> Nx.to_number()
    IO.puts("#{String.pad_trailing(name, 24)} vulkan #{Float.round(vulkan, 3)} ms  binary #{Float.round(binary, 1)} ms  " <>
              "ratio #{Float.round(binary / vulkan, 1)}x  max |diff| #{err}")
    %{workload: name, vulkan_ms: vulkan, binary_ms: binary, ratio: binary / vulkan, max_abs_diff: err}
  end

  def main(args) do
    {opts, _} = OptionParser.parse!(args, strict: [runs: :integer, json: :string])
    runs = Keyword.get(opts, :runs, 10)
    info = Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!()))
    IO.puts("device: #{info.name}")

    rows = [
      row("cumsum_1024x1024", {1024, 1024}, 1, runs),
      row("cumsum_1024x1024_axis0", {1024, 1024}, 0, runs),
      row("cumsum_1e6", {1_000_000}, 0, runs),
      row("cumsum_1e7", {10_000_000}, 0, runs)
    ]

    if path = opts[:json] do
      File.write!(path, Nx.Vulkan.JSON.encode(%{device: info.name, date: Date.to_iso8601(Date.utc_today()), results: rows}))
      IO.puts("wrote #{path}")
    end
  end
end

ScanBench.main(System.argv())
