defmodule Nx.Vulkan.IR do
  @moduledoc """
  Serialises a traced `Nx.Defn.Expr` container to the JSON IR (`docs/ir.md`).

  Every node carries the type and shape Nx computed; the C++ verifier re-derives
  both, so a disagreement is reported rather than silently compiled.

  The traversal follows EXLA's (`EXLA.Defn`): nodes are visited once per id;
  `while` bodies and conditions become regions whose parameters are the loop
  state; `cond` branches become regions that receive, as captured arguments,
  the values they share with the enclosing scope (`Nx.Defn.Tree.scope_ids/1`)
  or with a sibling branch; `optional` (Nx <= 0.11) and `block` (Nx >= 0.12) become
  the IR op where there is one (see `native_call?/2`), else the default
  implementation they carry, with its parameters bound to the call's arguments;
  `metadata`, tokens and hooks are unwrapped (`Nx.Vulkan.Hooks` runs callbacks).
  """

  alias Nx.Defn.{Composite, Expr, Tree}
  alias Nx.Tensor, as: T

  @unary [:exp, :expm1, :log, :log1p, :sigmoid, :cos, :sin, :tan, :cosh, :sinh, :tanh] ++
           [:acos, :asin, :atan, :acosh, :asinh, :atanh, :sqrt, :rsqrt, :cbrt] ++
           [:erf, :erfc, :erf_inv, :negate, :abs, :sign, :floor, :ceil, :round] ++
           [:bitwise_not, :population_count, :count_leading_zeros] ++
           [:is_nan, :is_infinity, :logical_not, :as_type, :bitcast, :reshape]

  @binary [:add, :subtract, :multiply, :divide, :pow, :remainder, :atan2, :max, :min] ++
            [:quotient, :bitwise_and, :bitwise_or, :bitwise_xor, :left_shift, :right_shift] ++
            [:equal, :not_equal, :greater, :less, :less_equal, :greater_equal] ++
            [:logical_and, :logical_or, :logical_xor]

  # Binary ops whose result type Nx computes with scalar literals weakly typed
  # (`Nx.add(s32, 1)` is s32): see weak_constants/2.
  @arithmetic @binary --
                ([:equal, :not_equal, :greater, :less, :less_equal, :greater_equal] ++
                   [:logical_and, :logical_or, :logical_xor])

  @comparisons [:equal, :not_equal, :greater, :less, :less_equal, :greater_equal]

  @reductions [:sum, :product, :reduce_max, :reduce_min, :all, :any]

  # Hook nodes of Nx 0.13 (`hook`) and of Nx's main branch (`io_call`).
  @hook_ops [:hook, :io_call]

  # `optional` calls that are IR ops themselves (real tensor arguments only: on complex
  # ones the defaults, an `equal` and associative scans, are lowered by Nx.Vulkan.Complex).
  # A scan's default is Nx's associative scan, log2(n) levels of slices, pads and
  # concatenations whose fused kernel grows exponentially with n; the IR's cumulative_*
  # are O(n) scan kernels (codegen/scan.h).
  @scans [:cumulative_sum, :cumulative_product, :cumulative_min, :cumulative_max]
  @native_optionals [:logical_not | @scans]

  # `optional` calls replaced by the unrolled versions in Nx.Vulkan.LinAlg (rank-2
  # matrices): their defaults need gather/scatter and loops.
  @inline_linalg [:solve, :determinant, :cholesky, :lu]
  # Of those, the ones whose defaults Nx.BinaryBackend runs as they are (see call_node/6).
  @evaluator_defaults [:solve, :determinant]

  # The factorisations Nx.BinaryBackend computes itself, in f64 (see inline_factorisation/5).
  @backend_factorisations for {name, arity} <- [eigh: 3, lu: 3, triangular_solve: 4],
                              Code.ensure_loaded?(Nx.BinaryBackend),
                              function_exported?(Nx.BinaryBackend, name, arity),
                              do: name

  @doc """
  Whether an `optional` call named `name` (Nx <= 0.11), or a `block` with struct `name`
  (Nx >= 0.12), on `tensors` becomes IR ops of its own rather than its default
  implementation inlined.
  """
  def native_call?(%_{} = struct, tensors), do: native_call?(block_name(struct), tensors)

  def native_call?(name, tensors) do
    (name in @native_optionals and match?([%{type: type}] when elem(type, 0) != :c, tensors)) or
      (name in @inline_linalg and tensors != [] and Nx.Vulkan.LinAlg.supported?(hd(tensors))) or
      (name == :eigh and Nx.Vulkan.Eigh.supported?(tensors))
  end

  @doc "The IR ops the serialiser emits for Expr ops of the same name."
  def elementwise_ops, do: @unary ++ @binary ++ [:select, :clip]

  @doc """
  Builds the graph of `outputs` (a container of expressions).

  Returns `{graph, used_inputs}`: `graph` is the IR as a map for
  `Nx.Vulkan.JSON.encode/1`; graph parameter `i` is the function's flattened
  input number `Enum.at(used_inputs, i)`. Options: `:name`; `:f32_in_f64` (default
  `false`), whether f32 factorisations are computed in f64 as Nx.BinaryBackend computes
  them. Hooks pass their value on: the caller runs their callbacks (`Nx.Vulkan.Hooks`).
  """
  def build(outputs, opts \\ []) do
    region = new_region(:root, Tree.scope_ids(outputs), nil, Keyword.get(opts, :f32_in_f64, false))

    # Rewrites (sort's gather, Conv, LinAlg, Funs) apply Nx functions to expressions; the
    # literals those create must be expressions too, as while tracing, whatever the
    # caller's default backend.
    {values, [region]} =
      Nx.with_default_backend(Expr, fn ->
        outputs
        |> flat()
        |> Enum.map_reduce([region], &recur/2)
      end)

    {ids, [region]} = flatten_values(values, [region])
    graph = finish(region, ids) |> Map.put(:version, 1) |> Map.put(:name, opts[:name] || "defn")
    {graph, Enum.reverse(region.input_order)}
  end

  ## Regions
  #
  # The state is a stack of regions being built, innermost first. A value is a
  # node id, `{:multi, id, types}` for a node with several results, or
  # `{:tuple, values}` for a container that exists only in Elixir.

  defp new_region(frame, scope_ids, capture, f32_in_f64) do
    %{
      # whether f32 factorisations run in f64, as Nx.BinaryBackend's do (inline_factorisation/5)
      f32_in_f64: f32_in_f64,
      nodes: [],
      next: 0,
      types: %{},
      cache: %{},
      # how `parameter` resolves: :root (function inputs), {context, %{index => value}}, or nil (captured)
      frame: frame,
      inputs: %{},
      input_order: [],
      scope_ids: scope_ids,
      # for cond branches: %{outer: ids, siblings: ids, values: [outer id], params: %{outer id => id}}
      capture: capture
    }
  end

  defp finish(region, outputs) do
    %{nodes: Enum.reverse(region.nodes), outputs: outputs}
  end

  defp emit([r | outer], op, args, result, attrs \\ %{}, regions \\ %{}) do
    id = r.next

    node =
      %{id: id, op: op}
      |> put_unless(:args, args, [])
      |> put_unless(:attrs, attrs, %{})
      |> put_unless(:regions, regions, %{})
      |> Map.merge(result_fields(result))

    {id, [%{r | nodes: [node | r.nodes], next: id + 1, types: record_type(r.types, id, result)} | outer]}
  end

  # The types of single values, which a branch may capture. A `while` or `cond` of one
  # result is a single value too (result_value/2), though emitted with a list of types.
  defp record_type(types, id, [{_, _} = one]), do: Map.put(types, id, one)
  defp record_type(types, id, {_, _} = one), do: Map.put(types, id, one)
  defp record_type(types, _id, several) when is_list(several), do: types

  defp put_unless(map, _key, empty, empty), do: map
  defp put_unless(map, key, value, _empty), do: Map.put(map, key, value)

  # A single {type, shape} or a list of them (for tuple results).
  defp result_fields([{_, _} = one]), do: result_fields(one)
  defp result_fields({type, shape}), do: %{type: type, shape: shape}
  defp result_fields(list) when is_list(list), do: %{results: Enum.map(list, &result_fields/1)}

  defp tensor_type(%T{type: type, shape: shape}), do: stored_type(type, shape)

  @doc """
  The IR type name and dimensions a tensor of `type` and `shape` is stored as: its own, or
  for a complex type its parts' type with a last axis of 2 (`Nx.Vulkan.Complex`).
  """
  def stored_type(type, shape) do
    {type, shape} = Nx.Vulkan.Complex.layout(type, shape)
    {type_name(type), Tuple.to_list(shape)}
  end

  @ir_types [s: 8, s: 16, s: 32, s: 64, u: 8, u: 16, u: 32, u: 64, f: 16, f: 32, f: 64, bf: 16]

  @doc """
  The IR name of an Nx type (`{:f, 32}` → `\"f32\"`); raises for types the IR lacks (Nx
  0.13's 2- and 4-bit integers and 8-bit floats). Complex types are stored as their parts
  (stored_type/2) before they get here.
  """
  # One clause per type: the name is built at compile time, so that a graph's parameters
  # cost no string building per run.
  for {kind, size} <- @ir_types do
    def type_name({unquote(kind), unquote(size)}), do: unquote("#{kind}#{size}")
  end

  def type_name(type),
    do: raise(ArgumentError, "Nx.Vulkan does not support type #{Nx.Type.to_string(type)}")

  ## Traversal

  defp recur(%T{data: %Expr{id: id}} = t, [r | _] = stack) do
    case r.cache do
      %{^id => value} ->
        {value, stack}

      %{} ->
        {value, [r | outer]} =
          if captured?(t, r),
            do: capture(t, stack),
            else: node(Nx.Vulkan.Complex.lower(Nx.devectorize(t)), stack)

        {value, [%{r | cache: Map.put(r.cache, id, value)} | outer]}
    end
  end

  defp recur_all(list, stack), do: Enum.map_reduce(list, stack, &recur/2)

  # Inside a cond branch, values of the enclosing scope (and those a sibling branch
  # also uses) are computed outside and passed in; constants are cheaper to repeat.
  defp captured?(_t, %{capture: nil}), do: false
  defp captured?(%T{data: %Expr{op: :constant}}, _r), do: false
  defp captured?(%T{data: %Expr{op: :parameter}}, %{frame: nil}), do: true

  defp captured?(%T{data: %Expr{id: id, op: op, args: args}}, %{capture: c} = r) do
    Map.has_key?(c.outer, id) or Map.has_key?(c.siblings, id) or
      (op == :elem and captured?(hd(args), r))
  end

  defp capture(t, [r | outer]) do
    {value, outer} = recur(t, outer)
    {ids_value, [o | _] = outer} = split_multi(value, outer)
    {local, r} = capture_value(ids_value, r, o.types)
    {local, [r | outer]}
  end

  # A tuple-producing node crosses into a branch as its separate results.
  defp split_multi({:multi, id, types}, stack) do
    {values, stack} =
      types
      |> Enum.with_index()
      |> Enum.map_reduce(stack, fn {type, i}, stack ->
        emit(stack, "elem", [id], type, %{index: i})
      end)

    {{:tuple, values}, stack}
  end

  defp split_multi({:tuple, values}, stack) do
    {values, stack} = Enum.map_reduce(values, stack, &split_multi/2)
    {{:tuple, values}, stack}
  end

  defp split_multi(id, stack), do: {id, stack}

  defp capture_value({:tuple, values}, r, outer_types) do
    {values, r} = Enum.map_reduce(values, r, &capture_value(&1, &2, outer_types))
    {{:tuple, values}, r}
  end

  defp capture_value(outer_id, %{capture: c} = r, outer_types) do
    case c.params do
      %{^outer_id => local} ->
        {local, r}

      %{} ->
        index = Enum.find_index(c.values, &(&1 == outer_id)) || length(c.values)
        values = if index == length(c.values), do: c.values ++ [outer_id], else: c.values
        type = Map.fetch!(outer_types, outer_id)
        {local, [r]} = emit([r], "parameter", [], type, %{index: index})
        {local, %{r | capture: %{c | values: values, params: Map.put(c.params, outer_id, local)}}}
    end
  end

  ## Nodes

  defp node(%T{data: %Expr{op: :parameter, args: [i], context: context}} = t, [r | _] = stack) do
    case r.frame do
      :root ->
        case r.inputs do
          %{^i => id} ->
            {id, stack}

          %{} ->
            index = map_size(r.inputs)
            {id, [r | outer]} = emit(stack, "parameter", [], tensor_type(t), %{index: index})
            {id, [%{r | inputs: Map.put(r.inputs, i, id), input_order: [i | r.input_order]} | outer]}
        end

      {frame_context, params} when frame_context in [context, :any] ->
        {Map.fetch!(params, i), stack}

      {_, _} ->
        raise ArgumentError,
              "a while loop refers to a value from outside the loop; pass it in the loop state"
    end
  end

  defp node(%T{data: %Expr{op: :constant, args: [value]}} = t, stack) do
    emit(stack, "constant", [], tensor_type(t), %{value: number(value)})
  end

  defp node(%T{data: %Expr{op: :tensor, args: [tensor]}} = t, stack) do
    data = tensor |> Nx.devectorize() |> Nx.to_binary() |> Base.encode64()
    emit(stack, "tensor", [], tensor_type(t), %{data_b64: data})
  end

  defp node(%T{data: %Expr{op: :iota, args: [axis]}} = t, stack),
    do: emit(stack, "iota", [], tensor_type(t), %{axis: axis})

  defp node(%T{data: %Expr{op: :eye, args: []}} = t, stack),
    do: emit(stack, "eye", [], tensor_type(t))

  defp node(%T{data: %Expr{op: op, args: args}} = t, stack) when op in @arithmetic do
    {ids, stack} =
      args |> Enum.map(&(&1 |> weak_constant(t.type) |> integer_operand(t.type))) |> recur_all(stack)

    emit(stack, Atom.to_string(op), ids, tensor_type(t))
  end

  defp node(%T{data: %Expr{op: op, args: [a, b]}} = t, stack) when op in @comparisons do
    {ids, stack} = recur_all([comparison_constant(a, b), comparison_constant(b, a)], stack)
    emit(stack, Atom.to_string(op), ids, tensor_type(t))
  end

  defp node(%T{data: %Expr{op: op, args: args}} = t, stack)
       when op in @unary or op in @binary or op in [:select, :clip] do
    {ids, stack} = recur_all(args, stack)
    emit(stack, Atom.to_string(op), ids, tensor_type(t))
  end

  defp node(%T{data: %Expr{op: op, args: [x, axes]}} = t, stack)
       when op in [:squeeze, :transpose, :reverse] do
    {id, stack} = recur(x, stack)
    emit(stack, Atom.to_string(op), [id], tensor_type(t), %{axes: axes})
  end

  defp node(%T{data: %Expr{op: :broadcast, args: [x, shape, axes]}} = t, stack) do
    {id, stack} = recur(x, stack)
    emit(stack, "broadcast", [id], tensor_type(t), %{shape: Tuple.to_list(shape), axes: axes})
  end

  defp node(%T{data: %Expr{op: :pad, args: [x, value, config]}} = t, stack) do
    {ids, stack} = recur_all([x, value], stack)
    emit(stack, "pad", ids, tensor_type(t), %{config: Enum.map(config, &Tuple.to_list/1)})
  end

  defp node(%T{data: %Expr{op: :slice, args: [x, start, lengths, strides]}} = t, stack) do
    {id, stack} = recur(x, stack)
    {dyn, start, stack} = dynamic_starts(start, 1, stack)
    attrs = %{start: start, lengths: lengths, strides: strides}
    emit(stack, "slice", [id | dyn], tensor_type(t), attrs)
  end

  defp node(%T{data: %Expr{op: :put_slice, args: [x, start, update]}} = t, stack) do
    {ids, stack} = recur_all([x, update], stack)
    {dyn, start, stack} = dynamic_starts(start, 2, stack)
    emit(stack, "put_slice", ids ++ dyn, tensor_type(t), %{start: start})
  end

  defp node(%T{data: %Expr{op: op, args: [list, axis]}} = t, stack)
       when op in [:concatenate, :stack] do
    {ids, stack} = recur_all(list, stack)
    emit(stack, Atom.to_string(op), ids, tensor_type(t), %{axis: axis})
  end

  defp node(%T{data: %Expr{op: :dot, args: [a, c1, b1, b, c2, b2]}} = t, stack) do
    {ids, stack} = recur_all([a, b], stack)

    attrs = %{contract_axes1: c1, batch_axes1: b1, contract_axes2: c2, batch_axes2: b2}
    emit(stack, "dot", ids, tensor_type(t), attrs)
  end

  defp node(%T{data: %Expr{op: :gather, args: [x, indices, opts]}} = t, stack) do
    {ids, stack} = recur_all([x, indices], stack)
    emit(stack, "gather", ids, tensor_type(t), %{axes: opts[:axes]})
  end

  defp node(%T{data: %Expr{op: op, args: [target, indices, updates, opts]}} = t, stack)
       when op in [:indexed_add, :indexed_put] do
    {ids, stack} = recur_all([target, indices, updates], stack)
    emit(stack, Atom.to_string(op), ids, tensor_type(t), %{axes: opts[:axes]})
  end

  # Nx <= 0.11 traces take and take_along_axis as ops of their own; Nx >= 0.12 as blocks
  # whose defaults (inlined like any block's) are these gathers.
  defp node(%T{data: %Expr{op: :take, args: [x, indices, axis]}} = t, stack),
    do: recur(take_as_gather(x, indices, axis, t.shape), stack)

  defp node(%T{data: %Expr{op: :take_along_axis, args: [x, indices, axis]}}, stack),
    do: recur(take_along_axis_as_gather(x, indices, axis), stack)

  defp node(%T{data: %Expr{op: op, args: [x, opts]}} = t, stack) when op in @reductions do
    {id, stack} = recur(x, stack)
    attrs = %{axes: opts[:axes], keep_axes: opts[:keep_axes] || false}

    case {op, x.type, t.type} do
      # The IR sums and multiplies integers in 64 bits, as Nx < 0.9 does; Nx >= 0.9 gives
      # the result 32 bits below s64 (and s64 for u64). Converting the 64-bit result wraps
      # it to what Nx computes.
      {op, {kind, _}, type} when op in [:sum, :product] and kind in [:s, :u] and type != {kind, 64} ->
        {_, shape} = tensor_type(t)
        {id, stack} = emit(stack, Atom.to_string(op), [id], {type_name({kind, 64}), shape}, attrs)
        emit(stack, "as_type", [id], tensor_type(t))

      _ ->
        emit(stack, Atom.to_string(op), [id], tensor_type(t), attrs)
    end
  end

  defp node(%T{data: %Expr{op: op, args: [x, opts]}} = t, stack) when op in [:argmax, :argmin] do
    {id, stack} = recur(x, stack)

    attrs = %{
      axis: opts[:axis],
      keep_axis: opts[:keep_axis] || false,
      tie_break: Atom.to_string(opts[:tie_break] || :low)
    }

    emit(stack, Atom.to_string(op), [id], tensor_type(t), attrs)
  end

  defp node(%T{data: %Expr{op: :elem, args: [tuple, i]}} = t, stack) do
    case recur(tuple, stack) do
      {{:tuple, values}, stack} -> {Enum.fetch!(values, i), stack}
      {{:multi, id, _}, stack} -> emit(stack, "elem", [id], tensor_type(t), %{index: i})
    end
  end

  defp node(%T{data: %Expr{op: :metadata, args: [x, _metadata]}}, stack), do: recur_container(x, stack)

  defp node(%T{data: %Expr{op: :complex_view, args: [x]}}, stack), do: recur(x, stack)

  defp node(%T{data: %Expr{op: :attach_token, args: [_token, x]}}, stack), do: recur(x, stack)

  # Nx >= 0.13: a hook passes its value on (Nx.Vulkan.Hooks runs its callback).
  defp node(%T{data: %Expr{op: op, args: [x | _]}}, stack) when op in @hook_ops, do: recur_container(x, stack)

  defp node(%T{data: %Expr{op: :optional, args: [call, default, _fun]}} = t, stack) do
    %T{data: %Expr{op: name, args: call_args}} = call
    {tensors, opts} = Enum.split_while(call_args, &(not is_list(&1)))
    call_node(name, tensors, opts, default, t, stack)
  end

  defp node(%T{data: %Expr{op: :triangular_solve, args: [a, b, opts]}} = t, stack) do
    tensors = [Nx.as_type(a, t.type), Nx.as_type(b, t.type)]
    inline_factorisation(:triangular_solve, tensors, t, &Nx.Vulkan.LinAlg.triangular_solve(&1, &2, opts), stack)
  end

  defp node(%T{data: %Expr{op: :conv, args: [input, kernel, opts]}} = t, stack),
    do: recur(Nx.Vulkan.Conv.conv(t, input, kernel, opts), stack)

  # The IR's argsort is Nx.BinaryBackend's stable order (whatever `:stable` says), a
  # bitonic network of O(n log^2 n) work per line (codegen/sort.h); sort gathers the values
  # at it, and so does everything Nx builds on them (top_k, median, mode, the SVD's
  # ordering, shuffles, the gradient of sort).
  defp node(%T{data: %Expr{op: :sort, args: [x, opts]}}, stack) do
    order = Nx.argsort(x, axis: opts[:axis], direction: opts[:direction], type: {:s, 32})
    recur(Nx.take_along_axis(x, order, axis: opts[:axis]), stack)
  end

  # Positions of a float type (argsort's :type) are the s64 ones converted.
  defp node(%T{data: %Expr{op: :argsort, args: [x, opts]}, type: {kind, _}} = t, stack) when kind not in [:s, :u] do
    order = Nx.argsort(x, axis: opts[:axis], direction: opts[:direction], type: {:s, 64})
    recur(Nx.as_type(order, t.type), stack)
  end

  defp node(%T{data: %Expr{op: :argsort, args: [x, opts]}} = t, stack) do
    {id, stack} = recur(x, stack)
    attrs = %{axis: opts[:axis], direction: Atom.to_string(opts[:direction] || :asc)}
    emit(stack, "argsort", [id], tensor_type(t), attrs)
  end

  defp node(%T{data: %Expr{op: op, args: [x, window, opts]}} = t, stack)
       when op in [:window_sum, :window_product, :window_max, :window_min],
       do: recur(Nx.Vulkan.Window.aggregate(op, t, x, window, opts), stack)

  defp node(%T{data: %Expr{op: :window_reduce, args: [x, acc, window, opts, fun]}} = t, stack),
    do: recur(Nx.Vulkan.Window.reduce(t, x, acc, window, opts, fun), stack)

  defp node(%T{data: %Expr{op: op, args: [x, source, init, window, opts]}} = t, stack)
       when op in [:window_scatter_max, :window_scatter_min],
       do: recur(Nx.Vulkan.Window.scatter(op, t, x, source, init, window, opts), stack)

  defp node(%T{data: %Expr{op: :map, args: [x, _opts, fun]}} = t, stack),
    do: recur(Nx.Vulkan.Funs.map(t, x, fun, f32_in_f64: hd(stack).f32_in_f64), stack)

  defp node(%T{data: %Expr{op: :reduce, args: [x, acc, opts, fun]}} = t, stack),
    do: recur(Nx.Vulkan.Funs.reduce(t, x, acc, opts, fun), stack)

  # Nx <= 0.10: the backend computes it; Nx.BinaryBackend's factorisation is the reference.
  defp node(%T{data: %Expr{op: :lu, args: [outputs, a, opts]}}, stack),
    do: inline_factorisation(:lu, [a], outputs, &Nx.Vulkan.LinAlg.lu_prepivoted(&1, opts[:eps]), stack)

  # Nx 0.12+: `block(struct, in_args, default, fun)` replaces `optional`; the struct
  # names the operation (`%Nx.Block.LogicalNot{}`, ...).
  defp node(%T{data: %Expr{op: :block, args: [struct, in_args, default, _fun]}} = t, stack) do
    {tensors, opts} = Enum.split_while(in_args, &(not is_list(&1)))
    name = block_name(struct)
    # A scan's block carries its options (axis, reverse) in the struct.
    opts = if name in @scans, do: [Map.to_list(Map.from_struct(struct)) | opts], else: opts
    call_node(name, tensors, opts, default, t, stack)
  end

  defp node(%T{data: %Expr{op: :while, args: [initial, arg, condition, body]}}, stack) do
    {init_ids, stack} = initial |> flat() |> recur_all(stack)
    {init_ids, stack} = flatten_values(init_ids, stack)
    state = flat(arg)
    types = Enum.map(state, &tensor_type(Nx.devectorize(&1)))
    context = hd(state).data.context

    wide = hd(stack).f32_in_f64
    cond_graph = loop_region(context, types, wide, condition, &to_pred(condition, &1))
    body_graph = loop_region(context, types, wide, body, &(body |> flat() |> recur_all(&1)))

    regions = %{condition: cond_graph, body: body_graph}
    {id, stack} = emit(stack, "while", init_ids, types, %{}, regions)
    {result_value(id, types), stack}
  end

  defp node(%T{data: %Expr{op: :cond, args: [clauses, last]}}, [r | _] = stack) do
    {preds, branches} = Enum.unzip(clauses)
    {pred_ids, stack} = Enum.map_reduce(preds, stack, &to_pred/2)
    branches = Enum.map(branches ++ [last], &flat/1)
    types = Enum.map(List.last(branches), &tensor_type(Nx.devectorize(&1)))
    branch_ids = Enum.map(branches, &Tree.scope_ids(List.to_tuple(&1)))

    {graphs, {stack, captured}} =
      branches
      |> Enum.with_index()
      |> Enum.map_reduce({stack, []}, fn {branch, k}, {stack, captured} ->
        siblings = branch_ids |> List.delete_at(k) |> Enum.reduce(%{}, &Map.merge/2)
        c = %{outer: r.scope_ids, siblings: siblings, values: captured, params: %{}}
        branch_region(branch, Enum.at(branch_ids, k), c, stack)
      end)

    regions = for {g, k} <- Enum.with_index(graphs), into: %{}, do: {"branch#{k}", g}
    {id, stack} = emit(stack, "cond", pred_ids ++ captured, types, %{}, regions)
    {result_value(id, types), stack}
  end

  defp node(%T{data: %Expr{op: op}}, _stack) when op in [:token, :fun] do
    raise ArgumentError, "Nx.Vulkan cannot compile a bare #{op} expression"
  end

  defp node(%T{data: %Expr{op: op}}, _stack) do
    raise ArgumentError,
          "Nx.Vulkan cannot compile #{inspect(op)} yet: the IR (docs/ir.md) has no such op"
  end

  ## Helpers

  @block_names %{
    "LogicalNot" => :logical_not,
    "CumulativeSum" => :cumulative_sum,
    "CumulativeProduct" => :cumulative_product,
    "CumulativeMin" => :cumulative_min,
    "CumulativeMax" => :cumulative_max,
    "Solve" => :solve,
    "Determinant" => :determinant,
    "Cholesky" => :cholesky,
    "LU" => :lu
  }

  defp block_name(%module{}), do: Map.get(@block_names, module |> Module.split() |> List.last())
  defp block_name(_other), do: nil

  defp flat(container), do: Composite.flatten_list([container])

  defp recur_container(%T{} = t, stack), do: recur(t, stack)

  defp recur_container(container, stack) do
    {values, stack} = container |> flat() |> recur_all(stack)
    {{:tuple, values}, stack}
  end

  defp result_value(id, [_]), do: id
  defp result_value(id, types), do: {:multi, id, types}

  # The default implementation, with its parameters bound to the call's arguments.
  defp inline_default(tensors, default, stack) do
    {values, [r | outer]} = recur_all(tensors, stack)
    params = values |> Enum.with_index(fn v, i -> {i, v} end) |> Map.new()
    {value, [r2 | outer]} = recur_container(default, [%{r | frame: {:any, params}} | outer])
    {value, [%{r2 | frame: r.frame} | outer]}
  end

  # An optional/block call: the IR op, or the Nx.Vulkan.LinAlg or Nx.Vulkan.Eigh version,
  # where there is one; else its default, inlined.
  defp call_node(name, tensors, opts, default, t, stack) do
    cond do
      not native_call?(name, tensors) ->
        inline_default(tensors, default, stack)

      # Where the device computes f32 as Nx.BinaryBackend does (f32 in f64), the defaults
      # the evaluator runs reproduce its digits, which the faster elimination does not:
      # solve's and determinant's factorise through `qr`/`lu` and `triangular_solve`,
      # computed as the backend computes them (inline_factorisation/5).
      name in @evaluator_defaults and hd(stack).f32_in_f64 ->
        inline_default(tensors, default, stack)

      name in @native_optionals ->
        {ids, stack} = recur_all(tensors, stack)
        emit(stack, Atom.to_string(name), ids, tensor_type(t), native_attrs(name, opts))

      name == :eigh ->
        inline_factorisation(:eigh, tensors, default, &Nx.Vulkan.Eigh.eigh(&1, List.flatten(opts)), stack)

      # P keeps the input's type, L and U have its floating type
      name == :lu ->
        inline_factorisation(:lu, tensors, default, &Nx.Vulkan.LinAlg.lu/1, stack)

      true ->
        tensors = Enum.map(tensors, &Nx.as_type(&1, t.type))
        inline_rewrite(tensors, Function.capture(Nx.Vulkan.LinAlg, name, length(tensors)), stack)
    end
  end

  # A scan's axis (Nx has normalised it, vectorised axes included) and direction.
  defp native_attrs(name, opts) when name in @scans do
    opts = List.flatten(opts)
    %{axis: Keyword.fetch!(opts, :axis), reverse: Keyword.get(opts, :reverse, false)}
  end

  defp native_attrs(_name, _opts), do: %{}

  # A rewrite (Nx.Vulkan.LinAlg, Nx.Vulkan.Eigh) traced over the arguments' templates and
  # inlined with its parameters bound to them: they build `while` loops, which only a
  # trace can.
  defp inline_rewrite(tensors, fun, stack) do
    expr = Nx.Defn.debug_expr_apply(fun, Enum.map(tensors, &Nx.to_template/1))
    inline_default(tensors, expr, stack)
  end

  # Nx.BinaryBackend factorises (eigh and lu up to Nx 0.10, triangular_solve) in Elixir
  # floats, f64, whatever the input's type: an f32 factorisation has the evaluator's digits
  # only when it too runs in f64 and is rounded once. Done where the device's f64 costs
  # about what f32 does (the native `computes_f32_in_f64`, which the code generator applies
  # to elementwise ops).
  # `out` is the call's output container, whose types the results are rounded to.
  defp inline_factorisation(name, tensors, out, fun, [%{f32_in_f64: true} | _] = stack)
       when name in @backend_factorisations do
    if Enum.any?(tensors, &(Nx.Type.to_floating(&1.type) == {:f, 32})) do
      wide = Enum.map(tensors, &Nx.as_type(&1, Nx.Type.merge(&1.type, {:f, 64})))
      expr = Nx.Defn.debug_expr_apply(fun, Enum.map(wide, &Nx.to_template/1))
      {narrowed, []} = Composite.traverse(expr, flat(out), fn e, [o | rest] -> {Nx.as_type(e, o.type), rest} end)
      inline_default(wide, narrowed, stack)
    else
      inline_rewrite(tensors, fun, stack)
    end
  end

  defp inline_factorisation(_name, tensors, _out, fun, stack), do: inline_rewrite(tensors, fun, stack)

  # Nx 0.13's Nx.Block.Take default: gather along `axis` with each index as a vector of one
  # component, then move the indices' axes to where `axis` was.
  defp take_as_gather(x, indices, axis, out_shape) do
    rank = Nx.rank(indices)
    {indices_axes, x_axes} = Enum.split(Nx.axes(out_shape), rank)
    {leading, trailing} = Enum.split(x_axes, axis)

    x
    |> Nx.gather(Nx.new_axis(indices, rank), axes: [axis])
    |> Nx.transpose(axes: leading ++ indices_axes ++ trailing)
  end

  # Nx 0.13's Nx.Block.TakeAlongAxis default: a full index vector per element, the given
  # index on `axis` and the element's own position (an iota) on the others.
  defp take_along_axis_as_gather(x, indices, axis) do
    shape = List.to_tuple(Tuple.to_list(indices.shape) ++ [1])
    # The positions in at least 32 bits (u8 indices may address a longer axis than 255).
    type = Nx.Type.merge(indices.type, {:s, 32})

    indices
    |> Nx.axes()
    |> Enum.map(fn
      ^axis -> Nx.reshape(indices, shape)
      other -> Nx.iota(shape, axis: other, type: type, backend: Expr)
    end)
    |> Nx.concatenate(axis: Nx.rank(indices))
    |> then(&Nx.gather(x, &1))
  end

  # Preds are u8 scalars in the IR; Nx accepts any scalar (nonzero is true).
  defp to_pred(%T{type: {:u, 8}} = pred, stack), do: recur(pred, stack)

  defp to_pred(%T{type: type} = pred, stack) do
    {id, stack} = recur(pred, stack)
    zero = if Nx.Type.float?(type), do: 0.0, else: 0
    {zero_id, stack} = emit(stack, "constant", [], {type_name(type), []}, %{value: zero})
    emit(stack, "not_equal", [id, zero_id], {"u8", []})
  end

  defp loop_region(context, types, f32_in_f64, expr, fun) do
    {params, stack} =
      types
      |> Enum.with_index()
      |> Enum.map_reduce([new_region(nil, %{}, nil, f32_in_f64)], fn {type, i}, stack ->
        emit(stack, "parameter", [], type, %{index: i})
      end)

    frame = {context, params |> Enum.with_index(fn id, i -> {i, id} end) |> Map.new()}
    [r] = stack
    {values, stack} = fun.([%{r | frame: frame, scope_ids: Tree.scope_ids(expr)}])
    {ids, [r]} = flatten_values(List.wrap(values), stack)
    finish(r, ids)
  end

  defp branch_region(branch, scope_ids, capture, stack) do
    region = new_region(nil, scope_ids, capture, hd(stack).f32_in_f64)
    {values, [r | stack]} = recur_all(branch, [region | stack])
    {ids, [r | stack]} = flatten_values(values, [r | stack])
    {finish(r, ids), {stack, r.capture.values}}
  end

  defp flatten_values(values, stack) do
    {values, stack} = Enum.map_reduce(values, stack, &split_multi/2)
    {Enum.flat_map(values, &leaves/1), stack}
  end

  defp leaves({:tuple, values}), do: Enum.flat_map(values, &leaves/1)
  defp leaves(id) when is_integer(id), do: [id]

  # Slice starts: integers stay, tensors become extra arguments `{"arg": k}`.
  defp dynamic_starts(start, first_arg, stack) do
    {start, {dyn, stack}} =
      Enum.map_reduce(start, {[], stack}, fn
        s, acc when is_integer(s) ->
          {s, acc}

        s, {dyn, stack} ->
          {id, stack} = recur(s, stack)
          {%{arg: first_arg + length(dyn)}, {dyn ++ [id], stack}}
      end)

    {dyn, start, stack}
  end

  # A number literal in `Nx.add(t, 1)` becomes an s64 (or f32) scalar constant in
  # the Expr, yet Nx types the result as if it took t's type (Nx.Type.merge_number).
  # The IR derives result types with Nx.Type.merge only, so the literal is given the
  # result type, which is also what the operation converts it to.
  defp weak_constant(%T{shape: {}, type: type, data: %Expr{op: :constant, args: [value]}} = c, out)
       when type != out and (is_integer(value) or elem(out, 0) in [:f, :bf]) do
    # The literal has its own type's precision first (Nx writes `1.0e15` as an f32
    # constant even when the result is f64), then the result type.
    value = value |> round_to(type) |> convert(out)
    with_value(c, value, out)
  end

  # A literal combined with a vectorised tensor arrives reshaped to the tensor's rank
  # (sizes 1); the reshape takes the literal's weak type with it.
  defp weak_constant(%T{data: %Expr{op: :reshape, args: [%T{shape: {}} = c]} = data} = r, out) do
    case weak_constant(c, out) do
      ^c -> r
      weak -> %{r | type: weak.type, data: %{data | id: {:weak, data.id, weak.type}, args: [weak]}}
    end
  end

  defp weak_constant(arg, _out), do: arg

  # Integer arithmetic happens in the result's type, as in Nx.BinaryBackend. A number
  # reaches an eager Nx.Vulkan.Backend call as an s64 tensor whose type the result does not
  # take (`Nx.add(u8, -1)` is s16): converted here, as the IR merges operand types.
  defp integer_operand(%T{type: type} = arg, {kind, _} = out) when kind in [:s, :u] and type != out,
    do: Nx.as_type(arg, out)

  defp integer_operand(arg, _out), do: arg

  # An integer literal compared with an integer tensor (`x > 1`) is compared in the
  # tensor's type when it fits there: the same result as comparing in the merged type
  # (Nx's s64 for the literal), with no mixed-width comparison on the device.
  defp comparison_constant(%T{shape: {}, type: {k, _} = type, data: %Expr{op: :constant, args: [v]}} = c, %T{
         type: {ok, _} = other
       })
       when is_integer(v) and k in [:s, :u] and ok in [:s, :u] and type != other do
    if fits?(v, other), do: with_value(c, v, other), else: c
  end

  defp comparison_constant(arg, _other), do: arg

  defp fits?(v, {:s, bits}), do: v >= -Integer.pow(2, bits - 1) and v < Integer.pow(2, bits - 1)
  defp fits?(v, {:u, bits}), do: v >= 0 and v < Integer.pow(2, bits)

  defp with_value(c, value, type),
    do: %{c | type: type, data: %{c.data | id: {value, type, {}}, args: [value]}}

  defp round_to(value, {kind, _} = type) when is_float(value) and kind in [:f, :bf] do
    Nx.tensor(value, type: type, backend: Nx.BinaryBackend) |> Nx.to_number()
  end

  defp round_to(value, _type), do: value

  # (Nx picks an integer result type wide enough for an integer literal.)
  defp convert(value, {kind, _}) when kind in [:f, :bf] and is_integer(value), do: value * 1.0
  defp convert(value, _type), do: value

  defp number(:nan), do: "nan"
  defp number(:infinity), do: "inf"
  defp number(:neg_infinity), do: "-inf"
  defp number(n) when is_integer(n), do: n

  defp number(f) when is_float(f) do
    case <<f::float>> do
      <<1::1, 0::63>> -> "-0.0"
      _ -> f
    end
  end

  defp number(%Complex{}), do: raise(ArgumentError, "Nx.Vulkan does not support complex constants")
end
