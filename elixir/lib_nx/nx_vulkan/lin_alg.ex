defmodule Nx.Vulkan.LinAlg do
  @moduledoc false
  # Linear algebra the IR has no op for, written with ops it has, for the serialiser
  # (Nx.Vulkan.IR) to inline in place of `triangular_solve` and of the default
  # implementations `Nx.LinAlg.solve/2`, `determinant/1` and `cholesky/1` carry (which
  # need gather, scatter and loops). Every function takes and returns `Nx.Defn.Expr`
  # tensors: applying Nx functions to them builds the expression. Matrices are rank 2
  # with a static size n; the algorithms are unrolled over n (O(n) nodes), which suits
  # the small systems a GPU graph solves inline.

  import Nx, only: [slice: 3]

  @doc "Whether the inline versions handle these arguments (rank-2 square matrices)."
  def supported?(%{shape: {n, n}}) when n > 0, do: true
  def supported?(_), do: false

  @doc "Nx.LinAlg.triangular_solve/3 for a rank-2 `a` and a rank-1 or rank-2 `b`."
  def triangular_solve(a, b, opts) do
    lower = Keyword.get(opts, :lower, true)
    left_side = Keyword.get(opts, :left_side, true)
    {a, lower} = if opts[:transform_a] == :transpose, do: {Nx.transpose(a), not lower}, else: {a, lower}

    cond do
      left_side ->
        left_solve(a, b, lower)

      Nx.rank(b) == 1 ->
        # x a = b  <=>  a^T x = b
        left_solve(Nx.transpose(a), b, not lower)

      true ->
        # X A = B  <=>  A^T X^T = B^T
        a |> Nx.transpose() |> left_solve(Nx.transpose(b), not lower) |> Nx.transpose()
    end
  end

  # A x = b with A triangular.
  defp left_solve(a, b, true), do: forward(a, b)

  defp left_solve(a, b, false) do
    # reversing the rows and columns of an upper triangular matrix makes it lower triangular
    a |> Nx.reverse(axes: [0, 1]) |> forward(Nx.reverse(b, axes: [0])) |> Nx.reverse(axes: [0])
  end

  # Forward substitution, one row of x at a time (reads only the lower triangle).
  defp forward(a, b) do
    {n, n} = a.shape
    vector? = Nx.rank(b) == 1
    b = if vector?, do: Nx.reshape(b, {n, 1}), else: b
    m = elem(b.shape, 1)

    rows =
      Enum.reduce(0..(n - 1), [], fn i, rows ->
        bi = slice(b, [i, 0], [1, m])
        aii = slice(a, [i, i], [1, 1])

        xi =
          case rows do
            [] ->
              Nx.divide(bi, aii)

            _ ->
              Nx.divide(
                Nx.subtract(bi, Nx.dot(slice(a, [i, 0], [1, i]), Nx.concatenate(Enum.reverse(rows)))),
                aii
              )
          end

        [xi | rows]
      end)

    x = Nx.concatenate(Enum.reverse(rows))
    if vector?, do: Nx.reshape(x, {n}), else: x
  end

  @doc "Nx.LinAlg.solve/2: Gaussian elimination with partial pivoting, then back substitution."
  def solve(a, b) do
    {n, n} = a.shape
    vector? = Nx.rank(b) == 1
    b2 = if vector?, do: Nx.reshape(b, {n, 1}), else: b
    {aug, _sign} = eliminate(Nx.concatenate([a, b2], axis: 1), n)
    cols = elem(aug.shape, 1)
    u = slice(aug, [0, 0], [n, n])
    y = slice(aug, [0, n], [n, cols - n])
    x = left_solve(u, y, false)
    if vector?, do: Nx.reshape(x, {n}), else: x
  end

  @doc "Nx.LinAlg.determinant/1: the product of the pivots of the elimination, with its sign."
  def determinant(a) do
    {n, n} = a.shape
    {u, sign} = eliminate(a, n)
    diagonal = Nx.sum(Nx.multiply(u, Nx.eye(n, type: u.type)), axes: [1])
    Nx.multiply(Nx.product(diagonal), sign)
  end

  # Row-reduces the first n columns of `m` ({n, c}) to upper triangular form with partial
  # pivoting. Returns the reduced matrix and the permutation's sign (+1/-1).
  defp eliminate(m, n) do
    type = m.type
    rows = Nx.iota({n}, type: :s64)
    eye = Nx.eye(n, type: type)
    cols = elem(m.shape, 1)

    Enum.reduce(0..(n - 1)//1, {m, Nx.tensor(1, type: type)}, fn k, {m, sign} ->
      column = Nx.reshape(slice(m, [0, k], [n, 1]), {n})
      # the largest |value| at or below row k (NaN-free inputs; -1 never wins)
      candidates = Nx.select(Nx.greater_equal(rows, k), Nx.abs(column), Nx.tensor(-1, type: type))
      p = Nx.argmax(candidates, tie_break: :low)
      ek = Nx.as_type(Nx.equal(rows, k), type)
      ep = Nx.as_type(Nx.equal(rows, p), type)
      swap = eye |> Nx.subtract(Nx.outer(ek, ek)) |> Nx.subtract(Nx.outer(ep, ep))
      swap = swap |> Nx.add(Nx.outer(ek, ep)) |> Nx.add(Nx.outer(ep, ek))
      # (when p == k the outer products cancel and swap is the identity)
      m = Nx.dot(swap, m)
      sign = Nx.select(Nx.equal(p, k), sign, Nx.negate(sign))

      pivot_row = slice(m, [k, 0], [1, cols])
      pivot = slice(m, [k, k], [1, 1]) |> Nx.reshape({})
      column = Nx.reshape(slice(m, [0, k], [n, 1]), {n})
      factors = Nx.select(Nx.greater(rows, k), Nx.divide(column, pivot), Nx.tensor(0, type: type))
      {Nx.subtract(m, Nx.outer(factors, Nx.reshape(pivot_row, {cols}))), sign}
    end)
  end

  @doc "Nx.LinAlg.cholesky/1: Cholesky–Banachiewicz, one column of L at a time."
  def cholesky(a) do
    {n, n} = a.shape
    type = a.type
    rows = Nx.iota({n}, type: :s64)
    columns = Nx.iota({n, n}, axis: 1, type: :s64)

    Enum.reduce(0..(n - 1), Nx.broadcast(Nx.tensor(0, type: type), {n, n}), fn j, l ->
      # c_i = a_ij - sum_{k<j} l_ik l_jk (columns j.. of l are still zero)
      lj = Nx.reshape(slice(l, [j, 0], [1, n]), {n})
      c = Nx.subtract(Nx.reshape(slice(a, [0, j], [n, 1]), {n}), Nx.dot(l, lj))
      d = Nx.sqrt(Nx.reshape(slice(c, [j], [1]), {}))

      col =
        Nx.select(
          Nx.greater(rows, j),
          Nx.divide(c, d),
          Nx.select(Nx.equal(rows, j), d, Nx.tensor(0, type: type))
        )

      Nx.select(Nx.equal(columns, j), Nx.broadcast(Nx.reshape(col, {n, 1}), {n, n}), l)
    end)
  end
end
