#!/usr/bin/env bash
# Builds the named targets in the sanitizer build, build-san/ (or $NXV_SAN_BUILD_DIR): clang 14,
# every target under AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage
# (-DNXV_BUILD_FUZZ=ON), the tests included. scripts/fuzz.sh and scripts/sanitize.sh share it,
# so the sanitized libraries are compiled once. Line tables only as debug information: the
# sanitizers' reports need file and line, and full DWARF doubles the time to link.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# clang and its libFuzzer and sanitizer runtimes: only the sanitizer build needs them.
missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
BUILD=${NXV_SAN_BUILD_DIR:-build-san}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" "${launcher[@]}" \
  -DNXV_BUILD_FUZZ=ON -DNXV_BUILD_TESTS=ON -DNXV_BUILD_NIF=OFF -DNXV_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target "$@"
