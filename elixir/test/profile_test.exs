defmodule Nx.Vulkan.ProfileTest do
  # Device profiles through the application environment (`config :nx_vulkan, profile:`) and
  # $NXV_PROFILE: the device that opens is restricted, graphs it cannot run raise naming the
  # feature unless emulated, bad profiles raise Nx.Vulkan.Error naming the field. Not async: it
  # changes the application environment and the OS environment.
  use ExUnit.Case, async: false

  alias Nx.Vulkan.{Device, Error, JSON, Native}

  setup do
    previous = for key <- [:profile, :emulate], do: {key, Application.get_env(:nx_vulkan, key)}
    on_exit(fn -> for {key, value} <- previous, do: Application.put_env(:nx_vulkan, key, value) end)
  end

  defp f64_add(n) do
    JSON.encode(%{
      version: 1,
      name: "f64add",
      nodes: [
        %{id: 0, op: "parameter", type: "f64", shape: [n], attrs: %{index: 0}},
        %{id: 1, op: "add", args: [0, 0], type: "f64", shape: [n]}
      ],
      outputs: [1]
    })
  end

  defp f64(list), do: for(x <- list, into: <<>>, do: <<x::float-64-little>>)

  # Doubles each of 1000 f64 values on `device` and checks every result bit for bit.
  defp assert_f64_add_runs(device) do
    exe = Error.unwrap!(Native.compile(device, f64_add(1000), []))
    xs = Enum.map(1..1000, &(&1 * 0.25))
    assert {:ok, {[out], _stats}} = Native.run(exe, [{"f64", [1000], f64(xs)}], :binaries)
    assert out == f64(Enum.map(xs, &(&1 + &1)))
  end

  test "config :nx_vulkan, profile: restricts the device and what its graphs may use" do
    Application.put_env(:nx_vulkan, :profile, "vulkan-minimum")
    # Without emulation the f64 graph needs the feature the profile takes away.
    Application.put_env(:nx_vulkan, :emulate, "none")
    device = Device.get!(cache_dir: "none")
    info = Error.unwrap!(Native.device_info(device))
    assert info.profile == "vulkan_minimum"
    assert info.caps.float64 == false
    assert info.caps.int64 == false
    assert info.caps.max_shared_memory_bytes <= 16_384
    assert info.caps.max_workgroup_invocations <= 128
    assert info.caps.max_storage_buffers <= 4

    assert {:error, {_kind, message}} = Native.compile(device, f64_add(100), [])
    assert message =~ "f64 needs the device's shaderFloat64 feature"

    # With emulation as by default ("auto") the restricted device computes it in software.
    Application.put_env(:nx_vulkan, :emulate, "auto")
    emulating = Device.get!(cache_dir: "none")
    caps = Error.unwrap!(Native.device_info(emulating)).caps
    assert {caps.float64, caps.emulate_f64, caps.emulate_i64} == {false, true, true}
    assert_f64_add_runs(emulating)

    # Without the profile the same graph runs where the device has f64 (lavapipe does).
    Application.put_env(:nx_vulkan, :profile, "none")
    plain = Device.get!(cache_dir: "none")
    refute plain == device
    if Error.unwrap!(Native.device_info(plain)).caps.float64, do: assert_f64_add_runs(plain)
  end

  test "a bad profile raises Nx.Vulkan.Error naming the field and file" do
    Application.put_env(:nx_vulkan, :profile, "no-such-gpu")
    assert_raise Error, ~r/unknown profile 'no-such-gpu' \(shipped: amd-rdna2/, fn -> Device.get!(cache_dir: "none") end

    path = Path.join(System.tmp_dir!(), "nxv_bad_profile_#{System.unique_integer([:positive])}.json")

    File.write!(path, """
    {"capabilities": {"c": {"properties": {"VkPhysicalDeviceProperties":
       {"limits": {"maxComputeSharedMemorySize": "lots"}}}}},
     "profiles": {"BAD": {"capabilities": ["c"]}}}
    """)

    on_exit(fn -> File.rm(path) end)
    Application.put_env(:nx_vulkan, :profile, path)

    assert_raise Error,
                 ~r/#{Regex.escape(path)}: profile BAD: .*limits\.maxComputeSharedMemorySize: expected a non-negative integer/,
                 fn -> Device.get!(cache_dir: "none") end
  end

  # The OS environment is read by the runtime when the device opens; the BEAM's
  # System.put_env does not reach it, so this checks whatever the suite runs under
  # (`NXV_PROFILE=vulkan-minimum mix test test/profile_test.exs` restricts).
  test "profile \"\" defers to $NXV_PROFILE, \"none\" overrides it" do
    Application.put_env(:nx_vulkan, :profile, "")
    info = Error.unwrap!(Native.device_info(Device.get!(cache_dir: "none")))

    case System.get_env("NXV_PROFILE") do
      env when env in [nil, ""] ->
        assert info.profile == ""
        assert info.unmet == []

      "vulkan-minimum" ->
        assert info.profile == "vulkan_minimum"
        refute info.caps.float64

      _other ->
        assert info.profile != ""
    end

    Application.put_env(:nx_vulkan, :profile, "none")
    assert Error.unwrap!(Native.device_info(Device.get!(cache_dir: "none"))).profile == ""
  end
end
