#!/usr/bin/env bash
# make test's run of the built tests: every suite, the JACK tests in a test process of their own beside the rest.
#
# Why two processes: the JACK suite is serialized (libjack in one process talks to one server at a time) and
# spends most of its minute waiting on real-time audio. In one test process with two cores, the runner starts
# a serialized suite's next test only once the tests queued before it have run, so the JACK suite ran last,
# with a core idle. Run from the start in a second process, it overlaps the rest. (The rest is not run at a lower
# priority: `nice swift test` starts the test process at priority 0 whatever its own.)
# Exit status: non-zero when either process fails. Ctrl-C or SIGTERM stops both.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
bundle=.build/debug/speechgraphPackageTests.xctest
[ -x "$bundle" ] || { echo "scripts/test.sh: $bundle not found: swift build --build-tests first" >&2; exit 1; }
jack_log=$(mktemp "${TMPDIR:-/tmp}/speechgraph-jack-tests.XXXXXX")
"$bundle" --testing-library swift-testing --filter 'SpeechGraphJACKTests\.' >"$jack_log" 2>&1 &
jack=$!
stop() { kill -TERM "$jack" 2>/dev/null; wait "$jack" 2>/dev/null; rm -f "$jack_log"; }
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
"$swift" test --skip-build --skip 'SpeechGraphJACKTests\.' 2>&1 | cat
main=${PIPESTATUS[0]}
wait "$jack"
jack_status=$?
trap - INT TERM
echo "── the JACK tests (SpeechGraphJACKTests), run in a process of their own beside the others:"
cat "$jack_log"
rm -f "$jack_log"
if [ "$main" -ne 0 ] || [ "$jack_status" -ne 0 ]; then
  echo "scripts/test.sh: tests failed (the others: exit $main; the JACK tests: exit $jack_status)" >&2
  exit 1
fi
