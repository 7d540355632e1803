#!/usr/bin/env bash
# Real read speech for the word-confidence calibration's development set, beside the synthesised one
# (scripts/make-calibration-set.sh): the training partition of CMU's AN4 database (948 utterances, 74
# speakers, 42 minutes: digits, numbers, dates, spelled words, commands), each clean, in white noise at 15 dB
# and in pink noise at 14 dB SNR, made exactly as the synthesised set's noisy files are (scripts/noisy-copies.sh):
# 2,844 files in OUT
# (default out/an4) and OUT/ref.tsv.
#
# AN4's test partition (an4test_clstk) is where ../shared/corpus/real's an4_* files come from. The training
# partition has none of its ten speakers (this script checks) and none of its recordings; ../shared stays the
# test, never read here.
#
#   bash scripts/make-an4-dev-set.sh [AN4] [OUT]
#
# EVERY=N keeps only every Nth utterance (the Nth, 2Nth, ...): EVERY=3 makes the 316-utterance subset that
# docs/endpointing.md measures max-hmms on.
#
# AN4: a checkout of https://github.com/cmusphinx/an4 (AN4's licence: free for any use, with attribution to
# Carnegie Mellon University); cloned into OUT/an4.git when not given.
set -euo pipefail
. "$(dirname "$0")/noisy-copies.sh"
export SOX_OPTS="-R -D"
an4=${1:-}
out=${2:-out/an4}
mkdir -p "$out"
if [ -z "$an4" ]; then
  an4=$out/an4.git
  [ -d "$an4" ] || git clone --depth 1 https://github.com/cmusphinx/an4 "$an4"
fi
test_speakers="fcaw fjlp fvap marh mdms2 menk miry mjgm mjwl mmxg"
: > "$out/ref.tsv"
n=0
line_number=0
every=${EVERY:-1}
while read -r line; do
  line_number=$((line_number + 1))
  [ $((line_number % every)) -eq 0 ] || continue
  # '<s> WORDS </s> (an251-fash-b)'
  id=${line##*(}
  id=${id%)}
  text=${line#<s> }
  text=${text% </s> *}
  speaker=$(echo "$id" | cut -d- -f2)
  case " $test_speakers " in *" $speaker "*)
    echo "make-an4-dev-set: $id is by a speaker of the test partition" >&2
    exit 1
    ;;
  esac
  sox "$an4/wav/an4_clstk/$speaker/$id.wav" -r 16000 -c 1 -b 16 "$out/${id}_clean.wav"
  noisy_copies "$out/$id"
  lower=$(echo "$text" | tr '[:upper:]' '[:lower:]')
  for c in clean white10 pink5; do printf "%s_%s\t%s\n" "$id" "$c" "$lower" >> "$out/ref.tsv"; done
  n=$((n + 1))
done < "$an4/etc/an4_train.transcription"
echo "made $(wc -l < "$out/ref.tsv") files from $n utterances in $out" >&2
