defmodule Nx.Vulkan.IndexingTest do
  # gather, take, take_along_axis, indexed_add and indexed_put through Nx.Vulkan against
  # Nx.Defn.Evaluator, for f32, f64 and integer types, with every option; their gradients;
  # and the library functions built on them (Nx.Random.choice, Nx.LinAlg.Eigh, Nx.LinAlg.invert).
  # Tolerances: Nx.Vulkan.Case.tolerance/1 (f64 1e-12, f32 1e-5, integers exact) unless a
  # test states a looser one (sums of many f32 updates, iterative linear algebra).
  #
  # Nx.BinaryBackend raises on an index out of range; the device clamps gather's indices
  # and skips such updates (docs/ir.md): "out of range" tests compare with the evaluator
  # on the indices made valid that way.
  use Nx.Vulkan.Case, async: true

  @types [:f32, :f64, :s32, :u8, :s64]

  # Deterministic, varied values of `type` (negative ones where the type has them).
  defp data(shape, type) do
    x = Nx.iota(shape, type: :f64, backend: Nx.BinaryBackend)

    case Nx.Type.normalize!(type) do
      {:f, _} -> x |> Nx.multiply(1.7) |> Nx.sin() |> Nx.multiply(10) |> Nx.as_type(type)
      {:u, _} -> x |> Nx.multiply(37) |> Nx.remainder(101) |> Nx.as_type(type)
      _ -> x |> Nx.multiply(37) |> Nx.remainder(101) |> Nx.subtract(50) |> Nx.as_type(type)
    end
  end

  defp ops(graph_fun, args), do: graph(graph_fun, args) |> elem(0) |> all_nodes() |> Enum.map(& &1.op)

  describe "gather" do
    test "ranks 1 to 3, default and explicit axes, batched indices" do
      cases = [
        {{7}, Nx.tensor([[3], [0], [6], [3]]), []},
        {{4, 6}, Nx.tensor([[1, 1], [0, 5], [3, 0]]), []},
        {{4, 6}, Nx.tensor([[1], [0], [3]]), []},
        {{4, 6}, Nx.tensor([[[1], [0], [2]], [[5], [5], [4]]]), [axes: [1]]},
        {{3, 4, 5}, Nx.tensor([[0, 4], [2, 1]], type: :s32), [axes: [0, 2]]},
        {{3, 4, 5}, Nx.tensor([[3], [0], [3]], type: :u8), [axes: [1]]},
        {{3, 4, 5}, Nx.tensor([[[2, 3, 4], [0, 0, 0]]]), []}
      ]

      for type <- @types, {shape, idx, opts} <- cases do
        assert_matches_evaluator(&Nx.gather(&1, &2, opts), [data(shape, type), idx])
      end
    end

    test "becomes one IR gather fused with its elementwise consumer" do
      f = fn x, i -> x |> Nx.gather(i, axes: [1]) |> Nx.exp() end
      args = [data({4, 6}, :f32), Nx.tensor([[1], [5]])]
      assert "gather" in ops(f, args)
      assert %{dispatches: 1} = Nx.Vulkan.explain(f, args)
      assert_matches_evaluator(f, args)
    end

    test "an index out of range is clamped into its axis" do
      x = data({4, 6}, :f32)
      idx = Nx.tensor([[-3, 2], [1, 9], [7, -1]])
      got = Nx.Defn.jit_apply(&Nx.gather/2, [x, idx], compiler: Nx.Vulkan)
      want = Nx.gather(x, idx |> Nx.max(0) |> Nx.min(Nx.tensor([3, 5])))
      assert_close(want, got)
    end
  end

  describe "take" do
    test "every axis, scalar and multi-dimensional indices" do
      cases = [
        {{7}, Nx.tensor([6, 0, 2, 2]), 0},
        {{4, 6}, Nx.tensor(3), 0},
        {{4, 6}, Nx.tensor([5, 0, 1]), 1},
        {{4, 6}, Nx.tensor([[1, 0], [3, 3]], type: :s32), 0},
        {{3, 4, 5}, Nx.tensor([[4, 0, 1], [2, 2, 3]], type: :u8), 2},
        {{3, 4, 5}, Nx.tensor([3, 1]), 1}
      ]

      for type <- @types, {shape, idx, axis} <- cases do
        assert_matches_evaluator(&Nx.take(&1, &2, axis: axis), [data(shape, type), idx])
      end
    end

    test "is serialised as gather (no take op in the IR)" do
      nodes = ops(&Nx.take(&1, &2, axis: 1), [data({4, 6}, :f32), Nx.tensor([[5, 0], [1, 1]])])
      assert "gather" in nodes
      refute "take" in nodes
    end
  end

  describe "take_along_axis" do
    test "axes 0, 1 and 2" do
      cases = [
        {{4, 6},
         Nx.tensor([[0, 3, 1], [2, 2, 0], [1, 0, 3], [3, 3, 3]])
         |> Nx.transpose()
         |> Nx.tile([1, 2])
         |> Nx.slice([0, 0], [3, 6]), 0},
        {{4, 6},
         Nx.tensor([
           [5, 0, 1, 1, 2, 4, 3],
           [0, 0, 0, 5, 5, 5, 1],
           [1, 2, 3, 4, 5, 0, 1],
           [2, 2, 2, 2, 2, 2, 2]
         ]), 1},
        {{2, 3, 4}, Nx.tensor([[[3, 0], [1, 1], [2, 0]], [[0, 0], [3, 2], [1, 3]]], type: :s32), 2}
      ]

      for type <- @types, {shape, idx, axis} <- cases do
        assert_matches_evaluator(&Nx.take_along_axis(&1, &2, axis: axis), [data(shape, type), idx])
      end
    end
  end

  describe "indexed_add and indexed_put" do
    test "repeated indices, axes, windows, the rank-1 shorthand" do
      cases = [
        {{7}, Nx.tensor([[1], [4], [1], [1], [6]]), {5}, []},
        {{4, 6}, Nx.tensor([[1, 1], [0, 5], [1, 1], [3, 0]]), {4}, []},
        {{4, 6}, Nx.tensor([[2], [0], [2]], type: :s32), {3, 6}, []},
        {{4, 6}, Nx.tensor([[5], [0], [5], [5]], type: :u8), {4, 4}, [axes: [1]]},
        {{4, 6}, Nx.tensor([[3], [3]]), {2, 4}, []},
        {{3, 4, 5}, Nx.tensor([[0, 4], [2, 1], [0, 4]]), {3, 4}, [axes: [0, 2]]},
        {{3, 4, 5}, Nx.tensor([[1], [1]]), {2, 3, 5}, [axes: [1]]}
      ]

      for op <- [:indexed_add, :indexed_put], type <- @types, {shape, idx, updates, opts} <- cases do
        args = [data(shape, type), idx, data(updates, type) |> Nx.reverse()]
        assert_matches_evaluator(&apply(Nx, op, [&1, &2, &3, opts]), args)
      end

      for op <- [:indexed_add, :indexed_put], type <- @types do
        assert_matches_evaluator(&apply(Nx, op, [&1, Nx.tensor([2, 1]), &2]), [
          data({3, 4}, type),
          Nx.tensor(9, type: type)
        ])
      end
    end

    test "the result type merges the target's and the updates'" do
      for op <- [:indexed_add, :indexed_put] do
        actual =
          assert_matches_evaluator(&apply(Nx, op, [&1, &2, &3]), [
            data({5}, :s32),
            Nx.tensor([[0], [3], [0]]),
            data({3}, :f32)
          ])

        assert actual.type == {:f, 32}
      end
    end

    test "many updates into few elements (one workgroup per element on the device)" do
      idx = Nx.iota({3000, 1}) |> Nx.multiply(7) |> Nx.remainder(3)
      updates = data({3000, 2}, :f32)

      assert_matches_evaluator(&Nx.indexed_add/3, [data({3, 2}, :f32), idx, updates],
        atol: 1.0e-3,
        rtol: 1.0e-5
      )

      assert_matches_evaluator(&Nx.indexed_put/3, [data({3, 2}, :f32), idx, updates])
      assert_matches_evaluator(&Nx.indexed_add/3, [data({3, 2}, :s32), idx, data({3000, 2}, :s32)])
    end

    test "an update whose index is out of range is skipped" do
      target = data({4, 3}, :f64)
      idx = Nx.tensor([[1], [-1], [4], [2], [1]])
      updates = data({5, 3}, :f64)
      valid = Nx.tensor([0, 3, 4])

      for op <- [:indexed_add, :indexed_put] do
        got = Nx.Defn.jit_apply(&apply(Nx, op, [&1, &2, &3]), [target, idx, updates], compiler: Nx.Vulkan)
        want = apply(Nx, op, [target, Nx.take(idx, valid), Nx.take(updates, valid)])
        assert_close(want, got)
      end
    end
  end

  describe "gradients" do
    test "through take, gather and take_along_axis: indexed_add on the device" do
      x = data({4, 6}, :f32)

      cases = [
        fn x -> Nx.sum(Nx.take(x, Nx.tensor([1, 1, 3]), axis: 0) |> Nx.sin()) end,
        fn x -> Nx.sum(Nx.take(x, Nx.tensor([[5, 0], [5, 2]]), axis: 1) |> Nx.multiply(2.5)) end,
        fn x -> Nx.sum(Nx.gather(x, Nx.tensor([[0, 1], [0, 1], [3, 5]])) |> Nx.exp()) end,
        fn x ->
          Nx.sum(Nx.take_along_axis(x, Nx.tensor([[0, 0], [1, 5], [2, 2], [3, 0]]), axis: 1) |> Nx.pow(2))
        end
      ]

      for f <- cases, type <- [:f32, :f64] do
        grad = &Nx.Defn.grad(&1, f)
        assert "indexed_add" in ops(grad, [Nx.as_type(x, type)])
        assert_matches_evaluator(grad, [Nx.as_type(x, type)])
      end
    end

    test "through indexed_put and indexed_add (gathers of the gradient)" do
      idx = Nx.tensor([[1], [3], [1]])
      args = [data({5, 2}, :f64), data({3, 2}, :f64)]

      for op <- [:indexed_put, :indexed_add] do
        f = fn t, u -> Nx.sum(Nx.multiply(apply(Nx, op, [t, idx, u]), Nx.iota({5, 2}))) end
        assert_matches_evaluator(&Nx.Defn.grad({&1, &2}, fn {t, u} -> f.(t, u) end), args)
      end
    end
  end

  describe "library functions built on them" do
    test "Nx.Random.choice with replacement, uniform and weighted" do
      v = data({10}, :f32)
      assert_matches_evaluator(fn v -> Nx.Random.choice(Nx.Random.key(3), v, samples: 4) |> elem(0) end, [v])
      p = Nx.tensor([0.1, 0.0, 0.3, 0.05, 0.05, 0.2, 0.1, 0.1, 0.0, 0.1])

      assert_matches_evaluator(
        fn v, p -> Nx.Random.choice(Nx.Random.key(5), v, p, samples: 6) |> elem(0) end,
        [v, p]
      )
    end

    # Nx.LinAlg.Eigh, the default of Nx <= 0.11's eigh (the evaluator computes Nx.LinAlg.eigh
    # with Nx.BinaryBackend's algorithm instead, as Nx.Vulkan does: test_nx/lin_alg_test.exs),
    # run by both compilers: the same QR iterations to eps 1e-4, agreeing to rounding.
    test "Nx.LinAlg.Eigh (gathers in its QR sweeps)" do
      a = Nx.tensor([[4.0, 1.0, 0.5, 0.1], [1.0, 3.0, 0.2, 0.0], [0.5, 0.2, 2.0, 0.3], [0.1, 0.0, 0.3, 1.0]])

      for type <- [:f32, :f64] do
        tol = if type == :f32, do: [atol: 1.0e-4, rtol: 1.0e-4], else: []

        assert_matches_evaluator(
          &apply(Nx.LinAlg.Eigh, :eigh, [&1, [eps: 1.0e-4, max_iter: 1_000]]),
          [Nx.as_type(a, type)],
          tol
        )
      end
    end

    test "Nx.LinAlg.invert (indexed_put in its LU)" do
      for type <- [:f32, :f64] do
        a = Nx.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], type: type)
        tol = if type == :f32, do: [atol: 1.0e-5, rtol: 1.0e-5], else: []
        assert_matches_evaluator(&Nx.LinAlg.invert/1, [a], tol)
      end
    end
  end
end
