defmodule Nx.Vulkan.NxDoctestTest do
  # Nx's own doctests (examples nobody here wrote) with every tensor on Nx.Vulkan.Backend:
  # each eager operation runs on the device as a one-node graph compiled by Nx.Vulkan.
  use ExUnit.Case, async: false

  setup do
    Nx.default_backend(Nx.Vulkan.Backend)
    :ok
  end

  doctest Nx, except: [:moduledoc]
end
