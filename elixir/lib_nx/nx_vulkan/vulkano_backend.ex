defmodule Nx.Vulkan.VulkanoBackend do
  @moduledoc """
  `Nx.Vulkan.Backend` under the name the earlier nx_vulkan gave its backend, so that
  code written for it (eXMC's `Nx.default_backend(Nx.Vulkan.VulkanoBackend)`) runs
  unchanged. Its callbacks are `Nx.Vulkan.Backend`'s: the tensors it creates are
  `Nx.Vulkan.Backend` tensors, so every operation on them afterwards dispatches to
  `Nx.Vulkan.Backend` itself and mixes freely with tensors made under either name.
  """

  @behaviour Nx.Backend

  Code.ensure_compiled!(Nx.Vulkan.Backend)

  # Only what Nx.Vulkan.Backend implements: an optional callback it leaves out must
  # stay undefined here too, so that Nx uses its default implementation for both names.
  for {name, arity} <- Nx.Backend.behaviour_info(:callbacks),
      function_exported?(Nx.Vulkan.Backend, name, arity) do
    args = Macro.generate_arguments(arity, __MODULE__)

    @impl true
    defdelegate unquote(name)(unquote_splicing(args)), to: Nx.Vulkan.Backend
  end
end
