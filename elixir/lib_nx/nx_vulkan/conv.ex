defmodule Nx.Vulkan.Conv do
  @moduledoc false
  # Nx.conv/3 written with ops the IR has, for the serialiser (Nx.Vulkan.IR) to inline in
  # place of the `conv` node: an implicit GEMM. The input, permuted to [batch, channels,
  # spatial...], is padded (input dilation is interior padding), strided slices of it are
  # stacked per spatial axis, one per kernel tap or per output position along it (whichever
  # are fewer, so a weight gradient, whose "kernel" is a whole image, stays a few slices),
  # and one `dot` contracts the patches with the kernel over input channels and taps, with
  # the feature or batch groups as its batch axis. The pad, slices, stacks and transposes
  # are index maps, which the dot's kernel evaluates as it loads its tiles (no patches are
  # written to memory; on some targets a large product's padded input is a kernel of its
  # own, passes/fuse.cpp); reshapes of the dot's result are read in place by its consumers.
  # Takes and returns `Nx.Defn.Expr` tensors, as Nx.Vulkan.LinAlg does.

  # Windows per image from which the kernel is the dot's left operand (see contract/3): two
  # tiles of 128 columns, at least two thirds of them used.
  @kernel_first 256

  # Input channels times taps from which a multi-tap kernel's product folds the images into
  # its columns (see contract/3): ResNet-50's 7x7 stem (147 terms) ran slower folded.
  @fold_contraction 256

  @doc """
  The `conv` node `out` (its type and shape) of `input` and `kernel`, with the options
  Nx.conv/3 normalised and passed to the backend (lists per spatial axis, explicit
  padding, full permutations).
  """
  def conv(out, input, kernel, opts) do
    strides = opts[:strides]
    dilation = opts[:kernel_dilation]
    # Nx allows one kind of group at a time; the other count is 1
    groups = {opts[:feature_group_size], opts[:batch_group_size]}

    x =
      input
      |> Nx.as_type(out.type)
      |> Nx.transpose(axes: opts[:input_permutation])
      |> pad(opts[:padding], opts[:input_dilation])
      |> group_input(groups)

    k = kernel |> Nx.as_type(out.type) |> Nx.transpose(axes: opts[:kernel_permutation])
    taps = k.shape |> Tuple.to_list() |> Enum.drop(2)
    windows = window_counts(x, taps, dilation, strides)

    x
    |> patches(taps, windows, dilation, strides)
    |> contract(k, windows)
    |> gap_nan(x, input.type, taps, windows, dilation, strides)
    |> ungroup(windows)
    |> Nx.transpose(axes: inverse(opts[:output_permutation]))
  end

  # Edge padding as given (negative crops), input dilation as interior zeros: the zeros
  # are multiplied by the kernel as Nx.BinaryBackend does (an infinite weight gives NaN).
  defp pad(x, padding, input_dilation) do
    spatial = Enum.zip_with(padding, input_dilation, fn {lo, hi}, d -> {lo, hi, d - 1} end)
    Nx.pad(x, Nx.tensor(0, type: x.type), [{0, 0, 0}, {0, 0, 0} | spatial])
  end

  # [batch, channels, spatial...] -> [groups, batch per group, channels per group, spatial...]:
  # batch group j holds batch items j*b..(j+1)*b-1, feature group j channels j*c..(j+1)*c-1
  # (Nx.BinaryBackend's split_into_batch_groups and split_into_feature_groups).
  defp group_input(x, {feature_groups, batch_groups}) do
    [batch, channels | spatial] = Tuple.to_list(x.shape)
    b = div(batch, batch_groups)
    c = div(channels, feature_groups)

    x
    |> Nx.reshape(List.to_tuple([batch_groups, b, feature_groups, c | spatial]))
    |> Nx.transpose(axes: [0, 2, 1 | Enum.to_list(3..(3 + length(spatial)))])
    |> Nx.reshape(List.to_tuple([batch_groups * feature_groups, b, c | spatial]))
  end

  # Output positions per spatial axis (Nx.Shape.conv's formula; Nx rejects empty outputs).
  defp window_counts(x, taps, dilation, strides) do
    [x.shape |> Tuple.to_list() |> Enum.drop(3), taps, dilation, strides]
    |> Enum.zip_with(fn [size, k, d, s] -> div(size - extent(k, d), s) + 1 end)
  end

  defp extent(taps, dilation), do: (taps - 1) * dilation + 1

  # The grouped input's values under every window and tap, and the axes that hold the
  # channels and taps (contracted with the kernel's): [g, b, c, windows..., taps...] from
  # slices per tap strided over the windows, or [g, b, c, taps..., windows...] from slices
  # per window strided over the taps, whichever are fewer (a weight gradient's "kernel" is
  # a whole image). One spatial axis at a time, each stack appending its axis: a kernel
  # reading the patches selects among a few slices per axis, not among one per tap.
  defp patches(x, taps, windows, dilation, strides) do
    d = length(taps)
    per_tap? = Enum.product(taps) <= Enum.product(windows)

    patches =
      [taps, windows, dilation, strides]
      |> Enum.zip()
      |> Enum.with_index(3)
      |> Enum.reduce(x, fn {{k, w, dil, s}, axis}, acc ->
        slices =
          if per_tap? do
            for t <- 0..(k - 1),
                do: Nx.slice_along_axis(acc, t * dil, (w - 1) * s + 1, axis: axis, strides: s)
          else
            for j <- 0..(w - 1), do: Nx.slice_along_axis(acc, j * s, extent(k, dil), axis: axis, strides: dil)
          end

        Nx.stack(slices, axis: tuple_size(acc.shape))
      end)

    taps_at = if per_tap?, do: Enum.to_list((3 + d)..(2 + 2 * d)), else: Enum.to_list(3..(2 + d))
    {patches, [2 | taps_at], per_tap?}
  end

  @doc "Every index into an array of `sizes`, in row-major order (the order reshape flattens in)."
  def positions(sizes) do
    Enum.reduce(Enum.reverse(sizes), [[]], fn size, inner ->
      for i <- 0..(size - 1), rest <- inner, do: [i | rest]
    end)
  end

  # -> [groups, batch, out channels per group, windows...]. Per tap with one group, a kernel
  # of more than one tap and a contraction of @fold_contraction terms or more, the images are
  # folded into the product's columns: the kernel times the windows of the whole batch,
  # whose patches lie along the input's rows, transposed to [1, batch, out, windows...]
  # afterwards (the product's tiles store each element where the transpose puts it). One
  # product of all the windows fills tiles that an image's windows leave partly empty
  # (ResNet-50's 28x28 images: 784 windows, 6.1 tiles of 128); over fewer terms the folded
  # product ran slower (docs/tuning.md, "Convolutions' products").
  defp contract({patches, patches_contract, per_tap?}, k, windows) do
    [_out, in_channels | taps] = Tuple.to_list(k.shape)
    tap_count = Enum.product(taps)

    if per_tap? and elem(patches.shape, 0) == 1 and tap_count > 1 and
         in_channels * tap_count >= @fold_contraction do
      d = length(taps)
      k = Nx.reshape(k, List.to_tuple([1 | Tuple.to_list(k.shape)]))

      k
      |> Nx.dot(Enum.to_list(2..(d + 2)), [0], patches, patches_contract, [0])
      |> Nx.transpose(axes: [0, 2, 1 | Enum.to_list(3..(2 + d))])
    else
      contract_per_image(patches, patches_contract, k, per_tap? and Enum.product(windows) >= @kernel_first)
    end
  end

  # Per tap over an image of at least @kernel_first windows (a 1x1 kernel, groups, or fewer
  # terms than @fold_contraction), the kernel, broadcast over the batch (an index map the
  # dot's tiles read in place), is the left operand and the batch a batch axis: the
  # product's rows are output channels and its columns windows, in the output's layout
  # (with one group, the dot's result is the conv's). Otherwise (few windows per image, or a weight gradient: few windows, a long
  # contraction), the windows of the whole batch are the rows and the output channels the
  # columns, transposed afterwards. Groups split the kernel's output channels into
  # consecutive chunks, a batch axis of the dot.
  defp contract_per_image(patches, patches_contract, k, kernel_first?) do
    [out, in_channels | taps] = Tuple.to_list(k.shape)
    [groups, batch | _] = Tuple.to_list(patches.shape)
    d = length(taps)
    k_contract = Enum.to_list(1..(d + 1))

    if kernel_first? and groups == 1 do
      # without the group axis, so that the dot's result is the conv's, with no copy
      k = Nx.broadcast(k, List.to_tuple([batch | Tuple.to_list(k.shape)]), axes: Enum.to_list(1..(d + 2)))
      [_ | shape] = Tuple.to_list(patches.shape)
      patches = Nx.reshape(patches, List.to_tuple(shape))

      result =
        Nx.dot(k, Enum.map(k_contract, &(&1 + 1)), [0], patches, Enum.map(patches_contract, &(&1 - 1)), [0])

      Nx.reshape(result, List.to_tuple([1 | Tuple.to_list(result.shape)]))
    else
      k = Nx.reshape(k, List.to_tuple([groups, div(out, groups), in_channels | taps]))

      if kernel_first? do
        shape = List.to_tuple([groups, batch, div(out, groups), in_channels | taps])
        k = Nx.broadcast(k, shape, axes: [0 | Enum.to_list(2..(d + 3))])
        Nx.dot(k, Enum.map(k_contract, &(&1 + 2)), [0, 1], patches, patches_contract, [0, 1])
      else
        patches
        |> Nx.dot(patches_contract, [0], k, Enum.map(k_contract, &(&1 + 1)), [0])
        |> Nx.transpose(axes: [0, 1, 2 + d | Enum.to_list(2..(1 + d))])
      end
    end
  end

  # Nx.BinaryBackend dilates the kernel with zeros and multiplies the input under those
  # gaps by them, so an infinity or NaN there makes the output NaN, though the dot skips
  # the gaps. A gap holds one where a window has more non-finite inputs than its taps see.
  # The counts are window sums, separable per axis: a few slices per axis, not one per tap.
  defp gap_nan(result, x, input_type, taps, windows, dilation, strides) do
    if Nx.Type.float?(input_type) and Enum.any?(dilation, &(&1 > 1)) do
      counts = Nx.sum(Nx.logical_or(Nx.is_nan(x), Nx.is_infinity(x)), axes: [2])
      axes = Enum.zip([Enum.to_list(2..(1 + length(taps))), taps, dilation, strides, windows])
      {gapped, plain} = Enum.split_with(axes, fn {_axis, _k, d, _s, _w} -> d > 1 end)
      counts = Enum.reduce(plain, counts, fn {a, k, _d, s, w}, acc -> window_sum(acc, a, k, 1, s, w) end)

      span =
        Enum.reduce(gapped, counts, fn {a, k, d, s, w}, acc -> window_sum(acc, a, extent(k, d), 1, s, w) end)

      seen = Enum.reduce(gapped, counts, fn {a, k, d, s, w}, acc -> window_sum(acc, a, k, d, s, w) end)
      gapped? = Nx.broadcast(Nx.new_axis(Nx.greater(span, seen), 2), result.shape)
      Nx.select(gapped?, Nx.tensor(:nan, type: result.type), result)
    else
      result
    end
  end

  # Along `axis`: per window, the sum of `taps` elements `step` apart.
  defp window_sum(counts, axis, taps, step, stride, windows) do
    length = (windows - 1) * stride + 1

    0..(taps - 1)
    |> Enum.map(&Nx.slice_along_axis(counts, &1 * step, length, axis: axis, strides: stride))
    |> Enum.reduce(&Nx.add/2)
  end

  # [groups, batch, out per group, windows...] -> [batch, groups * out per group, windows...]
  defp ungroup(result, windows) do
    [groups, batch, out | _] = Tuple.to_list(result.shape)
    shape = List.to_tuple([batch, groups * out | windows])

    if groups == 1,
      do: Nx.reshape(result, shape),
      else: result |> Nx.transpose(axes: [1, 0 | Enum.to_list(2..(2 + length(windows)))]) |> Nx.reshape(shape)
  end

  defp inverse(permutation) do
    permutation |> Enum.with_index() |> Enum.sort() |> Enum.map(&elem(&1, 1))
  end
end
