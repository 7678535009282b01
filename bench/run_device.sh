#!/usr/bin/env bash
# The lent GPU machine (see /work/.library/device/README.md) in one script. `pack` runs here
# and fills the ignored .gl/ with what that machine lacks; every other mode runs there: it
# installs the Vulkan loader from the .deb files in .gl/, points it at the NVIDIA ICD, and
# runs what is asked in one lease, so that ratios are comparable.
#   bash bench/run_device.sh pack      here: .gl/bin (nxv, nxv_bench, nxv_unit_tests, nxv_soak,
#                                      nxv_fuzz_diff, nxv_nif.so, libspirv-cross-c-shared.so.0,
#                                      spirv-as, zstd),
#                                      the loader debs, .gl/otp.tar.xz (Erlang/OTP and Elixir),
#                                      .gl/nx-0.7.2 and, given NXV_NX_0_13, .gl/nx-0.13; given
#                                      NXV_EXMC and NXV_JASON (eXMC and Jason source trees),
#                                      their sources in .gl/exmc; given NXV_BASE_BUILD (a
#                                      build directory), its nxv_bench as .gl/base, for compare
#   bash bench/run_device.sh MODE [gtest filter]   there:
#     tests    the unit suite (optionally filtered), in $NXV_TEST_SHARDS (4) processes
#     bench    nxv_bench and jax_bench.py, full size
#     compare  .gl/base/nxv_bench against .gl/bin/nxv_bench, alternating, $ROUNDS (default 2) rounds,
#              each with $COMPARE_ARGS (default "--size full --runs 10"), then jax_bench.py's
#              full rows unless $COMPARE_JAX is 0
#     scan     the cumsum rows (and copy, sum) against jnp.cumsum
#     sweep    the dense sweep (bench/sweep.cpp, 65 shapes of BERT, GPT-2, ViT-B/16, ResNet-50
#              and MLPs) in nxv_bench and jax_bench.py, then bench/sweep_report.py's table
#              (sweep.md) and plot (sweep_ratio.png); $SWEEP_DTYPES (default f32,bf16,f16),
#              $BENCH_FILTER and $RUNS (default 20) narrow it; nxv_bench stops after
#              $SWEEP_TIMEOUT (default 230) s, jax_bench.py at $SWEEP_BUDGET (560) s from
#              the start, each keeping the rows it finished
#     sass     NVIDIA's machine code of each kernel of the workloads $BENCH_FILTER names
#              ($SASS_ARGS, default "--size full --dtypes f32", selects them as nxv_bench
#              does), from the driver's shader cache by bench/sass.py and nvdisasm: a listing
#              per kernel in sass.tgz, its instructions counted by opcode in the output
#     latency  emulated f64's cost per dependent operation where one subgroup has the device: a
#              leapfrog of 8, 32 and 128 steps and chains of 32 and 512 adds and of multiplies
#              (bench/latency_graphs.py), native and under NXV_EMULATE=f64,i64 and f64, each
#              nxv run's best device time of 200; latency.md fits time per step and fixed time
#     soak     nxv_soak for $SOAK_MINUTES (default 9) minutes, 4 threads
#     fuzz     nxv_fuzz_diff in $FUZZ_PROCS (default 12) processes for $FUZZ_SECONDS (300) each, on
#              disjoint seed ranges from $FUZZ_SEED (1); fuzz_N.log each in fuzz_logs.tgz (a
#              finding's seed replays it anywhere: --seed=S --count=1 --out=DIR), the tallies
#              and crashes in the output, the findings by class in fuzz_report.md
#              (bench/fuzz_report.py)
#     profiles nxv_bench unrestricted and under each of $PROFILES (default amd-rdna2
#              apple-m1-moltenvk vulkan-minimum; $PROFILE_BENCH, $BENCH_FILTER, $BENCH_DTYPES and $RUNS narrow
#              it), in turn, then the unit suite under each profile, side by side
#     emulated the soft-float and emulation unit tests, then nxv_bench's f64 rows native and
#              under NXV_EMULATE=f64,i64, and its f32 rows
#     elixir   the ExUnit suite eagerly, NXV_LAZY=1 and NXV_LAZY=device on each Nx in .gl
#              (0.7.2 on Elixir 1.14, 0.13 on Elixir 1.18), $NXV_ELIXIR_PARALLEL (3) at a time;
#              $NXV_ELIXIR_RUNS narrows it ("1.14:eager 1.18:device"); extra arguments go to
#              `mix test`
#     suites   Nx 0.7.2's own test files (scripts/nx_suite.sh) and Axon's and Scholar's suites
#              (scripts/ext_suite.sh, checkouts in .gl/ext, packed from $NXV_EXT), concurrently
#     serve    Nx.Serving on devices 0 and 1 (nvidia-h200-x2): nxv_bench --serve (C++) on one
#              device and on both, bench/serving_bench.exs with one partition and with two,
#              then bench/serving_distributed.exs (one BEAM node per device); $SERVE_BATCH
#              (64), $SERVE_CALLERS (128), $SERVE_SECONDS (10), and $SERVE_RATE (rows/s
#              offered, for latency at a fixed load; several, space-separated) set them;
#              $SERVE_PARTS ("cpp partitions null distributed"; null: serving_bench.exs
#              --output null, Nx.Serving's ceiling) narrows it; RESULT lines in the logs
#     exmc     bench/exmc_two_normals.exs and bench/exmc_large_data.exs in an eXMC checkout made
#              by scripts/exmc_setup.sh (Elixir 1.18, .gl/nx-0.13), one fresh VM per model and
#              EXMC_MODE, one after another, each under $EXMC_TIMEOUT (default 200) seconds;
#              $NXV_EXMC_RUNS narrows it ("large_data:vulkan_lazy"); RESULT lines in
#              exmc_results.txt
# Results land in $OUT (JSON, logs); bench/report.py turns a pair into a table.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
[ $# -gt 0 ] && shift

pack() {
  set -e
  local build=${NXV_BUILD_DIR:-build}
  mkdir -p .gl/bin
  if ! ls .gl/*.deb >/dev/null 2>&1; then
    # The device README's recipe: the loader and its GL siblings, amd64, without installing them.
    local o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64"
    mkdir -p /tmp/amd64/partial
    apt-get $o update -q
    (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
  fi
  for b in cli/nxv bench/nxv_bench bench/nxv_soak unit_tests/nxv_unit_tests nif/nxv_nif.so fuzz/nxv_fuzz_diff; do
    strip -o ".gl/bin/$(basename $b)" "$build/$b"
  done
  cp -L /lib/x86_64-linux-gnu/libspirv-cross-c-shared.so.0 "$(command -v spirv-as)" .gl/bin/
  # `sass` decompresses the driver's shader cache; that machine has no zstd.
  bash scripts/install-deps.sh zstd
  cp -L "$(command -v zstd)" /lib/x86_64-linux-gnu/liblz4.so.1 .gl/bin/
  # The baseline of `compare`: another build's nxv_bench (a build of main beside a branch's).
  if [ -n "${NXV_BASE_BUILD:-}" ]; then
    mkdir -p .gl/base && strip -o .gl/base/nxv_bench "$NXV_BASE_BUILD/bench/nxv_bench"
  fi
  # Erlang/OTP and Elixir as built here (Debian's), relocatable under one prefix: run-time
  # applications only, with the two libraries beyond glibc that the VM and crypto load.
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/lib"
  cp -a /usr/lib/erlang "$stage/erlang"
  (cd "$stage/erlang/lib" && rm -rf wx-* megaco-* diameter-* odbc-* observer-* common_test-* \
    et-* debugger-* reltool-* mnesia-* asn1-* ssl-* public_key-* inets-* erl_interface-* eldap-* \
    ftp-* tftp-* edoc-* xmerl-* snmp-* */src */doc */examples)
  rm -rf "$stage"/erlang/{man,misc,usr}
  cp -a /usr/lib/elixir "$stage/elixir-1.14"
  if [ -n "${NXV_ELIXIR_1_18:-}" ]; then
    mkdir -p "$stage/elixir-1.18/lib"
    cp -a "$NXV_ELIXIR_1_18/bin" "$stage/elixir-1.18/"
    for app in "$NXV_ELIXIR_1_18"/lib/*/; do
      mkdir -p "$stage/elixir-1.18/lib/$(basename "$app")"
      cp -a "$app/ebin" "$stage/elixir-1.18/lib/$(basename "$app")/"
    done
  fi
  cp -L /lib/x86_64-linux-gnu/libtinfo.so.6 /lib/x86_64-linux-gnu/libcrypto.so.3 "$stage/lib/"
  tar -C "$stage" -cJf .gl/otp.tar.xz .
  rm -rf "$stage"
  rm -rf .gl/nx-0.7.2 .gl/nx-0.13
  cp -r ../shared/nx-0.7.2 .gl/nx-0.7.2
  [ -z "${NXV_NX_0_13:-}" ] || cp -r "$NXV_NX_0_13" .gl/nx-0.13
  rm -rf .gl/ext
  [ -z "${NXV_EXT:-}" ] || cp -r "$NXV_EXT" .gl/ext
  rm -rf .gl/exmc
  if [ -n "${NXV_EXMC:-}" ]; then
    # sources only: eXMC's tree also holds notebooks, PDFs and images (~6 MB)
    mkdir -p .gl/exmc/exmc .gl/exmc/jason
    (cd "$NXV_EXMC" && cp -r lib src config mix.exs "$OLDPWD/.gl/exmc/exmc/")
    (cd "${NXV_JASON:?NXV_EXMC needs NXV_JASON, a Jason source tree}" && cp -r lib mix.exs "$OLDPWD/.gl/exmc/jason/")
  fi
  du -sh .gl
}

if [ "$what" = pack ]; then pack; exit; fi

for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/.gl/bin NXV_CACHE_DIR=$(mktemp -d) XDG_RUNTIME_DIR=$(mktemp -d) NXV_PROFILE_PATH=$PWD/profiles
out=${OUT:-/tmp/out}
mkdir -p "$out"
.gl/bin/nxv devices

# Unpacks .gl/otp.tar.xz into /opt/nxv-otp (outside /, as the device README asks) and points
# Debian's erl script, which names its root literally, at it.
otp_install() {
  local otp=/opt/nxv-otp
  # (modes running side by side: one unpacks, the others wait for it)
  (
    flock 9
    if [ ! -d $otp/erlang ]; then
      mkdir -p $otp.part && tar -C $otp.part -xJf .gl/otp.tar.xz
      sed -i "s|ROOTDIR=/usr/lib/erlang|ROOTDIR=$otp/erlang|" $otp.part/erlang/bin/erl $otp.part/erlang/erts-*/bin/erl
      mv $otp.part $otp
    fi
  ) 9>/opt/nxv-otp.lock
  export LD_LIBRARY_PATH=$otp/lib:$LD_LIBRARY_PATH PATH=$otp/erlang/bin:$PWD/.gl/bin:$PATH
}

# One ExUnit run in a private copy of elixir/ and of the Nx tree, with the NIF built here.
elixir_run() {
  local version=$1 mode=$2 nx log=$out/elixir_$1_$2.log
  shift 2
  case $version in 1.14) nx=nx-0.7.2 ;; 1.18) nx=nx-0.13 ;; esac
  [ -d ".gl/$nx" ] || { echo "no .gl/$nx: skipped" >"$log"; return; }
  local dir
  dir=$(mktemp -d)
  cp -r elixir "$dir/elixir" && cp -r ".gl/$nx" "$dir/nx" && cp -r unit_tests lit_tests "$dir/"
  mkdir -p "$dir/elixir/priv" && cp .gl/bin/nxv_nif.so "$dir/elixir/priv/"
  local lazy=""
  case $mode in lazy) lazy=1 ;; device) lazy=device ;; esac
  (cd "$dir/elixir" && PATH=/opt/nxv-otp/elixir-$version/bin:$PATH HOME=$dir MIX_HOME=$dir/mix \
    NXV_SKIP_NATIVE=1 NX_PATH=$dir/nx/nx NXV_LAZY=$lazy NXV_CACHE_DIR=$dir/cache \
    timeout 540 mix test "$@") >"$log" 2>&1
  echo "exit $?" >>"$log"
}

# One third-party suite in a private copy of the repository (the scripts write beside it).
suite_run() {
  local name=$1 dir
  dir=$(mktemp -d)
  tar --exclude=./.gl --exclude=./build -cf - . | tar -C "$dir" -xf -
  cp -r .gl/nx-0.7.2 "$dir/nx" && mkdir -p "$dir/elixir/priv" && cp .gl/bin/nxv_nif.so "$dir/elixir/priv/"
  local ext=$PWD/.gl/ext
  (cd "$dir" && PATH=/opt/nxv-otp/elixir-1.14/bin:$PATH HOME=$dir MIX_HOME=$dir/mix NXV_SKIP_NATIVE=1 \
    NX_PATH=$dir/nx/nx POLARIS_PATH=$ext/polaris AXON_PATH=$ext/axon SCHOLAR_PATH=$ext/scholar \
    NIMBLE_OPTIONS_PATH=$ext/nimble_options NXV_CACHE_DIR=$dir/cache timeout 560 \
    bash -c "if [ $name = nx ]; then bash scripts/nx_suite.sh; else bash scripts/ext_suite.sh $name; fi") \
    >"$out/suite_$name.log" 2>&1
  echo "exit $?" >>"$out/suite_$name.log"
}

# The eXMC benchmarks, each model and mode in a fresh VM, in one checkout built once.
exmc_runs() {
  [ -d .gl/exmc ] && [ -d .gl/nx-0.13 ] && [ -d /opt/nxv-otp/elixir-1.18 ] ||
    { echo "no .gl/exmc, .gl/nx-0.13 or Elixir 1.18: skipped" >"$out/exmc_setup.log"; return; }
  local dir
  dir=$(mktemp -d)
  cp -r elixir "$dir/elixir" && cp -r .gl/nx-0.13 "$dir/nx"
  mkdir -p "$dir/elixir/priv" && cp .gl/bin/nxv_nif.so "$dir/elixir/priv/"
  bash scripts/exmc_setup.sh .gl/exmc/exmc .gl/exmc/jason "$dir/nx" "$dir/elixir" "$dir/exmc" >"$out/exmc_setup.log" 2>&1
  local env=(env PATH=/opt/nxv-otp/elixir-1.18/bin:$PATH HOME=$dir MIX_HOME=$dir/mix NXV_SKIP_NATIVE=1
    NX_PATH=$dir/nx/nx NXV_CACHE_DIR=$dir/cache)
  (cd "$dir/exmc" && "${env[@]}" timeout 300 mix compile) >>"$out/exmc_setup.log" 2>&1
  echo "exit $?" >>"$out/exmc_setup.log"
  local runs=${NXV_EXMC_RUNS:-two_normals:none two_normals:vulkan_lazy two_normals:vulkan_perop
    large_data:none large_data:vulkan_lazy large_data:vulkan_perop}
  for run in $runs; do
    local model=${run%%:*} mode=${run##*:} log=$out/exmc_${run/:/_}.log
    (cd "$dir/exmc" && "${env[@]}" EXMC_MODE=$mode timeout "${EXMC_TIMEOUT:-200}" \
      mix run "$OLDPWD/bench/exmc_$model.exs") >"$log" 2>&1
    local rc=$?
    echo "exit $rc" >>"$log"
    grep -h '^RESULT' "$log" >>"$out/exmc_results.txt" ||
      echo "RESULT model=$model mode=$mode exit=$rc$([ $rc = 124 ] && echo " timeout_s=${EXMC_TIMEOUT:-200}")" >>"$out/exmc_results.txt"
  done
  cat "$out/exmc_results.txt"
}

# The serving benchmarks (mode serve) in a private copy of elixir/, Nx 0.7.2 and the NIF.
serve_runs() {
  local dir
  dir=$(mktemp -d)
  cp -r elixir "$dir/elixir" && cp -r .gl/nx-0.7.2 "$dir/nx" && cp bench/serving_*.exs "$dir/"
  mkdir -p "$dir/elixir/priv" && cp .gl/bin/nxv_nif.so "$dir/elixir/priv/"
  local env=(env PATH=/opt/nxv-otp/elixir-1.14/bin:$PATH HOME=$dir MIX_HOME=$dir/mix NXV_SKIP_NATIVE=1
    NX_PATH=$dir/nx/nx NXV_CACHE_DIR=$dir/cache MIX_ENV=test)
  local seconds=${SERVE_SECONDS:-10} batch=${SERVE_BATCH:-64}
  local args=(--batch-size "$batch" --callers "${SERVE_CALLERS:-128}" --seconds "$seconds")
  for rate in ${SERVE_RATE:-}; do args+=(--rate "$rate"); done
  local parts=" ${SERVE_PARTS:-cpp partitions null distributed} "
  (cd "$dir/elixir" && "${env[@]}" timeout 300 mix compile) >"$out/serve_setup.log" 2>&1
  for devices in 0 0,1; do
    [[ $parts != *" cpp "* ]] ||
      timeout 120 .gl/bin/nxv_bench --serve "$seconds" --devices "$devices" --batch "$batch" >"$out/serve_cpp_${devices/,/_}.log" 2>&1
    [[ $parts != *" partitions "* ]] ||
      (cd "$dir/elixir" && "${env[@]}" timeout 200 mix run ../serving_bench.exs --devices "$devices" "${args[@]}") \
        >"$out/serve_partitions_${devices/,/_}.log" 2>&1
    [[ $parts != *" null "* ]] ||
      (cd "$dir/elixir" && "${env[@]}" timeout 200 mix run ../serving_bench.exs --devices "$devices" --output null "${args[@]}") \
        >"$out/serve_null_${devices/,/_}.log" 2>&1
  done
  [[ $parts != *" distributed "* ]] ||
    (cd "$dir/elixir" && "${env[@]}" timeout 300 mix run ../serving_distributed.exs --devices 0,1 "${args[@]}") \
      >"$out/serve_distributed.log" 2>&1
  grep -h -E '^(RESULT|serve |scaling|nodes)' "$out"/serve_*.log
}

# ExUnit's last count line and the exit status of each PREFIX_*.log.
summarise() {
  for f in "$out/$1"_*.log; do
    echo "== $(basename "$f" .log): $(grep -E '^[0-9]+ (doctests?|tests?)' "$f" | tail -1) ($(tail -1 "$f"))"
  done
}

case $what in
  tests | all)
    # In $NXV_TEST_SHARDS (default 4) processes side by side, each with its own pipeline cache:
    # the suite is bound by shader compiles on the CPU (one process took 361 s on the H200).
    shards=${NXV_TEST_SHARDS:-4}
    for i in $(seq 0 $((shards - 1))); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i NXV_CACHE_DIR=$(mktemp -d) NXV_TEST_DATA=$PWD/unit_tests \
        .gl/bin/nxv_unit_tests --gtest_brief=1 ${1:+--gtest_filter=$1} >"$out/unit_$i.log" 2>&1 &
    done
    wait
    grep -h -v '^Running main' "$out"/unit_*.log | tail -60 ;;&
  bench | all)
    .gl/bin/nxv_bench --size full --runs 30 --json "$out/nxv.json"
    python3 bench/jax_bench.py --size full --runs 30 --json "$out/jax.json" ;;
  compare)
    read -ra compare_args <<<"${COMPARE_ARGS:---size full --runs 10}"
    for round in $(seq "${ROUNDS:-2}"); do
      .gl/base/nxv_bench "${compare_args[@]}" --json "$out/base_$round.json" >/dev/null
      .gl/bin/nxv_bench "${compare_args[@]}" --json "$out/new_$round.json" >/dev/null
    done
    [ "${COMPARE_JAX:-1}" = 0 ] || python3 bench/jax_bench.py --size full --runs 30 --json "$out/jax.json" ;;
  sass)
    # Fresh caches, so that the driver compiles every kernel and writes it to its own.
    cache=$(mktemp -d)
    read -ra sass_args <<<"${SASS_ARGS:---size full --dtypes f32}"
    __GL_SHADER_DISK_CACHE_PATH=$cache NXV_CACHE_DIR=$(mktemp -d) .gl/bin/nxv_bench "${sass_args[@]}" \
      ${BENCH_FILTER:+--filter "$BENCH_FILTER"} --runs 1 --pipeline-stats >"$out/sass_stats.log" 2>&1
    python3 bench/sass.py "$cache" "$out/sass_stats.log" "$out/sass" --zstd .gl/bin/zstd
    tar -C "$out" -czf "$out/sass.tgz" sass && rm -rf "$out/sass" ;;
  scan)
    .gl/bin/nxv_bench --size full --dtypes f32,f64 --filter copy,sum,cumsum --runs 30 --json "$out/nxv_scan.json"
    python3 bench/jax_bench.py --size full --dtypes f32,f64 --filter copy,sum,cumsum --runs 30 --json "$out/jax_scan.json"
    python3 bench/report.py "$out/nxv_scan.json" "$out/jax_scan.json" ;;
  sweep)
    # Both sides within $SWEEP_BUDGET seconds (a call's limit is 600): nxv_bench stops after
    # $SWEEP_TIMEOUT, jax_bench.py (XLA compiles, autotunes, and times twice) gets the rest.
    start=$SECONDS
    # The GPU at its boost clock before the first row.
    .gl/bin/nxv_bench --sweep --dtypes f32 --filter mlp_train_b1024 --runs 30 --warmup-ms 1500 >/dev/null
    sweep_args=(--sweep --dtypes "${SWEEP_DTYPES:-f32,bf16,f16}" --runs "${RUNS:-20}" ${BENCH_FILTER:+--filter "$BENCH_FILTER"})
    # A second of warm-up per row: NVIDIA's cold compile of a cooperative-matrix kernel takes
    # 1-4 s with the GPU idle, and 0.2 s of calls after it left the H200 below its boost clock
    # (bf16 rows up to 4x slower than the same binary after a warm compile, 2026-11-29).
    timeout "${SWEEP_TIMEOUT:-230}" .gl/bin/nxv_bench "${sweep_args[@]}" --warmup-ms 1000 --json "$out/sweep_nxv.json" \
      >"$out/sweep_nxv.log" 2>&1
    echo "nxv_bench: exit $?, $(grep -c TFLOP "$out/sweep_nxv.log") rows, $((SECONDS - start)) s"
    # XLA's rows get the same second: with 0.2 s several ran slower in one lease than in the
    # next (bert_base_qkv_b8s512 bf16 0.074 then 0.045 ms), which flattered nxv's ratios.
    timeout $((${SWEEP_BUDGET:-560} - (SECONDS - start))) python3 bench/jax_bench.py "${sweep_args[@]}" --warmup-s 1 \
      --json "$out/sweep_jax.json" >"$out/sweep_jax.log" 2>&1
    echo "jax_bench.py: exit $?, $(grep -c pipelined "$out/sweep_jax.log") rows, $((SECONDS - start)) s"
    python3 bench/sweep_report.py "$out/sweep_nxv.json" "$out/sweep_jax.json" --plot "$out/sweep_ratio.png" >"$out/sweep.md"
    sed -n '1,/^$/p;/^| dtype/,/^$/p' "$out/sweep.md" ;;
  profiles)
    # Benches first, one at a time, so their times are the GPU's alone; then the unit suites
    # side by side, without emulation (as CI's vulkan-minimum run: the profile's limits, its
    # missing types left out; `emulated` covers those).
    profiles=${PROFILES:-amd-rdna2 apple-m1-moltenvk vulkan-minimum}
    for p in ${PROFILE_BENCH-unrestricted $profiles}; do
      [ "$p" = unrestricted ] && flag=() || flag=(--profile "$p")
      timeout "${BENCH_TIMEOUT:-150}" .gl/bin/nxv_bench --size full --runs "${RUNS:-10}" ${BENCH_FILTER:+--filter "$BENCH_FILTER"} ${BENCH_DTYPES:+--dtypes "$BENCH_DTYPES"} \
        "${flag[@]}" --json "$out/bench_$p.json" | tail -3
    done
    for p in $profiles; do
      (NXV_PROFILE=$p NXV_EMULATE=none NXV_TEST_DATA=$PWD/unit_tests timeout "${TESTS_TIMEOUT:-420}" .gl/bin/nxv_unit_tests \
        --gtest_brief=1 ${1:+--gtest_filter=$1} >"$out/profile_$p.log" 2>&1; echo "exit $?" >>"$out/profile_$p.log") &
    done
    wait
    for p in $profiles; do echo "== $p: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |exit' "$out/profile_$p.log" | tr '\n' ' ')"; done ;;
  emulated)
    NXV_TEST_DATA=$PWD/unit_tests timeout 200 .gl/bin/nxv_unit_tests --gtest_brief=1 \
      --gtest_filter='*Soft*:RuntimeEmulation*:EmulationOption*' 2>&1 | tail -8
    timeout 120 .gl/bin/nxv_bench --size full --runs 10 --dtypes f32,f64 --json "$out/native.json" | tail -2
    NXV_EMULATE=f64,i64 timeout 300 .gl/bin/nxv_bench --size full --runs 10 --dtypes f64 --json "$out/emulated.json" ;;
  latency)
    graphs=$(mktemp -d)
    python3 bench/latency_graphs.py make "$graphs"
    for g in leapfrog_s8 leapfrog_s32 leapfrog_s128 add_s32 add_s512 multiply_s32 multiply_s512; do
      inputs=$graphs/chain_inputs.json
      [ "${g#leapfrog}" != "$g" ] && inputs=$graphs/leapfrog_inputs.json
      for form in none f64,i64 f64; do
        NXV_CACHE_DIR=$(mktemp -d) timeout 60 .gl/bin/nxv run "$graphs/$g.json" --inputs="$inputs" --repeat=200 \
          --emulate=$form --check | awk -v g="$g" -v f="$form" '/best device time/ {print g, f, $(NF-1)}'
      done
    done | tee "$out/latency.txt"
    python3 bench/latency_graphs.py report "$out/latency.txt" | tee "$out/latency.md" ;;
  fuzz)
    procs=${FUZZ_PROCS:-12} seconds=${FUZZ_SECONDS:-300}
    for i in $(seq 0 $((procs - 1))); do
      (NXV_CACHE_DIR=$(mktemp -d) timeout $((seconds + 90)) .gl/bin/nxv_fuzz_diff --seed=$((${FUZZ_SEED:-1} + i * 10000000)) \
        --count=10000000 --seconds="$seconds" >"$out/fuzz_$i.log" 2>&1
      echo "exit $?" >>"$out/fuzz_$i.log") &
    done
    wait
    grep -h -E '^nxv_fuzz_diff: [0-9]+ graphs|died on seed|^exit' "$out"/fuzz_*.log
    python3 bench/fuzz_report.py "$out"/fuzz_*.log >"$out/fuzz_report.md"
    sed -n '1,9p' "$out/fuzz_report.md"
    # One archive: a call brings back a few files only.
    tar -C "$out" -czf "$out/fuzz_logs.tgz" $(cd "$out" && ls fuzz_*.log) && rm "$out"/fuzz_*.log ;;
  soak)
    .gl/bin/nxv_soak --minutes="${SOAK_MINUTES:-9}" --threads=4 --out="$out/soak.md" 2>&1 | tail -20 ;;
  elixir)
    otp_install
    runs=${NXV_ELIXIR_RUNS:-1.14:eager 1.14:lazy 1.14:device 1.18:eager 1.18:lazy 1.18:device}
    # $NXV_ELIXIR_PARALLEL (default 3) at a time: all six at once took 280-370 s each on the
    # H200 machine's 16 cores, the evaluator's references competing for them.
    n=0
    for run in $runs; do
      elixir_run "${run%%:*}" "${run##*:}" "$@" &
      if (( ++n % ${NXV_ELIXIR_PARALLEL:-3} == 0 )); then wait; fi
    done
    wait
    summarise elixir ;;
  suites)
    otp_install
    for name in nx axon scholar; do suite_run $name & done
    wait
    summarise suite ;;
  exmc)
    otp_install
    exmc_runs ;;
  serve)
    otp_install
    serve_runs ;;
esac
# At most eight files come back from $OUT: each mode's logs travel as one archive (modes
# may run side by side).
prefix=${what%s}
if ls "$out/$prefix"_*.log >/dev/null 2>&1; then
  (cd "$out" && tar -czf "logs_$what.tar.gz" ./"$prefix"_*.log && rm -f ./"$prefix"_*.log)
fi
