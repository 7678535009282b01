defmodule Nx.Vulkan.CompilerTest do
  # The compiler's behaviour around the graph: caching, containers, outputs,
  # telemetry, concurrency and failures that must leave the VM running.
  use Nx.Vulkan.Case, async: false

  import Nx.Defn

  defn softplus(x), do: Nx.log(1 + Nx.exp(x))

  defn containers(%{a: a, b: {b, c}}), do: %{sum: a + b, pair: {c * 2, Nx.sum(a)}}

  setup do
    test_pid = self()
    id = make_ref()

    :telemetry.attach_many(
      id,
      [[:nx_vulkan, :compile], [:nx_vulkan, :run]],
      fn event, measurements, meta, _ -> send(test_pid, {event, measurements, meta}) end,
      nil
    )

    on_exit(fn -> :telemetry.detach(id) end)
  end

  test "a repeated call runs the cached executable without compiling again" do
    f = Nx.Vulkan.jit(&softplus/1)
    x = Nx.tensor([1.0, 2.0, 3.0])
    f.(x)
    assert_received {[:nx_vulkan, :compile], %{compile_time: _}, _}
    assert_received {[:nx_vulkan, :run], %{dispatches: _, total_time: _}, _}

    result = f.(Nx.tensor([4.0, 5.0, 6.0]))
    refute_received {[:nx_vulkan, :compile], _, _}
    assert_received {[:nx_vulkan, :run], _, _}
    assert_close(softplus(Nx.tensor([4.0, 5.0, 6.0])), result)

    # other shapes and types are new compilations
    f.(Nx.tensor([1.0, 2.0]))
    assert_received {[:nx_vulkan, :compile], _, _}
  end

  test "outputs are device tensors unless output: :host" do
    x = Nx.tensor([1.0, 2.0])
    assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = Nx.Vulkan.jit(&softplus/1).(x)
    assert %Nx.Tensor{data: %Nx.BinaryBackend{}} = Nx.Vulkan.jit(&softplus/1, output: :host).(x)
  end

  test "maps, tuples and device tensors as inputs and outputs" do
    a = Nx.tensor([1.0, 2.0])
    input = %{a: a, b: {Nx.tensor([3.0, 4.0]), Nx.tensor(5, type: :s32)}}
    result = assert_matches_evaluator(&containers/1, [input])
    assert %{sum: _, pair: {_, _}} = result

    # device tensors go back in without a host round trip
    assert_matches_evaluator(&softplus/1, [result.sum])
  end

  test "constant and input-only outputs" do
    assert_matches_evaluator(fn x -> {x, Nx.tensor(3.0), Nx.iota({3})} end, [Nx.tensor([1, 2])])
  end

  test "Nx.Defn.compile/3 with templates" do
    compiled = Nx.Vulkan.compile(&softplus/1, [Nx.template({2}, :f32)])
    assert_close(softplus(Nx.tensor([0.0, 1.0])), compiled.(Nx.tensor([0.0, 1.0])))
  end

  test "default options through Nx.Defn.default_options" do
    Nx.Defn.default_options(compiler: Nx.Vulkan)

    try do
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = softplus(Nx.tensor([1.0]))
    after
      Nx.Defn.default_options([])
    end
  end

  test "explain returns the JSON IR" do
    json = Nx.Vulkan.explain(&softplus/1, [Nx.template({3}, :f32)])
    assert json =~ ~s("op":"log")
    assert json =~ ~s("version":1)
  end

  test "100 processes running jitted functions at once" do
    f = Nx.Vulkan.jit(fn x, y -> Nx.sum(Nx.multiply(x, y), axes: [0]) end)

    1..100
    |> Task.async_stream(
      fn i ->
        n = rem(i, 4) + 1
        x = Nx.iota({n, 3}, type: :f32) |> Nx.add(i)
        y = Nx.iota({n, 3}, type: :f32)
        expected = Nx.sum(Nx.multiply(x, y), axes: [0])
        assert_close(expected, f.(x, y))
        :ok
      end,
      max_concurrency: 100,
      timeout: 300_000
    )
    |> Enum.each(fn result -> assert result == {:ok, :ok} end)
  end

  test "allocating past device memory raises and the VM stays up" do
    error =
      assert_raise Nx.Vulkan.Error, fn ->
        Nx.Vulkan.jit(fn -> Nx.broadcast(1.0, {1_048_576, 1_048_576}) end).()
      end

    assert error.kind in [:out_of_memory, :unsupported]
    assert_matches_evaluator(&softplus/1, [Nx.tensor([1.0])])
  end

  test "unsupported expressions raise before reaching the device" do
    assert_raise ArgumentError, ~r/:sort/, fn -> Nx.Vulkan.jit(&Nx.sort/1).(Nx.tensor([2.0, 1.0])) end
    assert_raise ArgumentError, ~r/stream/, fn -> Nx.Vulkan.__stream__(nil, nil, nil, [], nil, [], []) end
  end
end
