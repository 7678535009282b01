defmodule Nx.Vulkan.NxDoctestTest do
  # Nx's own doctests (examples nobody here wrote) with every tensor on Nx.Vulkan.Backend:
  # each eager operation runs on the device as a one-node graph compiled by Nx.Vulkan, and
  # the printed result must be Nx.BinaryBackend's to the last digit.
  use ExUnit.Case, async: false

  setup do
    Nx.default_backend(Nx.Vulkan.Backend)
    :ok
  end

  # An ulp or two of f32 from the device's transcendental functions (GLSL's, within
  # Vulkan's stated bounds, or ours), where Nx.BinaryBackend computes in double and rounds
  # once; test_nx/ops_test.exs checks these ops against the evaluator with tolerances.
  # (Nx 0.13's examples of acos, acosh and atan are in f64: an ulp there.) log/2, the
  # quotient of two rounded f32 logarithms, gives 2.9999998 for log(27, 3), where the backend
  # rounds the double quotient. f32 roots are correctly rounded where the device has f64
  # (docs/numerics.md); without it, they are the device's (Vulkan allows Sqrt 3 ulp and
  # InverseSqrt 2), and rsqrt's and standard_deviation's examples can print another last
  # digit. On lavapipe f32
  # functions are computed in double too (docs/numerics.md), erf_inv as Giles'
  # approximation as Nx.BinaryBackend has it, so none differs, except with Nx >= 0.12
  # the examples in f64 (exp, expm1, tan, cosh, sinh, sigmoid, atanh, erf, erfc, erf_inv),
  # whose f64 functions are ours, an ulp from Erlang's (erf_inv's more accurate than the
  # backend's).
  @f32_in_f64 Nx.Vulkan.Case.computes_f32_in_f64?()
  # A variable, not an attribute: one read only in a branch not taken warns as unused.
  f64_examples = Version.match?(to_string(Application.spec(:nx, :vsn)), ">= 0.12.0")
  @rounding (cond do
               not @f32_in_f64 ->
                 [asin: 1, asinh: 1, atan2: 2, atanh: 1, cbrt: 1, cos: 1, cosh: 1, erf_inv: 1, erfc: 1] ++
                   [exp: 1, expm1: 1, logsumexp: 2, sigmoid: 1, sin: 1, sinh: 1, tan: 1, tanh: 1] ++
                   [log: 2] ++ if(Nx.Vulkan.Case.device_caps().float64, do: [], else: [rsqrt: 1, standard_deviation: 2])

               f64_examples ->
                 [erf: 1, erf_inv: 1, erfc: 1, exp: 1, expm1: 1, tan: 1, cosh: 1, sinh: 1, sigmoid: 1, atanh: 1]

               true ->
                 []
             end) ++ [acos: 1, acosh: 1, atan: 1]

  # Examples with Nx 0.13's 8-bit floats (tensor) and 2- and 4-bit integers (bit_size),
  # which Nx.Vulkan does not have.
  @narrow_types [tensor: 2, bit_size: 1]

  doctest Nx, except: [:moduledoc] ++ @rounding ++ @narrow_types
end

defmodule Nx.Vulkan.NxLinAlgDoctestTest do
  # Nx.LinAlg's and Nx.Random's doctests on Nx.Vulkan.Backend, with Nx.Vulkan as the
  # default defn compiler, so that their defn implementations compile as whole graphs.
  use ExUnit.Case, async: false

  setup do
    Nx.default_backend(Nx.Vulkan.Backend)
    previous = Nx.Defn.default_options(compiler: Nx.Vulkan)
    on_exit(fn -> Nx.Defn.default_options(previous) end)
    :ok
  end

  # Printed results an ulp or more away: rounding in f32 (determinant 629.99988 for 630,
  # cholesky, lu, matrix_power, least_squares; eigh and so pinv, which Nx.BinaryBackend of
  # Nx <= 0.11 computes in f64), and Box-Muller/Gumbel transforms of the same bits
  # (normal, gumbel, multivariate_normal). test_nx/control_flow_test.exs, lin_alg_test.exs
  # and ops_test.exs check them with tolerances. On lavapipe, whose f32 sums and functions
  # are Nx.BinaryBackend's, cholesky, lu, solve and gumbel match.
  # (Arities of Nx 0.7 and 0.13 both.)
  # (Nx >= 0.12: solve's example still an ulp apart.) svd's examples print the backend's
  # f32 iterate, 0.99999994 where the device's f32 rounding reaches 1.0.
  @f32_in_f64 Nx.Vulkan.Case.computes_f32_in_f64?()
  # A variable, not an attribute: one read only in a branch not taken warns as unused.
  f64_examples = Version.match?(to_string(Application.spec(:nx, :vsn)), ">= 0.12.0")
  @rounding if(@f32_in_f64, do: [], else: [determinant: 1, eigh: 2, least_squares: 2, matrix_power: 2, pinv: 2, least_squares: 3]) ++
              if(@f32_in_f64, do: [], else: [cholesky: 1, lu: 2, lu: 1, svd: 2]) ++
              if(@f32_in_f64 and not f64_examples, do: [], else: [solve: 2])
  @random_rounding if(@f32_in_f64, do: [], else: [multivariate_normal: 4, normal: 4, gumbel: 2])

  doctest Nx.LinAlg, except: @rounding
  doctest Nx.Random, except: @random_rounding
end
