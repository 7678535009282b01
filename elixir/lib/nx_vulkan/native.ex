defmodule Nx.Vulkan.Native do
  @moduledoc """
  The NIF over the C++ runtime (`nif/`). Every function returns `{:ok, result}` or
  `{:error, reason}` (it never raises), with `reason` a `{kind, message}` tuple: `kind` is the
  runtime's error kind (`:out_of_memory`, `:device_lost`, `:timeout`,
  `:unsupported`, `:invalid_argument`, `:no_device`, `:vulkan`), `:ir_error` for a
  rejected graph, `:badarg` for a malformed argument, or `:exception`.

  Types cross the boundary as strings (`"f32"`), shapes as lists of integers.
  Compilation runs on dirty CPU schedulers, transfers and runs on dirty IO ones.
  """
  @on_load :load

  @doc false
  def load do
    :nx_vulkan
    |> :code.priv_dir()
    |> :filename.join(~c"nxv_nif")
    |> :erlang.load_nif(0)
  end

  @doc "Devices in preference order, as maps."
  def list_devices, do: :erlang.nif_error(:not_loaded)

  @doc """
  Opens the device for `(device, cache_dir, timeout_ms, robust_buffer_access, profile,
  emulate)`; see `runtime::RuntimeOptions` (`profile`: `""` for `$NXV_PROFILE`, `"none"`, a
  profile name or file; `emulate`: `""` for `$NXV_EMULATE`, `"auto"`, `"none"`, `"f64"`,
  `"i64"`, `"f64,i64"`).
  """
  def open_device(device, cache_dir, timeout_ms, robust_buffer_access \\ false, profile \\ "", emulate \\ "")

  def open_device(_device, _cache_dir, _timeout_ms, _robust_buffer_access, _profile, _emulate),
    do: :erlang.nif_error(:not_loaded)

  @doc "The opened device's description (as in `list_devices/0`)."
  def device_info(_device), do: :erlang.nif_error(:not_loaded)

  @doc "Bytes of device memory held by live buffers."
  def bytes_in_use(_device), do: :erlang.nif_error(:not_loaded)

  @doc "Returns pooled, unused device memory to the driver."
  def trim(_device), do: :erlang.nif_error(:not_loaded)

  @doc """
  Compiles JSON IR text with a pass pipeline (`[]` for the default), a precision for f32
  dots, `"highest"` (exact), `"high"` or `"default"` (see `Nx.Vulkan`'s `:precision`), and
  64-bit types to emulate besides the device's, `""`, `"f64"`, `"i64"` or `"f64,i64"`.
  """
  def compile(device, json, pipeline, precision \\ "highest", emulate \\ "")
  def compile(_device, _json, _pipeline, _precision, _emulate), do: :erlang.nif_error(:not_loaded)

  @doc "`%{inputs: [{type, shape}], outputs: [{type, shape}], kernels: n, lowered: json}`."
  def executable_info(_executable), do: :erlang.nif_error(:not_loaded)

  @doc "The executable's kernels as `[{name, text}]`, `form` `:spirv` (disassembly) or `:glsl`."
  def kernel_sources(_executable, _form), do: :erlang.nif_error(:not_loaded)

  @doc """
  What compiling JSON IR text with `pipeline` (`[]` for the default) goes through, as
  `nxv explore` shows it: `%{source: json, passes: [{pass, json}], lowered: json,
  kernels: [%{name:, fused:, spirv:, glsl:, validation:}], dispatches: n}` (kernels of
  `while`/`cond` regions included; `dispatches` counts kernels, not loop iterations).
  """
  def explore(device, json, pipeline, precision \\ "highest", emulate \\ "")
  def explore(_device, _json, _pipeline, _precision, _emulate), do: :erlang.nif_error(:not_loaded)

  @doc """
  Runs an executable. Each input is a buffer or `{type, shape, binary}`;
  `mode` is `:buffers` or `:binaries`. Returns `{:ok, {outputs, stats}}`.
  """
  def run(_executable, _inputs, _mode), do: :erlang.nif_error(:not_loaded)

  @doc """
  Runs a SPIR-V compute module built elsewhere, bounds-checked, once: `spirv` is the module's
  bytes; its storage buffers (set 0, bindings 0..) are `inputs` (buffers or
  `{type, shape, binary}`), then new buffers of `outputs` (`[{type, shape}]`);
  `push_constants` is a binary of at most 128 bytes; `groups` is `{x, y, z}`. The module is
  validated and its interface checked against all of these first. Returns
  `{:ok, {outputs, stats}}` as `run/3` does.
  """
  def run_spirv(_device, _spirv, _inputs, _outputs, _push_constants, _groups, _mode),
    do: :erlang.nif_error(:not_loaded)

  @doc "Copies a binary to a new device buffer of the given type and shape."
  def upload(_device, _type, _shape, _binary), do: :erlang.nif_error(:not_loaded)

  @doc "Copies a buffer to a binary."
  def download(_buffer), do: :erlang.nif_error(:not_loaded)

  @doc "`{type, shape}` of a buffer."
  def buffer_info(_buffer), do: :erlang.nif_error(:not_loaded)

  @doc """
  Releases a buffer's device memory now instead of when it is garbage collected:
  `{:ok, :ok}`, or `{:ok, :already_deallocated}`.
  """
  def free(_buffer), do: :erlang.nif_error(:not_loaded)

  @doc """
  A new cell: a mutable slot holding one term (any term, resources included) until it is
  replaced or the cell is garbage-collected. `Nx.Vulkan.Backend`'s lazy tensors keep their
  pending expression, then their buffer, in one.
  """
  def cell_new(_term), do: :erlang.nif_error(:not_loaded)

  @doc "A copy of the cell's term: `{:ok, term}`."
  def cell_get(_cell), do: :erlang.nif_error(:not_loaded)

  @doc "Replaces the cell's term: `{:ok, :ok}`."
  def cell_put(_cell, _term), do: :erlang.nif_error(:not_loaded)

  @doc """
  Replaces the cell's term only while it is a tuple whose first element is `tag`:
  `{:ok, true}` if it did, else `{:ok, false}`.
  """
  def cell_put_if(_cell, _tag, _term), do: :erlang.nif_error(:not_loaded)

  @doc """
  Element `index` (0-based) of the cell's term while it is a tuple whose first element is
  `tag`, without copying the rest of the term: `{:ok, element}`, else `{:ok, false}`.
  """
  def cell_field(_cell, _tag, _index), do: :erlang.nif_error(:not_loaded)
end
