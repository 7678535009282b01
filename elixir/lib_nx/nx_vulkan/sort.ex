defmodule Nx.Vulkan.Sort do
  @moduledoc false
  # Nx.sort/2 and Nx.argsort/2 written with ops the IR has, for the serialiser
  # (Nx.Vulkan.IR) to inline in place of the `sort` and `argsort` nodes (and so of
  # everything Nx builds on them: top_k, median, mode, the SVD's ordering, shuffles, the
  # gradient of sort). Rank-based and data-parallel: with the sort axis moved last, each
  # element's final position is the number of elements of its row placed before it, one
  # reduction over the row compared with itself ([..., n, n], never stored: the compare
  # fuses into the reduction); a second reduction of the same size inverts those ranks
  # into the argsort (scattering the indices with indexed_put would cost more: the IR's
  # indexed ops visit every update for every element, quadratic in the whole tensor rather
  # than per row), and sort gathers the values at it. O(n^2) work per row of n, in
  # parallel over rows and positions: fine for rows of up to a few thousand elements.
  #
  # The order is Nx.BinaryBackend's, which the evaluator uses: a stable merge sort
  # (whatever `:stable` says) whose comparator places NaN after +Inf ascending and before
  # it descending, treats every NaN as equal to every other and -0.0 as equal to 0.0 (so
  # those keep their input order). Takes and returns `Nx.Defn.Expr` tensors.

  alias Nx.Defn.Expr

  @index_type {:s, 32}

  @doc "The `sort` node: the values in sorted order along `opts[:axis]`."
  def sort(x, opts) do
    rows = rows(x, opts[:axis])

    rows
    |> Nx.take_along_axis(permutation(rows, opts[:direction]), axis: -1)
    |> unrows(opts[:axis])
  end

  @doc "The `argsort` node `out` (its type is the indices' type)."
  def argsort(out, x, opts) do
    x
    |> rows(opts[:axis])
    |> permutation(opts[:direction])
    |> Nx.as_type(out.type)
    |> unrows(opts[:axis])
  end

  defp rows(x, axis), do: Nx.transpose(x, axes: row_axes(x, axis))

  defp unrows(x, axis), do: Nx.transpose(x, axes: inverse(row_axes(x, axis)))

  # The sort axis last, the others in order.
  defp row_axes(x, axis), do: List.delete(Nx.axes(x), axis) ++ [axis]

  defp inverse(permutation) do
    permutation |> Enum.with_index() |> Enum.sort() |> Enum.map(&elem(&1, 1))
  end

  # For each position k of each row, the index of the element that the stable sort
  # places there: the i whose rank is k (ranks are a permutation of 0..n-1).
  defp permutation(rows, direction) do
    n = Nx.axis_size(rows, -1)
    rank = rows |> ranks(direction) |> Nx.new_axis(-2)
    position = iota({n, 1}, 0)

    Nx.equal(rank, position)
    |> Nx.select(iota({1, n}, 1), Nx.tensor(0, type: @index_type))
    |> Nx.sum(axes: [-1])
    |> Nx.as_type(@index_type)
  end

  # The rank of element i: the elements j that go before it. An earlier j (j < i) goes
  # before i unless i strictly precedes it (ties keep their order); a later one only if
  # it strictly precedes i. (The j < i mask broadcasts implicitly, so that constant
  # folding makes it at most an [n, n] literal, not one per row.)
  defp ranks(rows, direction) do
    n = Nx.axis_size(rows, -1)
    xi = Nx.new_axis(rows, -1)
    xj = Nx.new_axis(rows, -2)
    earlier = Nx.less(iota({1, n}, 1), iota({n, 1}, 0))

    Nx.logical_or(
      Nx.logical_and(earlier, Nx.logical_not(precedes(xi, xj, direction))),
      Nx.logical_and(Nx.logical_not(earlier), precedes(xj, xi, direction))
    )
    |> Nx.sum(axes: [-1])
    |> Nx.as_type(@index_type)
  end

  # Whether a goes strictly before b. Ascending, NaN is last; descending, first. Integers
  # have no NaN.
  defp precedes(a, b, direction) do
    ordered = if direction == :desc, do: Nx.greater(a, b), else: Nx.less(a, b)

    cond do
      not Nx.Type.float?(a.type) ->
        ordered

      direction == :desc ->
        Nx.logical_or(Nx.logical_and(Nx.is_nan(a), Nx.logical_not(Nx.is_nan(b))), ordered)

      true ->
        Nx.logical_and(Nx.logical_not(Nx.is_nan(a)), Nx.logical_or(Nx.is_nan(b), ordered))
    end
  end

  defp iota(shape, axis), do: Nx.iota(shape, axis: axis, type: @index_type, backend: Expr)
end
