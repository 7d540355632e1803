#!/usr/bin/env python3
"""The tests a swift-testing log (standard input) shows started and not ended, one a line: what a test process that
crashed or was killed was running. Suites and a parameterized test's cases are left out (a test ends once, after
its cases)."""
import re
import sys

started = re.compile(r"^\S+ Test (?!case |run started)(.+?) started\.$")
ended = re.compile(r"^\S+ Test (?!case |run )(.+?) (?:with \d+ test cases? )?(?:passed|failed|skipped)\b")
running = {}
for line in sys.stdin:
    line = line.rstrip("\n")
    if m := started.match(line):
        running[m.group(1)] = True
    elif m := ended.match(line):
        running.pop(m.group(1), None)
for name in running:
    print(f"   not finished: {name}")
