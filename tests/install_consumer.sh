#!/usr/bin/env bash
# Installs the build into a temporary prefix, moves the prefix (an install must
# not depend on where it was made), then builds tests/consumer against it as a
# user would: with find_package(mxattn) for the shared and the static library,
# and with pkg-config for the shared library and (--static) libmxattn.a; each
# program runs the calls that need no GPU.
#   install_consumer.sh BUILD_DIR SOURCE_DIR VERSION C_COMPILER
set -euo pipefail
build=$1 src=$2 version=$3 cc=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_consumer: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/made" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
mv "$tmp/made" "$tmp/prefix"
p=$tmp/prefix
pc=$(cd "$p" && find . -name mxattn.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "the install lacks mxattn.pc"
libdir=$(dirname "$(dirname "${pc#./}")")   # lib, or lib/<multiarch> for a /usr prefix

for f in include/mxattn.h "$libdir/libmxattn.so.$version" "$libdir/libmxattn.a" bin/mxattn \
         "$libdir/pkgconfig/mxattn.pc" "$libdir/cmake/mxattn/mxattnConfig.cmake" \
         "$libdir/cmake/mxattn/mxattnConfigVersion.cmake" share/mxattn/tuned/nvidia-h200.db \
         share/doc/mxattn/examples/quickstart.c; do
  [ -f "$p/$f" ] || fail "the install lacks $f"
done
[ "$(readlink "$p/$libdir/libmxattn.so.${version%%.*}")" = "libmxattn.so.$version" ] || fail "libmxattn.so.${version%%.*} is not a link to libmxattn.so.$version"
[ "$(readlink "$p/$libdir/libmxattn.so")" = "libmxattn.so.${version%%.*}" ] || fail "libmxattn.so is not a link to the SONAME"
soname=$(readelf -d "$p/$libdir/libmxattn.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libmxattn.so.${version%%.*}" ] || fail "SONAME is '$soname', not libmxattn.so.${version%%.*}"
# Lua and SQLite come from the system: a leftover RPATH would point at the build folder.
if readelf -d "$p/$libdir/libmxattn.so.$version" | grep -qE '\((RPATH|RUNPATH)\)'; then
  [ -f "$p/$libdir/liblua5.4.so.0" ] || fail "the installed library has an RPATH but nothing beside it: $(readelf -d "$p/$libdir/libmxattn.so.$version" | grep -E 'RPATH|RUNPATH')"
fi
[ "$("$p/bin/mxattn" --version)" = "mxattn $version" ] || fail "the installed mxattn does not say 'mxattn $version'"
# The shipped tuning results import with the documented command, every row taken.
for db in "$p"/share/mxattn/tuned/*.db; do
  out=$("$p/bin/mxattn" db import "$db" --db "$tmp/user.db") || fail "mxattn db import $db failed"
  [[ $out =~ :\ ([0-9]+)\ tuning\ results\ read,\ ([0-9]+)\ taken ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] &&
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || fail "importing $db: $out"
  rm -f "$tmp/user.db"
done
# --shipped finds the same files from where the program lies, in the moved prefix.
out=$("$p/bin/mxattn" db import --shipped --db "$tmp/user.db") || fail "mxattn db import --shipped failed: $out"
[ "$(grep -c '^imported .*: [1-9][0-9]* tuning results read' <<<"$out")" = "$(ls "$p"/share/mxattn/tuned/*.db | wc -l)" ] ||
  fail "mxattn db import --shipped did not take every shipped file: $out"
# A program with nothing installed beside it says so, and fails.
if out=$("$build/mxattn" db import --shipped --db "$tmp/user.db" 2>&1); then fail "--shipped in a build tree succeeded: $out"; fi
[[ $out == *"no shipped tuning results"* ]] || fail "--shipped in a build tree: $out"

needs_libmxattn() { readelf -d "$1" | grep -q 'NEEDED.*libmxattn\.so'; }
run() {  # run NAME PROGRAM
  local out
  out=$("$2" "$version") || fail "$1: the consumer failed"
  case $out in "consumer ok: mxattn $version,"*) ;; *) fail "$1: unexpected output: $out" ;; esac
  echo "$1: $out"
}

# find_package(mxattn VERSION EXACT)
cmake -S "$src/tests/consumer" -B "$tmp/cmake" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$p" \
      -DMXATTN_EXPECT_VERSION="$version" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "find_package(mxattn) failed"; }
cmake --build "$tmp/cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the consumer with CMake failed"; }
needs_libmxattn "$tmp/cmake/consumer_shared" || fail "consumer_shared does not link libmxattn.so"
needs_libmxattn "$tmp/cmake/consumer_static" && fail "consumer_static links libmxattn.so, not libmxattn.a"
run "cmake, mxattn::mxattn" "$tmp/cmake/consumer_shared"
run "cmake, mxattn::mxattn_static" "$tmp/cmake/consumer_static"

# pkg-config, with the file's own ${pcfiledir} finding the moved prefix.
export PKG_CONFIG_PATH=$p/$libdir/pkgconfig
[ "$(pkg-config --modversion mxattn)" = "$version" ] || fail "pkg-config says version $(pkg-config --modversion mxattn)"
pc_libdir=$(pkg-config --variable=libdir mxattn)
[ "$(cd "$pc_libdir" && pwd -P)" = "$(cd "$p/$libdir" && pwd -P)" ] || fail "mxattn.pc's libdir $pc_libdir is not the prefix's"
# shellcheck disable=SC2046
"$cc" "$src/tests/consumer/main.c" -o "$tmp/pc_shared" $(pkg-config --cflags --libs mxattn) -Wl,-rpath,"$pc_libdir"
needs_libmxattn "$tmp/pc_shared" || fail "pc_shared does not link libmxattn.so"
run "pkg-config" "$tmp/pc_shared"
# -l:libmxattn.a picks the archive over the .so beside it; Libs.private must
# then carry everything it needs, or this link fails with undefined symbols.
# The whole archive is linked, so that a dependency of any object (libsodium's
# of the kernel signatures, which this small program does not call) counts.
# shellcheck disable=SC2046
"$cc" "$src/tests/consumer/main.c" -o "$tmp/pc_static" \
      $(pkg-config --cflags --static --libs mxattn |
        sed 's/-lmxattn\b/-Wl,--whole-archive -l:libmxattn.a -Wl,--no-whole-archive/')
needs_libmxattn "$tmp/pc_static" && fail "pc_static links libmxattn.so, not libmxattn.a"
run "pkg-config --static" "$tmp/pc_static"
echo "install_consumer: ok"
