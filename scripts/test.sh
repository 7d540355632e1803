#!/usr/bin/env bash
# make test's run of the built tests: every test once, in two test processes side by side.
#
# The second process runs, from the start, the tests that spend their time waiting rather than computing:
# - the JACK suite: serialized (libjack in one process talks to one server at a time), and most of its minute and
#   a half is real-time audio;
# - the tests listed in `beside` below, which play audio in real time or wait for a timeout (web captions in a
#   browser, a signal after 25 s of audio, a closed pipe, plugins that hang, a satellite that streams silence).
# Why: a test process runs as many tests at once as there are cores, so in one process with the rest, a test that
# waits holds a core's turn, and a long one left to the end runs alone. Beside the rest, their waiting overlaps
# the CPU-bound tests. (The rest is not run at a lower priority: `nice swift test` starts the test process at
# priority 0 whatever its own.)
# Both processes take the same pattern, one to run and one to skip, so a renamed test still runs once, in the
# first process.
# Exit status: non-zero when either process fails. Ctrl-C or SIGTERM stops both.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
bundle=.build/debug/speechgraphPackageTests.xctest
[ -x "$bundle" ] || { echo "scripts/test.sh: $bundle not found: swift build --build-tests first" >&2; exit 1; }
beside='SpeechGraphJACKTests\.|WebCaptionsTests/'
beside+='|OutputFaultTests/(signalAfter25Seconds|closedPipeOnStandardOutput|fullDiskSaidWhenItHappens)\('
beside+='|PluginTests/(crashesAndHangs|slowProcess)\('
beside+='|WyomingTests/noSpeechAndEndlessSpeech\('
beside_log=$(mktemp "${TMPDIR:-/tmp}/speechgraph-tests-beside.XXXXXX")
"$bundle" --testing-library swift-testing --filter "$beside" >"$beside_log" 2>&1 &
second=$!
stop() { kill -TERM "$second" 2>/dev/null; wait "$second" 2>/dev/null; rm -f "$beside_log"; }
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
"$swift" test --skip-build --skip "$beside" 2>&1 | cat
main=${PIPESTATUS[0]}
wait "$second"
second_status=$?
trap - INT TERM
echo "── the JACK tests and the tests that wait on the clock, run in a process of their own beside the others:"
cat "$beside_log"
rm -f "$beside_log"
if [ "$main" -ne 0 ] || [ "$second_status" -ne 0 ]; then
  echo "scripts/test.sh: tests failed (the others: exit $main; the JACK tests and those beside them:" \
    "exit $second_status)" >&2
  exit 1
fi
