#!/usr/bin/env bash
# The RealtimeSanitizer runtime as a shared library, for `speechgraph plugin check` to preload into the child
# that runs a plugin built with -fsanitize=realtime. The Swift toolchain's clang ships the runtime only as a
# static archive (for executables); this links the whole archive into OUT.
#   scripts/build-rtsan.sh OUT
set -euo pipefail
out=${1:?usage: build-rtsan.sh OUT}
resource=$(clang -print-resource-dir)
archive=
for candidate in "$resource/lib/linux/libclang_rt.rtsan-x86_64.a" "$resource/lib/x86_64-unknown-linux-gnu/libclang_rt.rtsan.a"; do
  if [ -f "$candidate" ]; then archive=$candidate; break; fi
done
if [ -z "$archive" ]; then
  echo "build-rtsan: no RealtimeSanitizer runtime under $resource (clang 20 or newer has it)" >&2
  exit 1
fi
if [ -f "$out" ] && [ "$out" -nt "$archive" ]; then exit 0; fi
mkdir -p "$(dirname "$out")"
clang -shared -o "$out" -Wl,--whole-archive "$archive" -Wl,--no-whole-archive -lpthread -ldl -lrt -lm -lstdc++
