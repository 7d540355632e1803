#!/usr/bin/env bash
# The chess development set for custom language models (issue 14): spoken moves from graphs/chess.lmspec's
# template and its opening phrases, and general sentences, synthesised by flite and espeak-ng voices.
# Writes OUT/chess/*.wav with OUT/chess.tsv and OUT/general/*.wav with OUT/general.tsv (file<TAB>reference,
# as ../shared/tools/wer.py reads them); OUT defaults to out/lm-dev. The same files every time.
# Never ../shared: the shared corpus stays the test.
set -euo pipefail
export SOX_OPTS="-R -D"
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/lm-dev}
mkdir -p "$out/chess" "$out/general"
out=$(cd "$out" && pwd)
# 48 moves from the template (a fixed pseudo-random choice), then the 9 openings of the spec.
python3 - "$out/chess-text.txt" <<'PY'
import random, sys
r = random.Random(14)
piece = ["pawn", "rook", "knight", "bishop", "queen", "king"]
royal = ["queen", "king"]
rank = ["one", "two", "three", "four", "five", "six", "seven", "eight"]
lines = [f"{r.choice(piece)} to {r.choice(royal)} {r.choice(piece)} {r.choice(rank)}" for _ in range(48)]
lines += ["play the albin counter gambit", "play the caro kann defense", "play the sicilian defense",
          "play the french defense", "play the queen's gambit", "play the king's indian defense",
          "play the ruy lopez", "play the winawer variation", "play the tartakower"]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
# General sentences: 24 of scripts/sentences.txt (lines 61-84; make-dev-set.sh reads the first 30, and the
# calibration set all 96, in other voices).
sed -n '61,84p' "$here/sentences.txt" > "$out/general-text.txt"
# flite's four voices, and the three variants of espeak-ng's American English that PocketSphinx's general model
# decodes best on general sentences (klatt 45%, f2 47%, klatt2 52% WER on 8 Harvard sentences; the plain
# en-us voice 65%): the set measures the language model, not how robotic a voice is.
voices=(flite:slt flite:rms flite:awb flite:kal16 espeak:en-us+klatt espeak:en-us+f2 espeak:en-us+klatt2)
speak() { # voice text file
  local engine=${1%%:*} v=${1#*:}
  if [ "$engine" = flite ]; then flite -voice "$v" -t "$2" -o "$3.raw.wav"
  else espeak-ng -v "$v" -s 150 -w "$3.raw.wav" "$2"; fi
  sox "$3.raw.wav" -r 16000 -c 1 -b 16 "$3" gain -n -3 pad 0.3 0.3
  rm -f "$3.raw.wav"
}
for set in chess general; do
  : > "$out/$set.tsv"
  i=0
  while IFS= read -r text; do
    v=${voices[$((i % ${#voices[@]}))]}
    f=$(printf '%s/%s/%s_%02d.wav' "$out" "$set" "$set" "$i")
    speak "$v" "$text" "$f"
    printf '%s\t%s\n' "$f" "$text" >> "$out/$set.tsv"
    i=$((i + 1))
  done < "$out/$set-text.txt"
done
rm -f "$out/chess-text.txt" "$out/general-text.txt"
echo "made $out: $(wc -l < "$out/chess.tsv") chess utterances, $(wc -l < "$out/general.tsv") general sentences" >&2
