defmodule Nx.Vulkan.Eigh do
  @moduledoc false
  # Nx.LinAlg.eigh as Nx.BinaryBackend computes it where it implements eigh (Nx <= 0.11,
  # Nx.BinaryBackend.Matrix.eigh), for the serialiser to inline in place of the `optional`
  # call: the evaluator calls the backend's eigh, not the call's default (Nx.LinAlg.Eigh),
  # whose Hessenberg step reflects other rows and whose convergence test is relative, and
  # which, stopping at the same loose `eps` (1e-4), ends on eigenvectors off from the
  # backend's in the second digit. Nx's SVD takes its singular vectors from this eigh.
  #
  # The backend's steps, on each matrix of a batch separately: a Householder reduction to
  # Hessenberg form, then unshifted QR iterations until no entry of the accumulated Q moves
  # by more than `eps` (at most `max_iter` of them). A column's reflector is skipped where
  # the squared norm of its entries below the pivot is under `eps`, and entries of
  # magnitude under `eps` are zeroed in the reduction's results, in each Q and R, and in
  # the eigenpairs: those thresholds decide when the iteration stops, so they are kept
  # as the backend has them. The backend computes in f64 whatever the input; this runs in
  # the result's type (f32 for f16 and bf16), so the iteration may end one step apart,
  # except where the serialiser widens f32 to f64 (Nx.Vulkan.IR, `:f32_in_f64`).
  # The backend raises for a matrix that is not Hermitian to within `eps`; a check of the
  # data cannot raise from a graph, so such a matrix is iterated on as it is, as the
  # default does.

  import Nx.Defn

  @backend_eigh Code.ensure_loaded?(Nx.BinaryBackend) and function_exported?(Nx.BinaryBackend, :eigh, 3)

  @doc """
  Whether the evaluator's eigh of these arguments is the backend's, which this computes:
  real matrices, with an Nx whose Nx.BinaryBackend has eigh (complex ones keep the
  default, whose complex arithmetic Nx.Vulkan.Complex lowers).
  """
  def supported?([%{type: type} | _]), do: @backend_eigh and not Nx.Type.complex?(type)
  def supported?(_), do: false

  defn eigh(a, opts \\ []) do
    opts = keyword!(opts, eps: 1.0e-4, max_iter: 1_000)
    out_type = Nx.Type.to_floating(Nx.type(a))
    type = compute_type(out_type)
    # in the computation's type, as the backend compares in f64 with the f64 value
    eps = constant(opts[:eps], type)

    {h, q} = a |> as_matrices() |> Nx.as_type(type) |> hessenberg(eps)

    # vectorised like the matrices, so that each matrix of a batch iterates on its own
    [_, moving] = Nx.broadcast_vectors([h, Nx.u8(1)])

    {{d, q}, _} =
      while {{d = h, q}, {i = 0, moving}}, i < opts[:max_iter] and moving do
        {q_step, r_step} = qr(d, eps)
        q_next = Nx.dot(q, q_step)
        # a NaN difference counts as converged, as in the backend
        {{Nx.dot(r_step, q_step), q_next}, {i + 1, Nx.any(Nx.abs(q - q_next) > eps)}}
      end

    eigenvals = d |> Nx.take_diagonal() |> zero_small(eps) |> Nx.as_type(out_type)
    eigenvecs = q |> zero_small(eps) |> Nx.as_type(out_type)
    as_batch({eigenvals, eigenvecs}, a)
  end

  deftransformp(compute_type(out_type), do: Nx.Type.merge(out_type, {:f, 32}))

  deftransformp(constant(value, type), do: Nx.tensor(value, type: type))

  # The leading axes of a batch, vectorised.
  deftransformp as_matrices(a) do
    case Nx.shape(a) do
      {_, _} ->
        a

      shape ->
        rank = tuple_size(shape)
        Nx.revectorize(a, [batch: :auto], target_shape: {elem(shape, rank - 2), elem(shape, rank - 1)})
    end
  end

  deftransformp as_batch({eigenvals, eigenvecs}, a) do
    case Nx.shape(a) do
      {_, _} ->
        {eigenvals, eigenvecs}

      shape ->
        {Nx.revectorize(eigenvals, [], target_shape: Tuple.delete_at(shape, tuple_size(shape) - 1)),
         Nx.revectorize(eigenvecs, [], target_shape: shape)}
    end
  end

  # Reduces to Hessenberg form: H = P^T A P, returned with P. (Nx.Vulkan.LinAlg.steps: the
  # reflectors unrolled for small matrices, a loop over them for larger ones.)
  deftransformp hessenberg(a, eps) do
    {n, n} = Nx.shape(a)

    {h, p} =
      Nx.Vulkan.LinAlg.steps({a, identity(a)}, {eps}, n - 1, fn {h, p}, {eps}, i ->
        reflector = reflector(h, next(i), i, eps)
        {h |> reflect_rows(reflector) |> reflect_columns(reflector, :transposed), reflect_columns(p, reflector)}
      end)

    {zero_small(h, eps), zero_small(p, eps)}
  end

  # Householder QR of a square matrix: the backend reflects columns 0..n-2.
  deftransformp qr(a, eps) do
    {n, n} = Nx.shape(a)

    {q, r} =
      Nx.Vulkan.LinAlg.steps({identity(a), a}, {eps}, n - 1, fn {q, r}, {eps}, i ->
        reflector = reflector(r, i, i, eps)
        {reflect_columns(q, reflector), reflect_rows(r, reflector)}
      end)

    {zero_small(q, eps), zero_small(r, eps)}
  end

  defp next(i) when is_integer(i), do: i + 1
  defp next(i), do: Nx.add(i, 1)

  defp identity(a) do
    {n, n} = Nx.shape(a)
    [_, eye] = Nx.broadcast_vectors([a, Nx.eye(n, type: Nx.type(a))])
    eye
  end

  # The backend's reflector I - scale v v^T mapping column `col` of `m` below row
  # `first` onto row `first`: v is 0 above `first` and 1 at it; the identity (scale 0)
  # where the entries below `first` have a squared norm under `eps`.
  defp reflector(m, first, col, eps) do
    {n, n} = Nx.shape(m)
    rows = Nx.iota({n})
    x0 = m[[first, col]]
    below = Nx.select(Nx.greater(rows, first), m[[.., col]], 0)
    # The backend subtracts x0^2 from the squared norm, which in f32 would lose the entries
    # below a converging pivot; in f64, where its digits are the aim, so does this.
    {norm_sq, below_sq} =
      if exact?(m) do
        from = Nx.select(Nx.greater_equal(rows, first), m[[.., col]], 0)
        norm_sq = Nx.sum(Nx.multiply(from, from))
        {norm_sq, Nx.subtract(norm_sq, Nx.multiply(x0, x0))}
      else
        below_sq = Nx.sum(Nx.multiply(below, below))
        {Nx.add(below_sq, Nx.multiply(x0, x0)), below_sq}
      end

    skip = Nx.less(below_sq, eps)
    norm = Nx.sqrt(norm_sq)

    v0 =
      Nx.select(
        Nx.less_equal(x0, 0),
        Nx.subtract(x0, norm),
        Nx.divide(Nx.negate(below_sq), Nx.add(x0, norm))
      )

    v0_sq = Nx.multiply(v0, v0)
    scale = Nx.select(skip, 0, Nx.divide(Nx.multiply(2, v0_sq), Nx.add(below_sq, v0_sq)))
    # a skipped column's v is never used; 1 keeps its division finite
    v = Nx.select(Nx.equal(rows, first), 1, Nx.divide(below, Nx.select(skip, 1, v0)))
    {v, scale}
  end

  # In f64 and up to @exact_max, the reflections are the backend's arithmetic: H formed as
  # I - (scale v_r) v_c, then full products, whose sums run in the backend's order (the
  # device's f64 dots add in index order, unfused), so results equal its to the bit.
  # Beyond, or in f32, the cheaper rank-one update (n^2 per reflection, not n^3).
  @exact_max 32

  defp exact?(m) do
    {n, n} = Nx.shape(m)
    Nx.type(m) == {:f, 64} and n <= @exact_max
  end

  defp matrix({v, scale}), do: Nx.subtract(Nx.eye(Nx.axis_size(v, 0), type: Nx.type(v)), Nx.outer(Nx.multiply(scale, v), v))

  # H m
  defp reflect_rows(m, reflector) do
    if exact?(m) do
      Nx.dot(matrix(reflector), m)
    else
      {v, scale} = reflector
      Nx.subtract(m, Nx.multiply(scale, Nx.outer(v, Nx.dot(v, m))))
    end
  end

  # m H, or m H^T (the Hessenberg step's h_adj: H is symmetric only up to rounding)
  defp reflect_columns(m, reflector, form \\ :plain) do
    if exact?(m) do
      h = matrix(reflector)
      Nx.dot(m, if(form == :transposed, do: Nx.transpose(h), else: h))
    else
      {v, scale} = reflector
      Nx.subtract(m, Nx.multiply(scale, Nx.outer(Nx.dot(m, v), v)))
    end
  end

  # Nx.Vulkan.LinAlg's, callable from defn
  deftransformp(zero_small(x, eps), do: Nx.Vulkan.LinAlg.zero_small(x, eps))
end
