# Eager (per-operation) Nx on Nx.Vulkan.Backend, per-op and lazy, against Nx.BinaryBackend:
#
#   1. nuts - a stand-in for eXMC's per-op `:vulkan` path: the two-normal model
#      a ~ N(2, 3), b ~ N(-1, 0.5) sampled by NUTS (Hoffman & Gelman's algorithm 3: slice
#      variable, recursive tree doubling, dual-averaging step size), 100 warm-up and 100
#      draws, seed 42, in f64. Its leapfrog step (value_and_grad of the log density,
#      momentum and position updates, the joint log density) runs through
#      `Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator)` over the default backend, as
#      `Exmc.JIT.jit/2` does; the tree building reads the joint log density and the U-turn
#      dot products on the host (`Nx.to_number/1`), as a NUTS written in Elixir must. eXMC
#      itself is not a dependency of this project: this is a faithful stand-in, not eXMC.
#   2. hmc - an eager leapfrog loop in plain Elixir (Nx calls outside defn): HMC on the
#      same model, 10 leapfrog steps per transition, 200 transitions, a Metropolis test
#      on the host per transition.
#
# Each runs on Nx.BinaryBackend (binary), Nx.Vulkan.Backend per-op (vulkan_per_op,
# `lazy: false`), lazy (vulkan_lazy, `lazy: true`: small operations on host values run on
# the host) and lazy with every operation on the device (vulkan_lazy_device,
# `lazy_host_size: 0`), twice, interleaved (the first run compiles, the second is warm); momenta and
# uniforms come from `:rand` (seeded) on the host, so all backends take the same path.
#
# Each run's CPU time counts the schedulers' busy waiting unless the VM is told not to
# (ELIXIR_ERL_OPTIONS="+sbwt none +sbwtdcpu none +sbwtdio none").
#
#   cd elixir && NX_PATH=... mix run ../bench/eager_bench.exs [--only nuts|hmc] \
#     [--backends binary,vulkan_lazy,...] [--warmup 100] [--draws 100] \
#     [--transitions 200] [--runs 2] [--json FILE]
defmodule EagerBench do
  @mu Nx.tensor([2.0, -1.0], type: :f64)
  @sigma Nx.tensor([3.0, 0.5], type: :f64)

  ## The model: each random variable's normal log density on its own scalar, as a
  ## model compiled per variable evaluates it.

  def logp(q, mu, sigma) do
    [0, 1]
    |> Enum.map(fn i ->
      x = Nx.squeeze(Nx.slice(q, [i], [1]))
      m = Nx.squeeze(Nx.slice(mu, [i], [1]))
      s = Nx.squeeze(Nx.slice(sigma, [i], [1]))
      z = Nx.divide(Nx.subtract(x, m), s)

      Nx.multiply(-0.5, Nx.multiply(z, z))
      |> Nx.subtract(Nx.log(s))
      |> Nx.subtract(0.5 * :math.log(2 * :math.pi()))
    end)
    |> Enum.reduce(&Nx.add/2)
  end

  # One leapfrog step from (q, p, grad at q): (q', p', grad at q', joint log density).
  def leapfrog_fun do
    fn q, p, grad, eps, mu, sigma ->
      half = Nx.divide(eps, 2)
      p_half = Nx.add(p, Nx.multiply(half, grad))
      q_new = Nx.add(q, Nx.multiply(eps, p_half))
      {logp, grad_new} = Nx.Defn.value_and_grad(q_new, &logp(&1, mu, sigma))
      p_new = Nx.add(p_half, Nx.multiply(half, grad_new))
      joint = Nx.subtract(logp, Nx.multiply(0.5, Nx.sum(Nx.multiply(p_new, p_new))))
      {q_new, p_new, grad_new, joint}
    end
  end

  def initial_grad_fun do
    fn q, mu, sigma -> Nx.Defn.value_and_grad(q, &logp(&1, mu, sigma)) end
  end

  ## NUTS (Hoffman & Gelman 2014, algorithm 6 without the multinomial refinements)

  defmodule State do
    defstruct [:leapfrog, :mu, :sigma, leapfrogs: 0]
  end

  def nuts(warmup, draws, seed) do
    :rand.seed(:exsss, {seed, seed, seed})
    evaluator = [compiler: Nx.Defn.Evaluator]
    leapfrog = Nx.Defn.jit(leapfrog_fun(), evaluator)
    grad0 = Nx.Defn.jit(initial_grad_fun(), evaluator)
    mu = Nx.backend_copy(@mu)
    sigma = Nx.backend_copy(@sigma)
    st = %State{leapfrog: leapfrog, mu: mu, sigma: sigma}

    q = Nx.tensor([0.5, 0.5], type: :f64)
    {logp, grad} = grad0.(q, mu, sigma)
    logp = Nx.to_number(logp)

    eps = 0.5
    da = %{mu: :math.log(10 * eps), hbar: 0.0, log_eps_bar: 0.0, t0: 10, gamma: 0.05, kappa: 0.75, delta: 0.8}

    {draws_acc, _q, _logp, _grad, eps, _da, st, divergences} =
      Enum.reduce(1..(warmup + draws), {[], q, logp, grad, eps, da, st, 0}, fn m,
                                                                               {acc, q, logp, grad, eps, da,
                                                                                st, div} ->
        p = Nx.tensor([:rand.normal(), :rand.normal()], type: :f64)
        joint0 = logp - 0.5 * Nx.to_number(Nx.sum(Nx.multiply(p, p)))
        log_u = joint0 + :math.log(:rand.uniform())

        tree = %{qm: q, pm: p, gm: grad, qp: q, pp: p, gp: grad, q: q, logp: logp, grad: grad, n: 1, s: true}

        {tree, alpha, n_alpha, st, diverged} = doubling(tree, log_u, joint0, eps, 0, st, 0.0, 0, false)

        {eps, da} =
          if m <= warmup do
            adapt(da, m, alpha / max(n_alpha, 1), m == warmup)
          else
            {eps, da}
          end

        acc = if m > warmup, do: [Nx.to_flat_list(tree.q) | acc], else: acc
        {acc, tree.q, tree.logp, tree.grad, eps, da, st, div + if(diverged, do: 1, else: 0)}
      end)

    {Enum.reverse(draws_acc), eps, st.leapfrogs, divergences}
  end

  defp doubling(tree, _log_u, _joint0, _eps, j, st, alpha, n_alpha, div) when j >= 10 or not tree.s,
    do: {tree, alpha, n_alpha, st, div}

  defp doubling(tree, log_u, joint0, eps, j, st, alpha, n_alpha, div) do
    v = if :rand.uniform() < 0.5, do: -1, else: 1

    {sub, st} =
      if v == -1 do
        build(tree.qm, tree.pm, tree.gm, log_u, v, j, eps, joint0, st)
      else
        build(tree.qp, tree.pp, tree.gp, log_u, v, j, eps, joint0, st)
      end

    tree =
      if v == -1,
        do: %{tree | qm: sub.qm, pm: sub.pm, gm: sub.gm},
        else: %{tree | qp: sub.qp, pp: sub.pp, gp: sub.gp}

    tree =
      if sub.s and :rand.uniform() < min(1.0, sub.n / tree.n),
        do: %{tree | q: sub.q, logp: sub.logp, grad: sub.grad},
        else: tree

    s = sub.s and no_uturn?(tree.qm, tree.qp, tree.pm, tree.pp)
    tree = %{tree | n: tree.n + sub.n, s: s}
    doubling(tree, log_u, joint0, eps, j + 1, st, alpha + sub.alpha, n_alpha + sub.n_alpha, div or sub.div)
  end

  defp build(q, p, grad, log_u, v, 0, eps, joint0, st) do
    {q1, p1, g1, joint} = st.leapfrog.(q, p, grad, Nx.tensor(v * eps, type: :f64), st.mu, st.sigma)
    joint = Nx.to_number(joint)
    joint = if is_number(joint), do: joint, else: -1.0e300
    n = if log_u <= joint, do: 1, else: 0
    s = log_u < 1000 + joint
    logp = joint + 0.5 * dot_number(p1, p1)
    alpha = min(1.0, :math.exp(min(joint - joint0, 0.0)))
    st = %{st | leapfrogs: st.leapfrogs + 1}

    {%{
       qm: q1,
       pm: p1,
       gm: g1,
       qp: q1,
       pp: p1,
       gp: g1,
       q: q1,
       logp: logp,
       grad: g1,
       n: n,
       s: s,
       alpha: alpha,
       n_alpha: 1,
       div: not s
     }, st}
  end

  defp build(q, p, grad, log_u, v, j, eps, joint0, st) do
    {a, st} = build(q, p, grad, log_u, v, j - 1, eps, joint0, st)

    if a.s do
      {b, st} =
        if v == -1,
          do: build(a.qm, a.pm, a.gm, log_u, v, j - 1, eps, joint0, st),
          else: build(a.qp, a.pp, a.gp, log_u, v, j - 1, eps, joint0, st)

      a = if v == -1, do: %{a | qm: b.qm, pm: b.pm, gm: b.gm}, else: %{a | qp: b.qp, pp: b.pp, gp: b.gp}

      a =
        if b.n > 0 and :rand.uniform() < b.n / max(a.n + b.n, 1),
          do: %{a | q: b.q, logp: b.logp, grad: b.grad},
          else: a

      s = b.s and no_uturn?(a.qm, a.qp, a.pm, a.pp)

      {%{
         a
         | n: a.n + b.n,
           s: s,
           alpha: a.alpha + b.alpha,
           n_alpha: a.n_alpha + b.n_alpha,
           div: a.div or b.div
       }, st}
    else
      {a, st}
    end
  end

  defp no_uturn?(qm, qp, pm, pp) do
    dq = Nx.subtract(qp, qm)
    dot_number(dq, pm) >= 0 and dot_number(dq, pp) >= 0
  end

  defp dot_number(a, b), do: Nx.to_number(Nx.sum(Nx.multiply(a, b)))

  defp adapt(da, m, accept, last?) do
    eta = 1 / (m + da.t0)
    hbar = (1 - eta) * da.hbar + eta * (da.delta - accept)
    log_eps = da.mu - :math.sqrt(m) / da.gamma * hbar
    w = :math.pow(m, -da.kappa)
    log_eps_bar = w * log_eps + (1 - w) * da.log_eps_bar
    da = %{da | hbar: hbar, log_eps_bar: log_eps_bar}
    if last?, do: {:math.exp(log_eps_bar), da}, else: {:math.exp(log_eps), da}
  end

  ## HMC with an eager leapfrog loop

  def hmc(transitions, steps, eps, seed) do
    :rand.seed(:exsss, {seed, seed, seed})
    mu = Nx.backend_copy(@mu)
    sigma2 = Nx.backend_copy(Nx.multiply(@sigma, @sigma))
    grad = fn q -> Nx.negate(Nx.divide(Nx.subtract(q, mu), sigma2)) end

    potential = fn q ->
      d = Nx.subtract(q, mu)
      Nx.sum(Nx.divide(Nx.multiply(d, d), Nx.multiply(2, sigma2)))
    end

    q = Nx.tensor([0.5, 0.5], type: :f64)

    {q, accepted, samples} =
      Enum.reduce(1..transitions, {q, 0, []}, fn _, {q, accepted, samples} ->
        p0 = Nx.tensor([:rand.normal(), :rand.normal()], type: :f64)

        {q1, p1} =
          Enum.reduce(1..steps, {q, p0}, fn _, {q, p} ->
            p = Nx.add(p, Nx.multiply(eps / 2, grad.(q)))
            q = Nx.add(q, Nx.multiply(eps, p))
            p = Nx.add(p, Nx.multiply(eps / 2, grad.(q)))
            {q, p}
          end)

        h0 = Nx.add(potential.(q), Nx.multiply(0.5, Nx.sum(Nx.multiply(p0, p0))))
        h1 = Nx.add(potential.(q1), Nx.multiply(0.5, Nx.sum(Nx.multiply(p1, p1))))
        log_accept = Nx.to_number(Nx.subtract(h0, h1))

        if :math.log(:rand.uniform()) < log_accept,
          do: {q1, accepted + 1, [Nx.to_flat_list(q1) | samples]},
          else: {q, accepted, [Nx.to_flat_list(q) | samples]}
      end)

    _ = q
    {Enum.reverse(samples), accepted}
  end

  ## Driver

  def stats(samples) do
    n = length(samples)

    for i <- [0, 1] do
      xs = Enum.map(samples, &Enum.at(&1, i))
      mean = Enum.sum(xs) / n
      sd = :math.sqrt(Enum.sum(Enum.map(xs, &((&1 - mean) * (&1 - mean)))) / max(n - 1, 1))
      {mean, sd}
    end
  end

  # {name, default backend, :nx_vulkan application environment while it runs}
  def backends do
    [
      {"binary", Nx.BinaryBackend, []},
      {"vulkan_per_op", {Nx.Vulkan.Backend, lazy: false}, []},
      {"vulkan_lazy", {Nx.Vulkan.Backend, lazy: true}, []},
      {"vulkan_lazy_device", {Nx.Vulkan.Backend, lazy: true}, lazy_host_size: 0}
    ]
  end

  def with_env(env, fun) do
    previous = Enum.map(env, fn {key, _} -> {key, Application.fetch_env(:nx_vulkan, key)} end)
    Enum.each(env, fn {key, value} -> Application.put_env(:nx_vulkan, key, value) end)

    try do
      fun.()
    after
      Enum.each(previous, fn
        {key, {:ok, value}} -> Application.put_env(:nx_vulkan, key, value)
        {key, :error} -> Application.delete_env(:nx_vulkan, key)
      end)
    end
  end

  def measure(fun) do
    flushes = :counters.new(2, [])
    id = make_ref()

    :telemetry.attach_many(
      id,
      [[:nx_vulkan, :lazy, :flush], [:nx_vulkan, :run]],
      fn
        [:nx_vulkan, :lazy, :flush], _, _, _ -> :counters.add(flushes, 1, 1)
        [:nx_vulkan, :run], _, _, _ -> :counters.add(flushes, 2, 1)
      end,
      nil
    )

    # CPU time of the whole OS process (the BEAM and lavapipe's threads): on a machine
    # shared with other work it varies less than the wall time.
    {cpu_before, _} = :erlang.statistics(:runtime)
    {us, result} = :timer.tc(fun)
    {cpu_after, _} = :erlang.statistics(:runtime)
    :telemetry.detach(id)
    {us / 1.0e6, (cpu_after - cpu_before) / 1.0e3, result, :counters.get(flushes, 1), :counters.get(flushes, 2)}
  end
end

{opts, _} =
  OptionParser.parse!(System.argv(),
    strict: [
      only: :string,
      warmup: :integer,
      draws: :integer,
      transitions: :integer,
      runs: :integer,
      backends: :string,
      json: :string
    ]
  )

warmup = opts[:warmup] || 100
draws = opts[:draws] || 100
transitions = opts[:transitions] || 200
runs = opts[:runs] || 2
only = opts[:only]
backend_names = if opts[:backends], do: String.split(opts[:backends], ","), else: nil
device = Nx.Vulkan.devices() |> hd()
device_name = device[:name] || inspect(device)

IO.puts(
  "device: #{device_name}; Nx #{Application.spec(:nx, :vsn)}; #{DateTime.utc_now() |> DateTime.to_iso8601()}"
)

workloads =
  [
    {"nuts", "NUTS two-normal model via Nx.Defn.Evaluator, #{warmup}+#{draws} iterations",
     fn -> EagerBench.nuts(warmup, draws, 42) end},
    {"hmc", "eager leapfrog loop (HMC, #{transitions} transitions x 10 steps)",
     fn -> EagerBench.hmc(transitions, 10, 0.3, 42) end}
  ]
  |> Enum.filter(fn {name, _, _} -> only in [nil, name] end)

results =
  # Runs interleaved across backends, so that a slower spell of the machine falls on all.
  for {name, title, fun} <- workloads,
      run <- 1..runs,
      {backend_name, backend, env} <- EagerBench.backends(),
      backend_names in [nil] or backend_name in backend_names do
    Nx.default_backend(backend)
    {seconds, cpu_seconds, result, flushes, submits} = EagerBench.with_env(env, fn -> EagerBench.measure(fun) end)

    {summary, extra} =
      case {name, result} do
        {"nuts", {samples, eps, leapfrogs, divergences}} ->
          [{ma, sa}, {mb, sb}] = EagerBench.stats(samples)

          {"a #{Float.round(ma, 3)} ± #{Float.round(sa, 3)}, b #{Float.round(mb, 3)} ± #{Float.round(sb, 3)}, " <>
             "step #{Float.round(eps, 4)}, #{leapfrogs} leapfrogs, #{divergences} divergences",
           %{mean: [ma, mb], sd: [sa, sb], step_size: eps, leapfrogs: leapfrogs, divergences: divergences}}

        {"hmc", {samples, accepted}} ->
          [{ma, sa}, {mb, sb}] = EagerBench.stats(samples)

          {"a #{Float.round(ma, 3)} ± #{Float.round(sa, 3)}, b #{Float.round(mb, 3)} ± #{Float.round(sb, 3)}, " <>
             "#{accepted} accepted", %{mean: [ma, mb], sd: [sa, sb], accepted: accepted}}
      end

    IO.puts(
      "#{name} #{backend_name} run #{run}: #{Float.round(seconds, 3)} s (CPU #{Float.round(cpu_seconds, 3)} s), " <>
        "#{submits} device runs, " <>
        "#{flushes} lazy flushes; #{summary}"
    )

    %{
      workload: name,
      title: title,
      backend: backend_name,
      run: run,
      seconds: seconds,
      cpu_seconds: cpu_seconds,
      device_runs: submits,
      flushes: flushes,
      result: extra
    }
  end

if path = opts[:json] do
  json =
    Nx.Vulkan.JSON.encode(%{
      device: device_name,
      date: Date.utc_today() |> Date.to_iso8601(),
      results: results
    })

  File.write!(path, json)
  IO.puts("wrote #{path}")
end
