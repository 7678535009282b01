#!/usr/bin/env bash
# The main job: compile a sample graph, run it on the default Vulkan device, and
# print what was done (passes, kernels, device, timings, outputs checked against the reference).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
BUILD_DIR=${NXV_BUILD_DIR:-build}
GRAPH=${1:-examples/softmax.json}
"$BUILD_DIR"/cli/nxv devices
"$BUILD_DIR"/cli/nxv explore "$GRAPH" --stage=passes
"$BUILD_DIR"/cli/nxv explore "$GRAPH" --stage=kernels --device="${NXV_DEVICE:-0}"
"$BUILD_DIR"/cli/nxv run "$GRAPH" --seed 1 --repeat 5 --check
