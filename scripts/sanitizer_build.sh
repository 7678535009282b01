#!/usr/bin/env bash
# Builds the named targets in the sanitizer build, build-san/ (or $NXV_SAN_BUILD_DIR): clang 14,
# every target under AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage
# (-DNXV_BUILD_FUZZ=ON), the tests included. scripts/fuzz.sh and scripts/sanitize.sh share it,
# so the sanitized libraries are compiled once. Line tables only as debug information: the
# sanitizers' reports need file and line, not full DWARF, which costs compile and link time.
set -euo pipefail
cd "$(dirname "$0")/.."
# clang and its libFuzzer and sanitizer runtimes: only the sanitizer build needs them.
bash scripts/install-deps.sh clang-14 libclang-rt-14-dev
BUILD=${NXV_SAN_BUILD_DIR:-build-san}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" "${launcher[@]}" \
  -DNXV_BUILD_FUZZ=ON -DNXV_BUILD_TESTS=ON -DNXV_BUILD_NIF=OFF -DNXV_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target "$@"
