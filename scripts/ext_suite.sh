#!/usr/bin/env bash
# Runs the test suite of a third-party defn library — Scholar (elixir-nx/scholar, v0.3.x for
# Nx 0.7) or Axon (elixir-nx/axon, v0.6.x) — with Nx.Vulkan as its defn compiler, and prints
# ExUnit's report. Like scripts/nx_suite.sh, a measurement on code nobody here wrote, not
# part of `mix test`: both suites compare some f32 results with == or printed digits.
#
#   NX_PATH=... SCHOLAR_PATH=... POLARIS_PATH=... NIMBLE_OPTIONS_PATH=... scripts/ext_suite.sh scholar [mix test args]
#   NX_PATH=... AXON_PATH=... POLARIS_PATH=... scripts/ext_suite.sh axon [mix test args]
#
# The library is copied into _ext/ (ignored; never committed) and only that copy is
# changed: its dependencies become the local checkouts (Nx with complex/telemetry beside it
# at NX_PATH, as for this project) plus this project's elixir/, and its test set-up selects
# Nx.Vulkan. NXV_MODE picks how:
#   compiler (default)  defn compiles with Nx.Vulkan, results on the host (output: :host)
#   device              the same, results stay on the device
#   backend             also Nx.Vulkan.Backend as the default backend (eager calls on the device)
#   off                 the library's own set-up (Nx.Defn.Evaluator): the baseline
# Axon runs as its CI runs it with EXLA (USE_EXLA): doctests and tests tagged skip_exla are
# left out.
set -euo pipefail
lib=${1:?usage: ext_suite.sh scholar|axon [mix test args]}
shift
: "${NX_PATH:?set NX_PATH to an Nx checkout (complex and telemetry beside it)}"
: "${POLARIS_PATH:?set POLARIS_PATH to a polaris checkout}"
root=$(cd "$(dirname "$0")/.." && pwd)
nx_parent=$(dirname "$NX_PATH")
work=$root/_ext
mkdir -p "$work"

# copy SRC NAME: a fresh copy of a checkout, without its build products or lock file
copy() {
  rm -rf "${work:?}/$2"
  mkdir -p "$work/$2"
  tar -C "$1" --exclude=./_build --exclude=./deps --exclude=./mix.lock -cf - . | tar -C "$work/$2" -xf -
}

# set_deps PROJECT DEPS: replaces the `defp deps do [...] end` block of PROJECT/mix.exs
set_deps() {
  DEPS="$2" perl -0pi -e 's/defp deps do\n.*?\n  end\n/defp deps do\n    [$ENV{DEPS}]\n  end\n/s' "$1/mix.exs"
}

nx_deps="{:nx, path: \"$NX_PATH\", override: true}, {:complex, path: \"$nx_parent/complex\", override: true}, {:telemetry, path: \"$nx_parent/telemetry\", override: true}"
copy "$POLARIS_PATH" polaris
set_deps "$work/polaris" "$nx_deps"

case "$lib" in
  scholar)
    : "${SCHOLAR_PATH:?set SCHOLAR_PATH to a Scholar checkout}"
    : "${NIMBLE_OPTIONS_PATH:?set NIMBLE_OPTIONS_PATH to a nimble_options checkout}"
    copy "$NIMBLE_OPTIONS_PATH" nimble_options
    set_deps "$work/nimble_options" ""
    copy "$SCHOLAR_PATH" scholar
    set_deps "$work/scholar" "$nx_deps, {:nimble_options, path: \"$work/nimble_options\"}, {:polaris, path: \"$work/polaris\"}, {:nx_vulkan, path: \"$root/elixir\"}"
    # Scholar's own helper only starts EXLA, which is not a dependency here.
    cat > "$work/scholar/test/test_helper.exs" <<'EOF'
Application.ensure_all_started(:nx_vulkan)

case System.get_env("NXV_MODE", "compiler") do
  "off" -> :ok
  "compiler" -> Nx.Defn.global_default_options(compiler: Nx.Vulkan, output: :host)
  "device" -> Nx.Defn.global_default_options(compiler: Nx.Vulkan)
  "backend" ->
    Nx.Defn.global_default_options(compiler: Nx.Vulkan)
    Nx.global_default_backend(Nx.Vulkan.Backend)
end

ExUnit.start()
EOF
    ;;
  axon)
    : "${AXON_PATH:?set AXON_PATH to an Axon checkout}"
    copy "$AXON_PATH" axon
    set_deps "$work/axon" "$nx_deps, {:polaris, path: \"$work/polaris\"}, {:nx_vulkan, path: \"$root/elixir\"}"
    # Axon selects EXLA with USE_EXLA in three places; Nx.Vulkan takes EXLA's place.
    perl -0pi -e 's/(exla\? = System.get_env\("USE_EXLA"\) in \["1", "true"\])/$1\nnxv_mode = System.get_env("NXV_MODE", "compiler")\nif nxv_mode != "off" do\n  Application.ensure_all_started(:nx_vulkan)\n  if nxv_mode == "backend", do: Nx.global_default_backend(Nx.Vulkan.Backend)\n  Nx.Defn.global_default_options(AxonTestUtil.nxv_options())\nend\nexla? = exla? or nxv_mode != "off"/' \
      "$work/axon/test/test_helper.exs"
    perl -0pi -e 's/  def test_compiler do\n.*?\n  end\n/  def test_compiler do\n    cond do\n      System.get_env("NXV_MODE", "compiler") != "off" -> Nx.Vulkan\n      System.get_env("USE_EXLA") -> EXLA\n      true -> Nx.Defn.Evaluator\n    end\n  end\n\n  def nxv_options do\n    if System.get_env("NXV_MODE", "compiler") == "compiler",\n      do: [compiler: Nx.Vulkan, output: :host],\n      else: [compiler: Nx.Vulkan]\n  end\n/s' \
      "$work/axon/test/support/axon_test_util.ex"
    perl -0pi -e 's/Nx\.Defn\.default_options\(compiler: AxonTestUtil\.test_compiler\(\)\)/Nx.Defn.default_options(if(AxonTestUtil.test_compiler() == Nx.Vulkan, do: AxonTestUtil.nxv_options(), else: [compiler: AxonTestUtil.test_compiler()]))/' \
      "$work/axon/test/support/cases/axon_case.ex"
    ;;
  *)
    echo "unknown library $lib (scholar or axon)" >&2
    exit 2
    ;;
esac

cd "$work/$lib"
export MIX_ENV=test
mix deps.get >/dev/null
mix test "$@"
