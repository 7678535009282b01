defmodule Nx.Vulkan.NativeVTest do
  # eXMC's calls into the earlier nx_vulkan (Exmc.NUTS.Vulkan.Dispatch), made the way it
  # makes them, with a shader of the kind it synthesises (unit_tests/spirv/: GLSL source and
  # the SPIR-V assembly it compiles to), against a leapfrog written out here in Elixir.
  use ExUnit.Case, async: true

  alias Nx.Vulkan.NativeV

  @fixture Path.expand("../../unit_tests/spirv/leapfrog_normal_f64.spvasm", __DIR__)
  @half_log_2pi 0.91893853320467274178

  setup_all do
    spv = Path.join(System.tmp_dir!(), "nxv_native_v_#{System.unique_integer([:positive])}.spv")

    {_, 0} =
      System.cmd("spirv-as", ["--target-env", "vulkan1.2", @fixture, "-o", spv], stderr_to_stdout: true)

    on_exit(fn -> File.rm(spv) end)
    device = Nx.Vulkan.Device.get!(robust_buffer_access: true)
    %{spv: spv, float64: Nx.Vulkan.Error.unwrap!(Nx.Vulkan.Native.device_info(device)).caps.float64}
  end

  # The shaders compute in f64 themselves, and nx_vulkan emulates f64 only in the kernels it
  # generates: a device without shaderFloat64 (e.g. under NXV_PROFILE=mali-g78) refuses them.
  defp assert_refused_without_f64(result) do
    assert {:error, {:invalid_argument, msg}} = result
    assert msg =~ "SPIR-V capability 10 (the device's shaderFloat64)"
  end

  defp f64(list), do: for(x <- list, into: <<>>, do: <<x::float-64-little>>)
  defp from_f64(bin), do: for(<<x::float-64-little <- bin>>, do: x)

  # eXMC's Push.pack layout: K, n_obs, d, pad (or n_instances), eps, then the prior's
  # parameters (here the fixture's mu and sigma).
  defp push(k, n_obs, d, fourth, eps, mu, sigma),
    do: <<k::little-32, n_obs::little-32, d::little-32, fourth::little-32>> <> f64([eps, mu, sigma])

  @model %{
    mu: 0.5,
    sigma: 2.0,
    obs: [1.0, -0.5, 2.0, 0.25, 1.5, 3.0, -1.0],
    inv_mass: [1.0, 0.5, 2.0, 1.5, 0.75]
  }

  defp obs_of(model, i), do: model.obs |> Enum.drop(i) |> Enum.take_every(length(model.inv_mass))

  defp grad(model, i, q),
    do: -(q - model.mu) / (model.sigma * model.sigma) + Enum.sum(for y <- obs_of(model, i), do: y - q)

  # The shader takes log(sigma) in f32, as eXMC's do (GLSL has no f64 log).
  defp logp(model, i, q) do
    z = (q - model.mu) / model.sigma

    -0.5 * z * z - :math.log(model.sigma) - @half_log_2pi +
      Enum.sum(for y <- obs_of(model, i), do: -0.5 * (y - q) * (y - q) - @half_log_2pi)
  end

  defp reference(model, q0, p0, k, eps) do
    {_, _, steps} =
      Enum.reduce(1..k, {q0, p0, []}, fn _, {qs, ps, acc} ->
        step =
          for {{q, p}, i} <- Enum.with_index(Enum.zip(qs, ps)) do
            half = p + 0.5 * eps * grad(model, i, q)
            qn = q + eps * Enum.at(model.inv_mass, i) * half
            gn = grad(model, i, qn)
            {qn, half + 0.5 * eps * gn, gn, logp(model, i, qn)}
          end

        {qs, ps, gs, lps} = unzip4(step)
        {qs, ps, [{qs, ps, gs, Enum.sum(lps)} | acc]}
      end)

    steps |> Enum.reverse() |> unzip4()
  end

  defp unzip4(tuples),
    do:
      {Enum.map(tuples, &elem(&1, 0)), Enum.map(tuples, &elem(&1, 1)), Enum.map(tuples, &elem(&1, 2)),
       Enum.map(tuples, &elem(&1, 3))}

  defp assert_close(got, want, tol) do
    assert length(got) == length(want)

    for {g, w} <- Enum.zip(got, want),
        do: assert(abs(g - w) <= tol * (1 + abs(w)), "got #{g}, want #{w} (tolerance #{tol})")
  end

  # q, p, grad: the same double arithmetic (1e-12 allows a driver's FMA contraction);
  # logp: the shader's f32 log(sigma) is within a float's ulp of :math.log's.
  defp assert_chain({q, p, g, lp}, {wq, wp, wg, wlp}) do
    assert_close(from_f64(q), List.flatten(wq), 1.0e-12)
    assert_close(from_f64(p), List.flatten(wp), 1.0e-12)
    assert_close(from_f64(g), List.flatten(wg), 1.0e-12)
    assert_close(from_f64(lp), wlp, 1.0e-6)
  end

  test "leapfrog_chain_synth_f64 runs eXMC's kind of chain shader", %{spv: spv, float64: float64} do
    {q0, p0, k, eps} = {[0.1, -0.2, 0.3, 1.0, -1.5], [0.5, -0.25, 1.0, 0.0, 2.0], 16, -0.05}
    extras = f64(@model.obs ++ @model.inv_mass)
    result = NativeV.leapfrog_chain_synth_f64(f64(q0), f64(p0), extras, push(k, 7, 5, 0, eps, 0.5, 2.0), k, spv)

    if float64 do
      assert {:ok, chain} = result
      assert_chain(chain, reference(@model, q0, p0, k, eps))
    else
      assert_refused_without_f64(result)
    end
  end

  test "leapfrog_chain_synth_batch_f64 runs one chain per instance in one dispatch", %{spv: spv, float64: float64} do
    models = [
      @model,
      %{@model | obs: Enum.map(@model.obs, &(&1 * 2)), inv_mass: Enum.reverse(@model.inv_mass)},
      %{@model | obs: Enum.map(@model.obs, &(-&1))}
    ]

    starts = [
      {[0.1, -0.2, 0.3, 1.0, -1.5], [0.5, -0.25, 1.0, 0.0, 2.0]},
      {[1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.1, 0.2, 0.3, 0.4]},
      {[-0.3, 0.0, 0.3, 0.6, 0.9], [1.0, -1.0, 1.0, -1.0, 1.0]}
    ]

    {k, eps} = {8, 0.1}
    q = starts |> Enum.flat_map(&elem(&1, 0)) |> f64()
    p = starts |> Enum.flat_map(&elem(&1, 1)) |> f64()
    extras = models |> Enum.flat_map(&(&1.obs ++ &1.inv_mass)) |> f64()

    result = NativeV.leapfrog_chain_synth_batch_f64(q, p, extras, push(k, 7, 5, 3, eps, 0.5, 2.0), k, spv)

    if float64 do
      assert {:ok, {qc, pc, gc, lpc}} = result
      slice = fn bin, i, n -> binary_part(bin, i * n * 8, n * 8) end

      for {{model, {q0, p0}}, i} <- Enum.with_index(Enum.zip(models, starts)) do
        got = {slice.(qc, i, k * 5), slice.(pc, i, k * 5), slice.(gc, i, k * 5), slice.(lpc, i, k)}
        assert_chain(got, reference(model, q0, p0, k, eps))
      end
    else
      assert_refused_without_f64(result)
    end
  end

  test "a mismatched call is an error tuple naming what is wrong", %{spv: spv} do
    q = f64([0.0, 0.0])
    good = push(4, 0, 2, 0, 0.1, 0.0, 1.0)

    assert {:error, {:invalid_argument, msg}} =
             NativeV.leapfrog_chain_synth_f64(q, q, q, good, 4, "/nonexistent.spv")

    assert msg =~ "cannot read SPIR-V /nonexistent.spv"

    assert {:error, {:invalid_argument, msg}} =
             NativeV.leapfrog_chain_synth_f64(q, q, q, binary_part(good, 0, 24), 4, spv)

    assert msg =~ "push-constant block is 40 bytes, 24 given"

    not_spirv = Path.join(System.tmp_dir!(), "nxv_not_spirv_#{System.unique_integer([:positive])}.spv")
    File.write!(not_spirv, "#version 450\nvoid main() {}\n")
    on_exit(fn -> File.rm(not_spirv) end)
    assert {:error, {_, msg}} = NativeV.leapfrog_chain_synth_f64(q, q, q, good, 4, not_spirv)
    assert msg =~ "SPIR-V"

    assert {:error, {:badarg, msg}} = NativeV.leapfrog_chain_synth_batch_f64(q, q, q, <<1, 2, 3>>, 4, spv)
    assert msg =~ "n_instances"
  end

  test "eXMC's GPU-node hooks: no separate node, and with_node runs the function" do
    refute Nx.Vulkan.Node.alive?()
    assert Nx.Vulkan.Node.with_node(fn -> 42 end) == 42
    assert Nx.Vulkan.Node.with_node(fn -> Process.sleep(1_000) end, 10) == {:error, :node_timeout}
  end
end
