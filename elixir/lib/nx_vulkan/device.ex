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

  The `:nx_vulkan` application's `:profile` (`config :nx_vulkan, profile: "vulkan-minimum"`;
  default `""`: `$NXV_PROFILE`, else none; `"none"`: none) restricts every device opened
  after it is set to a device profile (docs/portability.md): a shipped profile's name, or a
  Khronos Vulkan Profiles JSON file (`"FILE.json"`, `"FILE.json#PROFILE"`). A bad profile
  raises `Nx.Vulkan.Error` naming the field and file.

  Its `:emulate` (`config :nx_vulkan, emulate: "f64,i64"`; default `""`: `$NXV_EMULATE`,
  else `"auto"`) says which 64-bit types kernels compute in software on 32-bit words:
  `"auto"` those the device (or profile) lacks, so f64 and s64 graphs run on GPUs without
  `shaderFloat64` or `shaderInt64` (docs/portability.md); `"f64"`, `"i64"` or `"f64,i64"`
  those even where the device has them; `"none"` none (a graph of a missing type then
  raises, naming the feature).

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
    profile = to_string(Application.get_env(:nx_vulkan, :profile, ""))
    emulate = to_string(Application.get_env(:nx_vulkan, :emulate, ""))
    key = {__MODULE__, config(opts), robust, profile, emulate}

    case :persistent_term.get(key, nil) do
      nil ->
        {_, [device: device, cache_dir: cache_dir, timeout: timeout], _, _, _} = key

        ref =
          Nx.Vulkan.Error.unwrap!(
            Nx.Vulkan.Native.open_device(to_string(device), to_string(cache_dir), timeout, robust, profile, emulate)
          )

        :persistent_term.put(key, ref)
        ref

      ref ->
        ref
    end
  end

  @doc """
  The identity of the `VkDevice` the configuration `opts` select: `{index, cache_dir,
  timeout}`, as the runtime caches devices. Two configurations with the same key (`device:
  ""` and `device: "0"` where the runtime picks device 0) share one `VkDevice` and its
  buffers; two with different keys do not, even on one physical device (another `:timeout`
  opens it again).
  """
  def key(opts) do
    config = config(opts)

    case :persistent_term.get({__MODULE__, :key, config}, nil) do
      nil ->
        index = Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(get!(config))).index
        key = {index, to_string(config[:cache_dir]), config[:timeout]}
        :persistent_term.put({__MODULE__, :key, config}, key)
        key

      key ->
        key
    end
  end

  @doc "Whether the configurations `a` and `b` select the same `VkDevice` (see `key/1`)."
  def same?(a, b), do: a == b or config(a) == config(b) or key(a) == key(b)

  @doc """
  The partitions `Nx.Vulkan.__partitions_options__/1` makes of `opts`: one option list per
  selected device, each with `:device` set to that device's index (a string) and without
  `:devices`. `devices` is the device list (`Nx.Vulkan.Native.list_devices/0`'s maps with
  `:index`, `:name` and `:type`).

    * `:devices` - `:all`, or a list whose entries are an index, part of a device name, or a
      keyword list of device options (`:device`, `:cache_dir`, `:timeout`) for that partition
    * else `:device`, if given: that one device
    * else every device that is not a CPU device (lavapipe) when there is one, otherwise
      the default device (the `:nx_vulkan` application's `:device`)
  """
  def partitions(opts, devices) do
    {selected, opts} = Keyword.pop(opts, :devices)

    selected =
      cond do
        selected == :all ->
          Enum.map(devices, & &1.index)

        is_list(selected) and selected != [] ->
          selected

        selected != nil ->
          raise ArgumentError, ":devices must be :all or a non-empty list, got: #{inspect(selected)}"

        Keyword.has_key?(opts, :device) ->
          [opts[:device]]

        true ->
          default_partitions(devices)
      end

    for entry <- selected do
      entry = if Keyword.keyword?(entry) and entry != [], do: entry, else: [device: entry]
      index = resolve!(Keyword.fetch!(entry, :device), devices)
      Keyword.merge(opts, Keyword.put(entry, :device, Integer.to_string(index)))
    end
  end

  defp default_partitions(devices) do
    case Enum.reject(devices, &(&1.type == "cpu")) do
      [] -> [Application.fetch_env!(:nx_vulkan, :device)]
      gpus -> Enum.map(gpus, & &1.index)
    end
  end

  # An index, or part of a name (case-insensitive), to an index, as the runtime matches them;
  # "" is the runtime's choice ($NXV_DEVICE, else the first device).
  defp resolve!(selector, devices) do
    selector = to_string(selector)
    selector = if selector == "", do: System.get_env("NXV_DEVICE", ""), else: selector

    found =
      cond do
        selector == "" -> List.first(devices)
        selector =~ ~r/^[0-9]+$/ -> Enum.find(devices, &(&1.index == String.to_integer(selector)))
        true -> Enum.find(devices, &String.contains?(String.downcase(&1.name), String.downcase(selector)))
      end

    case found do
      %{index: index} ->
        index

      nil ->
        names = Enum.map_join(devices, ", ", &"#{&1.index}: #{&1.name}")
        raise ArgumentError, "no Vulkan device matches #{inspect(selector)}; devices: #{names}"
    end
  end

  @doc "Bytes of device memory held by live buffers."
  def memory_in_use(opts \\ []), do: Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.bytes_in_use(get!(opts)))
end
