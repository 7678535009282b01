#!/usr/bin/env bash
# Runs test files of Nx's own suite, taken from the Nx checkout at NX_PATH (copied into an
# ignored folder for the run, never committed), with Nx.Vulkan as the global default defn
# compiler (results on the host), and prints ExUnit's report. A measurement of how
# Nx.Vulkan fares on tests nobody here wrote, not part of `mix test`: Nx's assertions compare
# many f32 results with ==, and its complex-number and hook tests fail here by design
# (docs/suites.md lists what to expect).
#   NX_PATH=/path/to/nx bash scripts/nx_suite.sh [test/nx/defn/grad_test.exs ...]
set -euo pipefail
: "${NX_PATH:?set NX_PATH to an Nx checkout}"
cd "$(dirname "$0")/../elixir"
files=("$@")
[[ ${#files[@]} -gt 0 ]] || files=(test/nx/defn/grad_test.exs test/nx/lin_alg_test.exs test/nx/random_test.exs
  test/nx/non_finite_test.exs test/nx/vectorize_test.exs)
suite=test_nx/nx_suite
rm -rf "$suite" && mkdir -p "$suite"
trap 'rm -rf "$suite"' EXIT
# Each test file requires Nx's test support modules (helpers, containers, backends) first
# (require_file loads a file once, and a second requirer waits for the first).
mkdir -p "$suite/support"
cp "$NX_PATH"/test/support/*.ex "$suite/support/"
for f in "${files[@]}"; do
  { echo 'for f <- Path.wildcard(Path.join(__DIR__, "support/*.ex")), do: Code.require_file(f)'; cat "$NX_PATH/$f"; } > "$suite/$(basename "$f")"
done
# defn compiles when the tests run, after every file has loaded: this default holds for all.
echo 'Nx.Defn.global_default_options(compiler: Nx.Vulkan, output: :host)' > "$suite/nx_suite_setup_test.exs"
# Nx runs its :distributed tests only on peer nodes it starts itself.
mix test --exclude distributed "$suite"
