#!/usr/bin/env bash
# Cross-build nthlib for aarch64 on an x86-64 Debian host and run the core
# tests (tests/core) and the sync tests (tests/sync) under qemu-aarch64: the
# proof that context_aarch64.S works, on a machine without arm64 hardware.
#   scripts/check-aarch64.sh           build in build-aarch64/, run the tests
#   scripts/check-aarch64.sh --bench   also run bench/micro --quick once
# Installs what is missing (as root): the cross compiler, qemu-user, and an
# arm64 sysroot with hwloc, liburcu, cmocka and zlib, made by mmdebstrap from
# the host's own Debian release (so its glibc matches the cross toolchain's).
# Environment: NTH_ARM64_SYSROOT (default /opt/arm64-sysroot),
# NTH_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Exits non-zero when a test fails. qemu-user limits, by design skipped by
# the tests: RLIMIT_AS is not enforced (test_eagain) and MADV_GUARD_INSTALL
# is ignored, so stacks use mprotect guards (the 100 000 case needs
# vm.max_map_count >= 210 000).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sr=${NTH_ARM64_SYSROOT:-/opt/arm64-sysroot}
mirror=${NTH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
bdir=$top/build-aarch64
bench=no
[ "${1:-}" = --bench ] && bench=yes

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "check-aarch64: need root to install: $*" >&2
    exit 1
  fi
}

# ---- host tools ---------------------------------------------------------------
missing=()
for p in gcc-aarch64-linux-gnu qemu-user mmdebstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root "${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ---- arm64 sysroot (no dpkg --add-architecture: it upsets apt on this host) ---
if [ ! -f "$sr/usr/lib/aarch64-linux-gnu/pkgconfig/hwloc.pc" ] ||
   [ ! -f "$sr/usr/lib/aarch64-linux-gnu/pkgconfig/cmocka.pc" ]; then
  need_root "an arm64 sysroot in $sr"
  . /etc/os-release
  rm -rf "$sr"
  mmdebstrap --quiet --arch=arm64 --variant=extract \
    --include=libc6-dev,libhwloc-dev,liburcu-dev,libcmocka-dev,zlib1g-dev \
    "${VERSION_CODENAME:-stable}" "$sr" "$mirror"
fi

# ---- cross build -------------------------------------------------------------------
cd "$top"
if [ ! -x configure ] || [ -n "$(find . -path ./build\* -prune -o \( -name configure.ac -o -name Makefile.am -o -name '*.mk' \) -newer configure -print | head -n1)" ]; then
  autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$bdir"
cd "$bdir"
args="--host=aarch64-linux-gnu --enable-werror sysroot=$sr"
if [ ! -f Makefile ] || [ "$(cat .nth-configure-args 2>/dev/null)" != "$args" ]; then
  "$top/configure" -q --host=aarch64-linux-gnu --enable-werror \
    CC="aarch64-linux-gnu-gcc --sysroot=$sr" PKG_CONFIG=pkg-config \
    PKG_CONFIG_LIBDIR="$sr/usr/lib/aarch64-linux-gnu/pkgconfig:$sr/usr/share/pkgconfig" \
    PKG_CONFIG_SYSROOT_DIR="$sr"
  echo "$args" > .nth-configure-args
fi
grep -q 'S\["CTX_AARCH64_TRUE"\]=""' config.status ||
  { echo "check-aarch64: configure did not select context_aarch64.S" >&2; exit 1; }

core=(test_create_join test_sched test_errors test_overflow test_config
      test_switch_hook test_context)
sync=(test-sync test-sync-mock test-blocking test-timer-queue
      test-timer-migration test-watchdog)
targets=(libnth.la bench/micro)
for t in "${core[@]}"; do targets+=("tests/core/$t"); done
for t in "${sync[@]}"; do targets+=("tests/sync/$t"); done
make -s -j"$(nproc)" "${targets[@]}" >/dev/null

# ---- run under qemu ---------------------------------------------------------------
# qemu-user creates kernel threads ~50x slower than the host: the mock sync
# tests (kernel threads as nano-threads) need more than their alarms.
export QEMU_LD_PREFIX=$sr top_srcdir=$top top_builddir=$bdir NTH_TEST_TIMEOUT_SCALE=4
pass=0; fail=0; failed=()
run() {   # run NAME DIR: one test program, its log in DIR/NAME.qemu.log
  local name=$1 dir=$2 rc=0 prog=./$1
  # A program linked with the shared libnth is a libtool wrapper script:
  # qemu runs the binary behind it, with the library path it would set.
  [ "$(head -c2 "$bdir/$dir/$name")" = '#!' ] && prog=.libs/$name
  ( cd "$bdir/$dir" && LD_LIBRARY_PATH=$bdir/.libs timeout -s KILL 600 qemu-aarch64 "$prog" ) \
    > "$bdir/$dir/$name.qemu.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1)); echo "PASS: $dir/$name"
  else
    fail=$((fail + 1)); failed+=("$dir/$name"); echo "FAIL: $dir/$name (exit $rc)"
    grep -E 'FAIL|ERROR|CHECK failed|Assertion|signal' "$bdir/$dir/$name.qemu.log" | head -n 20 | sed 's/^/    /' || true
  fi
}
for t in "${core[@]}"; do run "$t" tests/core; done
for t in "${sync[@]}"; do run "$t" tests/sync; done
if [ "$bench" = yes ]; then
  ( cd "$bdir" && timeout -s KILL 600 qemu-aarch64 bench/micro --quick ) || { fail=$((fail + 1)); failed+=(bench/micro); }
fi
echo "aarch64 (qemu): $pass passed, $fail failed${failed[*]:+: ${failed[*]}}"
[ "$fail" -eq 0 ]
