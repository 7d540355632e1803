#!/usr/bin/env python3
"""The tests of one tier, as a regular expression for the test runner's --filter or --skip.

Every test has one tier, given by the testing library's tags (Tests/SpeechGraphTestSupport/Tiers.swift) on the test or
on a suite around it: realtime (it waits on the clock), jack (a private JACK server), fast (no model, no server, no
corpus) or model (everything else, the default). A test with several takes the first of realtime, jack, fast, model.

    scripts/tests-by-tag.py BUNDLE TIER   (prints the expression; exit 1 when no test has the tier)

The tests and their tags are read from the bundle itself (--list-tests with an event stream), so the selection follows
the tags in the source and nothing else."""
import json, re, subprocess, sys, tempfile, os

def tests(bundle):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "events.jsonl")
        subprocess.run([bundle, "--testing-library", "swift-testing", "--list-tests",
                        "--event-stream-output-path", out, "--event-stream-version", "0"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        records = [json.loads(line) for line in open(out) if line.strip()]
    tags = {}
    functions = []
    for r in records:
        if r.get("kind") != "test":
            continue
        p = r["payload"]
        tags[p["id"]] = {t.lstrip(".") for t in p.get("_tags", [])}
        if p["kind"] == "function":
            functions.append(p["id"])
    return tags, functions

ORDER = ["realtime", "jack", "fast", "model"]

def tier(test_id, tags):
    # The test's own tags and those of every suite around it: "Module.Outer/Inner/name()/file:line:col".
    found = set(tags.get(test_id, set()))
    parts = test_id.split("/")[:-2]
    outer = parts[0].split(".")
    for k in range(1, len(outer) + 1):
        found |= tags.get(".".join(outer[:k]), set())
    for k in range(2, len(parts) + 1):
        found |= tags.get("/".join(parts[:k]), set())
    return next((t for t in ORDER if t in found), "model")

def split(test_id):
    """The suite path and the function's name of a test id."""
    parts = test_id.split("/")
    return "/".join(parts[:-2]), parts[-2].split("(")[0]

def main():
    bundle, wanted = sys.argv[1], sys.argv[2]
    if wanted not in ORDER:
        sys.exit(f"tests-by-tag.py: the tiers are {', '.join(ORDER)}")
    tags, functions = tests(bundle)
    by_suite = {}
    for f in functions:
        suite, name = split(f)
        by_suite.setdefault(suite, []).append((name, tier(f, tags)))
    patterns = []
    for suite, members in sorted(by_suite.items()):
        mine = sorted({n for n, t in members if t == wanted})
        if not mine:
            continue
        if len(mine) == len({n for n, _ in members}):
            patterns.append("^" + re.escape(suite) + "/")
        else:
            patterns += ["^" + re.escape(suite) + "/" + re.escape(n) + r"\(" for n in mine]
    if not patterns:
        sys.exit(f"tests-by-tag.py: no test has the tier {wanted}")
    print("|".join(patterns))

main()
