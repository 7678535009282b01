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
