#!/usr/bin/env bash
# make install: the speechgraph binary, the plugin ABI header with its pkg-config file, the example plugins and
# the RealtimeSanitizer runtime `plugin check` preloads, under PREFIX (default /usr/local).
#   scripts/install.sh [--dev-only] PREFIX [BUILD_DIR]
# --dev-only: the header and the pkg-config file alone (what building a plugin needs).
set -euo pipefail
cd "$(dirname "$0")/.."
dev_only=0
if [ "${1:-}" = "--dev-only" ]; then dev_only=1; shift; fi
prefix=${1:?usage: install.sh [--dev-only] PREFIX [BUILD_DIR]}
build=${2:-.build/release}
version=$(sed -n 's/^#define SG_ABI_MAJOR \([0-9]*\)/\1/p' Sources/CSpeechGraphPlugin/include/speechgraph/plugin.h).$(sed -n 's/^#define SG_ABI_MINOR \([0-9]*\)/\1/p' Sources/CSpeechGraphPlugin/include/speechgraph/plugin.h)

install -d "$prefix/include/speechgraph" "$prefix/lib/pkgconfig"
install -m 644 Sources/CSpeechGraphPlugin/include/speechgraph/plugin.h "$prefix/include/speechgraph/plugin.h"
cat > "$prefix/lib/pkgconfig/speechgraph-plugin.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib
plugindir=\${libdir}/speechgraph/plugins

Name: speechgraph-plugin
Description: The speechgraph plugin ABI (a C header): build node types that speechgraph loads at run time
Version: $version
Cflags: -I\${includedir}
PC
[ "$dev_only" = 1 ] && exit 0

install -d "$prefix/bin" "$prefix/lib/speechgraph/plugins"
install -m 755 "$build/speechgraph" "$prefix/bin/speechgraph"
for p in gate match; do install -m 755 "$build/libspeechgraph-$p.so" "$prefix/lib/speechgraph/plugins/"; done
if [ -f "$build/rtsan/libspeechgraph-rtsan.so" ]; then
  install -m 755 "$build/rtsan/libspeechgraph-rtsan.so" "$prefix/lib/speechgraph/libspeechgraph-rtsan.so"
fi
echo "installed speechgraph, speechgraph/plugin.h (pkg-config speechgraph-plugin) and the example plugins in $prefix" >&2
