# eXMC's two-normal model (a ~ N(2, 3), b ~ N(-1, 0.5), NUTS 100 warm-up + 100 draws, seed 42)
# under eXMC's own configurations, timed: issue #19's workload. eXMC (github borodark/eXMC,
# v0.3.0) is not a dependency of this project: run this from an eXMC checkout whose mix.exs
# takes nx_vulkan (this repository's elixir/) and Nx as path dependencies (eXMC needs Elixir
# 1.18 and Nx 0.13; its Rust NIF is not needed for this model):
#
#   cd exmc && EXMC_MODE=none|vulkan_perop|vulkan_lazy|vulkan_lazy_device \
#     mix run path/to/nx_vulkan/bench/exmc_two_normals.exs
#
#   none                config :exmc, :compiler, :none
#   vulkan_perop        config :exmc, :compiler, :vulkan; :allow_vulkan_perop_sampling, true;
#                       Nx.default_backend({Nx.Vulkan.VulkanoBackend, lazy: false})
#   vulkan_lazy         as above with Nx.Vulkan.VulkanoBackend (lazy, :lazy_host_size 64)
#   vulkan_lazy_device  vulkan_lazy with config :nx_vulkan, lazy_host_size: 0
#   LHS=n               sets :lazy_host_size
#
# eXMC finds no shader for this model (detect_meta/1 is :unsupported), so under :vulkan it
# samples through Exmc.JIT.jit/2: Nx.Defn.Evaluator over the default backend. Prints one
# RESULT line: wall and CPU seconds of Exmc.NUTS.Sampler.sample/3, lazy flushes (device
# round trips) and their time, the draws' mean ± sd, step size and divergences.
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

# As eXMC's test/test_helper.exs: the default backend is Exmc.JIT.backend()
# (Nx.Vulkan.VulkanoBackend under :vulkan, lazy unless `lazy: false`).
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

if mode != "none", do: IO.puts("mode=devices #{inspect(Nx.Vulkan.devices(), limit: 5, printable_limit: 200)}")

alias Exmc.{Builder, Dist.Normal}

ir =
  Builder.new_ir()
  |> Builder.rv("a", Normal, %{mu: Nx.tensor(2.0), sigma: Nx.tensor(3.0)})
  |> Builder.rv("b", Normal, %{mu: Nx.tensor(-1.0), sigma: Nx.tensor(0.5)})

IO.puts(
  "mode=#{mode} compiler=#{inspect(Exmc.JIT.detect_compiler())} backend=#{inspect(Nx.default_backend())} " <>
    "lazy_host_size=#{inspect(Application.get_env(:nx_vulkan, :lazy_host_size))} " <>
    "detect_meta=#{inspect(Exmc.NUTS.ChainShaderCodegen.detect_meta(Exmc.Rewrite.apply(ir)))}"
)

# Device round trips of lazy mode: count and total duration of [:nx_vulkan, :lazy, :flush].
:counters.new(2, []) |> then(fn c -> :persistent_term.put(:flushes, c) end)

if Code.ensure_loaded?(:telemetry) do
  :telemetry.attach("flushes", [:nx_vulkan, :lazy, :flush], fn _, m, _, _ ->
    c = :persistent_term.get(:flushes)
    :counters.add(c, 1, 1)
    :counters.add(c, 2, m.duration)
  end, nil)
end

{_, cpu0} = :erlang.statistics(:runtime)
{us, {trace, stats}} =
  :timer.tc(fn -> Exmc.NUTS.Sampler.sample(ir, %{}, num_warmup: 100, num_samples: 100, seed: 42) end)
{_, cpu_ms} = :erlang.statistics(:runtime)
c = :persistent_term.get(:flushes)
flushes = :counters.get(c, 1)
flush_s = System.convert_time_unit(:counters.get(c, 2), :native, :microsecond) / 1.0e6

ms = fn t ->
  t = Nx.backend_copy(t, Nx.BinaryBackend)
  {Nx.to_number(Nx.mean(t)), Nx.to_number(Nx.standard_deviation(t, ddof: 1))}
end

{am, as} = ms.(trace["a"])
{bm, bs} = ms.(trace["b"])

IO.puts(
  :io_lib.format("RESULT mode=~s time_s=~.2f cpu_s=~.2f flushes=~p flush_s=~.2f a=~.3f+-~.3f b=~.3f+-~.3f step_size=~.4f divergences=~p type=~s",
    [mode, us / 1.0e6, cpu_ms / 1000, flushes, flush_s, am, as, bm, bs, stats.step_size * 1.0, stats.divergences, inspect(Nx.type(trace["a"]))])
)
