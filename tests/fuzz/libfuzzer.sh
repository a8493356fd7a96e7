#!/bin/sh
# tests/fuzz/libfuzzer.sh conf|varlink [SECONDS] - fuzz a target with clang's
# libFuzzer (ASan+UBSan), starting from its corpus; new inputs that find new
# paths land in the corpus folder (review and commit the useful ones).
# Needs clang and a configured tree (config.h in $top_builddir, default the
# source tree).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${top_builddir:-$top}
target=${1:?usage: libfuzzer.sh conf|varlink [SECONDS]}
secs=${2:-60}
case "$target" in
conf) srcs="util log res conf conf_value" ;;
varlink) srcs="util log varlink" ;;
*) echo "unknown target $target" >&2; exit 64 ;;
esac
[ -f "$build/config.h" ] || { echo "no config.h in $build: run configure first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
files=
for s in $srcs; do files="$files $top/src/cgpoold/$s.c"; done
# shellcheck disable=SC2086
clang -g -O1 -fsanitize=fuzzer,address,undefined -include "$build/config.h" -I"$build" -I"$top/src/cgpoold" \
	-I"$top/tests/fuzz" -DSYSCONFDIR='"/etc"' -DRUNSTATEDIR='"/run"' \
	$(pkg-config --cflags inih jansson libsystemd) "$top/tests/fuzz/fuzz_$target.c" $files \
	-o "$out/fuzz" $(pkg-config --libs inih jansson libsystemd) -lev
"$out/fuzz" -max_total_time="$secs" -max_len=65536 "$top/tests/fuzz/corpus/$target"
