defmodule Nx.Vulkan.Case do
  @moduledoc false
  # Helpers shared by the Nx tests: tracing to IR, structural checks of graphs,
  # and comparison of device results against Nx.Defn.Evaluator.
  use ExUnit.CaseTemplate

  using do
    quote do
      import Nx.Vulkan.Case
    end
  end

  @doc "The IR graph (a map) and used inputs of `fun` applied to `args`."
  def graph(fun, args, opts \\ []) do
    fun |> Nx.Defn.debug_expr_apply(args) |> Nx.Vulkan.IR.build(opts)
  end

  @doc "All nodes of `graph`, regions included (depth first)."
  def all_nodes(graph) do
    Enum.flat_map(graph.nodes, fn node ->
      [node | node |> Map.get(:regions, %{}) |> Map.values() |> Enum.flat_map(&all_nodes/1)]
    end)
  end

  @doc "Ids unique and arguments defined before use, in every (nested) graph."
  def assert_well_formed(graph) do
    Enum.reduce(graph.nodes, MapSet.new(), fn node, defined ->
      for arg <- Map.get(node, :args, []) do
        assert MapSet.member?(defined, arg), "node #{node.id} (#{node.op}) uses #{arg} before it is defined"
      end

      refute MapSet.member?(defined, node.id), "id #{node.id} defined twice"
      node |> Map.get(:regions, %{}) |> Map.values() |> Enum.each(&assert_well_formed/1)
      MapSet.put(defined, node.id)
    end)
    |> then(fn defined -> for id <- graph.outputs, do: assert(MapSet.member?(defined, id)) end)

    graph
  end

  @doc """
  Whether the default device computes f32 in f64 as Nx.BinaryBackend does (lavapipe:
  codegen's `computes_f32_in_f64`), so that f32 results match the evaluator's exactly.
  """
  def computes_f32_in_f64?, do: device_caps().computes_f32_in_f64

  @doc "The default device's capabilities (`Nx.Vulkan.Native.device_info/1`'s `:caps`)."
  def device_caps, do: Nx.Vulkan.Native.device_info(Nx.Vulkan.Device.get!()) |> elem(1) |> Map.fetch!(:caps)

  @doc """
  The largest buffer the default device allows, in bytes: the least of its
  maxStorageBufferRange, maxMemoryAllocationSize and largest device-local heap.
  """
  def buffer_limit_bytes do
    caps = device_caps()
    Enum.min([caps.max_storage_buffer_range, caps.max_memory_allocation_bytes, caps.max_heap_bytes])
  end

  @doc """
  A 2-D f32 shape one row past `buffer_limit_bytes/0`: allocating it fails with
  `:out_of_memory` on any device, without exhausting the machine.
  """
  def past_buffer_limit_shape, do: {div(buffer_limit_bytes(), 16_384 * 4) + 1, 16_384}

  @doc "Tolerances by type: {atol, rtol}."
  def tolerance({:f, 64}), do: {1.0e-12, 1.0e-12}
  def tolerance({:f, 32}), do: {1.0e-5, 1.0e-5}
  def tolerance({:f, 16}), do: {1.0e-2, 1.0e-2}
  def tolerance({:bf, 16}), do: {2.0e-2, 2.0e-2}
  def tolerance({:c, 64}), do: {1.0e-5, 1.0e-5}
  def tolerance({:c, 128}), do: {1.0e-10, 1.0e-10}
  def tolerance(_integer), do: {0, 0}

  @doc """
  Nx.LinAlg.triangular_solve's option combinations, each with the matrix it applies to:
  `l` lower triangular, `u` its transpose.
  """
  def triangular_solve_cases(l, u) do
    [
      {l, []},
      {u, [lower: false]},
      {l, [transform_a: :transpose]},
      {u, [lower: false, transform_a: :transpose]},
      {l, [left_side: false]},
      {u, [lower: false, left_side: false]}
    ]
  end

  @doc """
  Runs `fun` on `args` with Nx.Vulkan and with Nx.Defn.Evaluator and asserts the
  results have the same types and shapes, and equal values (integers) or values
  within `tolerance/1` (floats; NaN equals NaN, infinities must match).
  Options: `:atol`, `:rtol` override the type's tolerance.
  """
  def assert_matches_evaluator(fun, args, opts \\ []) do
    expected = Nx.Defn.jit_apply(fun, args, compiler: Nx.Defn.Evaluator)
    actual = Nx.Defn.jit_apply(fun, args, compiler: Nx.Vulkan)
    assert_close(expected, actual, opts)
    actual
  end

  # Where the two differ most (the elements printed above may all agree).
  defp largest_difference(e, a) do
    diff = Nx.subtract(e, a) |> Nx.abs() |> Nx.flatten()
    diff = Nx.select(Nx.is_nan(diff), 0, diff)
    i = diff |> Nx.argmax() |> Nx.to_number()
    at = e.shape |> strides() |> unravel(i)
    pick = fn t -> t |> Nx.flatten() |> Nx.slice([i], [1]) |> Nx.squeeze() |> Nx.to_number() end
    "largest difference #{Nx.to_number(diff[i])} at #{inspect(at)}: expected #{inspect(pick.(e))}, actual #{inspect(pick.(a))}"
  end

  defp strides(shape) do
    shape |> Tuple.to_list() |> Enum.reverse() |> Enum.map_reduce(1, &{&2, &1 * &2}) |> elem(0) |> Enum.reverse()
  end

  defp unravel(strides, i) do
    {at, _} = Enum.map_reduce(strides, i, fn stride, rest -> {div(rest, stride), rem(rest, stride)} end)
    at
  end

  def assert_close(expected, actual, opts \\ []) do
    expected = Nx.Defn.Composite.flatten_list([expected])
    actual = Nx.Defn.Composite.flatten_list([actual])
    assert length(expected) == length(actual)

    for {e, a} <- Enum.zip(expected, actual) do
      # a copy: the device tensor stays usable (the caller may pass it on)
      a = Nx.backend_copy(a, Nx.BinaryBackend)
      assert {a.type, a.shape} == {e.type, e.shape}

      {atol, rtol} = tolerance(e.type)
      atol = Keyword.get(opts, :atol, atol)
      rtol = Keyword.get(opts, :rtol, rtol)

      ok? =
        if Nx.Type.float?(e.type) do
          Nx.all_close(e, a, atol: atol, rtol: rtol, equal_nan: true) |> Nx.to_number() == 1
        else
          Nx.equal(e, a) |> Nx.all() |> Nx.to_number() == 1
        end

      assert ok?, """
      device result differs from Nx.Defn.Evaluator (atol #{atol}, rtol #{rtol})
      expected: #{inspect(e, limit: 20)}
      actual:   #{inspect(a, limit: 20)}
      #{largest_difference(e, a)}
      """
    end
  end
end
