defmodule Nx.Vulkan.EmulationTest do
  # f64 and s64 computed in software on 32-bit words (the :emulate compile option; devices
  # without Float64/Int64 get it by default): Nx's results, and explain says which kernels.
  use Nx.Vulkan.Case, async: true

  import Nx.Defn

  defn f64_ops(x, y), do: {x + y, x * y, x / y, Nx.sqrt(Nx.abs(x)), Nx.floor(x * 1.0e3), x < y}
  defn f64_math(x), do: {Nx.exp(x), Nx.log(Nx.abs(x) + 1), Nx.sin(x), Nx.tanh(x)}
  defn s64_ops(a, b), do: {a * b, Nx.quotient(a, Nx.max(Nx.abs(b), 1)), Nx.sum(a), Nx.argmax(a), Nx.cumulative_sum(a)}

  # Nx.BinaryBackend raises where a float overflows or divides by zero: finite results only.
  defp inputs(n, type, scale \\ 100.0) do
    key = Nx.Random.key(7)
    {x, key} = Nx.Random.normal(key, 0.0, scale, shape: {n}, type: type)
    {y, _} = Nx.Random.normal(key, 0.0, 10.0, shape: {n}, type: type)
    {Nx.concatenate([Nx.tensor([0.0, -0.0, 1.0e-310, 1.0e300], type: type), x]),
     Nx.concatenate([Nx.tensor([1.0, 3.0, 2.0, 0.5], type: type), y])}
  end

  defp bits(t), do: t |> Nx.backend_copy(Nx.BinaryBackend) |> Nx.to_binary()

  for n <- [10, 1000, 100_000] do
    test "f64 arithmetic, comparisons and rounding give the evaluator's bits at #{n}" do
      {x, y} = inputs(unquote(n), :f64)
      want = Nx.Defn.jit(&f64_ops/2, compiler: Nx.Defn.Evaluator).(x, y)
      got = Nx.Defn.jit(&f64_ops/2, compiler: Nx.Vulkan, emulate: [:f64, :i64]).(x, y)

      for {w, g} <- Enum.zip(Tuple.to_list(want), Tuple.to_list(got)) do
        assert bits(w) == bits(g) or
                 Nx.to_number(Nx.all(Nx.logical_or(Nx.equal(w, g), Nx.logical_and(Nx.is_nan(w), Nx.is_nan(g))))) == 1
      end
    end
  end

  # Each within an ulp of the exact value (docs/numerics.md), as the evaluator's C library
  # is: two ulps apart at most.
  test "the f64 math library emulated stays within two ulps of the evaluator" do
    {x, _} = inputs(2000, :f64, 5.0)
    x = Nx.min(x, 700.0)
    want = Nx.Defn.jit(&f64_math/1, compiler: Nx.Defn.Evaluator).(x)
    got = Nx.Defn.jit(&f64_math/1, compiler: Nx.Vulkan, emulate: [:f64]).(x)

    for {w, g} <- Enum.zip(Tuple.to_list(want), Tuple.to_list(got)) do
      assert_close(w, g, atol: 0, rtol: 4.5e-16)
    end
  end

  test "s64 arithmetic, reductions and scans give the evaluator's values" do
    key = Nx.Random.key(3)
    # Bounds as s64 tensors: Nx 0.13 types a bare integer s32, where 2 ** 40 is 0.
    s64 = &Nx.tensor(&1, type: :s64)
    {a, key} = Nx.Random.randint(key, s64.(-(2 ** 40)), s64.(2 ** 40), shape: {5000}, type: :s64)
    {b, _} = Nx.Random.randint(key, s64.(-(2 ** 20)), s64.(2 ** 20), shape: {5000}, type: :s64)
    want = Nx.Defn.jit(&s64_ops/2, compiler: Nx.Defn.Evaluator).(a, b)
    got = Nx.Defn.jit(&s64_ops/2, compiler: Nx.Vulkan, emulate: [:i64]).(a, b)

    for {w, g} <- Enum.zip(Tuple.to_list(want), Tuple.to_list(got)) do
      assert bits(w) == bits(g)
    end
  end

  test "explain names the kernels that emulate, and a bad :emulate is an error" do
    x = Nx.iota({64}, type: :f64)
    info = Nx.Vulkan.explain(&Nx.exp/1, [x], emulate: [:f64])
    assert Enum.any?(info.kernels, &(&1.launch =~ "emulated f64"))
    native = Nx.Vulkan.explain(&Nx.exp/1, [x])
    emulated_device? = Nx.Vulkan.Case.device_caps().emulate_f64
    assert emulated_device? or Enum.all?(native.kernels, &(not (&1.launch =~ "emulated")))
    assert_raise ArgumentError, ~r/unknown :emulate types \[:f32\]/, fn -> Nx.Vulkan.explain(&Nx.exp/1, [x], emulate: [:f32]) end
    assert Nx.Vulkan.has_f64?()
  end
end
