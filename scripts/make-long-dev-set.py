#!/usr/bin/env python3
"""A long-form development set of real speech with digits, spelled words and commands, for the Whisper engine's
window (docs/whisper.md), never ../shared: two recordings, each of 60 clean utterances of AN4's training part
(scripts/make-an4-dev-set.sh's output: its *_clean.wav files and ref.tsv), one after another with 0.7 to 1.6 s of
silence between (a fixed seed), about 4 minutes each. The first takes every other utterance from the first, the
second the others.

    EVERY=6 bash scripts/make-an4-dev-set.sh "" out/an4
    python3 scripts/make-long-dev-set.py out/an4 out/long-dev    # out/long-dev/dev0.wav, dev0.ref, dev1.wav, ...

Each .ref is a one-line table (`name<TAB>reference`) that ../shared/tools/wer.py reads."""
import os
import random
import subprocess
import sys
import tempfile

an4, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
refs = dict(line.rstrip("\n").split("\t", 1) for line in open(os.path.join(an4, "ref.tsv")) if "\t" in line)
keys = sorted(k for k in refs if k.endswith("_clean"))
random.seed(7)
with tempfile.TemporaryDirectory() as work:
    for part in range(2):
        chosen = keys[part::2][:60]
        files = []
        for i, k in enumerate(chosen):
            gap = os.path.join(work, f"gap{part}-{i}.wav")
            seconds = round(random.uniform(0.7, 1.6), 2)
            subprocess.run(["sox", "-D", "-n", "-r", "16000", "-c", "1", "-b", "16", gap, "trim", "0", str(seconds)], check=True)
            files += [os.path.join(an4, f"{k}.wav"), gap]
        subprocess.run(["sox", "-D"] + files + [os.path.join(out, f"dev{part}.wav")], check=True)
        with open(os.path.join(out, f"dev{part}.ref"), "w") as f:
            f.write(f"dev{part}\t" + " ".join(refs[k] for k in chosen) + "\n")
print(f"make-long-dev-set: {out}/dev0.wav and dev1.wav, 60 utterances each", file=sys.stderr)
