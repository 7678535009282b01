defmodule Nx.Vulkan.HooksTest do
  # Hook callbacks run on the host after the graph, with the values the Evaluator gives
  # them, in the Evaluator's order; hooks in loops and branches make the host drive the
  # function op by op.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn
  import ExUnit.CaptureIO
  alias Nx.Tensor, as: T

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

  defn hook_on_output(x), do: hook(x * 3, &send(self(), {:output, &1}))

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

  test "fn and named hooks receive the values the Evaluator gives them, on the host" do
    x = Nx.tensor([0.5, -1.0, 2.0])
    Nx.Defn.jit_apply(&hooked/1, [x], compiler: Nx.Vulkan)
    assert_received {:doubled, %T{data: %Nx.BinaryBackend{}}}
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

  test "a hooked value that is also the output stays usable on the device" do
    out = Nx.Defn.jit_apply(&hook_on_output/1, [Nx.tensor([1.0, 2.0])], compiler: Nx.Vulkan)
    assert_received {:output, hooked}
    assert Nx.to_flat_list(out) == [3.0, 6.0]
    assert Nx.to_flat_list(hooked) == [3.0, 6.0]
  end

  test "print_value prints the value" do
    out = capture_io(fn -> Nx.Defn.jit_apply(&Nx.Defn.Kernel.print_value(Nx.add(&1, 1)), [Nx.tensor([1.0, 2.0])], compiler: Nx.Vulkan) end)
    assert out =~ "[2.0, 3.0]"
  end

  test "a hook inside a gradient sees the forward value" do
    run_both(&hook_in_grad/1, [Nx.tensor([0.3, 1.2])], [:sin])
  end

  test "hooks inside while bodies and cond branches run per iteration and per branch taken" do
    x = Nx.tensor([1.0, -2.0])
    run_both(&hook_in_loop/1, [x], [:step, :step, :step])
    run_both(&hook_in_branch/1, [x], [])
    run_both(&hook_in_branch/1, [Nx.tensor([2.0, 0.5])], [:branch])
  end

  test "a host-driven function computes on the device and honours :output; hooks get host tensors" do
    x = Nx.tensor([1.0, -2.0])
    assert %Nx.Vulkan.Backend{} = Nx.Defn.jit_apply(&hook_in_loop/1, [x], compiler: Nx.Vulkan).data
    assert %Nx.BinaryBackend{} = Nx.Defn.jit_apply(&hook_in_loop/1, [x], compiler: Nx.Vulkan, output: :host).data
    for _ <- 1..6, do: assert_received({:step, %T{data: %Nx.BinaryBackend{}}})
  end
end
