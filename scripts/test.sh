#!/usr/bin/env bash
# Every test: unit tests (GoogleTest, incl. the op conformance suite on the default
# Vulkan device; again under the vulkan-minimum profile, at lavapipe's 4-lane width, and
# their 64-bit parts with f64 and s64/u64 emulated), lit
# tests of the passes and codegen, and the whole Elixir suite, eager, in lazy mode and under
# the vulkan-minimum profile.
# The Elixir tests that need Nx take it from NX_PATH, else from the Nx 0.7.2 checkout in
# ../shared beside the project (CI's machines have it); with neither they are skipped with
# a message and only the NIF tests run.
# Each part goes on after another fails; the last lines name the parts that failed, with
# their failures, since a long run's log is often read from its end alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BUILD_DIR=${NXV_BUILD_DIR:-build}
# lavapipe warns about this on headless machines; give it a private runtime dir.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
# A fresh pipeline cache per run so the tests exercise cold compilation too.
export NXV_CACHE_DIR=${NXV_CACHE_DIR:-$(mktemp -d)}
jobs=$(nproc)

logs=$(mktemp -d)
parts=0
failed=()
# part NAME COMMAND...: runs COMMAND (in a subshell), its output also kept for the summary.
part() {
  local name=$1 log
  shift
  parts=$((parts + 1))
  log="$logs/$parts.log"
  echo "nx_vulkan: $name"
  SECONDS=0
  if ( "$@" ) 2>&1 | tee "$log"; then
    echo "nx_vulkan: $name passed in ${SECONDS}s"
  else
    echo "nx_vulkan: $name FAILED in ${SECONDS}s"
    failed+=("$name|$log")
  fi
}
in_build() { cd "$BUILD_DIR" && "$@"; }
in_elixir() { cd elixir && env NXV_BUILD_DIR="$nif_build_dir" "$@"; }

part "unit and lit tests" in_build ctest --output-on-failure -j"$jobs"
# The unit tests again (label `unit`) as a device with only the spec's required limits and no
# optional feature, with the validation layer as oracle, and at lavapipe's 4-lane width
# (docs/portability.md). The profile's run leaves its missing types out rather than
# emulating them (the emulated runs below cover those). NXV_CI_PROFILES=0 leaves both out.
if [ "${NXV_CI_PROFILES:-1}" = 1 ]; then
  part "unit tests under NXV_PROFILE=vulkan-minimum NXV_VALIDATE=1" \
    in_build env NXV_PROFILE=vulkan-minimum NXV_EMULATE=none NXV_VALIDATE=1 ctest -L unit --output-on-failure -j"$jobs"
  part "unit tests at 4 lanes (LP_NATIVE_VECTOR_WIDTH=128)" \
    in_build env LP_NATIVE_VECTOR_WIDTH=128 ctest -L unit --output-on-failure -j"$jobs"
fi
# Emulated 64-bit types (docs/portability.md): the op conformance and sort suites with s64/u64
# in software, the special values and the f64 math library's accuracy sweep with f64 (and
# s64/u64) in software. runtime_emulation_test compares every other family with native in
# the runs above. NXV_CI_EMULATION=0 leaves them out.
if [ "${NXV_CI_EMULATION:-1}" = 1 ]; then
  part "conformance and sorts under NXV_EMULATE=i64" \
    in_build env NXV_EMULATE=i64 ctest -L unit -R '^(Conformance|SortDevice)\.' --output-on-failure -j"$jobs"
  part "special values and the f64 math library under NXV_EMULATE=f64,i64" \
    in_build env NXV_EMULATE=f64,i64 ctest -L unit -R '^(SpecialValues\.|CodegenMath\.F64)' --output-on-failure -j"$jobs"
fi
# The Mix compiler task builds the NIF in the tree just built rather than configuring its own
# (the path resolved here: inside the subshell, after cd, it would name elixir/build).
nif_build_dir=$(realpath "$BUILD_DIR")
shared_nx=../shared/nx-0.7.2
if [ -z "${NX_PATH:-}" ] && [ -d "$shared_nx/nx" ]; then
  # A copy: ../shared is read-only to the project, and Mix may write beside a path dependency.
  nx_copy=$(mktemp -d)
  cp -r "$shared_nx"/. "$nx_copy"
  export NX_PATH="$nx_copy/nx"
fi
part "Elixir suite with Nx from ${NX_PATH:-nowhere (Nx tests skipped)}" in_elixir mix test
# Again with Nx.Vulkan.Backend lazy by default: once as users get it (small operations on
# the host), once with every operation in lazy graphs on the device.
for lazy in 1 device; do
  part "Elixir suite with NXV_LAZY=$lazy" in_elixir NXV_LAZY=$lazy mix test
done
# Once more as a device with the spec's required limits alone (vulkan-minimum: no f64 or
# s64, which are then emulated; 4 storage buffers per kernel; no subgroup operations), with
# the validation layer as oracle (docs/portability.md).
if [ "${NXV_CI_PROFILES:-1}" = 1 ]; then
  part "Elixir suite under NXV_PROFILE=vulkan-minimum NXV_VALIDATE=1" \
    in_elixir NXV_PROFILE=vulkan-minimum NXV_VALIDATE=1 mix test
fi
# Fuzzing (four libFuzzer targets for NXV_FUZZ_SECONDS each, then nxv_fuzz_diff) and the
# unit tests under ASan and UBSan (docs/reliability.md), when asked: NXV_RELIABILITY=1.
if [ "${NXV_RELIABILITY:-0}" = 1 ]; then
  part "fuzzing" bash scripts/fuzz.sh
  part "unit and lit tests under ASan and UBSan" bash scripts/sanitize.sh ${NXV_SANITIZE_CTEST_ARGS:-}
fi

[ ${#failed[@]} -eq 0 ] && exit 0
echo
echo "nx_vulkan: ${#failed[@]} part(s) FAILED"
for entry in "${failed[@]}"; do
  echo "== ${entry%%|*}"
  # ctest's list of failed tests, ExUnit's failures and summary, libFuzzer's and the
  # sanitizers' reports, nxv_fuzz_diff's findings; else the part's last lines.
  grep -E -A3 '^The following tests FAILED|^\s+[0-9]+\) (test|doctest)|[0-9]+ failures?|FAILED|ERROR: |SUMMARY: |runtime error|finding' \
    "${entry#*|}" | tail -60 || tail -30 "${entry#*|}"
done
exit 1
