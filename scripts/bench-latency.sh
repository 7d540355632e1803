#!/usr/bin/env bash
# Issue 4's figures, 'name value unit' a line:
# - latency on long_clean.wav played with --realtime through vad -> recognizer (streaming), with the
#   recognizer's default results preset (progressive: latency_*) and with results: fast
#   (latency_fast_*): from each utterance's true onset to its first volatile result, and from its true
#   end to its final result; p50 and p95; true onset/end taken both from segments.tsv (the recordings'
#   edges, with their own leading and trailing silence: latency_*) and from the labelled speech inside
#   them (latency_speech_*). The targets (issue 4): end to final p50 <= 350 ms and p95 <= 600 ms, onset
#   to first volatile p50 <= 300 ms. With the whisper engine too (latency_whisper_*; issue 54's targets: end to final
#   p50 <= 700 ms, p95 <= 1200 ms, onset to first volatile <= 300 ms). The jsonl sink's "latency" field gives, for each line, the seconds from
#   the end of the audio it describes to when it was written; with the result's range end that gives the
#   wall time of each result on the audio clock.
# - memory over a 60 minute run (long_clean looped 24 times, not real time): RSS growth after the first
#   minute, in MB. Skipped when BENCH_SOAK=0.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
LONG=$SHARED/corpus/long/long_clean.wav
SEGMENTS=$SHARED/corpus/long/long_clean.segments.tsv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# whisper: PocketSphinx's volatile results, Whisper's final ones (docs/whisper.md): latency_whisper_*.
# live: the shipped live graph's recognizer (graphs/live.graph: the final pass, 3 phases), latency_live_*; issue 54's
# targets: onset to first volatile p50 <= 300 ms, p95 <= 600 ms (the final pass of one utterance decodes on a queue
# of its own: the next one's volatile results do not wait for it).
for preset in ${LATENCY_PRESETS:-progressive fast whisper live}; do
params="results: $preset"
[ "$preset" = whisper ] && params="engine: whisper, model: \"tiny.en\""
[ "$preset" = live ] && params="final-pass: true, phases: 3"
cat > "$work/latency.graph" <<G
node src = file.input { path: "$LONG", block: 160 }
node vad = vad
node asr = recognizer { mode: streaming, $params }
node log = jsonl { latency: true }
src -> vad -> asr -> log
vad.events -> asr.control
vad.events -> log
G
echo "bench: latency ($preset results): long_clean.wav in real time (148 s)" >&2
"$BIN" run --realtime "$work/latency.graph" > "$work/latency.jsonl"
prefix=""
[ "$preset" = progressive ] || prefix="${preset}_"
python3 scripts/latency-figures.py "$work/latency.jsonl" "$SEGMENTS" "$SHARED/corpus/long/long.vad-labels.tsv" "$prefix"
done

if [ "${BENCH_SOAK:-1}" != 0 ]; then
  cat > "$work/soak.graph" <<G
node src = file.input { path: "$LONG", loop: 24 }
node vad = vad
node asr = recognizer { mode: streaming }
node log = jsonl { path: "/dev/null" }
src -> vad -> asr -> log
vad.events -> asr.control
G
  echo "bench: memory: 60 minutes of audio (long_clean looped 24 times), as fast as the CPU allows" >&2
  "$BIN" run "$work/soak.graph" > /dev/null &
  pid=$!
  start=$(date +%s.%N)
  : > "$work/rss"
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "$(python3 -c "import time; print(time.time() - $start)") $rss" >> "$work/rss"
    sleep 2
  done
  wait "$pid"
  python3 - "$work/rss" <<'PY'
import sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
after = [kb for t, kb in rows if t >= 60]
base = next((kb for t, kb in rows if t >= 60), rows[-1][1])
print(f"soak_60min_wall_time {rows[-1][0]:.0f} s")
print(f"soak_rss_at_1min {base / 1024:.1f} MB")
print(f"soak_rss_max {max(kb for _, kb in rows) / 1024:.1f} MB")
print(f"soak_rss_growth_after_1min {(max(after) - base) / 1024 if after else 0:.1f} MB")
PY
fi
