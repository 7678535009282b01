Code.require_file("support/nx_vulkan_case.ex", __DIR__)

ExUnit.start()

# NXV_LAZY=1 runs the suite with Nx.Vulkan.Backend lazy by default; NXV_LAZY=device
# too, with every operation on the device (`lazy_host_size: 0`), so that the tests'
# small tensors are computed by lazy graphs rather than on the host.
case System.get_env("NXV_LAZY") do
  "1" ->
    Application.put_env(:nx_vulkan, :lazy, true)

  "device" ->
    Application.put_env(:nx_vulkan, :lazy, true)
    Application.put_env(:nx_vulkan, :lazy_host_size, 0)

  _ ->
    :ok
end

# On a restricted device (one that emulates f64 or s64 in software, or binds fewer than 8
# storage buffers per kernel: NXV_PROFILE=mali-g78, vulkan-minimum) the tests tagged
# :slow_on_restricted_device are left out (ExUnit counts them as excluded); each tag says why.
caps = Nx.Vulkan.Case.device_caps()

if caps.emulate_f64 or caps.emulate_i64 or caps.max_storage_buffers < 8 do
  IO.puts("nx_vulkan: a restricted device: tests tagged :slow_on_restricted_device are excluded")

  ExUnit.configure(
    exclude: Enum.uniq(Keyword.get(ExUnit.configuration(), :exclude, []) ++ [:slow_on_restricted_device])
  )
end
