defmodule Nx.Vulkan.VulkanoBackend do
  @moduledoc """
  `Nx.Vulkan.Backend` under the name the earlier nx_vulkan gave its backend, so that
  code written for it (eXMC's `Nx.default_backend(Nx.Vulkan.VulkanoBackend)`) runs
  unchanged. Its callbacks are `Nx.Vulkan.Backend`'s: the tensors it creates are
  `Nx.Vulkan.Backend` tensors, so every operation on them afterwards dispatches to
  `Nx.Vulkan.Backend` itself and mixes freely with tensors made under either name.

  Unlike `Nx.Vulkan.Backend`, it is lazy unless told otherwise (`lazy: false`): eXMC
  evaluates its models operation by operation on the default backend (`Exmc.JIT.jit/2`
  runs `Nx.Defn.Evaluator`), which lazy mode compiles into one graph per value read, its
  arithmetic on a model's few scalars running on the host (see `Nx.Vulkan.Backend`, lazy
  mode).
  """

  @behaviour Nx.Backend

  Code.ensure_compiled!(Nx.Vulkan.Backend)

  # Only what Nx.Vulkan.Backend implements: an optional callback it leaves out must
  # stay undefined here too, so that Nx uses its default implementation for both names.
  # The callbacks that take backend options, which Nx passes as given (Nx.tensor/2) or
  # from init/1: lazy unless they say otherwise.
  @with_options [init: 1, constant: 3, from_binary: 3, eye: 2, iota: 3]

  for {name, arity} <- @with_options do
    args = Macro.generate_arguments(arity - 1, __MODULE__)

    @impl true
    def unquote(name)(unquote_splicing(args), opts),
      do: Nx.Vulkan.Backend.unquote(name)(unquote_splicing(args), Keyword.put_new(opts, :lazy, true))
  end

  for {name, arity} <- Nx.Backend.behaviour_info(:callbacks),
      {name, arity} not in @with_options,
      function_exported?(Nx.Vulkan.Backend, name, arity) do
    args = Macro.generate_arguments(arity, __MODULE__)

    @impl true
    defdelegate unquote(name)(unquote_splicing(args)), to: Nx.Vulkan.Backend
  end
end
