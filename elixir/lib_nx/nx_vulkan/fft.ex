defmodule Nx.Vulkan.FFT do
  @moduledoc """
  Discrete Fourier transforms of the rows of a `[batch, n]` complex value held as
  `{re, im}` real parts (`Nx.Vulkan.Complex` lowers `Nx.fft`/`Nx.ifft` to these), written
  with real Nx operations in O(n log n) along the row.

  Twiddle and chirp angles are 2π·e/p for an integer exponent `e` already reduced modulo
  its period `p` (in integers, so that the angle is exact before its rounding to the part
  type); the tables depend only on `n` and are folded into literals by the compiler's
  `constant-fold` pass while they are small.
  """

  import Bitwise

  # Rows of other lengths up to this many points stay a DFT: one dot kernel, its cos/sin
  # tables (n² elements) within what constant-fold turns into literals, where Bluestein's
  # three transforms of m >= 2n - 1 points take a dozen kernels that cost seconds to
  # compile on lavapipe; its round-off (O(n·eps) per output) stays within c64's 1e-4 here.
  @dft_max 256

  @doc """
  The unnormalised transform Σ_j z_j·exp(sign·2πi·jk/n) of each row of `{re, im}`
  (`[batch, n]`): `sign` -1 is Nx.fft, +1 Nx.ifft before its division by n.
  """
  def transform({re, _im} = z, sign) do
    n = Nx.axis_size(re, 1)

    cond do
      band(n, n - 1) == 0 -> stockham(z, n, sign)
      n <= @dft_max -> dft(z, n, sign)
      true -> bluestein(z, n, sign)
    end
  end

  # Stockham FFT (no bit reversal) in radix-4 stages and, for an odd power of two, one
  # radix-2 stage first. Before a stage of radix R on subsequences of length m the row is
  # [r, m]: the transforms of the r interleaved subsequences z[j], z[j + r], ... The stage
  # merges subsequences j + q·r/R (q < R) into [r/R, R·m]:
  # out[k] = Σ_q w^(q·k mod R·m)·in_q[k mod m], w = exp(sign·2πi/(R·m)). Each output reads
  # R elements of its input, so every stage is O(n); radix 4 halves the stages (and the
  # kernels and passes over memory) at 1.5 times radix 2's arithmetic.
  defp stockham({re, im}, n, sign) do
    batch = Nx.axis_size(re, 0)
    stages = ceil_log2(n)
    radices = List.duplicate(2, rem(stages, 2)) ++ List.duplicate(4, div(stages, 2))
    z = {Nx.reshape(re, {batch, n, 1}), Nx.reshape(im, {batch, n, 1})}

    {{re, im}, ^n} =
      Enum.reduce(radices, {z, 1}, fn radix, {z, m} -> {butterfly(z, radix, m, n, sign), radix * m} end)

    {Nx.reshape(re, {batch, n}), Nx.reshape(im, {batch, n})}
  end

  defp butterfly({re, im}, radix, m, n, sign) do
    batch = Nx.axis_size(re, 0)
    rows = div(n, radix * m)

    input = fn part, q ->
      part
      |> Nx.reshape({batch, radix, rows, m})
      |> Nx.slice_along_axis(q, 1, axis: 1)
      |> Nx.reshape({batch, rows, 1, m})
      |> Nx.broadcast({batch, rows, radix, m})
      |> Nx.reshape({batch, rows, radix * m})
    end

    k = Nx.iota({radix * m}, type: {:s, 32})

    for q <- 1..(radix - 1), reduce: {input.(re, 0), input.(im, 0)} do
      {sum_re, sum_im} ->
        w = twiddle(Nx.remainder(Nx.multiply(k, q), radix * m), radix * m, sign, re.type)
        {tr, ti} = Nx.Vulkan.Complex.multiply({input.(re, q), input.(im, q)}, w)
        {Nx.add(sum_re, tr), Nx.add(sum_im, ti)}
    end
  end

  # The product with the n×n matrix exp(sign·2πi·(jk mod n)/n).
  defp dft({re, im}, n, sign) do
    j = Nx.iota({n, n}, axis: 0, type: {:s, 32})
    k = Nx.iota({n, n}, axis: 1, type: {:s, 32})
    {cos, sin} = twiddle(Nx.remainder(Nx.multiply(j, k), n), n, sign, re.type)
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
    exponents = Nx.tensor(for(k <- 0..(n - 1), do: rem(k * k, 2 * n)), type: {:s, 32})
    chirp = twiddle(exponents, 2 * n, sign, part)
    zeros = Nx.broadcast(Nx.tensor(0, type: part), {m - 2 * n + 1})

    # conj(c) at offsets 0..n-1 and -(n-1)..-1 (mod m), zeros between.
    wrap = fn p ->
      Nx.concatenate([p, zeros, p |> Nx.slice([1], [n - 1]) |> Nx.reverse()]) |> Nx.reshape({1, m})
    end

    {kr, ki} = twiddle(exponents, 2 * n, -sign, part)
    kernel = stockham({wrap.(kr), wrap.(ki)}, m, -1)

    pad = &Nx.pad(&1, Nx.tensor(0, type: part), [{0, 0, 0}, {0, m - n, 0}])
    {ar, ai} = Nx.Vulkan.Complex.multiply(z, chirp)
    spectrum = Nx.Vulkan.Complex.multiply(stockham({pad.(ar), pad.(ai)}, m, -1), kernel)
    {yr, yi} = stockham(spectrum, m, 1)
    first = &(&1 |> Nx.slice_along_axis(0, n, axis: 1) |> Nx.divide(m))
    Nx.Vulkan.Complex.multiply({first.(yr), first.(yi)}, chirp)
  end

  defp ceil_log2(x), do: ceil_log2(x, 0)
  defp ceil_log2(x, bits) when 1 <<< bits >= x, do: bits
  defp ceil_log2(x, bits), do: ceil_log2(x, bits + 1)

  # {cos, sign·sin} of the angles 2π·exponents/period, in the part type.
  defp twiddle(exponents, period, sign, part) do
    angle = exponents |> Nx.as_type(part) |> Nx.multiply(Nx.tensor(2 * :math.pi() / period, type: part))
    {Nx.cos(angle), Nx.multiply(Nx.sin(angle), sign)}
  end
end
