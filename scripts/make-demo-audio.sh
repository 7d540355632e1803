#!/usr/bin/env bash
# Synthesises the demo recording: a few sentences spoken by flite, with pauses, resampled to
# 44.1 kHz stereo so that the demo also shows the planner's converters at work.
set -euo pipefail
out=${1:-out/demo.wav}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sentences=(
  "good morning"
  "please call my mother at seven in the evening"
  "the weather today is cold and windy with a chance of rain"
  "open the door and turn on the light in the kitchen"
)
parts=()
for i in "${!sentences[@]}"; do
  flite -voice rms -t "${sentences[$i]}" -o "$tmp/s$i.wav"
  sox "$tmp/s$i.wav" "$tmp/p$i.wav" pad 0.6 0.4
  parts+=("$tmp/p$i.wav")
done
sox "${parts[@]}" -r 44100 -c 2 "$out"
echo "made $out: $(soxi -D "$out") s of synthetic speech, 44.1 kHz stereo" >&2
