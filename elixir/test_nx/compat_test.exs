defmodule Nx.Vulkan.CompatTest do
  # The names of the earlier nx_vulkan that eXMC selects it by (lib/exmc/jit.ex,
  # test/test_helper.exs): Nx.Vulkan.Compiler, Nx.Vulkan.VulkanoBackend, has_f64?/0.
  use Nx.Vulkan.Case, async: false

  import Nx.Defn

  defn logistic_loss(w, x, y) do
    p = Nx.sigmoid(Nx.dot(x, w))
    -Nx.mean(y * Nx.log(p) + (1 - y) * Nx.log(1 - p))
  end

  defn(loss_and_grad(w, x, y), do: value_and_grad(w, &logistic_loss(&1, x, y)))

  test "eXMC's detection of Nx.Vulkan succeeds" do
    assert Code.ensure_loaded?(Nx.Vulkan) and function_exported?(Nx.Vulkan, :__info__, 1)
    assert {:ok, _} = Application.ensure_all_started(:nx_vulkan)
  end

  test "Nx.Vulkan.Compiler is Nx.Vulkan" do
    Code.ensure_loaded!(Nx.Vulkan.Compiler)

    for {name, arity} <- Nx.Defn.Compiler.behaviour_info(:callbacks) do
      assert function_exported?(Nx.Vulkan.Compiler, name, arity), "#{name}/#{arity}"
    end

    assert Nx.Vulkan.Compiler.__to_backend__([]) == Nx.Vulkan.__to_backend__([])

    w = Nx.tensor([0.5, -0.25, 1.0], type: :f64)
    x = Nx.tensor([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0], [0.25, -2.0, 1.0], [2.0, 1.0, -1.5]], type: :f64)
    y = Nx.tensor([1.0, 0.0, 1.0, 0.0], type: :f64)
    expected = Nx.Defn.jit_apply(&loss_and_grad/3, [w, x, y], compiler: Nx.Defn.Evaluator)
    {loss, grad} = actual = Nx.Defn.jit_apply(&loss_and_grad/3, [w, x, y], compiler: Nx.Vulkan.Compiler)
    assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = loss
    assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = grad
    assert_close(expected, actual)
  end

  test "Nx.Vulkan.Compiler as the default defn compiler, as eXMC's test helper sets it" do
    previous = Nx.Defn.default_options(compiler: Nx.Vulkan.Compiler)

    try do
      x = Nx.tensor([[1.0, 2.0, 0.5]], type: :f64)
      result = logistic_loss(Nx.tensor([0.5, -0.25, 1.0], type: :f64), x, Nx.tensor([1.0], type: :f64))
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = result
      assert_in_delta Nx.to_number(result), -:math.log(1 / (1 + :math.exp(-0.5))), 1.0e-12
    after
      Nx.Defn.default_options(previous)
    end
  end

  test "Nx.Vulkan.VulkanoBackend creates Nx.Vulkan.Backend tensors" do
    previous = Nx.default_backend(Nx.Vulkan.VulkanoBackend)

    try do
      a = Nx.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]], type: :f64)
      b = Nx.iota({3}, type: :f64)
      c = Nx.broadcast(Nx.tensor(2.0, type: :f64), {2, 3})

      for t <- [a, b, c, Nx.eye(2), Nx.add(a, b), Nx.exp(a), Nx.sum(a, axes: [1]), Nx.dot(a, b), Nx.sort(b)] do
        assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = t
      end

      assert Nx.to_flat_list(Nx.add(a, b)) == [1.0, -1.0, 5.0, 0.5, 1.25, -2.0]
      assert Nx.to_flat_list(Nx.multiply(a, c)) == [2.0, -4.0, 6.0, 1.0, 0.5, -8.0]
      assert Nx.to_flat_list(Nx.sum(a, axes: [1])) == [2.0, -3.25]
      assert Nx.to_flat_list(Nx.dot(a, b)) == [4.0, -7.75]
      assert_close(Nx.exp(Nx.backend_copy(a, Nx.BinaryBackend)), Nx.exp(a))

      # the Evaluator over this default backend is eXMC's Exmc.JIT.jit path
      w = Nx.tensor([0.5, -0.25, 1.0], type: :f64)
      y = Nx.tensor([1.0, 0.0], type: :f64)
      {loss, grad} = Nx.Defn.jit_apply(&loss_and_grad/3, [w, a, y], compiler: Nx.Defn.Evaluator)
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = grad

      host = &Nx.backend_copy(&1, Nx.BinaryBackend)

      expected =
        Nx.with_default_backend(Nx.BinaryBackend, fn -> loss_and_grad(host.(w), host.(a), host.(y)) end)

      assert_close(expected, {loss, grad})
    after
      Nx.default_backend(previous)
    end
  end

  test "has_f64? is the default device's Float64 capability, or its emulation" do
    {:ok, info} = Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!())
    assert Nx.Vulkan.has_f64?() == (info.caps.float64 or info.caps.emulate_f64)
    # Emulated where the device has no Float64, unless emulation is off.
    assert Nx.Vulkan.has_f64?() or Application.get_env(:nx_vulkan, :emulate, "") == "none"
  end
end
