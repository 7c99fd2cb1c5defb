#!/usr/bin/env bash
# Builds the SDK's static and shared libraries, compiles the C ABI test against each with a
# strict C compiler (and the header as C++), and runs them. Usage: tests/c/run.sh [FRAMES]
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
frames=${1:-200}
cc=${CC:-cc}
cxx=${CXX:-c++}
lib=${CARGO_TARGET_DIR:-$root/target}/release
out=$lib/c-abi
mkdir -p "$out"

cargo build -p framelab-probe --release

cflags=(-Wall -Wextra -Werror -std=c11 -O2 -I probe/include)
# What a Rust static library needs from the system (`--print native-static-libs`).
static_libs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
shared=(-L"$lib" -lframelab_probe -Wl,-rpath,"$lib" -lpthread)

set -x
"$cc" "${cflags[@]}" tests/c/abi_test.c "$lib/libframelab_probe.a" "${static_libs[@]}" -o "$out/abi_test-static"
"$cc" "${cflags[@]}" tests/c/abi_test.c "${shared[@]}" -o "$out/abi_test-shared"
"$cc" "${cflags[@]}" examples/c/pipeline.c "${shared[@]}" -o "$out/pipeline"
"$cxx" -Wall -Wextra -Werror -Wpedantic -std=c++11 -O2 -I probe/include tests/c/raii_test.cpp \
    "$lib/libframelab_probe.a" "${static_libs[@]}" -o "$out/raii_test"
# The header declares exactly what the shared library exports.
diff <(nm -D --defined-only "$lib/libframelab_probe.so" | awk '{print $3}' | sort) \
    <(grep -o '^[a-z].* fl_[a-z_]*(' probe/include/framelab.h | grep -o 'fl_[a-z_]*(' | tr -d '(' | sort)
# The header alone, in older and newer language standards.
for std in c99 c11 c17; do
    echo '#include "framelab.h"' | "$cc" -x c -std=$std -Wall -Wextra -Wpedantic -Werror -I probe/include -fsyntax-only -
done
for std in c++98 c++11 c++17; do
    echo '#include "framelab.h"' | "$cxx" -x c++ -std=$std -Wall -Wextra -Wpedantic -Werror -I probe/include -fsyntax-only -
done
# (no `grep -q`: it exits at the first match and pipefail then sees ldd's SIGPIPE)
ldd "$out/abi_test-shared" | grep libframelab_probe.so >/dev/null
! ldd "$out/abi_test-static" | grep libframelab_probe.so >/dev/null

env -u FRAMELAB_SESSION "$out/abi_test-static" "$frames"
env -u FRAMELAB_SESSION "$out/abi_test-shared" "$frames"
env -u FRAMELAB_SESSION "$out/raii_test"
env -u FRAMELAB_SESSION "$out/pipeline" 5
