#!/bin/sh
# vps_scale.sh -- what NTH_VPS=N costs a program that makes one nano-thread
# (issue 5/runtime): wall time, user and system CPU, peak RSS, for each
# build given, alone (NTH_CPUMGR=off), under a cpumgr daemon of its own
# (private segment name) and with NTH_TRACE set.
#   bench/vps_scale.sh BUILD [BUILD2 ...]     (VPS="64 256 1024 4096")
# BUILD is a configured and built tree (build/, or another commit's; no
# spaces in its path); the rows of several builds alternate, so they share
# the machine's load. Build i is numbered in the order given.
# Needs /usr/bin/time (Debian: time).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BUILD [BUILD2 ...]" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
builds=
i=0
for b in "$@"; do
    b=$(cd "$b" && pwd)
    builds="$builds $b"
    i=$((i + 1))
    gcc -O2 -I"$top/include" "$top/bench/vps_tiny.c" -L"$b/.libs" -lnth -Wl,-rpath,"$b/.libs" -o "$tmp/tiny$i"
    "$b/cpumgr/cpumgr" run --foreground --name "/nth-vps-scale-$$-$i" >"$tmp/daemon$i" 2>&1 &
    pids="$pids $!"
    k=0
    until "$b/cpumgr/cpumgr" status --name "/nth-vps-scale-$$-$i" >/dev/null 2>&1; do
        k=$((k + 1)); [ $k -le 300 ] || { echo "daemon of $b not ready" >&2; exit 1; }
        sleep 0.1
    done
done
printf '%-6s %-7s %6s %8s %8s %8s %10s\n' build mode vps wall_s user_s sys_s maxrss_KiB
for n in ${VPS:-64 256 1024 4096}; do
    for mode in alone daemon trace; do
        i=0
        for b in $builds; do
            i=$((i + 1))
            case $mode in
                alone) e="NTH_CPUMGR=off" ;;
                daemon) e="NTH_CPUMGR=/nth-vps-scale-$$-$i" ;;
                trace) e="NTH_CPUMGR=off NTH_TRACE=$tmp/t$i.json" ;;
            esac
            env $e NTH_VPS="$n" /usr/bin/time -o "$tmp/time" -f '%e %U %S %M' "$tmp/tiny$i" >/dev/null 2>"$tmp/err" ||
                { echo "build $i ($b), $mode, $n VPs failed: $(cat "$tmp/err")" >&2; exit 1; }
            read -r wall user sys rss <"$tmp/time"
            printf '%-6s %-7s %6s %8s %8s %8s %10s\n' "$i" "$mode" "$n" "$wall" "$user" "$sys" "$rss"
        done
    done
done
