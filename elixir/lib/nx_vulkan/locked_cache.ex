defmodule Nx.Vulkan.LockedCache do
  @moduledoc false
  # Compiled executables, computed once per key even when many processes ask for
  # the same key at the same time: the first computes, the others wait for it
  # (as EXLA.Defn.LockedCache). Values live in a public ETS table so hits never
  # touch the server. At most `:cache_size` (application env) entries stay: each
  # hit stamps its entry, and the server drops the least recently stamped after a
  # miss adds one beyond the bound. A dropped executable lives on while a process
  # still holds it (its NIF resource), and is then freed with it.
  use GenServer

  @name __MODULE__

  @doc "Returns `{:hit, value}` or `{:miss, value}` after running `fun` to compute it."
  def run(key, fun) do
    case :ets.lookup(@name, key) do
      [{^key, value, _used}] ->
        :ets.update_element(@name, key, {3, stamp()})
        {:hit, value}

      [] ->
        locked_run(key, fun)
    end
  end

  @doc "The number of entries cached."
  def size, do: :ets.info(@name, :size)

  defp stamp, do: :erlang.unique_integer([:monotonic])

  defp locked_run(key, fun) do
    case GenServer.call(@name, {:lock, key}, :infinity) do
      :cached ->
        run(key, fun)

      {:compute, ref} ->
        try do
          fun.()
        catch
          kind, reason ->
            GenServer.cast(@name, {:failed, ref})
            :erlang.raise(kind, reason, __STACKTRACE__)
        else
          value ->
            :ets.insert(@name, {key, value, stamp()})
            GenServer.cast(@name, {:done, ref})
            {:miss, value}
        end
    end
  end

  def start_link(_), do: GenServer.start_link(__MODULE__, :ok, name: @name)

  @impl true
  def init(:ok) do
    :ets.new(@name, [:public, :set, :named_table, read_concurrency: true, write_concurrency: true])
    # key => {monitor ref of the computing process, waiting callers}
    {:ok, %{locks: %{}, keys: %{}}}
  end

  @impl true
  def handle_call({:lock, key}, {pid, _} = from, state) do
    cond do
      :ets.member(@name, key) ->
        {:reply, :cached, state}

      Map.has_key?(state.locks, key) ->
        {:noreply, update_in(state.locks[key], fn {ref, waiting} -> {ref, [from | waiting]} end)}

      true ->
        ref = Process.monitor(pid)

        {:reply, {:compute, ref},
         %{state | locks: Map.put(state.locks, key, {ref, []}), keys: Map.put(state.keys, ref, key)}}
    end
  end

  @impl true
  def handle_cast({:done, ref}, state) do
    evict()
    {:noreply, release(ref, state)}
  end

  def handle_cast({:failed, ref}, state), do: {:noreply, release(ref, state)}

  @impl true
  def handle_info({:DOWN, ref, _, _, _}, state), do: {:noreply, release(ref, state)}

  # A scan of the whole table, on misses only: they compile, which costs far more.
  defp evict do
    bound = Application.get_env(:nx_vulkan, :cache_size, 256)
    excess = :ets.info(@name, :size) - bound

    if excess > 0 do
      :ets.select(@name, [{{:"$1", :_, :"$2"}, [], [{{:"$2", :"$1"}}]}])
      |> Enum.sort()
      |> Enum.take(excess)
      |> Enum.each(fn {_used, key} -> :ets.delete(@name, key) end)
    end
  end

  # Waiters retry: they find the value, or (after a failure) one of them computes.
  defp release(ref, state) do
    Process.demonitor(ref, [:flush])

    case Map.pop(state.keys, ref) do
      {nil, _} ->
        state

      {key, keys} ->
        {{^ref, waiting}, locks} = Map.pop(state.locks, key)
        Enum.each(waiting, &GenServer.reply(&1, :cached))
        %{state | locks: locks, keys: keys}
    end
  end
end
