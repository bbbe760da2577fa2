#!/usr/bin/env bash
# Installs the Debian packages attnrt builds with, if any are missing. Idempotent; silent when
# everything is present. Uses sudo when not run as root.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdlpack-dev libhwy-dev libomp-dev libopenmpi-dev openmpi-bin
  clang-14 libclang-rt-14-dev llvm-14 clang-format-14 clang-tidy-14
  python3-dev pybind11-dev python3-torch python3-numpy python3-pytest python3-matplotlib
  python3-venv python3-pip python3-setuptools python3-wheel
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
