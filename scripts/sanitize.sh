#!/usr/bin/env bash
# Runs the C++ unit tests, the CLI and the lit tests under AddressSanitizer and
# UndefinedBehaviorSanitizer on the default device, in the sanitizer build
# (scripts/sanitizer_build.sh: clang, build-san/). Leak checking covers our code;
# fuzz/lsan.supp exempts only what the Vulkan loader and lavapipe keep for the process's
# life. Arguments go to ctest (e.g. -R Conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${NXV_SAN_BUILD_DIR:-build-san}
bash scripts/sanitizer_build.sh nxv_unit_tests nxv
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export NXV_CACHE_DIR=${NXV_CACHE_DIR:-$(mktemp -d)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0}
# lavapipe compiles a kernel with LLVM at its first dispatch, inside the submit's time, and
# LLVM allocates heavily: under ASan, beside another test, a submit of
# Matmul.ConvolutionsAndGradientsOnEveryTargetsTiles ran past the default two minutes.
export NXV_TIMEOUT_MS=${NXV_TIMEOUT_MS:-600000}
cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@"
