#!/usr/bin/env bash
# Installs the Debian 12 packages nx_vulkan builds, runs and tests with, and the packages
# named as arguments (what one script alone needs, e.g. the sanitizer build's clang).
# Idempotent: installs only what is missing, so a warm machine pays nothing.
set -euo pipefail

PKGS=(
  cmake g++ make pkg-config python3
  libvulkan-dev mesa-vulkan-drivers vulkan-tools   # loader + headers, lavapipe as the CPU device
  vulkan-validationlayers                          # NXV_VALIDATE=1: the Khronos validation layer
  spirv-headers spirv-tools                        # our codegen's opcode tables; validator/disassembler
  spirv-cross libspirv-cross-c-shared-dev          # GLSL view of emitted kernels
  nlohmann-json3-dev
  erlang-dev elixir                                # erl_nif headers, the Mix project
  llvm-14-tools                                    # lit, FileCheck, split-file
  googletest libgtest-dev libbenchmark-dev
  "$@"
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "nx_vulkan: installing ${missing[*]}" >&2
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
