#!/usr/bin/env bash
# with-jack.sh CMD...: runs CMD against a JACK server. When one is already running (the default
# server, or $JACK_DEFAULT_SERVER), against it; otherwise against a private dummy server (no sound
# card needed) that this script starts, and stops with SIGTERM when CMD ends.
set -euo pipefail
if jack_lsp >/dev/null 2>&1; then
  echo "with-jack: using the running JACK server" >&2
  exec "$@"
fi
name=speechgraph-private-$$
echo "with-jack: no JACK server running; starting a private dummy server '$name' (48 kHz, 1024 frames)" >&2
setpriv --pdeathsig KILL jackd -n "$name" --no-realtime -d dummy -r 48000 -p 1024 >/dev/null 2>&1 &
jackd_pid=$!
stop() {
  kill -TERM "$jackd_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$jackd_pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$jackd_pid" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 100); do
  jack_lsp -s "$name" >/dev/null 2>&1 && break
  kill -0 "$jackd_pid" 2>/dev/null || { echo "with-jack: jackd failed to start" >&2; exit 1; }
  sleep 0.02
done
export JACK_DEFAULT_SERVER=$name
status=0
"$@" || status=$?
exit $status
