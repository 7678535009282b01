defmodule Nx.Vulkan.OpsTest do
  # Every IR op through Nx.Vulkan against Nx.Defn.Evaluator (tolerances in
  # Nx.Vulkan.Case.tolerance/1: f64 1e-12, f32 1e-5, f16/bf16 1e-2, integers exact).
  # Ops are grouped into one jitted function per family and type, so each group is
  # one graph and one compilation.
  use Nx.Vulkan.Case, async: true

  @float_unary [:exp, :expm1, :log, :log1p, :sigmoid, :cos, :sin, :tan, :cosh, :sinh, :tanh] ++
                 [:acos, :asin, :atan, :acosh, :asinh, :atanh, :sqrt, :rsqrt, :cbrt, :erf, :erfc] ++
                 [:negate, :abs, :sign, :floor, :ceil, :round, :is_nan, :is_infinity, :logical_not]

  @int_unary [:negate, :abs, :sign, :bitwise_not, :population_count, :count_leading_zeros] ++
               [:floor, :ceil, :round, :logical_not, :exp, :sqrt]

  @float_binary [:add, :subtract, :multiply, :divide, :pow, :remainder, :atan2, :max, :min] ++
                  [:equal, :not_equal, :greater, :less, :less_equal, :greater_equal] ++
                  [:logical_and, :logical_or, :logical_xor]

  @int_binary [:add, :subtract, :multiply, :max, :min, :quotient, :remainder, :pow] ++
                [:bitwise_and, :bitwise_or, :bitwise_xor, :left_shift, :right_shift] ++
                [:equal, :less, :greater_equal, :logical_and, :logical_xor, :divide]

  @special [:nan, :infinity, :neg_infinity, -0.0, 0.0]

  defp float_values(type) do
    Nx.tensor([-2.5, -1.0, -0.75, -0.5, 0.0, 0.3, 0.5, 0.9, 1.0, 1.5, 3.0, 10.0] ++ @special, type: type)
  end

  defp apply_all(ops, args), do: ops |> Enum.map(&apply(Nx, &1, args)) |> List.to_tuple()

  for type <- [:f32, :f64] do
    test "float unary ops on #{type}" do
      x = float_values(unquote(type))
      assert_matches_evaluator(&apply_all(@float_unary, [&1]), [x])
      assert_matches_evaluator(&Nx.erf_inv/1, [Nx.tensor([-0.9, -0.5, 0.0, 0.3, 0.7], type: unquote(type))])
    end

    test "float binary ops on #{type}, broadcasting" do
      x = float_values(unquote(type)) |> Nx.reshape({17, 1})
      y = Nx.tensor([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0, :nan, :infinity], type: unquote(type))
      assert_matches_evaluator(&apply_all(@float_binary, [&1, &2]), [x, y])
    end
  end

  for type <- [:s32, :s64, :u8, :u32, :s8] do
    test "integer unary ops on #{type}" do
      values = [0, 1, 2, 3, 7, 100, 127]
      values = if unquote(type) in [:s32, :s64, :s8], do: values ++ [-1, -2, -7, -100, -128], else: values
      x = Nx.tensor(values, type: unquote(type))
      assert_matches_evaluator(&apply_all(@int_unary, [&1]), [x])
    end

    test "integer binary ops on #{type}" do
      x = Nx.tensor([[0], [1], [5], [17], [100], [127]], type: unquote(type))
      # nonzero divisors: Nx.BinaryBackend raises on integer division by zero
      y = Nx.tensor([1, 2, 3, 7], type: unquote(type))
      assert_matches_evaluator(&apply_all(@int_binary, [&1, &2]), [x, y])
    end
  end

  test "signed integer division and remainder follow Erlang's rem/div" do
    x = Nx.tensor([[-7], [7], [-1], [0]], type: :s32)
    y = Nx.tensor([2, -2, 3, -5], type: :s32)
    assert_matches_evaluator(&{Nx.quotient(&1, &2), Nx.remainder(&1, &2)}, [x, y])
  end

  test "mixed-type arithmetic promotes as Nx does" do
    args = [Nx.tensor([1, -2, 3], type: :s32), Nx.tensor([0.5, 1.5, -2.5], type: :f32), Nx.tensor([1, 2, 3], type: :u8)]

    assert_matches_evaluator(
      fn a, b, c -> {Nx.add(a, b), Nx.multiply(c, a), Nx.divide(a, c), Nx.subtract(c, b), Nx.add(c, 1.5)} end,
      args
    )
  end

  test "f16 and bf16 arithmetic" do
    for type <- [:f16, :bf16] do
      x = Nx.tensor([0.5, 1.0, 2.0, -3.0], type: type)
      assert_matches_evaluator(fn a -> {Nx.add(a, a), Nx.multiply(a, 3), Nx.exp(a), Nx.sum(a)} end, [x])
    end
  end

  test "conversions" do
    x = Nx.tensor([-2.7, -0.5, 0.0, 0.5, 2.7, 300.0, -300.0, :nan], type: :f32)

    assert_matches_evaluator(
      fn x -> {Nx.as_type(x, :s32), Nx.as_type(x, :u8), Nx.as_type(x, :f64), Nx.as_type(x, :s64)} end,
      [x]
    )

    assert_matches_evaluator(&Nx.bitcast(&1, :s32), [Nx.tensor([1.0, -2.0, 0.5], type: :f32)])
  end

  test "shape ops" do
    x = Nx.iota({2, 3, 4}, type: :f32)

    assert_matches_evaluator(
      fn x ->
        {Nx.reshape(x, {4, 6}), Nx.transpose(x, axes: [2, 0, 1]), Nx.broadcast(Nx.sum(x, axes: [1]), {5, 2, 4}),
         Nx.squeeze(Nx.reshape(x, {1, 2, 1, 12})), Nx.reverse(x, axes: [0, 2]), Nx.new_axis(x, 1),
         Nx.concatenate([x, x * 2], axis: 1), Nx.stack([x, x], axis: 0)}
      end,
      [x]
    )
  end

  test "slices, dynamic slices and put_slice" do
    x = Nx.iota({5, 6}, type: :s32)

    assert_matches_evaluator(
      fn x, i ->
        {Nx.slice(x, [1, 2], [3, 2]), Nx.slice(x, [0, 0], [3, 3], strides: [2, 2]), Nx.slice(x, [i, 1], [2, 3]),
         Nx.slice(x, [i, i], [4, 4]), Nx.put_slice(x, [1, 1], Nx.tensor([[-1, -2], [-3, -4]], type: :s32)),
         Nx.put_slice(x, [i, 4], Nx.tensor([[-1, -2, -3]], type: :s32))}
      end,
      [x, Nx.tensor(3)]
    )
  end

  test "pad with negative and interior padding" do
    x = Nx.iota({3, 4}, type: :f32)

    assert_matches_evaluator(
      fn x ->
        {Nx.pad(x, 0.5, [{1, 2, 0}, {0, 1, 1}]), Nx.pad(x, -1.0, [{-1, 1, 0}, {2, -2, 2}])}
      end,
      [x]
    )
  end

  test "select, clip, iota and eye" do
    x = Nx.tensor([[-2.0, 0.5], [3.0, :nan]])

    assert_matches_evaluator(
      fn x ->
        {Nx.select(Nx.greater(x, 0), x, -x), Nx.clip(x, -1.0, 1.0), Nx.iota({2, 3}, axis: 1),
         Nx.iota({2, 3}, type: :f32), Nx.eye(3, type: :s32), Nx.eye({2, 3, 3})}
      end,
      [x]
    )
  end

  test "reductions" do
    x = Nx.tensor([[1.0, -2.0, 3.0, 3.0], [0.5, :nan, -1.0, 4.0], [2.0, 2.0, -0.0, 0.0]])
    y = Nx.tensor([[1, 5, 5, 0], [2, -3, 7, 7]], type: :s32)

    assert_matches_evaluator(
      fn x, y ->
        {Nx.sum(x), Nx.sum(x, axes: [1]), Nx.product(y, axes: [0], keep_axes: true), Nx.reduce_max(x, axes: [0]),
         Nx.reduce_min(y), Nx.all(y, axes: [1]), Nx.any(y), Nx.argmax(y, axis: 1), Nx.argmin(y, axis: 0),
         Nx.argmax(y, axis: 1, tie_break: :high), Nx.argmax(x), Nx.argmin(x, axis: 1, keep_axis: true),
         Nx.sum(y), Nx.mean(x, axes: [1])}
      end,
      [x, y]
    )
  end

  test "dot: vector, matrix, contracted and batched" do
    a = Nx.iota({2, 3, 4}, type: :f32) |> Nx.divide(7)
    b = Nx.iota({2, 4, 5}, type: :f32) |> Nx.subtract(10)
    v = Nx.tensor([1.0, -1.0, 2.0, 0.5])

    assert_matches_evaluator(
      fn a, b, v ->
        {Nx.dot(v, v), Nx.dot(a, v), Nx.dot(a[0], b[1]), Nx.dot(a, [0, 2], [0], b, [0, 1], [0]),
         Nx.dot(a, [2], [0], b, [1], [0]), Nx.outer(v, v)}
      end,
      [a, b, v]
    )

    ints = Nx.iota({3, 3}, type: :s64)
    assert_matches_evaluator(&Nx.dot(&1, &1), [ints])
  end

  test "f64 linear algebra-like chains keep f64 precision" do
    x = Nx.tensor([[1.0e-3, 2.0, 3.0], [4.0, 5.0, 6.0e8]], type: :f64)
    assert_matches_evaluator(fn x -> x |> Nx.dot(Nx.transpose(x)) |> Nx.log() |> Nx.sum() end, [x])
  end
end
