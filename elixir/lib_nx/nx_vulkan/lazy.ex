defmodule Nx.Vulkan.Lazy do
  @moduledoc false
  # Lazy tensors of Nx.Vulkan.Backend (`lazy: true`).
  #
  # A lazy tensor's data is `%Nx.Vulkan.Backend{buffer: nil, cell: cell}`. A value of at
  # most `:lazy_host_size` elements (when it was made) held on the host from the start (a
  # constant, a tensor made from a binary, the result of an operation run on the host)
  # never changes, so `cell` is `{:host, binary}` itself. Otherwise it is a NIF cell
  # (Nx.Vulkan.Native.cell_new/1), shared by every copy of the tensor in any process,
  # holding one of
  #
  #   {:pending, name, fun, args, depth, seen} - `fun` (the callback's Nx.Defn.Expr
  #       function) applied to `args` (containers of tensors and numbers, as the eager
  #       backend gives Nx.Defn.jit_apply/3); `depth` the longest chain of pending nodes
  #       it depends on, itself included (bounded by :lazy_max_depth); `seen` once a
  #       flush computed it without keeping it
  #   {:value, buffer} - computed (or uploaded)
  #   {:host, binary} - a constant, or a small value computed for a read; graphs that
  #       read it get it as a host argument
  #   :deallocated
  #
  # A flush collects the pending nodes the tensors asked for depend on and compiles them,
  # with Nx.Vulkan, as one graph whose parameters are the computed tensors they read
  # (one per buffer or cell), whose outputs are the tensors asked for and the nodes an
  # earlier flush computed without keeping that a node no flush computed yet reads (so a
  # value needed again is kept the second time it is computed, and one nobody reads again
  # never gets a buffer). It is compiled once per structure: the callbacks' functions,
  # whose closures hold their output templates and options, the positions of parameters
  # and nodes, the outputs and the parameters' templates, never the tensors; a loop that
  # repeats the same operations runs the same executable. A computed node's cell drops
  # its expression, so nothing keeps the tensors it was computed from. Cells change from
  # pending only (cell_put_if), so of two processes computing one node the first result
  # stands and a deallocation is never undone.

  alias Nx.Tensor, as: T
  alias Nx.Vulkan.{Backend, Device, Error, LockedCache, Native}

  # At most this many bytes of outputs come to the host with a read.
  @host_bytes 65_536

  @doc "Whether any tensor in the (flat) list is lazy."
  def lazy?(tensors), do: Enum.any?(tensors, &match?(%T{data: %Backend{cell: cell}} when cell != nil, &1))

  @doc "A lazy tensor of `out` holding the computed `buffer`."
  def from_buffer(out, buffer, config), do: wrap(out, {:value, buffer}, config)

  @doc "A lazy tensor of `out` whose value is the host `binary` until a graph reads it."
  def from_host(out, binary, config) do
    if host_sized?(Nx.size(out)), do: host_value(out, binary, config), else: wrap(out, {:host, binary}, config)
  end

  @doc "The host value `binary` of `out`, of at most `:lazy_host_size` elements."
  def host_value(out, binary, config), do: %{out | data: %Backend{buffer: nil, device: config, cell: {:host, binary}}}

  @doc """
  Whether a tensor of `size` elements made from a binary is kept on the host, where the
  operations small enough to run there (`on_host/2`) read it without a device round trip.
  """
  def host_sized?(size), do: size <= host_size()

  # Read per operation: Erlang's own lookup, without Elixir's checks around it.
  defp host_size, do: :application.get_env(:nx_vulkan, :lazy_host_size, 64)

  @doc """
  The binary of an operation run now on the host, `{:ok, binary}`: `host`, a function
  computing it on Nx.BinaryBackend from its operands' `host!/1`, applied when the
  operation's `work` (elements as Nx.Vulkan.Backend counts them) is at most
  `:lazy_host_size` and every operand holds its value on the host. `:device` otherwise, and where
  Nx.BinaryBackend raises (a division by zero, an overflow, an index out of range): the
  device's result is the backend's there.
  """
  def on_host(host, work) do
    if work <= host_size() do
      try do
        %T{data: %Nx.BinaryBackend{state: binary}} = host.()
        {:ok, binary}
      rescue
        _ -> :device
      catch
        :device -> :device
      end
    else
      :device
    end
  end

  @doc """
  An operand of `on_host/2`'s function: a lazy tensor's host value as an Nx.BinaryBackend
  tensor (throws `:device` for one on the device); anything else as it is.
  """
  def host!(%T{data: %Backend{cell: {:host, binary}}} = t), do: %{t | data: %Nx.BinaryBackend{state: binary}}

  def host!(%T{data: %Backend{cell: nil}}), do: throw(:device)

  def host!(%T{data: %Backend{cell: cell}} = t) do
    case get(cell) do
      {:host, binary} -> %{t | data: %Nx.BinaryBackend{state: binary}}
      _ -> throw(:device)
    end
  end

  def host!(other), do: other

  @doc """
  The binary of `op` (`:add`, `:subtract`, `:multiply`, `:divide`) of two f32 or f64
  operands of `size` bits, each `{shape, binary}`, a scalar or of the result's `shape`:
  each element read as an Erlang float, the same Erlang operation as Nx.BinaryBackend's,
  the result written at `size` bits, as it writes it. Without Nx.BinaryBackend's general
  broadcasting and type conversion, several times faster on the scalars and small vectors
  a sampler's control values are. `:error` for other shapes, a NaN or an infinity (which
  match no float segment) and an overflow, which are Nx.BinaryBackend's to compute.
  """
  def float_arithmetic(op, size, shape, {left_shape, left}, {right_shape, right}) do
    with {:ok, left, right} <- same_size(left_shape, left, right_shape, right, shape) do
      try do
        {:ok, each(op, size, left, right, <<>>)}
      rescue
        _ -> :error
      end
    end
  end

  defp same_size(shape, left, shape, right, shape), do: {:ok, left, right}
  defp same_size({}, left, shape, right, shape), do: {:ok, :binary.copy(left, Nx.size(shape)), right}
  defp same_size(shape, left, {}, right, shape), do: {:ok, left, :binary.copy(right, Nx.size(shape))}
  defp same_size(_, _, _, _, _), do: :error

  defp each(_op, _size, <<>>, <<>>, acc), do: acc

  defp each(op, 64, <<x::float-native-64, xs::binary>>, <<y::float-native-64, ys::binary>>, acc),
    do: each(op, 64, xs, ys, <<acc::binary, arithmetic(op, x, y)::float-native-64>>)

  defp each(op, 32, <<x::float-native-32, xs::binary>>, <<y::float-native-32, ys::binary>>, acc),
    do: each(op, 32, xs, ys, <<acc::binary, arithmetic(op, x, y)::float-native-32>>)

  defp arithmetic(:add, x, y), do: x + y
  defp arithmetic(:subtract, x, y), do: x - y
  defp arithmetic(:multiply, x, y), do: x * y
  defp arithmetic(:divide, x, y), do: x / y

  @doc "Whether the tensors are lazy values on the host of at most `:lazy_host_size` elements."
  def small_on_host?(tensors) do
    tensors != [] and
      Enum.all?(tensors, fn
        %T{data: %Backend{cell: cell}} = t when cell != nil ->
          Nx.size(t) <= host_size() and match?({:host, _}, get(cell))

        _ ->
          false
      end)
  end

  @doc "The lazy form of an eager tensor (the same buffer)."
  def lazy(%T{data: %Backend{cell: nil, buffer: buffer, device: config}} = t),
    do: from_buffer(t, buffer, config)

  def lazy(%T{} = t), do: t

  defp wrap(out, state, config) do
    %{out | data: %Backend{buffer: nil, device: config, cell: Error.unwrap!(Native.cell_new(state))}}
  end

  @doc """
  The tensor of template `out` that `fun` applied to `args` computes, pending. `tensors`
  are the tensors among `args`.
  """
  def defer(name, out, fun, tensors, args, config) do
    inputs =
      tensors
      |> Enum.filter(&match?(%T{data: %Backend{cell: cell}} when cell != nil, &1))
      |> Enum.uniq_by(& &1.data.cell)

    depth =
      Enum.reduce(inputs, 1, fn %T{data: %Backend{cell: cell, device: device}} = t, acc ->
        case pending_depth(cell) do
          false ->
            acc

          depth ->
            # pending work of another VkDevice is computed there, then copied as an argument
            if Device.same?(device, config), do: max(acc, depth + 1), else: sync([t], :device) && acc
        end
      end)

    depth =
      if depth > max_depth() do
        sync(inputs, :bound)
        1
      else
        depth
      end

    wrap(out, {:pending, name, fun, args, depth, false}, config)
  end

  defp max_depth, do: Application.get_env(:nx_vulkan, :lazy_max_depth, 256)

  @doc """
  The eager form of a tensor: a computed lazy tensor's buffer as an eager
  `Nx.Vulkan.Backend` tensor, a host constant as an `Nx.BinaryBackend` tensor; anything
  else unchanged. Flushes a pending tensor first.
  """
  def eager(%T{data: %Backend{cell: nil}} = t), do: t

  def eager(%T{data: %Backend{cell: cell, device: config}} = t) do
    case get(cell) do
      {:value, buffer} -> %{t | data: %Backend{buffer: buffer, device: config}}
      {:host, binary} -> %{t | data: %Nx.BinaryBackend{state: binary}}
      :deallocated -> freed!()
      {:pending, _, _, _, _, _} -> sync([t], :read) && eager(t)
    end
  end

  def eager(other), do: other

  @doc "Releases a lazy tensor's buffer or pending work."
  def deallocate(%T{data: %Backend{cell: {:host, _}}}), do: :ok

  def deallocate(%T{data: %Backend{cell: cell}}) do
    case get(cell) do
      {:value, buffer} ->
        Error.unwrap!(Native.free(buffer))

      :deallocated ->
        :already_deallocated

      _ ->
        # (a value computed meanwhile is freed with the cell)
        put(cell, :deallocated)
        :ok
    end
  end

  @doc """
  Computes every pending tensor in `tensors` (one graph per device), `reason` naming
  what asked for it in the `[:nx_vulkan, :lazy, :flush]` event.
  """
  def sync(tensors, reason) do
    tensors
    |> Enum.filter(fn
      %T{data: %Backend{cell: cell}} when cell != nil -> pending_depth(cell) != false
      _ -> false
    end)
    |> Enum.group_by(& &1.data.device)
    |> Enum.each(fn {config, roots} -> flush(roots, config, reason) end)

    true
  end

  ## Flushing

  defp flush(roots, config, reason) do
    start = System.monotonic_time()

    state = %{
      nodes: %{},
      leaves: %{},
      leaf_values: [],
      leaf_count: 0,
      steps: [],
      step_count: 0,
      computed: [],
      bytes: %{},
      read_by_new: MapSet.new()
    }

    {root_refs, state} = Enum.map_reduce(roots, state, &visit/2)

    root_nodes = for {:node, j} <- root_refs, uniq: true, do: j
    # Nodes an earlier flush computed without keeping, read by a node that no flush has
    # computed yet: needed again, they are kept now. (The nodes they are computed from
    # are computed again inside this graph, not kept.)
    again =
      for {j, _cell, {:pending, _, _, _, _, true}} <- state.computed,
          MapSet.member?(state.read_by_new, j),
          do: j

    outputs = Enum.uniq(root_nodes ++ Enum.sort(again))

    steps = state.steps |> Enum.reverse() |> List.to_tuple()
    leaves = state.leaf_values |> Enum.reverse() |> List.to_tuple()
    cells = Map.new(state.computed, fn {j, cell, node} -> {j, {cell, node}} end)

    # A read of small values takes them (and the values kept with them) to the host in the
    # run itself, without a download each: they stay there until a graph reads them,
    # which gets them as arguments.
    output =
      if reason == :read and Enum.sum(Enum.map(outputs, &Map.fetch!(state.bytes, &1))) <= @host_bytes,
        do: :host,
        else: :device

    results =
      try do
        run(steps, outputs, leaves, config, output)
      rescue
        exception -> replay_eagerly(steps, outputs, leaves, config, exception, __STACKTRACE__)
      end

    Enum.zip_with(outputs, Tuple.to_list(results), fn j, result ->
      {cell, _} = Map.fetch!(cells, j)

      case result do
        %T{data: %Backend{buffer: buffer}} -> put_pending(cell, {:value, buffer})
        %T{data: %Nx.BinaryBackend{state: binary}} -> put_pending(cell, {:host, binary})
      end
    end)

    kept = MapSet.new(outputs)

    # The depths of the nodes computed but not kept, now that this flush kept some of
    # the nodes they depend on.
    depths =
      steps
      |> Tuple.to_list()
      |> Enum.with_index()
      |> Enum.reduce(%{}, fn {{_, _, args}, j}, depths ->
        pending = args |> node_refs(MapSet.new()) |> Enum.reject(&MapSet.member?(kept, &1))
        Map.put(depths, j, Enum.reduce(pending, 1, &max(Map.fetch!(depths, &1) + 1, &2)))
      end)

    for {j, cell, {:pending, name, fun, args, depth, seen}} <- state.computed,
        not MapSet.member?(kept, j),
        not seen or depth != Map.fetch!(depths, j) do
      put_pending(cell, {:pending, name, fun, args, Map.fetch!(depths, j), true})
    end

    :telemetry.execute(
      [:nx_vulkan, :lazy, :flush],
      %{
        nodes: state.step_count,
        outputs: length(outputs),
        parameters: state.leaf_count,
        duration: System.monotonic_time() - start
      },
      %{reason: reason, ops: steps |> Tuple.to_list() |> Enum.map(&elem(&1, 0))}
    )
  end

  # The graph, compiled by Nx.Vulkan once per structure: the steps (the callbacks'
  # functions, whose closures hold their output templates and options, and the positions
  # of their arguments), the outputs and the parameters' templates; never the tensors.
  # (Both outputs share one executable, cached by Nx.Vulkan under `key`.)
  defp run(steps, outputs, leaves, config, output) do
    leaves = Tuple.to_list(leaves)
    templates = Enum.map(leaves, &Nx.to_template/1)
    key = {__MODULE__, steps, outputs, templates}

    {_, compiled} =
      LockedCache.run({key, config, output}, fn ->
        vars = templates |> Enum.with_index(&Nx.Defn.Expr.parameter(&1, :root, &2)) |> List.to_tuple()
        opts = [output: output, cache: false] ++ config
        Nx.Vulkan.__compile__(key, [vars], &trace(steps, outputs, &1), opts)
      end)

    [results] = compiled.([leaves])
    results
  end

  # As Nx.Defn's tracing: numbers the callbacks' functions make are Nx.Defn.Expr constants.
  defp trace(steps, outputs, [leaves]) do
    pdict_key = Nx.Shared.backend_pdict_key()
    previous_backend = Process.put(pdict_key, {Nx.Defn.Expr, []})
    previous_compiler = Process.put(Nx.Defn.Compiler, Nx.Vulkan)

    try do
      results =
        steps
        |> Tuple.to_list()
        |> Enum.reduce({}, fn {_name, fun, args}, results ->
          Tuple.insert_at(results, tuple_size(results), apply(fun, subst(args, leaves, results)))
        end)

      outputs |> Enum.map(&Nx.Defn.Expr.tensor(elem(results, &1))) |> List.to_tuple()
    after
      restore(pdict_key, previous_backend)
      restore(Nx.Defn.Compiler, previous_compiler)
    end
  end

  defp restore(key, nil), do: Process.delete(key)
  defp restore(key, value), do: Process.put(key, value)

  # The graph failed as a whole: each operation alone, as the eager backend runs it, so
  # that an error is the one the operation that causes it raises eagerly. If none fails,
  # their results stand, and the graph's error is reported as a telemetry event.
  defp replay_eagerly(steps, outputs, leaves, config, exception, stacktrace) do
    if match?(%Error{kind: kind} when kind in [:timeout, :device_lost], exception) do
      reraise exception, stacktrace
    end

    results =
      steps
      |> Tuple.to_list()
      |> Enum.reduce({}, fn {name, fun, args}, results ->
        opts = [compiler: Nx.Vulkan, on_conflict: :force] ++ config

        result =
          try do
            Nx.Defn.jit_apply(fun, subst(args, leaves, results), opts)
          rescue
            exception -> reraise attribute(exception, name), __STACKTRACE__
          end

        Tuple.insert_at(results, tuple_size(results), result)
      end)

    :telemetry.execute([:nx_vulkan, :lazy, :fallback], %{nodes: tuple_size(steps)}, %{exception: exception})
    outputs |> Enum.map(&elem(results, &1)) |> List.to_tuple()
  end

  defp node_refs({:node, j}, set), do: MapSet.put(set, j)
  defp node_refs({:tuple, list}, set), do: node_refs(list, set)
  defp node_refs(list, set) when is_list(list), do: Enum.reduce(list, set, &node_refs/2)
  defp node_refs({:leaf, _}, set), do: set

  defp subst(args, leaves, results) when is_list(args), do: Enum.map(args, &subst(&1, leaves, results))
  defp subst({:leaf, i}, leaves, _results), do: elem(leaves, i)
  defp subst({:node, j}, _leaves, results), do: elem(results, j)
  defp subst({:tuple, list}, leaves, results), do: list |> subst(leaves, results) |> List.to_tuple()

  # Post-order: a pending tensor's arguments get their step or leaf before it.
  defp visit(%T{data: %Backend{cell: nil, buffer: buffer}} = t, state), do: leaf({:buffer, buffer}, t, state)

  # A host value held in the tensor has no identity to share a parameter by (its bytes
  # could be another tensor's, of another shape): one parameter per occurrence.
  defp visit(%T{data: %Backend{cell: {:host, binary}}} = t, state),
    do: leaf(nil, %{t | data: %Nx.BinaryBackend{state: binary}}, state)

  defp visit(%T{data: %Backend{cell: cell, device: config}} = t, state) do
    case state.nodes do
      %{^cell => ref} ->
        {ref, state}

      %{} ->
        case get(cell) do
          {:value, buffer} ->
            leaf({:cell, cell}, %{t | data: %Backend{buffer: buffer, device: config}}, state)

          {:host, binary} ->
            leaf({:cell, cell}, %{t | data: %Nx.BinaryBackend{state: binary}}, state)

          :deallocated ->
            freed!()

          {:pending, name, fun, args, _depth, seen} = node ->
            {args, state} =
              try do
                Enum.map_reduce(args, state, &visit/2)
              rescue
                exception -> reraise attribute(exception, name), __STACKTRACE__
              end

            state = if seen, do: state, else: %{state | read_by_new: node_refs(args, state.read_by_new)}
            j = state.step_count
            ref = {:node, j}

            state = %{
              state
              | steps: [{name, fun, args} | state.steps],
                step_count: j + 1,
                nodes: Map.put(state.nodes, cell, ref),
                bytes: Map.put(state.bytes, j, Nx.byte_size(t)),
                computed: [{j, cell, node} | state.computed]
            }

            {ref, state}
        end
    end
  end

  defp visit(%T{} = t, state), do: leaf(nil, t, state)

  defp visit(number, state) when is_number(number),
    do: leaf(nil, Nx.tensor(number, backend: Nx.BinaryBackend), state)

  defp visit(tuple, state) when is_tuple(tuple) do
    {list, state} = tuple |> Tuple.to_list() |> Enum.map_reduce(state, &visit/2)
    {{:tuple, list}, state}
  end

  defp visit(other, state), do: leaf(nil, other, state)

  # One parameter per buffer (or cell); other tensors and numbers one each.
  defp leaf(key, value, state) do
    case key && state.leaves do
      %{^key => ref} ->
        {ref, state}

      _ ->
        i = state.leaf_count
        ref = {:leaf, i}
        leaves = if key, do: Map.put(state.leaves, key, ref), else: state.leaves
        {ref, %{state | leaves: leaves, leaf_values: [value | state.leaf_values], leaf_count: i + 1}}
    end
  end

  # The exception, its message naming the pending operation that raised it (once: the
  # innermost one).
  defp attribute(%{message: message} = exception, name) when is_binary(message) do
    if String.contains?(message, "(lazy Nx.Vulkan.Backend operation"),
      do: exception,
      else: %{exception | message: message <> " (lazy Nx.Vulkan.Backend operation #{name})"}
  end

  defp attribute(exception, _name), do: exception

  defp freed!, do: raise(Error, kind: :badarg, message: "badarg: the buffer was already freed")

  defp get({:host, _} = value), do: value
  defp get(cell), do: Error.unwrap!(Native.cell_get(cell))
  # The depth of a pending cell, false if it is not pending; reads nothing else of its term.
  defp pending_depth({:host, _}), do: false
  defp pending_depth(cell), do: Error.unwrap!(Native.cell_field(cell, :pending, 4))
  defp put(cell, state), do: Error.unwrap!(Native.cell_put(cell, state))
  defp put_pending(cell, state), do: Error.unwrap!(Native.cell_put_if(cell, :pending, state))
end
