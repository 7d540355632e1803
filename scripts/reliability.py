#!/usr/bin/env python3
"""Reliability of word confidences: which share of the words given a confidence in each bin are right.

    reliability.py REFERENCES HYPOTHESES.jsonl [--name NAME] [--features OUT.tsv]

REFERENCES: tab-separated `file<TAB>reference text` lines (the corpus manifest, with a header line, or a
plain tsv); HYPOTHESES: `speechgraph transcribe --format jsonl` output (final results with words, `source`
naming the file). Each file's recognized words are aligned to its reference (word edit distance; a word is
right when the alignment matches it to the same reference word). Prints, as `make bench` figures, the share
right and the count in the bins [0,.2) [.2,.4) [.4,.6) [.6,.8) [.8,1], the share right at confidence >= 0.8,
and the expected calibration error (the bins' |mean confidence - share right|, weighted by their counts).
--features writes one line per word: right (0/1), confidence, duration, letters (for fitting a calibration).
--spoken WER_PY reads formatted text (Whisper's: digits, capitals, punctuation, "Mr.") in spoken form, both sides,
with the scorer's own normalisation (../shared/tools/wer.py's): a recognized word is right when every spoken word
it stands for is ("1967." -> nineteen sixty seven: right when all three are).
"""
import argparse
import json
import os


def key(path):
    return os.path.splitext(os.path.basename(path))[0]


def align(ref, hyp):
    """For each hypothesis word, whether the minimum edit alignment matches it to an equal reference word."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    right = [False] * m
    i, j = n, m
    while i > 0 and j > 0:
        if d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            right[j - 1] = ref[i - 1] == hyp[j - 1]
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return right


def spoken_reader(wer_py):
    """wer.py's normalisation (lower case, formatted text in spoken form, punctuation gone) as a function of a
    text, returning its spoken words."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("wer", wer_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.words


def right_words(ref, hyp, normalize=None):
    """For each hypothesis word, whether it is right: with `normalize` (a text's spoken words), each hypothesis
    word stands for the spoken words it becomes, and is right when it becomes at least one and every one is
    matched in the alignment of the spoken words; without, `align`'s answer."""
    if normalize is None:
        return align(ref, hyp)
    parts = [normalize(h) for h in hyp]
    flat = [t for p in parts for t in p]
    matched = align(ref, flat)
    out, k = [], 0
    for p in parts:
        out.append(bool(p) and all(matched[k:k + len(p)]))
        k += len(p)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("references")
    parser.add_argument("hypotheses")
    parser.add_argument("--name", default="real")
    parser.add_argument("--features")
    parser.add_argument("--spoken", metavar="WER_PY")
    args = parser.parse_args()
    normalize = spoken_reader(args.spoken) if args.spoken else None
    refs = {}
    for line in open(args.references, encoding="utf-8"):
        fields = line.rstrip("\n").split("\t")
        if len(fields) >= 2 and not line.startswith("file\t"):
            refs[key(fields[0])] = normalize(fields[1]) if normalize else fields[1].lower().split()
    words = {}
    for line in open(args.hypotheses, encoding="utf-8"):
        event = json.loads(line)
        if event.get("type") == "result" and event.get("isFinal"):
            words.setdefault(key(event.get("source", "")), []).extend(event.get("words", []))
    samples = []
    for name, ref in refs.items():
        hyp = sorted(words.get(name, []), key=lambda w: w["start"])
        for w, ok in zip(hyp, right_words(ref, [w["text"] for w in hyp], normalize)):
            samples.append((ok, w["confidence"], w["end"] - w["start"], len(w["text"])))
    if args.features:
        with open(args.features, "w") as out:
            for ok, c, dur, letters in samples:
                out.write(f"{int(ok)}\t{c:.4f}\t{dur:.3f}\t{letters}\n")
    edges = [0, 0.2, 0.4, 0.6, 0.8, 1.0001]
    ece = 0.0
    for lo, hi in zip(edges, edges[1:]):
        inside = [(ok, c) for ok, c, _, _ in samples if lo <= c < hi]
        share = sum(ok for ok, _ in inside) / len(inside) if inside else float("nan")
        mean = sum(c for _, c in inside) / len(inside) if inside else 0
        if inside:
            ece += len(inside) / len(samples) * abs(mean - share)
        label = f"{lo:.1f}_{min(hi, 1):.1f}"
        print(f"confidence_{args.name}_bin_{label}_right {100 * share:.1f} %")
        print(f"confidence_{args.name}_bin_{label}_words {len(inside)} words")
    high = [ok for ok, c, _, _ in samples if c >= 0.8]
    print(f"confidence_{args.name}_at_least_0.8_right {100 * sum(high) / max(1, len(high)):.1f} %")
    print(f"confidence_{args.name}_expected_calibration_error {ece:.3f} fraction")


if __name__ == "__main__":
    main()
