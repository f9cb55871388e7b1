#!/usr/bin/env bash
# The server's CPU per FIT upload as fixed work (docs/live-load.md, "Issue 27 same-run comparison"): one
# `workout serve` (the binary given, e.g. a release build of each of two commits) on a throw-away durable
# PostgreSQL cluster (scripts/test-postgres.sh), 3 athletes × the .fit files of WORKOUT_FIT_DIR
# (/work/shared/data/fit) uploaded one after another with curl; prints the server's CPU time (ticks of
# /proc/PID/stat) and the wall time for them, and the answers by status. CPU time, unlike rates, is
# comparable on a busy machine; run two builds alternately.
#
#   scripts/upload-cpu.sh PATH/TO/workout
#
# PERF_OUT=file also records `perf record -g -p SERVER` over the uploads (perf report -i file --children).
set -u
bin="$1"
cd "$(dirname "$0")/.."
fits="${WORKOUT_FIT_DIR:-/work/shared/data/fit}"
source scripts/test-postgres.sh
WORKOUT_TEST_POSTGRES_URL="" WORKOUT_TEST_POSTGRES_DURABLE=1 start_test_postgres >/dev/null || exit 1
data=$(mktemp -d /tmp/workout-upload-cpu.XXXXXX)
chmod 700 "$data"
server="" perfpid=""
cleanup() {
  [ -n "$perfpid" ] && kill -INT "$perfpid" 2>/dev/null && wait "$perfpid" 2>/dev/null
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$data"
  stop_test_postgres
}
trap cleanup EXIT
db=(--db "$WORKOUT_TEST_POSTGRES_URL" --data "$data/server")
tokens=()
for i in 1 2 3; do tokens+=("$("$bin" athletes add "upload$i" "${db[@]}")") || exit 1; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$bin" serve "${db[@]}" --port "$port" --log-level error >"$data/log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
cpu() { local f; read -r -a f <"/proc/$server/stat"; echo $(( f[13] + f[14] )); }
if [ -n "${PERF_OUT:-}" ]; then
  perf record -F 999 -g -p "$server" -o "$PERF_OUT" >/dev/null 2>&1 &
  perfpid=$!
  sleep 0.5
fi
before=$(cpu) started=$(date +%s.%N) codes=""
for token in "${tokens[@]}"; do
  for file in "$fits"/*.fit; do
    codes+="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/octet-stream' --data-binary @"$file" "http://127.0.0.1:$port/v1/workouts") "
  done
done
after=$(cpu) ended=$(date +%s.%N)
echo "$bin: server CPU $(( after - before )) ticks ($(getconf CLK_TCK)/s), wall $(python3 -c "print(round($ended - $started, 1))") s;" \
  "answers: $(echo $codes | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
