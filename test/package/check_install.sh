#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a client two ways: through
# find_package(xccl) and through pkg-config. Usage: check_install.sh <build-dir> <source-dir>
set -euo pipefail
build=$1
source=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libxccl.so.0 2>/dev/null | head -1)
[ -n "$lib" ] || { echo "libxccl.so.0 (the SONAME link) was not installed"; exit 1; }
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ "$soname" = "libxccl.so.0" ] || { echo "SONAME is '$soname', not libxccl.so.0"; exit 1; }
[ -f "$prefix/include/xccl.h" ] || { echo "xccl.h not installed"; exit 1; }
cmake -S "$source/test/package" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
LD_LIBRARY_PATH="$(dirname "$lib")" "$prefix/consumer/consumer"
pcdir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/xccl.pc)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs xccl)
cc -std=c99 "$source/test/c_api/c99_client.c" $flags -o "$prefix/pc_client"
LD_LIBRARY_PATH="$(dirname "$lib")" "$prefix/pc_client"
echo "install check: OK ($soname, find_package and pkg-config)"
