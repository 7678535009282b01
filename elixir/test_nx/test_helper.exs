Code.require_file("support/nx_vulkan_case.ex", __DIR__)

ExUnit.start()
