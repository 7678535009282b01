defmodule Nx.Vulkan.ScanTest do
  # Nx.cumulative_sum/product/min/max: the IR's scan ops (not Nx's associative-scan
  # expansion, whose fused kernel grows exponentially with the axis), against
  # Nx.Defn.Evaluator, which runs that expansion on Nx.BinaryBackend.
  #
  # Tolerances: integers exact (both wrap). Float sums and products associate differently
  # (Nx's scan tree against our serial lines and blocks, docs/numerics.md): over a line of
  # n terms both are within about log2(n)..n rounding errors of the sum of magnitudes, so
  # f32 sums of 100 terms in [-1, 1] are compared with atol 1e-4 (100 * 2^-24 * 100 / 6);
  # min and max select, exactly. Large shapes use integer-valued floats, whose sums are
  # exact in any order, against a serial reference (the evaluator's expansion of 10^6
  # elements takes minutes).
  use Nx.Vulkan.Case, async: true

  @ops [:cumulative_sum, :cumulative_product, :cumulative_min, :cumulative_max]

  defp scan(op, x, opts), do: apply(Nx, op, [x, opts])

  # Seeded uniform values; Nx.Random's threefry on the evaluator is slow for 10^6.
  defp random(shape, type, lo, hi) do
    :rand.seed(:exsss, 42)
    for(_ <- 1..Tuple.product(shape), do: lo + (hi - lo) * :rand.uniform())
    |> Nx.tensor(type: type)
    |> Nx.reshape(shape)
  end

  test "a scan is one IR op, with its axis and direction" do
    x = Nx.iota({4, 64}, type: :f32)

    for op <- @ops, reverse <- [false, true] do
      {graph, _} = graph(&scan(op, &1, axis: 1, reverse: reverse), [x])
      ops = graph |> all_nodes() |> Enum.map(& &1.op)
      assert Atom.to_string(op) in ops
      refute "concatenate" in ops
      node = graph |> all_nodes() |> Enum.find(&(&1.op == Atom.to_string(op)))
      assert node.attrs == %{axis: 1, reverse: reverse}
    end
  end

  test "complex scans keep Nx's expansion" do
    x = Nx.complex(Nx.iota({8}, type: :f32), Nx.iota({8}, type: :f32))
    {graph, _} = graph(&Nx.cumulative_sum/1, [x])
    refute "cumulative_sum" in Enum.map(all_nodes(graph), & &1.op)
    assert_matches_evaluator(&Nx.cumulative_sum/1, [x])
  end

  test "every op, axis and direction on f32[4, 100] matches the evaluator" do
    x = random({4, 100}, :f32, -1.0, 1.0)
    near_one = random({4, 100}, :f32, 0.9, 1.1)

    for op <- @ops, axis <- [0, 1, -1], reverse <- [false, true] do
      input = if op == :cumulative_product, do: near_one, else: x
      assert_matches_evaluator(&scan(op, &1, axis: axis, reverse: reverse), [input], atol: 1.0e-4, rtol: 1.0e-4)
    end
  end

  test "integer types wrap as Nx's do" do
    for type <- [:s32, :s64, :u8], op <- @ops, reverse <- [false, true] do
      x = Nx.iota({3, 50}, type: type) |> Nx.multiply(37) |> Nx.remainder(251)
      assert_matches_evaluator(&scan(op, &1, axis: 1, reverse: reverse), [x])
    end
  end

  test "f64 and f16 lines" do
    for type <- [:f64, :f16], op <- [:cumulative_sum, :cumulative_max] do
      x = random({2, 3, 40}, type, -1.0, 1.0)
      atol = if type == :f16, do: 0.05, else: 1.0e-12
      assert_matches_evaluator(&scan(op, &1, axis: 2), [x], atol: atol, rtol: atol)
    end
  end

  test "NaN propagates through min, max and sum; infinities stay" do
    x = Nx.tensor([[1.0, :nan, -2.0, 3.0], [:infinity, 0.5, :neg_infinity, 1.0]], type: :f32)

    for op <- [:cumulative_sum, :cumulative_min, :cumulative_max], reverse <- [false, true] do
      assert_matches_evaluator(&scan(op, &1, axis: 1, reverse: reverse), [x])
    end
  end

  test "f32[64, 1024] and f32[1024, 64] along both axes match the evaluator" do
    for shape <- [{64, 1024}, {1024, 64}], axis <- [0, 1] do
      x = random(shape, :f32, -4.0, 4.0) |> Nx.round()
      assert_matches_evaluator(&Nx.cumulative_sum(&1, axis: axis), [x])
    end
  end

  test "f32[1024, 1024] and a line of 10^6 are exact on integer values" do
    x = random({1024, 1024}, :f32, -4.0, 4.0) |> Nx.round()
    rows = Nx.to_list(x)
    serial = fn row -> Enum.scan(row, &+/2) end

    got = Nx.Defn.jit_apply(&Nx.cumulative_sum(&1, axis: 1), [x], compiler: Nx.Vulkan)
    assert Nx.to_list(got) == Enum.map(rows, serial)

    got = Nx.Defn.jit_apply(&Nx.cumulative_sum(&1, axis: 0, reverse: true), [x], compiler: Nx.Vulkan)
    want = rows |> Enum.zip_with(&Function.identity/1) |> Enum.map(&(&1 |> Enum.reverse() |> serial.() |> Enum.reverse()))
    assert Nx.to_list(Nx.transpose(got)) == want

    line = Nx.reshape(x, {1024 * 1024})
    got = Nx.Defn.jit_apply(&Nx.cumulative_max/1, [line], compiler: Nx.Vulkan)
    assert Nx.to_flat_list(got) == Enum.scan(Nx.to_flat_list(line), &max/2)
  end

  test "eager operations on Nx.Vulkan.Backend run the scan op" do
    x = random({4, 100}, :f32, -1.0, 1.0)
    device = Nx.backend_transfer(x, Nx.Vulkan.Backend)

    for op <- @ops do
      assert_close(scan(op, x, axis: 1, reverse: true), scan(op, device, axis: 1, reverse: true), atol: 1.0e-4, rtol: 1.0e-4)
    end
  end

end

defmodule Nx.Vulkan.ScanTimeTest do
  # The expansion's fused kernel grew exponentially with the axis: f32[4, 64] did not
  # finish. Cold (compile included), a scan of f32[4, 100] takes milliseconds. Timed alone
  # (async: false runs after the suite's concurrent modules), so that the bound measures
  # the scan rather than the other tests compiling on the same cores.
  use Nx.Vulkan.Case, async: false

  test "f32[4, 100] compiles and runs quickly" do
    x = Nx.iota({4, 100}, type: :f32) |> Nx.divide(400) |> Nx.subtract(0.5)
    fun = fn t -> t |> Nx.multiply(1.5) |> Nx.cumulative_sum(axis: 1) |> Nx.cumulative_max(axis: 1, reverse: true) end
    {us, got} = :timer.tc(fn -> Nx.Defn.jit_apply(fun, [x], compiler: Nx.Vulkan) |> Nx.backend_copy(Nx.BinaryBackend) end)
    assert us < 5_000_000, "took #{div(us, 1000)} ms"
    assert_close(got, Nx.Defn.jit_apply(fun, [x], compiler: Nx.Defn.Evaluator), atol: 1.0e-4, rtol: 1.0e-4)
  end
end
