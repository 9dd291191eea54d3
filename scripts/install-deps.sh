#!/usr/bin/env bash
# Install the Debian packages nthlib needs to build, test and benchmark.
# Idempotent: does nothing when every package is present. Needs root for apt-get.
set -euo pipefail
# strace: enforce_no_task_proc.sh, kernels_no_task_proc.sh and
# watchdog_no_task_proc.sh skip without it (a fresh CI machine has none).
pkgs=(build-essential autoconf automake libtool pkg-config
      libhwloc-dev hwloc liburcu-dev libcmocka-dev zlib1g-dev libdw-dev libelf-dev
      valgrind jq gnuplot-nox libclang-rt-14-dev clang python3 gfortran
      pigz xz-utils zstd sysbench strace)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
