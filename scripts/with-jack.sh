#!/usr/bin/env bash
# with-jack.sh CMD...: runs CMD against a JACK server. When one is already running (the default
# server, or $JACK_DEFAULT_SERVER), against it; otherwise against a private dummy server (no sound
# card needed) that this script starts, and stops with SIGTERM when CMD ends.
set -euo pipefail
if (jack_lsp >/dev/null 2>&1; exit $?) 2>/dev/null; then
  echo "with-jack: using the running JACK server" >&2
  exec "$@"
fi
jackd_pid=
stop() {
  [ -n "$jackd_pid" ] || return 0
  kill -TERM "$jackd_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$jackd_pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$jackd_pid" 2>/dev/null || true
}
jackd_log=$(mktemp "${TMPDIR:-/tmp}/with-jack.XXXXXX")
trap 'stop; rm -f "$jackd_log"' EXIT
# jackd's own words when it fails, and what to do about the one failure a machine keeps: JACK's server registry
# (/dev/shm/jack-shm-registry, 8 servers per user) keeps the entry of a server that was killed, for good.
failed() {
  echo "with-jack: jackd failed to start:" >&2
  grep -v '^Copyright\|^jackdmp \|ABSOLUTELY NO WARRANTY\|free software\|under certain conditions' "$jackd_log" |
    sed 's/^/  jackd: /' >&2
  if grep -q "Too many servers already active" "$jackd_log"; then
    echo "with-jack: JACK's registry of servers is full of servers that were killed; with no JACK server" \
      "running, remove /dev/shm/jack-shm-registry and /dev/shm/jack_db-$(id -u) (or reboot)" >&2
  fi
}
# Wait until the server answers. jack_lsp aborts while it is not up yet: probe in a subshell whose
# stderr goes nowhere, so that bash's "Aborted" reports stay quiet. The subshell must not be a bare command:
# bash would exec it in place, and this script's shell, not the subshell, would report the abort.
# A deadline only bounds a jackd that hangs (a loaded machine can take many seconds to start one); one that
# hung while starting (seen once, after a test run, and not again) is stopped and another started in its place.
ready=0
for attempt in 1 2; do
  name=speechgraph-private-$$-$attempt
  echo "with-jack: no JACK server running; starting a private dummy server '$name' (48 kHz, 1024 frames)" >&2
  setpriv --pdeathsig KILL jackd -n "$name" --no-realtime -d dummy -r 48000 -p 1024 >"$jackd_log" 2>&1 &
  jackd_pid=$!
  deadline=$((SECONDS + 45))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if (jack_lsp -s "$name" >/dev/null 2>&1; exit $?) 2>/dev/null; then ready=1; break; fi
    kill -0 "$jackd_pid" 2>/dev/null || { failed; exit 1; }
    sleep 0.02
  done
  [ "$ready" = 1 ] && break
  echo "with-jack: jackd did not answer within 45 s" >&2
  stop
done
[ "$ready" = 1 ] || exit 1
export JACK_DEFAULT_SERVER=$name
status=0
"$@" || status=$?
exit $status
