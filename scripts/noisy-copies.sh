# Sourced by the development-set scripts (make-calibration-set.sh, make-an4-dev-set.sh): the noisy copies of a
# clean file, made the same way for both sets. With SOX_OPTS="-R" (repeatable noise), a set is made again exactly.
#
# noisy_copies BASE: from BASE_clean.wav, BASE_white10.wav (white noise at 15 dB SNR) and BASE_pink5.wav (pink
# noise at 14 dB SNR). The level assumes sox's synthesised noise has the RMS of uniform full-scale noise
# (1/sqrt(3)); it is quieter, so the files' SNR (over the whole file) is 15.0 dB for the "white10" ones and 14.0 dB
# for the "pink5" ones, measured. The names and the formula stay, so the sets made before are made again exactly;
# scripts/vad-noise.sh measures the noise first, as a new set should.
noisy_copies() {
  local base=$1 rms len kind snr noise
  rms=$(sox "${base}_clean.wav" -n stat 2>&1 | awk '/RMS +amplitude/ {print $3}')
  len=$(soxi -D "${base}_clean.wav")
  for noise in "white 10" "pink 5"; do
    kind=${noise% *}
    snr=${noise#* }
    sox -n -r 16000 -c 1 -b 16 "${base}_n.wav" synth "$len" ${kind}noise \
      vol "$(python3 -c "print($rms * 10 ** (-$snr / 20) * 1.732)")"
    sox -m "${base}_clean.wav" "${base}_n.wav" "${base}_${kind}${snr}.wav"
  done
  rm -f "${base}_n.wav"
}
