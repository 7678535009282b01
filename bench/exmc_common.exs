# What the eXMC benchmarks share (Code.require_file'd by bench/exmc_*.exs): eXMC's
# configuration for EXMC_MODE, and where a run's time goes by nx_vulkan's telemetry events.
defmodule ExmcBench do
  # EXMC_MODE, as eXMC's test/test_helper.exs selects a backend:
  #   none                config :exmc, :compiler, :none: eXMC calls its functions directly,
  #                       eager Nx on Nx.BinaryBackend
  #   vulkan_perop        :compiler :vulkan, :allow_vulkan_perop_sampling, and
  #                       Nx.default_backend({Nx.Vulkan.VulkanoBackend, lazy: false})
  #   vulkan_lazy         as above with Nx.Vulkan.VulkanoBackend (lazy, :lazy_host_size 64)
  #   vulkan_lazy_device  vulkan_lazy with config :nx_vulkan, lazy_host_size: 0
  # LHS=n sets :lazy_host_size. Returns the mode.
  def configure do
    mode = System.get_env("EXMC_MODE", "none")

    case mode do
      "none" ->
        Application.put_env(:exmc, :compiler, :none)

      "vulkan" <> _ ->
        Application.put_env(:exmc, :compiler, :vulkan)
        Application.put_env(:exmc, :allow_vulkan_perop_sampling, true)
    end

    if mode == "vulkan_lazy_device", do: Application.put_env(:nx_vulkan, :lazy_host_size, 0)
    if s = System.get_env("LHS"), do: Application.put_env(:nx_vulkan, :lazy_host_size, String.to_integer(s))

    backend =
      case {mode, Exmc.JIT.backend()} do
        {"vulkan_perop", b} -> {b, lazy: false}
        {_, b} -> b
      end

    Nx.default_backend(backend)

    case Exmc.JIT.detect_compiler() do
      nil -> :ok
      Nx.Vulkan -> Nx.Defn.default_options(compiler: Nx.Vulkan.Compiler)
      c -> Nx.Defn.default_options(compiler: c)
    end

    if mode != "none" do
      IO.puts("mode=devices #{inspect(Nx.Vulkan.devices(), limit: 5, printable_limit: 200)}")
      # the opened device as a profile (NXV_PROFILE) restricts it, and what it emulates
      %{profile: p, caps: c} = Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!()))
      IO.puts("mode=device profile=#{inspect(p)} float64=#{c.float64} emulate_f64=#{c.emulate_f64} emulate_i64=#{c.emulate_i64}")
    end

    mode
  end

  @events [
    [:nx_vulkan, :compile],
    [:nx_vulkan, :run],
    [:nx_vulkan, :lazy, :flush],
    [:nx_vulkan, :lazy, :fallback],
    [:nx_vulkan, :transfer]
  ]
  # counter slots
  @compiles 1
  @compile_us 2
  @runs 3
  @run_us 4
  @device_us 5
  @dispatches 6
  @submits 7
  @flushes 8
  @flush_us 9
  @fallbacks 10
  @transfer_bytes 11

  # Sums nx_vulkan's telemetry events from every process from now on.
  def attach_telemetry do
    c = :counters.new(11, [:write_concurrency])
    :persistent_term.put({__MODULE__, :counters}, c)
    :telemetry.attach_many({__MODULE__, :sum}, @events, &__MODULE__.handle/4, c)
  end

  def handle([:nx_vulkan, :compile], m, _, c) do
    :counters.add(c, @compiles, 1)
    :counters.add(c, @compile_us, m.total_time)
  end

  def handle([:nx_vulkan, :run], m, _, c) do
    :counters.add(c, @runs, 1)
    :counters.add(c, @run_us, m.total_time)
    :counters.add(c, @device_us, round(m.device_ms * 1000))
    :counters.add(c, @dispatches, m.dispatches)
    :counters.add(c, @submits, m.submits)
  end

  def handle([:nx_vulkan, :lazy, :flush], m, _, c) do
    :counters.add(c, @flushes, 1)
    :counters.add(c, @flush_us, System.convert_time_unit(m.duration, :native, :microsecond))
  end

  def handle([:nx_vulkan, :lazy, :fallback], _, _, c), do: :counters.add(c, @fallbacks, 1)
  def handle([:nx_vulkan, :transfer], m, _, c), do: :counters.add(c, @transfer_bytes, m.bytes)

  # `key=value` fields for the RESULT line, from the sums and the run's wall time:
  # compile_s the graphs' compilation (passes, SPIR-V, the driver's pipelines); run_s the
  # calls of compiled graphs, of which kernel_s is device time between the first and last
  # dispatch (timestamp queries) and io_s the rest: uploads, downloads, submits and waits;
  # host_s the wall time outside both (eXMC's tree building, Nx on the host, lazy mode's
  # recording). A lazy flush compiles and runs one graph: flush_s is inside compile_s + run_s.
  def breakdown(wall_us) do
    c = :persistent_term.get({__MODULE__, :counters})
    g = &:counters.get(c, &1)
    s = &(g.(&1) / 1.0e6)
    host = (wall_us - g.(@compile_us) - g.(@run_us)) / 1.0e6

    :io_lib.format(
      "compiles=~p compile_s=~.2f runs=~p run_s=~.2f kernel_s=~.2f io_s=~.2f host_s=~.2f " <>
        "dispatches=~p submits=~p flushes=~p flush_s=~.2f fallbacks=~p transfer_mb=~.1f",
      [g.(@compiles), s.(@compile_us), g.(@runs), s.(@run_us), s.(@device_us),
       s.(@run_us) - s.(@device_us), host, g.(@dispatches), g.(@submits), g.(@flushes),
       s.(@flush_us), g.(@fallbacks), g.(@transfer_bytes) / 1.0e6]
    )
  end

  # Exmc.NUTS.Sampler.sample/3 timed: {wall µs, CPU seconds of the VM, result}.
  def timed(fun) do
    {_, _} = :erlang.statistics(:runtime)
    {us, result} = :timer.tc(fun)
    {_, cpu_ms} = :erlang.statistics(:runtime)
    {us, cpu_ms / 1000, result}
  end

  # With EXMC_DRAWS_FILE set, writes every draw of the trace there, one `name index value` line
  # each, value in the shortest text that reads back to the same float (runs compare bit for bit).
  def write_draws(trace) do
    if path = System.get_env("EXMC_DRAWS_FILE") do
      lines =
        for {name, t} <- Enum.sort(trace), {x, i} <- Enum.with_index(Nx.to_flat_list(t)),
            do: "#{name} #{i} #{inspect(x)}\n"

      File.write!(path, lines)
    end
  end

  # mean and sample sd of a trace's draws, on the host.
  def mean_sd(t) do
    t = Nx.backend_copy(t, Nx.BinaryBackend)
    {Nx.to_number(Nx.mean(t)), Nx.to_number(Nx.standard_deviation(t, ddof: 1))}
  end
end
