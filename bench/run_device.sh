#!/usr/bin/env bash
# On the lent GPU machine (see /work/.library/device/README.md): installs the Vulkan loader
# from the .deb files carried in .gl/, points it at the NVIDIA ICD, then runs what is asked in
# one lease of the machine so that ratios are comparable. Binaries are built here and carried
# in .gl/bin (nxv, nxv_bench, nxv_unit_tests, nxv_soak, libspirv-cross-c-shared.so.0); a
# baseline nxv_bench to compare against in .gl/base.
#   bash bench/run_device.sh [tests|bench|compare|scan|soak|all] [gtest filter]
#     tests    the unit suite (optionally filtered)
#     bench    nxv_bench and jax_bench.py, full size
#     compare  .gl/base/nxv_bench against .gl/bin/nxv_bench, alternating, $ROUNDS (default 2) rounds
#     scan     the cumsum rows (and copy, sum) against jnp.cumsum
#     soak     nxv_soak for $SOAK_MINUTES (default 9) minutes, 4 threads
# Results land in $OUT (JSON, logs); bench/report.py turns a pair into a table.
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/.gl/bin NXV_CACHE_DIR=$(mktemp -d) XDG_RUNTIME_DIR=$(mktemp -d) NXV_PROFILE_PATH=$PWD/profiles
out=${OUT:-/tmp/out}
mkdir -p "$out"
what=${1:-all}
.gl/bin/nxv devices
case $what in
  tests | all)
    NXV_TEST_DATA=$PWD/unit_tests .gl/bin/nxv_unit_tests --gtest_brief=1 ${2:+--gtest_filter=$2} 2>&1 | tail -25 ;;&
  bench | all)
    .gl/bin/nxv_bench --size full --runs 30 --json "$out/nxv.json"
    python3 bench/jax_bench.py --size full --runs 30 --json "$out/jax.json" ;;
  compare)
    for round in $(seq "${ROUNDS:-2}"); do
      .gl/base/nxv_bench --size full --runs 10 --json "$out/base_$round.json" >/dev/null
      .gl/bin/nxv_bench --size full --runs 10 --json "$out/new_$round.json" >/dev/null
    done
    python3 bench/jax_bench.py --size full --runs 30 --json "$out/jax.json" ;;
  scan)
    .gl/bin/nxv_bench --size full --dtypes f32,f64 --filter copy,sum,cumsum --runs 30 --json "$out/nxv_scan.json"
    python3 bench/jax_bench.py --size full --dtypes f32,f64 --filter copy,sum,cumsum --runs 30 --json "$out/jax_scan.json"
    python3 bench/report.py "$out/nxv_scan.json" "$out/jax_scan.json" ;;
  soak)
    .gl/bin/nxv_soak --minutes="${SOAK_MINUTES:-9}" --threads=4 --out="$out/soak.md" 2>&1 | tail -20 ;;
esac
