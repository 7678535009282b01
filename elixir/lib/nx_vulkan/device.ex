defmodule Nx.Vulkan.Device do
  @moduledoc """
  Opens devices by configuration. The options, each defaulting to the
  `:nx_vulkan` application environment:

    * `:device` - `""` (the runtime's choice: `$NXV_DEVICE`, else the first device),
      an index into `Nx.Vulkan.Native.list_devices/0`, or part of a device name
    * `:cache_dir` - where compiled pipelines persist (`""`: the runtime's default,
      `"none"`: no disk cache)
    * `:timeout` - milliseconds a single submit may run, and a run of a graph with
      host-driven `while`/`cond` as a whole

  `get!/1` also takes `:robust_buffer_access` (default `false`, not from the environment):
  bounds-check every kernel where the device cannot bounds-check only the modules
  `Nx.Vulkan.NativeV` runs. It opens a device of its own and is not part of `config/1`.
  """

  @keys [:device, :cache_dir, :timeout]

  @doc "The configuration `opts` select, as a keyword list usable as a cache key."
  def config(opts) do
    for key <- @keys do
      {key, Keyword.get_lazy(opts, key, fn -> Application.fetch_env!(:nx_vulkan, key) end)}
    end
  end

  @doc "The device handle for `opts` (opened once per configuration)."
  def get!(opts \\ []) do
    {robust, opts} = Keyword.pop(opts, :robust_buffer_access, false)
    key = {__MODULE__, config(opts), robust}

    case :persistent_term.get(key, nil) do
      nil ->
        {_, [device: device, cache_dir: cache_dir, timeout: timeout], _} = key

        ref =
          Nx.Vulkan.Error.unwrap!(
            Nx.Vulkan.Native.open_device(to_string(device), to_string(cache_dir), timeout, robust)
          )

        :persistent_term.put(key, ref)
        ref

      ref ->
        ref
    end
  end

  @doc "Bytes of device memory held by live buffers."
  def memory_in_use(opts \\ []), do: Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.bytes_in_use(get!(opts)))
end
