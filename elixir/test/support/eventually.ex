defmodule Nx.Vulkan.Eventually do
  @moduledoc false
  # Buffers are freed when the BEAM collects their resources, which happens at a time
  # the tests do not control: poll, collecting garbage, until `fun` holds or `timeout_ms`
  # has passed.

  def eventually(fun, timeout_ms) do
    cond do
      fun.() ->
        true

      timeout_ms <= 0 ->
        false

      true ->
        Process.sleep(20)
        :erlang.garbage_collect()
        eventually(fun, timeout_ms - 20)
    end
  end
end
