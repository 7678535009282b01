defmodule Nx.Vulkan.FFT do
  @moduledoc """
  Discrete Fourier transforms of the rows of a `[batch, n]` complex value held as
  `{re, im}` real parts (`Nx.Vulkan.Complex` lowers `Nx.fft`/`Nx.ifft` to these), written
  with real Nx operations in O(n log n) along the row.

  Twiddle and chirp tables are literals computed on the host: cos and sin of 2π·e/p for
  integer exponents `e` reduced modulo their period `p` first, in f64, rounded once to the
  part type (f32 for c64, f64 for c128). They depend only on the length, and are no work
  for the device.
  """

  import Bitwise

  # Rows of other lengths up to this many points stay a DFT: one dot kernel with n×n
  # cos/sin tables (at most 65536 elements each), where Bluestein's three transforms of
  # m >= 2n - 1 points take some twenty kernels: at 256 points on lavapipe, as fast to run
  # but 1.8 s to compile cold against the DFT's 0.3 s. The DFT's round-off (O(n·eps) per
  # output) stays within c64's 1e-4 here.
  @dft_max 256

  @doc """
  The unnormalised transform Σ_j z_j·exp(sign·2πi·jk/n) of each row of `{re, im}`
  (`[batch, n]`): `sign` -1 is Nx.fft, +1 Nx.ifft before its division by n.
  """
  def transform({re, _im} = z, sign) do
    n = Nx.axis_size(re, 1)

    cond do
      band(n, n - 1) == 0 -> stockham(z, n, sign, twiddle(Enum.to_list(0..(n - 1)), n, 1, re.type))
      n <= @dft_max -> dft(z, n, sign)
      true -> bluestein(z, n, sign)
    end
  end

  # Stockham FFT (no bit reversal) in radix-4 stages and, for an odd power of two, one
  # radix-2 stage first. Before a stage of radix R on subsequences of length m the row is
  # [r, m]: the transforms of the r interleaved subsequences z[j], z[j + r], ... The stage
  # merges subsequences j + q·r/R (q < R) into [r/R, R·m]:
  # out[k] = Σ_q w^(q·k mod R·m)·in_q[k mod m], w = exp(sign·2πi/(R·m)), written as a sum
  # over an axis of q: each output reads R elements of its input, so every stage is O(n),
  # and the sum roots a kernel of its own that reads the previous stage from a buffer, so
  # fusion cuts exactly between stages (elementwise stages fused into each other would
  # evaluate their inputs R times per level, up to the cost model's bound, in long kernels
  # that are slow to compile). Radix 4 halves the stages (and the kernels and passes over
  # memory) of radix 2.
  # `table` holds w_n^e = exp(2πi·e/n) for e < n; every stage's twiddles are among them.
  defp stockham({re, im}, n, sign, table) do
    batch = Nx.axis_size(re, 0)
    stages = ceil_log2(n)
    radices = List.duplicate(2, rem(stages, 2)) ++ List.duplicate(4, div(stages, 2))
    z = {Nx.reshape(re, {batch, n, 1}), Nx.reshape(im, {batch, n, 1})}

    {{re, im}, ^n} =
      Enum.reduce(radices, {z, 1}, fn radix, {z, m} -> {butterfly(z, radix, m, sign, table), radix * m} end)

    {Nx.reshape(re, {batch, n}), Nx.reshape(im, {batch, n})}
  end

  defp butterfly({re, im}, radix, m, sign, {cos, sin}) do
    {batch, n} = {Nx.axis_size(re, 0), Nx.axis_size(cos, 0)}
    rows = div(n, radix * m)
    # in_q[k mod m] for every output k = p·m + k', on an axis of q to sum over
    inputs = &(&1 |> Nx.reshape({batch, radix, rows, 1, m}) |> Nx.broadcast({batch, radix, rows, radix, m}))
    # w^(q·k mod R·m) = w_n^((q·k mod R·m)·n/(R·m))
    q = Nx.iota({radix, 1, radix, m}, axis: 0, type: {:s, 32})
    k = Nx.iota({radix, 1, radix * m}, axis: 2, type: {:s, 32}) |> Nx.reshape({radix, 1, radix, m})
    index = q |> Nx.multiply(k) |> Nx.remainder(radix * m) |> Nx.multiply(div(n, radix * m))
    w = {Nx.take(cos, index), Nx.multiply(Nx.take(sin, index), sign)}
    {tr, ti} = Nx.Vulkan.Complex.multiply({inputs.(re), inputs.(im)}, w)
    sum = &(&1 |> Nx.sum(axes: [1]) |> Nx.reshape({batch, rows, radix * m}))
    {sum.(tr), sum.(ti)}
  end

  # The product with the n×n matrix exp(sign·2πi·(jk mod n)/n).
  defp dft({re, im}, n, sign) do
    {cos, sin} = twiddle(for(j <- 0..(n - 1), k <- 0..(n - 1), do: rem(j * k, n)), n, sign, re.type)
    {cos, sin} = {Nx.reshape(cos, {n, n}), Nx.reshape(sin, {n, n})}
    dot = &Nx.dot(&1, [1], &2, [0])
    {Nx.subtract(dot.(re, cos), dot.(im, sin)), Nx.add(dot.(re, sin), dot.(im, cos))}
  end

  # Bluestein's chirp z-transform: with jk = (j² + k² - (k-j)²)/2, the transform is
  # c_k·Σ_j (z_j·c_j)·conj(c_(k-j)) for the chirp c_k = exp(sign·πi·k²/n), a convolution
  # done circularly by power-of-two FFTs of m >= 2n - 1 points (no wrapped term reaches
  # k < n). The chirp's exponents k² mod 2n are reduced on the host, exactly.
  defp bluestein({re, _im} = z, n, sign) do
    m = 2 ** ceil_log2(2 * n - 1)
    part = re.type
    exponents = for k <- 0..(n - 1), do: rem(k * k, 2 * n)
    {cr, ci} = chirp = twiddle(exponents, 2 * n, sign, part)
    zeros = Nx.broadcast(Nx.tensor(0, type: part), {m - 2 * n + 1})

    # conj(c) at offsets 0..n-1 and -(n-1)..-1 (mod m), zeros between.
    wrap = fn p ->
      Nx.concatenate([p, zeros, p |> Nx.slice([1], [n - 1]) |> Nx.reverse()]) |> Nx.reshape({1, m})
    end

    table = twiddle(Enum.to_list(0..(m - 1)), m, 1, part)
    kernel = stockham({wrap.(cr), wrap.(Nx.negate(ci))}, m, -1, table)

    pad = &Nx.pad(&1, Nx.tensor(0, type: part), [{0, 0, 0}, {0, m - n, 0}])
    {ar, ai} = Nx.Vulkan.Complex.multiply(z, chirp)
    spectrum = Nx.Vulkan.Complex.multiply(stockham({pad.(ar), pad.(ai)}, m, -1, table), kernel)
    {yr, yi} = stockham(spectrum, m, 1, table)
    first = &(&1 |> Nx.slice_along_axis(0, n, axis: 1) |> Nx.divide(m))
    Nx.Vulkan.Complex.multiply({first.(yr), first.(yi)}, chirp)
  end

  defp ceil_log2(x), do: ceil_log2(x, 0)
  defp ceil_log2(x, bits) when 1 <<< bits >= x, do: bits
  defp ceil_log2(x, bits), do: ceil_log2(x, bits + 1)

  # {cos, sign·sin} of the angles 2π·e/period for exponents e reduced modulo the period,
  # computed on the host in f64 from the exact integers and rounded once to the part type.
  defp twiddle(exponents, period, sign, part) do
    angles = Enum.map(exponents, &(2 * :math.pi() * &1 / period))

    {Nx.tensor(Enum.map(angles, &:math.cos/1), type: part),
     Nx.tensor(Enum.map(angles, &(sign * :math.sin(&1))), type: part)}
  end
end
