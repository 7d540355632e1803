#!/usr/bin/env bash
# The live-path figures of `make bench`, one 'name value unit' a line:
# - long_clean.wav (148 s) played through a private JACK dummy server at 48 kHz into jack.input,
#   through vad -> recognizer (streaming), against the same chain offline on the same audio;
# - the process callback's duration (p50, p99, max, measured inside the callback) at periods of
#   64 and 256 frames, with 1 and 4 recognizer chains; overruns and xruns over each run.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
LONG=$SHARED/corpus/long/long_clean.wav
SHORT_SECONDS=${BENCH_JACK_SECONDS:-20}
work=$(mktemp -d)
jackd_pid=
stop_server() {
  [ -n "$jackd_pid" ] || return 0
  kill -TERM "$jackd_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$jackd_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$jackd_pid" 2>/dev/null || true
  jackd_pid=
}
trap 'stop_server; rm -rf "$work"' EXIT

start_server() { # period
  stop_server
  local name=speechgraph-bench-$$
  setpriv --pdeathsig KILL jackd -n "$name" --no-realtime -d dummy -r 48000 -p "$1" >/dev/null 2>&1 &
  jackd_pid=$!
  for _ in $(seq 200); do jack_lsp -s "$name" >/dev/null 2>&1 && break; sleep 0.02; done
  export JACK_DEFAULT_SERVER=$name
}

graph() { # chains audio -> file
  local chains=$1 audio=$2 out=$3
  {
    echo "node player = file.input { path: \"$audio\", realtime: true }"
    echo "node speak = jack.output { port: \"play\", connect: \"bench:m*_1\" }"
    echo "player -> speak"
    for i in $(seq "$chains"); do
      echo "node m$i = jack.input { port: \"m$i\" }"
      echo "node vad$i = vad"
      echo "node asr$i = recognizer { mode: streaming }"
      echo "node log$i = jsonl { path: \"$work/chain$i.jsonl\" }"
      echo "m$i -> vad$i -> asr$i -> log$i"
      echo "vad$i.events -> asr$i.control"
      echo "m$i.events -> log$i"
    done
  } > "$out"
}

# stats line -> figures with a prefix
figures() { # prefix statsline
  python3 - "$1" "$2" <<'PY'
import re, sys
prefix, line = sys.argv[1], sys.argv[2]
m = re.search(r"overrun_frames (\d+), xruns (\d+), underruns (\d+)", line)
c = re.search(r"callback_us p50 ([\d.]+) p99 ([\d.]+) max ([\d.]+) over (\d+) callbacks", line)
p = re.search(r"period (\d+) frames", line)
if c:
    period_us = int(p.group(1)) / 48000 * 1e6
    print(f"{prefix}_callback_p50 {c.group(1)} us")
    print(f"{prefix}_callback_p99 {c.group(2)} us")
    print(f"{prefix}_callback_max {c.group(3)} us")
    print(f"{prefix}_callback_p99_of_period {100 * float(c.group(2)) / period_us:.3f} %")
if m:
    print(f"{prefix}_overrun_frames {m.group(1)} frames")
    print(f"{prefix}_xruns {m.group(2)} xruns")
PY
}

run_live() { # chains period seconds audio prefix
  local chains=$1 period=$2 seconds=$3 audio=$4 prefix=$5
  start_server "$period"
  graph "$chains" "$audio" "$work/g.graph"
  echo "bench: live: $chains chain(s), period $period, ${seconds} s" >&2
  "$BIN" run "$work/g.graph" --name bench --stats --duration "$seconds" > /dev/null 2> "$work/stats" || true
  figures "$prefix" "$(grep '^jack:' "$work/stats" | tail -1)"
  stop_server
}

# WER through JACK on long_clean (148 s in real time), against the same recognizer offline.
long_seconds=$(soxi -D "$LONG")
run_live 1 256 "$(python3 -c "print($long_seconds + 2)")" "$LONG" jack_long_clean_1chain_p256
python3 - "$work/chain1.jsonl" > "$work/jack.tsv" <<'PY'
import json, sys
texts = [json.loads(l)["text"] for l in open(sys.argv[1]) if '"type":"result"' in l and '"isFinal":true' in l]
print("long_clean\t" + " ".join(texts))
PY
# The same chain offline: file -> vad -> recognizer, as fast as the CPU allows.
cat > "$work/offline.graph" <<G
node src = file.input { path: "$LONG" }
node vad = vad
node asr = recognizer { mode: streaming }
node log = jsonl { path: "$work/offline.jsonl" }
src -> vad -> asr -> log
vad.events -> asr.control
G
"$BIN" run "$work/offline.graph"
python3 - "$work/offline.jsonl" > "$work/offline.tsv" <<'PY'
import json, sys
texts = [json.loads(l)["text"] for l in open(sys.argv[1]) if '"type":"result"' in l and '"isFinal":true' in l]
print("long_clean\t" + " ".join(texts))
PY
printf "long_clean\t%s\n" "$(cat "$SHARED/corpus/long/long_clean.txt")" > "$work/ref.tsv"
jw=$(python3 "$SHARED/tools/wer.py" "$work/ref.tsv" "$work/jack.tsv" | sed -E 's/^WER ([0-9.]+)%.*/\1/')
ow=$(python3 "$SHARED/tools/wer.py" "$work/ref.tsv" "$work/offline.tsv" | sed -E 's/^WER ([0-9.]+)%.*/\1/')
echo "jack_long_clean_wer $jw %"
echo "offline_long_clean_wer $ow %"
python3 -c "print(f'jack_minus_offline_wer {$jw - $ow:.2f} points')"

for period in 64 256; do
  for chains in 1 4; do
    run_live "$chains" "$period" "$SHORT_SECONDS" "$LONG" "jack_p${period}_${chains}chain"
  done
done
