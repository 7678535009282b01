defmodule Nx.Vulkan.SamplerTest do
  # An HMC sampler written the way eXMC's is (f64 log-density, its gradient by
  # value_and_grad, a leapfrog in `while`, momentum from Nx.Random.normal, a Metropolis
  # test on Nx.Random.uniform), run two ways: the whole chain as one jitted function,
  # and one jitted transition per call driven from Elixir, as eXMC calls its step per
  # tree node. The draws must be the evaluator's, and on a target with a known
  # posterior their moments must be right.
  use Nx.Vulkan.Case, async: true

  # Chains of hundreds of transitions take minutes on a loaded two-core machine.
  @moduletag timeout: 300_000

  import Nx.Defn

  ## Targets: log densities of a flat f64 position vector

  # Eight schools, non-centred: q = [mu, log(tau), theta_tilde (8)], tau ~ HalfCauchy(5)
  # sampled in log space (its Jacobian is the `+ log_tau` term).
  defn eight_schools(q) do
    y = Nx.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], type: :f64)
    sigma = Nx.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], type: :f64)
    mu = q[0]
    log_tau = q[1]
    theta_tilde = q[2..9]
    tau = Nx.exp(log_tau)
    z = (y - (mu + tau * theta_tilde)) / sigma

    -0.5 * (mu / 5) ** 2 - Nx.log1p((tau / 5) ** 2) + log_tau - 0.5 * Nx.sum(theta_tilde ** 2) -
      0.5 * Nx.sum(z * z)
  end

  defn(standard_normal(q), do: -0.5 * Nx.sum(q * q))

  ## The sampler

  defn leapfrog(q, p, grad, eps, logp_fun, opts \\ []) do
    {q, p, logp, grad, _eps, _i} =
      while {q, p, _logp = Nx.tensor(0.0, type: :f64), grad, eps, i = 0}, i < opts[:steps] do
        p = p + eps / 2 * grad
        q = q + eps * p
        {logp, grad} = value_and_grad(q, logp_fun)
        {q, p + eps / 2 * grad, logp, grad, eps, i + 1}
      end

    {q, p, logp, grad}
  end

  # Momenta as eXMC draws them (`momentum: :normal`, Nx.Random.normal), or by Box-Muller
  # from Nx.Random.uniform (`:box_muller`). Nx.Random.normal is sqrt(2) erf_inv(u), and
  # Nx's own f64 erf_inv (Complex.erf_inv) is Giles' single-precision approximation,
  # 1e-7 from the true value, which the device computes to f64 accuracy: the
  # evaluator's momenta differ from the device's by up to ~1.2e-7 relative. Box-Muller
  # needs only log, sqrt and cos, which both compute to f64 accuracy.
  deftransformp momentum(key, q, opts) do
    case Keyword.get(opts, :momentum, :normal) do
      :normal -> Nx.Random.normal(key, shape: Nx.shape(q), type: :f64)
      :box_muller -> box_muller(key, q)
    end
  end

  defn box_muller(key, q) do
    {u, key} = Nx.Random.uniform(key, shape: {2, Nx.size(q)}, type: :f64)
    {Nx.sqrt(-2 * Nx.log(1 - u[0])) * Nx.cos(2 * Nx.Constants.pi({:f, 64}) * u[1]), key}
  end

  # One HMC transition: fresh momentum, a trajectory, accept or stay.
  defn transition({q, logp, grad, key}, eps, logp_fun, opts \\ []) do
    {p, key} = momentum(key, q, opts)
    {q1, p1, logp1, grad1} = leapfrog(q, p, grad, eps, logp_fun, opts)
    {u, key} = Nx.Random.uniform(key, type: :f64)
    log_ratio = logp1 - 0.5 * Nx.sum(p1 * p1) - (logp - 0.5 * Nx.sum(p * p))
    # a NaN ratio (a divergent trajectory) compares false: rejected
    accept = Nx.log(u) < log_ratio
    {{Nx.select(accept, q1, q), Nx.select(accept, logp1, logp), Nx.select(accept, grad1, grad), key}, accept}
  end

  defn initial_state(q, key, logp_fun) do
    {logp, grad} = value_and_grad(q, logp_fun)
    {q, logp, grad, key}
  end

  # The whole chain in one graph: nested loops, draws written by dynamic put_slice.
  defn chain(q0, key, eps, logp_fun, opts \\ []) do
    n = opts[:draws]
    draws = Nx.broadcast(Nx.tensor(0.0, type: :f64), {n, Nx.size(q0)})
    accepted = Nx.broadcast(Nx.tensor(0, type: :u8), {n})

    {_state, draws, accepted, _eps, _i} =
      while {state = initial_state(q0, key, logp_fun), draws, accepted, eps, i = 0}, i < n do
        {{q, _, _, _} = state, accept} = transition(state, eps, logp_fun, opts)
        draws = Nx.put_slice(draws, [i, 0], Nx.new_axis(q, 0))
        accepted = Nx.put_slice(accepted, [i], Nx.new_axis(accept, 0))
        {state, draws, accepted, eps, i + 1}
      end

    {draws, accepted}
  end

  defp run_chain(compiler, logp_fun, q0, key, eps, opts) do
    Nx.Defn.jit_apply(&chain(&1, &2, &3, logp_fun, opts), [q0, key, eps], compiler: compiler)
  end

  # eXMC's way: the state stays on the device between calls of a jitted transition,
  # each draw is read back.
  defp run_steps(compiler, logp_fun, q0, key, eps, opts) do
    init = Nx.Defn.jit(&initial_state(&1, &2, logp_fun), compiler: compiler)
    step = Nx.Defn.jit(&transition(&1, &2, logp_fun, opts), compiler: compiler)

    {draws, _state} =
      Enum.map_reduce(1..opts[:draws], init.(q0, key), fn _, state ->
        {{q, _, _, _} = state, accept} = step.(state, eps)
        {{host(q), host(accept)}, state}
      end)

    {qs, accepts} = Enum.unzip(draws)
    {Nx.stack(qs), Nx.stack(accepts)}
  end

  defp host(t), do: Nx.backend_copy(t, Nx.BinaryBackend)

  # Per draw, the largest difference relative to the draw's largest component.
  defp assert_same_draws({draws, accepted}, {expected, expected_accepted}, rtol) do
    draws = host(draws)
    assert Nx.to_flat_list(host(accepted)) == Nx.to_flat_list(expected_accepted)

    rel =
      Nx.subtract(draws, expected)
      |> Nx.abs()
      |> Nx.reduce_max(axes: [1])
      |> Nx.divide(Nx.reduce_max(Nx.abs(expected), axes: [1]))

    worst = Nx.to_number(Nx.reduce_max(rel))
    assert worst <= rtol, "largest relative difference of a draw: #{worst} (allowed #{rtol})"
  end

  defp eight_schools_setup do
    q0 = Nx.tensor([1.0, 0.5, 0.2, -0.1, 0.3, 0.0, -0.2, 0.1, 0.4, -0.3], type: :f64)
    {q0, Nx.Random.key(2024), Nx.tensor(0.25, type: :f64)}
  end

  # Device and evaluator draw from the same key, so they make the same accept decisions
  # (one that flipped would show as a difference of order one) and their draws differ
  # only by rounding, which the chaotic trajectories amplify. With Box-Muller momenta
  # every op is f64-accurate on both sides: 8e-16 at worst over these 200 draws, allowed
  # 1e-12. With Nx.Random.normal the evaluator's momenta carry Nx's ~1e-7 erf_inv error
  # (see momentum/3), amplified to 2.2e-6 at worst here, allowed 1e-5.
  @rtol %{box_muller: 1.0e-12, normal: 1.0e-5}

  for momentum <- [:normal, :box_muller] do
    test "eight schools, #{momentum} momenta: the whole chain in one graph draws what the evaluator draws" do
      opts = [steps: 8, draws: 200, momentum: unquote(momentum)]
      {q0, key, eps} = eight_schools_setup()
      expected = run_chain(Nx.Defn.Evaluator, &eight_schools/1, q0, key, eps, opts)
      {draws, accepted} = actual = run_chain(Nx.Vulkan, &eight_schools/1, q0, key, eps, opts)

      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}, type: {:f, 64}, shape: {200, 10}} = draws
      assert_same_draws(actual, expected, @rtol[unquote(momentum)])

      # the sampler moves: most proposals accepted, not all
      acceptance = Nx.to_number(Nx.mean(host(accepted)))
      assert acceptance > 0.5 and acceptance < 1.0
    end
  end

  test "eight schools: a jitted transition per call from Elixir, as eXMC steps" do
    opts = [steps: 8, draws: 50]
    {q0, key, eps} = eight_schools_setup()
    expected = run_steps(Nx.Defn.Evaluator, &eight_schools/1, q0, key, eps, opts)
    actual = run_steps(Nx.Vulkan, &eight_schools/1, q0, key, eps, opts)
    assert_same_draws(actual, expected, @rtol.normal)

    # the same chain as the one-graph run's, where the same kernels compute it
    assert_same_draws(actual, run_chain(Nx.Vulkan, &eight_schools/1, q0, key, eps, opts), 1.0e-12)
  end

  test "standard normal in d = 10: the draws are the evaluator's and have its moments" do
    # trajectory length 6 * 0.25 = 1.5 ~ pi/2, where the exact flow maps q to
    # q cos(1.5) + p sin(1.5): nearly independent draws, lag-1 autocorrelation ~ cos(1.5)
    opts = [steps: 6, draws: 400]
    q0 = Nx.broadcast(Nx.tensor(0.0, type: :f64), {10})
    key = Nx.Random.key(7)
    eps = Nx.tensor(0.25, type: :f64)

    {draws, accepted} = actual = run_chain(Nx.Vulkan, &standard_normal/1, q0, key, eps, opts)
    expected = run_chain(Nx.Defn.Evaluator, &standard_normal/1, q0, key, eps, opts)
    assert_same_draws(actual, expected, @rtol.normal)

    assert Nx.to_number(Nx.mean(host(accepted))) > 0.9
    x = host(draws)
    n = Nx.axis_size(x, 0)

    # lag-1 autocorrelation per coordinate, then the effective sample size it implies
    # for an AR(1)-like chain: n (1 - rho) / (1 + rho)
    centred = Nx.subtract(x, Nx.mean(x, axes: [0]))
    lag1 = Nx.sum(Nx.multiply(centred[0..(n - 2)], centred[1..(n - 1)]), axes: [0])
    rho = Nx.divide(lag1, Nx.sum(Nx.multiply(centred, centred), axes: [0]))
    rho_max = rho |> Nx.reduce_max() |> Nx.to_number()
    assert rho_max < 0.3, "lag-1 autocorrelation #{rho_max}: the chain mixes worse than expected"
    ess = n * (1 - max(rho_max, 0.0)) / (1 + max(rho_max, 0.0))

    # Each coordinate's mean has standard error 1/sqrt(ess) and its variance (true
    # value 1) sqrt(2/ess). Bounds at 4.5 standard errors: for the 20 statistics
    # together a false failure has probability < 20 * 7e-6.
    means = Nx.to_flat_list(Nx.mean(x, axes: [0]))
    variances = Nx.to_flat_list(Nx.variance(x, axes: [0]))

    for {m, k} <- Enum.with_index(means) do
      assert abs(m) < 4.5 / :math.sqrt(ess), "coordinate #{k}: mean #{m}"
    end

    for {v, k} <- Enum.with_index(variances) do
      assert abs(v - 1) < 4.5 * :math.sqrt(2 / ess), "coordinate #{k}: variance #{v}"
    end
  end
end
