defmodule Nx.Vulkan.Compiler do
  @moduledoc """
  `Nx.Vulkan` under the name the earlier nx_vulkan gave its defn compiler, so that
  code written for it (eXMC's `Nx.Defn.default_options(compiler: Nx.Vulkan.Compiler)`)
  runs unchanged. Every `Nx.Defn.Compiler` callback is `Nx.Vulkan`'s, so both names
  share one executable cache and return the same `Nx.Vulkan.Backend` tensors.
  """

  @behaviour Nx.Defn.Compiler

  # Every callback this Nx declares (optional ones included); Nx.Vulkan defines all of
  # them for every Nx version it supports.
  for {name, arity} <- Nx.Defn.Compiler.behaviour_info(:callbacks) do
    args = Macro.generate_arguments(arity, __MODULE__)

    @impl true
    defdelegate unquote(name)(unquote_splicing(args)), to: Nx.Vulkan
  end
end
