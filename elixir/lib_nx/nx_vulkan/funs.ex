defmodule Nx.Vulkan.Funs do
  @moduledoc false
  # `Nx.map/3` and `Nx.reduce/4` with a function, for the serialiser (Nx.Vulkan.IR; reduce
  # also folds the windows of `Nx.window_reduce/5` for Nx.Vulkan.Window).
  # The function arrives as a `:fun` expression traced on scalar parameters; the IR has
  # no function values, so its body is applied again, op by op through Nx's own
  # functions, to whole tensors in place of the scalar parameters. That is exact for
  # element-wise bodies (what Nx applies per element is then what every element gets)
  # and is all this accepts. Every function takes and returns `Nx.Defn.Expr` tensors.

  alias Nx.Defn.Expr
  alias Nx.Tensor, as: T

  # Ops a body may use, re-applied with the Nx function of the same name.
  @elementwise Nx.Vulkan.IR.elementwise_ops() -- [:as_type, :bitcast, :reshape]

  @doc "Nx.map/3: the body applied to the whole tensor."
  def map(%T{} = out, tensor, %T{data: %Expr{op: :fun, args: [[_param], body, _mfa]}}) do
    # Nx.BinaryBackend applies the function to elements of the input's type (not the
    # parameter type it was traced with), so the tensor goes in unconverted.
    body
    |> apply_body(%{0 => tensor})
    |> Nx.as_type(out.type)
    |> Nx.broadcast(out.shape)
  end

  @doc """
  Nx.reduce/4: a tree of body applications over halves of the reduced elements.

  Nx.BinaryBackend folds `fun.(x, acc)` from `acc` in order; Nx requires the function
  to be associative and commutative (EXLA and XLA reduce in trees too), under which the
  tree is the same reduction. `acc` enters exactly once, so a non-neutral `acc` counts
  as the sequential fold counts it.
  """
  def reduce(%T{} = out, tensor, acc, opts, %T{data: %Expr{op: :fun, args: [[_, _], body, _]}}) do
    rank = Nx.rank(tensor)
    axes = opts[:axes] || Enum.to_list(0..(rank - 1)//1)
    kept = Enum.to_list(0..(rank - 1)//1) -- axes
    kept_shape = Enum.map(kept, &elem(tensor.shape, &1))
    n = Enum.reduce(axes, 1, &(elem(tensor.shape, &1) * &2))

    rows =
      tensor
      |> Nx.transpose(axes: kept ++ axes)
      |> Nx.reshape(List.to_tuple(kept_shape ++ [n]))

    carry = Nx.broadcast(acc, List.to_tuple(kept_shape))
    combine = fn x, a -> apply_body(body, %{0 => x, 1 => a}) end

    rows
    |> fold_halves(n, carry, combine)
    |> Nx.as_type(out.type)
    |> Nx.reshape(out.shape)
  end

  # Pairs the first half of the last axis with the second until one element is left; an
  # odd element out is folded into the carry.
  defp fold_halves(rows, 1, carry, combine), do: combine.(Nx.squeeze(rows, axes: [-1]), carry)

  defp fold_halves(rows, n, carry, combine) when rem(n, 2) == 1 do
    last = rows |> Nx.slice_along_axis(n - 1, 1, axis: -1) |> Nx.squeeze(axes: [-1])
    fold_halves(Nx.slice_along_axis(rows, 0, n - 1, axis: -1), n - 1, combine.(last, carry), combine)
  end

  defp fold_halves(rows, n, carry, combine) do
    half = div(n, 2)
    lo = Nx.slice_along_axis(rows, 0, half, axis: -1)
    hi = Nx.slice_along_axis(rows, half, half, axis: -1)
    fold_halves(combine.(lo, hi), half, carry, combine)
  end

  # The body with its parameters bound to `params` (index => tensor); each node once.
  defp apply_body(body, params) do
    {result, _cache} = rebuild(body, {params, %{}})
    result
  end

  defp rebuild(%T{data: %Expr{id: id}} = t, {params, cache}) do
    case cache do
      %{^id => value} ->
        {value, {params, cache}}

      %{} ->
        {value, {params, cache}} = rebuild_node(t, {params, cache})
        {value, {params, Map.put(cache, id, value)}}
    end
  end

  defp rebuild_node(%T{data: %Expr{op: :parameter, args: [i]}}, {params, _} = acc),
    do: {Map.fetch!(params, i), acc}

  defp rebuild_node(%T{data: %Expr{op: op}} = t, acc) when op in [:constant, :tensor], do: {t, acc}

  defp rebuild_node(%T{data: %Expr{op: :metadata, args: [x, _]}}, acc), do: rebuild(x, acc)

  defp rebuild_node(%T{data: %Expr{op: :as_type, args: [x]}} = t, acc) do
    {x, acc} = rebuild(x, acc)
    {Nx.as_type(x, t.type), acc}
  end

  defp rebuild_node(%T{data: %Expr{op: op, args: args}} = t, acc) when op in @elementwise do
    {args, acc} = Enum.map_reduce(args, acc, &rebuild/2)
    # Nx computes the type from the operands again; the traced one decides.
    {Nx.as_type(apply(Nx, op, args), t.type), acc}
  end

  # A `cond` on scalars is a select per element: every branch is computed (bodies are
  # element-wise, without side effects) and the first true predicate's value is taken.
  defp rebuild_node(%T{data: %Expr{op: :cond, args: [clauses, %T{} = last]}} = t, acc) do
    if Enum.all?(clauses, &match?({_, %T{}}, &1)) do
      {last, acc} = rebuild(last, acc)

      {clauses, acc} =
        Enum.map_reduce(clauses, acc, fn {pred, body}, acc ->
          {pred, acc} = rebuild(pred, acc)
          {body, acc} = rebuild(body, acc)
          {{pred, body}, acc}
        end)

      value = List.foldr(clauses, last, fn {pred, body}, otherwise -> Nx.select(pred, body, otherwise) end)
      {Nx.as_type(value, t.type), acc}
    else
      unsupported!(:cond)
    end
  end

  defp rebuild_node(%T{data: %Expr{op: op}}, _acc), do: unsupported!(op)

  defp unsupported!(op) do
    raise ArgumentError,
          "Nx.Vulkan compiles the functions given to Nx.map, Nx.reduce and Nx.window_reduce " <>
            "when they are element-wise; this one uses #{inspect(op)}"
  end
end
