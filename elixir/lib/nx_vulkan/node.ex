defmodule Nx.Vulkan.Node do
  @moduledoc """
  The earlier nx_vulkan ran GPU work on a separate BEAM node so that a crashing driver call
  could not take the caller's VM down; eXMC routes chain dispatches through it when
  `config :exmc, :gpu_node, true` and `alive?/0` say so. Here every native call returns an
  error instead of crashing and a stuck submit ends in a `:timeout` error, so there is no
  such node: `alive?/0` is `false` and eXMC dispatches directly.
  """

  @doc "Always `false`: there is no separate GPU node."
  def alive?, do: false

  @doc """
  Runs `fun` in a task and returns its result, or `{:error, :node_timeout}` when it takes
  longer than `timeout` milliseconds (the earlier node's contract, for callers that use it
  without asking `alive?/0`).
  """
  def with_node(fun, timeout \\ 120_000) do
    task = Task.async(fun)

    case Task.yield(task, timeout) || Task.shutdown(task, :brutal_kill) do
      {:ok, result} -> result
      _ -> {:error, :node_timeout}
    end
  end
end
