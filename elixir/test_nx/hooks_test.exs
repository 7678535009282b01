defmodule Nx.Vulkan.HooksTest do
  # Hook callbacks run on the host after the graph, with the values the Evaluator gives
  # them, in the Evaluator's order.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn
  import ExUnit.CaptureIO

  defn hooked(x) do
    y = hook(Nx.exp(x), :exp_value)
    z = hook(y * 2, fn v -> send(self(), {:doubled, v}) end)
    Nx.sum(z)
  end

  defn tokens(a, b) do
    token = create_token()
    {token, _sum} = hook_token(token, a + b, :first, &send(self(), {:first, &1}))
    {token, product} = hook_token(token, a * b, :second, &send(self(), {:second, &1}))
    attach_token(token, product - 1)
  end

  defn hook_in_loop(x) do
    {x, _} = while({x, i = 0}, i < 3, do: {hook(x * 2, &send(self(), {:step, &1})), i + 1})
    x
  end

  defn hook_in_branch(x) do
    if Nx.sum(x) > 0, do: hook(x + 1, &send(self(), {:branch, &1})), else: x
  end

  defn hook_in_grad(x) do
    value_and_grad(x, fn x -> x |> Nx.sin() |> hook(&send(self(), {:sin, &1})) |> Nx.sum() end)
  end

  defp collect(tags) do
    for tag <- tags do
      assert_received {^tag, value}
      value
    end
  end

  defp run_both(fun, args, tags, opts \\ []) do
    expected = Nx.Defn.jit_apply(fun, args, [compiler: Nx.Defn.Evaluator] ++ opts)
    expected_values = collect(tags)
    actual = Nx.Defn.jit_apply(fun, args, [compiler: Nx.Vulkan] ++ opts)
    actual_values = collect(tags)
    refute_received _
    assert_close(expected, actual)
    assert_close(List.to_tuple(expected_values), List.to_tuple(actual_values))
  end

  test "fn and named hooks receive the values the Evaluator gives them" do
    x = Nx.tensor([0.5, -1.0, 2.0])
    run_both(&hooked/1, [x], [:doubled])
    run_both(&hooked/1, [x], [:exp, :doubled], hooks: %{exp_value: &send(self(), {:exp, &1})})
  end

  test "token hooks run oldest first, with their own values" do
    a = Nx.tensor([1.0, 2.0])
    b = Nx.tensor([3.0, -4.0])
    run_both(&tokens/2, [a, b], [:first, :second])
    Nx.Defn.jit_apply(&tokens/2, [a, b], compiler: Nx.Vulkan)
    assert {:messages, [{:first, _}, {:second, _}]} = Process.info(self(), :messages)
  end

  test "the :hooks option overrides a hook's callback; hooks without callbacks do not run" do
    a = Nx.tensor([1.0, 2.0])
    b = Nx.tensor([3.0, 4.0])
    run_both(&tokens/2, [a, b], [:override, :second], hooks: %{first: &send(self(), {:override, &1})})
    Nx.Defn.jit_apply(&hooked/1, [a], compiler: Nx.Vulkan, hooks: %{})
    assert_received {:doubled, _}
    refute_received {:exp, _}
  end

  test "print_value prints the value" do
    out = capture_io(fn -> Nx.Defn.jit_apply(&Nx.Defn.Kernel.print_value(Nx.add(&1, 1)), [Nx.tensor([1.0, 2.0])], compiler: Nx.Vulkan) end)
    assert out =~ "[2.0, 3.0]"
  end

  test "a hook inside a gradient sees the forward value" do
    run_both(&hook_in_grad/1, [Nx.tensor([0.3, 1.2])], [:sin])
  end

  test "hooks inside while bodies and cond branches are clear errors" do
    assert_raise ArgumentError, ~r/only outside while loops and cond branches, and this while/, fn ->
      Nx.Defn.jit_apply(&hook_in_loop/1, [Nx.tensor([1.0])], compiler: Nx.Vulkan)
    end

    assert_raise ArgumentError, ~r/this cond has one inside/, fn ->
      Nx.Defn.jit_apply(&hook_in_branch/1, [Nx.tensor([1.0])], compiler: Nx.Vulkan)
    end
  end
end
