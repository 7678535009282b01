defmodule Nx.Vulkan.LockedCacheTest do
  # The compiled-executable cache's bound (`:cache_size`): the least recently used
  # entries go, hits count as uses, and what went is computed again. Not async: it
  # changes the application env and fills the cache that every test shares.
  use ExUnit.Case, async: false

  alias Nx.Vulkan.LockedCache

  setup do
    bound = Application.fetch_env!(:nx_vulkan, :cache_size)
    Application.put_env(:nx_vulkan, :cache_size, 3)
    on_exit(fn -> Application.put_env(:nx_vulkan, :cache_size, bound) end)
  end

  defp key(i), do: {__MODULE__, i}
  # The server evicts as it handles each miss's completion; a call waits for those.
  defp settle, do: :sys.get_state(LockedCache)
  defp cached?(i), do: :ets.member(LockedCache, key(i))

  test "keeps the most recently used entries within the bound" do
    for i <- 1..3, do: assert({:miss, ^i} = LockedCache.run(key(i), fn -> i end))
    settle()
    assert {:hit, 1} = LockedCache.run(key(1), fn -> flunk("computed a cached value") end)
    assert {:miss, 4} = LockedCache.run(key(4), fn -> 4 end)
    settle()
    assert Enum.filter(1..4, &cached?/1) == [1, 3, 4]
    assert LockedCache.size() <= 3

    for i <- 5..40, do: LockedCache.run(key(i), fn -> i end)
    settle()
    assert LockedCache.size() <= 3
    assert Enum.filter(1..40, &cached?/1) == [38, 39, 40]
    assert {:miss, :again} = LockedCache.run(key(1), fn -> :again end)
  end

  test "concurrent callers of one key compute it once, and the bound holds" do
    parent = self()

    results =
      1..20
      |> Enum.map(fn _ ->
        Task.async(fn -> LockedCache.run(key(:shared), fn -> send(parent, :computed) && :value end) end)
      end)
      |> Enum.map(&Task.await/1)

    assert Enum.all?(results, &match?({_, :value}, &1))
    assert_received :computed
    refute_received :computed

    for i <- 1..10, do: Task.async(fn -> LockedCache.run(key(i), fn -> i end) end) |> Task.await()
    settle()
    assert LockedCache.size() <= 3
  end
end
