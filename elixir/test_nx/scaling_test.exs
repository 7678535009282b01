defmodule Nx.Vulkan.ScalingTest.Loop do
  import Nx.Defn

  defn halve_eight_times(x) do
    {_, y} = while {i = 0, x}, i < 8, do: {i + 1, x * 0.5 + 1}
    y
  end
end

defmodule Nx.Vulkan.ScalingTest do
  # Work that grows with the input: each op family at sizes n, 10n and 100n, timed on the
  # device (the fastest of a few runs). A run time that grows faster than about n log n, or
  # a cold compile past a second per kernel, fails: the kernels the compiler forms must
  # stay linear in their inputs (a fused tree of slices and concatenates recomputing its
  # leaves grows exponentially with depth). Each family grows along the axis its
  # implementation is linear (or n log n) in: sorts along their rows (a bitonic network,
  # O(n log^2 n) per row, within the slack from n to 100n); FFTs along their length
  # (Bluestein's transform of power-of-two FFTs at every size tested); indexed updates along
  # their updates: into a large target sorted by their positions (passes/sort-indexed,
  # O(n log^2 n) for the sort, each element a binary search), into 64 bins below lavapipe's
  # loop limit, where they fold over every update and past which they turn cooperative,
  # about 20 times slower per update (docs/compiler.md).
  # Results are checked against Nx.Defn.Evaluator at the smallest size.
  use Nx.Vulkan.Case, async: false

  # Allowed growth over the reference's n log n: timings on a loaded 2-core machine vary by
  # a few times, an exponential or quadratic kernel by orders of magnitude.
  @slack 4
  # Times below this are fixed overhead (a submit, transfers): growth is measured from here.
  @floor_ms 2.0
  @compile_budget_ms 1000
  @runs 3

  setup_all do
    # The device's first use (instance, pipeline cache) is no kernel's compile time.
    Nx.Defn.jit_apply(&Nx.add(&1, 1), [Nx.iota({4})], compiler: Nx.Vulkan)
    :ok
  end

  # Inputs in host memory: as device tensors of a lazy backend they would be computed in
  # the first timed run.
  setup do
    Nx.default_backend(Nx.BinaryBackend)
    :ok
  end

  defp f32(shape), do: shape |> Nx.iota(type: :f32) |> Nx.multiply(0.001) |> Nx.sin()

  # Compile time per kernel and the fastest run, in ms.
  defp measure(fun, args) do
    templates = Enum.map(args, &Nx.to_template/1)
    {compile_us, compiled} = :timer.tc(fn -> Nx.Defn.compile(fun, templates, compiler: Nx.Vulkan) end)
    {first_us, _} = :timer.tc(fn -> sync(apply(compiled, args)) end)
    kernels = max(Nx.Vulkan.explain(fun, args).dispatches, 1)

    run_us =
      for _ <- 1..@runs do
        {us, _} = :timer.tc(fn -> sync(apply(compiled, args)) end)
        us
      end
      |> Enum.min()

    # Pipelines may be created on the first run rather than at compile time.
    cold_ms = (compile_us + max(first_us - run_us, 0)) / 1000
    {cold_ms / kernels, run_us / 1000, kernels}
  end

  defp sync(result), do: [result] |> Nx.Defn.Composite.flatten_list() |> Enum.map(&Nx.backend_transfer/1)

  defp assert_scales(name, fun, make_args, n, tolerance \\ []) do
    expected = Nx.Defn.jit_apply(fun, make_args.(n), compiler: Nx.Defn.Evaluator)
    assert_close(expected, Nx.Defn.jit_apply(fun, make_args.(n), compiler: Nx.Vulkan), tolerance)

    [{_, t1, _}, {_, t2, _}, {_, t3, _}] =
      timings =
      for size <- [n, 10 * n, 100 * n] do
        {compile_ms, run_ms, kernels} = measure(fun, make_args.(size))

        assert compile_ms <= @compile_budget_ms,
               "#{name} at #{size}: a cold compile took #{round(compile_ms)} ms per kernel (#{kernels} kernels)"

        {size, run_ms, kernels}
      end

    report = Enum.map_join(timings, ", ", fn {s, ms, k} -> "#{s}: #{Float.round(ms, 2)} ms (#{k} kernels)" end)
    # n log n from each size to the next, from the fixed overhead's floor.
    for {{a, ta}, {b, tb}} <- [{{n, t1}, {10 * n, t2}}, {{10 * n, t2}, {100 * n, t3}}] do
      allowed = max(ta, @floor_ms) * b * :math.log(b) / (a * :math.log(a)) * @slack
      assert tb <= allowed, "#{name} grows faster than n log n: #{report}"
    end
  end

  test "elementwise chains" do
    chain = fn x -> Enum.reduce(1..12, x, fn _, acc -> acc |> Nx.multiply(0.9) |> Nx.exp() |> Nx.sin() end) end
    assert_scales("elementwise", chain, &[f32({&1})], 1000)
  end

  test "reductions" do
    assert_scales("sum", &Nx.sum(&1, axes: [1]), &[f32({4, &1})], 1000)
  end

  test "scans (cumulative_sum, cumulative_max)" do
    assert_scales("cumulative_sum", &Nx.cumulative_sum(&1, axis: 1), &[f32({4, &1})], 20)
    assert_scales("cumulative_max", &Nx.cumulative_max(&1, axis: 0), &[f32({&1, 4})], 20)
  end

  test "sorts and argsorts, along the row" do
    assert_scales("sort", &Nx.sort(&1, axis: 1), &[f32({2, &1})], 1000)
    assert_scales("argsort", &Nx.argsort(&1, axis: 0, direction: :desc), &[f32({&1})], 1000)
  end

  test "windows" do
    assert_scales("window_sum", &Nx.window_sum(&1, {1, 5}, padding: :same), &[f32({4, &1})], 250)
    assert_scales("window_max", &Nx.window_max(&1, {3}, strides: [2]), &[f32({&1})], 1000)
  end

  test "gathers and scatters" do
    indices = fn n -> Nx.iota({n, 1}, type: :s32) |> Nx.multiply(7) |> Nx.remainder(64) end
    assert_scales("take", &Nx.take(&1, &2), &[f32({64, 4}), Nx.iota({&1}) |> Nx.remainder(64)], 1000)

    assert_scales(
      "indexed_add into 64 bins",
      &Nx.indexed_add(&1, &2, &3),
      &[Nx.broadcast(0.0, {64}), indices.(&1), f32({&1})],
      300
    )
  end

  # The sorted form needs 6 storage buffers per kernel; with 4 the fold over every update
  # per element stays (docs/compiler.md), quadratic here.
  @tag slow_on_restricted_device: "within 4 storage buffers indexed updates fold over every update per element"
  test "indexed updates into many positions" do
    # 10^4 positions, each repeated 10 times at 10^5 updates. Folding every update per
    # element took 3.5 s for 10^4 updates into 10^5 bins on lavapipe.
    spread = fn n -> Nx.iota({n, 1}, type: :s32) |> Nx.multiply(7919) |> Nx.remainder(10_000) end

    assert_scales(
      "indexed_add into 10^4 bins",
      &Nx.indexed_add(&1, &2, &3),
      &[Nx.broadcast(0.0, {10_000}), spread.(&1), f32({&1})],
      1000
    )

    assert_scales(
      "indexed_put into 10^4 rows of 2",
      &Nx.indexed_put(&1, &2, &3),
      &[Nx.broadcast(0, {10_000, 2}), spread.(&1), Nx.iota({&1, 2}, type: :s32)],
      1000
    )
  end

  test "concatenate, pad and slice pipelines" do
    pipeline = fn x ->
      n = Nx.axis_size(x, 0)
      a = Nx.pad(x, 0.0, [{2, 1, 0}])
      b = Nx.concatenate([Nx.reverse(x), Nx.slice(a, [0], [n])])
      c = Nx.add(Nx.slice(b, [1], [n]), Nx.slice(b, [n - 1], [n]))
      Nx.concatenate([c, Nx.slice_along_axis(a, 1, n, strides: 2)])
    end

    assert_scales("concatenate/pad/slice", pipeline, &[f32({&1})], 1000)
  end

  # Bluestein's kernels for three sizes take about 20 s to compile on lavapipe.
  @tag timeout: 300_000
  test "FFTs, along their length" do
    # An f32 transform's round-off is normwise, about eps·log2(m) times the sum of |x|
    # (at most n here), in every output, however small.
    assert_scales("fft", &Nx.fft(&1), &[f32({4, &1})], 300, atol: 4.0e-6 * 300)
  end

  test "while loops" do
    loop = &Nx.Vulkan.ScalingTest.Loop.halve_eight_times/1
    assert_scales("while", loop, &[f32({&1})], 1000)
  end

  # Under mali-g78 the f32[10000, 64] x f32[64, 16] dot gets 128x64x32 tiles of 16x8 per
  # invocation, subgroup broadcast, vectors of 4 (11,000 lines of SPIR-V): lavapipe's LLVM
  # takes 11 s over it, past the budget (lavapipe as it is: 64x32x16 tiles, 2,200 lines).
  @tag slow_on_restricted_device: "mali-g78's dot tiles take lavapipe 11 s to compile"
  test "dots and convolutions" do
    assert_scales("dot", &Nx.dot(&1, &2), &[f32({&1, 64}), f32({64, 16})], 100)
    assert_scales("conv", &Nx.conv(&1, &2, padding: :same), &[f32({1, 1, &1}), f32({1, 1, 5})], 1000)
  end
end
