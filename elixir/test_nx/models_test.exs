defmodule Nx.Vulkan.ModelsTest do
  # Whole programs: gradients of composite functions, an MLP training step and an
  # eight-schools log density with its gradient, each against Nx.Defn.Evaluator.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  defn composite(x, w) do
    h = Nx.tanh(Nx.dot(x, w)) * Nx.exp(-x[[.., 0..1]])
    Nx.sum(h / (1 + h * h)) + Nx.logsumexp(x) - Nx.mean(Nx.sigmoid(w))
  end

  defn composite_grad(x, w), do: value_and_grad({x, w}, fn {x, w} -> composite(x, w) end)

  test "value and gradient of a composite function (f32)" do
    x = Nx.iota({3, 4}, type: :f32) |> Nx.divide(5) |> Nx.subtract(1)
    w = Nx.iota({4, 2}, type: :f32) |> Nx.multiply(0.3) |> Nx.cos()
    assert_matches_evaluator(&composite_grad/2, [x, w], rtol: 1.0e-4, atol: 1.0e-5)
  end

  defn softmax_grad(x), do: grad(x, fn x -> x |> Nx.exp() |> then(&(&1 / Nx.sum(&1))) |> Nx.pow(2) |> Nx.sum() end)

  test "gradient through broadcasts and reductions (f64)" do
    x = Nx.tensor([[0.1, -0.4, 2.0], [1.0, 0.0, -3.0]], type: :f64)
    assert_matches_evaluator(&softmax_grad/1, [x])
  end

  ## MLP

  defn predict({w1, b1, w2, b2}, x) do
    x
    |> Nx.dot(w1)
    |> Nx.add(b1)
    |> Nx.max(0)
    |> Nx.dot(w2)
    |> Nx.add(b2)
    |> then(fn logits -> logits - Nx.reduce_max(logits, axes: [1], keep_axes: true) end)
    |> then(fn z -> z - Nx.log(Nx.sum(Nx.exp(z), axes: [1], keep_axes: true)) end)
  end

  defn loss(params, x, labels), do: -Nx.mean(Nx.sum(predict(params, x) * labels, axes: [1]))

  defn train_step(params, x, labels) do
    {loss, grads} = value_and_grad(params, &loss(&1, x, labels))

    params =
      params
      |> Tuple.to_list()
      |> Enum.zip(Tuple.to_list(grads))
      |> Enum.map(fn {p, g} -> p - 0.1 * g end)
      |> List.to_tuple()

    {params, loss}
  end

  defp mlp_data do
    key = Nx.Random.key(42)
    {w1, key} = Nx.Random.normal(key, 0.0, 0.5, shape: {8, 16}, type: :f32)
    {w2, key} = Nx.Random.normal(key, 0.0, 0.5, shape: {16, 3}, type: :f32)
    {x, _} = Nx.Random.uniform(key, -1.0, 1.0, shape: {32, 8}, type: :f32)
    labels = Nx.equal(Nx.new_axis(Nx.remainder(Nx.iota({32}), 3), 1), Nx.iota({1, 3})) |> Nx.as_type(:f32)
    params = {w1, Nx.broadcast(0.0, {16}), w2, Nx.broadcast(0.0, {3})}
    {params, x, labels}
  end

  test "an MLP training step matches the evaluator and the loss goes down" do
    {params, x, labels} = mlp_data()
    assert_matches_evaluator(&train_step/3, [params, x, labels], rtol: 1.0e-4, atol: 1.0e-5)

    step = Nx.Vulkan.jit(&train_step/3)

    {_, losses} =
      Enum.reduce(1..10, {params, []}, fn _, {params, losses} ->
        {params, loss} = step.(params, x, labels)
        {params, [Nx.to_number(loss) | losses]}
      end)

    [last | _] = losses
    assert last < List.last(losses)
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
end
