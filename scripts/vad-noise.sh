#!/usr/bin/env bash
# Makes noisy versions of the long soak file for the voice activity detector's tests and bench:
#   long_white5db.wav long_pink5db.wav long_white0db.wav long_pink0db.wav   (and any SNR given)
# mixed the way ../shared/corpus/long/README.md describes the 15 dB files: sox `synth whitenoise`
# or `pinknoise`, scaled so that RMS(speech) / RMS(noise) = SNR, where the speech RMS is taken over
# the utterances (the regions of long_clean.segments.tsv, their own pauses included), then added
# to long_clean.wav unscaled (`sox -m` with explicit volumes, so sox does not halve the inputs).
# The noise covers the silences too. sox runs in repeatable mode (-R): the same files every time.
#
# usage: scripts/vad-noise.sh OUTDIR [SNR_DB...]      (default SNRs: 5 0)
# env:   SHARED (default ../shared beside the checkout)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SHARED:-$here/../shared}
long=$SHARED/corpus/long
clean=$long/long_clean.wav
segments=$long/long_clean.segments.tsv
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [SNR_DB...]" >&2; exit 2; }
out=$1; shift
snrs=("$@")
[ ${#snrs[@]} -gt 0 ] || snrs=(5 0)
[ -f "$clean" ] && [ -f "$segments" ] || { echo "vad-noise: $clean or its segments not found (set SHARED)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# RMS of the utterances: cut each segment out of the clean file and measure them as one stream.
parts=()
n=0
while IFS=$'\t' read -r start end _; do
  n=$((n + 1))
  sox "$clean" "$tmp/seg$n.wav" trim "$start" "=$end"
  parts+=("$tmp/seg$n.wav")
done < <(tail -n +2 "$segments")
speech_rms=$(sox "${parts[@]}" -n stat 2>&1 | awk '/^RMS +amplitude/ { print $3 }')
duration=$(soxi -D "$clean")

for kind in white pink; do
  sox -R -n -r 16000 -c 1 -e floating-point -b 32 "$tmp/$kind.wav" synth "$duration" "${kind}noise"
  noise_rms=$(sox "$tmp/$kind.wav" -n stat 2>&1 | awk '/^RMS +amplitude/ { print $3 }')
  for snr in "${snrs[@]}"; do
    gain=$(awk -v s="$speech_rms" -v n="$noise_rms" -v db="$snr" 'BEGIN { printf "%.9f", s / n / 10 ^ (db / 20) }')
    name="long_${kind}${snr}db.wav"
    # Clipping at low SNR is expected (the README's 15 dB files clip 13 samples); sox only warns.
    sox -R -m -v 1 "$clean" -v "$gain" "$tmp/$kind.wav" -b 16 -e signed-integer "$out/$name" 2> "$tmp/sox.err" \
      || { cat "$tmp/sox.err" >&2; exit 1; }
    echo "vad-noise: $out/$name ($kind noise, speech/noise $snr dB)" >&2
  done
done
