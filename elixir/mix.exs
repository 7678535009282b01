# The native compiler task must exist before this project's own code is compiled.
Code.require_file("mix/tasks/compile.nx_vulkan_native.ex", __DIR__)

defmodule NxVulkan.MixProject do
  use Mix.Project

  @version "0.1.0"

  def project do
    nx? = nx_deps() != []

    [
      app: :nx_vulkan,
      version: @version,
      elixir: "~> 1.14",
      compilers: [:nx_vulkan_native] ++ Mix.compilers(),
      # Everything that needs Nx lives in lib_nx/ and test_nx/, so that the NIF layer
      # and its tests build and run on machines where Nx cannot be fetched.
      elixirc_paths: if(nx?, do: ["lib", "lib_nx"], else: ["lib"]),
      test_paths: if(nx?, do: ["test", "test_nx"], else: ["test"]),
      deps: nx_deps(),
      # As Nx's own: containers that tests define (Nx's suite, scripts/nx_suite.sh) need
      # protocols that are not consolidated.
      consolidate_protocols: Mix.env() != :test
    ]
  end

  def application do
    [
      extra_applications: [:logger],
      mod: {Nx.Vulkan.Application, []},
      env: [
        device: "",
        cache_dir: "",
        profile: "",
        timeout: 120_000,
        lazy: false,
        lazy_max_depth: 256,
        lazy_host_size: 64,
        cache_size: 256
      ]
    ]
  end

  # Nx from local checkouts when NX_PATH is set (COMPLEX_PATH and TELEMETRY_PATH
  # default to its siblings), otherwise from Hex. Hex's Nx is left out only when
  # it cannot be had: no Hex installed and nothing fetched into deps/ (CI).
  defp nx_deps do
    case System.get_env("NX_PATH") do
      path when path not in [nil, ""] ->
        sibling = fn name, var -> System.get_env(var) || Path.join(Path.dirname(path), name) end

        [
          {:nx, path: path, override: true},
          {:complex, path: sibling.("complex", "COMPLEX_PATH"), override: true},
          {:telemetry, path: sibling.("telemetry", "TELEMETRY_PATH"), override: true}
        ]

      _ ->
        if hex_nx_available?(), do: [{:nx, "~> 0.7"}], else: []
    end
  end

  defp hex_nx_available? do
    Code.ensure_loaded?(Hex) or File.dir?(Path.join(__DIR__, "deps/nx"))
  end
end
