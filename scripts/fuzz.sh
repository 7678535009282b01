#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in the sanitizer build (scripts/sanitizer_build.sh:
# clang, ASan + UBSan, build-san/) and runs each for NXV_FUZZ_SECONDS (default 60) from its
# seed corpus, then the differential fuzzer nxv_fuzz_diff on NXV_FUZZ_DIFF_COUNT (default
# 200) graphs from seed NXV_FUZZ_DIFF_SEED (default 1) on the default device. Any crash,
# leak, sanitizer report, timeout or finding fails the script; libFuzzer leaves the input
# that caused it in build-san/findings/<target>/.
#   NXV_FUZZ_TARGETS="json passes"   runs only those targets (NXV_FUZZ_DIFF_COUNT=0: no diff)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${NXV_SAN_BUILD_DIR:-build-san}
SECONDS_EACH=${NXV_FUZZ_SECONDS:-60}
TARGETS=${NXV_FUZZ_TARGETS:-json passes codegen interpret}
bash scripts/sanitizer_build.sh nxv_fuzz_diff $(for t in $TARGETS; do echo "fuzz_$t"; done)

export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export NXV_CACHE_DIR=${NXV_CACHE_DIR:-$(mktemp -d)}
# UBSan reports are failures; LSan
# skips only the driver's and loader's allocations.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0}

status=0
summary=()
for t in $TARGETS; do
  # New inputs go to the build's corpus, never into the repository's seeds.
  mkdir -p "$BUILD/corpus/$t" "$BUILD/findings/$t"
  log="$BUILD/findings/$t.log"
  echo "nx_vulkan: fuzz_$t for ${SECONDS_EACH}s"
  if ! "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -dict=fuzz/ir.dict -max_len=8192 -timeout=30 \
      -rss_limit_mb=4096 -malloc_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$BUILD/findings/$t/" \
      "$BUILD/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    status=1
    echo "nx_vulkan: fuzz_$t FAILED; the last lines of $log:"
    tail -40 "$log"
  fi
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -1 || echo "?")
  summary+=("fuzz_$t: $runs runs in ${SECONDS_EACH}s, $cov")
done

DIFF_COUNT=${NXV_FUZZ_DIFF_COUNT:-200}
if [ "$DIFF_COUNT" -gt 0 ]; then
  echo "nx_vulkan: nxv_fuzz_diff on $DIFF_COUNT graphs"
  mkdir -p "$BUILD/findings/diff"
  "$BUILD/fuzz/nxv_fuzz_diff" --seed="${NXV_FUZZ_DIFF_SEED:-1}" --count="$DIFF_COUNT" \
    --out="$BUILD/findings/diff" || status=1
fi
printf '%s\n' "${summary[@]}"
exit $status
