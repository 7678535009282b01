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

  # Of those, the ones whose operands Nx converts to the result's type (not comparisons,
  # logical ops and predicates, whose results are u8; not the bit counts; `select` apart).
  @same_type @elementwise --
               ([:equal, :not_equal, :greater, :less, :less_equal, :greater_equal] ++
                  [:logical_and, :logical_or, :logical_xor, :logical_not, :is_nan, :is_infinity] ++
                  [:population_count, :count_leading_zeros, :select])

  @doc """
  Nx.map/3: the body applied to the whole tensor, computed as Nx.Defn.Evaluator computes it.

  Nx traces the body on a parameter of the result type (`:type`, by default the input's),
  but the evaluator (Nx.BinaryBackend's map) hands it the input's elements unconverted and
  evaluates each node of the body at the type it was traced with, from its operands'
  values: so the input goes in unconverted, and each node is computed in a type that holds
  both its operands and its traced type, then converted to the latter (see rebuild_node/2).
  `Nx.map(f32, [type: :f64], &Nx.exp/1)` is then an f64 exp of the f32 values, and a
  narrower `:type` sees the wider input (`0.33 > 0` is true for an f32 element whatever
  the result type). Option `:f32_in_f64`: the device computes f32 in f64 (lavapipe), and
  integer operands beyond a float's exact range are computed in f64, as the evaluator
  computes them from exact integers.
  """
  def map(%T{} = out, tensor, %T{data: %Expr{op: :fun, args: [[_param], body, _mfa]}}, opts \\ []) do
    body
    |> apply_body(%{0 => tensor}, Keyword.get(opts, :f32_in_f64, false))
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
    combine = fn x, a -> apply_body(body, %{0 => x, 1 => a}, false) end

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
  # `wide?`: integer operands that a float type cannot hold exactly are computed in f64.
  defp apply_body(body, params, wide?) do
    {result, _cache} = rebuild(body, {%{params: params, wide: wide?}, %{}})
    result
  end

  defp rebuild(%T{data: %Expr{id: id}} = t, {env, cache}) do
    case cache do
      %{^id => value} ->
        {value, {env, cache}}

      %{} ->
        {value, {env, cache}} = rebuild_node(t, {env, cache})
        {value, {env, Map.put(cache, id, value)}}
    end
  end

  defp rebuild_node(%T{data: %Expr{op: :parameter, args: [i]}}, {env, _} = acc),
    do: {Map.fetch!(env.params, i), acc}

  defp rebuild_node(%T{data: %Expr{op: op}} = t, acc) when op in [:constant, :tensor], do: {t, acc}

  defp rebuild_node(%T{data: %Expr{op: :metadata, args: [x, _]}}, acc), do: rebuild(x, acc)

  defp rebuild_node(%T{data: %Expr{op: :as_type, args: [x]}} = t, acc) do
    {x, acc} = rebuild(x, acc)
    {Nx.as_type(x, t.type), acc}
  end

  # Nx.Defn.Evaluator computes each node from its operands' values (Elixir integers and
  # doubles) and writes the result at the node's traced type. Operands arrive at their
  # own types (a map's parameter at the input's, which may be narrower or wider than the
  # type the body was traced with), so ops whose operands Nx converts to the result's type
  # convert them to a type holding both (`Nx.exp` traced at f64 on an f32 value is an f64
  # exp, as the evaluator computes it) before the result is converted to the traced type.
  # Literals keep their types, as Nx typed them against the traced operands.
  defp rebuild_node(%T{data: %Expr{op: op, args: args}} = t, {env, _} = acc) when op in @same_type do
    {args, acc} = Enum.map_reduce(args, acc, &rebuild/2)
    args = widen(args, t.type, env.wide)
    {Nx.as_type(apply(Nx, op, args), t.type), acc}
  end

  defp rebuild_node(%T{data: %Expr{op: :select, args: [pred | values]}} = t, {env, _} = acc) do
    {[pred | values], acc} = Enum.map_reduce([pred | values], acc, &rebuild/2)
    {Nx.as_type(apply(Nx, :select, [pred | widen(values, t.type, env.wide)]), t.type), acc}
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

  defp widen(args, type, wide?) do
    computed = args |> Enum.reject(&literal?/1) |> Enum.reduce(type, &Nx.Type.merge(&1.type, &2))

    computed =
      if wide? and Nx.Type.float?(computed) and computed != {:f, 64} and
           Enum.any?(args, &(not literal?(&1) and not exact_in?(&1.type, computed))),
         do: {:f, 64},
         else: computed

    Enum.map(args, fn arg -> if literal?(arg), do: arg, else: Nx.as_type(arg, computed) end)
  end

  defp literal?(%T{data: %Expr{op: op}}), do: op in [:constant, :tensor]
  defp literal?(_), do: false

  # Whether every value of integer type `int` is exact in float type `float`.
  defp exact_in?({kind, bits}, {_, _} = float) when kind in [:s, :u] do
    value_bits = if kind == :s, do: bits - 1, else: bits
    value_bits <= mantissa_bits(float)
  end

  defp exact_in?(_type, _float), do: true

  defp mantissa_bits({:f, 16}), do: 11
  defp mantissa_bits({:bf, 16}), do: 8
  defp mantissa_bits({:f, 32}), do: 24
  defp mantissa_bits(_), do: 53

  defp unsupported!(op) do
    raise ArgumentError,
          "Nx.Vulkan compiles the functions given to Nx.map, Nx.reduce and Nx.window_reduce " <>
            "when they are element-wise; this one uses #{inspect(op)}"
  end
end
