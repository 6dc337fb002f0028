#!/usr/bin/env bash
# tools/setup.sh — install every Debian package that mkernel's build and tests need, and
# check the CUDA toolkit. Idempotent: installs only what is missing. Runs as root or via sudo.
#   tools/setup.sh            install what is missing, then check CUDA
#   tools/setup.sh --check    only report what is missing (exit 1 if anything is)
set -euo pipefail

# The packages, one group per purpose (keep this list the only place they are named).
PKGS=(
  build-essential cmake ninja-build pkg-config git   # build
  libcjson-dev                                       # required: safetensors headers, config.json
  libmicrohttpd-dev libpcre2-dev                     # required: mk-serve HTTP server, tokenizer pre-tokenizer regex
  libibverbs-dev                                     # optional: ib and efa transports (rdma-core)
  python3 python3-matplotlib                         # mk-bench plot
)

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} Debian packages present"
elif [ $check_only -eq 1 ]; then
  echo "setup: missing Debian packages: ${missing[*]}"
  exit 1
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: not root and no sudo: install ${missing[*]} by hand" >&2; exit 1; }
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: installed ${#missing[@]} package(s)"
fi

# CUDA toolkit >= 12.9: not a Debian package; found through CUDA_HOME, CUDAToolkit_ROOT,
# /usr/local/cuda or PATH (the same order CMakeLists.txt uses).
nvcc=""
for d in "${CUDAToolkit_ROOT:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then nvcc="$d/bin/nvcc"; break; fi
done
[ -z "$nvcc" ] && nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ]; then
  echo "setup: no CUDA toolkit found (looked in \$CUDAToolkit_ROOT, \$CUDA_HOME, /usr/local/cuda, PATH)." >&2
  echo "setup: install CUDA 12.9 or newer from NVIDIA and set CUDA_HOME." >&2
  exit 1
fi
ver=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r major minor <<<"$ver"
if [ -z "${major:-}" ] || [ "$major" -lt 12 ] || { [ "$major" -eq 12 ] && [ "$minor" -lt 9 ]; }; then
  echo "setup: $nvcc is CUDA ${major:-?}.${minor:-?}; mkernel needs 12.9 or newer" >&2
  exit 1
fi
echo "setup: CUDA $major.$minor at $(dirname "$(dirname "$nvcc")")"
