defmodule Nx.Vulkan do
  @moduledoc """
  An `Nx.Defn.Compiler` that compiles whole `defn` graphs for Vulkan devices.

      Nx.Defn.jit(&MyModule.softmax/1, compiler: Nx.Vulkan).(t)
      Nx.Vulkan.jit(&MyModule.softmax/1).(t)

  The traced expression is serialised to the JSON IR (`Nx.Vulkan.IR`, see
  `docs/ir.md`), compiled by the native runtime into one executable, and cached
  per function and argument types/shapes, so a repeated call only runs it.
  Results are `Nx.Vulkan.Backend` tensors (device buffers) unless `output: :host`.

  ## Options

    * `:device`, `:cache_dir`, `:timeout` - see `Nx.Vulkan.Device`
    * `:pipeline` - pass names to compile with (default: the runtime's pipeline)
    * `:precision` - how f32 dot products and convolutions may compute, JAX's level names:
      `:highest` (default: exact f32, Nx's semantics), `:high` (each operand split into two
      bf16 parts, three bf16 products accumulated in f32: about 16 significant bits),
      `:default` (operands rounded once to bf16: 8 bits). Only devices with bf16
      cooperative matrices (NVIDIA's tensor cores) have the faster paths, for dots whose
      operands are kernel inputs; elsewhere (convolutions too) the option is accepted and
      f32 stays exact. See `docs/numerics.md`.
    * `:emulate` - 64-bit types to compute in software on 32-bit words, `[:f64]`, `[:i64]` or
      `[:f64, :i64]` (default `[]`), besides those the device emulates (`Nx.Vulkan.Device`'s
      `:emulate`, by default the types it lacks): the same results, to test or measure
      what a device without them runs. See `docs/portability.md`.
    * `:output` - `:device` (default) or `:host` (`Nx.BinaryBackend` tensors)
    * `:cache` - `false` to trace and compile on every call
    * `:devices` - which devices `__partitions_options__/1` (`Nx.Serving`'s
      `partitions: true`) partitions over: see `Nx.Vulkan.Device.partitions/2`

  An executable runs on the device its options select. An argument that is a tensor of
  another `VkDevice` (`Nx.Vulkan.Device.key/1`) is copied to this one through the host
  first, and the copy reported as a `[:nx_vulkan, :transfer]` event; the argument stays on
  its device.

  ## Telemetry

    * `[:nx_vulkan, :compile]` - measurements `:eval_time`, `:compile_time`,
      `:total_time` (µs); metadata `:key`
    * `[:nx_vulkan, :run]` - measurements `:total_time` (µs), `:wall_ms`, `:device_ms`,
      `:dispatches`, `:submits`; metadata `:key`
    * `[:nx_vulkan, :transfer]` - measurements `:bytes`; metadata `:from`, `:to` (device
      configurations): an argument copied from another device before a run
  """

  @behaviour Nx.Defn.Compiler

  alias Nx.Defn.Composite
  alias Nx.Tensor, as: T
  alias Nx.Vulkan.{Device, Error, Hooks, IR, JSON, LockedCache, Native}

  @compiler_callbacks Nx.Defn.Compiler.behaviour_info(:callbacks)

  ## Public API

  @doc "`Nx.Defn.jit/2` with this compiler."
  def jit(fun, opts \\ []), do: Nx.Defn.jit(fun, [compiler: __MODULE__] ++ opts)

  @doc "`Nx.Defn.jit_apply/3` with this compiler."
  def jit_apply(fun, args, opts \\ []), do: Nx.Defn.jit_apply(fun, args, [compiler: __MODULE__] ++ opts)

  @doc "`Nx.Defn.compile/3` with this compiler."
  def compile(fun, templates, opts \\ []),
    do: Nx.Defn.compile(fun, templates, [compiler: __MODULE__] ++ opts)

  @doc """
  What `fun` applied to `args` (tensors or templates) compiles to, by `:stage`:

    * `:all` (default) - a map with every stage below: `:source` (the JSON IR it is
      serialised to), `:passes` (`[{pass_name, json}]`, the IR after each pass of the
      pipeline), `:lowered` (the IR after the last pass), `:kernels` (one map per
      kernel: `:name`, `:fused` node ids, `:launch` (how it runs, as `nxv explore`
      prints it: `"matmul 64x64x4 tiles, ..."`, `"elements, ..."`), `:spirv` disassembly,
      `:glsl` view, `:validation`), `:spirv` (`[{name, disassembly}]`) and `:dispatches` (the number
      of kernels, i.e. dispatches per run of a graph without loops)
    * `:source` - the JSON IR text only
    * `:lowered` - the JSON IR after the runtime's pass pipeline
    * `:spirv`, `:glsl` - the kernels, `[{name, text}]` (SPIR-V disassembly, or a GLSL view)

  Also takes the compiler's `:device`, `:pipeline`, `:precision` and `:emulate` options.
  Nothing is run.
  """
  def explain(fun, args, opts \\ []) do
    expr = Nx.Defn.debug_expr_apply(fun, args)
    {_callbacks, hook_values} = Hooks.split(expr, opts[:hooks] || %{})
    build_opts = [name: opts[:name] || "explain", f32_in_f64: f32_in_f64?(opts)]
    {graph, _used} = IR.build(List.to_tuple([expr | hook_values]), build_opts)
    json = JSON.encode(graph)
    precision = precision(opts)
    explore = fn -> Error.unwrap!(Native.explore(Device.get!(opts), json, pipeline(opts), precision, emulate(opts))) end

    case Keyword.get(opts, :stage, :all) do
      :all ->
        info = explore.()

        info
        |> Map.put(:source, json)
        |> Map.put(:spirv, Enum.map(info.kernels, &{&1.name, &1.spirv}))

      :source ->
        json

      :lowered ->
        explore.().lowered

      form when form in [:spirv, :glsl] ->
        Enum.map(explore.().kernels, &{&1.name, Map.fetch!(&1, form)})

      other ->
        raise ArgumentError,
              "unknown :stage #{inspect(other)}, expected :all, :source, :lowered, :spirv or :glsl"
    end
  end

  @doc "The Vulkan devices, in the runtime's preference order."
  def devices, do: Error.unwrap!(Native.list_devices())

  @doc """
  Whether the device `opts` select (by default the configured one) computes f64 graphs:
  natively (Float64) or in software on 32-bit words (the `:emulate` option of
  `Nx.Vulkan.Device`, on by default where the device lacks Float64). The name is the
  earlier nx_vulkan's, which eXMC calls.
  """
  def has_f64?(opts \\ []) do
    caps = Error.unwrap!(Native.device_info(Device.get!(opts))).caps
    caps.float64 or caps.emulate_f64
  end

  # The code generator's choice for the device (codegen/targets/launch.cpp); the serialiser
  # makes the same one for the factorisations it inlines.
  # (not where the compile option emulates f64: codegen then computes f32 in f32).
  defp f32_in_f64?(opts) do
    Error.unwrap!(Native.device_info(Device.get!(opts))).caps.computes_f32_in_f64 and
      :f64 not in List.wrap(Keyword.get(opts, :emulate, []))
  end

  @doc """
  Computes the pending work of the lazy `Nx.Vulkan.Backend` tensors in `container` (a
  tensor, a tuple, a map, any `Nx.Container`) now, as one graph per device, and returns
  the container. Tensors that are not lazy, or already computed, are left as they are.
  See `Nx.Vulkan.Backend` (lazy mode).
  """
  def sync(container) do
    tensors = Nx.Defn.Composite.reduce(container, [], fn t, acc -> [t | acc] end)
    Nx.Vulkan.Lazy.sync(Enum.reverse(tensors), :sync)
    container
  end

  @doc "Bytes of device memory held by live buffers on the device `opts` select."
  def memory_in_use(opts \\ []), do: Device.memory_in_use(opts)

  ## Nx.Defn.Compiler

  @impl true
  def __jit__(key, vars, fun, args_list, opts) do
    __compile__(key, vars, fun, opts).(args_list)
  end

  @impl true
  def __compile__(key, vars, fun, opts) do
    {hooks, opts} = Keyword.pop(opts, :hooks, %{})
    config = Device.config(opts)
    output = Keyword.get(opts, :output, :device)
    compiled = cached_compile(key, vars, fun, hooks, config, native(opts), Keyword.get(opts, :cache, true))

    fn args_list -> Enum.map(args_list, &run(compiled, &1, key, config, output)) end
  end

  @impl true
  def __partitions_options__(opts) do
    Device.partitions(opts, devices())
  end

  # The backend of the tensors a jit returns: Nx.Defn.to_backend/1 and libraries (Axon,
  # Nx.Random) create tensors there to match them.
  @impl true
  def __to_backend__(opts) do
    if Keyword.get(opts, :output) == :host,
      do: {Nx.BinaryBackend, []},
      else: {Nx.Vulkan.Backend, Device.config(opts)}
  end

  # Nx <= 0.9 declares __stream__/7, Nx 0.10 neither, Nx >= 0.11 the optional __shard_jit__/6.
  if {:__stream__, 7} in @compiler_callbacks, do: @impl(true)

  # Nx.Defn.stream/3: one executable, compiled here, run once per send by the stream's
  # process on the input and the accumulator it keeps on the device (Nx.Vulkan.Stream).
  # `vars` and `args` are flat: the input's, then the accumulator's, then the other
  # arguments'.
  def __stream__(key, input, acc, vars, fun, [args], opts) do
    {hooks, opts} = Keyword.pop(opts, :hooks, %{})
    {output, opts} = Keyword.pop(opts, :output, :device)
    config = Device.config(opts)
    cache? = Keyword.get(opts, :cache, true)
    compiled = cached_compile(key, vars, fun, hooks, config, native(opts), cache?)
    output_template = stream_output!(compiled.template, acc)

    rest = Enum.drop(args, Composite.count(input) + Composite.count(acc))
    acc = Composite.traverse(acc, &to_device(&1, config))

    step = fn input_params, acc ->
      acc_params = [acc] |> Composite.flatten_list() |> Enum.map(&fn -> &1 end)
      run(compiled, input_params ++ acc_params ++ rest, key, config, :device)
    end

    finish =
      if output == :host,
        do: &Composite.traverse(&1, fn t -> Nx.backend_copy(t, Nx.BinaryBackend) end),
        else: & &1

    [Nx.Vulkan.Stream.start_link(input, output_template, acc, step, finish)]
  end

  if {:__shard_jit__, 6} in @compiler_callbacks, do: @impl(true)

  def __shard_jit__(_key, _mesh, _vars, _fun, _args_list, _opts) do
    raise ArgumentError, "Nx.Vulkan does not support sharding (Nx.Defn.shard_jit)"
  end

  ## Compilation

  defp pipeline(opts), do: Enum.map(Keyword.get(opts, :pipeline, []), &to_string/1)

  @precisions [:highest, :high, :default]

  defp precision(opts) do
    case Keyword.get(opts, :precision, :highest) do
      precision when precision in @precisions ->
        Atom.to_string(precision)

      other ->
        raise ArgumentError,
              "unknown :precision #{inspect(other)}, expected :highest (exact f32, the default), " <>
                ":high (bf16 x3) or :default (bf16)"
    end
  end

  defp emulate(opts) do
    types = List.wrap(Keyword.get(opts, :emulate, []))

    case Enum.uniq(types) -- [:f64, :i64] do
      [] ->
        Enum.filter([:f64, :i64], &(&1 in types)) |> Enum.join(",")

      other ->
        raise ArgumentError, "unknown :emulate types #{inspect(other)}, expected a list of :f64 and :i64"
    end
  end

  # What the native compiler takes besides the graph: the pass pipeline, the precision and
  # the emulated types.
  defp native(opts), do: {pipeline(opts), precision(opts), emulate(opts)}

  defp cached_compile(key, vars, fun, hooks, config, native, cache?) do
    args_key =
      Enum.map(vars, fn var ->
        Composite.traverse(var, fn %T{type: type, shape: shape, names: names, vectorized_axes: v} ->
          {type, shape, names, v}
        end)
      end)

    compile = fn -> compile_expr(key, vars, fun, hooks, config, native) end

    if cache? do
      {_hit_or_miss, compiled} = LockedCache.run({key, args_key, config, native, hooks}, compile)
      compiled
    else
      compile.()
    end
  end

  defp compile_expr(key, vars, fun, hooks, config, {pipeline, precision, emulate}) do
    {eval_time, traced} =
      :timer.tc(fn ->
        expr = fun.(vars)

        case Hooks.split(expr, hooks) do
          :host_driven ->
            {:host_driven, expr}

          {callbacks, hook_values} ->
            f32_in_f64 = f32_in_f64?(config) and not String.contains?(emulate, "f64")
            build_opts = [name: graph_name(key), f32_in_f64: f32_in_f64]
            {graph, used} = IR.build(List.to_tuple([expr | hook_values]), build_opts)
            {expr, graph, used, Enum.zip(callbacks, Enum.map(hook_values, &Nx.to_template/1))}
        end
      end)

    case traced do
      # Hooks run per iteration or per branch taken: the host drives the loop, each op a
      # cached one-op graph on the device (Nx.Vulkan.Backend) under Nx's own Evaluator.
      {:host_driven, expr} ->
        traced = fn vars -> vars |> fun.() |> Hooks.on_host() end
        evaluate = Nx.Defn.Evaluator.__compile__(key, vars, traced, hooks: Hooks.on_host_hooks(hooks))
        %{host_driven: evaluate, template: Nx.to_template(expr)}

      {expr, graph, used, hooks} ->
        {compile_time, exe} =
          :timer.tc(fn ->
            if graph.outputs == [] do
              nil
            else
              Error.unwrap!(Native.compile(Device.get!(config), JSON.encode(graph), pipeline, precision, emulate))
            end
          end)

        measurements = %{
          eval_time: eval_time,
          compile_time: compile_time,
          total_time: eval_time + compile_time
        }

        :telemetry.execute([:nx_vulkan, :compile], measurements, %{key: key})
        %{exe: exe, used: used, template: Nx.to_template(expr), hooks: hooks}
    end
  end

  defp stream_output!({output, acc_out}, acc) do
    unless Nx.compatible?(Nx.to_template(acc), acc_out) do
      raise ArgumentError,
            "Nx.Vulkan keeps a stream's accumulator on the device as the input of the next " <>
              "send, so the function must return it with the types and shapes it was given: " <>
              "expected #{inspect(Nx.to_template(acc))}, got #{inspect(acc_out)}"
    end

    output
  end

  defp stream_output!(other, _acc) do
    raise ArgumentError,
          "Nx.Defn.stream/3 expects the function to return a two-element tuple {output, acc}, " <>
            "got: #{inspect(other)}"
  end

  defp graph_name(fun) when is_function(fun) do
    info = Function.info(fun)
    "#{inspect(info[:module])}.#{info[:name]}"
  end

  defp graph_name(_key), do: "defn"

  ## Running

  defp run(%{exe: nil, template: template}, _args, _key, _config, _output), do: template

  defp run(%{host_driven: evaluate}, args, _key, config, output) do
    params = Enum.map(args, fn arg -> fn -> to_device(arg, config) end end)
    [result] = evaluate.([params])
    if output == :host, do: Nx.backend_transfer(result, Nx.BinaryBackend), else: result
  end

  defp run(%{exe: exe, used: used, template: template, hooks: hooks}, args, key, config, output) do
    args = List.to_tuple(args)
    inputs = Enum.map(used, &to_input(elem(args, &1), config))
    mode = if output == :host, do: :binaries, else: :buffers

    {time, {results, stats}} = :timer.tc(fn -> Error.unwrap!(Native.run(exe, inputs, mode)) end)
    :telemetry.execute([:nx_vulkan, :run], Map.put(stats, :total_time, time), %{key: key})

    {container, results} = fill(template, results, output, config)

    Enum.reduce(hooks, results, fn {callback, hook_template}, results ->
      {value, results} = fill(hook_template, results, output, config)
      # a copy: a hook's value may be an output's buffer too
      callback.(Nx.backend_copy(value, Nx.BinaryBackend))
      results
    end)

    container
  end

  defp fill(template, results, output, config) do
    Composite.traverse(template, results, fn t, [result | rest] ->
      {to_tensor(t, result, output, config), rest}
    end)
  end

  defp to_device(fun, config) when is_function(fun, 0), do: to_device(fun.(), config)

  # A lazy tensor: its buffer (computed now if pending), or a host constant.
  defp to_device(%T{data: %Nx.Vulkan.Backend{cell: cell}} = t, config) when cell != nil,
    do: to_device(Nx.Vulkan.Lazy.eager(t), config)

  defp to_device(%T{data: %Nx.Vulkan.Backend{device: from}} = t, config) do
    if Device.same?(from, config), do: t, else: Nx.backend_copy(t, {Nx.Vulkan.Backend, config})
  end

  defp to_device(%T{} = t, config), do: Nx.backend_copy(t, {Nx.Vulkan.Backend, config})

  defp to_input(fun, config) when is_function(fun, 0), do: to_input(fun.(), config)

  defp to_input(%T{data: %Nx.Vulkan.Backend{cell: cell}} = t, config) when cell != nil,
    do: to_input(Nx.Vulkan.Lazy.eager(t), config)

  defp to_input(%T{data: %Nx.Vulkan.Backend{buffer: buffer, device: from}} = t, config) do
    if Device.same?(from, config) do
      buffer
    else
      # A tensor of another VkDevice: copied through the host, never bound to this one's
      # descriptor sets. The tensor itself stays where it is.
      %T{data: %Nx.Vulkan.Backend{buffer: copy}} =
        Nx.backend_copy(t, {Nx.Vulkan.Backend, config ++ [lazy: false]})

      :telemetry.execute([:nx_vulkan, :transfer], %{bytes: Nx.byte_size(t)}, %{from: from, to: config})
      copy
    end
  end

  defp to_input(%T{} = t, _config) do
    t = Nx.devectorize(t)
    {type, dims} = IR.stored_type(t.type, t.shape)
    {type, dims, Nx.to_binary(t)}
  end

  defp to_tensor(template, binary, :host, _config) when is_binary(binary),
    do: %{template | data: %Nx.BinaryBackend{state: binary}}

  defp to_tensor(template, buffer, _device, config),
    do: %{template | data: %Nx.Vulkan.Backend{buffer: buffer, device: config}}
end
