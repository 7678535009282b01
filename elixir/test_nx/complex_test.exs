defmodule Nx.Vulkan.ComplexTest.Fns do
  @moduledoc false
  import Nx.Defn

  defn rotate_thrice(x) do
    {_, acc} =
      while {i = 0, acc = x}, i < 3 do
        {i + 1, acc * Nx.Constants.i()}
      end

    acc
  end

  defn branch(p, x) do
    if p, do: Nx.conjugate(x), else: -x
  end
end

defmodule Nx.Vulkan.ComplexTest do
  # Complex values lowered to real part pairs (Nx.Vulkan.Complex) against Nx.Defn.Evaluator,
  # whose Nx.BinaryBackend computes each element in f64 with the Complex library and
  # rounds to the type. Tolerances (atol = rtol): c64 1e-5 (the types' default,
  # Nx.Vulkan.Case.tolerance/1), c128 1e-10; FFTs of up to 16 points, c64 1e-4; longer
  # ones an atol that grows with the length (their round-off is normwise).
  use Nx.Vulkan.Case, async: true

  alias Nx.Vulkan.ComplexTest.Fns

  @types [c64: {:c, 64}, c128: {:c, 128}]

  # Parts in [-2, 2], none zero in `other/2` (a divisor).
  defp data(shape, type) do
    re = shape |> Nx.iota(type: :f64) |> Nx.multiply(0.77) |> Nx.sin() |> Nx.multiply(2)
    im = shape |> Nx.iota(type: :f64) |> Nx.multiply(1.31) |> Nx.cos() |> Nx.multiply(1.5)
    Nx.complex(re, im) |> Nx.as_type(type)
  end

  defp other(shape, type) do
    re = shape |> Nx.iota(type: :f64) |> Nx.multiply(0.53) |> Nx.cos() |> Nx.add(1.5)
    im = shape |> Nx.iota(type: :f64) |> Nx.multiply(0.29) |> Nx.sin() |> Nx.subtract(1.2)
    Nx.complex(re, im) |> Nx.as_type(type)
  end

  defp fft_tol({:c, 64}), do: [atol: 1.0e-4, rtol: 1.0e-4]
  defp fft_tol({:c, 128}), do: []

  for {name, type} <- @types do
    describe "#{name}" do
      @ctype type
      # c128 where f64 is emulated (no shaderFloat64: mali-g78): the exp/log/pow test alone
      # takes 100 s on 2 loaded cores, the inverse functions' 55 s, most of it LLVM compiling
      # the emulated kernels; beside the suite's other async tests, several times that.
      @describetag timeout: if(type == {:c, 128}, do: 600_000, else: 60_000)

      test "element-wise arithmetic, with complex, real and literal operands" do
        x = data({2, 3}, @ctype)
        y = other({2, 3}, @ctype)
        r = Nx.iota({2, 3}, type: Nx.Type.to_real(@ctype)) |> Nx.add(0.5)

        for fun <- [&Nx.add/2, &Nx.subtract/2, &Nx.multiply/2, &Nx.divide/2] do
          assert_matches_evaluator(fun, [x, y])
          assert_matches_evaluator(fun, [x, r])
          assert_matches_evaluator(fun, [r, y])
          assert_matches_evaluator(&fun.(&1, 3), [x])
        end

        assert_matches_evaluator(&Nx.multiply(&1, Complex.new(0.5, -2)), [x])
        assert_matches_evaluator(&Nx.add(&1, Nx.Constants.i(@ctype)), [x])
      end

      test "negate, conjugate, real, imag, abs, phase, complex" do
        x = data({7}, @ctype)

        for fun <- [&Nx.negate/1, &Nx.conjugate/1, &Nx.real/1, &Nx.imag/1, &Nx.abs/1, &Nx.phase/1] do
          assert_matches_evaluator(fun, [x])
        end

        r = Nx.iota({7}, type: Nx.Type.to_real(@ctype))
        assert_matches_evaluator(&Nx.conjugate/1, [r])
        assert_matches_evaluator(&Nx.complex/2, [r, Nx.negate(r)])
      end

      test "exp, log, sqrt, sin, cos and pow" do
        x = data({3, 4}, @ctype)

        for fun <- [&Nx.exp/1, &Nx.log/1, &Nx.sqrt/1, &Nx.sin/1, &Nx.cos/1] do
          assert_matches_evaluator(fun, [x])
        end

        for exponent <- [0, 1, 2, 3, -1, -2, 0.5] do
          assert_matches_evaluator(&Nx.pow(&1, exponent), [x])
        end

        assert_matches_evaluator(&Nx.pow/2, [x, other({3, 4}, @ctype)])
      end

      test "inverse trigonometric and hyperbolic functions, expm1, log1p, sigmoid, rsqrt, tan, sinh, cosh, tanh" do
        x = data({3, 4}, @ctype)

        for fun <-
              [&Nx.asin/1, &Nx.acos/1, &Nx.atan/1, &Nx.asinh/1, &Nx.acosh/1, &Nx.atanh/1] ++
                [&Nx.expm1/1, &Nx.log1p/1, &Nx.sigmoid/1, &Nx.rsqrt/1] ++
                [&Nx.tan/1, &Nx.sinh/1, &Nx.cosh/1, &Nx.tanh/1] do
          assert_matches_evaluator(fun, [x])
        end
      end

      test "product over any axes, cbrt; LU-based solve, determinant and invert; cholesky" do
        x = data({3, 4, 5}, @ctype)

        for opts <- [[], [axes: [1]], [axes: [0, 2]], [axes: [2], keep_axes: true]] do
          assert_matches_evaluator(&Nx.product(&1, opts), [Nx.divide(x, 1.5)])
        end

        assert_matches_evaluator(&Nx.cbrt/1, [x])

        a = Nx.add(data({3, 3}, @ctype), Nx.multiply(Nx.eye(3), 4))
        b = other({3}, @ctype)
        assert_matches_evaluator(&Nx.LinAlg.solve/2, [a, b])
        assert_matches_evaluator(&Nx.LinAlg.determinant/1, [a])
        assert_matches_evaluator(&Nx.LinAlg.invert/1, [a])
        assert_matches_evaluator(&Nx.LinAlg.lu/1, [a])
        assert_matches_evaluator(&Nx.cumulative_sum/1, [b])
        assert_matches_evaluator(&Nx.cumulative_product/1, [b])
        # Hermitian positive definite: a a^H + I, unrolled and (20x20) as a loop. At 20 the
        # last column ends a chain of 20 dependent complex steps; a GPU's f32 (fused
        # multiply-adds, its own order) drifts past 1e-5 there, so it is held to the bound
        # lin_alg_test.exs holds real factorisations of that size to.
        for n <- [3, 20] do
          g = data({n, n}, @ctype)
          h = Nx.add(Nx.dot(g, Nx.LinAlg.adjoint(g)), Nx.eye(n))
          tol = if n > 3 and @ctype == {:c, 64} and not computes_f32_in_f64?(), do: [atol: 1.0e-4, rtol: 1.0e-4], else: []
          assert_matches_evaluator(&Nx.LinAlg.cholesky/1, [h], tol)
        end
      end

      test "triangular_solve with every option" do
        a = Nx.add(data({4, 4}, @ctype), Nx.multiply(Nx.eye(4), 3))
        b = other({4}, @ctype)
        bm = other({4, 3}, @ctype)

        for lower <- [true, false], transform_a <- [:none, :transpose] do
          opts = [lower: lower, transform_a: transform_a]
          t = if lower, do: Nx.tril(a), else: Nx.triu(a)
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [t, b])
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [t, bm])
          opts = [left_side: false] ++ opts
          assert_matches_evaluator(&Nx.LinAlg.triangular_solve(&1, &2, opts), [t, Nx.transpose(bm)])
        end

        # a complex matrix with a real right-hand side, and the reverse
        assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [Nx.tril(a), Nx.real(b)])
        assert_matches_evaluator(&Nx.LinAlg.triangular_solve/2, [Nx.real(Nx.tril(a)), b])
      end

      test "window_sum and window_product, with strides, padding and dilations" do
        x = data({3, 5}, @ctype)

        for opts <- [[], [strides: [1, 2]], [padding: :same], [padding: [{1, 0}, {0, 2}], window_dilations: [1, 2]]] do
          assert_matches_evaluator(&Nx.window_sum(&1, {2, 2}, opts), [x])
          assert_matches_evaluator(&Nx.window_product(&1, {2, 2}, opts), [x])
        end
      end

      test "complex eye and iota; gather, indexed_add and indexed_put on complex values" do
        assert_matches_evaluator(fn -> Nx.eye(3, type: @ctype) end, [])
        assert_matches_evaluator(fn -> Nx.iota({2, 3}, axis: 1, type: @ctype) end, [])

        x = data({4, 3}, @ctype)
        idx = Nx.tensor([[2], [0], [2]])
        updates = other({3, 3}, @ctype)
        assert_matches_evaluator(&Nx.gather(&1, Nx.tensor([[1, 2], [3, 0]])), [x])
        assert_matches_evaluator(&Nx.take(&1, Nx.tensor([3, 1]), axis: 0), [x])
        assert_matches_evaluator(&Nx.indexed_add(&1, idx, &2), [x, updates])
        assert_matches_evaluator(&Nx.indexed_put(&1, idx, &2), [x, updates])
        # a real target with complex updates, and the reverse
        real = Nx.iota({4, 3}, type: Nx.Type.to_real(@ctype))
        assert_matches_evaluator(&Nx.indexed_add(&1, idx, &2), [real, updates])
        assert_matches_evaluator(&Nx.indexed_put(&1, idx, &2), [x, Nx.iota({3, 3}, type: :f32)])
      end

      test "sqrt and log at zero, on the negative real axis and on the imaginary axis" do
        x = Nx.tensor([0, -4, Complex.new(-4, -0.0), Complex.new(0, 9), Complex.new(0, -9), 3], type: @ctype)
        assert_matches_evaluator(&Nx.sqrt/1, [x])
        assert_matches_evaluator(&Nx.log/1, [Nx.slice(x, [1], [5])])
        assert_matches_evaluator(&Nx.abs/1, [x])
      end

      test "as_type between complex and real types" do
        x = data({5}, @ctype)
        assert_matches_evaluator(&Nx.as_type(&1, :f32), [x])
        assert_matches_evaluator(&Nx.as_type(&1, :f64), [x])
        assert_matches_evaluator(&Nx.as_type(&1, :s32), [Nx.multiply(x, 3)])
        assert_matches_evaluator(&Nx.as_type(&1, :c64), [x])
        assert_matches_evaluator(&Nx.as_type(&1, :c128), [x])
        assert_matches_evaluator(&Nx.as_type(&1, @ctype), [Nx.iota({5}, type: :s32)])
      end

      test "equal, not_equal, logical_not and select" do
        x = data({6}, @ctype)
        y = Nx.select(Nx.iota({6}) |> Nx.remainder(2), x, other({6}, @ctype))
        assert_matches_evaluator(&Nx.equal/2, [x, y])
        assert_matches_evaluator(&Nx.not_equal/2, [x, y])
        # logical_not's default compares with the integer 0, which Nx.BinaryBackend finds
        # equal to no complex element (its `==` on a Complex struct): compared here with
        # the evaluator's comparison with a complex zero.
        zeros = Nx.tensor([0, Complex.new(0, 1), Complex.new(-0.0, 0), 2], type: @ctype)
        expected = Nx.Defn.jit_apply(&Nx.equal(&1, Nx.tensor(0, type: @ctype)), [zeros], compiler: Nx.Defn.Evaluator)
        assert Nx.to_flat_list(expected) == [1, 0, 1, 0]
        actual = Nx.Defn.jit_apply(&Nx.logical_not/1, [zeros], compiler: Nx.Vulkan)
        assert_close(expected, Nx.backend_copy(actual), atol: 0, rtol: 0)
        pred = Nx.tensor([1, 0, 1, 1, 0, 0], type: :u8)
        assert_matches_evaluator(&Nx.select/3, [pred, x, other({6}, @ctype)])
        assert_matches_evaluator(&Nx.select(&1, &2, 2.5), [pred, x])
        assert_matches_evaluator(&Nx.select(Nx.tensor(1, type: :u8), &1, &2), [x, y])
      end

      test "shape operations" do
        x = data({2, 3, 4}, @ctype)
        assert_matches_evaluator(&Nx.reshape(&1, {4, 6}), [x])
        assert_matches_evaluator(&Nx.transpose(&1, axes: [2, 0, 1]), [x])
        assert_matches_evaluator(&Nx.reverse(&1, axes: [1]), [x])
        assert_matches_evaluator(&Nx.squeeze/1, [data({1, 3, 1}, @ctype)])
        assert_matches_evaluator(&Nx.broadcast(&1, {2, 3, 4}, axes: [1]), [data({3}, @ctype)])
        assert_matches_evaluator(&Nx.slice(&1, [0, 1, 1], [2, 2, 2], strides: [1, 1, 2]), [x])
        assert_matches_evaluator(&Nx.slice(&1, [&2, 1, 0], [1, 2, 4]), [x, 1])
        assert_matches_evaluator(&Nx.put_slice(&1, [1, 0, 2], &2), [x, data({1, 2, 2}, @ctype)])
        assert_matches_evaluator(&Nx.put_slice(&1, [0, 0, 1], Nx.iota({2, 3, 1}, type: :f32)), [x])
        assert_matches_evaluator(&Nx.concatenate([&1, &2], axis: 1), [x, x])
        assert_matches_evaluator(&Nx.stack([&1, &2], axis: 3), [x, Nx.iota({2, 3, 4})])
        assert_matches_evaluator(&Nx.pad(&1, Complex.new(1, -1), [{1, 0, 0}, {0, 2, 1}, {0, 0, 0}]), [x])
      end

      test "sum and dot" do
        x = data({2, 3, 4}, @ctype)
        assert_matches_evaluator(&Nx.sum/1, [x])
        assert_matches_evaluator(&Nx.sum(&1, axes: [1], keep_axes: true), [x])
        assert_matches_evaluator(&Nx.dot/2, [data({3, 4}, @ctype), other({4, 2}, @ctype)])
        assert_matches_evaluator(&Nx.dot/2, [data({3, 4}, @ctype), Nx.iota({4}, type: :f32)])
        assert_matches_evaluator(&Nx.dot(&1, [2], [0], &2, [1], [0]), [x, other({2, 4, 5}, @ctype)])
      end

      test "fft and ifft, with and without :length" do
        x = data({3, 8}, @ctype)
        tol = fft_tol(@ctype)

        for fun <- [&Nx.fft/2, &Nx.ifft/2],
            opts <- [[], [length: 8], [length: 5], [length: 12], [length: :power_of_two]] do
          assert_matches_evaluator(&fun.(&1, opts), [x], tol)
          assert_matches_evaluator(&fun.(&1, opts), [data({6}, @ctype)], tol)
        end

        assert_matches_evaluator(&Nx.fft(&1, axis: 0), [x], tol)
        assert_matches_evaluator(&Nx.fft/1, [Nx.iota({2, 6}, type: Nx.Type.to_real(@ctype))], tol)
        assert_matches_evaluator(&Nx.ifft/1, [Nx.iota({7}, type: :s32)], tol)
      end

      test "fft and ifft at power-of-two lengths and by Bluestein's transform" do
        # Round-off is normwise (about eps·log2(n) times the sum of |x|, in every output):
        # c64's atol grows with n.
        for {shape, opts} <- [{{2, 1024}, []}, {{2, 2048}, []}, {{2, 300}, []}, {{2, 200}, [length: 300]}] do
          tol = if @ctype == {:c, 64}, do: [atol: 4.0e-6 * elem(shape, 1), rtol: 1.0e-4], else: []
          x = data(shape, @ctype)
          assert_matches_evaluator(&Nx.fft(&1, opts), [x], tol)
          assert_matches_evaluator(&Nx.ifft(&1, opts), [x], tol)
        end
      end

      test "ifft(fft(x)) is x" do
        x = data({4, 16}, @ctype)
        assert_close(x, Nx.Vulkan.jit(&Nx.ifft(Nx.fft(&1))).(x), fft_tol(@ctype))
      end

      test "fft2 and ifft2" do
        x = data({2, 4, 6}, @ctype)
        tol = fft_tol(@ctype)
        assert_matches_evaluator(&Nx.fft2/1, [x], tol)
        assert_matches_evaluator(&Nx.ifft2/1, [x], tol)
        assert_matches_evaluator(&Nx.fft2(&1, lengths: [3, 8]), [x], tol)
      end
    end
  end

  describe "complex values across the runtime" do
    test "device-resident results are inputs again; :host results are BinaryBackend tensors" do
      x = data({2, 3}, {:c, 64})
      y = Nx.Vulkan.jit(&Nx.multiply(&1, &1)).(x)
      assert %Nx.Vulkan.Backend{} = y.data
      assert {y.type, y.shape} == {{:c, 64}, {2, 3}}
      z = Nx.Vulkan.jit(&Nx.add(&1, 1), output: :host).(y)
      assert %Nx.BinaryBackend{} = z.data
      assert_close(Nx.add(Nx.multiply(x, x), 1), z)
    end

    test "Nx.Vulkan.Backend holds complex tensors and runs their operations" do
      x = data({4}, {:c, 128})
      d = Nx.backend_transfer(x, Nx.Vulkan.Backend)
      assert %Nx.Vulkan.Backend{} = d.data
      assert Nx.to_binary(d) == Nx.to_binary(x)
      assert_close(Nx.subtract(x, Nx.conjugate(x)), Nx.subtract(d, Nx.conjugate(d)))
      assert_close(Nx.fft(x), Nx.fft(d))
    end

    test "while and cond carry complex state" do
      x = data({3}, {:c, 64})
      assert_matches_evaluator(&Fns.rotate_thrice/1, [x])
      assert_matches_evaluator(&Fns.branch/2, [1, x])
      assert_matches_evaluator(&Fns.branch/2, [0, x])
    end

    test "an op without a complex lowering raises naming the op and types" do
      x = data({3}, {:c, 64})

      assert_raise ArgumentError,
                   ~r/does not support :reduce on complex tensors \(arguments c64, s(32|64), c64, result c64\)/,
                   fn ->
                     Nx.Vulkan.jit(&Nx.reduce(&1, 0, fn a, b -> Nx.add(a, b) end)).(x)
                   end
    end
  end
end
