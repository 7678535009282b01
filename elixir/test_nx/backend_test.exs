defmodule Nx.Vulkan.BackendTest do
  # Nx.Vulkan.Backend: transfers, inspection, and eager operations (one-node graphs
  # on the device, or the host for ops the IR lacks), against Nx.BinaryBackend.
  use Nx.Vulkan.Case, async: true

  @backend Nx.Vulkan.Backend

  defp dev(t), do: Nx.backend_transfer(t, @backend)

  test "from_binary, to_binary and backend transfers round-trip" do
    host = Nx.tensor([[1.5, -2.0], [:nan, :infinity]], type: :f64)
    t = Nx.tensor([[1.5, -2.0], [:nan, :infinity]], type: :f64, backend: @backend)
    assert %Nx.Tensor{data: %@backend{}} = t
    assert Nx.to_binary(t) == Nx.to_binary(host)
    assert Nx.to_binary(t, limit: 1) == binary_part(Nx.to_binary(host), 0, 8)

    copy = Nx.backend_copy(t, Nx.BinaryBackend)
    assert Nx.to_binary(copy) == Nx.to_binary(host)
    assert Nx.to_binary(Nx.backend_copy(t, @backend)) == Nx.to_binary(host)

    back = Nx.backend_transfer(t, Nx.BinaryBackend)
    assert %Nx.Tensor{data: %Nx.BinaryBackend{}} = back
    assert Nx.to_binary(back) == Nx.to_binary(host)
  end

  # Of a device buffer: more elements than lazy mode keeps on the host (NXV_LAZY=1), whose
  # host values have no buffer to release.
  test "deallocation, and a transfer to another backend, release the buffer" do
    t = dev(Nx.iota({100}))
    assert Nx.backend_deallocate(t) == :ok
    assert Nx.backend_deallocate(t) == :already_deallocated
    assert_raise Nx.Vulkan.Error, ~r/freed/, fn -> Nx.to_binary(t) end

    t = dev(Nx.iota({100}))
    assert Nx.to_binary(Nx.backend_transfer(t, Nx.BinaryBackend)) == Nx.to_binary(Nx.iota({100}))
    assert_raise Nx.Vulkan.Error, ~r/freed/, fn -> Nx.to_binary(t) end
  end

  test "inspect shows the values" do
    t = dev(Nx.tensor([1, 2, 3], type: :s32))
    assert inspect(t) =~ "[1, 2, 3]"
    big = dev(Nx.iota({1000}))
    assert inspect(big, limit: 5) =~ "..."
  end

  test "eager operations run on the device and match the binary backend" do
    # (pow: the binary backend raises for a negative base with a fractional exponent)
    a = Nx.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]])
    b = Nx.tensor([2.0, 3.0, -1.0])
    [da, db] = [dev(a), dev(b)]

    for {name, fun} <- [
          add: &Nx.add/2,
          multiply: &Nx.multiply/2,
          pow: &Nx.pow/2,
          greater: &Nx.greater/2,
          atan2: &Nx.atan2/2
        ] do
      result = fun.(da, db)
      assert %Nx.Tensor{data: %@backend{}} = result, "#{name}"
      assert_close(fun.(a, b), result)
    end

    for fun <- [
          &Nx.exp/1,
          &Nx.sum/1,
          &Nx.transpose/1,
          &Nx.argmax(&1, axis: 1),
          &Nx.cumulative_sum(&1, axis: 1)
        ] do
      assert_close(fun.(a), fun.(da))
    end

    assert_close(Nx.dot(a, b), Nx.dot(da, db))
    assert_close(Nx.concatenate([a, a]), Nx.concatenate([da, da]))
    assert_close(a[[.., 1..2]], da[[.., 1..2]])
    assert_close(Nx.put_slice(a, [0, 1], Nx.tensor([[9.0]])), Nx.put_slice(da, [0, 1], Nx.tensor([[9.0]])))
    assert_close(Nx.iota({2, 2}), Nx.iota({2, 2}, backend: @backend))
    assert_close(Nx.eye(3), Nx.eye(3, backend: @backend))

    img = Nx.iota({1, 2, 4, 4}, type: :f32)
    kernel = Nx.iota({3, 2, 2, 2}, type: :f32) |> Nx.sin()
    assert_close(Nx.conv(img, kernel, strides: 2), Nx.conv(dev(img), dev(kernel), strides: 2))

    idx = Nx.tensor([[1], [0], [1]])

    for fun <- [
          &Nx.take(&1, Nx.tensor([2, 0]), axis: 1),
          &Nx.take_along_axis(&1, Nx.tensor([[2, 2], [0, 1]]), axis: 1),
          &Nx.gather(&1, Nx.tensor([[1, 2], [0, 0]])),
          &Nx.indexed_add(&1, idx, Nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])),
          &Nx.indexed_put(&1, idx, Nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]))
        ] do
      result = fun.(da)
      assert %Nx.Tensor{data: %@backend{}} = result
      assert_close(fun.(a), result)
    end
  end

  test "ops the IR lacks run on the host and come back to the device" do
    a = Nx.tensor([3.0, 1.0, 2.0])
    sum = &Nx.reduce(&1, 0.0, fn x, acc -> Nx.add(x, acc) end)
    result = sum.(dev(a))
    assert %Nx.Tensor{data: %@backend{}} = result
    assert_close(sum.(a), result)
  end

  test "optional/block calls run as IR ops where the IR has one, else their default eagerly" do
    # top_k's default runs eagerly (argsort, take_along_axis); logical_not and a rank-2
    # determinant compile
    a = Nx.tensor([3.0, 1.0, 2.0, 5.0])
    {values, indices} = Nx.top_k(dev(a), k: 2)
    assert %Nx.Tensor{data: %@backend{}} = values
    assert_close(Nx.top_k(a, k: 2), {values, indices})
    assert_close(Nx.logical_not(Nx.tensor([0, 1, 2])), Nx.logical_not(dev(Nx.tensor([0, 1, 2]))))
    m = Nx.tensor([[2.0, 1.0], [1.0, 3.0]])
    assert_close(Nx.LinAlg.determinant(m), Nx.LinAlg.determinant(dev(m)))
  end

  test "the compiler's backend is this one, or Nx.BinaryBackend for output: :host" do
    assert {@backend, opts} = Nx.Vulkan.__to_backend__([])
    assert Keyword.keys(opts) == [:device, :cache_dir, :timeout]
    assert Nx.Vulkan.__to_backend__(output: :host) == {Nx.BinaryBackend, []}
    host = Nx.Defn.jit(&Nx.add(&1, 1), compiler: Nx.Vulkan, output: :host).(Nx.tensor([1.0]))
    assert host.data.__struct__ == elem(Nx.Defn.to_backend(compiler: Nx.Vulkan, output: :host), 0)
  end
end
