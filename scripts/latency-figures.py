#!/usr/bin/env python3
"""latency-figures.py JSONL SEGMENTS LABELS PREFIX [DELAY]: make bench's latency figures from a jsonl sink's log
(`jsonl { latency: true }`, the vad's events beside the results) of long_clean played in real time, one
'name value unit' a line: per segment of the recording (SEGMENTS: its edges, with their own leading and trailing
silence) and per its labelled speech (LABELS), from the true end to the final result of its last utterance, and from
the true onset to the first volatile result of its first utterance; p50 and p95 (latency_PREFIX*). A result's wall
time on the audio clock is its range's end plus its latency. DELAY (s, default 0): how much later the graph's clock
is than the file's (audio played through JACK reaches the graph a prebuffer and a period later); the figures are
then from the audio's arrival."""
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
segments = [tuple(map(float, l.split("\t")[:2])) for l in open(sys.argv[2]).read().splitlines()[1:]]
labels = [tuple(map(float, l.split("\t")[:2])) for l in open(sys.argv[3]).read().splitlines()[1:]]
prefix = sys.argv[4]
delay = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
segments = [(a + delay, b + delay) for a, b in segments]
labels = [(a + delay, b + delay) for a, b in labels]
results = [e for e in events if e["type"] == "result"]
def overlap(r, s): return max(0.0, min(r["range"]["end"], s[1]) - max(r["range"]["start"], s[0]))
# Wall time of a result on the audio clock: its range end plus its latency.
def wall(r): return r["range"]["end"] + r["latency"]
def pct(v, p):
    v = sorted(v); k = (len(v) - 1) * p; f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
# Per segment: the final result of its last utterance (the one that ends the speech), and the first
# volatile result of its first utterance (a segment can be several utterances: pauses inside it). The
# true edges: the segment's (with the recording's own leading and trailing silence), and the first and
# last labelled speech inside it.
edges = {"": [], "speech_": []}
for s in segments:
    finals = [r for r in results if r["isFinal"] and overlap(r, s) > 0]
    inside = [l for l in labels if l[0] >= s[0] - 0.01 and l[1] <= s[1] + 0.01]
    if not finals or not inside:
        continue
    last = max(finals, key=lambda r: r["range"]["end"])
    first_utterance = min(finals, key=lambda r: r["range"]["start"])["utterance"]
    first = next((r for r in results if not r["isFinal"] and r["utterance"] == first_utterance), None)
    for name, (onset, end) in (("", s), ("speech_", (inside[0][0], inside[-1][1]))):
        edges[name].append((wall(last) - end, wall(first) - onset if first else None))
for name, rows in edges.items():
    ends = [e for e, _ in rows]
    onsets = [o for _, o in rows if o is not None]
    print(f"latency_{prefix}{name}end_to_final_p50 {1000 * pct(ends, 0.5):.0f} ms")
    print(f"latency_{prefix}{name}end_to_final_p95 {1000 * pct(ends, 0.95):.0f} ms")
    print(f"latency_{prefix}{name}onset_to_first_volatile_p50 {1000 * pct(onsets, 0.5):.0f} ms")
    print(f"latency_{prefix}{name}onset_to_first_volatile_p95 {1000 * pct(onsets, 0.95):.0f} ms")
# A check of the clocks: the vad's speechStarted time minus the labelled onset nearest it (offline: about -0.02 s).
starts = [e["time"] for e in events if e["type"] == "speechStarted"]
lead = [t - min((l[0] for l in labels), key=lambda o: abs(o - t)) for t in starts]
if lead:
    print(f"latency_{prefix}vad_start_minus_onset_p50 {1000 * pct(lead, 0.5):.0f} ms")
print(f"latency_{prefix}utterances {len([r for r in results if r['isFinal']])} utterances")
print(f"latency_{prefix}segments_measured {len(edges[''])}/{len(segments)} segments")
