Code.require_file("support/nx_vulkan_case.ex", __DIR__)

ExUnit.start()

# NXV_LAZY=1 runs the suite with Nx.Vulkan.Backend lazy by default.
if System.get_env("NXV_LAZY") == "1", do: Application.put_env(:nx_vulkan, :lazy, true)
