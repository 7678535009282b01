#!/usr/bin/env bash
# Builds the C++ unit tests, the CLI and the lit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc, build-asan/) and runs ctest under them on the default
# device. Leak checking covers our code; fuzz/lsan.supp exempts only what the Vulkan loader
# and lavapipe keep for the process's life. Arguments go to ctest (e.g. -R Conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD=${NXV_ASAN_BUILD_DIR:-build-asan}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DNXV_BUILD_NIF=OFF -DNXV_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target nxv_unit_tests nxv
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export NXV_CACHE_DIR=${NXV_CACHE_DIR:-$(mktemp -d)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0}
cd "$BUILD" && ctest --output-on-failure "$@"
