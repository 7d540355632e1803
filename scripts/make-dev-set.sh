#!/usr/bin/env bash
# A long-form development set: Harvard sentences by flite voices, 2-3 per turn, short pauses inside a turn,
# longer ones between, light pink noise. Writes OUT/dev.wav (16 kHz mono, 93 s), OUT/dev_white.wav (the same
# in white noise at 20 dB SNR: see below) and OUT/dev.txt (the reference);
# OUT defaults to out/dev. Never ../shared: design choices are measured here, the shared corpus stays the test.
set -euo pipefail
export SOX_OPTS="-R -D"  # repeatable noise, no dither: the same file every time
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-out/dev}
mkdir -p "$out"
cd "$out"
# The first 30 of scripts/sentences.txt: Harvard sentences.
mapfile -t sentences < <(head -n 30 "$here/sentences.txt")
voices=(slt rms awb kal16)
parts=(); ref=""
i=0; turn=0
while [ $i -lt ${#sentences[@]} ]; do
  n=$(( 2 + turn % 2 )); v=${voices[$((turn % 4))]}
  for ((k=0; k<n && i<${#sentences[@]}; k++)); do
    flite -voice $v -t "${sentences[$i]}" -o s$i.raw.wav
    inner=$(python3 -c "print([0.15,0.25,0.35][$i % 3])")
    after=$inner; [ $k -eq $((n-1)) ] && after=$(python3 -c "print([0.9,1.3,0.7,1.6][$turn % 4])")
    sox s$i.raw.wav -r 16000 -c 1 -b 16 p$i.wav pad 0 $after
    parts+=(p$i.wav); ref="$ref ${sentences[$i]}"; i=$((i+1))
  done
  turn=$((turn+1))
done
sox "${parts[@]}" clean.wav pad 0.8 0
sox -n -r 16000 -c 1 -b 16 noise.wav synth $(soxi -D clean.wav) pinknoise vol 0.004
sox -m clean.wav noise.wav dev.wav
# The same speech in white noise. The formula aims at 15 dB below the speech's RMS level (over the whole file),
# assuming sox's synthesised noise has the RMS of uniform full-scale noise; it is 5 dB quieter, so the noise is
# 20 dB below, measured. Kept as it is, so that the set (and the figures measured on it) is made again exactly.
rms=$(sox clean.wav -n stat 2>&1 | awk '/RMS +amplitude/ {print $3}')
sox -n -r 16000 -c 1 -b 16 white.wav synth "$(soxi -D clean.wav)" whitenoise vol "$(python3 -c "print($rms * 10 ** (-15 / 20) * 1.732)")"
sox -m -v 1 clean.wav -v 1 white.wav dev_white.wav
echo "$ref" > dev.txt
rm -f s*.raw.wav p*.wav clean.wav noise.wav white.wav
echo "made $out/dev.wav and dev_white.wav: $(soxi -D dev.wav) s each" >&2
