#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (Fuzz/, SPEECHGRAPH_FUZZ=1 in Package.swift) with
# -sanitize=fuzzer,address over every Swift target, and runs each for FUZZ_SECONDS (default 300):
#   graph-parser  any bytes as a graph file: parsed and validated against the built-in node types;
#   audio-input   any bytes as an audio file (AudioFile: libsndfile, libmpg123) and as a WAV, MP3 or raw
#                 stream (AudioStreamReader, as `speechgraph transcribe -` reads it).
# Seeds: the shipped graphs, small WAVs of every encoding made here with sox, and Tests/Fuzz/<target>/
# (inputs kept from earlier runs). New inputs that add coverage are merged into Tests/Fuzz/<target>/, and
# the regression tests (FuzzRegressionTests) run every file there. A crash stops with its reproducer
# copied to Tests/Fuzz/<target>/ and exit status 1. Prints `fuzz_<target>_runs N runs` per target.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-300}
flags=(-c release --build-path .build/fuzz -Xswiftc -sanitize=fuzzer,address
    -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld)
for target in graph-parser audio-input; do
    echo "fuzz: building fuzz-$target" >&2
    SPEECHGRAPH_FUZZ=1 swift build "${flags[@]}" --product "fuzz-$target" 2>&1 \
        | grep -v "warning: Cannot export" | grep -E "error|Compiling|Build" >&2 || true
    test -x ".build/fuzz/release/fuzz-$target"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds-graph-parser" "$work/seeds-audio-input"
cp graphs/*.graph "$work/seeds-graph-parser/"
tone="$work/tone.wav"
sox -n -r 16000 -c 1 "$tone" synth 0.05 sine 440
for spec in "-b 8 -e unsigned" "-b 16 -e signed" "-b 24 -e signed" "-b 32 -e signed" "-b 32 -e floating-point"; do
    name=$(echo "$spec" | tr -d ' -')
    # shellcheck disable=SC2086
    sox "$tone" $spec "$work/seeds-audio-input/$name.wav"
    # shellcheck disable=SC2086
    sox "$tone" $spec -c 2 -r 8000 "$work/seeds-audio-input/${name}_stereo8k.wav"
done
sox "$tone" -t raw -e signed -b 16 "$work/seeds-audio-input/raw16.raw"
sox "$tone" "$work/seeds-audio-input/tone.flac"

status=0
for target in graph-parser audio-input; do
    kept="Tests/Fuzz/$target"
    mkdir -p "$kept" "$work/$target"
    echo "fuzz: fuzz-$target for $seconds s" >&2
    rc=0
    ASAN_OPTIONS=detect_leaks=0 timeout -s KILL $((seconds + 300)) ".build/fuzz/release/fuzz-$target" \
        -max_total_time="$seconds" -max_len=8192 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$work/crash-$target-" "$work/$target" "$work/seeds-$target" "$kept" \
        > "$work/$target.log" 2>&1 || rc=$?
    runs=$(grep -E "^stat::number_of_executed_units" "$work/$target.log" | awk '{print $2}')
    echo "fuzz_${target}_runs ${runs:-0} runs"
    if [ "$rc" != 0 ]; then
        status=1
        grep -A 30 -E "ERROR|deadly|timeout" "$work/$target.log" | head -40 >&2 || tail -40 "$work/$target.log" >&2
        for crash in "$work"/crash-"$target"-*; do
            [ -e "$crash" ] || continue
            cp "$crash" "$kept/regression-$(basename "$crash" | sed "s/crash-$target-//")"
            echo "fuzz: fuzz-$target found a crash: kept as $kept/regression-..." >&2
        done
    fi
    # Keep what added coverage (a minimal set), for the next run and the regression tests.
    ASAN_OPTIONS=detect_leaks=0 ".build/fuzz/release/fuzz-$target" -merge=1 -max_len=8192 "$kept" "$work/$target" \
        > "$work/$target-merge.log" 2>&1 || true
    echo "fuzz: $target: $(ls "$kept" | wc -l) inputs kept in $kept" >&2
done
echo "fuzz_crashes $( [ $status = 0 ] && echo 0 || echo 1 ) targets"
exit $status
