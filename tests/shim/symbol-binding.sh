#!/usr/bin/env bash
# symbol-binding.sh -- the shim's symbol version plan holds:
#  1. libnth-pthread.map and symver.h are what gen-symver.sh makes of
#     glibc-symbols.txt (not stale);
#  2. this machine's libc has no (symbol, version) in the shim's scope that
#     glibc-symbols.txt lacks (a newer glibc adds tags: the shim must too);
#  3. the real programs' versioned references are all in the list;
#  4. with the library preloaded, every (symbol, version) reference of a
#     probe binary binds to it (LD_BIND_NOW=1 LD_DEBUG=bindings): first for
#     a stub library built with the same map and SHIM_EXPORT, and, once the
#     build makes it, for libnth-pthread.so itself, also for the real
#     programs' own references.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
list=$top_srcdir/pthread-shim/glibc-symbols.txt
libc=$(ldd "$top_builddir/tests/shim/symver-probe" | awk '/libc\.so\.6/ {print $3}')
tmp=$(mktemp -d /tmp/nth-symbind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

grep -v '^#' "$list" | awk 'NF {print $1, $2}' | sort -u >"$tmp/want"
awk '{print $1}' "$tmp/want" | sort -u >"$tmp/syms"

# 1. generated files up to date
"$top_srcdir/pthread-shim/gen-symver.sh" "$top_srcdir/pthread-shim" "$tmp"
for f in libnth-pthread.map symver.h; do
  if cmp -s "$tmp/$f" "$top_srcdir/pthread-shim/$f"; then ok "$f is up to date"
  else bad "$f is stale: run pthread-shim/gen-symver.sh"; fi
done

# 2. libc's tags in scope are all listed
# objdump -T lines: address, flags, section, size, version, name
objdump -T "$libc" | awk 'NF >= 5 && $0 ~ /^[0-9a-f]+ / && $0 !~ /\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); print $NF, v}' |
  grep -v ' GLIBC_PRIVATE$' | sort -u >"$tmp/libc"
awk 'NR == FNR {s[$1] = 1; next} ($1 in s) || $1 ~ /^(pthread_|__pthread_|_pthread_|sem_)/' \
  "$tmp/syms" "$tmp/libc" | grep -v '^pthread_atfork ' >"$tmp/libc-scope"
missing=$(comm -23 "$tmp/libc-scope" "$tmp/want")
if [ "$(wc -l <"$tmp/libc-scope")" -lt 200 ]; then bad "found only $(wc -l <"$tmp/libc-scope") pthread versions in $libc: objdump output not understood"
elif [ -z "$missing" ]; then ok "every in-scope version of $libc is listed ($(wc -l <"$tmp/libc-scope") pairs)"
else bad "$libc has versions glibc-symbols.txt lacks:"; echo "$missing" | sed 's/^/  | /'; fi

# 3. the real programs' references (and their libraries') are listed
for prog in pigz xz zstd sysbench; do
  p=$(command -v "$prog") || { echo "note: $prog not installed: its references not checked"; continue; }
  for obj in "$p" $(ldd "$p" | awk '$3 ~ /^\// {print $3}' | grep -v -e libc.so -e ld-linux); do
    objdump -T "$obj" | awk 'NF >= 5 && /\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); print $NF, v}'
  done | sort -u | awk 'NR == FNR {s[$1] = 1; next} $1 in s' "$tmp/syms" - >"$tmp/$prog.refs"
  extra=$(comm -23 "$tmp/$prog.refs" "$tmp/want")
  if [ ! -s "$tmp/$prog.refs" ]; then bad "$prog: no thread references found: objdump output not understood"
  elif [ -z "$extra" ]; then ok "$prog: its $(wc -l <"$tmp/$prog.refs") references in scope are listed ($(awk '{print $2}' "$tmp/$prog.refs" | sort -uV | tr '\n' ' '))"
  else bad "$prog references versions not listed:"; echo "$extra" | sed 's/^/  | /'; fi
done

# 4. dynamic binding: every reference binds to the preloaded library
bindings() {   # bindings LIB PROG [ARGS]: "sym tag" bound to LIB
  local lib=$1; shift
  # (timeout itself must not run under the preloaded library)
  timeout -s KILL 30 env LD_PRELOAD="$lib" LD_BIND_NOW=1 LD_DEBUG=bindings "$@" 2>&1 >/dev/null </dev/null |
    awk -v lib="$(basename "$lib")" '/binding file/ && index($0, "to " ) {
        to = $0; sub(/.* to /, "", to); sub(/ \[.*/, "", to); n = split(to, parts, "/")
        if (parts[n] != lib) next
        sym = $0; sub(/.*symbol `/, "", sym); sub(/'\''.*/, "", sym)
        tag = $0; sub(/.*\[/, "", tag); sub(/\].*/, "", tag)
        print sym, tag }' | sort -u
}
check_probe() {   # check_probe LIB LABEL
  bindings "$1" "$top_builddir/tests/shim/symver-probe" >"$tmp/bound"
  local unbound
  unbound=$(comm -23 "$tmp/want" "$tmp/bound")
  if [ -z "$unbound" ]; then ok "$2: all $(wc -l <"$tmp/want") (symbol, version) references bind to it"
  else bad "$2: references that did not bind to it:"; echo "$unbound" | sed 's/^/  | /'; fi
}
check_probe "$top_builddir/tests/shim/.libs/libsymver-stub.so" "stub library built with the map"

if [ "${NTH_SHIM_BUILT:-no}" = yes ]; then
  shim=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
  [ -f "$shim" ] || { bad "the build makes the shim but $shim is missing"; exit 1; }
  if ldd "$shim" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
    echo "note: $shim is a sanitizer build: binding checked with the stub only"
    exit $fail
  fi
  check_probe "$shim" "libnth-pthread.so"
  for prog in pigz xz zstd sysbench; do
    p=$(command -v "$prog") || continue
    [ -s "$tmp/$prog.refs" ] || continue
    bindings "$shim" "$p" --version >"$tmp/$prog.bound"
    unbound=$(comm -23 "$tmp/$prog.refs" "$tmp/$prog.bound")
    if [ -z "$unbound" ]; then ok "$prog: its references bind to libnth-pthread.so"
    else bad "$prog: references not bound to the shim:"; echo "$unbound" | sed 's/^/  | /'; fi
  done
else
  echo "note: libnth-pthread.so is not part of the build yet: checked the stub only"
fi
exit $fail
