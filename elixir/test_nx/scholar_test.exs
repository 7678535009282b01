defmodule Nx.Vulkan.ScholarTest do
  # Minimal reproductions of wrong results that Scholar (third-party defn code run with
  # Nx.Vulkan as the default compiler) exposed, each checked against Nx.Defn.Evaluator
  # with the default tolerances of Nx.Vulkan.Case (f32: 1e-5 absolute and relative).
  use Nx.Vulkan.Case, async: true

  # The evaluator's 40,000-update reference takes minutes on a loaded two-core machine.
  @moduletag timeout: 300_000

  import Nx.Defn

  # Scholar.Cluster.AffinityPropagation's availability update: a column sum subtracted
  # from every row, then the diagonal put back. Fusion took the column sum for a row-level
  # value and recomputed it per update of the put, per element: 40^4 loop steps, which
  # lavapipe cut short, leaving the last columns wrong.
  defn availability(r) do
    temp = Nx.max(r, 0)
    temp = Nx.put_diagonal(temp, Nx.take_diagonal(r))
    temp = temp - Nx.sum(temp, axes: [0])
    a_change = Nx.take_diagonal(temp)
    temp = Nx.max(temp, 0)
    Nx.put_diagonal(temp, a_change)
  end

  test "a column sum broadcast over the rows, then put_diagonal (affinity propagation)" do
    for n <- [5, 40, 64] do
      r = Nx.iota({n, n}, type: :f32) |> Nx.multiply(0.37) |> Nx.sin() |> Nx.multiply(100)
      assert_matches_evaluator(&availability/1, [r])
    end
  end

  # lavapipe ends all loops of a shader invocation after 65535 steps in total. Each element
  # of an indexed_add loops over all 40000 updates; on lavapipe's usual launch an invocation
  # computed two of the 8192 elements (80002 steps), and the second came out short.
  test "an indexed_add whose elements each loop over 40000 updates (lavapipe's loop limit)" do
    {idx, _} = Nx.Random.randint(Nx.Random.key(3), 0, 8192, shape: {40000, 1})
    updates = Nx.iota({40000}, type: :f32) |> Nx.remainder(7)
    add = fn t, i, u -> Nx.indexed_add(t, i, u) end
    assert_matches_evaluator(add, [Nx.broadcast(0.0, {8192}), idx, updates])
  end
end
