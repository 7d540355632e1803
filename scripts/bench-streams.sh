#!/usr/bin/env bash
# Issue 10's load figures, 'name value unit' a line, from speechgraph-bench (Sources/speechgraph-bench):
# - the CPU of one real-time stream (long_clean.wav pushed in 10 ms blocks on the wall clock through
#   push.input -> vad -> recognizer { mode: streaming }, progressive results) against the same graph fed
#   as fast as it takes the audio (target: within 10%): realtime_stream_cpu, offline_stream_cpu,
#   realtime_vs_offline_cpu_ratio; each a fresh process, the real-time run against the mean of an offline run
#   just before and one just after it (the machine's speed drifts), the median of BENCH_CPU_RUNS runs (default 3);
# - how many such streams, one graph each, one process, this machine holds in real time with the
#   latency from the push of the audio at a final result's end to that result at p95 <= 400 ms
#   (target: 8 or more): streams_N_end_to_final_p50/p95 for N = 1, 2, 4, 6, ... up to BENCH_STREAM_MAX,
#   then realtime_streams_at_p95_400ms, and realtime_streams_at_p95_1_stream_plus_100ms: the most streams
#   whose p95 is at most 100 ms above one stream's (what the load adds; one stream alone takes about 330 ms,
#   most of it the vad's pause). The sweep stops at the first N past that, or that drops audio. The same
#   with final-pass: true and graphs/live.graph's phases (the shipped live graph's settings), prefixed final_pass_.
# Every stream plays the whole file in real time (148 s) unless BENCH_STREAM_SECONDS cuts it, so the
# sweep takes about (steps + 2) x 2.5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
if [ -z "${BENCH_BIN:-}" ]; then
  BENCH_BIN=.build/release/speechgraph-bench
  swift build -c release --product speechgraph-bench >&2
fi
LONG=$SHARED/corpus/long/long_clean.wav
if [ ! -f "$LONG" ]; then
  echo "bench: $LONG not found (set SHARED to the shared folder)" >&2
  exit 1
fi
seconds=()
if [ -n "${BENCH_STREAM_SECONDS:-}" ]; then seconds=(--seconds "$BENCH_STREAM_SECONDS"); fi

"$BENCH_BIN" realtime-cpu "$LONG" "${seconds[@]}" --runs "${BENCH_CPU_RUNS:-3}"
# What an idle spell costs this machine, apart from speechgraph (no peer: a calibration): the same fixed work
# once every 100 ms against back to back, on the thread's CPU clock (docs/architecture.md).
"$BENCH_BIN" idle-cost

# The same real-time stream pinned to one CPU with a spinner at nice 19 on that CPU, which takes almost no
# time from the stream but keeps the CPU from going idle between its batches: on a virtual machine the same
# work costs more CPU time after each idle spell (the host's power and scheduling), and this isolates that
# cost from speechgraph's (a diagnostic, not a setting: speechgraph never spins).
awake_seconds=${BENCH_STREAM_SECONDS:-60}
cpu_of() { "$@" 2>/dev/null | awk '$1 == "cpu" { print $2 }'; }
taskset -c 1 nice -n 19 sh -c 'while :; do :; done' &
spinner=$!
awake=$(cpu_of taskset -c 1 "$BENCH_BIN" child-cpu realtime "$LONG" --seconds "$awake_seconds")
kill "$spinner"
offline=$(cpu_of "$BENCH_BIN" child-cpu offline "$LONG" --seconds "$awake_seconds")
asleep=$(cpu_of taskset -c 1 "$BENCH_BIN" child-cpu realtime "$LONG" --seconds "$awake_seconds")
python3 - "$awake" "$asleep" "$offline" "$awake_seconds" <<'PY'
import sys
awake, asleep, offline, seconds = map(float, sys.argv[1:])
print(f"realtime_stream_cpu_pinned_{seconds:.0f}s {asleep:.2f} s")
print(f"realtime_stream_cpu_pinned_core_kept_awake_{seconds:.0f}s {awake:.2f} s")
print(f"offline_stream_cpu_{seconds:.0f}s {offline:.2f} s")
print(f"realtime_vs_offline_cpu_ratio_core_kept_awake {awake / offline:.3f} x")
PY
# The final-pass variant decodes each utterance as many times as graphs/live.graph's recognizer does.
phases=$(sed -nE 's/^node asr .*phases: ([0-9]+).*/\1/p' graphs/live.graph)
"$BENCH_BIN" streams "$LONG" "${seconds[@]}" --max "${BENCH_STREAM_MAX:-12}" --phases "${phases:-1}" \
  ${BENCH_STREAM_COUNTS:+--counts "$BENCH_STREAM_COUNTS"}
