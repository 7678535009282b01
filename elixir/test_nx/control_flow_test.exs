defmodule Nx.Vulkan.ControlFlowTest do
  # `while`, `cond`, Nx.Random (threefry loops) and Nx.LinAlg against Nx.Defn.Evaluator.
  #
  # `while`/`cond` run host-driven in the C++ runtime (runtime/executable.cpp). Nx.LinAlg
  # solve/determinant/cholesky/lu and triangular_solve of rank-2 matrices compile without
  # loops (Nx.Vulkan.LinAlg unrolls them). Nx.Random.normal goes through erf_inv, which
  # Nx evaluates to single precision even in f64 (see OpsTest): f64 normals agree to 1e-6.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  ## while

  defn(count_up(x), do: while({x, i = 0}, i < 5, do: {x * 2 + Nx.as_type(i, :s32), i + 1}))

  defn newton_sqrt(a) do
    {x, _a, _i} =
      while {x = a, a, i = 0}, i < 20 do
        {0.5 * (x + a / x), a, i + 1}
      end

    x
  end

  defn sum_rows(m) do
    {acc, _, _} =
      while {acc = Nx.broadcast(0.0, {Nx.axis_size(m, 1)}), m, i = 0}, i < Nx.axis_size(m, 0) do
        {acc + m[i], m, i + 1}
      end

    acc
  end

  defn(generator_loop(x), do: while(acc = x, i <- 1..4, do: acc + i))

  test "while: counters, data-dependent loops and dynamic slices" do
    assert_matches_evaluator(&count_up/1, [Nx.tensor([1, 2, 3], type: :s32)])
    assert_matches_evaluator(&newton_sqrt/1, [Nx.tensor([2.0, 9.0, 0.25])])
    assert_matches_evaluator(&sum_rows/1, [Nx.iota({4, 3}, type: :f32)])
    assert_matches_evaluator(&generator_loop/1, [Nx.tensor(1.5)])
  end

  defn early_exit(x) do
    {x, _} = while({x, i = 0}, Nx.sum(x) < 100 and i < 50, do: {x * 1.5, i + 1})
    x
  end

  test "while with a data-dependent condition" do
    assert_matches_evaluator(&early_exit/1, [Nx.tensor([1.0, 2.0])])
    assert_matches_evaluator(&early_exit/1, [Nx.tensor([200.0, 2.0])])
  end

  ## cond

  defn piecewise(x, t) do
    cond do
      t < 0 -> x * -1
      t < 1 -> Nx.exp(x)
      true -> x + t
    end
  end

  defn branch_tuple(x, flag) do
    if flag > 0, do: {x + 1, Nx.sum(x)}, else: {x - 1, Nx.reduce_max(x)}
  end

  test "cond: every branch, tuples and captured values" do
    x = Nx.tensor([0.5, -1.0, 2.0])

    for t <- [-2.0, 0.5, 3.0] do
      assert_matches_evaluator(&piecewise/2, [x, Nx.tensor(t)])
    end

    for flag <- [1, 0] do
      assert_matches_evaluator(&branch_tuple/2, [x, Nx.tensor(flag)])
    end
  end

  defn(loop_with_branch(x), do: while({x, i = 0}, i < 4, do: {if(i > 1, do: x + 1, else: x * 2), i + 1}))

  test "cond inside while" do
    assert_matches_evaluator(&loop_with_branch/1, [Nx.tensor([1.0, 2.0])])
  end

  # A cond or while of one result is a single value like any other: a later branch
  # captures it (Scholar.Manifold.MDS's smacof loop did, and the serialiser had not
  # recorded its type).
  defn cond_then_cond(x, p) do
    y = if p > 0, do: x + 1, else: x - 1
    if p > 1, do: y * 2, else: y
  end

  defn while_then_cond(x, p) do
    y = while x, Nx.sum(x) < 100, do: x * 2
    if p > 1, do: y * 2, else: y - 1
  end

  defn loop_of_branches(x) do
    {x, _} =
      while {x, i = 0}, i < 4 do
        y = if Nx.remainder(i, 2) == 0, do: x + i, else: x * 2
        {if(i > 1, do: y - 1, else: y / 2), i + 1}
      end

    x
  end

  test "the single result of a cond or while captured by a later cond" do
    x = Nx.tensor([1.0, 2.0])

    for p <- [0, 1, 2] do
      assert_matches_evaluator(&cond_then_cond/2, [x, Nx.tensor(p)])
      assert_matches_evaluator(&while_then_cond/2, [x, Nx.tensor(p)])
    end

    assert_matches_evaluator(&loop_of_branches/1, [x])
  end

  # The default pipeline computes small, loop-free conds as selects (if-convert); without
  # that pass the runtime drives them from the host. Both agree with the evaluator.
  test "cond as selects and driven from the host" do
    x = Nx.tensor([0.5, -1.0, 2.0])
    info = Nx.Vulkan.explain(&piecewise/2, [x, Nx.tensor(0.5)])
    refute info.lowered =~ ~s("op":"cond")
    host_driven = for {name, _} <- info.passes, name != "if-convert", do: name
    assert Nx.Vulkan.explain(&piecewise/2, [x, Nx.tensor(0.5)], pipeline: host_driven).lowered =~ ~s("op":"cond")

    cases =
      (for(t <- [-2.0, 0.5, 3.0], do: {&piecewise/2, [x, Nx.tensor(t)]}) ++
         for(flag <- [1, 0], do: {&branch_tuple/2, [x, Nx.tensor(flag)]})) ++
        [{&loop_of_branches/1, [Nx.tensor([1.0, 2.0])]}, {&loop_with_branch/1, [Nx.tensor([1.0, 2.0])]}]

    for {fun, args} <- cases, pipeline <- [[], host_driven] do
      expected = Nx.Defn.jit_apply(fun, args, compiler: Nx.Defn.Evaluator)
      assert_close(expected, Nx.Vulkan.jit_apply(fun, args, pipeline: pipeline))
    end
  end

  # As Scholar's MDS: options travel in the loop state, and one selects a branch holding a
  # loop of its own. The flag starts as a literal and is passed on unchanged, so it is a
  # literal inside the loop (propagate-invariants), its cond folds (fold-conds), and the
  # data-dependent loop is kernels alone: a few submits rather than several per iteration.
  defn halve_until_small(x) do
    {x, _i, _halve, _eps} =
      while {x, i = 0, halve = 1, eps = 1.0e-3}, i < 200 and Nx.sum(Nx.abs(x)) > eps do
        x =
          if halve do
            x * 0.5
          else
            while x, Nx.any(x > 1.0), do: x - 1.0
          end

        {x, i + 1, halve, eps}
      end

    x
  end

  test "a flag passed through loop state unchanged decides its cond at compile time" do
    x = Nx.tensor([3.0, -2.0, 0.5])
    assert_matches_evaluator(&halve_until_small/1, [x])
    # The cond and the loop in its other branch are gone: the loop's body is kernels alone,
    # so it runs speculatively, not as a serial kernel (what a body with a cond would be).
    refute Enum.any?(kernel_names(&halve_until_small/1, [x]), &(&1 =~ "serial_while"))
  end

  # Every kernel an executable holds, its regions' and serial loops' included.
  defp kernel_names(fun, args) do
    json = Nx.Vulkan.explain(fun, args, stage: :source)
    {:ok, exe} = Nx.Vulkan.Native.compile(Nx.Vulkan.Device.get!(), json, [])
    {:ok, sources} = Nx.Vulkan.Native.kernel_sources(exe, :spirv)
    Enum.map(sources, &elem(&1, 0))
  end

  # Scholar's NNDescent inserts into per-row heaps: a sift-down loop in a cond, inside
  # counted loops. Driven from the host that is a submit per inner iteration; as one serial
  # kernel the whole nest takes a few dispatches.
  defn heap_push(keys, row, key) do
    width = Nx.axis_size(keys, 1)

    if key >= keys[[row, 0]] do
      keys
    else
      {keys, curr, _, _, _} =
        while {keys, curr = 0, stop = Nx.u8(0), row, key}, not stop do
          left = 2 * curr + 1
          right = left + 1

          {swap, stop} =
            cond do
              left >= width -> {curr, Nx.u8(1)}
              right >= width and keys[[row, left]] > key -> {left, stop}
              right >= width -> {curr, Nx.u8(1)}
              keys[[row, left]] >= keys[[row, right]] and keys[[row, left]] > key -> {left, stop}
              keys[[row, right]] > key -> {right, stop}
              true -> {curr, Nx.u8(1)}
            end

          keys = Nx.indexed_put(keys, Nx.stack([row, curr]) |> Nx.new_axis(0), Nx.new_axis(keys[[row, swap]], 0))
          {keys, swap, stop, row, key}
        end

      Nx.indexed_put(keys, Nx.stack([row, curr]) |> Nx.new_axis(0), Nx.new_axis(key, 0))
    end
  end

  defn push_all(keys, candidates, n) do
    {keys, _, _, _} =
      while {keys, i = 0, candidates, n}, i < n do
        {keys, _, _, _} =
          while {keys, j = 0, i, candidates}, j < Nx.axis_size(candidates, 1) do
            {heap_push(keys, Nx.remainder(i, Nx.axis_size(keys, 0)), candidates[[i, j]]), j + 1, i, candidates}
          end

        {keys, i + 1, candidates, n}
      end

    keys
  end

  test "nested loops with conds run as one serial kernel and match the evaluator" do
    keys = Nx.iota({6, 7}, type: :f32) |> Nx.multiply(-1.0) |> Nx.add(100.0)
    candidates = Nx.iota({9, 5}, type: :f32) |> Nx.multiply(37.0) |> Nx.remainder(101.0)
    id = {__MODULE__, make_ref()}
    test_pid = self()
    # Other async tests' runs emit the event too: only this process's count.
    :telemetry.attach(
      id,
      [:nx_vulkan, :run],
      fn _, m, _, _ -> if self() == test_pid, do: send(test_pid, {:submits, m.submits}) end,
      nil
    )
    on_exit(fn -> :telemetry.detach(id) end)
    assert_matches_evaluator(&push_all/3, [keys, candidates, 9], atol: 0, rtol: 0)
    assert_received {:submits, submits}
    serial? = Enum.any?(kernel_names(&push_all/3, [keys, candidates, 9]), &(&1 =~ "serial_while"))

    # The serial kernel binds the loops' state (a buffer per loop value), control words and
    # scratch: on a device of fewer than 8 storage buffers per kernel (the spec's minimum of
    # 4: vulkan-minimum, mali-g78) the loops run from the host instead, and only match.
    if serial? or device_caps().max_storage_buffers >= 8 do
      assert serial?
      assert submits <= 3
    end
  end

  defn(endless(x), do: while(x, Nx.all(x > -1.0e30), do: x + 1))

  # (n a parameter: a constant trip count would be unrolled, the inner loop then at the top)
  defn nested_endless(x, n) do
    {x, _, _} = while({x, i = 0, n}, i < n, do: {endless(x), i + 1, n})
    x
  end

  test "a while that never ends raises :timeout once the run reaches the :timeout limit, naming the loop" do
    error =
      assert_raise Nx.Vulkan.Error, ~r/^timeout: node \d+ \(while\) of graph .* still looping after \d+ iterations .* 300 ms$/, fn ->
        Nx.Vulkan.jit(&endless/1, timeout: 300, cache_dir: "none").(Nx.tensor([0.0]))
      end

    assert error.kind == :timeout

    # the inner loop, inside the outer one's body (a limit the outer loop's first condition
    # cannot use up on a loaded machine before the inner loop starts)
    assert_raise Nx.Vulkan.Error, ~r/^timeout: node \d+ \(while\) region 'body': node \d+ \(while\) was still looping/, fn ->
      Nx.Vulkan.jit(&nested_endless/2, timeout: 1500, cache_dir: "none").(Nx.tensor([0.0]), 3)
    end
  end

  ## Nx.Random

  test "Nx.Random: key, split, fold_in, uniform and randint match the evaluator" do
    assert_matches_evaluator(&Nx.Random.key/1, [Nx.tensor(1234, type: :s64)])
    key = Nx.Random.key(1234)
    assert_matches_evaluator(&Nx.Random.split/1, [key])
    assert_matches_evaluator(&Nx.Random.split(&1, parts: 4), [key])
    assert_matches_evaluator(&Nx.Random.fold_in(&1, 7), [key])
    assert_matches_evaluator(&Nx.Random.uniform(&1, shape: {3, 4}), [key])
    assert_matches_evaluator(&Nx.Random.uniform(&1, -2.0, 5.0, shape: {5}, type: :f64), [key])
    assert_matches_evaluator(&Nx.Random.randint(&1, 0, 10, shape: {6}), [key])

    # a training loop's pattern: split then draw, in one graph
    assert_matches_evaluator(
      fn key ->
        keys = Nx.Random.split(key)
        {k1, k2} = {keys[0], keys[1]}
        {elem(Nx.Random.uniform(k1, shape: {4}), 0), elem(Nx.Random.uniform(k2, shape: {4}), 0)}
      end,
      [key]
    )
  end

  # f32 normals are exact where the device computes f32 as Nx.BinaryBackend does (its
  # erf_inv included). Where f64 is emulated (mali-g78) the f64 normals' kernels take 25 s
  # alone on 2 loaded cores, past a minute beside the other async tests.
  @tag timeout: 300_000
  test "Nx.Random.normal" do
    key = Nx.Random.key(1234)
    tol = if computes_f32_in_f64?(), do: [atol: 0, rtol: 0], else: [rtol: 1.0e-4, atol: 1.0e-5]
    assert_matches_evaluator(&Nx.Random.normal(&1, shape: {2, 3}), [key], tol)
    assert_matches_evaluator(&Nx.Random.normal(&1, 2.0, 0.5, shape: {1000}), [key], tol)

    assert_matches_evaluator(&Nx.Random.normal(&1, 1.0, 2.0, shape: {4}, type: :f64), [key],
      rtol: 1.0e-6,
      atol: 1.0e-6
    )
  end

  ## Nx.LinAlg

  defp spd(n, type) do
    m = Nx.iota({n, n}, type: type) |> Nx.multiply(0.37) |> Nx.sin()
    Nx.add(Nx.dot(m, Nx.transpose(m)), Nx.multiply(Nx.eye(n, type: type), n))
  end

  test "Nx.LinAlg.solve: vectors, matrices and pivoting (f32)" do
    a = Nx.tensor([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, Nx.tensor([1.0, 2.0, 3.0])], rtol: 1.0e-4, atol: 1.0e-5)
    b = Nx.iota({3, 2}, type: :f32)
    assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, b], rtol: 1.0e-4, atol: 1.0e-5)

    assert_matches_evaluator(&Nx.LinAlg.solve/2, [spd(5, :f32), Nx.iota({5}, type: :f32)],
      rtol: 1.0e-4,
      atol: 1.0e-5
    )

    # integer inputs solve in f32
    assert_matches_evaluator(&Nx.LinAlg.solve/2, [Nx.tensor([[2, 1], [1, 3]]), Nx.tensor([3, 5])],
      rtol: 1.0e-5,
      atol: 1.0e-5
    )
  end

  test "Nx.LinAlg.solve in f64" do
    a = spd(4, :f64)

    assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, Nx.tensor([1.0, -2.0, 0.5, 3.0], type: :f64)],
      rtol: 1.0e-10,
      atol: 1.0e-12
    )
  end

  test "Nx.LinAlg.cholesky (f32 and f64)" do
    assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [spd(4, :f32)], rtol: 1.0e-4, atol: 1.0e-5)
    assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [spd(5, :f64)], rtol: 1.0e-9, atol: 1.0e-9)

    assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [Nx.tensor([[4.0, 2.0], [2.0, 3.0]])],
      rtol: 1.0e-5,
      atol: 1.0e-6
    )
  end

  test "Nx.LinAlg.triangular_solve with every option" do
    l = Nx.tensor([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [-1.0, 0.5, 1.5]])
    u = Nx.transpose(l)
    b = Nx.tensor([1.0, -2.0, 4.0])
    bm = Nx.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]])

    for {a, opts} <- triangular_solve_cases(l, u) do
      assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, b], rtol: 1.0e-5, atol: 1.0e-6)
      rhs = if opts[:left_side] == false, do: Nx.transpose(bm), else: bm

      assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, rhs], rtol: 1.0e-5, atol: 1.0e-6)
    end

    assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2), [Nx.as_type(l, :f64), Nx.as_type(b, :f64)])
  end

  test "Nx.LinAlg.triangular_solve and solve over a batch, each option" do
    l = Nx.tensor([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [-1.0, 0.5, 1.5]])
    ls = Nx.stack([l, Nx.multiply(l, 2.0), Nx.add(l, Nx.eye(3))]) |> Nx.reshape({3, 1, 3, 3})
    us = Nx.transpose(ls, axes: [0, 1, 3, 2])
    b = Nx.iota({3, 1, 3}, type: :f32) |> Nx.subtract(4.0)
    bm = Nx.iota({3, 1, 3, 2}, type: :f32) |> Nx.sin()

    for {a, opts} <- [
          {ls, []},
          {us, [lower: false]},
          {ls, [transform_a: :transpose]},
          {ls, [left_side: false]},
          {us, [lower: false, left_side: false]}
        ] do
      assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, b], rtol: 1.0e-5, atol: 1.0e-6)
      rhs = if opts[:left_side] == false, do: Nx.transpose(bm, axes: [0, 1, 3, 2]), else: bm

      assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [a, rhs], rtol: 1.0e-5, atol: 1.0e-6)
    end

    a = Nx.add(Nx.multiply(ls, us), Nx.multiply(Nx.eye(3), 4.0))
    assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, b], rtol: 1.0e-4, atol: 1.0e-5)
  end

  test "Nx.LinAlg.determinant: 2x2, 3x3, NxN, singular and integer (f32 and f64)" do
    for type <- [:f32, :f64] do
      {atol, rtol} = if type == :f32, do: {1.0e-4, 1.0e-4}, else: {1.0e-10, 1.0e-10}
      check = fn a -> assert_matches_evaluator(&Nx.LinAlg.determinant/1, [a], atol: atol, rtol: rtol) end
      check.(Nx.tensor([[1.0, 2.0], [3.0, 4.0]], type: type))
      check.(Nx.tensor([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]], type: type))
      check.(spd(5, type))
      check.(Nx.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], type: type))
    end

    assert_matches_evaluator(&Nx.LinAlg.determinant/1, [Nx.tensor([[2, 1, 0], [1, 3, 1], [0, 1, 4]])],
      atol: 1.0e-4,
      rtol: 1.0e-5
    )

    # a zero column: a zero pivot with nothing to swap in (0, not 0/0)
    zero_column =
      Nx.tensor([[0.0, 1.0, 2.0, 3.0], [0.0, 2.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0], [0.0, 5.0, 1.0, 2.0]])

    assert_matches_evaluator(&Nx.LinAlg.determinant/1, [zero_column])
  end

  # Nx <= 0.10 has an `lu` op that Nx.BinaryBackend computes by ordering the rows first,
  # then eliminating; Nx >= 0.11 a default implementation that pivots while eliminating.
  # Nx.Vulkan.LinAlg has both, so P matches whichever Nx runs here (the third matrix is
  # pivoted differently by the two). Singular matrices give Nx's infinities and NaN.
  # Tolerances: f32 1e-4, f64 1e-10 (relative, and absolute for entries near zero).
  test "Nx.LinAlg.lu: P, L and U as Nx computes them (f32 and f64)" do
    for type <- [:f32, :f64] do
      tol = if type == :f32, do: [atol: 1.0e-4, rtol: 1.0e-4], else: [atol: 1.0e-10, rtol: 1.0e-10]

      for a <- [
            [[1.0, 2.0], [3.0, 4.0]],
            [[1.0, 5.0, 0.0], [4.0, 1.0, 9.0], [2.0, 2.0, 2.0]],
            [[4.0, 4.0, 0.0], [2.0, 3.0, 0.0], [1.0, 2.5, 1.0]],
            [[3.0]],
            [[0.0, 1.0], [0.0, 2.0]],
            [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
          ] do
        assert_matches_evaluator(&Nx.LinAlg.lu/1, [Nx.tensor(a, type: type)], tol)
      end

      # (sin(0.37 k^2) over the flat index k: full rank, unlike sin of an affine k)
      general = {6, 6} |> Nx.iota(type: type) |> Nx.pow(2) |> Nx.multiply(0.37) |> Nx.sin()
      assert_matches_evaluator(&Nx.LinAlg.lu/1, [general], tol)
      assert_matches_evaluator(&Nx.LinAlg.lu/1, [spd(5, type)], tol)
    end

    # P keeps the integer type, L and U are f32 (the types are compared too)
    assert_matches_evaluator(&Nx.LinAlg.lu/1, [Nx.tensor([[1, 2, 0], [3, 1, 1], [0, 4, 2]])], atol: 1.0e-5)
  end

  test "Nx.LinAlg.lu of a batch: matrix by matrix (the op, Nx <= 0.10), Nx's default (Nx >= 0.11)" do
    batch =
      Nx.stack([
        Nx.tensor([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0], [0.0, 4.0, 2.0]]),
        Nx.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [4.0, 1.0, -2.0]])
      ])
      |> Nx.reshape({2, 1, 3, 3})

    if Code.ensure_loaded?(Nx.Block.LinAlg.LU) do
      refute Nx.Vulkan.IR.native_call?(struct(Nx.Block.LinAlg.LU), [batch])
    end

    assert_matches_evaluator(&Nx.LinAlg.lu/1, [batch], atol: 1.0e-5)
  end
end
