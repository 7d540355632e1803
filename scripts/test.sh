#!/usr/bin/env bash
# make test's run of the built tests: every test once, in four test processes side by side.
#
# Two processes run, from the start, the tests that spend their time waiting rather than computing (each tier chosen by
# the tests' tags, scripts/tests-by-tag.py):
# - the jack tier: serialized (libjack in one process talks to one server at a time; the suite sets the
#   process's JACK_DEFAULT_SERVER for its in-process clients, which is why no other test shares its process), and
#   most of its minute and a half is real-time audio;
# - the realtime tier, which plays audio in real time or waits for a timeout (web captions in a
#   browser, a signal after 25 s of audio, a closed pipe, plugins that hang, a satellite that streams silence).
# Why: a test process runs as many tests at once as there are cores, so in one process with the rest, a test that
# waits holds a core's turn, and a long one left to the end runs alone. Beside the rest, their waiting overlaps
# the CPU-bound tests. (The rest is not run at a lower priority: `nice swift test` starts the test process at
# priority 0 whatever its own.)
# The rest (the fast and model tiers) runs in two processes, for the same reason: the CLI's tests (speechgraphCLITests),
# most of which wait for a speechgraph process they started (each such test holds one of its process's threads while
# the child computes), and the in-process tests of the other targets, with the Wyoming server's suites (the CLI
# target's, beside them so that the two processes end together). One process ran them with a core idle
# for long stretches. The two skip what the other two tiers run, by the same expressions, so every test runs once.
# Exit status: non-zero when any process fails. Ctrl-C or SIGTERM stops the four test processes at once (each in
# a session of its own) and what they started (a browser, a speechgraph run: in the same session).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=.build/debug/speechgraphPackageTests.xctest
# The test processes write plain text where it is not a terminal (a log, CI's), as `swift test` did.
[ -t 1 ] || export NO_COLOR=1
[ -x "$bundle" ] || { echo "scripts/test.sh: $bundle not found: swift build --build-tests first" >&2; exit 1; }
# The tiers, by the tests' tags (Tests/SpeechGraphTestSupport/Tiers.swift), as the bundle lists them.
jack=$(python3 scripts/tests-by-tag.py "$bundle" jack) || exit 1
waiting=$(python3 scripts/tests-by-tag.py "$bundle" realtime) || exit 1
jack_log=$(mktemp "${TMPDIR:-/tmp}/speechgraph-tests-jack.XXXXXX")
waiting_log=$(mktemp "${TMPDIR:-/tmp}/speechgraph-tests-waiting.XXXXXX")
inprocess_log=$(mktemp "${TMPDIR:-/tmp}/speechgraph-tests-inprocess.XXXXXX")
# Fixtures that tests in two of the processes read (one decoding of the real set), made once for all four
# (ComputedOnce(sharedAs:), Tests/SpeechGraphTestSupport/TestSupport.swift).
SPEECHGRAPH_TEST_SHARED_DIR=$(mktemp -d "${TMPDIR:-/tmp}/speechgraph-tests-shared.XXXXXX")
export SPEECHGRAPH_TEST_SHARED_DIR
# The jack tier runs in a mount namespace of its own, on a new, empty /dev/shm (a tmpfs), when it may (as root, as
# make test runs, or in a user namespace where the kernel allows one). JACK keeps there, per user and shared by every
# server on the machine, its server registry, its shared memory and its metadata database. The registry holds 8
# servers and gives a dead server's entry back only to a server of the same name: each jackd killed (a test process
# stopped, a crash) leaves its entry for good, and after a few such runs no JACK server can start for this user
# until a reboot ("Too many servers already active"), the user's own included. A jackd that exits also removes the
# metadata database, under any client opening it (libdb's bus error in jack_client_open; a database left half made by
# a process killed then makes every client crash so). In its own namespace, all of that goes with the tier's
# processes: the machine's JACK and the tests never meet. When no namespace can be made, the tier shares the
# machine's /dev/shm, and says so.
private_shm=()
mount_shm='mount -t tmpfs -o mode=1777 speechgraph-tests /dev/shm'
for namespace in "unshare --mount" "unshare --user --map-root-user --mount"; do
  if $namespace --propagation private sh -c "$mount_shm" 2>/dev/null; then
    read -r -a private_shm <<<"$namespace --propagation private"
    private_shm+=(sh -c "$mount_shm"' && exec "$@"' jack-tier)
    break
  fi
done
[ ${#private_shm[@]} -gt 0 ] ||
  echo "scripts/test.sh: the jack tier shares this machine's /dev/shm (no mount namespace could be made)" >&2
# setsid: each in a session and process group of its own (in a script, a background job is not a group leader, so
# setsid runs it in place: its PID is its session's and its group's).
setsid "${private_shm[@]}" "$bundle" --testing-library swift-testing --filter "$jack" >"$jack_log" 2>&1 &
jack_pid=$!
setsid "$bundle" --testing-library swift-testing --filter "$waiting" >"$waiting_log" 2>&1 &
waiting_pid=$!
cli='^speechgraphCLITests\.'
# The Wyoming server's suites (the CLI target's, a third of its CPU) run beside the in-process tests, which ended
# two minutes before the CLI's: the two processes then end together.
served='^speechgraphCLITests\.(Wyoming|ClientErrorLog)'
setsid "$bundle" --testing-library swift-testing --skip "$cli(?!Wyoming|ClientErrorLog)|$jack|$waiting" \
  >"$inprocess_log" 2>&1 &
inprocess_pid=$!
# The CLI's tests in the background too, so that a signal to this script is handled at once (bash runs a trap only
# between commands, and `wait` is one it interrupts); their output is the progress shown.
setsid "$bundle" --testing-library swift-testing --filter "$cli" --skip "$served|$jack|$waiting" > >(cat) 2>&1 &
main_pid=$!
# The live processes of the four sessions: the test processes and what their tests started, in process groups of
# their own (Foundation's Process makes one per child) but still in the session setsid made (ps: procps).
started() {
  for pid in "$main_pid" "$inprocess_pid" "$jack_pid" "$waiting_pid"; do
    ps -o pid=,stat= -s "$pid" 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }'
  done
}
stop() {
  for pid in "$main_pid" "$inprocess_pid" "$jack_pid" "$waiting_pid"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for child in $(started); do kill -TERM "$child" 2>/dev/null; done
  # A test's child can have SIGTERM blocked (it inherits the signal mask of the runner thread that started it): what
  # is still running after 5 s is killed, each by its PID.
  for _ in $(seq 50); do
    [ -z "$(started)" ] && break
    sleep 0.1
  done
  for child in $(started); do kill -KILL "$child" 2>/dev/null; done
  wait 2>/dev/null
  rm -f "$jack_log" "$waiting_log" "$inprocess_log"
  rm -rf "$SPEECHGRAPH_TEST_SHARED_DIR"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
wait "$main_pid"
main=$?
wait "$inprocess_pid"
inprocess=$?
wait "$jack_pid"
jack_status=$?
wait "$waiting_pid"
waiting_status=$?
wait  # the main run's output, still being copied
trap - INT TERM
echo "── the in-process tests (every target's but the CLI's) and the Wyoming server's, run in a process of their own beside the others:"
cat "$inprocess_log"
echo "── the jack tier (a private JACK server), run in a process of its own beside the others:"
cat "$jack_log"
echo "── the realtime tier (tests that wait on the clock), run in a process of its own beside the others:"
cat "$waiting_log"
# A process that failed: what it printed last, again at the end (a CI log shown in part keeps its end), and the
# crash report, which a crashed test process writes in place of the name of the test it was running.
recap() {
  [ "$2" -eq 0 ] && return
  echo "── $1 ended with exit $2; the tests it had started and not finished, and its last lines:"
  python3 scripts/unfinished-tests.py <"$3"
  if grep -q '^\*\*\* ' "$3"; then sed -n '/^\*\*\* /,$p' "$3" | head -n 80; else tail -n 25 "$3"; fi
}
recap "the in-process tests' process" "$inprocess" "$inprocess_log"
recap "the jack tier's process" "$jack_status" "$jack_log"
recap "the realtime tier's process" "$waiting_status" "$waiting_log"
rm -f "$jack_log" "$waiting_log" "$inprocess_log"
rm -rf "$SPEECHGRAPH_TEST_SHARED_DIR"
if [ "$main" -ne 0 ] || [ "$inprocess" -ne 0 ] || [ "$jack_status" -ne 0 ] || [ "$waiting_status" -ne 0 ]; then
  echo "scripts/test.sh: tests failed (the CLI's: exit $main; the in-process ones: exit $inprocess;" \
    "the JACK tests: exit $jack_status; the tests that wait: exit $waiting_status)" >&2
  exit 1
fi
