defmodule Nx.Vulkan.WindowTest do
  # Window operations through Nx.Vulkan.Window (every window's elements of the padded
  # input along a new axis, reduced over it; scatters as argmax/argmin and gathers)
  # against Nx.Defn.Evaluator, i.e. Nx.BinaryBackend's window folds and select_and_scatter.
  # Tolerances: f32 1e-5 and f64 1e-12 (relative and absolute; BinaryBackend sums f32
  # windows in f64, the device in f32); integers exact, wrap-around included.
  use Nx.Vulkan.Case, async: true

  # Inputs with ties (a scatter picks one of equal elements) and of order 1 (products of
  # whole windows stay finite); u8 values are large enough for sums to wrap around.
  defp data(shape, {:u, 8} = type),
    do: shape |> Nx.iota() |> Nx.multiply(37) |> Nx.remainder(256) |> Nx.as_type(type)

  defp data(shape, {:s, _} = type),
    do: shape |> Nx.iota(type: type) |> Nx.multiply(7) |> Nx.remainder(11) |> Nx.subtract(5)

  defp data(shape, type) do
    shape
    |> Nx.iota(type: type)
    |> Nx.multiply(0.37)
    |> Nx.sin()
    |> Nx.multiply(3)
    |> Nx.round()
    |> Nx.divide(4)
    |> Nx.add(0.3)
  end

  # Scatter sources and output weights: multiples of 1/4 in floats, which f64 and Nx
  # 0.13's BinaryBackend (it adds scattered values as f32 tensors, whatever the type)
  # add exactly.
  defp source(shape, type) do
    values = shape |> Nx.iota(type: type) |> Nx.multiply(5) |> Nx.remainder(13) |> Nx.subtract(6)
    if Nx.Type.float?(type), do: Nx.divide(values, 4), else: values
  end

  # `fun` on the device against `reference` under the evaluator.
  defp assert_matches_reference(fun, reference, args) do
    expected = Nx.Defn.jit_apply(reference, args, compiler: Nx.Defn.Evaluator)
    assert_close(expected, Nx.Defn.jit_apply(fun, args, compiler: Nx.Vulkan))
  end

  # Nx.BinaryBackend before Nx 0.13 (0.7.2 here) scatters to padded coordinates as if
  # they were the input's (so a positive low padding moves or drops values) and raises
  # for an f64 source. There, padded scatters are compared with the same scatter of the
  # explicitly padded input, its padding cropped (the definition), and f64 sources are
  # skipped.
  gives? = fn scatter, expected ->
    try do
      Nx.to_flat_list(scatter.()) == expected
    rescue
      _ -> false
    end
  end

  padded = fn ->
    Nx.window_scatter_max(Nx.tensor([1.0, 0.0]), Nx.tensor([5.0, 5.0]), 0, {2}, padding: [{1, 0}])
  end

  f64 = fn -> Nx.window_scatter_max(Nx.tensor([1.0], type: :f64), Nx.tensor([2.0], type: :f64), 0, {1}) end
  @padded_scatter? gives?.(padded, [10.0, 0.0])
  @f64_scatter? gives?.(f64, [2.0])

  @types [{:f, 32}, {:f, 64}, {:s, 32}, {:u, 8}]

  # {shape, window, options}: ranks 1 to 4, strides, the three kinds of padding
  # (negative crops), dilations, a window larger than the input. Windows of more than 16
  # elements (the last three) are gathered rather than sliced.
  @aggregate_cases [
    {{9}, {3}, []},
    {{9}, {2}, strides: 2, padding: :same},
    {{10}, {3}, window_dilations: 3, padding: [{2, 1}]},
    {{5, 6}, {2, 3}, strides: [2, 1], padding: :same},
    {{5, 6}, {3, 2}, padding: [{1, 2}, {0, 1}], window_dilations: [2, 1]},
    {{6, 7}, {2, 2}, padding: [{-1, 1}, {2, -2}], strides: [1, 3]},
    {{3, 4, 5}, {2, 2, 3}, strides: 2, window_dilations: [1, 2, 1], padding: :same},
    {{2, 3, 4, 5}, {1, 2, 2, 3}, strides: [1, 2, 1, 2], padding: [{0, 0}, {1, 1}, {0, 2}, {1, 0}]},
    {{4, 4}, {6, 5}, padding: :same},
    {{30}, {17}, strides: 2, padding: [{3, -2}]},
    {{6, 7, 5}, {3, 4, 2}, window_dilations: [1, 2, 2], strides: [1, 2, 1], padding: :same}
  ]

  describe "window aggregates" do
    for op <- [:window_sum, :window_product, :window_max, :window_min, :window_mean],
        type <- @types,
        {{shape, window, opts}, i} <- Enum.with_index(@aggregate_cases) do
      test "#{op} #{Nx.Type.to_string(type)} case #{i}: #{inspect(shape)} #{inspect(window)} #{inspect(opts)}" do
        x = data(unquote(Macro.escape(shape)), unquote(type))
        window = unquote(Macro.escape(window))
        opts = unquote(opts)
        assert_matches_evaluator(&apply(Nx, unquote(op), [&1, window, opts]), [x])
      end
    end
  end

  defp special_values(type) do
    Nx.tensor(
      [
        [:nan, 1.0, :neg_infinity, 2.0, :infinity],
        [3.0, :nan, :nan, -1.0, 0.0],
        [:infinity, :neg_infinity, 4.0, :nan, 5.0],
        [-0.0, 0.0, :nan, 1.0, 1.0]
      ],
      type: type
    )
  end

  describe "NaN and infinities" do
    for type <- [{:f, 32}, {:f, 64}] do
      test "aggregates #{Nx.Type.to_string(type)}" do
        x = special_values(unquote(type))

        for op <- [:window_sum, :window_product, :window_max, :window_min, :window_mean],
            {window, opts} <- [
              {{2, 2}, padding: :same},
              {{1, 3}, strides: [1, 2]},
              {{2, 1}, window_dilations: [2, 1]}
            ] do
          assert_matches_evaluator(&apply(Nx, op, [&1, window, opts]), [x])
        end
      end

      # Windows whose first element is NaN (BinaryBackend keeps it), with NaN later
      # (never kept), all NaN, infinities, and ties of -0.0 with 0.0.
      @tag skip: type == {:f, 64} and not @f64_scatter? && "this Nx's BinaryBackend raises for an f64 scatter"
      test "scatters #{Nx.Type.to_string(type)}" do
        x = special_values(unquote(type))

        for op <- [:window_scatter_max, :window_scatter_min],
            {window, opts} <- [{{2, 2}, []}, {{1, 3}, strides: [1, 2]}] do
          windows = Nx.window_sum(x, window, opts).shape
          source = source(windows, x.type)
          assert_matches_evaluator(&apply(Nx, op, [&1, &2, 0, window, opts]), [x, source])
        end
      end
    end
  end

  # Functions Nx allows (associative and commutative), some built of several ops; the
  # accumulator pads the input and enters every window once. BinaryBackend hands the
  # function Elixir numbers, which become f32 tensors, so it folds f64 windows in f32:
  # float inputs are signed powers of two, whose sums and products over these windows
  # f32 holds exactly, and f64 is compared at its own tolerance. (Its accumulator must
  # have the input's type: it pads with it and writes the padded type.)
  defp powers_of_two(shape, type) do
    exponents = shape |> Nx.iota() |> Nx.multiply(0.37) |> Nx.sin() |> Nx.multiply(2.5) |> Nx.round()
    signs = shape |> Nx.iota() |> Nx.remainder(3) |> Nx.equal(1) |> Nx.select(-1, 1)
    Nx.multiply(signs, Nx.pow(2, exponents)) |> Nx.as_type(type)
  end

  defp reduce_fun(:add), do: &Nx.add/2
  defp reduce_fun(:max_with_zero), do: &Nx.max(Nx.max(&1, &2), 0)
  defp reduce_fun(:multiply), do: &Nx.multiply/2

  describe "window_reduce" do
    for type <- @types,
        name <- [:add, :max_with_zero, :multiply],
        {{shape, window, opts}, i} <- Enum.with_index(@aggregate_cases),
        i in [1, 4, 5, 7, 9] do
      test "#{name} #{Nx.Type.to_string(type)} case #{i}: #{inspect(shape)} #{inspect(window)} #{inspect(opts)}" do
        fun = reduce_fun(unquote(name))
        shape = unquote(Macro.escape(shape))
        type = unquote(type)
        x = if Nx.Type.float?(type), do: powers_of_two(shape, type), else: data(shape, type)
        window = unquote(Macro.escape(window))
        opts = unquote(opts)

        for acc <- [0, 1, 2] do
          assert_matches_evaluator(&Nx.window_reduce(&1, Nx.tensor(acc, type: x.type), window, opts, fun), [x])
        end
      end
    end

    test "bitwise_or of s32" do
      x = Nx.iota({4, 6}, type: :s32) |> Nx.multiply(3)
      opts = [padding: :same, strides: [2, 1]]

      fun = fn x -> Nx.window_reduce(x, Nx.tensor(64, type: :s32), {2, 3}, opts, &Nx.bitwise_or/2) end
      assert_matches_evaluator(fun, [x])
    end

    test "a function that is not element-wise: an ArgumentError naming its op" do
      fun = fn x -> Nx.window_reduce(x, 0.0, {2}, fn a, b -> Nx.sum(Nx.stack([a, b])) end) end

      assert_raise ArgumentError, ~r/:sum/, fn ->
        Nx.Defn.jit_apply(fun, [Nx.iota({4}, type: :f32)], compiler: Nx.Vulkan)
      end
    end
  end

  # {input shape, window, options} (padding and strides; scatters have no dilations):
  # overlapping windows that select one element more than once, strides past the
  # window, padding where windows select padding (the value is dropped), negative
  # padding with strides, a window of more than 16 elements.
  @scatter_cases [
    {{9}, {3}, strides: 2},
    {{6, 7}, {2, 3}, strides: [2, 1]},
    {{6, 7}, {3, 3}, strides: [3, 2], padding: :same},
    {{5, 6}, {2, 2}, padding: [{1, 0}, {0, 2}]},
    {{6, 7}, {2, 2}, padding: [{-1, 1}, {2, -1}], strides: [1, 2]},
    {{3, 4, 5}, {2, 2, 3}, strides: [1, 2, 2]},
    {{2, 3, 4, 5}, {1, 2, 2, 2}, strides: [1, 2, 1, 2], padding: [{0, 0}, {1, 1}, {0, 1}, {1, 1}]},
    {{10, 11}, {2, 3}, strides: [3, 4]},
    {{8, 9}, {3, 2}, padding: [{-2, 1}, {-1, 2}], strides: [2, 3]},
    {{9, 10}, {5, 4}, strides: [2, 3], padding: :same}
  ]

  describe "window scatters" do
    for op <- [:window_scatter_max, :window_scatter_min],
        type <- @types,
        {{shape, window, opts}, i} <- Enum.with_index(@scatter_cases) do
      @tag skip: type == {:f, 64} and not @f64_scatter? && "this Nx's BinaryBackend raises for an f64 scatter"
      test "#{op} #{Nx.Type.to_string(type)} case #{i}: #{inspect(shape)} #{inspect(window)} #{inspect(opts)}" do
        x = data(unquote(Macro.escape(shape)), unquote(type))
        window = unquote(Macro.escape(window))
        opts = unquote(opts)
        source = source(Nx.window_sum(x, window, opts).shape, x.type)

        for init <- [0, 3] do
          scatter = &apply(Nx, unquote(op), [&1, &2, init, window, opts])

          assert_matches_reference(scatter, scatter_reference(unquote(op), x, init, window, opts), [x, source])
        end
      end
    end
  end

  defp scatter_reference(op, x, init, window, opts) do
    if @padded_scatter? or opts[:padding] in [nil, :valid] do
      &apply(Nx, op, [&1, &2, init, window, opts])
    else
      config = padding_config(x, window, opts)

      fn x, source ->
        x
        |> Nx.pad(init, Enum.map(config, fn {lo, hi} -> {lo, hi, 0} end))
        |> then(&apply(Nx, op, [&1, source, init, window, Keyword.delete(opts, :padding)]))
        |> Nx.pad(init, Enum.map(config, fn {lo, hi} -> {-lo, -hi, 0} end))
      end
    end
  end

  # The explicit padding Nx gives the window op.
  defp padding_config(x, window, opts) do
    ones = List.duplicate(1, Nx.rank(x))
    {_shape, config} = Nx.Shape.pool(x.shape, window, ones, opts[:padding], ones)
    config
  end

  # The gradient of window_max/window_min is a window scatter of the output gradient
  # (without dilations: Nx passes none); window_sum's is a window_sum of it, dilated and
  # padded.
  @grad_cases [
    {{9}, {3}, strides: 2},
    {{5, 6}, {2, 3}, strides: [2, 1], padding: :same},
    {{5, 6}, {3, 3}, padding: [{1, 2}, {0, 1}]},
    {{3, 4, 5}, {2, 2, 2}, strides: [1, 2, 1]},
    {{2, 3, 4, 5}, {1, 2, 2, 2}, strides: [1, 2, 2, 1], padding: :same},
    {{9, 10}, {5, 4}, strides: [2, 3], padding: :same},
    {{6, 7}, {2, 3}, window_dilations: [2, 1], strides: 2, padding: :same}
  ]

  describe "gradients" do
    for op <- [:window_max, :window_min, :window_sum, :window_mean],
        type <- [{:f, 32}, {:f, 64}],
        {{shape, window, opts}, i} <- Enum.with_index(@grad_cases),
        op in [:window_sum, :window_mean] or not Keyword.has_key?(opts, :window_dilations) do
      @tag skip:
             type == {:f, 64} and op in [:window_max, :window_min] and not @f64_scatter? &&
               "this Nx's BinaryBackend raises for an f64 scatter"
      test "grad of #{op} #{Nx.Type.to_string(type)} case #{i}: #{inspect(shape)} #{inspect(window)} #{inspect(opts)}" do
        x = data(unquote(Macro.escape(shape)), unquote(type))
        window = unquote(Macro.escape(window))
        opts = unquote(opts)
        weights = source(apply(Nx, unquote(op), [x, window, opts]).shape, x.type)
        loss = weighted_loss(unquote(op), window, opts, weights)
        reference = grad_reference(unquote(op), x, window, opts, weights)
        assert_matches_reference(&Nx.Defn.grad(&1, loss), reference, [x])
      end
    end
  end

  # The sum of the window op's outputs times weights, which make the output gradient
  # differ between windows.
  defp weighted_loss(op, window, opts, weights),
    do: &Nx.sum(Nx.multiply(apply(Nx, op, [&1, window, opts]), weights))

  # Where this Nx's BinaryBackend misplaces a padded scatter: the gradient through an
  # explicit pad of the input with the scatter's init value, 0 (Nx's gradient pads with
  # it, and the pad's gradient crops it).
  defp grad_reference(op, x, window, opts, weights) do
    if @padded_scatter? or opts[:padding] in [nil, :valid] or op in [:window_sum, :window_mean] do
      loss = weighted_loss(op, window, opts, weights)
      &Nx.Defn.grad(&1, loss)
    else
      config = Enum.map(padding_config(x, window, opts), fn {lo, hi} -> {lo, hi, 0} end)
      loss = weighted_loss(op, window, Keyword.delete(opts, :padding), weights)
      &Nx.Defn.grad(&1, fn y -> loss.(Nx.pad(y, 0, config)) end)
    end
  end

  test "dispatches: one for a window max (pad, window elements, reduction), sliced or gathered; two for its gradient" do
    x = data({8, 9}, {:f, 32})
    dispatches = &Nx.Vulkan.explain(&1, [x]).dispatches
    assert dispatches.(&Nx.window_max(&1, {3, 3}, strides: [2, 1], padding: :same)) == 1
    assert dispatches.(&Nx.window_max(&1, {4, 5}, strides: [2, 1], padding: :same)) == 1
    grad = dispatches.(&Nx.Defn.grad(&1, fn y -> Nx.sum(Nx.window_max(y, {3, 3})) end))

    # Within 4 storage buffers per kernel (mali-g78) the gradient's scatter and its masks
    # read more buffers than one kernel binds: 5 kernels.
    if device_caps().max_storage_buffers >= 8, do: assert(grad == 2), else: assert(grad <= 5)
  end

  test "Nx.Vulkan.Backend runs window ops on the device" do
    x = data({5, 6}, {:f, 32})
    dx = Nx.backend_transfer(x, Nx.Vulkan.Backend)

    for fun <- [
          &Nx.window_sum(&1, {2, 3}, padding: :same),
          &Nx.window_max(&1, {2, 2}, strides: 2),
          &Nx.window_mean(&1, {3, 1}, window_dilations: [2, 1]),
          &Nx.window_scatter_min(&1, Nx.iota({4, 5}, type: :f32), 0.0, {2, 2})
        ] do
      result = fun.(dx)
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = result
      assert_close(fun.(x), result)
    end
  end
end
