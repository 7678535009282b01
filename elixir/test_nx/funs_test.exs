defmodule Nx.Vulkan.FunsTest do
  # Nx.map and Nx.reduce with functions (Nx.Vulkan.Funs: the traced body re-applied to
  # whole tensors; reduce as a tree over halves) against Nx.Defn.Evaluator, whose
  # BinaryBackend applies the function per element and folds in order. Tolerances: the
  # types' defaults (Nx.Vulkan.Case.tolerance/1); f32 sums of 7-35 terms in a different
  # order stay within them, integers are exact.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  # Branches in a body are selects per element.
  defn(reduce_max_by_if(t),
    do: Nx.reduce(t, -100.0, [axes: [1]], fn x, acc -> if x > acc, do: x, else: acc end)
  )

  defp data(shape, type) do
    shape |> Nx.iota(type: :f64) |> Nx.multiply(0.77) |> Nx.sin() |> Nx.multiply(5) |> Nx.as_type(type)
  end

  # Nx 0.8 removed Nx.map.
  if function_exported?(Nx, :map, 3) do
    defn map_by_cond(t) do
      Nx.map(t, fn x ->
        cond do
          x < -1 -> -x
          x > 2 -> Nx.exp(x)
          true -> x + 1
        end
      end)
    end

    describe "map" do
      test "a body with cond: each element takes its first true branch; NaN takes the last" do
        x = Nx.concatenate([data({9}, :f32), Nx.tensor([:nan, :infinity, :neg_infinity], type: :f32)])
        assert_matches_evaluator(&map_by_cond/1, [x])
      end

      for type <- [:f32, :f64, :s32, :u8] do
        test "polynomial body, #{type}" do
          x = data({3, 4}, unquote(type))
          assert_matches_evaluator(&Nx.map(&1, fn a -> Nx.add(Nx.multiply(a, a), 3) end), [x])
        end
      end

      test "a :type option is the result type; the body sees the input's elements" do
        # 0.33 > 0 is true for the f32 element even though the result is s32
        x = Nx.tensor([[-1.5, 0.33], [0.0, 2.0]])
        assert_matches_evaluator(&Nx.map(&1, [type: :s32], fn a -> Nx.greater(a, 0) end), [x])
      end

      # Nx traces the body at the :type, and Nx.Defn.Evaluator computes each of its nodes
      # at that type from the input's values: f64 arithmetic on f32 or integer inputs.
      test ":type wider than the input: the body is computed at the :type" do
        # x * x + 1 is exact in f64 and rounds in f32 (16777217^2 + 1 = 281475010265090, 49 bits)
        for x <- [Nx.tensor([16_777_217.0, 3.0e7, -1.5], type: :f32), Nx.tensor([16_777_217, -5, 40_000])] do
          actual =
            assert_matches_evaluator(&Nx.map(&1, [type: :f64], fn a -> Nx.add(Nx.multiply(a, a), 1) end), [x],
              atol: 0,
              rtol: 0
            )

          assert actual.type == {:f, 64}
        end

        [result] =
          Nx.Defn.jit_apply(
            &Nx.map(&1, [type: :f64], fn a -> Nx.add(Nx.multiply(a, a), 1) end),
            [Nx.tensor([16_777_217])],
            compiler: Nx.Vulkan
          )
          |> Nx.to_flat_list()

        assert result == 281_475_010_265_090.0
      end

      test ":type f64 of an integer scalar: exp in f64 (the issue's example)" do
        [value] =
          Nx.Defn.jit_apply(&Nx.map(&1, [type: :f64], fn a -> Nx.exp(a) end), [Nx.tensor(1)],
            compiler: Nx.Vulkan
          )
          |> Nx.to_flat_list()

        # not exp computed in f32 and widened (2.7182817459106445); within an ulp of e
        assert abs(value - 2.718281828459045) < 1.0e-15

        x = Nx.tensor([0.5, 1.0, -2.25, 3.0], type: :f32)

        assert_matches_evaluator(&Nx.map(&1, [type: :f64], fn a -> Nx.exp(a) end), [x],
          atol: 1.0e-15,
          rtol: 1.0e-15
        )
      end

      test ":type f32 of s32 inputs beyond f32's exact integers" do
        x = Nx.tensor([16_777_217, 33_554_435, -7, 123_456_789], type: :s32)
        opts = if computes_f32_in_f64?(), do: [atol: 0, rtol: 0], else: []

        assert_matches_evaluator(
          &Nx.map(&1, [type: :f32], fn a -> Nx.add(Nx.multiply(a, a), 1) end),
          [x],
          opts
        )

        assert_matches_evaluator(&Nx.map(&1, [type: :f32], fn a -> Nx.divide(a, 3) end), [x], opts)
      end

      test ":type narrower than the input: the body sees the wider values" do
        x = Nx.tensor([1.0e10, 0.1, -3.3333333333333335, 16_777_217.0], type: :f64)
        opts = if computes_f32_in_f64?(), do: [atol: 0, rtol: 0], else: []

        assert_matches_evaluator(
          &Nx.map(&1, [type: :f32], fn a -> Nx.add(Nx.multiply(a, a), 1) end),
          [x],
          opts
        )

        assert_matches_evaluator(
          &Nx.map(&1, [type: :f32], fn a -> Nx.exp(Nx.divide(a, 1.0e9)) end),
          [x],
          opts
        )

        # integers wrap at the narrower type as the evaluator writes them
        x = Nx.tensor([300, -1, 70_000, 255], type: :s64)
        assert_matches_evaluator(&Nx.map(&1, [type: :u8], fn a -> Nx.add(a, 1) end), [x])
      end

      test "without :type the body is computed at the input's type" do
        for type <- [:f32, :f64, :s32] do
          x = data({6}, type)
          opts = if type == :f32 and not computes_f32_in_f64?(), do: [], else: [atol: 0, rtol: 0]
          assert_matches_evaluator(&Nx.map(&1, fn a -> Nx.add(Nx.multiply(a, a), 1) end), [x], opts)
        end
      end

      test "constant and select bodies" do
        x = data({5}, :f64)
        assert_matches_evaluator(&Nx.map(&1, fn _ -> Nx.tensor(2.5, type: :f64) end), [x])

        assert_matches_evaluator(&Nx.map(&1, fn a -> Nx.select(Nx.less(a, 0), Nx.negate(a), Nx.exp(a)) end), [
          x
        ])
      end
    end
  end

  describe "reduce" do
    for type <- [:f32, :f64, :s64] do
      test "sums with a non-neutral accumulator over each axis set, #{type}" do
        x = data({3, 5, 7}, unquote(type))

        for opts <- [[], [axes: [0]], [axes: [1]], [axes: [2]], [axes: [0, 2]], [axes: [1], keep_axes: true]] do
          assert_matches_evaluator(&Nx.reduce(&1, 10, opts, fn a, b -> Nx.add(a, b) end), [x])
        end
      end
    end

    test "max, min and product" do
      x = data({4, 6}, :f32)
      assert_matches_evaluator(&Nx.reduce(&1, -100.0, [axes: [1]], fn a, b -> Nx.max(a, b) end), [x])
      assert_matches_evaluator(&Nx.reduce(&1, 100.0, [axes: [0]], fn a, b -> Nx.min(a, b) end), [x])

      assert_matches_evaluator(&Nx.reduce(&1, 1, [axes: [0]], fn a, b -> Nx.multiply(a, b) end), [
        Nx.add(Nx.iota({3, 5}), 1)
      ])
    end

    test "a body with if" do
      assert_matches_evaluator(&reduce_max_by_if/1, [data({4, 6}, :f32)])
    end

    test "NaN and infinities propagate as in the ordered fold" do
      x = Nx.tensor([[1.0, :nan, 2.0], [:infinity, 1.0, 0.0], [:neg_infinity, :infinity, 1.0]])
      assert_matches_evaluator(&Nx.reduce(&1, 0.0, [axes: [1]], fn a, b -> Nx.add(a, b) end), [x])
    end

    test "a function that is not element-wise is an ArgumentError naming the op" do
      x = data({4}, :f32)
      fun = &Nx.reduce(&1, 0.0, fn a, b -> Nx.add(Nx.sum(Nx.reshape(a, {1})), b) end)

      assert_raise ArgumentError, ~r/element-wise; this one uses :(sum|reshape)/, fn ->
        Nx.Vulkan.jit(fun).(x)
      end
    end
  end
end
