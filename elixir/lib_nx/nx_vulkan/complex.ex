defmodule Nx.Vulkan.Complex do
  @moduledoc """
  Lowers complex expressions to real ones for `Nx.Vulkan.IR`, which has no complex types.

  A `c64` (`c128`) value of shape `s` is an `f32` (`f64`) value of shape `s ++ [2]`,
  real and imaginary parts along the last axis: the bytes of Nx's interleaved layout, so
  complex inputs, outputs and device buffers need no conversion (`layout/2`). Ops that
  only pass values along (parameters, literals, `elem`, `while`, `cond`, blocks, ...) are
  serialised as for real values in that layout; every other op on or to a complex value
  is rewritten by `lower/1` into real Nx operations on the parts, with Nx.BinaryBackend's
  formulas (the `Complex` library's). The parts of a complex argument are read through a
  `:complex_view` node, a real expression of the argument's layout whose value is the
  argument's own (the IR serialiser memoises it by the argument's id), so each complex
  node is computed once whatever number of ops use it.
  """

  alias Nx.Defn.Expr
  alias Nx.Tensor, as: T

  # Ops a complex value passes through unchanged in layout, and those whose rewrites in
  # Nx.Vulkan.IR (Conv; take and take_along_axis as gathers; Nx.Vulkan.LinAlg's
  # substitution; sums and products over Nx.Vulkan.Window's patches) are made of ops
  # lowered here.
  @transparent [:parameter, :tensor, :elem, :metadata, :attach_token, :hook, :io_call] ++
                 [:while, :cond, :optional, :block, :complex_view, :conv, :take, :take_along_axis] ++
                 [:triangular_solve, :lu, :window_sum, :window_product]

  @doc "The real type and shape an Nx type and shape are stored as (complex: parts on a last axis of 2)."
  def layout({:c, bits}, shape), do: {{:f, div(bits, 2)}, Tuple.insert_at(shape, tuple_size(shape), 2)}
  def layout(type, shape), do: {type, shape}

  @doc """
  `t` itself, unless its op computes on or to complex values: then a real expression
  computing its layout (or, for a real result such as `abs`, its value).
  """
  def lower(%T{data: %Expr{op: op}} = t) do
    if op in @transparent or not involves_complex?(t), do: t, else: lower(op, t)
  end

  defp involves_complex?(%T{type: type, data: %Expr{args: args}}) do
    complex?(type) or Enum.any?(args, &complex_arg?/1)
  end

  defp complex_arg?(%T{type: type}), do: complex?(type)
  defp complex_arg?(list) when is_list(list), do: Enum.any?(list, &complex_arg?/1)
  defp complex_arg?(_other), do: false

  defp complex?({:c, _}), do: true
  defp complex?(_type), do: false

  ## Element-wise

  defp lower(:constant, %T{type: type, shape: shape, data: %Expr{args: [value]}}) do
    {re, im} = number_parts(value)
    part = part_type(type)
    pack(Nx.broadcast(Nx.tensor(re, type: part), shape), Nx.broadcast(Nx.tensor(im, type: part), shape))
  end

  defp lower(:add, %T{data: %Expr{args: [a, b]}} = t), do: pack_pair(add(parts(a, t.type), parts(b, t.type)))

  defp lower(:subtract, %T{data: %Expr{args: [a, b]}} = t),
    do: pack_pair(subtract(parts(a, t.type), parts(b, t.type)))

  defp lower(:multiply, %T{data: %Expr{args: [a, b]}} = t),
    do: pack_pair(multiply(parts(a, t.type), parts(b, t.type)))

  defp lower(:divide, %T{data: %Expr{args: [a, b]}} = t),
    do: pack_pair(divide(parts(a, t.type), parts(b, t.type)))

  defp lower(:pow, %T{data: %Expr{args: [a, b]}} = t),
    do: pack_pair(pow(parts(a, t.type), parts(b, t.type)))

  defp lower(:negate, %T{data: %Expr{args: [a]}} = t), do: pack_pair(negate(parts(a, t.type)))

  defp lower(:conjugate, %T{data: %Expr{args: [a]}} = t) do
    {re, im} = parts(a, t.type)
    pack(re, Nx.negate(im))
  end

  defp lower(:real, %T{data: %Expr{args: [a]}} = t), do: elem(parts(a, t.type), 0)
  defp lower(:imag, %T{data: %Expr{args: [a]}} = t), do: elem(parts(a, t.type), 1)
  defp lower(:abs, %T{data: %Expr{args: [a]}} = t), do: modulus(parts(a, t.type))

  defp lower(:as_type, %T{type: type, data: %Expr{args: [a]}} = t) do
    if complex?(type) do
      {re, im} = parts(a, type)
      pack(re, im)
    else
      # Nx keeps the real part (truncated for an integer type).
      a |> parts(a.type) |> elem(0) |> Nx.as_type(t.type)
    end
  end

  defp lower(:exp, %T{data: %Expr{args: [a]}} = t), do: pack_pair(exp(parts(a, t.type)))

  defp lower(:log, %T{data: %Expr{args: [a]}} = t), do: pack_pair(log(parts(a, t.type)))

  defp lower(:sqrt, %T{data: %Expr{args: [a]}} = t), do: pack_pair(sqrt(parts(a, t.type)))

  defp lower(:sin, %T{data: %Expr{args: [a]}} = t), do: pack_pair(sin(parts(a, t.type)))
  defp lower(:cos, %T{data: %Expr{args: [a]}} = t), do: pack_pair(cos(parts(a, t.type)))

  # The rest of Nx's unary complex functions, as Nx.Shared.unary_math_funs/0 and the Complex
  # library compose them.
  defp lower(:expm1, %T{data: %Expr{args: [a]}} = t) do
    {re, im} = exp(parts(a, t.type))
    pack(Nx.subtract(re, 1), im)
  end

  defp lower(:log1p, %T{data: %Expr{args: [a]}} = t) do
    {re, im} = parts(a, t.type)
    pack_pair(log({Nx.add(re, 1), im}))
  end

  defp lower(:sigmoid, %T{data: %Expr{args: [a]}} = t) do
    {re, im} = exp(negate(parts(a, t.type)))
    pack_pair(divide(constant(re, 1, 0), {Nx.add(re, 1), im}))
  end

  defp lower(:rsqrt, %T{data: %Expr{args: [a]}} = t) do
    {re, _} = z = sqrt(parts(a, t.type))
    pack_pair(divide(constant(re, 1, 0), z))
  end

  defp lower(:tan, %T{data: %Expr{args: [a]}} = t) do
    z = parts(a, t.type)
    pack_pair(divide(sin(z), cos(z)))
  end

  # Complex.cbrt/1: the real cube root of the modulus at a third of the phase.
  defp lower(:cbrt, %T{data: %Expr{args: [a]}} = t) do
    {re, im} = z = parts(a, t.type)
    r = Nx.cbrt(modulus(z))
    theta = Nx.divide(Nx.atan2(im, re), 3)
    pack(Nx.multiply(r, Nx.cos(theta)), Nx.multiply(r, Nx.sin(theta)))
  end

  defp lower(:sinh, %T{data: %Expr{args: [a]}} = t), do: pack_pair(elem(sinh_cosh(parts(a, t.type)), 0))
  defp lower(:cosh, %T{data: %Expr{args: [a]}} = t), do: pack_pair(elem(sinh_cosh(parts(a, t.type)), 1))

  defp lower(:tanh, %T{data: %Expr{args: [a]}} = t) do
    {sinh, cosh} = sinh_cosh(parts(a, t.type))
    pack_pair(divide(sinh, cosh))
  end

  defp lower(op, %T{data: %Expr{args: [a]}} = t) when op in [:asin, :acos, :atan, :asinh, :acosh, :atanh],
    do: pack_pair(inverse(op, parts(a, t.type)))

  # Either part, as in Nx.BinaryBackend.
  defp lower(op, %T{data: %Expr{args: [a]}}) when op in [:is_nan, :is_infinity] do
    {re, im} = parts(a, a.type)
    fun = Function.capture(Nx, op, 1)
    Nx.logical_or(fun.(re), fun.(im))
  end

  defp lower(op, %T{data: %Expr{args: [a, b]}}) when op in [:equal, :not_equal] do
    type = Nx.Type.merge(a.type, b.type)
    {ar, ai} = parts(a, type)
    {br, bi} = parts(b, type)
    equal = Nx.logical_and(Nx.equal(ar, br), Nx.equal(ai, bi))
    if op == :equal, do: equal, else: Nx.logical_not(equal)
  end

  defp lower(:select, %T{data: %Expr{args: [pred, on_true, on_false]}} = t) do
    {tr, ti} = parts(on_true, t.type)
    {fr, fi} = parts(on_false, t.type)
    pack(Nx.select(pred, tr, fr), Nx.select(pred, ti, fi))
  end

  ## Shapes: the same op on each part

  defp lower(:reshape, t), do: per_part(t, &Nx.reshape(&1, t.shape))
  defp lower(:squeeze, t), do: per_part(t, &Nx.reshape(&1, t.shape))
  defp lower(:transpose, %T{data: %Expr{args: [_, axes]}} = t), do: per_part(t, &Nx.transpose(&1, axes: axes))
  defp lower(:reverse, %T{data: %Expr{args: [_, axes]}} = t), do: per_part(t, &Nx.reverse(&1, axes: axes))

  defp lower(:broadcast, %T{data: %Expr{args: [_, shape, axes]}} = t),
    do: per_part(t, &Nx.broadcast(&1, shape, axes: axes))

  defp lower(:slice, %T{data: %Expr{args: [x, start, lengths, strides]}} = t) do
    {re, im} = parts(x, t.type)
    slice = &Nx.slice(&1, start, lengths, strides: strides)
    pack(slice.(re), slice.(im))
  end

  defp lower(:put_slice, %T{data: %Expr{args: [x, start, update]}} = t) do
    {xr, xi} = parts(x, t.type)
    {ur, ui} = parts(update, t.type)
    pack(Nx.put_slice(xr, start, ur), Nx.put_slice(xi, start, ui))
  end

  defp lower(:pad, %T{data: %Expr{args: [x, value, config]}} = t) do
    {xr, xi} = parts(x, t.type)
    {vr, vi} = parts(value, t.type)
    pack(Nx.pad(xr, vr, config), Nx.pad(xi, vi, config))
  end

  defp lower(op, %T{data: %Expr{args: [list, axis]}} = t) when op in [:concatenate, :stack] do
    {res, ims} = list |> Enum.map(&parts(&1, t.type)) |> Enum.unzip()
    fun = Function.capture(Nx, op, 2)
    pack(fun.(res, axis: axis), fun.(ims, axis: axis))
  end

  ## Reductions and contractions

  defp lower(:sum, %T{data: %Expr{args: [x, opts]}} = t) do
    {re, im} = parts(x, t.type)
    opts = [axes: opts[:axes], keep_axes: opts[:keep_axes] || false]
    pack(Nx.sum(re, opts), Nx.sum(im, opts))
  end

  # The reduced axes moved last and flattened, then halved by complex multiplication
  # (Nx.BinaryBackend multiplies in order; a tree rounds differently, within the tolerance
  # of an n-term product).
  defp lower(:product, %T{shape: shape, data: %Expr{args: [x, opts]}} = t) do
    all = Nx.axes(x)
    axes = opts[:axes] || all
    kept = all -- axes
    flat = Enum.map(kept, &Nx.axis_size(x, &1)) ++ [Enum.product(Enum.map(axes, &Nx.axis_size(x, &1)))]
    to_rows = &(&1 |> Nx.transpose(axes: kept ++ axes) |> Nx.reshape(List.to_tuple(flat)))
    {re, im} = parts(x, t.type)
    {re, im} = product_tree({to_rows.(re), to_rows.(im)})
    pack(Nx.reshape(re, shape), Nx.reshape(im, shape))
  end

  defp lower(:dot, %T{data: %Expr{args: [a, c1, b1, b, c2, b2]}} = t) do
    {ar, ai} = parts(a, t.type)
    {br, bi} = parts(b, t.type)
    dot = &Nx.dot(&1, c1, b1, &2, c2, b2)
    pack(Nx.subtract(dot.(ar, br), dot.(ai, bi)), Nx.add(dot.(ar, bi), dot.(ai, br)))
  end

  defp lower(op, %T{data: %Expr{args: [x, opts]}} = t) when op in [:fft, :ifft],
    do: fft(op, x, opts[:axis], opts[:length], opts[:eps], t.type)

  ## Constructors: a real part, a zero imaginary one

  defp lower(:eye, %T{type: type, shape: shape}),
    do: pack(Nx.eye(shape, type: part_type(type)), zeros(shape, type))

  defp lower(:iota, %T{type: type, shape: shape, data: %Expr{args: [axis]}}),
    do: pack(Nx.iota(shape, axis: axis, type: part_type(type)), zeros(shape, type))

  ## Indexing: on the layout, whose parts axis comes last and is never indexed

  defp lower(:gather, %T{data: %Expr{args: [x, indices | opts]}} = t),
    do: apply(Nx, :gather, [layout_of(x, t.type), indices | opts])

  defp lower(op, %T{data: %Expr{args: [target, indices, updates | opts]}} = t)
       when op in [:indexed_add, :indexed_put],
       do: apply(Nx, op, [layout_of(target, t.type), indices, layout_of(updates, t.type) | opts])

  defp lower(op, %T{type: type, data: %Expr{args: args}}) do
    types = for %T{type: arg_type} <- List.flatten(args), do: Nx.Type.to_string(arg_type)

    raise ArgumentError,
          "Nx.Vulkan does not support #{inspect(op)} on complex tensors " <>
            "(arguments #{Enum.join(types, ", ")}, result #{Nx.Type.to_string(type)})"
  end

  ## Parts

  defp part_type(type), do: Nx.Type.to_real(type)

  # Real and imaginary parts of `x` in the part type of `type` (a real `x` has zeros).
  defp parts(%T{type: {:c, _}} = x, type) do
    view = view(x)
    axis = Nx.rank(x)
    part = &(view |> Nx.slice_along_axis(&1, 1, axis: axis) |> Nx.reshape(x.shape))
    {Nx.as_type(part.(0), part_type(type)), Nx.as_type(part.(1), part_type(type))}
  end

  defp parts(%T{} = x, type) do
    re = Nx.as_type(x, part_type(type))
    {re, zeros(x.shape, type)}
  end

  # The layout of a complex expression, as a real expression (see the moduledoc).
  defp view(%T{type: type, shape: shape, data: %Expr{id: id, context: context}} = x) do
    {part, layout_shape} = layout(type, shape)
    names = List.duplicate(nil, tuple_size(layout_shape))

    %T{
      x
      | type: part,
        shape: layout_shape,
        names: names,
        data: %Expr{id: {:complex_view, id}, op: :complex_view, args: [x], context: context}
    }
  end

  # `x` (complex, or real with a zero imaginary part) in the layout of `type`.
  defp layout_of(x, type), do: x |> parts(type) |> pack_pair()

  defp zeros(shape, type), do: Nx.broadcast(Nx.tensor(0, type: part_type(type)), shape)
  # re + im·i in the shape and part type of `like`.
  defp constant(like, re, im) do
    broadcast = &Nx.broadcast(Nx.tensor(&1, type: like.type), like.shape)
    {broadcast.(re), broadcast.(im)}
  end

  defp pack(re, im), do: Nx.stack([re, im], axis: -1)
  defp pack_pair({re, im}), do: pack(re, im)

  defp per_part(%T{data: %Expr{args: [x | _]}} = t, fun) do
    {re, im} = parts(x, t.type)
    pack(fun.(re), fun.(im))
  end

  defp number_parts(%Complex{re: re, im: im}), do: {re, im}
  defp number_parts(number), do: {number, 0}

  ## Complex arithmetic on {re, im} pairs, as the Complex library computes it

  @doc "The product of complex values as `{re, im}` pairs of real tensors."
  def multiply({ar, ai}, {br, bi}) do
    {Nx.subtract(Nx.multiply(ar, br), Nx.multiply(ai, bi)), Nx.add(Nx.multiply(ar, bi), Nx.multiply(ai, br))}
  end

  defp divide({ar, ai}, {br, bi}) do
    den = Nx.add(Nx.multiply(br, br), Nx.multiply(bi, bi))
    re = Nx.add(Nx.multiply(ar, br), Nx.multiply(ai, bi))
    im = Nx.subtract(Nx.multiply(ai, br), Nx.multiply(ar, bi))
    {Nx.divide(re, den), Nx.divide(im, den)}
  end

  # The product along the last axis of a pair, as a tree of halves (an odd length padded
  # with 1 + 0i).
  defp product_tree({re, im}) do
    last = Nx.rank(re) - 1

    case Nx.axis_size(re, last) do
      1 ->
        {Nx.squeeze(re, axes: [last]), Nx.squeeze(im, axes: [last])}

      n ->
        half = div(n + 1, 2)

        pad =
          &Nx.pad(&1, Nx.tensor(&2, type: re.type), List.duplicate({0, 0, 0}, last) ++ [{0, 2 * half - n, 0}])

        {re, im} = {pad.(re, 1), pad.(im, 0)}
        take = &{Nx.slice_along_axis(re, &1, half, axis: last), Nx.slice_along_axis(im, &1, half, axis: last)}
        product_tree(multiply(take.(0), take.(half)))
    end
  end

  # The inverse trigonometric and hyperbolic functions, in the Complex library's forms
  # (asin and acos of a value with an infinite or NaN part are NaN there).
  defp inverse(:asin, {re, _} = z) do
    w = log(add(multiply(constant(re, 0, 1), z), sqrt(subtract(constant(re, 1, 0), multiply(z, z)))))
    nan_unless_finite(z, multiply(constant(re, 0, -1), w))
  end

  defp inverse(:acos, {re, _} = z) do
    w = log(add(z, sqrt(subtract(multiply(z, z), constant(re, 1, 0)))))
    nan_unless_finite(z, multiply(constant(re, 0, -1), w))
  end

  defp inverse(:atan, {re, _} = z) do
    iz = multiply(constant(re, 0, 1), z)
    one = constant(re, 1, 0)
    multiply(constant(re, 0, 0.5), subtract(log(subtract(one, iz)), log(add(one, iz))))
  end

  defp inverse(:asinh, {re, _} = z), do: log(add(z, sqrt(add(multiply(z, z), constant(re, 1, 0)))))
  defp inverse(:acosh, {re, _} = z), do: log(add(z, sqrt(subtract(multiply(z, z), constant(re, 1, 0)))))

  defp inverse(:atanh, {re, _} = z) do
    one = constant(re, 1, 0)
    multiply(constant(re, 0.5, 0), log(divide(add(one, z), subtract(one, z))))
  end

  defp nan_unless_finite({re, im}, {wr, wi}) do
    finite =
      Nx.logical_not(
        Nx.logical_or(
          Nx.logical_or(Nx.is_nan(re), Nx.is_infinity(re)),
          Nx.logical_or(Nx.is_nan(im), Nx.is_infinity(im))
        )
      )

    nan = Nx.Constants.nan(wr.type)
    {Nx.select(finite, wr, nan), Nx.select(finite, wi, nan)}
  end

  defp add({ar, ai}, {br, bi}), do: {Nx.add(ar, br), Nx.add(ai, bi)}
  defp subtract({ar, ai}, {br, bi}), do: {Nx.subtract(ar, br), Nx.subtract(ai, bi)}

  defp negate({re, im}), do: {Nx.negate(re), Nx.negate(im)}

  defp log({re, im} = z), do: {Nx.log(modulus(z)), Nx.atan2(im, re)}

  defp sin({re, im}), do: {Nx.multiply(Nx.sin(re), Nx.cosh(im)), Nx.multiply(Nx.cos(re), Nx.sinh(im))}

  defp cos({re, im}),
    do: {Nx.multiply(Nx.cos(re), Nx.cosh(im)), Nx.negate(Nx.multiply(Nx.sin(re), Nx.sinh(im)))}

  # (e^z - e^-z) / 2 and (e^z + e^-z) / 2 from one pair of exponentials.
  defp sinh_cosh(z) do
    ez = exp(z)
    e_z = exp(negate(z))
    half = fn {re, im} -> {Nx.divide(re, 2), Nx.divide(im, 2)} end
    {half.(subtract(ez, e_z)), half.(add(ez, e_z))}
  end

  defp exp({re, im}) do
    rho = Nx.exp(re)
    {Nx.multiply(rho, Nx.cos(im)), Nx.multiply(rho, Nx.sin(im))}
  end

  # |z| scaled by the larger part, so that it overflows only where |z| does; infinite
  # where a part is.
  defp modulus({re, im}) do
    x = Nx.abs(re)
    y = Nx.abs(im)
    big = Nx.max(x, y)
    small = Nx.min(x, y)
    ratio = Nx.divide(small, big)
    scaled = Nx.multiply(big, Nx.sqrt(Nx.add(1, Nx.multiply(ratio, ratio))))
    finite = Nx.select(Nx.equal(big, 0), 0, scaled)
    infinite = Nx.logical_or(Nx.is_infinity(re), Nx.is_infinity(im))
    Nx.select(infinite, Nx.Constants.infinity(re.type), finite)
  end

  defp sqrt({re, im}) do
    x = Nx.abs(re)
    y = Nx.abs(im)
    r = Nx.divide(y, x)
    s = Nx.divide(x, y)

    w =
      Nx.select(
        Nx.greater_equal(x, y),
        Nx.multiply(Nx.sqrt(x), Nx.sqrt(Nx.multiply(0.5, Nx.add(1, Nx.sqrt(Nx.add(1, Nx.multiply(r, r))))))),
        Nx.multiply(Nx.sqrt(y), Nx.sqrt(Nx.multiply(0.5, Nx.add(s, Nx.sqrt(Nx.add(1, Nx.multiply(s, s)))))))
      )

    two_w = Nx.multiply(2, w)
    signed_w = Nx.select(Nx.greater_equal(im, 0), w, Nx.negate(w))
    out_re = Nx.select(Nx.greater_equal(re, 0), w, Nx.divide(y, two_w))
    out_im = Nx.select(Nx.greater_equal(re, 0), Nx.divide(im, two_w), signed_w)
    zero = Nx.logical_and(Nx.equal(re, 0), Nx.equal(im, 0))
    {Nx.select(zero, re, out_re), Nx.select(zero, im, out_im)}
  end

  # Complex.pow/2: polar form, with its special cases (a zero base, exponents 1 and -1).
  defp pow({xr, xi} = x, {yr, yi}) do
    rho = modulus(x)
    theta = Nx.atan2(xi, xr)
    s = Nx.multiply(Nx.pow(rho, yr), Nx.exp(Nx.multiply(Nx.negate(yi), theta)))
    r = Nx.add(Nx.multiply(yr, theta), Nx.multiply(yi, Nx.log(rho)))
    {pr, pi} = {Nx.multiply(s, Nx.cos(r)), Nx.multiply(s, Nx.sin(r))}
    {inv_r, inv_i} = divide({Nx.tensor(1, type: xr.type), Nx.tensor(0, type: xr.type)}, x)

    real_y? = Nx.equal(yi, 0)
    one? = Nx.logical_and(real_y?, Nx.equal(yr, 1))
    minus_one? = Nx.logical_and(real_y?, Nx.equal(yr, -1))
    zero_x? = Nx.logical_and(Nx.equal(xr, 0), Nx.equal(xi, 0))
    zero_y? = Nx.logical_and(real_y?, Nx.equal(yr, 0))
    zero_pow = Nx.select(zero_y?, 1, 0)

    pick = fn zero_part, x_part, inv_part, polar ->
      Nx.select(zero_x?, zero_part, Nx.select(one?, x_part, Nx.select(minus_one?, inv_part, polar)))
    end

    {pick.(zero_pow, xr, inv_r, pr), pick.(0, xi, inv_i, pi)}
  end

  ## FFT

  # Nx.fft/ifft along `axis`, padded with zeros or truncated to `length`: the axis moved
  # last and the rest flattened into rows for Nx.Vulkan.FFT; |parts| <= eps become 0, as
  # in Nx.BinaryBackend.
  defp fft(kind, x, axis, n, eps, type) do
    last = Nx.rank(x) - 1

    perm =
      Enum.map(0..last, fn
        ^axis -> last
        ^last -> axis
        a -> a
      end)

    x = x |> Nx.transpose(axes: perm) |> fit_length(n)
    rows = {div(Nx.size(x), n), n}
    {re, im} = x |> parts(type) |> then(fn {re, im} -> {Nx.reshape(re, rows), Nx.reshape(im, rows)} end)

    {out_re, out_im} =
      case kind do
        :fft ->
          Nx.Vulkan.FFT.transform({re, im}, -1)

        :ifft ->
          {re, im} |> Nx.Vulkan.FFT.transform(1) |> then(fn {r, i} -> {Nx.divide(r, n), Nx.divide(i, n)} end)
      end

    clean = &(&1 |> Nx.reshape(x.shape) |> then(fn p -> Nx.select(Nx.less_equal(Nx.abs(p), eps), 0, p) end))
    pack(clean.(out_re), clean.(out_im)) |> Nx.transpose(axes: perm ++ [last + 1])
  end

  defp fit_length(x, n) do
    last = Nx.rank(x) - 1
    size = Nx.axis_size(x, last)

    cond do
      size > n -> Nx.slice_along_axis(x, 0, n, axis: last)
      size < n -> Nx.pad(x, Nx.tensor(0, type: x.type), List.duplicate({0, 0, 0}, last) ++ [{0, n - size, 0}])
      true -> x
    end
  end
end
