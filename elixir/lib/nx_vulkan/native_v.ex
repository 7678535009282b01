defmodule Nx.Vulkan.NativeV do
  @moduledoc """
  The leapfrog-chain calls of the earlier nx_vulkan, which eXMC (`config :exmc, :compiler,
  :vulkan`) makes for every model it can synthesise a shader for
  (`Exmc.NUTS.Vulkan.Dispatch`). eXMC renders that shader as GLSL and compiles it to SPIR-V
  itself; these functions run it through `Nx.Vulkan.Native.run_spirv/7`, which validates the
  module, checks its bindings and push constants, and runs it bounds-checked.

  The shader contract (eXMC's `MultiRvCustomSpec` templates): storage buffers 0–2 are `q`, `p`
  and the extras (observations, then the inverse mass diagonal), 3–6 receive the chains of
  `q`, `p`, the gradient and the log-density; the push block starts with
  `K, n_obs, d, n_instances | pad` as u32 and the step size as f64.

  Each function returns `{:ok, {q_chain, p_chain, grad_chain, logp_chain}}` as f64 binaries
  (`k * d` values each, `k` for the log-density), or `{:error, reason}`.
  """

  alias Nx.Vulkan.{Device, Native}

  @doc """
  One chain of `k` leapfrog steps from `q` and `p` (f64 binaries of `d` values each), in one
  workgroup.
  """
  def leapfrog_chain_synth_f64(q, p, extras, push, k, spv_path) do
    d = div(byte_size(q), 8)
    chain(spv_path, [q, p, extras], push, outputs(1, k, d), {1, 1, 1})
  end

  @doc """
  `n` independent chains in one dispatch, one workgroup each: `n` and `d` are read from the
  push block (bytes 12 and 8), and every buffer holds the instances one after another.
  """
  def leapfrog_chain_synth_batch_f64(q, p, extras, push, k, spv_path) do
    case push do
      <<_k::little-32, _n_obs::little-32, d::little-32, n::little-32, _::binary>> when n > 0 ->
        chain(spv_path, [q, p, extras], push, outputs(n, k, d), {n, 1, 1})

      _ ->
        {:error, {:badarg, "push constants: expected K, n_obs, d and n_instances (> 0) as u32 first"}}
    end
  end

  defp outputs(n, k, d) do
    chain = {"f64", [n * k * d]}
    [chain, chain, chain, {"f64", [n * k]}]
  end

  defp chain(spv_path, inputs, push, outputs, groups) do
    with {:ok, spirv} <- read_module(spv_path),
         inputs = Enum.map(inputs, &f64_input/1),
         {:ok, {[q, p, grad, logp], _stats}} <-
           Native.run_spirv(device(), spirv, inputs, outputs, push, groups, :binaries) do
      {:ok, {q, p, grad, logp}}
    end
  end

  defp f64_input(binary), do: {"f64", [div(byte_size(binary), 8)], binary}

  defp read_module(path) do
    case File.read(path) do
      {:ok, spirv} ->
        {:ok, spirv}

      {:error, reason} ->
        {:error, {:invalid_argument, "cannot read SPIR-V #{path}: #{:file.format_error(reason)}"}}
    end
  end

  # The configured device, opened bounds-checked: a shader from elsewhere may index past
  # its buffers, and on a CPU device such a write would land in the VM's memory.
  defp device, do: Device.get!(robust_buffer_access: true)
end
