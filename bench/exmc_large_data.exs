# eXMC with data volume: a logistic regression, y ~ Bernoulli(sigmoid(b0 + X·[b1, b2, b3])),
# X of EXMC_N (default 100,000) rows of three N(0, 1) columns, true coefficients
# b = (-0.5, 1.0, -2.0, 0.5), priors b_i ~ N(0, 2.5), written with eXMC's own pieces: four
# Exmc.Dist.Normal random variables and the likelihood as an Exmc.Dist.Custom whose log-density
# is Exmc.Dist.Bernoulli.logpdf/2 summed over the rows, the data (X and y, one f64 tensor of
# N × 4) passed with Exmc.Builder.data/2, as eXMC's own benchmarks pass observations. NUTS,
# EXMC_WARMUP (default 10) warm-up + EXMC_DRAWS (default 10) draws, seed 42, started at the
# true coefficients (from 0, warm-up's first trajectories cross ~2 units of a posterior whose
# sd is ~0.01 and cost hundreds of gradients each, a cost that says nothing about the device
# and is the same in every mode: every mode computes the same trajectories). Run from an eXMC
# checkout (scripts/exmc_setup.sh makes one; `bench/run_device.sh exmc` runs every mode):
#
#   cd exmc && EXMC_MODE=none|vulkan_perop|vulkan_lazy|vulkan_lazy_device \
#     mix run path/to/nx_vulkan/bench/exmc_large_data.exs
#
# (modes: bench/exmc_common.exs). Prints one RESULT line: wall and CPU seconds of
# Exmc.NUTS.Sampler.sample/3, each coefficient's draws as mean ± sd beside its true value,
# step size, divergences, and where the time went by nx_vulkan's telemetry
# (ExmcBench.breakdown/1).
Code.require_file("exmc_common.exs", __DIR__)
mode = ExmcBench.configure()

alias Exmc.{Builder, Dist}

n = String.to_integer(System.get_env("EXMC_N", "100000"))
warmup = String.to_integer(System.get_env("EXMC_WARMUP", "10"))
draws = String.to_integer(System.get_env("EXMC_DRAWS", "10"))
truth = [-0.5, 1.0, -2.0, 0.5]
names = ["b0", "b1", "b2", "b3"]

# The data, made on the host with a fixed key: columns x1, x2, x3, y.
data =
  Nx.with_default_backend(Nx.BinaryBackend, fn ->
    {x, key} = Nx.Random.normal(Nx.Random.key(1), shape: {n, 3}, type: :f64)
    {u, _} = Nx.Random.uniform(key, shape: {n}, type: :f64)
    [b0 | b] = truth
    p = Nx.sigmoid(Nx.add(b0, Nx.dot(x, Nx.tensor(b, type: :f64))))
    y = Nx.select(Nx.less(u, p), 1.0, 0.0) |> Nx.as_type(:f64)
    Nx.concatenate([x, Nx.new_axis(y, 1)], axis: 1)
  end)

t = fn v -> Nx.tensor(v, type: :f64) end

likelihood =
  Dist.Custom.new(
    fn _x, params ->
      obs = params.__obs_data
      x = Nx.slice_along_axis(obs, 0, 3, axis: 1)
      y = obs[[.., 3]]
      beta = Nx.stack([params.b1, params.b2, params.b3])
      eta = Nx.add(params.b0, Nx.dot(x, beta))
      Nx.sum(Dist.Bernoulli.logpdf(y, %{p: Nx.sigmoid(eta)}))
    end,
    support: :real
  )

ir =
  Enum.reduce(names, Builder.data(Builder.new_ir(), data), fn name, ir ->
    Builder.rv(ir, name, Dist.Normal, %{mu: t.(0.0), sigma: t.(2.5)})
  end)
  |> Dist.Custom.rv("lik", likelihood, Map.new(names, &{String.to_atom(&1), &1}) |> Map.put(:__obs_data, "__obs_data"))
  |> Builder.obs("lik_obs", "lik", t.(0.0))

IO.puts(
  "mode=#{mode} n=#{n} warmup=#{warmup} draws=#{draws} compiler=#{inspect(Exmc.JIT.detect_compiler())} " <>
    "backend=#{inspect(Nx.default_backend())} lazy_host_size=#{inspect(Application.get_env(:nx_vulkan, :lazy_host_size))} " <>
    "detect_meta=#{inspect(Exmc.NUTS.ChainShaderCodegen.detect_meta(Exmc.Rewrite.apply(ir)))}"
)

ExmcBench.attach_telemetry()

{us, cpu_s, {trace, stats}} =
  ExmcBench.timed(fn -> Exmc.NUTS.Sampler.sample(ir, Map.new(Enum.zip(names, truth)), num_warmup: warmup, num_samples: draws, seed: 42) end)

coefs =
  Enum.zip(names, truth)
  |> Enum.map_join(" ", fn {name, v} ->
    {m, s} = ExmcBench.mean_sd(trace[name])
    :io_lib.format("~s=~.3f+-~.3f(~.1f)", [name, m, s, v])
  end)

IO.puts(
  :io_lib.format("RESULT model=large_data mode=~s n=~p time_s=~.2f cpu_s=~.2f ~s step_size=~.4f divergences=~p type=~s ~s",
    [mode, n, us / 1.0e6, cpu_s, coefs, stats.step_size * 1.0, stats.divergences,
     inspect(Nx.type(trace["b0"])), ExmcBench.breakdown(us)])
)
