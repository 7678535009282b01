# eXMC's two-normal model (a ~ N(2, 3), b ~ N(-1, 0.5), NUTS 100 warm-up + 100 draws, seed 42)
# under eXMC's own configurations, timed. eXMC (github borodark/eXMC, v0.3.0) is not a
# dependency of this project: run this from an eXMC checkout whose mix.exs takes nx_vulkan
# (this repository's elixir/) and Nx 0.13 as path dependencies (scripts/exmc_setup.sh makes
# one; eXMC needs Elixir 1.18; its Rust NIF is not needed), or every mode on the GPU machine
# with `bench/run_device.sh exmc`:
#
#   cd exmc && EXMC_MODE=none|vulkan_perop|vulkan_lazy|vulkan_lazy_device \
#     mix run path/to/nx_vulkan/bench/exmc_two_normals.exs
#
# (modes: bench/exmc_common.exs). eXMC finds no shader for this model (detect_meta/1 is
# :unsupported), so under :vulkan it samples through Exmc.JIT.jit/2: Nx.Defn.Evaluator over
# the default backend. Prints one RESULT line: wall and CPU seconds of
# Exmc.NUTS.Sampler.sample/3, the draws' mean ± sd, step size, divergences, and where the
# time went by nx_vulkan's telemetry (ExmcBench.breakdown/1); EXMC_DRAWS_FILE=path also writes
# every draw there (ExmcBench.write_draws/1).
Code.require_file("exmc_common.exs", __DIR__)
mode = ExmcBench.configure()

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

ExmcBench.attach_telemetry()

{us, cpu_s, {trace, stats}} =
  ExmcBench.timed(fn -> Exmc.NUTS.Sampler.sample(ir, %{}, num_warmup: 100, num_samples: 100, seed: 42) end)

ExmcBench.write_draws(trace)
{am, as} = ExmcBench.mean_sd(trace["a"])
{bm, bs} = ExmcBench.mean_sd(trace["b"])

IO.puts(
  :io_lib.format("RESULT model=two_normals mode=~s time_s=~.2f cpu_s=~.2f a=~.3f+-~.3f b=~.3f+-~.3f step_size=~.4f divergences=~p type=~s ~s",
    [mode, us / 1.0e6, cpu_s, am, as, bm, bs, stats.step_size * 1.0, stats.divergences,
     inspect(Nx.type(trace["a"])), ExmcBench.breakdown(us)])
)
