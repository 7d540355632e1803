#!/usr/bin/env bash
# The development set the word-confidence calibration is fitted on (never ../shared, which stays the test):
# 100 sentences, each spoken by two of eight synthetic voices (flite and espeak-ng), each clean, in white noise
# at 10 dB SNR and in pink noise at 5 dB SNR: 600 files in OUT (default out/calibration) and OUT/ref.tsv.
set -euo pipefail
export SOX_OPTS="-R -D"
out=${1:-out/calibration}
mkdir -p "$out"
sentences=(
"the birch canoe slid on the smooth planks" "glue the sheet to the dark blue background"
"it is easy to tell the depth of a well" "these days a chicken leg is a rare dish"
"rice is often served in round bowls" "the juice of lemons makes fine punch"
"the box was thrown beside the parked truck" "the hogs were fed chopped corn and garbage"
"four hours of steady work faced us" "a large size in stockings is hard to sell"
"the boy was there when the sun rose" "a rod is used to catch pink salmon"
"the source of the huge river is the clear spring" "kick the ball straight and follow through"
"help the woman get back to her feet" "a pot of tea helps to pass the evening"
"smoky fires lack flame and heat" "the soft cushion broke the man's fall"
"the salt breeze came across from the sea" "the girl at the booth sold fifty bonds"
"the small pup gnawed a hole in the sock" "the fish twisted and turned on the bent hook"
"press the pants and sew a button on the vest" "the swan dive was far short of perfect"
"the beauty of the view stunned the young boy" "two blue fish swam in the tank"
"her purse was full of useless trash" "the colt reared and threw the tall rider"
"it snowed rained and hailed the same morning" "read verse out loud for pleasure"
"she walked down to the harbor before breakfast" "my brother never answers his telephone on sunday"
"the committee will meet again next thursday afternoon" "we drove through the mountains in heavy fog"
"please turn off the lights when you leave the room" "the old man told us a story about the war"
"there is a small bakery at the corner of the street" "the children were playing in the garden all day"
"he bought a new coat because the winter was cold" "the train to the city leaves at half past eight"
"our teacher asked us to read the first chapter" "the doctor said that she should rest for a week"
"the price of bread has gone up again this year" "they built a bridge across the river last summer"
"i would like a cup of coffee with milk please" "the dog barked at the stranger near the gate"
"a heavy storm damaged the roof of the school" "the museum is closed on mondays and holidays"
"she wrote a long letter to her sister in paris" "the farmer planted potatoes and beans in april"
"we could hear the music from across the valley" "the meeting was postponed because of the snow"
"he forgot his keys and had to wait outside" "the library has thousands of books about history"
"the waiter brought the soup before the bread" "nobody knew where the old map had been hidden"
"the plane landed safely despite the strong wind" "my grandmother grew roses along the fence"
"the police stopped the car at the border" "a young woman sang softly in the next room"
"the company hired twenty new workers in march" "the ship sailed north along the rocky coast"
"i have never seen such a beautiful sunset" "the students argued about the meaning of the poem"
"the kitchen smelled of fresh bread and onions" "they waited for the bus in the pouring rain"
"the general ordered his men to cross the river" "she opened the window to let in some air"
"the market sells fish vegetables and fruit" "he spent the whole evening fixing the radio"
"the judge listened carefully to both sides" "the garden was full of birds in the morning"
"we lost our way in the forest after dark" "the clock in the hall struck twelve times"
"the engine made a strange noise on the hill" "her father worked in the mines for thirty years"
"the village church was built three hundred years ago" "you should always check the weather before sailing"
"the horses ran across the field toward the barn" "the captain looked at the sky and shook his head"
"he read the newspaper while his wife made tea" "the island can only be reached by boat"
"the shop on the main street sells old furniture" "she found a silver ring under the carpet"
"the rain stopped and the sun came out again" "the army marched through the town at dawn"
"the lawyer wrote down every word she said" "a cold wind blew from the east all night"
"the boys climbed the tree to see the parade" "the letter arrived three days after the wedding"
"my uncle keeps bees behind his cottage" "the fire spread quickly through the dry grass"
"we watched the fishermen mend their nets" "the queen gave a speech to the whole nation"
"the teacher wrote the answer on the board" "the road to the castle was long and narrow"
)
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
    rms=$(sox "$out/${name}_clean.wav" -n stat 2>&1 | awk '/RMS +amplitude/ {print $3}')
    len=$(soxi -D "$out/${name}_clean.wav")
    for noise in "white 10" "pink 5"; do
      kind=${noise% *}; snr=${noise#* }
      sox -n -r 16000 -c 1 -b 16 "$out/n.wav" synth "$len" ${kind}noise vol "$(python3 -c "print($rms * 10 ** (-$snr / 20) * 1.732)")"
      sox -m "$out/${name}_clean.wav" "$out/n.wav" "$out/${name}_${kind}${snr}.wav"
    done
    for c in clean white10 pink5; do printf "%s_%s\t%s\n" "$name" "$c" "${sentences[$i]}" >> "$out/ref.tsv"; done
  done
done
rm -f "$out/n.wav"
echo "made $(wc -l < "$out/ref.tsv") files in $out" >&2
