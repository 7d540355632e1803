#!/usr/bin/env bash
# The silence and noise set: no speech in any of it, so every word a recognizer writes is invented. Six files of
# MINUTES minutes each (10 by default: an hour in all), 16 kHz mono 16-bit, made with sox into DIR:
#   near-silence   white noise at -70 dBFS (a muted microphone's floor)
#   room-tone      brown noise, low-passed at 400 Hz, at -45 dBFS, with a slow swell (a quiet room's hum)
#   white          white noise at -20 dBFS
#   pink           pink noise at -20 dBFS
#   tones          music-like tones: a chord a second from a fixed sequence, with a soft attack
#   clicks         keyboard-like clicks: 8 ms noise bursts 4 to 9 times a second, over a room's floor
# Usage: scripts/make-noise-set.sh DIR [MINUTES]
set -euo pipefail
dir=${1:?usage: make-noise-set.sh DIR [MINUTES]}
minutes=${2:-10}
seconds=$((minutes * 60))
mkdir -p "$dir"
fmt=(-r 16000 -c 1 -b 16)
sox -n "${fmt[@]}" "$dir/near-silence.wav" synth "$seconds" whitenoise gain -70
sox -n "${fmt[@]}" "$dir/room-tone.wav" synth "$seconds" brownnoise lowpass 400 tremolo 0.1 40 norm -45
sox -n "${fmt[@]}" "$dir/white.wav" synth "$seconds" whitenoise norm -20
sox -n "${fmt[@]}" "$dir/pink.wav" synth "$seconds" pinknoise norm -20
# Tones: chords of three sines, one a second, cycling through eight chords; each fades in and out.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chords=("220 277 330" "247 311 370" "262 330 392" "294 370 440" "330 415 494" "349 440 523" "392 494 587" "440 554 659")
for i in "${!chords[@]}"; do
  read -r a b c <<< "${chords[$i]}"
  sox -n "${fmt[@]}" "$work/chord$i.wav" synth 1 sine "$a" sine "$b" sine "$c" channels 1 fade 0.05 1 0.2 norm -18
done
sox "$work"/chord{0..7}.wav "$work/bar.wav"
sox "$work/bar.wav" "$dir/tones.wav" repeat $((seconds / 8 - 1))
# Clicks: a second of clicks at irregular times (a fixed pattern), repeated, over a -60 dBFS floor.
sox -n "${fmt[@]}" "$work/click.wav" synth 0.008 whitenoise fade 0 0.008 0.006 norm -12
gaps=(0.11 0.19 0.14 0.23 0.12 0.17)
parts=()
for g in "${gaps[@]}"; do
  sox -n "${fmt[@]}" "$work/gap$g.wav" trim 0 "$g"
  parts+=("$work/click.wav" "$work/gap$g.wav")
done
sox "${parts[@]}" "$work/clicks-1.wav"
sox "$work/clicks-1.wav" "$work/clicks-loop.wav" repeat $((seconds + 1))
sox -n "${fmt[@]}" "$work/floor.wav" synth "$seconds" whitenoise gain -60
sox -m "$work/floor.wav" "$work/clicks-loop.wav" "$dir/clicks.wav" trim 0 "$seconds"
echo "make-noise-set: $(ls "$dir"/*.wav | wc -l) files, $minutes min each, in $dir" >&2
