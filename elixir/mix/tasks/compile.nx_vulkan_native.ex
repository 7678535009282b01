defmodule Mix.Tasks.Compile.NxVulkanNative do
  @moduledoc """
  Builds the `nxv_nif` shared library with the repository's CMake project and
  copies it to `priv/`.

    * `NXV_SOURCE_DIR` - the CMake source tree (default: the parent of this Mix project)
    * `NXV_BUILD_DIR` - an existing, already configured build tree to build the
      target in (e.g. the one `scripts/build.sh` made); by default a private tree in
      `_build/native`, configured with tests and benchmarks off
    * `NXV_SKIP_NATIVE=1` - use the library already in `priv/`
  """
  use Mix.Task.Compiler

  @shortdoc "Builds the nx_vulkan NIF through CMake"
  @library "nxv_nif.so"

  @impl true
  def run(_args) do
    if System.get_env("NXV_SKIP_NATIVE") == "1" do
      {:noop, []}
    else
      build()
    end
  end

  defp build do
    project_dir = File.cwd!()
    source = System.get_env("NXV_SOURCE_DIR") || Path.expand("..", project_dir)
    {build_dir, configure_args} = build_dir(project_dir)

    unless File.exists?(Path.join(build_dir, "CMakeCache.txt")) do
      cmake!(["-S", source, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo" | configure_args])
    end

    jobs = Integer.to_string(System.schedulers_online())
    cmake!(["--build", build_dir, "--target", "nxv_nif", "-j", jobs])

    built = Path.join([build_dir, "nif", @library])
    target = Path.join([project_dir, "priv", @library])
    File.mkdir_p!(Path.dirname(target))

    if up_to_date?(target, built) do
      {:noop, []}
    else
      # Copy to a new inode: a running VM may have the old file mapped.
      File.rm(target)
      File.cp!(built, target)
      # On a fresh checkout priv/ did not exist when Mix laid out _build, so _build has no
      # link to it yet; lay the structure out again now that there is something to link.
      Mix.Project.build_structure()
      Mix.shell().info("Built #{@library}")
      {:ok, []}
    end
  end

  defp up_to_date?(target, built) do
    case {File.stat(target, time: :posix), File.stat(built, time: :posix)} do
      {{:ok, t}, {:ok, b}} -> t.mtime >= b.mtime
      _ -> false
    end
  end

  defp build_dir(project_dir) do
    case System.get_env("NXV_BUILD_DIR") do
      dir when dir not in [nil, ""] ->
        {Path.expand(dir), []}

      _ ->
        {Path.join([project_dir, "_build", "native"]),
         ["-DNXV_BUILD_TESTS=OFF", "-DNXV_BUILD_BENCH=OFF", "-DNXV_BUILD_NIF=ON"]}
    end
  end

  # Quiet unless it fails: the whole log is shown then.
  defp cmake!(args) do
    cmake =
      System.find_executable("cmake") || Mix.raise("cmake is needed to build the NIF (apt install cmake)")

    case System.cmd(cmake, args, stderr_to_stdout: true) do
      {_, 0} ->
        :ok

      {output, status} ->
        Mix.shell().error(output)
        Mix.raise("cmake #{Enum.join(args, " ")} failed with status #{status}")
    end
  end
end
