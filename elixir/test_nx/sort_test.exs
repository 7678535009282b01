defmodule Nx.Vulkan.SortTest do
  # Nx.sort and Nx.argsort through the IR's argsort (a bitonic network per line; sort then
  # gathers) against Nx.Defn.Evaluator, i.e. Nx.BinaryBackend's stable merge sort:
  # every option, ranks 1 to 3, every axis, f32/f64/s32/u8/s64, ties, NaN, infinities and
  # signed zeros (these also in f16 and bf16). Sorting moves values without arithmetic, so
  # sort and argsort results must be bit-identical to the evaluator's (-0.0 and 0.0 tie,
  # and stay in input order). The library functions built on them (top_k, median, mode,
  # the gradient of sort, Nx.Random.shuffle, batched Cholesky) are compared exactly where
  # they only move values and within Nx.Vulkan.Case.tolerance/1 otherwise; the SVD and
  # norms built on it, iterations to convergence in f32, within 1e-4.
  use Nx.Vulkan.Case, async: true

  @types [:f32, :f64, :s32, :u8, :s64]

  # Values with many ties (11 distinct per type), negative where the type has them.
  defp data(shape, type) do
    x = shape |> Nx.iota(type: :s64, backend: Nx.BinaryBackend) |> Nx.multiply(7) |> Nx.remainder(11)

    case Nx.Type.normalize!(type) do
      {:f, _} -> x |> Nx.subtract(5) |> Nx.divide(4) |> Nx.as_type(type)
      {:u, _} -> x |> Nx.multiply(23) |> Nx.as_type(type)
      _ -> x |> Nx.subtract(5) |> Nx.multiply(1000) |> Nx.as_type(type)
    end
  end

  # NaN, both infinities and both zeros, each more than once, among ordinary values.
  defp specials(type) do
    ([:nan, 1.5, -0.0, :infinity, 0.0, :neg_infinity, :nan, 1.5, -2.0, 0.0, -0.0, :infinity] ++
       [-2.0, :neg_infinity, 0.0, 3.0, -0.0, :nan, 1.5, 0.0, :infinity, -0.0, -2.0, :nan])
    |> Nx.tensor(type: type, backend: Nx.BinaryBackend)
    |> Nx.reshape({4, 6})
  end

  # Runs `fun` with both compilers; the results must have the same type, shape and bytes.
  defp assert_identical(fun, args) do
    expected = Nx.Defn.jit_apply(fun, args, compiler: Nx.Defn.Evaluator)
    actual = Nx.Defn.jit_apply(fun, args, compiler: Nx.Vulkan)

    for {e, a} <-
          Enum.zip(Nx.Defn.Composite.flatten_list([expected]), Nx.Defn.Composite.flatten_list([actual])) do
      a = Nx.backend_copy(a, Nx.BinaryBackend)
      assert {a.type, a.shape} == {e.type, e.shape}

      assert Nx.to_binary(a) == Nx.to_binary(e), """
      device result differs from Nx.Defn.Evaluator
      expected: #{inspect(e, limit: 30)}
      actual:   #{inspect(a, limit: 30)}
      """
    end
  end

  defp both(opts), do: fn x -> {Nx.sort(x, opts), Nx.argsort(x, opts)} end

  describe "sort and argsort" do
    for type <- @types do
      test "every axis of ranks 1 to 3, both directions, #{type}" do
        for shape <- [{9}, {4, 6}, {3, 4, 5}],
            axis <- [-1 | Enum.to_list(0..(tuple_size(shape) - 1))],
            direction <- [:asc, :desc] do
          assert_identical(both(axis: axis, direction: direction), [data(shape, unquote(type))])
        end
      end
    end

    test "default options: axis 0, ascending" do
      assert_identical(&{Nx.sort(&1), Nx.argsort(&1)}, [data({5, 3}, :f32)])
    end

    for type <- [:f32, :f64, :f16, :bf16] do
      test "NaN, infinities and signed zeros, every axis, both directions, #{type}" do
        for axis <- [0, 1], direction <- [:asc, :desc] do
          assert_identical(both(axis: axis, direction: direction), [specials(unquote(type))])
        end
      end
    end

    test "ties keep their input order in both directions, stable or not (the evaluator always is)" do
      x = Nx.tensor([3, 1, 3, 2, 1, 3, 2, 1, 1, 3], type: :s32)

      for direction <- [:asc, :desc], stable <- [true, false] do
        assert_identical(&Nx.argsort(&1, direction: direction, stable: stable), [x])
      end

      # the stable order itself, independently of the evaluator: by value, then position
      got = Nx.Defn.jit_apply(&Nx.argsort(&1, direction: :desc), [x], compiler: Nx.Vulkan)
      stable = x |> Nx.to_flat_list() |> Enum.with_index() |> Enum.sort_by(fn {v, i} -> {-v, i} end)
      assert Nx.to_flat_list(got) == Enum.map(stable, &elem(&1, 1))
    end

    test "argsort's :type option" do
      for type <- [:u8, :s32, :s64, :f32] do
        assert_identical(&Nx.argsort(&1, axis: 1, type: type), [data({3, 7}, :f32)])
      end
    end

    test "random rows with ties, longer than a workgroup" do
      {x, _} = Nx.Random.randint(Nx.Random.key(7), 0, 40, shape: {6, 150}, type: :s32)

      for axis <- [0, 1], direction <- [:asc, :desc] do
        assert_identical(both(axis: axis, direction: direction), [x])
      end
    end

    test "vectorized tensors sort each entry" do
      x = data({3, 5}, :f32) |> Nx.vectorize(:rows)
      assert_identical(both(axis: 0, direction: :desc), [x])
    end

    test "lines longer than a workgroup sorts in shared memory: split-sort's stages" do
      {x, _} = Nx.Random.randint(Nx.Random.key(3), 0, 500, shape: {2, 10_007}, type: :s32)
      x = Nx.as_type(x, :f32) |> Nx.divide(7)

      for direction <- [:asc, :desc] do
        assert_identical(both(axis: 1, direction: direction), [x])
        assert_identical(both(axis: 0, direction: direction), [Nx.transpose(x)])
      end
    end

    test "becomes IR ops: an argsort and a gather" do
      f = &Nx.sort(&1, axis: 1)
      x = data({4, 6}, :f32)
      ops = graph(f, [x]) |> elem(0) |> all_nodes() |> Enum.map(& &1.op)
      assert "argsort" in ops and "gather" in ops
      refute "sort" in ops
      # the sort kernel, and the gather of the values at its order
      assert %{dispatches: 2} = Nx.Vulkan.explain(f, [x])
    end
  end

  describe "library functions built on sort" do
    test "Nx.top_k" do
      for x <- [data({9}, :f32), data({3, 6}, :s32), specials(:f32)], k <- [1, 4] do
        assert_identical(&Nx.top_k(&1, k: k), [x])
      end
    end

    test "Nx.median and Nx.mode" do
      x = data({4, 6}, :f32)

      for opts <- [[], [axis: 0], [axis: 1, keep_axis: true]] do
        assert_matches_evaluator(&Nx.median(&1, opts), [x])
      end

      for opts <- [[], [axis: 0], [axis: 1, keep_axis: true]], type <- [:s32, :f32] do
        assert_identical(&Nx.mode(&1, opts), [data({4, 6}, type)])
      end
    end

    test "the gradient of sort" do
      w = Nx.iota({4, 6}, type: :f32) |> Nx.multiply(0.37) |> Nx.sin()

      for axis <- [0, 1], direction <- [:asc, :desc] do
        fun = fn x, w ->
          Nx.Defn.grad(x, &Nx.sum(Nx.multiply(Nx.sort(&1, axis: axis, direction: direction), w)))
        end

        assert_matches_evaluator(fun, [data({4, 6}, :f32), w])
      end
    end

    test "Nx.Random.shuffle draws what the evaluator draws" do
      for {shape, axis} <- [{{10}, 0}, {{4, 6}, 1}, {{4, 6}, 0}] do
        shuffle = &(Nx.Random.shuffle(Nx.Random.key(3), &1, axis: axis) |> elem(0))
        assert_identical(shuffle, [data(shape, :f32)])
      end
    end

    # (Nx.LinAlg.svd itself: test_nx/lin_alg_test.exs)
    test "Nx.LinAlg.norm with ord 2 and :nuclear (singular values), within 1e-4" do
      a = Nx.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

      for ord <- [2, :nuclear] do
        assert_matches_evaluator(&Nx.LinAlg.norm(&1, ord: ord), [a], atol: 1.0e-4, rtol: 1.0e-4)
      end
    end

    test "batched Nx.LinAlg.cholesky (Nx's default, which sorts with argsort)" do
      a =
        Nx.tensor([
          [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]],
          [[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 5.0]]
        ])

      for type <- [:f32, :f64] do
        assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [Nx.as_type(a, type)])
      end
    end
  end

  describe "Nx.Vulkan.Backend" do
    test "eager sort, argsort and top_k give device tensors equal to Nx.BinaryBackend's" do
      x = data({4, 6}, :f32)
      dx = Nx.backend_transfer(x, Nx.Vulkan.Backend)

      for fun <- [&Nx.sort(&1, axis: 1), &Nx.argsort(&1, direction: :desc), &Nx.top_k(&1, k: 2)] do
        result = fun.(dx)
        assert [%Nx.Tensor{data: %Nx.Vulkan.Backend{}} | _] = Nx.Defn.Composite.flatten_list([result])
        assert_close(fun.(x), result)
      end
    end
  end
end
