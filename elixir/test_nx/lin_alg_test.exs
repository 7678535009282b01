defmodule Nx.Vulkan.LinAlgTest do
  # Nx.LinAlg's iterative factorisations (qr, eigh, svd and pinv, which is built on svd)
  # against Nx.Defn.Evaluator, in f32 and f64.
  #
  # Nx <= 0.11's evaluator computes eigh with Nx.BinaryBackend's QR iteration, which
  # Nx.Vulkan.Eigh reproduces; Nx >= 0.12's runs the default (Jacobi sweeps) under both
  # compilers. SVD takes V from eigh, so before Nx.Vulkan.Eigh its V and pinv differed
  # from the evaluator's in the second digit. The iterations stop at a tolerance (eigh at
  # 1e-4), and the backend's eigh computes in f64 where this computes in f32, so f32
  # results agree to 2e-5 absolute plus 1e-4 relative (the largest differences seen are
  # ~5e-6); f64 results, computed in f64 by both, to 1e-9 where the device adds f64 products
  # unfused, as the backend's Elixir loops do (lavapipe). A GPU contracts them into fused
  # multiply-adds (NVIDIA does): the iterates differ in their last bits, the 1e-4 test can
  # stop the iteration one step earlier or later, and f64 results agree to 1e-7 (3.5e-9 is
  # the largest difference seen, on an H200).
  use Nx.Vulkan.Case, async: true
  import Nx.Defn

  # Nx 0.13's SVD compiles a QDWH loop per matrix and type: minutes on a loaded two-core machine.
  @moduletag timeout: 300_000

  @f64_tolerance if(Nx.Vulkan.Case.computes_f32_in_f64?(), do: 1.0e-9, else: 1.0e-7)
  @tolerance %{f32: [atol: 2.0e-5, rtol: 1.0e-4], f64: [atol: @f64_tolerance, rtol: @f64_tolerance]}

  defp data(shape, scale), do: shape |> Nx.iota(type: :f64) |> Nx.pow(2) |> Nx.multiply(scale) |> Nx.sin()

  # Tall (reduced to square by QR first), square, wide (factored transposed), and rank 1.
  @rank_one [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]

  defp matrices do
    [
      Nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5], [7.0, 8.0, 9.0], [1.0, 0.0, 2.0]]),
      Nx.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]),
      data({6, 3}, 0.37),
      data({3, 5}, 0.61),
      data({4, 4}, 0.23)
    ]
  end

  defn iterated_solve(a, b) do
    {_a, x, log_det, _i} =
      while {a, x = b, log_det = Nx.tensor(0, type: Nx.type(b)), i = 0}, i < 3 do
        {a, Nx.LinAlg.solve(a, x), log_det + Nx.log(Nx.abs(Nx.LinAlg.determinant(a))), i + 1}
      end

    {x, log_det}
  end

  defp symmetric(a), do: Nx.add(a, Nx.LinAlg.adjoint(a))

  defp both(fun, args) do
    expected = Nx.Defn.jit_apply(fun, args, compiler: Nx.Defn.Evaluator)
    actual = Nx.Defn.jit_apply(fun, args, compiler: Nx.Vulkan)
    {expected, Nx.Defn.Composite.traverse(actual, &Nx.backend_copy(&1, Nx.BinaryBackend))}
  end

  # `actual` with each column's sign flipped where it points away from the evaluator's
  # (singular vectors and eigenvectors are defined up to sign).
  defp align_columns(expected, actual) do
    dots = Nx.sum(Nx.multiply(expected, actual), axes: [-2], keep_axes: true)
    Nx.multiply(actual, Nx.select(Nx.less(dots, 0), -1, 1))
  end

  defp assert_columns_close(expected, actual, tol),
    do: assert_close(expected, align_columns(expected, actual), tol)

  # eigh of `a` with `opts`: eigenvalues and eigenvectors (up to sign) as the evaluator's.
  defp assert_eigh_matches(a, opts, tol) do
    {{ew, ev}, {w, v}} = both(&Nx.LinAlg.eigh(&1, opts), [a])
    assert_close(ew, w, tol)
    assert_columns_close(ev, v, tol)
  end

  describe "Nx.LinAlg.svd" do
    test "U, S and V as the evaluator's (columns up to sign), f32 and f64" do
      for a <- matrices(), type <- [:f32, :f64] do
        a = Nx.as_type(a, type)
        tol = @tolerance[type]
        {{eu, es, evt}, {u, s, vt}} = both(&Nx.LinAlg.svd/1, [a])
        assert_close(es, s, tol)
        assert_columns_close(eu, u, tol)
        assert_columns_close(Nx.transpose(evt), Nx.transpose(vt), tol)
      end
    end

    # The columns of U past the rank span the null space of a^T in any basis: compared
    # are S, V and the first column of U.
    test "a rank-one matrix: S, V and the range of U" do
      for type <- [:f32, :f64] do
        tol = @tolerance[type]
        {{eu, es, evt}, {u, s, vt}} = both(&Nx.LinAlg.svd/1, [Nx.tensor(@rank_one, type: type)])
        assert_close(es, s, tol)
        assert_columns_close(Nx.transpose(evt), Nx.transpose(vt), tol)
        assert_columns_close(eu[[.., 0..0]], u[[.., 0..0]], tol)
      end
    end

    test "a batch, matrix by matrix" do
      batch = Nx.stack([data({3, 3}, 0.37), data({3, 3}, 0.53)])

      for type <- [:f32, :f64] do
        tol = @tolerance[type]
        {{eu, es, evt}, {u, s, vt}} = both(&Nx.LinAlg.svd/1, [Nx.as_type(batch, type)])
        assert_close(es, s, tol)
        assert_columns_close(eu, u, tol)
        assert_columns_close(Nx.LinAlg.adjoint(evt), Nx.LinAlg.adjoint(vt), tol)
      end
    end
  end

  test "Nx.LinAlg.pinv, f32 and f64" do
    for a <- matrices(), type <- [:f32, :f64] do
      assert_matches_evaluator(&Nx.LinAlg.pinv/1, [Nx.as_type(a, type)], @tolerance[type])
    end
  end

  describe "Nx.LinAlg.eigh" do
    # Symmetric matrices with distinct eigenvalues (the first is the one SVD factors for
    # the 4x3 matrix above), a diagonal one (no reflector applies), a 2x2, a 1x1, zero, and
    # an integer one (f32 results).
    test "eigenvalues and eigenvectors (up to sign) as the evaluator's, f32 and f64" do
      inputs = [
        Nx.tensor([[4.643, 4.405, 5.103], [4.405, 6.22, 5.909], [5.103, 5.909, 8.677]]),
        Nx.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]),
        symmetric(data({4, 4}, 0.23)),
        symmetric(data({5, 5}, 0.37)),
        Nx.tensor([[1.0, 0.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 3.0]]),
        Nx.tensor([[2.0, 5.0], [5.0, 6.0]]),
        Nx.tensor([[-3.0]]),
        Nx.broadcast(0.0, {2, 2})
      ]

      for a <- inputs, type <- [:f32, :f64] do
        tol = @tolerance[type]
        assert_eigh_matches(Nx.as_type(a, type), [], tol)
      end

      assert_eigh_matches(Nx.tensor([[2, 1, 0], [1, 3, 1], [0, 1, 4]]), [], @tolerance.f32)
    end

    test "options and a batch (each matrix iterates to its own convergence)" do
      batch = Nx.stack([symmetric(data({4, 4}, 0.37)), Nx.eye(4), symmetric(data({4, 4}, 0.71))])

      for type <- [:f32, :f64], opts <- [[], [eps: 1.0e-6, max_iter: 50], [max_iter: 2]] do
        tol = @tolerance[type]
        assert_eigh_matches(Nx.as_type(batch, type), opts, tol)
      end
    end

    # Beyond the unrolling limit the Hessenberg reduction and each QR step are loops over
    # the reflectors (Nx.Vulkan.LinAlg.steps), nested in the QR iteration's loop. The
    # backend computes in f64 whatever the type, and 60 QR steps short of convergence
    # carry f32's rounding further than above: f32 to 1e-3.
    test "a 20x20 matrix, f32 and f64" do
      a = symmetric(data({20, 20}, 0.29))

      for {type, tol} <- [f32: [atol: 1.0e-3, rtol: 1.0e-3], f64: @tolerance.f64] do
        assert_eigh_matches(Nx.as_type(a, type), [max_iter: 60], tol)
      end
    end

    test "eagerly on Nx.Vulkan.Backend tensors" do
      a = symmetric(data({4, 4}, 0.37))
      {ew, ev} = Nx.LinAlg.eigh(a)

      # whatever the default backend (Nx 0.13 runs the default implementation eagerly: the
      # tensors it makes are the device's, not Nx.BinaryBackend's, which could not read the
      # argument)
      for default <- [Nx.Vulkan.Backend, Nx.BinaryBackend] do
        {w, v} = Nx.with_default_backend(default, fn -> Nx.LinAlg.eigh(Nx.backend_transfer(a, Nx.Vulkan.Backend)) end)
        assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = w
        assert_close(ew, w, @tolerance.f32)
        assert_columns_close(ev, Nx.backend_copy(v, Nx.BinaryBackend), @tolerance.f32)
      end
    end
  end

  # Nx's default under both compilers: its results agree to rounding.
  test "Nx.LinAlg.qr, reduced and complete, f32 and f64" do
    for a <- matrices() ++ [Nx.tensor(@rank_one)], type <- [:f32, :f64], mode <- [:reduced, :complete] do
      assert_matches_evaluator(&Nx.LinAlg.qr(&1, mode: mode), [Nx.as_type(a, type)], @tolerance[type])
    end
  end

  describe "matrices beyond Nx.Vulkan.LinAlg's unrolling limit (16): one while loop over the steps" do
    # General matrices: sin(0.37 k^2) over the flat index plus 2I (full rank, pivoting on
    # every column); SPD ones: g g^T + I. Tolerances: f32 1e-4 relative and absolute
    # (elimination over up to 40 columns in single precision), f64 1e-10.
    @large_tolerance %{f32: [atol: 1.0e-4, rtol: 1.0e-4], f64: [atol: 1.0e-10, rtol: 1.0e-10]}

    defp general(n, type) do
      a = Nx.iota({n, n}, type: :f64) |> Nx.pow(2) |> Nx.multiply(0.37) |> Nx.sin()
      a |> Nx.add(Nx.multiply(Nx.eye(n, type: :f64), 2.0)) |> Nx.as_type(type)
    end

    defp spd_matrix(n, type) do
      g = general(n, :f64)
      g |> Nx.dot([1], g, [1]) |> Nx.add(Nx.eye(n, type: :f64)) |> Nx.as_type(type)
    end

    defp lower(n, type), do: Nx.select(Nx.greater_equal(Nx.iota({n, 1}), Nx.iota({1, n})), general(n, type), 0)

    defp rhs(shape, type), do: shape |> Nx.iota(type: :f64) |> Nx.cos() |> Nx.as_type(type)

    test "the graph is unrolled up to 16 and a loop of a size independent of n beyond" do
      size = fn n ->
        {graph, _} = graph(&Nx.LinAlg.solve/2, [general(n, :f32), rhs({n}, :f32)])
        nodes = all_nodes(graph)
        {Enum.count(nodes, &(&1.op == "while")), length(nodes)}
      end

      assert {0, unrolled} = size.(16)
      assert {2, looped} = size.(17)
      assert size.(48) == {2, looped}
      assert looped < unrolled / 4
    end

    test "solve and determinant as the evaluator's, either side of the limit, f32 and f64" do
      for n <- [16, 17, 32], type <- [:f32, :f64] do
        tol = @large_tolerance[type]
        a = general(n, type)
        assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, rhs({n}, type)], tol)
        assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, rhs({n, 3}, type)], tol)
        assert_matches_evaluator(&Nx.LinAlg.determinant/1, [a], tol)
      end
    end

    test "cholesky and lu as the evaluator's (P exactly: the same pivots), f32 and f64" do
      for n <- [17, 32], type <- [:f32, :f64] do
        tol = @large_tolerance[type]
        assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [spd_matrix(n, type)], tol)
        assert_matches_evaluator(&Nx.LinAlg.lu/1, [general(n, type)], tol)
      end
    end

    test "triangular_solve with every option, either side of the limit, f32 and f64" do
      for type <- [:f32, :f64] do
        n = 17
        l = lower(n, type)
        u = Nx.transpose(l)

        for {a, opts} <- triangular_solve_cases(l, u) do
          b = if opts[:left_side] == false, do: rhs({2, n}, type), else: rhs({n, 2}, type)
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, b], @large_tolerance[type])
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, rhs({n}, type)], @large_tolerance[type])
        end
      end
    end

    test "a batch: triangular_solve and the lu op (Nx <= 0.10) matrix by matrix, Nx's defaults otherwise" do
      for type <- [:f32, :f64] do
        tol = @large_tolerance[type]
        ls = Nx.stack([lower(20, type), Nx.multiply(lower(20, type), 0.5)])
        assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [ls, rhs({2, 20, 3}, type)], tol)
        as = Nx.stack([general(20, type), Nx.transpose(general(20, type))])
        assert_matches_evaluator(&Nx.LinAlg.lu/1, [as], tol)
        assert_matches_evaluator(&Nx.LinAlg.determinant/1, [as], tol)
      end
    end

    # Nx.BinaryBackend raises for a singular triangular system (so the evaluator's solve
    # does), which a graph cannot: those are left out.
    test "singular and non-finite matrices: zeros, infinities and NaNs where the evaluator has them" do
      for n <- [8, 20], type <- [:f32, :f64] do
        tol = @large_tolerance[type]
        a = general(n, type)
        b = rhs({n}, type)
        put = fn m, at, value -> Nx.put_slice(m, at, Nx.broadcast(Nx.tensor(value, type: type), {1, 1})) end
        zero_column = Nx.put_slice(a, [0, 3], Nx.broadcast(Nx.tensor(0, type: type), {n, 1}))
        repeated_row = Nx.put_slice(a, [5, 0], a[2..2])

        for m <- [zero_column, repeated_row, put.(a, [4, 7], :infinity), put.(a, [n - 1, 2], :nan)] do
          assert_matches_evaluator(&Nx.LinAlg.determinant/1, [m], tol)
          assert_matches_evaluator(&Nx.LinAlg.lu/1, [m], tol)
        end

        for m <- [put.(a, [4, 7], :infinity), put.(a, [n - 1, 2], :nan)] do
          assert_matches_evaluator(&Nx.LinAlg.solve/2, [m, b], tol)
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [m, b], tol)
        end

        assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [repeated_row, b], tol)
      end
    end

    # As Scholar's BayesianRidgeRegression: a solve and a determinant in a loop's body.
    test "inside a while loop's body, f32 and f64" do
      for n <- [8, 20], type <- [:f32, :f64] do
        assert_matches_evaluator(&iterated_solve/2, [general(n, type), rhs({n}, type)], @large_tolerance[type])
      end
    end
  end

  # Nx.BinaryBackend factorises (eigh, lu, triangular_solve) in f64 whatever the input;
  # where the device computes f32 in f64 (lavapipe), f32 factorisations and the defaults of
  # solve and determinant built on them are computed so too, and match the evaluator to
  # the bit. Integer inputs have f32 results. Elsewhere they are computed in f32. (Nx >= 0.11
  # has no lu in the backend: its evaluator runs the default, op by op, which the device
  # does not follow, so lu and determinant keep the tolerance there.)
  @backend_lu function_exported?(Nx.BinaryBackend, :lu, 3)

  test "f32 factorisations as Nx.BinaryBackend computes them, exactly where the device computes f32 in f64" do
    tol = if computes_f32_in_f64?(), do: [atol: 0, rtol: 0], else: @large_tolerance.f32
    lu_tol = if @backend_lu, do: tol, else: @large_tolerance.f32
    a = Nx.tensor([[4.0, 1.5, -2.0, 0.5], [3.0, -1.0, 2.5, 1.0], [0.5, 2.0, 3.0, -1.5], [1.0, 0.0, -0.5, 2.0]])
    sym = Nx.add(a, Nx.transpose(a))
    int = Nx.tensor([[0, 0, 0, 0, -1], [0, 1, 2, 3, 0], [0, 1, -2, 3, 0], [0, 7, 8, 9, 0], [1, 0, 0, 0, 0]])
    b = Nx.tensor([1.0, -2.0, 0.5, 3.0])

    for input <- [sym, Nx.tensor([[2, 5], [5, 6]])] do
      assert_matches_evaluator(&Nx.LinAlg.eigh/1, [input], tol)
    end

    # In f64 Nx.Vulkan.Eigh performs the backend's arithmetic, in its order: equal on any
    # device whose f64 dots add in index order unfused (lavapipe's do), within 1e-9 elsewhere.
    if Nx.Vulkan.Eigh.supported?([sym]) do
      f64_tol = if computes_f32_in_f64?(), do: [atol: 0, rtol: 0], else: @tolerance.f64
      assert_matches_evaluator(&Nx.LinAlg.eigh/1, [Nx.as_type(sym, :f64)], f64_tol)
      assert_matches_evaluator(&Nx.LinAlg.eigh(&1, max_iter: 7), [Nx.as_type(sym, :f64)], f64_tol)
    end

    for m <- [a, int] do
      assert_matches_evaluator(&Nx.LinAlg.determinant/1, [m], lu_tol)
      assert_matches_evaluator(&Nx.LinAlg.lu/1, [m], lu_tol)
    end

    assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, b], tol)
    l = Nx.select(Nx.greater_equal(Nx.iota({4, 1}), Nx.iota({1, 4})), a, 0)
    assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [l, b], tol)
  end
end
