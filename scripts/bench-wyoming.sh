#!/usr/bin/env bash
# The Wyoming server (issue 15) beside the peer, ../shared/peers/wyoming_ps_server.py (Python asyncio, one
# PyPI PocketSphinx 5 decoder per connection, the transcript at audio-stop), measured in the same run with the
# same client (Tests/Peers/wyoming_client.py, PyPI's wyoming):
#   - WER of the real set sent in 20 ms chunks (as fast as the server takes them), beside `speechgraph transcribe`;
#   - p95 of the transcript's delay after audio-stop with 1, 2, 4 and 8 clients streaming real speech at real time
#     at once (each client streams the real set's files one after another, a new connection for each); 8 clients
#     BENCH_RUNS times (default 3), alternating with the peer, the median of the runs' p95s;
#   - with server-side endpointing, p95 of the delay after the labelled end of speech;
#   - the most real-time streams that keep that p95 at or under 300 ms;
#   - resident memory of the server before and after 1,000 fuzzed frames;
#   - graphs/wyoming-fast.graph (no second pass), served beside the default as the model `fast`: its WER and the
#     p95 delays with 8 clients.
set -euo pipefail
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
PY=.venv/bin/python
REAL=$SHARED/corpus/real
LONG=$SHARED/corpus/long
work=$(mktemp -d /tmp/speechgraph-bench-wyoming.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

"$PY" -c "import pocketsphinx, wyoming" 2>/dev/null || "$PY" -m pip install -q -r Tests/Peers/bench-requirements.txt >&2

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { # PORT PID
  for _ in $(seq 600); do
    kill -0 "$2" 2>/dev/null || { echo "bench-wyoming: the server on port $1 died" >&2; exit 1; }
    "$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$1" describe >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "bench-wyoming: nothing answers on port $1" >&2
  exit 1
}

# Sized for the 8 clients it is measured with: 8 decoders loaded before it listens (--decoders; the peer loads
# one per connection, as wyoming-vosk does).
ours_port=$(free_port)
"$BIN" serve --wyoming "tcp://127.0.0.1:$ours_port" --max-connections 64 --decoders 8 \
  --model fast=graphs/wyoming-fast.graph 2>"$work/ours.err" &
ours_pid=$!
pids+=("$ours_pid")
peer_port=$(free_port)
"$PY" "$SHARED/peers/wyoming_ps_server.py" "$peer_port" 2>"$work/peer.err" &
peer_pid=$!
pids+=("$peer_pid")
wait_port "$ours_port" "$ours_pid"
wait_port "$peer_port" "$peer_pid"

mapfile -t files < <(tail -n +2 "$REAL/manifest.tsv" | cut -f1 | sed "s|^|$REAL/|")
tail -n +2 "$REAL/manifest.tsv" | cut -f1,2 > "$work/ref.tsv"

# Labelled end of speech of each real file: the last VAD label inside its segment of long_clean.wav.
python3 - "$LONG/long_clean.segments.tsv" "$LONG/long.vad-labels.tsv" > "$work/ends.tsv" <<'PY'
import sys
segs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]).readlines()[1:]]
labels = [tuple(map(float, l.split()[:2])) for l in open(sys.argv[2]).readlines()[1:]]
for start, end, name, _ in segs:
    start, end = float(start), float(end)
    inside = [e for s, e in labels if s >= start - 0.05 and e <= end + 0.05]
    if inside:
        print(f"{name}\t{max(inside) - start:.3f}")
PY

tsv() { python3 -c '
import json, os, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(os.path.basename(r["file"]) + "\t" + (r["text"] or ""))' "$1"; }
wer() { python3 "$SHARED/tools/wer.py" "$work/ref.tsv" "$1" | awk '/^WER/ { sub("%", "", $2); print $2 }'; }

echo "bench: wyoming: the real set through speechgraph serve, the peer, and speechgraph transcribe" >&2
"$BIN" transcribe --format tsv "${files[@]}" 2>/dev/null | sed "s|^$REAL/||" > "$work/transcribe.tsv"
"$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$ours_port" transcribe "${files[@]}" > "$work/ours-wer.jsonl"
"$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$peer_port" transcribe "${files[@]}" > "$work/peer-wer.jsonl"
tsv "$work/ours-wer.jsonl" > "$work/ours-wer.tsv"
tsv "$work/peer-wer.jsonl" > "$work/peer-wer.tsv"
"$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$ours_port" transcribe --name fast "${files[@]}" \
  > "$work/fast-wer.jsonl"
tsv "$work/fast-wer.jsonl" > "$work/fast-wer.tsv"
echo "wyoming_wer $(wer "$work/ours-wer.tsv") %"
echo "wyoming_fast_graph_wer $(wer "$work/fast-wer.tsv") %"
echo "wyoming_peer_wer $(wer "$work/peer-wer.tsv") %"
echo "wyoming_transcribe_wer $(wer "$work/transcribe.tsv") %"

# N clients at real time, each streaming the real set's files (cycled from its own offset) for one pass of the set
# shared among them, at least 4 files each.
run_clients() { # PORT N OUT [CLIENT OPTIONS]
  local n=$2 per=$(( ${#files[@]} / $2 ))
  (( per < 4 )) && per=4
  local list=()
  for ((k = 0; k < n * per; k++)); do list+=("${files[$(( k % ${#files[@]} ))]}"); done
  "$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$1" transcribe --realtime --clients "$n" "${@:4}" "${list[@]}" \
    > "$3"
}
p95() { # FILE [eos]: p95 of latency after audio-stop, or after the labelled end of speech
  python3 - "$1" "$work/ends.tsv" "${2:-}" <<'PY'
import json, os, sys
ends = dict((l.split("\t")[0], float(l.split("\t")[1])) for l in open(sys.argv[2]))
values, errors = [], 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["error"] or r["latency"] is None:
        errors += 1
        continue
    name = os.path.basename(r["file"])
    if sys.argv[3] == "eos":
        if name in ends:
            values.append(r["arrived"] - ends[name])
    else:
        values.append(r["latency"])
values.sort()
print(f"{values[min(len(values) - 1, int(0.95 * len(values)))]:.3f}" if values and not errors else "inf")
PY
}
same_as_alone() { # FILE: whether each transcript equals the one-client, real-time transcript of the same file
  python3 - "$1" "$work/ours-1-1.jsonl" <<'PY'
import json, os, sys
alone = {os.path.basename(json.loads(l)["file"]): json.loads(l)["text"] for l in open(sys.argv[2])}
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(1 for r in rows if r["text"] == alone.get(os.path.basename(r["file"]))), len(rows))
PY
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms() { awk -v v="$1" 'BEGIN { print v * 1000 }'; }

# Each count once, speechgraph then the peer; 8 clients, the issue's figures, BENCH_RUNS times (default 3),
# alternating, each figure the median of the runs' p95s (the machine is noisy; each run's on stderr).
eight_runs=${BENCH_RUNS:-3}
declare -A ours_p95 peer_p95 ours_eos peer_eos
for n in 1 2 4 8; do
  runs=1
  (( n == 8 )) && runs=$eight_runs
  figures=() # per run: ours after stop, ours after end of speech, the peer's two
  for ((r = 1; r <= runs; r++)); do
    echo "bench: wyoming: $n client(s) at real time, speechgraph then the peer (run $r of $runs)" >&2
    run_clients "$ours_port" "$n" "$work/ours-$n-$r.jsonl"
    run_clients "$peer_port" "$n" "$work/peer-$n-$r.jsonl"
    run=("$(p95 "$work/ours-$n-$r.jsonl")" "$(p95 "$work/ours-$n-$r.jsonl" eos)"
      "$(p95 "$work/peer-$n-$r.jsonl")" "$(p95 "$work/peer-$n-$r.jsonl" eos)")
    figures+=("${run[@]}")
    echo "bench:   p95 after audio-stop / after the end of speech: speechgraph $(ms "${run[0]}") / $(ms "${run[1]}")" \
      "ms, the peer $(ms "${run[2]}") / $(ms "${run[3]}") ms" >&2
  done
  column() { for ((i = $1; i < ${#figures[@]}; i += 4)); do echo "${figures[$i]}"; done | median; }
  ours_p95[$n]=$(column 0)
  ours_eos[$n]=$(column 1)
  peer_p95[$n]=$(column 2)
  peer_eos[$n]=$(column 3)
  echo "wyoming_p95_after_stop_${n}_clients $(ms "${ours_p95[$n]}") ms"
  echo "wyoming_peer_p95_after_stop_${n}_clients $(ms "${peer_p95[$n]}") ms"
done
for n in 1 8; do
  echo "wyoming_p95_after_end_of_speech_${n}_clients $(ms "${ours_eos[$n]}") ms"
  echo "wyoming_peer_p95_after_end_of_speech_${n}_clients $(ms "${peer_eos[$n]}") ms"
done
# graphs/wyoming-fast.graph (no second pass), served beside the default: 8 clients.
echo "bench: wyoming: 8 clients at real time, graphs/wyoming-fast.graph" >&2
run_clients "$ours_port" 8 "$work/fast-8.jsonl" --name fast
echo "wyoming_fast_graph_p95_after_stop_8_clients $(ms "$(p95 "$work/fast-8.jsonl")") ms"
echo "wyoming_fast_graph_p95_after_end_of_speech_8_clients $(ms "$(p95 "$work/fast-8.jsonl" eos)") ms"
same=0 total=0
for ((r = 1; r <= eight_runs; r++)); do
  read -r s t < <(same_as_alone "$work/ours-8-$r.jsonl")
  same=$((same + s)) total=$((total + t))
done
echo "wyoming_8_clients_same_as_alone $same/$total transcripts"

# The most real-time streams with p95 after audio-stop <= 300 ms (each server, N doubling from where the
# figures above leave off, then the largest that held).
capacity() { # PORT NAME KNOWN_ARRAY_NAME
  local port=$1 name=$2 best=0
  local -n known=$3
  for n in 1 2 4 6 8 12 16 24 32; do
    local v=${known[$n]:-}
    if [ -z "$v" ]; then
      echo "bench: wyoming: $name with $n clients" >&2
      run_clients "$port" "$n" "$work/$name-cap-$n.jsonl"
      v=$(p95 "$work/$name-cap-$n.jsonl")
    fi
    if awk -v v="$v" 'BEGIN { exit !(v <= 0.300) }'; then best=$n; else break; fi
  done
  echo "$best"
}
echo "wyoming_streams_p95_under_300ms $(capacity "$ours_port" ours ours_p95) streams"
echo "wyoming_peer_streams_p95_under_300ms $(capacity "$peer_port" peer peer_p95) streams"

# Memory: resident before and after 1,000 fuzzed frames (after 1,000 others, which fill the pool and warm the
# allocator).
"$PY" Tests/Peers/wyoming_hostile.py 127.0.0.1 "$ours_port" fuzz 1000 1 >/dev/null
before=$(awk '/VmRSS/ { print $2 }' "/proc/$ours_pid/status")
"$PY" Tests/Peers/wyoming_hostile.py 127.0.0.1 "$ours_port" fuzz 1000 2 >/dev/null
after=$(awk '/VmRSS/ { print $2 }' "/proc/$ours_pid/status")
"$PY" Tests/Peers/wyoming_client.py "tcp://127.0.0.1:$ours_port" transcribe "${files[1]}" > "$work/after-fuzz.jsonl"
echo "wyoming_rss_before_fuzz $(( before / 1024 )) MiB"
echo "wyoming_rss_after_1000_fuzzed_frames $(( after / 1024 )) MiB"
echo "wyoming_serves_after_fuzz $(python3 -c 'import json,sys; r = json.loads(open(sys.argv[1]).readline()); print(1 if r["text"] and not r["error"] else 0)' "$work/after-fuzz.jsonl") ok"
