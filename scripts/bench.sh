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
          -hmm "$MODEL/en-us" -lm "$MODEL/en-us.lm.bin" -dict "$MODEL/cmudict-en-us.dict" -hyp "$work/ps.hyp" -logfn /dev/null)")
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
