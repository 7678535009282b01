defmodule Nx.Vulkan.ModelsTest do
  # Whole programs: gradients of composite functions, an MLP training step and an
  # eight-schools log density with its gradient, each against Nx.Defn.Evaluator.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  defn composite(x, w) do
    h = Nx.tanh(Nx.dot(x, w)) * Nx.exp(-x[[.., 0..1]])
    Nx.sum(h / (1 + h * h)) + Nx.logsumexp(x) - Nx.mean(Nx.sigmoid(w))
  end

  defn(composite_grad(x, w), do: value_and_grad({x, w}, fn {x, w} -> composite(x, w) end))

  test "value and gradient of a composite function (f32)" do
    x = Nx.iota({3, 4}, type: :f32) |> Nx.divide(5) |> Nx.subtract(1)
    w = Nx.iota({4, 2}, type: :f32) |> Nx.multiply(0.3) |> Nx.cos()
    assert_matches_evaluator(&composite_grad/2, [x, w], rtol: 1.0e-4, atol: 1.0e-5)
  end

  defn(softmax_grad(x),
    do: grad(x, fn x -> x |> Nx.exp() |> then(&(&1 / Nx.sum(&1))) |> Nx.pow(2) |> Nx.sum() end)
  )

  test "gradient through broadcasts and reductions (f64)" do
    x = Nx.tensor([[0.1, -0.4, 2.0], [1.0, 0.0, -3.0]], type: :f64)
    assert_matches_evaluator(&softmax_grad/1, [x])
  end

  defn nested_grads(x) do
    # grad of a function with a stop_grad, a custom_grad (Nx.logsumexp) and a reduction
    {v, g} = value_and_grad(x, fn x -> Nx.sum(x * stop_grad(x)) + Nx.sum(Nx.sqrt(x * x + 1)) end)
    {v, g, grad(x, &Nx.sum(Nx.multiply(Nx.dot(&1, Nx.transpose(&1)), 0.5)))}
  end

  test "gradients with stop_grad, dot and sqrt (f32 and f64)" do
    for type <- [:f32, :f64] do
      x = Nx.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], type: type)
      assert_matches_evaluator(&nested_grads/1, [x], rtol: 1.0e-5, atol: 1.0e-6)
    end
  end

  ## MLP: dense -> tanh -> dense -> MSE, trained with SGD

  defn mlp_predict({w1, b1, w2, b2}, x) do
    x |> Nx.dot(w1) |> Nx.add(b1) |> Nx.tanh() |> Nx.dot(w2) |> Nx.add(b2)
  end

  defn mlp_loss(params, x, y) do
    d = mlp_predict(params, x) - y
    Nx.mean(d * d)
  end

  defn train_step({w1, b1, w2, b2} = params, x, y) do
    {loss, {g1, gb1, g2, gb2}} = value_and_grad(params, &mlp_loss(&1, x, y))
    lr = 0.1
    {{w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2}, loss}
  end

  defp mlp_data do
    key = Nx.Random.key(42)
    {w1, key} = Nx.Random.normal(key, 0.0, 0.5, shape: {4, 8}, type: :f32)
    {w2, key} = Nx.Random.normal(key, 0.0, 0.5, shape: {8, 2}, type: :f32)
    {x, _} = Nx.Random.uniform(key, -1.0, 1.0, shape: {16, 4}, type: :f32)
    y = Nx.stack([Nx.sin(Nx.sum(x, axes: [1])), Nx.multiply(x[[.., 0]], x[[.., 1]])], axis: 1)
    params = {w1, Nx.broadcast(0.0, {8}), w2, Nx.broadcast(0.0, {2})}
    {params, x, y}
  end

  test "an MLP trained for 100 SGD steps matches the evaluator's loss at every step" do
    {params, x, y} = mlp_data()
    assert_matches_evaluator(&train_step/3, [params, x, y], rtol: 1.0e-4, atol: 1.0e-6)

    device_step = Nx.Vulkan.jit(&train_step/3)
    host_step = Nx.Defn.jit(&train_step/3, compiler: Nx.Defn.Evaluator)

    {_, _, losses} =
      Enum.reduce(1..100, {params, params, []}, fn _, {dp, hp, losses} ->
        {dp, dl} = device_step.(dp, x, y)
        {hp, hl} = host_step.(hp, x, y)
        {dp, hp, [{Nx.to_number(dl), Nx.to_number(hl)} | losses]}
      end)

    losses = Enum.reverse(losses)
    # f32 rounding differences compound over the steps: 1e-3 relative after 100
    for {{d, h}, step} <- Enum.with_index(losses, 1) do
      assert abs(d - h) <= 1.0e-3 * abs(h) + 1.0e-6, "step #{step}: device loss #{d}, evaluator #{h}"
    end

    {first, _} = hd(losses)
    {last, _} = List.last(losses)
    assert last < 0.5 * first
  end

  ## Linear regression by the normal equations

  defn normal_equations(x, y) do
    xb = Nx.concatenate([x, Nx.broadcast(1.0, {Nx.axis_size(x, 0), 1})], axis: 1)
    xt = Nx.transpose(xb)
    Nx.LinAlg.solve(Nx.dot(xt, xb), Nx.dot(xt, y))
  end

  test "linear regression by the normal equations recovers the coefficients" do
    {x, _} = Nx.Random.uniform(Nx.Random.key(7), -1.0, 1.0, shape: {12, 3}, type: :f32)
    coef = Nx.tensor([2.0, -1.0, 0.5])
    y = Nx.dot(x, coef) |> Nx.add(3.0)
    result = assert_matches_evaluator(&normal_equations/2, [x, y], rtol: 1.0e-3, atol: 1.0e-3)
    assert_close(Nx.tensor([2.0, -1.0, 0.5, 3.0]), result, rtol: 1.0e-3, atol: 1.0e-3)
  end

  ## Eight schools (non-centred), f64

  @y Nx.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], type: :f64)
  @sigma Nx.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], type: :f64)

  defn normal_lpdf(x, mu, sigma) do
    z = (x - mu) / sigma
    -0.5 * z * z - Nx.log(sigma) - 0.5 * Nx.log(2 * Nx.Constants.pi({:f, 64}))
  end

  defn log_density(mu, log_tau, theta_tilde, y, sigma) do
    tau = Nx.exp(log_tau)
    theta = mu + tau * theta_tilde

    normal_lpdf(mu, 0.0, 5.0) +
      (Nx.log(2.0 / (Nx.Constants.pi({:f, 64}) * 5.0)) - Nx.log1p((tau / 5.0) ** 2)) + log_tau +
      Nx.sum(normal_lpdf(theta_tilde, 0.0, 1.0)) + Nx.sum(normal_lpdf(y, theta, sigma))
  end

  defn log_density_and_grad(mu, log_tau, theta_tilde, y, sigma) do
    value_and_grad({mu, log_tau, theta_tilde}, fn {m, t, th} -> log_density(m, t, th, y, sigma) end)
  end

  test "eight schools f64 log density and gradient" do
    theta_tilde = Nx.tensor([0.3, -0.2, 1.1, 0.0, -1.5, 0.7, 0.05, -0.4], type: :f64)
    args = [Nx.tensor(4.2, type: :f64), Nx.tensor(1.1, type: :f64), theta_tilde, @y, @sigma]
    assert_matches_evaluator(&log_density_and_grad/5, args)
  end

  ## Leapfrog (HMC's integrator): 32 steps inside `while`, f64

  # the eight-schools-like Gaussian target: log p(q) = -sum(q^2 / (2 s^2))
  defn(potential_grad(q, s), do: grad(q, fn q -> Nx.sum(q * q / (2 * s * s)) end))

  defn leapfrog(q, p, s) do
    eps = 0.05
    p = p - eps / 2 * potential_grad(q, s)

    {q, p, _s, _i} =
      while {q, p, s, i = 0}, i < 32 do
        q = q + eps * p
        g = potential_grad(q, s)
        # the last half step is folded in after the loop
        p = p - eps * g
        {q, p, s, i + 1}
      end

    {q, p + eps / 2 * potential_grad(q, s)}
  end

  test "a 32-step leapfrog inside while (f64) matches the evaluator" do
    q = Nx.tensor([0.3, -0.2, 1.1, 0.0, -1.5, 0.7, 0.05, -0.4], type: :f64)
    p = Nx.tensor([1.0, 0.5, -0.5, 0.25, 0.0, -1.0, 0.75, 0.1], type: :f64)
    s = Nx.tensor([1.5, 1.0, 1.6, 1.1, 0.9, 1.1, 1.0, 1.8], type: :f64)
    assert_matches_evaluator(&leapfrog/3, [q, p, s])
  end
end
