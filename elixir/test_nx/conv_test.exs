defmodule Nx.Vulkan.ConvTest do
  # Nx.conv through Nx.Vulkan.Conv (im2col: slices of the padded input, one dot) against
  # Nx.Defn.Evaluator, i.e. Nx.BinaryBackend's direct convolution, which sums in Elixir
  # floats (f64) before rounding to the output type. Tolerances: f32 1e-4 relative, f64
  # 1e-10 relative, each with the same absolute tolerance for outputs near zero (the
  # inputs are of order 1, the outputs sums of up to ~50 signed products).
  use Nx.Vulkan.Case, async: true

  @tolerance %{{:f, 32} => [rtol: 1.0e-4, atol: 1.0e-4], {:f, 64} => [rtol: 1.0e-10, atol: 1.0e-10]}

  # Values of order 1 without structure (no two taps see the same pattern).
  defp data(shape, type, scale) do
    shape |> Nx.iota(type: type) |> Nx.multiply(scale) |> Nx.sin()
  end

  defp check(input_shape, kernel_shape, opts, type) do
    x = data(input_shape, type, 0.37)
    k = data(kernel_shape, type, 0.91)
    assert_matches_evaluator(&Nx.conv(&1, &2, opts), [x, k], @tolerance[Nx.Type.normalize!(type)])
  end

  # {input shape, kernel shape, options}: 2-D, each option alone.
  @single [
    {{2, 3, 7, 6}, {4, 3, 3, 2}, []},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, strides: [2, 3]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, strides: 2},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, padding: :same},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, padding: [{2, 1}, {0, 3}]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, padding: [{-1, 2}, {1, -1}]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, input_dilation: [2, 1]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, input_dilation: 3},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, kernel_dilation: [1, 2]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, kernel_dilation: 2},
    {{2, 6, 5, 5}, {6, 2, 3, 3}, feature_group_size: 3},
    {{4, 3, 5, 5}, {6, 3, 2, 2}, batch_group_size: 2},
    # channels last: [batch, height, width, channels]
    {{2, 7, 6, 3}, {4, 3, 3, 2}, input_permutation: [0, 3, 1, 2]},
    # [height, width, in, out]
    {{2, 3, 7, 6}, {3, 2, 3, 4}, kernel_permutation: [3, 2, 0, 1]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, output_permutation: [0, 2, 3, 1]},
    # more taps than windows: one slice per window
    {{1, 2, 6, 5}, {3, 2, 5, 4}, []}
  ]

  # Options combined, and 1-D and 3-D.
  @combined [
    {{2, 4, 9, 8}, {2, 6, 3, 2},
     strides: [2, 1],
     padding: [{1, 2}, {2, 0}],
     input_dilation: [1, 2],
     kernel_dilation: [2, 1],
     feature_group_size: 2,
     input_permutation: [0, 1, 3, 2],
     kernel_permutation: [1, 0, 2, 3],
     output_permutation: [3, 1, 0, 2]},
    {{6, 3, 6, 7}, {4, 3, 2, 3},
     strides: [1, 2], padding: :same, kernel_dilation: 2, input_dilation: [2, 1], batch_group_size: 2},
    {{1, 2, 6, 5}, {3, 2, 5, 4}, kernel_dilation: [1, 2], padding: [{2, 2}, {3, 3}], strides: 3},
    {{2, 3, 11}, {4, 3, 3}, strides: [2], padding: :same, kernel_dilation: [2], input_dilation: [2]},
    {{3, 11, 2}, {3, 2, 4}, input_permutation: [0, 2, 1], kernel_permutation: [0, 1, 2], padding: [{-1, 3}]},
    {{1, 4, 5, 4, 6}, {4, 2, 2, 3, 2},
     strides: [1, 2, 1], padding: [{1, 0}, {0, 1}, {1, 1}], kernel_dilation: [2, 1, 1], feature_group_size: 2},
    {{2, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, input_dilation: 2, output_permutation: [4, 3, 2, 1, 0]}
  ]

  @gradients [
    {{2, 3, 7, 6}, {4, 3, 3, 2}, []},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, strides: [2, 3], padding: [{2, 1}, {0, 3}]},
    {{2, 3, 7, 6}, {4, 3, 3, 2}, input_dilation: 3, kernel_dilation: [1, 2]},
    {{2, 6, 5, 5}, {6, 2, 3, 3}, feature_group_size: 3, padding: :same},
    {{4, 3, 5, 5}, {6, 3, 2, 2}, batch_group_size: 2, strides: 2},
    {{2, 7, 6, 3}, {3, 2, 3, 4},
     input_permutation: [0, 3, 1, 2], kernel_permutation: [3, 2, 0, 1], output_permutation: [0, 2, 3, 1]},
    {{2, 3, 11}, {4, 3, 3}, strides: [2], padding: :same, kernel_dilation: [2], input_dilation: [2]},
    {{1, 4, 5, 4, 6}, {4, 2, 2, 3, 2},
     strides: [1, 2, 1], padding: [{1, 0}, {0, 1}, {1, 1}], feature_group_size: 2},
    hd(@combined)
  ]

  # Shapes whose dots are tiled (codegen/matmul.h: at least 16 x 16 outputs and 2^18
  # multiply-adds), each option, with the gradients, whose convs (input dilation, batch
  # groups, reversed kernels) are tiled too. Images of 256 windows or more (the groups, the
  # last) take the kernel as the dot's left operand, smaller ones the patches; the last
  # one's weight gradient contracts over 8 x 24 x 24 positions into 576 outputs, which
  # split-reduction splits into a batched dot and a sum over the parts. Kernels of several
  # taps over 32 channels (288 terms) fold the images into the product's columns, strided
  # and dilated, and so do their input gradients over 32 output channels.
  @tiled [
    {{2, 32, 12, 12}, {16, 32, 3, 3}, padding: :same},
    {{2, 32, 17, 15}, {16, 32, 3, 3}, strides: [2, 1], kernel_dilation: [1, 2], padding: [{1, 2}, {0, 1}]},
    {{2, 32, 11, 10}, {32, 32, 3, 3}, strides: 2, padding: :same},
    {{2, 16, 12, 12}, {16, 16, 3, 3}, padding: :same},
    {{2, 16, 17, 15}, {16, 16, 3, 3}, strides: [2, 1], padding: [{1, 2}, {0, 1}]},
    {{2, 16, 14, 12}, {16, 16, 3, 3}, kernel_dilation: [2, 1], padding: :same},
    {{2, 16, 9, 8}, {16, 16, 3, 3}, input_dilation: [2, 1], padding: [{1, 1}, {0, 2}]},
    {{2, 32, 16, 16}, {32, 16, 3, 3}, feature_group_size: 2, padding: :same},
    {{4, 16, 16, 16}, {32, 16, 3, 3}, batch_group_size: 2, padding: :same},
    {{8, 4, 24, 24}, {16, 4, 3, 3}, padding: :same}
  ]

  # The evaluator's conv gradients at these sizes take tens of seconds on a busy machine.
  for {{input, kernel, opts}, i} <- Enum.with_index(@tiled) do
    @tag timeout: 300_000
    test "the tiled kernels, #{i}: #{inspect(input)} by #{inspect(kernel)} #{inspect(opts)}, and gradients (f32)" do
      {input, kernel, opts} = unquote(Macro.escape({input, kernel, opts}))
      conv = &Nx.conv(&1, &2, opts)
      # (squares: a transcendental epilogue, a cosine per register of lavapipe's 16 x 8 tiles,
      # makes a kernel LLVM takes minutes to compile there)
      grads = &Nx.Defn.grad({&1, &2}, fn {x, k} -> Nx.sum(Nx.pow(Nx.conv(x, k, opts), 2)) end)
      args = [data(input, :f32, 0.37), data(kernel, :f32, 0.91)]

      # The forward conv's dot, and at least it and the weight gradient's among the three
      # dots of the gradients (the input gradient of 4 channels is a product of 4 columns);
      # a kernel is named after its root, an epilogue's where the dot has one.
      for {fun, tiled} <- [{conv, 1}, {grads, 2}] do
        launches = for k <- Nx.Vulkan.explain(fun, args).kernels, do: k.launch

        assert Enum.count(launches, &String.starts_with?(&1, "matmul")) >= tiled,
               inspect({input, opts, launches})

        assert_matches_evaluator(fun, args, @tolerance[{:f, 32}])
      end
    end
  end

  for type <- [:f32, :f64] do
    test "each option alone (#{type})" do
      for {input, kernel, opts} <- @single, do: check(input, kernel, opts, unquote(type))
    end

    test "options combined, 1-D and 3-D (#{type})" do
      for {input, kernel, opts} <- @combined, do: check(input, kernel, opts, unquote(type))
    end

    # Nx's gradients of conv are convs with the strides as dilations, the dilations as
    # strides, swapped permutations and groups: every option, at other values.
    test "gradients with respect to input and kernel (#{type})" do
      type = unquote(type)

      for {input, kernel, opts} <- @gradients do
        grads = &Nx.Defn.grad({&1, &2}, fn {x, k} -> Nx.sum(Nx.sin(Nx.conv(x, k, opts))) end)
        args = [data(input, type, 0.37), data(kernel, type, 0.91)]
        assert_matches_evaluator(grads, args, @tolerance[Nx.Type.normalize!(type)])
      end
    end
  end

  # (assert_matches_evaluator also compares types: Nx makes a conv of integers a float)
  test "integer inputs convolve in the floating type Nx gives the result" do
    ints = fn shape, type -> shape |> Nx.iota(type: type) |> Nx.remainder(7) |> Nx.subtract(3) end
    x = ints.({2, 3, 6, 5}, :s32)
    k = ints.({4, 3, 3, 2}, :s32)

    # (small integers: the f32 sums are exact)
    assert_matches_evaluator(&Nx.conv(&1, &2, padding: :same), [x, k], rtol: 0, atol: 0)

    opts = [strides: 2, kernel_dilation: [1, 2]]
    u = Nx.as_type(Nx.abs(x), :u8)
    assert_matches_evaluator(&Nx.conv(&1, &2, opts), [u, Nx.as_type(k, :s8)], rtol: 0, atol: 0)

    args = [Nx.as_type(x, :s64), data({4, 3, 3, 2}, :f64, 0.5)]
    assert_matches_evaluator(&Nx.conv(&1, &2, opts), args, @tolerance[{:f, 64}])
  end

  # Nx.BinaryBackend pads and dilates with zeros that it multiplies: an infinity in the
  # kernel over padding gives NaN, and so does an infinity or NaN in the input under a gap
  # of a dilated kernel (the rewrite adds that back, since its dot skips the gaps).
  test "NaN and infinities propagate as in Nx.BinaryBackend" do
    for type <- [:f32, :f64] do
      x =
        data({2, 4, 7, 6}, type, 0.37)
        |> Nx.put_slice([0, 1, 2, 3], Nx.tensor([[[[:nan]]]], type: type))
        |> Nx.put_slice([1, 2, 4, 1], Nx.tensor([[[[:infinity, :neg_infinity]]]], type: type))
        |> Nx.put_slice([0, 3, 6, 0], Nx.tensor([[[[:infinity]]]], type: type))

      tol = @tolerance[Nx.Type.normalize!(type)]

      for {kernel, opts} <- [
            {{4, 4, 3, 2}, []},
            {{4, 4, 3, 2}, kernel_dilation: [2, 3]},
            {{4, 4, 3, 2}, kernel_dilation: [1, 2], strides: [2, 1], padding: :same},
            {{4, 2, 3, 2}, kernel_dilation: 2, feature_group_size: 2},
            {{4, 4, 3, 2}, kernel_dilation: [2, 1], input_dilation: 2, padding: [{1, 1}, {2, 0}]}
          ] do
        assert_matches_evaluator(&Nx.conv(&1, &2, opts), [x, data(kernel, type, 0.91)], tol)
      end

      # 32 channels by 3 x 3 taps: the images folded into the product's columns
      x32 =
        data({2, 32, 7, 6}, type, 0.37)
        |> Nx.put_slice([0, 5, 2, 3], Nx.tensor([[[[:nan]]]], type: type))
        |> Nx.put_slice([1, 20, 4, 1], Nx.tensor([[[[:infinity, :neg_infinity]]]], type: type))
        |> Nx.put_slice([0, 31, 6, 0], Nx.tensor([[[[:infinity]]]], type: type))

      for opts <- [[], [strides: [2, 1], padding: :same], [kernel_dilation: [2, 1], padding: :same]] do
        assert_matches_evaluator(&Nx.conv(&1, &2, opts), [x32, data({4, 32, 3, 3}, type, 0.91)], tol)
      end

      k_inf =
        Nx.put_slice(data({4, 4, 3, 2}, type, 0.91), [1, 0, 0, 1], Nx.tensor([[[[:infinity]]]], type: type))

      assert_matches_evaluator(
        &Nx.conv(&1, &2, padding: [{1, 0}, {0, 2}]),
        [data({2, 4, 7, 6}, type, 0.37), k_inf],
        tol
      )

      assert_matches_evaluator(
        &Nx.conv(&1, &2, input_dilation: 2),
        [data({2, 4, 7, 6}, type, 0.37), k_inf],
        tol
      )
    end
  end

  test "the conv becomes slices, stacks and one dot: one dispatch, two for small images" do
    k = data({4, 3, 3, 3}, :f32, 0.91)
    fun = &Nx.conv(&1, &2, padding: :same, strides: [1, 2])
    x = data({2, 3, 16, 32}, :f32, 0.37)
    {graph, _} = graph(fun, [x, k])
    ops = graph |> assert_well_formed() |> all_nodes() |> Enum.map(& &1.op)
    assert Enum.count(ops, &(&1 == "dot")) == 1
    refute "conv" in ops

    # the dot reading its patches (pad, slices, stacks) through its prologue; over 256
    # windows per image its result is in the output's layout, over fewer (and for a weight
    # gradient) a second kernel transposes it
    assert Nx.Vulkan.explain(fun, [x, k]).dispatches == 1
    small = data({2, 3, 8, 8}, :f32, 0.37)
    assert Nx.Vulkan.explain(fun, [small, k]).dispatches == 2
  end

  test "complex tensors convolve through the complex lowering (Nx.Vulkan.Complex)" do
    x = data({1, 1, 4}, :f32, 0.3) |> Nx.complex(data({1, 1, 4}, :f32, 0.7))
    assert_matches_evaluator(&Nx.conv/2, [x, Nx.conjugate(x)])
  end
end
