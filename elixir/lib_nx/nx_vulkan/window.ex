defmodule Nx.Vulkan.Window do
  @moduledoc false
  # Nx's window operations written with ops the IR has, for the serialiser (Nx.Vulkan.IR)
  # to inline in place of `window_sum`, `window_product`, `window_max`, `window_min`,
  # `window_reduce` and `window_scatter_max`/`window_scatter_min`. The input is padded as
  # Nx.BinaryBackend pads it and every window's elements are laid along a new last axis
  # (the patches, [windows..., window size]), which a reduction then folds: pad, patches
  # and reduction are one kernel. Takes and returns `Nx.Defn.Expr` tensors, as
  # Nx.Vulkan.Conv does.

  alias Nx.Tensor, as: T
  alias Nx.Vulkan.{Conv, Funs}

  # Windows of up to this many elements become patches as one strided slice per element,
  # stacked (the fastest kernel on lavapipe); larger ones are gathered, with indices
  # computed from iotas, so that the kernel's code does not grow with the window (256
  # unrolled slices took 30 s to compile there).
  @max_slices 16

  # Positions and indices; Nx's default s64 would widen every index computation.
  @index_type {:s, 32}

  @doc """
  The `window_sum`, `window_product`, `window_max` or `window_min` node `out` of `x`, with
  the options Nx normalised (explicit padding, strides and dilations per axis).
  """
  def aggregate(op, %T{type: type}, x, window, opts) do
    {reduce, identity} = aggregate_op(op, type)

    x
    |> Nx.pad(identity, padding_config(opts))
    |> patches(window, opts)
    |> reduce.(axes: [-1])
    # Nx sums and multiplies integers in a wider type; the wrapped result is the same
    |> Nx.as_type(type)
  end

  # Nx.BinaryBackend's folds: the pad value and accumulator is the type's lowest value
  # for max (-Inf for floats), its highest for min. reduce_max and reduce_min propagate
  # NaN, as BinaryBackend's element_max and element_min do.
  defp aggregate_op(:window_sum, type), do: {&Nx.sum/2, Nx.tensor(0, type: type)}
  defp aggregate_op(:window_product, type), do: {&Nx.product/2, Nx.tensor(1, type: type)}
  defp aggregate_op(:window_max, type), do: {&Nx.reduce_max/2, from_binary(Nx.Type.min_binary(type), type)}
  defp aggregate_op(:window_min, type), do: {&Nx.reduce_min/2, from_binary(Nx.Type.max_binary(type), type)}

  defp from_binary(binary, type), do: binary |> Nx.from_binary(type) |> Nx.reshape({})

  @doc """
  The `window_reduce` node `out` with a function: Nx.Vulkan.Funs.reduce over each window's
  elements, the input padded with `acc` as Nx.BinaryBackend pads it.
  """
  def reduce(%T{type: type} = out, x, acc, window, opts, fun) do
    acc = Nx.as_type(acc, type)
    patches = x |> Nx.pad(acc, padding_config(opts)) |> patches(window, opts)
    Funs.reduce(out, patches, acc, [axes: [Nx.rank(patches) - 1]], fun)
  end

  @doc """
  The `window_scatter_max`/`window_scatter_min` node `out` (padding and strides; no
  dilations), as Nx.BinaryBackend's select_and_scatter: `x` padded with `init`, each
  window selects one element, which gets the window's `source` value; every output is
  `init` plus what it got, and what lands in the padding is dropped.
  """
  def scatter(op, %T{type: type}, x, source, init, window, opts) do
    # BinaryBackend pads with init as a number: compared in a type that holds both
    compare_type = Nx.Type.merge(x.type, init.type)
    padded = Nx.pad(Nx.as_type(x, compare_type), Nx.as_type(init, compare_type), padding_config(opts))
    selected = padded |> patches(window, opts) |> selected(op)

    x.shape
    |> contributions(selected, Nx.as_type(source, type), window, opts)
    |> Nx.sum(axes: [-1])
    |> Nx.as_type(type)
    |> Nx.add(Nx.as_type(init, type))
  end

  # Per window, the index (into its patch) of the element BinaryBackend selects: it scans
  # the window keeping the last element `>=` (max) or `<=` (min) the one kept so far, from
  # the first. That is the last occurrence of the extreme, NaNs never being kept, unless
  # the first element is NaN: nothing compares with it and it stays.
  defp selected(patches, op) do
    {argfun, ignored} =
      case op do
        :window_scatter_max -> {&Nx.argmax/2, :neg_infinity}
        :window_scatter_min -> {&Nx.argmin/2, :infinity}
      end

    if Nx.Type.float?(patches.type) do
      nan = Nx.is_nan(patches)
      first_nan = nan |> Nx.slice_along_axis(0, 1, axis: -1) |> Nx.squeeze(axes: [-1])
      index = nan |> Nx.select(ignored, patches) |> argfun.(axis: -1, tie_break: :high, type: @index_type)
      Nx.select(first_nan, Nx.tensor(0, type: @index_type), index)
    else
      argfun.(patches, axis: -1, tie_break: :high, type: @index_type)
    end
  end

  # For every element of the input and every window that may contain it, [input...,
  # candidate windows], the source value of that window if it selected the element, else 0.
  defp contributions(shape, selected, source, window, opts) do
    window = Tuple.to_list(window)
    counts = Tuple.to_list(selected.shape)
    candidates = Enum.zip_with(window, opts[:strides], &div(&1 + &2 - 1, &2))
    grid = List.to_tuple(Tuple.to_list(shape) ++ [Enum.product(candidates)])
    # per axis, the candidate number t of each window candidate
    ts =
      candidates
      |> Conv.positions()
      |> Enum.zip()
      |> Enum.map(&Nx.tensor(Tuple.to_list(&1), type: @index_type))

    {window_indices, positions, conditions} =
      [
        Enum.to_list(0..(tuple_size(shape) - 1)),
        opts[:padding],
        opts[:strides],
        window,
        counts,
        candidates,
        ts
      ]
      |> Enum.zip_with(&candidate_windows(grid, &1))
      |> unzip3()

    # a window that does not exist reads another (gather clamps) and is masked out
    flat_window = window_indices |> row_major(counts) |> Nx.new_axis(-1)
    chosen = Nx.equal(gather_flat(selected, flat_window), row_major(positions, window))
    chosen = conditions |> List.flatten() |> Enum.reduce(chosen, &Nx.logical_and/2)

    Nx.select(chosen, gather_flat(source, flat_window), Nx.tensor(0, type: source.type))
  end

  # Along one axis with stride s, padded element j = i + lo lies in window j div s - t at
  # its position j rem s + t * s, for each candidate t below ceil(window / s). Returns the
  # window index and position (tensors over the grid, or integers where constant) and the
  # conditions for that window to exist and hold j, leaving out those that always hold.
  defp candidate_windows(grid, [axis, {lo, _}, stride, size, count, candidates, t]) do
    i = iota(grid, axis)

    {q, r} =
      if stride == 1 do
        {add(i, lo), 0}
      else
        # shifted to be non-negative where the low padding crops
        shift = max(0, -Integer.floor_div(lo, stride))
        j = add(i, lo + shift * stride)
        {j |> Nx.quotient(stride) |> add(-shift), Nx.remainder(j, stride)}
      end

    {window_index, position} =
      if candidates == 1, do: {q, r}, else: {Nx.subtract(q, t), add(r, Nx.multiply(t, stride))}

    last = elem(grid, axis) - 1 + lo

    conditions = [
      rem(size, stride) != 0 and Nx.less(position, size),
      Integer.floor_div(lo, stride) - (candidates - 1) < 0 and Nx.greater_equal(window_index, 0),
      Integer.floor_div(last, stride) >= count and Nx.less(window_index, count)
    ]

    {window_index, position, Enum.filter(conditions, & &1)}
  end

  defp add(x, 0), do: x
  defp add(x, y), do: Nx.add(x, y)

  defp unzip3(triples),
    do: {Enum.map(triples, &elem(&1, 0)), Enum.map(triples, &elem(&1, 1)), Enum.map(triples, &elem(&1, 2))}

  # The row-major flat index of per-axis indices into `sizes` (tensors, or integers where
  # constant).
  defp row_major(indices, sizes) do
    {constant, tensors} =
      indices |> Enum.zip_with(row_major_weights(sizes), &scale/2) |> Enum.split_with(&is_integer/1)

    Enum.reduce(tensors, Enum.sum(constant), &add/2)
  end

  defp scale(x, w) when is_integer(x), do: x * w
  defp scale(x, 1), do: x
  defp scale(x, w), do: Nx.multiply(x, w)

  defp row_major_weights(sizes),
    do: sizes |> Enum.reverse() |> Enum.scan(&(&1 * &2)) |> Enum.reverse() |> tl() |> Kernel.++([1])

  defp gather_flat(t, indices) do
    if Nx.size(t) > 2 ** 31 - 1 do
      raise ArgumentError,
            "Nx.Vulkan indexes window operations on tensors of fewer than 2^31 elements, got #{inspect(t.shape)}"
    end

    t |> Nx.reshape({Nx.size(t)}) |> Nx.gather(indices)
  end

  # The patches of the padded input: [windows..., window size], element k of a window
  # being its k-th in row-major order, as BinaryBackend traverses windows.
  defp patches(padded, window, opts) do
    shape = Tuple.to_list(padded.shape)
    strides = opts[:strides]
    dilations = opts[:window_dilations] || List.duplicate(1, length(shape))
    positions = window |> Tuple.to_list() |> Conv.positions()

    counts =
      Enum.zip_with([shape, Tuple.to_list(window), dilations, strides], fn [size, w, d, s] ->
        div(size - (w - 1) * d - 1, s) + 1
      end)

    if length(positions) <= @max_slices do
      lengths = Enum.zip_with(counts, strides, &((&1 - 1) * &2 + 1))

      positions
      |> Enum.map(
        &Nx.slice(padded, Enum.zip_with(&1, dilations, fn p, d -> p * d end), lengths, strides: strides)
      )
      |> Nx.stack(axis: -1)
    else
      grid = List.to_tuple(counts)

      starts =
        shape
        |> Enum.with_index(fn _, axis -> iota(grid, axis) end)
        |> Enum.zip_with(strides, &scale/2)
        |> row_major(shape)

      offsets = for p <- positions, do: p |> Enum.zip_with(dilations, &(&1 * &2)) |> row_major(shape)
      indices = Nx.add(Nx.new_axis(starts, -1), Nx.tensor(offsets, type: @index_type))
      gather_flat(padded, Nx.new_axis(indices, -1))
    end
  end

  # An iota of the graph (Nx.iota with no tensor argument would compute one on the host).
  defp iota(shape, axis), do: Nx.iota(shape, axis: axis, type: @index_type, backend: Nx.Defn.Expr)

  defp padding_config(opts), do: Enum.map(opts[:padding], fn {lo, hi} -> {lo, hi, 0} end)
end
