defmodule Nx.Vulkan.ScholarTest do
  # Minimal reproductions of wrong results that Scholar (third-party defn code run with
  # Nx.Vulkan as the default compiler) exposed, each checked against Nx.Defn.Evaluator
  # with the default tolerances of Nx.Vulkan.Case (f32: 1e-5 absolute and relative).
  use Nx.Vulkan.Case, async: true

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
end
