#!/usr/bin/env python3
"""Fits the word-confidence calibration (Sources/SpeechGraphSphinx/ConfidenceCalibration.swift) on the
development set, never on ../shared:

    bash scripts/make-calibration-set.sh out/calibration
    speechgraph transcribe --format jsonl --confidence posterior out/calibration/c*.wav > out/calibration.jsonl
    python3 scripts/fit-calibration.py out/calibration/ref.tsv out/calibration.jsonl

A logistic regression (Newton's method, a little L2) of right/wrong on [1, logit(posterior), logit(the
utterance's mean posterior), log(duration)]; prints the coefficients, and the cross-validated log loss of this
feature set and of the posterior alone (two folds: the two voices each sentence was spoken by)."""
import json
import math
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from reliability import align, key  # noqa: E402


def samples(ref_path, jsonl, only=None):
    refs = {}
    for line in open(ref_path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 2:
            refs[key(f[0])] = f[1].lower().split()
    results = {}
    for line in open(jsonl):
        e = json.loads(line)
        if e.get("type") == "result" and e.get("isFinal"):
            results.setdefault(key(e.get("source", "")), []).append(e)
    out = []
    for name, ref in refs.items():
        if only and only not in name:
            continue
        hyp = []
        for e in results.get(name, []):
            words = e.get("words", [])
            mean = sum(w["confidence"] for w in words) / len(words) if words else 0
            hyp += [(w, mean) for w in words]
        hyp.sort(key=lambda x: x[0]["start"])
        for (w, mean), ok in zip(hyp, align(ref, [h[0]["text"] for h in hyp])):
            out.append((int(ok), w["confidence"], mean, w["end"] - w["start"]))
    return out


def logit(p):
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def full(s):
    return [1.0, logit(s[1]), logit(s[2]), math.log(max(s[3], 0.01))]


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


ref_path, jsonl = sys.argv[1], sys.argv[2]
data = samples(ref_path, jsonl)
folds = [samples(ref_path, jsonl, "_0_"), samples(ref_path, jsonl, "_1_")]
for name, features in [("posterior alone", alone), ("posterior, utterance, duration", full)]:
    loss = sum(log_loss(fit(tr, features), te, features) * len(te) for tr, te in [folds, folds[::-1]])
    print(f"cross-validated log loss, {name}: {loss / len(data):.4f}")
w = fit(data, full)
print(f"{len(data)} words; intercept {w[0]:.4f}, posterior {w[1]:.4f}, utterance {w[2]:.4f}, duration {w[3]:.4f}")
