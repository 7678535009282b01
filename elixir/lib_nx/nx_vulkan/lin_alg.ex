defmodule Nx.Vulkan.LinAlg do
  @moduledoc false
  # Linear algebra the IR has no op for, written with ops it has, for the serialiser
  # (Nx.Vulkan.IR) to inline in place of `triangular_solve` and `lu` (Nx <= 0.10) and of
  # the default implementations `Nx.LinAlg.solve/2`, `determinant/1`, `cholesky/1` and
  # `lu/1` (Nx >= 0.11) carry (which need gather, scatter and loops). Every function takes and returns `Nx.Defn.Expr`
  # tensors: applying Nx functions to them builds the expression. The serialiser calls
  # them inside a trace (`Nx.Defn.debug_expr_apply/2`), since the large forms build `while`
  # loops, which only a trace can.
  #
  # Matrices are rank 2 with a static size n. Each algorithm is a sequence of steps over a
  # row or column index k, written once for a k that is an integer or a scalar tensor:
  # up to @unroll_max they are unrolled (O(n) nodes, no loop: the fastest to run for
  # the small systems of MCMC models), beyond it they are the body of one `while` over k,
  # whose size, and so the compile time, does not grow with n.

  import Nx.Defn
  import Nx, only: [slice: 3]

  # Measured on lavapipe (bench/linalg_bench.exs): up to this size the
  # unrolled form compiles in well under a second and runs faster than a loop.
  @unroll_max 16

  @doc "Whether the inline versions handle these arguments (rank-2 square matrices)."
  def supported?(%{shape: {n, n}}) when n > 0, do: true
  def supported?(_), do: false

  @doc """
  Nx.LinAlg.triangular_solve/3: `a` of shape {..., n, n}, `b` with the same batch axes.
  A batch is solved matrix by matrix: each solve is unrolled over the static size.
  """
  def triangular_solve(%{shape: shape} = a, b, opts) when tuple_size(shape) > 2,
    do: over_batch([a, b], &triangular_solve(&1, &2, opts))

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

    # x_i = (b_i - a_i,<i · x_<i) / a_ii; the rows of x from i on are still zero, and the
    # entries of a from the diagonal on are masked out, so that an infinity or NaN there
    # (which the backend never reads) does not reach x.
    x =
      steps(Nx.broadcast(Nx.tensor(0, type: b.type), b.shape), {a, b}, n, fn x, {a, b}, i ->
        left = Nx.select(Nx.less(Nx.iota({1, n}), i), slice(a, [i, 0], [1, n]), Nx.tensor(0, type: a.type))
        xi = Nx.divide(Nx.subtract(slice(b, [i, 0], [1, m]), matmul(left, x, i)), slice(a, [i, i], [1, 1]))
        Nx.select(Nx.equal(Nx.iota({n, m}, axis: 0), i), xi, x)
      end)

    if vector?, do: Nx.reshape(x, {n}), else: x
  end

  @doc "Nx.LinAlg.solve/2: Gaussian elimination with partial pivoting, then back substitution."
  def solve(a, b) do
    {n, n} = a.shape
    vector? = Nx.rank(b) == 1
    b2 = if vector?, do: Nx.reshape(b, {n, 1}), else: b
    {lu, _order, _sign} = eliminate(Nx.concatenate([a, b2], axis: 1), n)
    cols = elem(lu.shape, 1)
    u = slice(lu, [0, 0], [n, n])
    y = slice(lu, [0, n], [n, cols - n])
    x = left_solve(u, y, false)
    if vector?, do: Nx.reshape(x, {n}), else: x
  end

  @doc "Nx.LinAlg.determinant/1: the product of the pivots of the elimination, with its sign."
  def determinant(a) do
    {n, n} = a.shape
    {lu, _order, sign} = eliminate(a, n)
    diagonal = Nx.sum(Nx.multiply(lu, Nx.eye(n, type: lu.type)), axes: [1])
    Nx.multiply(Nx.product(diagonal), sign)
  end

  @doc """
  Nx.LinAlg.lu/1 as Nx >= 0.11 computes it (its default implementation, `Nx.LinAlg.LU`,
  which the evaluator runs): Gaussian elimination with partial pivoting. Returns
  `{p, l, u}` with `a = p l u`; `p` has the type of `a`, `l` and `u` its floating type.
  """
  def lu(a) do
    {n, n} = a.shape
    {lu, order, _sign} = a |> Nx.as_type(Nx.Type.to_floating(a.type)) |> eliminate(n)
    factors(lu, order, a.type)
  end

  @doc """
  Nx.LinAlg.lu/2 as Nx.BinaryBackend of Nx <= 0.10 computes it, so that `p` matches: the
  rows of `a` are ordered by the same pivot choice applied to `a` itself, before any
  elimination; Doolittle's elimination follows without pivoting, setting entries of L and
  U smaller than `eps` in magnitude to zero, and making a multiplier of a zero pivot an
  infinity (+ for an entry >= 0).
  """
  def lu_prepivoted(%{shape: shape} = a, eps) when tuple_size(shape) > 2,
    do: over_batch([a], &lu_prepivoted(&1, eps))

  def lu_prepivoted(a, eps) do
    {n, n} = a.shape
    m = Nx.as_type(a, Nx.Type.to_floating(a.type))

    # Only the order of the rows changes: column k's pivot is chosen among its entries in
    # the current order (the last of the n steps finds row n - 1 its own), and the rows
    # are gathered once, so that no chain of swaps reaches the elimination's kernels.
    order =
      steps(Nx.iota({n}, type: :s64), {m}, n, fn order, {m}, k ->
        column = Nx.take(Nx.reshape(slice(m, [0, k], [n, 1]), {n}), order)
        swap_rows(order, k, pivot_row(column, k))
      end)

    lu =
      steps(Nx.take(m, order), {}, n, fn m, {}, k ->
        m |> zero_small_in_row(k, eps) |> eliminate_column(k, &doolittle_multipliers(&1, &2, eps))
      end)

    factors(lu, order, a.type)
  end

  # Row-reduces the first n columns of `m` ({n, c}) with partial pivoting, in place: U on
  # and above the diagonal, L's multipliers below it, the other columns reduced along.
  # Returns that matrix, the row order it ends in (`order[i]`: the row of `m` now at i)
  # and the permutation's sign (+1/-1).
  defp eliminate(m, n) do
    type = m.type

    steps({m, Nx.iota({n}, type: :s64), Nx.tensor(1, type: type)}, {}, n, fn {m, order, sign}, {}, k ->
      p = pivot_row(Nx.reshape(slice(m, [0, k], [n, 1]), {n}), k)
      sign = Nx.select(Nx.equal(p, k), sign, Nx.negate(sign))
      {m |> swap_rows(k, p) |> eliminate_column(k, &multipliers/2), swap_rows(order, k, p), sign}
    end)
  end

  # The row at or below k holding the largest |column[row]| (the first of equal ones), or
  # the last NaN there: Nx.LinAlg.LU's argmax as the evaluator runs it (Nx.BinaryBackend's
  # argmax takes every NaN it meets; the IR's, the first).
  defp pivot_row(column, k) do
    {n} = column.shape
    rows = Nx.iota({n}, type: :s64)
    candidate? = Nx.greater_equal(rows, k)
    # (|.| is real for a complex matrix, and NaN where a part is)
    magnitude = Nx.abs(column)
    last_nan = Nx.reduce_max(Nx.select(Nx.logical_and(candidate?, Nx.is_nan(magnitude)), rows, -1))
    # (-1 never wins)
    largest = Nx.argmax(Nx.select(candidate?, magnitude, Nx.tensor(-1, type: magnitude.type)), tie_break: :low)
    Nx.select(Nx.greater_equal(last_nan, 0), last_nan, largest)
  end

  # `t` with its entries (rank 1) or rows (rank 2) k and p exchanged: selected, not
  # computed, so that values move unchanged as the backend moves them (a permutation
  # matrix product would turn an infinity into NaNs in every row).
  defp swap_rows(t, k, p) do
    [_n | rest] = Tuple.to_list(t.shape)
    row = fn i -> slice(t, [i | Enum.map(rest, fn _ -> 0 end)], [1 | rest]) end
    rows = Nx.iota(t.shape, axis: 0)
    Nx.select(Nx.equal(rows, k), row.(p), Nx.select(Nx.equal(rows, p), row.(k), t))
  end

  # Step k of the elimination: the entries below the pivot become L's multipliers
  # (`multipliers` of column k and the pivot), and the rows below k lose multiplier times
  # row k right of column k.
  defp eliminate_column(m, k, multipliers) do
    {n, cols} = m.shape
    column = Nx.reshape(slice(m, [0, k], [n, 1]), {n})
    pivot = Nx.reshape(slice(m, [k, k], [1, 1]), {})
    l = multipliers.(column, pivot)
    pivot_row = Nx.reshape(slice(m, [k, 0], [1, cols]), {cols})
    below = Nx.greater(Nx.iota({n, 1}), k)
    columns = Nx.iota({1, cols})
    # l pivot_rowᵀ without Nx.outer, which conjugates its second argument
    update = Nx.multiply(Nx.new_axis(l, 1), Nx.new_axis(pivot_row, 0))
    m = Nx.select(Nx.logical_and(below, Nx.greater(columns, k)), Nx.subtract(m, update), m)
    Nx.select(Nx.logical_and(below, Nx.equal(columns, k)), Nx.reshape(l, {n, 1}), m)
  end

  # Nx.LinAlg.LU leaves a column with a zero pivot as it is (all zeros below the pivot,
  # which is the largest in magnitude), so a singular matrix yields no NaN.
  defp multipliers(column, pivot) do
    Nx.select(Nx.equal(pivot, 0), column, Nx.divide(column, pivot))
  end

  # Nx.BinaryBackend's (Nx <= 0.10), see lu_prepivoted/2.
  defp doolittle_multipliers(column, pivot, eps) do
    # (complex: Inf + 0i, signed by the real part; the backend's `>=` on complex structs
    # orders them as maps)
    real = if Nx.Type.complex?(column.type), do: Nx.real(column), else: column
    type = real.type

    infinity =
      Nx.select(Nx.greater_equal(real, 0), Nx.Constants.infinity(type), Nx.Constants.neg_infinity(type))

    Nx.select(Nx.equal(pivot, 0), infinity, Nx.divide(column, pivot)) |> zero_small(eps)
  end

  # Row k of U, on and right of the diagonal, as Nx.BinaryBackend's Doolittle stores it.
  defp zero_small_in_row(m, k, eps) do
    {n, cols} = m.shape
    in_row = Nx.logical_and(Nx.equal(Nx.iota({n, 1}), k), Nx.greater_equal(Nx.iota({1, cols}), k))
    Nx.select(in_row, zero_small(m, eps), m)
  end

  @doc "Entries under `eps` in magnitude zeroed, as Nx.BinaryBackend's `approximate_zeros`."
  def zero_small(x, eps), do: Nx.select(Nx.less(Nx.abs(x), eps), Nx.tensor(0, type: x.type), x)

  # {p, l, u} from the in-place factorisation and its row order (row i of l u is row
  # order[i] of a, so p[i][j] = (order[j] == i)).
  defp factors(lu, order, p_type) do
    {n, n} = lu.shape
    row = Nx.iota({n, 1})
    column = Nx.iota({1, n})
    l = Nx.select(Nx.greater(row, column), lu, Nx.eye(n, type: lu.type))
    u = Nx.select(Nx.less_equal(row, column), lu, Nx.tensor(0, type: lu.type))
    p = row |> Nx.equal(Nx.reshape(order, {1, n})) |> Nx.as_type(p_type)
    {p, l, u}
  end

  @doc """
  Nx.LinAlg.cholesky/1 as its default implementation computes it: Cholesky–Banachiewicz,
  one column of L at a time, dividing by the pivot plus `eps` (1.0e-10), and with entries
  up to `eps` in magnitude zeroed at the end.
  """
  def cholesky(a) do
    {n, n} = a.shape
    type = a.type
    eps = 1.0e-10

    l =
      steps(Nx.broadcast(Nx.tensor(0, type: type), {n, n}), {a}, n, fn l, {a}, j ->
        rows = Nx.iota({n})
        # c_i = a_ij - sum_{k<j} l_ik conj(l_jk) (columns j.. of l are still zero)
        lj = Nx.reshape(slice(l, [j, 0], [1, n]), {n, 1})
        lj = if Nx.Type.complex?(type), do: Nx.conjugate(lj), else: lj
        c = Nx.subtract(Nx.reshape(slice(a, [0, j], [n, 1]), {n}), Nx.reshape(matmul(l, lj, j), {n}))
        d = Nx.sqrt(Nx.reshape(slice(c, [j], [1]), {}))

        col =
          Nx.select(
            Nx.greater(rows, j),
            Nx.divide(c, Nx.add(d, eps)),
            Nx.select(Nx.equal(rows, j), d, Nx.tensor(0, type: type))
          )

        Nx.select(Nx.equal(Nx.iota({n, n}, axis: 1), j), Nx.broadcast(Nx.reshape(col, {n, 1}), {n, n}), l)
      end)

    Nx.select(Nx.less_equal(Nx.abs(l), eps), Nx.tensor(0, type: type), l)
  end

  # The matrix product x y in step k. Unrolled (k an integer), a dot: its operands are
  # buffers, so no kernel of a step recomputes the chain of updates of the steps before it
  # (fused across steps, a step reads that chain at other indices than its own, and every
  # kernel grows with the steps before it). In a loop, whose state is a buffer at every
  # iteration anyway, a sum of products, which fuses with the slicing and masking of its
  # operands: one kernel fewer per iteration.
  defp matmul(x, y, k) when is_integer(k), do: Nx.dot(x, y)
  defp matmul(x, y, _k), do: Nx.sum(Nx.multiply(Nx.new_axis(x, 2), Nx.new_axis(y, 0)), axes: [1])

  @doc """
  `step.(state, inputs, k)` applied for k = 0..n-1 in order, `inputs` being what the steps
  read besides the state: unrolled (k an integer) for n up to #{@unroll_max}, else as one
  `while` loop over k (a scalar tensor), which carries `inputs` (a loop body reads only
  its state). For the algorithms here and Nx.Vulkan.Eigh's.
  """
  def steps(state, inputs, n, step) when n <= @unroll_max,
    do: Enum.reduce(0..(n - 1)//1, state, &step.(&2, inputs, &1))

  def steps(state, inputs, n, step), do: step_loop(state, inputs, last: n - 1, step: step)

  defnp step_loop(state, inputs, opts) do
    step = opts[:step]

    {state, _} =
      while {state, inputs}, k <- 0..opts[:last]//1 do
        {step.(state, inputs, k), inputs}
      end

    state
  end

  # `fun` applied to each matrix of a batch (the leading axes `args` share beyond their
  # last two), its results (a tensor or a tuple of them) stacked back into the batch.
  defp over_batch([a | _] = args, fun) do
    batch = a.shape |> Tuple.to_list() |> Enum.drop(-2)
    count = Enum.product(batch)

    # The leading `drop` axes of `t` replaced by `lead`.
    relead = fn t, drop, lead ->
      Nx.reshape(t, List.to_tuple(lead ++ Enum.drop(Tuple.to_list(t.shape), drop)))
    end

    flat = Enum.map(args, &relead.(&1, length(batch), [count]))
    results = for i <- 0..(count - 1), do: apply(fun, Enum.map(flat, & &1[i]))
    unbatch = fn parts -> parts |> Nx.stack() |> relead.(1, batch) end

    case hd(results) do
      %Nx.Tensor{} ->
        unbatch.(results)

      tuple ->
        for(k <- 0..(tuple_size(tuple) - 1), do: unbatch.(Enum.map(results, &elem(&1, k)))) |> List.to_tuple()
    end
  end
end
