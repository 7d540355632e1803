#!/usr/bin/env bash
# The development set the word-confidence calibration is fitted on (never ../shared, which stays the test):
# the 96 sentences of scripts/sentences.txt, each spoken by two of eight synthetic voices (flite, espeak-ng),
# each clean, in white noise at 15 dB SNR and in pink noise at 14 dB SNR: 576 files in OUT (default
# out/calibration) and OUT/ref.tsv.
# (The noise and its level: scripts/noisy-copies.sh.)
set -euo pipefail
. "$(dirname "$0")/noisy-copies.sh"
export SOX_OPTS="-R -D"
out=${1:-out/calibration}
mkdir -p "$out"
mapfile -t sentences < "$(dirname "$0")/sentences.txt"
voices=("flite slt" "flite rms" "flite awb" "flite kal16" "espeak en-us" "espeak en-us+f3" "espeak en+m3" "espeak en-us+f4")
: > "$out/ref.tsv"
for i in "${!sentences[@]}"; do
  for k in 0 1; do
    v=${voices[$(( (i * 3 + k * 5) % 8 ))]}
    name=$(printf "c%03d_%d" "$i" "$k")
    if [ "${v%% *}" = flite ]; then
      flite -voice "${v#* }" -t "${sentences[$i]}" -o "$out/$name.raw.wav"
    else
      espeak-ng -v "${v#* }" -s $(( 150 + (i % 5) * 10 )) -w "$out/$name.raw.wav" "${sentences[$i]}"
    fi
    sox "$out/$name.raw.wav" -r 16000 -c 1 -b 16 "$out/${name}_clean.wav" pad 0.3 0.3
    rm "$out/$name.raw.wav"
    noisy_copies "$out/$name"
    for c in clean white10 pink5; do printf "%s_%s\t%s\n" "$name" "$c" "${sentences[$i]}" >> "$out/ref.tsv"; done
  done
done
echo "made $(wc -l < "$out/ref.tsv") files in $out" >&2
