"""Reads an SRT and a WebVTT file with real parsers (PyPI's srt and webvtt-py) and checks every cue: at most 2
lines of at most 42 characters, at most 7 s, inside 0...DURATION seconds, in order. Prints 'ok N M'
(the cue counts) or the first problem, with exit status 1. Usage: check_subtitles.py FILE.srt FILE.vtt DURATION"""
import sys

import srt
import webvtt


def check(cues, name, duration):
    last_end = 0.0
    for i, (start, end, text) in enumerate(cues):
        lines = text.split("\n")
        if len(lines) > 2 or any(len(line) > 42 for line in lines) or not text.strip():
            sys.exit(f"{name} cue {i + 1}: bad lines {lines!r}")
        if end - start > 7.0 + 1e-6 or end <= start:
            sys.exit(f"{name} cue {i + 1}: {start:.3f} --> {end:.3f} lasts {end - start:.3f} s")
        if start < 0 or end > duration + 0.05:
            sys.exit(f"{name} cue {i + 1}: {start:.3f} --> {end:.3f} outside 0 .. {duration:.3f}")
        if start < last_end - 1e-6:
            sys.exit(f"{name} cue {i + 1}: starts at {start:.3f}, before the previous one ends ({last_end:.3f})")
        last_end = end


def seconds(stamp):
    h, m, s = stamp.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


srt_path, vtt_path, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(srt_path, encoding="utf-8") as f:
    subs = list(srt.parse(f.read(), ignore_errors=False))
check([(s.start.total_seconds(), s.end.total_seconds(), s.content) for s in subs], "srt", duration)
vtt = webvtt.read(vtt_path)
check([(seconds(c.start), seconds(c.end), c.text) for c in vtt], "vtt", duration)
if [s.content for s in subs] != [c.text for c in vtt]:
    sys.exit("the srt and vtt cues differ")
print(f"ok {len(subs)} {len(vtt)}")
