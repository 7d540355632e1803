#!/usr/bin/env bash
# Issue 16's figures, 'name value unit' a line: the `web` sink with 50 Server-Sent Events viewers, 10 WebSocket
# viewers and one viewer that stops reading, attached for the whole of long_clean.wav played in real time, against
# the same graph with no viewer, measured in the same run (BENCH_WEB_RUNS pairs, 2 by default, the order alternating
# from one pair to the next so that neither side always runs on a machine just woken from idle; medians). The level
# tap sends a level every 10 ms (ten times its default): 100 events a second to every viewer besides the results.
# - web_graph_cpu_rtf_*: CPU seconds of the graph's threads (the recognizer, the vad, the level tap, the sinks,
#   the web node's publishing: every thread named "speechgraph ...") per second of audio, read from
#   /proc/PID/task/*/stat until the process exits; and their ratio (with / without).
# - web_final_latency_p50/p95_*: from the end of each final result's audio to the moment the jsonl sink wrote it
#   (its "latency" field), and the ratio.
# - web_server_cpu_s: CPU seconds of the web node's event-loop thread (NIO-ELT-*) with the viewers.
# - web_rss_growth: resident memory at the end minus at 30 s, with the viewers.
# - web_viewers_*: viewers that got every final result, and whether the one that stopped reading was dropped while
#   the file played (/healthz's "dropped", polled by the viewers' script). The graph's web node has `queue: 64`, so
#   that a viewer that stops reading is over its bound within the file (at the default 256, about 4 minutes of
#   speech of this kind).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
PY=${PY:-.venv/bin/python}
LONG=$SHARED/corpus/long/long_clean.wav
RUNS=${BENCH_WEB_RUNS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/web.graph" <<G
node src  = file.input { path: "$LONG", realtime: true }
node lvl  = tap.level { interval: 10 ms }
node vad  = vad
node asr  = recognizer { mode: streaming }
node page = web { listen: "127.0.0.1:0", queue: 64, replay: 50 }
node log  = jsonl { path: "$work/results.jsonl", latency: true }
src -> lvl -> vad -> asr
vad.events -> asr.control
asr -> page
asr -> log
vad.events -> page
lvl.events -> page
G

# One run: speechgraph with or without viewers; prints a JSON object of its figures.
run() {
  local viewers=$1 out=$2
  rm -f "$work/results.jsonl"
  "$BIN" run "$work/web.graph" > /dev/null 2> "$work/stderr" &
  local pid=$!
  local url=""
  for _ in $(seq 600); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$work/stderr" | head -1 || true)
    [ -n "$url" ] && break
    sleep 0.1
  done
  local client=""
  if [ "$viewers" = yes ]; then
    "$PY" Tests/Peers/web_viewers.py "$url" --sse 50 --ws 10 --stalled 1 > "$work/viewers.json" 2> /dev/null &
    client=$!
  fi
  python3 - "$pid" "$work/threads.json" <<'PY'
import json, os, sys, time
pid, out = int(sys.argv[1]), sys.argv[2]
tick = os.sysconf("SC_CLK_TCK")
threads, rss, start = {}, [], time.time()
while os.path.exists(f"/proc/{pid}/stat"):
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
            comm = s[s.index("(") + 1:s.rindex(")")]
            fields = s[s.rindex(")") + 2:].split()
            threads[tid] = (comm, (int(fields[11]) + int(fields[12])) / tick)
        with open(f"/proc/{pid}/status") as f:
            kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        rss.append((time.time() - start, kb))
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(") ")[1].startswith("Z"):
                break
    except (FileNotFoundError, ProcessLookupError, StopIteration, ValueError):
        break
    time.sleep(0.2)
graph = sum(cpu for comm, cpu in threads.values() if comm.startswith("speechgraph"))
web = sum(cpu for comm, cpu in threads.values() if comm.startswith("NIO-ELT"))
at30 = next((kb for t, kb in rss if t >= 30), rss[0][1] if rss else 0)
json.dump({"graph_cpu": graph, "web_cpu": web, "rss_30": at30, "rss_end": rss[-1][1] if rss else 0}, open(out, "w"))
PY
  wait "$pid"
  [ -n "$client" ] && wait "$client"
  python3 - "$work/results.jsonl" "$work/threads.json" "$viewers" "$work/viewers.json" > "$out" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
finals = [e for e in events if e["type"] == "result" and e["isFinal"]]
lat = sorted(e["latency"] for e in finals)
def pct(v, p):
    k = (len(v) - 1) * p; f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
t = json.load(open(sys.argv[2]))
r = {"rtf": t["graph_cpu"] / 148.0, "p50": pct(lat, 0.5), "p95": pct(lat, 0.95), "finals": len(finals),
     "web_cpu": t["web_cpu"], "rss_growth_mb": (t["rss_end"] - t["rss_30"]) / 1024}
if sys.argv[3] == "yes":
    r["viewers"] = json.load(open(sys.argv[4]))
print(json.dumps(r))
PY
}

for i in $(seq "$RUNS"); do
  for side in $([ $((i % 2)) = 1 ] && echo "no yes" || echo "yes no"); do
    if [ "$side" = no ]; then
      echo "bench: web $i/$RUNS: long_clean.wav in real time (148 s) with no viewer" >&2
      run no "$work/none.$i.json"
    else
      echo "bench: web $i/$RUNS: the same with 50 SSE viewers, 10 WebSocket viewers and one that stops reading" >&2
      run yes "$work/viewers.$i.json"
    fi
  done
done

python3 - "$work" "$RUNS" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
none = [json.load(open(f"{work}/none.{i}.json")) for i in range(1, runs + 1)]
views = [json.load(open(f"{work}/viewers.{i}.json")) for i in range(1, runs + 1)]
def med(rows, key): return statistics.median(r[key] for r in rows)
rn, rv = med(none, "rtf"), med(views, "rtf")
print(f"web_graph_cpu_rtf_no_viewers {rn:.4f} xRT")
print(f"web_graph_cpu_rtf_60_viewers {rv:.4f} xRT")
print(f"web_graph_cpu_rtf_ratio {rv / rn:.3f} x")
for p in ("p50", "p95"):
    a, b = med(none, p), med(views, p)
    print(f"web_final_latency_{p}_no_viewers {1000 * a:.0f} ms")
    print(f"web_final_latency_{p}_60_viewers {1000 * b:.0f} ms")
    print(f"web_final_latency_{p}_ratio {b / a:.3f} x")
print(f"web_server_cpu_60_viewers {med(views, 'web_cpu'):.2f} s")
print(f"web_rss_growth_60_viewers {med(views, 'rss_growth_mb'):.1f} MB")
v = views[-1]["viewers"]
print(f"web_viewers_with_every_final {v['viewers_with_every_final']}/{v['viewers']} viewers")
print(f"web_viewers_finals {v['finals_max']}/{views[-1]['finals']} results")
print(f"web_stalled_viewer_dropped_while_running {v['dropped_while_running']}/{v['stalled']} viewers")
print(f"web_viewer_queue_max {v['max_queued']} messages")
PY
