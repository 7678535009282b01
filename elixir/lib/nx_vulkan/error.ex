defmodule Nx.Vulkan.Error do
  @moduledoc """
  Raised when the device layer fails: `kind` is the NIF's error kind (see
  `Nx.Vulkan.Native`), `message` its explanation.
  """
  defexception [:kind, :message]

  @doc "Unwraps `{:ok, value}`; raises this exception for `{:error, {kind, message}}`."
  def unwrap!({:ok, value}), do: value
  def unwrap!({:error, {kind, message}}), do: raise(__MODULE__, kind: kind, message: "#{kind}: #{message}")
end
