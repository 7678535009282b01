defmodule Nx.Vulkan.Backend do
  @moduledoc """
  An `Nx.Backend` whose tensors live in Vulkan device buffers.

      Nx.default_backend(Nx.Vulkan.Backend)
      Nx.backend_transfer(t, {Nx.Vulkan.Backend, device: "1"})

  Options: `:device`, `:cache_dir`, `:timeout` (see `Nx.Vulkan.Device`), and `:lazy`
  (default: the application environment's `:lazy`, `false`).

  With `lazy: true` an eager operation returns a pending tensor instead of running; the
  operations a value depends on run as one graph, compiled once per structure, when the
  value is read on the host, given to a jitted function, after `:lazy_max_depth` chained
  operations, or on `Nx.Vulkan.sync/1`. Small values on the host (constants, tensors of at
  most `:lazy_host_size` elements, small values read) stay there, and operations of at
  most that size on them run there, on `Nx.BinaryBackend`, with no device round trip
  (docs/elixir.md, "Lazy mode").

  A tensor carries its device configuration. `Nx.backend_transfer/2` and
  `Nx.backend_copy/2` to another device copy it through the host (a transfer frees the
  source); to a configuration of the same `VkDevice` (`Nx.Vulkan.Device.key/1`) a transfer
  keeps the buffer. An operation on tensors of several devices runs on the first one's
  device, the others copied there (`Nx.Vulkan`'s `[:nx_vulkan, :transfer]` event).

  Eager operations run on the device as one-node graphs through `Nx.Vulkan`:
  each callback applies the same `Nx.Defn.Expr` callback to its arguments under
  `Nx.Defn.jit_apply/3`, so compiled executables are cached per operation,
  options and argument types like any jitted function. Operations the IR has no
  op for (window_reduce, ...) run on `Nx.BinaryBackend` and their results are
  copied back to the device; so do the FFTs: Nx.BinaryBackend's (the same algorithms,
  in f64) is more exact for c64 and, for one call, cheaper than compiling the kernels of
  the O(n log n) transform they compile to in graphs (`Nx.Vulkan.FFT`).
  Complex tensors are stored as their parts (`Nx.Vulkan.IR.stored_type/2`). Indexing
  follows the IR's conventions (docs/ir.md): an index out of range is clamped (gather,
  take) or its update skipped (indexed_add/put) where Nx.BinaryBackend raises.
  """

  @behaviour Nx.Backend
  @enforce_keys [:buffer, :device]
  defstruct [:buffer, :device, cell: nil]

  alias Nx.Tensor, as: T
  alias Nx.Vulkan.{Device, Error, IR, Lazy, Native}

  @callbacks Nx.Backend.behaviour_info(:callbacks)
  @device_keys [:device, :cache_dir, :timeout]

  @impl true
  def init(opts) do
    opts = Keyword.validate!(opts, [:lazy | @device_keys])
    Device.config(opts) ++ [lazy: lazy?(opts)]
  end

  # Backend options reach the callbacks as given (Nx.tensor/2's `backend: {Nx.Vulkan.Backend,
  # opts}`) or from init/1: without `:lazy`, the application's default.
  defp lazy?(opts), do: Keyword.get_lazy(opts, :lazy, fn -> Application.get_env(:nx_vulkan, :lazy, false) end)

  ## Transfers

  @impl true
  def constant(out, number, opts) do
    %T{data: %Nx.BinaryBackend{state: binary}} = host = Nx.BinaryBackend.constant(out, number, [])

    if lazy?(opts) do
      Lazy.from_host(out, binary, Device.config(opts))
    else
      Nx.BinaryBackend.backend_transfer(host, __MODULE__, opts)
    end
  end

  @impl true
  def from_binary(%T{type: type, shape: shape} = t, binary, opts) do
    config = Device.config(opts)
    lazy = lazy?(opts)

    if lazy and Lazy.host_sized?(Nx.size(t)) do
      Lazy.host_value(t, binary, config)
    else
      device = Device.get!(config)
      {type, dims} = IR.stored_type(type, shape)
      buffer = Error.unwrap!(Native.upload(device, type, dims, binary))

      if lazy,
        do: Lazy.from_buffer(t, buffer, config),
        else: %{t | data: %__MODULE__{buffer: buffer, device: config}}
    end
  end

  @impl true
  def to_binary(%T{type: {_, bits}} = t, limit) do
    binary =
      case Lazy.eager(t) do
        %T{data: %__MODULE__{buffer: buffer}} -> Error.unwrap!(Native.download(buffer))
        %T{data: %Nx.BinaryBackend{state: binary}} -> binary
      end

    binary_part(binary, 0, min(byte_size(binary), limit * div(bits, 8)))
  end

  @impl true
  def backend_copy(%T{} = t, backend, opts) do
    backend.from_binary(t, to_binary(t, Nx.size(t)), opts)
  end

  @impl true
  def backend_transfer(%T{data: %__MODULE__{device: config}} = t, backend, opts) do
    if backend == __MODULE__ and Device.same?(opts, config) do
      %T{data: data} = t = if lazy?(opts), do: Lazy.lazy(t), else: t
      %{t | data: %{data | device: Device.config(opts)}}
    else
      try do
        backend_copy(t, backend, opts)
      after
        backend_deallocate(t)
      end
    end
  end

  @impl true
  def backend_deallocate(%T{data: %__MODULE__{cell: nil, buffer: buffer}}) do
    Error.unwrap!(Native.free(buffer))
  end

  def backend_deallocate(%T{} = t), do: Lazy.deallocate(t)

  @impl true
  def inspect(%T{} = t, inspect_opts) do
    limit = if inspect_opts.limit == :infinity, do: Nx.size(t), else: inspect_opts.limit + 1
    binary = to_binary(t, min(limit, Nx.size(t)))
    Nx.Backend.inspect(t, binary, inspect_opts)
  end

  @impl true
  def to_batched(out, tensor, opts) do
    batch_size = elem(out.shape, 0)
    axis_size = elem(tensor.shape, 0)
    full = div(axis_size, batch_size)
    remainder = rem(axis_size, batch_size)
    last = if remainder != 0 and opts[:leftover] == :repeat, do: full, else: full - 1

    out = template(out)

    Stream.map(0..last//1, fn
      ^full ->
        op(
          :to_batched,
          out,
          fn t ->
            Nx.concatenate([
              Nx.slice_along_axis(t, full * batch_size, remainder),
              Nx.slice_along_axis(t, 0, batch_size - remainder)
            ])
          end,
          [tensor],
          [tensor]
        )

      i ->
        op(:to_batched, out, &Nx.slice_along_axis(&1, &2, batch_size), [tensor], [tensor, i * batch_size])
    end)
  end

  ## Operations as one-node graphs

  @impl true
  def concatenate(out, tensors, axis), do: along_axis(:concatenate, out, tensors, axis)

  # concatenate/3 and stack/3: the tensors of a list put together along `axis`.
  defp along_axis(name, out, tensors, axis) do
    out = template(out)

    op(
      name,
      out,
      &apply(Nx.Defn.Expr, name, [out, Tuple.to_list(&1), axis]),
      tensors,
      [List.to_tuple(tensors)],
      [],
      {fn -> apply(Nx.BinaryBackend, name, [out, Enum.map(tensors, &Lazy.host!/1), axis]) end, work(name, out, tensors)}
    )
  end

  @impl true
  def slice(out, tensor, start, lengths, strides) do
    out = template(out)

    op(
      :slice,
      out,
      &Nx.Defn.Expr.slice(out, &1, Tuple.to_list(&2), lengths, strides),
      [tensor | Enum.filter(start, &is_struct(&1, T))],
      [tensor, List.to_tuple(start)],
      [],
      {fn -> Nx.BinaryBackend.slice(out, Lazy.host!(tensor), Enum.map(start, &Lazy.host!/1), lengths, strides) end,
       work(:slice, out, [tensor])}
    )
  end

  @impl true
  def put_slice(out, tensor, start, slice) do
    out = template(out)

    op(
      :put_slice,
      out,
      &Nx.Defn.Expr.put_slice(out, &1, Tuple.to_list(&2), &3),
      [tensor, slice | Enum.filter(start, &is_struct(&1, T))],
      [tensor, List.to_tuple(start), slice],
      [],
      {fn -> Nx.BinaryBackend.put_slice(out, Lazy.host!(tensor), Enum.map(start, &Lazy.host!/1), Lazy.host!(slice)) end,
       work(:put_slice, out, [tensor, slice])}
    )
  end

  # Nx <= 0.11; later versions call block/4 instead. A call the IR has an op for runs as
  # one graph; any other runs its default implementation eagerly, each of its operations
  # on the device or the host as usual (the FFTs of fft2 on the host, as above). So do
  # calls on small lazy values on the host, whose operations then run there, unless
  # Nx.BinaryBackend has an implementation of its own (its eigh): the graph reproduces it. The
  # tensors the default makes are this backend's too: mixed with the default backend's,
  # an op of Nx.BinaryBackend would be handed a device tensor (Nx 0.13's eigh).
  if {:optional, 3} in @callbacks do
    @impl true
    def optional(name, args, fun) do
      {tensors, rest} = Enum.split_while(args, &is_struct(&1, T))

      if IR.native_call?(name, tensors) and not host_default?(name, tensors, length(args) + 1) do
        jit(&Nx.Defn.Expr.optional(name, Tuple.to_list(&1) ++ rest, fun), tensors, [List.to_tuple(tensors)])
      else
        on_this_backend(tensors, fn -> apply(fun, args) end)
      end
    end

    defp host_default?(callback, tensors, arity),
      do: Lazy.small_on_host?(tensors) and not function_exported?(Nx.BinaryBackend, callback, arity)
  end

  # Nx >= 0.8 declares stack/3 and the pointer callbacks, Nx >= 0.12 block/4.
  if {:stack, 3} in @callbacks do
    @impl true
    def stack(out, tensors, axis), do: along_axis(:stack, out, tensors, axis)
  end

  # As optional/3, except that Nx.BinaryBackend's block/4 applies the default
  # implementation whatever the block: calls on small lazy values on the host run it here,
  # each of its operations on the host.
  if {:block, 4} in @callbacks do
    @impl true
    def block(struct, _output, args, fun) do
      {tensors, rest} = Enum.split_while(args, &is_struct(&1, T))

      if IR.native_call?(struct, tensors) and not Lazy.small_on_host?(tensors) do
        jit(&Nx.Defn.Expr.block(struct, Tuple.to_list(&1) ++ rest, fun), tensors, [List.to_tuple(tensors)])
      else
        on_this_backend(tensors, fn -> apply(fun, [struct | args]) end)
      end
    end
  end

  if {:to_pointer, 2} in @callbacks do
    @impl true
    def to_pointer(_tensor, _opts), do: raise(ArgumentError, "Nx.Vulkan.Backend does not support to_pointer")

    @impl true
    def from_pointer(_pointer, _type, _shape, _backend_opts, _opts),
      do: raise(ArgumentError, "Nx.Vulkan.Backend does not support from_pointer")
  end

  binary_ops =
    [:add, :subtract, :multiply, :pow, :remainder, :divide, :atan2, :min, :max, :quotient] ++
      [:bitwise_and, :bitwise_or, :bitwise_xor, :left_shift, :right_shift] ++
      [:equal, :not_equal, :greater, :less, :greater_equal, :less_equal] ++
      [:logical_and, :logical_or, :logical_xor]

  unary_ops =
    [:exp, :expm1, :log, :log1p, :sigmoid, :cos, :sin, :tan, :cosh, :sinh, :tanh] ++
      [:acos, :asin, :atan, :acosh, :asinh, :atanh, :sqrt, :rsqrt, :cbrt, :is_nan] ++
      [:is_infinity, :erf, :erfc, :erf_inv, :abs, :bitwise_not, :ceil, :floor, :negate] ++
      [:round, :sign, :count_leading_zeros, :population_count, :real, :imag, :conjugate]

  # {callback, its arguments after `out`, the tensor arguments among them}
  device_callbacks =
    [
      {:eye, [:backend_options], []},
      {:iota, [:axis, :backend_options], []},
      {:as_type, [:tensor], [:tensor]},
      {:bitcast, [:tensor], [:tensor]},
      {:reshape, [:tensor], [:tensor]},
      {:squeeze, [:tensor, :axes], [:tensor]},
      {:broadcast, [:tensor, :shape, :axes], [:tensor]},
      {:transpose, [:tensor, :axes], [:tensor]},
      {:pad, [:tensor, :pad_value, :padding_config], [:tensor, :pad_value]},
      {:reverse, [:tensor, :axes], [:tensor]},
      {:dot, [:left, :c1, :b1, :right, :c2, :b2], [:left, :right]},
      {:conv, [:tensor, :kernel, :opts], [:tensor, :kernel]},
      {:sort, [:tensor, :opts], [:tensor]},
      {:argsort, [:tensor, :opts], [:tensor]},
      {:window_sum, [:tensor, :window_dimensions, :opts], [:tensor]},
      {:window_product, [:tensor, :window_dimensions, :opts], [:tensor]},
      {:window_max, [:tensor, :window_dimensions, :opts], [:tensor]},
      {:window_min, [:tensor, :window_dimensions, :opts], [:tensor]},
      {:window_scatter_max, [:tensor, :source, :init_value, :window_dimensions, :opts],
       [:tensor, :source, :init_value]},
      {:window_scatter_min, [:tensor, :source, :init_value, :window_dimensions, :opts],
       [:tensor, :source, :init_value]},
      {:clip, [:tensor, :min, :max], [:tensor, :min, :max]},
      {:select, [:pred, :on_true, :on_false], [:pred, :on_true, :on_false]},
      {:all, [:tensor, :opts], [:tensor]},
      {:any, [:tensor, :opts], [:tensor]},
      {:sum, [:tensor, :opts], [:tensor]},
      {:product, [:tensor, :opts], [:tensor]},
      {:reduce_max, [:tensor, :opts], [:tensor]},
      {:reduce_min, [:tensor, :opts], [:tensor]},
      {:argmax, [:tensor, :opts], [:tensor]},
      {:argmin, [:tensor, :opts], [:tensor]}
    ] ++
      for(op <- binary_ops, do: {op, [:left, :right], [:left, :right]}) ++
      for(op <- unary_ops, do: {op, [:tensor], [:tensor]})

  # Indexing callbacks, where this Nx declares them (Nx >= 0.12 has take and
  # take_along_axis as blocks, whose defaults gather).
  device_callbacks =
    device_callbacks ++
      for {name, args, tensor_args} <- [
            {:gather, [:tensor, :indices, :opts], [:tensor, :indices]},
            {:take, [:tensor, :indices, :axis], [:tensor, :indices]},
            {:take_along_axis, [:tensor, :indices, :axis], [:tensor, :indices]},
            {:indexed_add, [:target, :indices, :updates, :opts], [:target, :indices, :updates]},
            {:indexed_put, [:target, :indices, :updates, :opts], [:target, :indices, :updates]}
          ],
          {name, length(args) + 1} in @callbacks,
          do: {name, args, tensor_args}

  # In lazy mode, small operations on values held on the host run there, on
  # Nx.BinaryBackend, except those it is slow at for their size (conv, windows).
  device_only =
    [:conv, :window_sum, :window_product, :window_max, :window_min] ++
      [:window_scatter_max, :window_scatter_min]

  for {name, args, tensor_args} <- device_callbacks do
    args = Enum.map(args, &Macro.var(&1, __MODULE__))
    tensor_args = Enum.map(tensor_args, &Macro.var(&1, __MODULE__))
    backend_options = Enum.find(args, [], &match?({:backend_options, _, _}, &1))
    host? = name not in device_only and function_exported?(Nx.BinaryBackend, name, length(args) + 1)
    host_args = Enum.map(args, &if(&1 in tensor_args, do: quote(do: Lazy.host!(unquote(&1))), else: &1))

    out = Macro.var(:out, nil)
    host_exact =
      case name do
        :as_type -> quote(do: host_exact?(unquote(out), unquote(hd(tensor_args))))
        name when name in [:indexed_add, :indexed_put] -> quote(do: host_window?(unquote_splicing(args)))
        _ -> true
      end

    # an elementwise result is at least as large as its operands
    work = if name in binary_ops or name in unary_ops, do: :elementwise, else: name

    if {name, length(args) + 1} in @callbacks, do: @impl(true)

    # The hot path of an eager sampler's control arithmetic: two f32 or f64 host values,
    # each a scalar or of the result's shape (so no larger than a host value is), computed
    # as Nx.BinaryBackend computes them without the general path's dispatch. What it
    # leaves (a NaN, an infinity, an overflow) takes the general path.
    if name in [:add, :subtract, :multiply, :divide] do
      def unquote(name)(
            %T{type: {:f, size} = type, shape: shape} = out,
            %T{type: type, shape: left_shape, data: %__MODULE__{cell: {:host, left}, device: config}} = l,
            %T{type: type, shape: right_shape, data: %__MODULE__{cell: {:host, right}}} = r
          )
          when size in [32, 64] and (left_shape == shape or left_shape == {}) and
                 (right_shape == shape or right_shape == {}) do
        case Lazy.float_arithmetic(unquote(name), size, shape, {left_shape, left}, {right_shape, right}) do
          {:ok, binary} -> Lazy.host_value(out, binary, config)
          :error -> unquote(:"#{name}_op")(out, l, r)
        end
      end
    end

    def unquote(name)(out, unquote_splicing(args)), do: unquote(:"#{name}_op")(out, unquote_splicing(args))

    defp unquote(:"#{name}_op")(out, unquote_splicing(args)) do
      out = template(out)

      expr_fun = fn unquote_splicing(tensor_args) ->
        Nx.Defn.Expr.unquote(name)(out, unquote_splicing(args))
      end

      host =
        if unquote(host?) and unquote(host_exact) do
          {fn -> apply(Nx.BinaryBackend, unquote(name), [out, unquote_splicing(host_args)]) end,
           work(unquote(work), out, [unquote_splicing(args)])}
        end

      op(
        unquote(name),
        out,
        expr_fun,
        [unquote_splicing(tensor_args)],
        [unquote_splicing(tensor_args)],
        unquote(backend_options),
        host
      )
    end
  end

  # Nx.BinaryBackend converts a float out of an integer type's range by wrapping around,
  # the device (as XLA) by saturating.
  defp host_exact?(%T{type: {to, _}}, %T{type: {from, _}}), do: not (from in [:f, :bf] and to in [:s, :u])

  # Nx.BinaryBackend writes an indexed update's window contiguously from its start, which
  # is the device's window (XLA's) only where at most the window's first axis is narrower
  # than the target (docs/ir.md).
  defp host_window?(%T{shape: shape}, %T{shape: indices_shape}, %T{shape: updates_shape}, opts) do
    indexed = opts[:axes] || Enum.to_list(0..(elem(indices_shape, tuple_size(indices_shape) - 1) - 1)//1)
    rest = for {dim, axis} <- Enum.with_index(Tuple.to_list(shape)), axis not in indexed, do: dim
    window = updates_shape |> Tuple.to_list() |> Enum.drop(tuple_size(indices_shape) - 1)
    window == [] or tl(window) == Enum.drop(rest, length(rest) - length(window) + 1)
  end

  # Operations Nx.BinaryBackend carries out as copies of binaries: per element, 30 to 60
  # times faster than its arithmetic (f64, 2048 elements: an add 886 µs, a broadcast 29,
  # a row put_slice 14, an indexed_put of a row 4.6, a slice 2.2; a transpose, element by
  # element, 332), so their work counts 1/64 per element.
  @copies [:reshape, :squeeze, :bitcast, :broadcast, :pad, :slice, :put_slice, :concatenate, :stack] ++
            [:indexed_put, :indexed_add]
  @copy_discount 64

  # The elements an operation computes or reads: a dot's multiply-adds, a copy's
  # elements / 64, else its largest operand or result.
  defp work(:dot, out, [left, c1 | _]), do: Enum.reduce(c1, elements(out), &(elem(left.shape, &1) * &2))
  defp work(:elementwise, out, _args), do: elements(out)
  defp work(name, out, args) when name in @copies, do: div(work(out, args), @copy_discount)
  defp work(_name, out, args), do: work(out, args)

  defp work(out, args) do
    Enum.reduce(args, elements(out), fn
      %T{} = t, acc -> max(elements(t), acc)
      _, acc -> acc
    end)
  end

  # Nx.size/1 of the scalars and vectors most host operations are, without its generality.
  defp elements(%T{shape: {}}), do: 1
  defp elements(%T{shape: {n}}), do: n
  defp elements(%T{shape: shape}), do: Tuple.product(shape)

  ## Operations on the host

  # Every arity some Nx version (0.7 to 0.13) declares; only those this Nx declares are
  # defined, so that no version warns about a missing or an unknown callback.
  host_callbacks = [
    gather: 2,
    reduce: 4,
    window_reduce: 5,
    map: 3,
    indexed_add: 3,
    indexed_put: 3,
    lu: 2,
    triangular_solve: 3,
    svd: 2,
    fft: 2,
    ifft: 2,
    fft2: 2,
    ifft2: 2
  ]

  # Only those Nx.BinaryBackend implements (Nx 0.7 declares fft2 but leaves it to Nx's default).
  Code.ensure_loaded!(Nx.BinaryBackend)

  for {name, arity} <- host_callbacks,
      {name, arity + 1} in @callbacks,
      function_exported?(Nx.BinaryBackend, name, arity + 1) do
    args = Macro.generate_arguments(arity, __MODULE__)

    @impl true
    def unquote(name)(out, unquote_splicing(args)) do
      on_host(unquote(name), out, [unquote_splicing(args)])
    end
  end

  defp on_host(name, out, args) do
    config = device_of(args) ++ lazy_opts(Enum.filter(args, &is_struct(&1, T)))
    host_args = Enum.map(args, &to_host/1)

    # Functions given to map, reduce and window_reduce make tensors of their own: on the
    # host too, where Nx.BinaryBackend can read them.
    Nx.BinaryBackend
    |> Nx.with_default_backend(fn -> apply(Nx.BinaryBackend, name, [out | host_args]) end)
    |> from_host(config)
  end

  defp to_host(%T{data: %__MODULE__{}} = t), do: Nx.backend_copy(t, Nx.BinaryBackend)
  defp to_host(other), do: other

  defp from_host(%T{} = t, config), do: Nx.backend_transfer(t, {__MODULE__, config})

  defp from_host(tuple, config) when is_tuple(tuple),
    do: tuple |> Tuple.to_list() |> Enum.map(&from_host(&1, config)) |> List.to_tuple()

  ## Helpers

  defp on_this_backend(tensors, fun),
    do: Nx.with_default_backend({__MODULE__, device_of(tensors) ++ lazy_opts(tensors)}, fun)

  defp lazy_opts(tensors), do: if(Lazy.lazy?(tensors), do: [lazy: true], else: [])

  # An operation of output template `out`: `fun` applied to `args`, whose tensors are
  # `tensors`; `opts` are the backend options of a callback that takes them. Pending
  # when any tensor (or, without tensors, `opts`) is lazy, else run now. In lazy mode,
  # `host` ({a function computing it on Nx.BinaryBackend, the work}) runs it on the host
  # where its operands are there and the work is small (Nx.Vulkan.Lazy.on_host/2).
  defp op(name, out, fun, tensors, args, opts \\ [], host \\ nil) do
    lazy = Lazy.lazy?(tensors) or (tensors == [] and lazy?(opts))

    with true <- lazy,
         {host_fun, work} <- host,
         {:ok, binary} <- Lazy.on_host(host_fun, work) do
      # no larger than its work, the result is a host value; a copy's can be larger
      if elements(out) <= work,
        do: Lazy.host_value(out, binary, config_of(tensors, opts)),
        else: Lazy.from_host(out, binary, config_of(tensors, opts))
    else
      _ ->
        config = config_of(tensors, opts)

        if lazy,
          do: Lazy.defer(name, out, fun, tensors, args, config),
          else: Nx.Defn.jit_apply(fun, args, [compiler: Nx.Vulkan, on_conflict: :force] ++ config)
    end
  end

  defp config_of(tensors, []), do: device_of(tensors)
  defp config_of(_tensors, opts), do: Device.config(opts)

  # Nx.to_template/1 of a tensor, without its protocol dispatch: once per operation.
  defp template(%T{} = t), do: %{t | data: %Nx.TemplateBackend{}}

  # One graph now, whatever the mode (callbacks whose outputs have no template here);
  # lazy tensors are computed first, and the results of lazy operands are lazy.
  defp jit(fun, tensors, args) do
    result = Nx.Defn.jit_apply(fun, args, [compiler: Nx.Vulkan, on_conflict: :force] ++ device_of(tensors))
    if Lazy.lazy?(tensors), do: Nx.Defn.Composite.traverse(result, &Lazy.lazy/1), else: result
  end

  # The device of the first device tensor among `tensors`, else the default.
  defp device_of([%T{data: %__MODULE__{device: config}} | _]), do: config
  defp device_of([_ | rest]), do: device_of(rest)
  defp device_of([]), do: Device.config([])
end
