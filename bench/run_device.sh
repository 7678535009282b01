#!/usr/bin/env bash
# On the lent GPU machine (see /work/.library/device/README.md): installs the Vulkan loader
# from the .deb files carried in .gl/, points it at the NVIDIA ICD, then runs the unit tests
# and both benchmarks in one lease of the machine so their ratios are comparable. Binaries are built
# here and carried in .gl/bin (nxv, nxv_bench, nxv_unit_tests, libspirv-cross-c-shared.so.0).
#   bash bench/run_device.sh [tests|bench|all]
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/.gl/bin NXV_CACHE_DIR=$(mktemp -d) XDG_RUNTIME_DIR=$(mktemp -d)
out=${OUT:-/tmp/out}
mkdir -p "$out"
what=${1:-all}
.gl/bin/nxv devices
if [[ $what == tests || $what == all ]]; then
  NXV_TEST_DATA=$PWD/unit_tests .gl/bin/nxv_unit_tests --gtest_brief=1 2>&1 | tail -25
fi
if [[ $what == bench || $what == all ]]; then
  .gl/bin/nxv_bench --size full --runs 30 --json "$out/nxv.json"
  python3 bench/jax_bench.py --size full --runs 30 --json "$out/jax.json"
fi
