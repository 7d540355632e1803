#!/usr/bin/env bash
# make bench: one figure a line, 'name value unit'. Each figure is measured beside its peer in the
# same run, alternating, and the median of BENCH_RUNS runs is kept (these machines are noisy).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
RUNS=${BENCH_RUNS:-3}
CORPUS=$SHARED/corpus/real
MODEL=/usr/share/pocketsphinx/model/en-us
if [ ! -f "$CORPUS/manifest.tsv" ]; then
  echo "bench: $CORPUS/manifest.tsv not found (set SHARED to the shared folder)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tail -n +2 "$CORPUS/manifest.tsv" | cut -f1 > "$work/files"
sed 's/\.wav$//' "$work/files" > "$work/ctl"
mapfile -t files < <(sed "s#^#$CORPUS/#" "$work/files")

# CPU seconds (user + system) of a command; its stdout goes to $1.
cpu() {
  local out=$1; shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$out" 2> "$work/stderr" || { cat "$work/stderr" >&2; return 1; }
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}

sg=() ps=()
for i in $(seq "$RUNS"); do
  echo "bench: run $i/$RUNS: speechgraph transcribe, pocketsphinx_batch (35 files, 106.6 s of speech)" >&2
  sg+=("$(cpu "$work/sg.tsv" "$BIN" transcribe --format tsv "${files[@]}")")
  ps+=("$(cpu "$work/ps.log" pocketsphinx_batch -adcin yes -adchdr 44 -cepdir "$CORPUS" -cepext .wav -ctl "$work/ctl" \
          -hmm "$MODEL/en-us" -lm "$MODEL/en-us.lm.bin" -dict "$MODEL/cmudict-en-us.dict" -maxhmmpf 10000 \
          -hyp "$work/ps.hyp" -logfn /dev/null)")
done
sed -E 's/^(.*) \(([^ ]+) -?[0-9]+\)$/\2\t\1/' "$work/ps.hyp" > "$work/ps.tsv"

wer() { python3 "$SHARED/tools/wer.py" "$CORPUS/manifest.tsv" "$1" | sed -E 's/^WER ([0-9.]+)%.*/\1/'; }

python3 - "$(wer "$work/sg.tsv")" "$(wer "$work/ps.tsv")" "${sg[*]}" "${ps[*]}" "$work/sg.tsv" "$work/ps.tsv" <<'PY'
import os, statistics, sys
sg_wer, ps_wer = float(sys.argv[1]), float(sys.argv[2])
sg = [float(x) for x in sys.argv[3].split()]
ps = [float(x) for x in sys.argv[4].split()]
audio = 106.6
ms, mp = statistics.median(sg), statistics.median(ps)
ratios = [a / b for a, b in zip(sg, ps)]
print(f"transcribe_real_cpu {ms:.2f} s")
print(f"pocketsphinx_batch_real_cpu {mp:.2f} s")
print(f"transcribe_vs_batch_cpu_ratio {statistics.median(ratios):.3f} x")
print(f"transcribe_real_time_factor {ms / audio:.3f} xRT")
print(f"transcribe_real_wer {sg_wer:.2f} %")
print(f"pocketsphinx_batch_real_wer {ps_wer:.2f} %")
def table(path):
    rows = {}
    for line in open(path):
        key, _, text = line.rstrip("\n").partition("\t")
        rows[os.path.splitext(os.path.basename(key))[0]] = " ".join(text.split())
    return rows
a, b = table(sys.argv[5]), table(sys.argv[6])
print(f"transcripts_identical_to_batch {sum(a.get(k) == v for k, v in b.items())}/{len(b)} files")
PY

# Alternatives (issue 13): the oracle WER of the 5-best lists on the real set (the best of the 5 readings of each
# file, chosen against the reference), next to the 1-best WER of the same run.
"$BIN" transcribe --format jsonl --alternatives 5 "${files[@]}" > "$work/alt.jsonl"
python3 - "$CORPUS/manifest.tsv" "$work/alt.jsonl" "$work" <<'PY'
import json, os, sys
refs = {}
for line in list(open(sys.argv[1]))[1:]:
    f, text = line.rstrip("\n").split("\t")[:2]
    refs[os.path.splitext(os.path.basename(f))[0]] = text.split()
finals = {}
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e.get("type") == "result" and e.get("isFinal"):
        finals.setdefault(os.path.splitext(os.path.basename(e["source"]))[0], []).append(e)
def distance(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]
with open(os.path.join(sys.argv[3], "alt-1best.tsv"), "w") as one, open(os.path.join(sys.argv[3], "alt-oracle.tsv"), "w") as oracle:
    for key, ref in refs.items():
        results = finals.get(key, [])
        best = " ".join(r["text"] for r in results)
        if len(results) == 1 and results[0].get("alternatives"):
            texts = [a["text"] for a in results[0]["alternatives"]] + [best]
            chosen = min(texts, key=lambda t: distance(ref, t.split()))
        else:
            chosen = best
        one.write(f"{key}\t{best}\n")
        oracle.write(f"{key}\t{chosen}\n")
PY
echo "transcribe_real_wer_1best_with_alternatives $(wer "$work/alt-1best.tsv") %"
echo "transcribe_real_oracle_wer_5best $(wer "$work/alt-oracle.tsv") %"

# Calibrated word confidences (issue 13): the reliability table (share right per confidence bin, words per bin,
# expected calibration error) on the real set and on the noisy long files; the calibration was fitted on a
# development set of synthesised speech and AN4's training partition (scripts/make-calibration-set.sh,
# scripts/make-an4-dev-set.sh, scripts/fit-calibration.py), never on these.
"$BIN" transcribe --format jsonl "${files[@]}" > "$work/conf-real.jsonl"
python3 scripts/reliability.py "$CORPUS/manifest.tsv" "$work/conf-real.jsonl" --name real
for f in long_white15db long_pink15db; do
  printf "%s\t%s\n" "$f" "$(cat "$SHARED/corpus/long/$f.txt")" > "$work/conf-ref-$f.tsv"
  "$BIN" transcribe --format jsonl "$SHARED/corpus/long/$f.wav" > "$work/conf-$f.jsonl"
  python3 scripts/reliability.py "$work/conf-ref-$f.tsv" "$work/conf-$f.jsonl" --name "$f"
done

# Long-form recognition with VAD segmentation (transcribe turns the vad on for long files), scored by
# wer.py; the peer figures are Debian pocketsphinx_continuous's on the same files (29.71 / 66.9 / 61.5 %).
for f in long_clean long_white15db long_pink15db; do
  printf "%s\t%s\n" "$f" "$(cat "$SHARED/corpus/long/$f.txt")" > "$work/ref-$f.tsv"
  "$BIN" transcribe --format tsv "$SHARED/corpus/long/$f.wav" > "$work/hyp-$f.tsv"
  echo "transcribe_${f}_wer $(python3 "$SHARED/tools/wer.py" "$work/ref-$f.tsv" "$work/hyp-$f.tsv" | sed -E 's/^WER ([0-9.]+)%.*/\1/') %"
done

# The live path through JACK (issue 3).
BIN=$BIN SHARED=$SHARED bash scripts/bench-jack.sh

# Voice activity detection: frame F1 of `speechgraph vad` on the long-form corpus, scored by vad_score.py
# (clean and 15 dB from ../shared, 5 and 0 dB made by scripts/vad-noise.sh), and the detector's CPU cost:
# `speechgraph vad` on all of them against `speechgraph run` of a graph that only reads the same files
# (16 kHz mono already: no converter in either), the difference over the audio's duration, median of RUNS.
LONG=$SHARED/corpus/long
if [ -f "$LONG/long.vad-labels.tsv" ]; then
  bash scripts/vad-noise.sh "$work/vad-noisy" 5 0 2> /dev/null
  vad_files=("$LONG/long_clean.wav" "$LONG/long_white15db.wav" "$LONG/long_pink15db.wav"
             "$work/vad-noisy/long_white5db.wav" "$work/vad-noisy/long_pink5db.wav"
             "$work/vad-noisy/long_white0db.wav" "$work/vad-noisy/long_pink0db.wav")
  for f in "${vad_files[@]}"; do
    "$BIN" vad "$f" > "$work/vad.tsv"
    f1=$(python3 "$SHARED/tools/vad_score.py" --oneline "$LONG/long.vad-labels.tsv" "$work/vad.tsv" | sed -E 's/.*f1=([0-9.]+).*/\1/')
    echo "vad_f1_$(basename "$f" .wav) $f1 F1"
  done
  : > "$work/read.graph"
  for i in "${!vad_files[@]}"; do echo "node in$i = file.input { path: \"${vad_files[$i]}\" }" >> "$work/read.graph"; done
  vad_cpu=() read_cpu=()
  for i in $(seq "$RUNS"); do
    echo "bench: run $i/$RUNS: speechgraph vad, the same files only read (${#vad_files[@]} files)" >&2
    vad_cpu+=("$(cpu "$work/vad-all.tsv" "$BIN" vad "${vad_files[@]}")")
    read_cpu+=("$(cpu "$work/read.out" "$BIN" run "$work/read.graph")")
  done
  audio=$(for f in "${vad_files[@]}"; do soxi -D "$f"; done | awk '{ s += $1 } END { print s }')
  python3 - "${vad_cpu[*]}" "${read_cpu[*]}" "$audio" <<'PY'
import statistics, sys
vad = [float(x) for x in sys.argv[1].split()]
read = [float(x) for x in sys.argv[2].split()]
audio = float(sys.argv[3])
print(f"vad_cpu_real_time {100 * statistics.median([a - b for a, b in zip(vad, read)]) / audio:.3f} %")
PY
else
  echo "bench: $LONG/long.vad-labels.tsv not found: no VAD figures" >&2
fi

# VAD endpointing: latency and memory (issue 4).
BIN=$BIN SHARED=$SHARED bash scripts/bench-latency.sh

# Load: the CPU of one real-time stream against the same graph offline, and how many real-time streams
# the machine holds at end-to-final p95 <= 400 ms, with and without final-pass (issue 10).
SHARED=$SHARED bash scripts/bench-streams.sh

# Plugins (issue 12): the gate as a plugin against the same gate built in, and the cost of 20 cached plugins.
BIN=$BIN bash scripts/bench-plugins.sh

# Custom language models (issue 14).
BIN=$BIN SHARED=$SHARED bash scripts/bench-lm.sh

# The Wyoming server beside a Python peer (issue 15).
BIN=$BIN SHARED=$SHARED bash scripts/bench-wyoming.sh

# Live captions in the browser (issue 16): 50 SSE and 10 WebSocket viewers against none.
BIN=$BIN SHARED=$SHARED bash scripts/bench-web.sh

# The whisper engine (issue 54): against faster-whisper used directly, the same model and settings.
BIN=$BIN SHARED=$SHARED bash scripts/bench-whisper.sh
