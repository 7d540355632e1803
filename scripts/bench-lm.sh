#!/usr/bin/env bash
# The custom-language-model figures of `make bench` (issue 14), one 'name value unit' a line:
#   - building graphs/chess.lmspec (10,000 template samples) and graphs/an4.lmspec, against IRSTLM's tlm
#     estimating a model from the same text (Debian's irstlm, the field's own tool);
#   - the chess development set (scripts/make-chess-set.sh): WER of the general model, of chess.lmspec alone,
#     with weight 0.4, of an IRSTLM model from the same text, and of the general sentences with and without it;
#   - real speech: the 22 AN4 files with graphs/an4.lmspec, the 5 ps_cards files with graphs/cards.jsgf;
#   - a model swap in a running graph (SIGHUP after the graph's spec changed): the build and load beside the
#     audio, the decoders loaded and kept, and the switch; and a SIGHUP when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/speechgraph}
SHARED=${SHARED:-../shared}
TLM=/usr/lib/irstlm/bin/tlm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
wer() { python3 "$SHARED/tools/wer.py" "$1" "$2" | tail -1 | sed -E 's/^WER ([0-9.]+)%.*/\1/'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# Wall-clock seconds of a command (bash's own clock: no process started around it).
seconds() { local t0=$EPOCHREALTIME; "$@" > /dev/null 2>&1; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }'; }

echo "bench: lm build against IRSTLM's tlm (3 runs each)" >&2
"$BIN" lm build graphs/chess.lmspec -o "$work/chess" --corpus "$work/chess.txt" 2> /dev/null
"$BIN" lm build graphs/an4.lmspec -o "$work/an4" --corpus "$work/an4.txt" 2> /dev/null
ours=() irst=() ours4=() irst4=()
for i in 1 2 3; do
  ours+=("$(seconds "$BIN" lm build graphs/chess.lmspec -o "$work/chess$i")")
  irst+=("$(seconds "$TLM" -tr="$work/chess.txt" -n=3 -lm=wb -bo=yes -o="$work/irst-chess.arpa")")
  ours4+=("$(seconds "$BIN" lm build graphs/an4.lmspec -o "$work/an4$i")")
  irst4+=("$(seconds "$TLM" -tr="$work/an4.txt" -n=3 -lm=wb -bo=yes -o="$work/irst-an4.arpa")")
done
echo "lm_build_chess_seconds $(median "${ours[@]}") s"
echo "irstlm_tlm_chess_seconds $(median "${irst[@]}") s"
echo "lm_build_an4_seconds $(median "${ours4[@]}") s"
echo "irstlm_tlm_an4_seconds $(median "${irst4[@]}") s"

echo "bench: the chess development set" >&2
bash scripts/make-chess-set.sh "$work/dev" 2> /dev/null
mapfile -t chess < <(cut -f1 "$work/dev/chess.tsv")
mapfile -t general < <(cut -f1 "$work/dev/general.tsv")
# IRSTLM's model in a model directory beside our dictionary (tlm's Witten-Bell, back-off ARPA; its modified
# shift-beta refuses this corpus: docs/lm.md).
mkdir -p "$work/irst"
cp "$work/irst-chess.arpa" "$work/irst/lm.arpa"
cp "$work/chess/words.dict" "$work/irst/words.dict"
run() { "$BIN" transcribe --format tsv "$@" 2> /dev/null; }
run "${chess[@]}" > "$work/c0.tsv"
run --lm graphs/chess.lmspec "${chess[@]}" > "$work/c1.tsv"
run --lm graphs/chess.lmspec --lm-weight 0.4 "${chess[@]}" "${general[@]}" > "$work/c2.tsv"
run --lm "$work/irst" "${chess[@]}" > "$work/c3.tsv"
run "${general[@]}" > "$work/g0.tsv"
echo "chess_general_model_wer $(wer "$work/dev/chess.tsv" "$work/c0.tsv") %"
echo "chess_lmspec_alone_wer $(wer "$work/dev/chess.tsv" "$work/c1.tsv") %"
echo "chess_irstlm_alone_wer $(wer "$work/dev/chess.tsv" "$work/c3.tsv") %"
echo "chess_lmspec_weight_0.4_wer $(wer "$work/dev/chess.tsv" "$work/c2.tsv") %"
echo "general_sentences_general_model_wer $(wer "$work/dev/general.tsv" "$work/g0.tsv") %"
echo "general_sentences_chess_weight_0.4_wer $(wer "$work/dev/general.tsv" "$work/c2.tsv") %"
# The same through Apple's classic API (issue 55): SFSpeechURLRecognitionRequest with customizedLanguageModel
# prepared by SFSpeechLanguageModel.prepareCustomLanguageModel from the same spec, at the configuration's default
# weight, against the same requests without it.
swift build -c release --product speechgraph-bench >&2
SGB=.build/release/speechgraph-bench
"$SGB" apple-urls --lm graphs/chess.lmspec "${chess[@]}" "${general[@]}" > "$work/a1.tsv" 2> /dev/null
"$SGB" apple-urls "${general[@]}" > "$work/a0.tsv" 2> /dev/null
echo "apple_api_chess_custom_lm_wer $(wer "$work/dev/chess.tsv" "$work/a1.tsv") %"
echo "apple_api_general_sentences_custom_lm_wer $(wer "$work/dev/general.tsv" "$work/a1.tsv") %"
echo "apple_api_general_sentences_no_lm_wer $(wer "$work/dev/general.tsv" "$work/a0.tsv") %"

echo "bench: real speech: AN4 with an4.lmspec, ps_cards with cards.jsgf" >&2
corpus=$SHARED/corpus/real
grep '^an4_' "$corpus/manifest.tsv" > "$work/an4.tsv"
grep '^ps_cards' "$corpus/manifest.tsv" > "$work/cards.tsv"
mapfile -t an4 < <(cut -f1 "$work/an4.tsv" | sed "s#^#$corpus/#")
mapfile -t cards < <(cut -f1 "$work/cards.tsv" | sed "s#^#$corpus/#")
run "${an4[@]}" > "$work/a0.tsv"
run --lm graphs/an4.lmspec "${an4[@]}" > "$work/a1.tsv"
run "${cards[@]}" > "$work/k0.tsv"
run --grammar graphs/cards.jsgf "${cards[@]}" > "$work/k1.tsv"
echo "an4_general_model_wer $(wer "$work/an4.tsv" "$work/a0.tsv") %"
echo "an4_lmspec_wer $(wer "$work/an4.tsv" "$work/a1.tsv") %"
echo "cards_general_model_wer $(wer "$work/cards.tsv" "$work/k0.tsv") %"
echo "cards_grammar_wer $(wer "$work/cards.tsv" "$work/k1.tsv") %"

echo "bench: a model swap in a running graph (SIGHUP), 3 times" >&2
sox "${chess[@]:0:12}" "$work/moves.wav"
# The graph's spec is a copy, which each run changes (a phrase added) before SIGHUP: a real vocabulary change,
# built and loaded while the audio goes on. A second SIGHUP, nothing changed, keeps every decoder.
cat > "$work/swap.graph" <<GRAPH
node src = file.input { path: "$work/moves.wav" }
node vad = vad
node asr = recognizer { mode: streaming, final-pass: true, lm: "$work/chess.lmspec", weight: 0.4 }
node log = jsonl { path: "$work/swap.jsonl" }
src.out -> vad.in
vad.out -> asr.in
vad.events -> asr.control
asr -> log
GRAPH
field() { grep '"modelChanged"' "$work/swap.jsonl" | sed -n "${1}p" | sed -E "s/.*\"$2\":([0-9.]+).*/\1/"; }
loads=() switches=() loaded=() kept=() same=()
for i in 1 2 3; do
  cp graphs/chess.lmspec "$work/chess.lmspec"
  rm -f "$work/swap.jsonl"
  "$BIN" run --realtime "$work/swap.graph" 2> /dev/null &
  pid=$!
  # Polling the run's own log (it has no other signal to wait on); a run that ended stops the wait.
  until grep -q '"isFinal":true' "$work/swap.jsonl" 2> /dev/null; do kill -0 "$pid" || break; sleep 0.1; done
  echo "phrase \"Play the Scotch game number $i\" { count: 10 }" >> "$work/chess.lmspec"
  kill -HUP "$pid"
  until [ "$(grep -c '"modelChanged"' "$work/swap.jsonl" 2> /dev/null)" -ge 1 ]; do kill -0 "$pid" || break; sleep 0.1; done
  kill -HUP "$pid"
  until [ "$(grep -c '"modelChanged"' "$work/swap.jsonl" 2> /dev/null)" -ge 2 ]; do kill -0 "$pid" || break; sleep 0.1; done
  kill -TERM "$pid"
  wait "$pid" || true
  loads+=("$(field 1 loadSeconds)") switches+=("$(field 1 switchMilliseconds)")
  loaded+=("$(field 1 loadedDecoders)") kept+=("$(field 1 keptDecoders)") same+=("$(field 2 loadSeconds)")
done
echo "model_swap_load_seconds $(median "${loads[@]}") s"
echo "model_swap_decoders_loaded $(median "${loaded[@]}") decoders"
echo "model_swap_decoders_kept $(median "${kept[@]}") decoders"
echo "model_swap_switch_milliseconds $(median "${switches[@]}") ms"
echo "model_reload_unchanged_load_seconds $(median "${same[@]}") s"
