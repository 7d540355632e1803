#!/usr/bin/env python3
"""Fits the word-confidence calibration (Sources/SpeechGraphSphinx/ConfidenceCalibration.swift) on the
development set, never on ../shared: synthesised speech (scripts/make-calibration-set.sh) and the training
partition of CMU's AN4 (scripts/make-an4-dev-set.sh), each clean and in white and pink noise:

    bash scripts/make-calibration-set.sh out/calibration
    bash scripts/make-an4-dev-set.sh "" out/an4
    speechgraph transcribe --format jsonl --confidence posterior out/calibration/*.wav > out/calibration.jsonl
    speechgraph transcribe --format jsonl --confidence posterior out/an4/*.wav > out/an4.jsonl
    python3 scripts/fit-calibration.py out/calibration/ref.tsv out/calibration.jsonl out/an4/ref.tsv out/an4.jsonl

With --spoken WER_PY first (the Whisper engine's calibration, ConfidenceCalibration.whisper), each formatted word
is read in spoken form by the scorer's normalisation (reliability.py --spoken):

    speechgraph transcribe --engine whisper --format jsonl --confidence posterior out/calibration/*.wav > ...
    python3 scripts/fit-calibration.py --spoken ../shared/tools/wer.py out/calibration/ref.tsv ... out/an4/ref.tsv ...

A logistic regression (Newton's method, a little L2) of right/wrong on the logit of the word's posterior, the
logit of its utterance's mean posterior (both piecewise linear: hinges at -2, 0 and 2, and at -1 and 1) and
the log of its duration, over every word of every set given. Prints the coefficients, and for three feature
sets (the posterior alone; the three features, linear; the chosen, hinged) two held-out log losses: two
folds over the pooled sets (the synthesised set split into the first and the second voice that spoke each
sentence, so that both folds hold every sentence and every voice; AN4 split by speaker), and
across the sets (fitted on one, scored on the other: the test sets are neither). The chosen features had the
best mean of the two. Word length was tried as a feature and dropped: it helped the pooled folds (0.535
against 0.606) and hurt across the sets (0.789 against 0.639), a property of AN4's spelled letters."""
import json
import math
import sys
import zlib

sys.path.insert(0, __import__("os").path.dirname(__file__))
from reliability import key, right_words, spoken_reader  # noqa: E402


def fold(name):
    """0 or 1: which of the two voices that spoke a synthesised sentence (c012_0_clean), or AN4's speaker
    (an251-fash-b_clean, split by a hash of the speaker)."""
    if name.startswith("c") and name[4:7] in ("_0_", "_1_"):
        return int(name[5])
    return zlib.crc32(name.split("-")[1].encode()) % 2 if name.count("-") >= 2 else 0


def samples(ref_path, jsonl, only=None):
    refs = {}
    for line in open(ref_path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 2:
            refs[key(f[0])] = NORMALIZE(f[1]) if NORMALIZE else f[1].lower().split()
    results = {}
    for line in open(jsonl):
        e = json.loads(line)
        if e.get("type") == "result" and e.get("isFinal"):
            results.setdefault(key(e.get("source", "")), []).append(e)
    out = []
    for name, ref in refs.items():
        if only is not None and fold(name) != only:
            continue
        hyp = []
        for e in results.get(name, []):
            words = e.get("words", [])
            mean = sum(w["confidence"] for w in words) / len(words) if words else 0
            hyp += [(w, mean) for w in words]
        hyp.sort(key=lambda x: x[0]["start"])
        for (w, mean), ok in zip(hyp, right_words(ref, [h[0]["text"] for h in hyp], NORMALIZE)):
            out.append((int(ok), w["confidence"], mean, w["end"] - w["start"]))
    return out


def logit(p):
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def linear(s):
    return [1.0, logit(s[1]), logit(s[2]), math.log(max(s[3], 0.01))]


# The hinges of the chosen model: piecewise-linear in the logits of the posterior and of the utterance's mean.
POSTERIOR_KNOTS = (-2.0, 0.0, 2.0)
UTTERANCE_KNOTS = (-1.0, 1.0)


def full(s):
    p, m = logit(s[1]), logit(s[2])
    return linear(s) + [max(0.0, p - k) for k in POSTERIOR_KNOTS] + [max(0.0, m - k) for k in UTTERANCE_KNOTS]


def alone(s):
    return [1.0, logit(s[1])]


def fit(data, features, l2=1e-3):
    xs = [features(s) for s in data]
    k = len(xs[0])
    w = [0.0] * k
    for _ in range(100):
        g = [l2 * wi for wi in w]
        h = [[l2 if i == j else 0.0 for j in range(k)] for i in range(k)]
        for x, s in zip(xs, data):
            p = 1 / (1 + math.exp(-max(min(sum(a * b for a, b in zip(w, x)), 30), -30)))
            for i in range(k):
                g[i] += (p - s[0]) * x[i]
                for j in range(k):
                    h[i][j] += p * (1 - p) * x[i] * x[j]
        a = [row[:] + [g[i]] for i, row in enumerate(h)]
        for c in range(k):
            pivot = max(range(c, k), key=lambda r: abs(a[r][c]))
            a[c], a[pivot] = a[pivot], a[c]
            for r in range(k):
                if r != c:
                    f = a[r][c] / a[c][c]
                    for cc in range(c, k + 1):
                        a[r][cc] -= f * a[c][cc]
        step = [a[i][k] / a[i][i] for i in range(k)]
        w = [wi - si for wi, si in zip(w, step)]
        if max(abs(si) for si in step) < 1e-7:
            break
    return w


def log_loss(w, data, features):
    total = 0.0
    for s in data:
        p = 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, features(s)))))
        total -= math.log(max(p if s[0] else 1 - p, 1e-9))
    return total / len(data)


args = sys.argv[1:]
# --spoken WER_PY: formatted words (Whisper's) read in spoken form by the scorer's normalisation (reliability.py).
NORMALIZE = None
if args[:1] == ["--spoken"] and len(args) >= 2:
    NORMALIZE = spoken_reader(args[1])
    args = args[2:]
pairs = list(zip(args[0::2], args[1::2]))
if not pairs or len(args) % 2 == 1:
    sys.exit("usage: fit-calibration.py [--spoken WER_PY] REFERENCES HYPOTHESES.jsonl [REFERENCES HYPOTHESES.jsonl ...]")
data = [s for r, j in pairs for s in samples(r, j)]
folds = [[s for r, j in pairs for s in samples(r, j, k)] for k in (0, 1)]
sets = [samples(r, j) for r, j in pairs]


def held_out(splits, features):
    total = sum(log_loss(fit(tr, features), te, features) * len(te) for tr, te in splits)
    return total / sum(len(te) for _, te in splits)


for name, features in [("posterior alone", alone), ("three features, linear", linear), ("chosen, hinged", full)]:
    pooled = held_out([folds, folds[::-1]], features)
    across = held_out([sets, sets[::-1]], features) if len(sets) == 2 else float("nan")
    print(f"held-out log loss, {name}: pooled folds {pooled:.4f}, across the sets {across:.4f}")
w = fit(data, full)
print(f"{len(data)} words; coefficients: " + ", ".join(f"{x:.4f}" for x in w))
