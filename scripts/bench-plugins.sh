#!/usr/bin/env bash
# make bench, plugins (issue 12): the gate's cost per block as a plugin against the same source built in
# (speechgraph-bench plugin-gate), and what 20 cached plugins add to `speechgraph nodes` (median of 15
# alternating runs with and without them on the path; the cache is warm: the first run validated them).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

swift build -c release --product speechgraph-bench >&2
.build/release/speechgraph-bench plugin-gate .build/release/libspeechgraph-gate.so

bash scripts/install.sh --dev-only "$work/prefix" 2> /dev/null
mkdir -p "$work/plugins" "$work/none"
for i in $(seq -w 1 20); do
  clang -shared -fPIC -O2 $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags speechgraph-plugin) \
    -DFIXTURE_TYPE="\"bench.pass$i\"" Tests/PluginFixtures/fixture.c -o "$work/plugins/pass$i.so"
done
export XDG_CACHE_HOME=$work/cache HOME=$work/home
/usr/bin/time -f "%e" -o "$work/first" "$BIN" nodes --plugin-path "$work/plugins" > "$work/list" 2> /dev/null
first=$(cat "$work/first")
grep -c "bench.pass" "$work/list" > "$work/count"
with=() without=()
for i in $(seq 15); do
  a=$(date +%s%N); "$BIN" nodes --plugin-path "$work/plugins" > /dev/null; b=$(date +%s%N)
  "$BIN" nodes --plugin-path "$work/none" > /dev/null; c=$(date +%s%N)
  with+=($(( (b - a) / 1000 ))) without+=($(( (c - b) / 1000 )))
done
python3 - "${with[*]}" "${without[*]}" "$(cat "$work/count")" "$first" <<'PY'
import statistics, sys
w = [int(x) / 1000 for x in sys.argv[1].split()]
n = [int(x) / 1000 for x in sys.argv[2].split()]
print(f"plugins_listed {sys.argv[3]} types")
print(f"nodes_first_scan_20_plugins {float(sys.argv[4]) * 1000:.0f} ms")
print(f"nodes_with_20_cached_plugins {statistics.median(w):.1f} ms")
print(f"nodes_without_plugins {statistics.median(n):.1f} ms")
print(f"nodes_20_cached_plugins_add {statistics.median([a - b for a, b in zip(w, n)]):.1f} ms")
PY
