#!/usr/bin/env bash
# Fuzzes `workout serve` with schemathesis against docs/openapi.yaml for a bounded time (not run by CI):
#
#   scripts/fuzz-server.sh [--duration SECONDS (600)] [--postgres] [--workers N (2)]
#
# Builds a release `workout`, starts it on a free loopback port with a throw-away data folder (SQLite stores, or a
# throw-away PostgreSQL cluster with --postgres, scripts/test-postgres.sh), adds an athlete in a team and a second
# team member, and runs schemathesis (PyPI, pinned, in .venv-fuzz, ignored by git) with every check for
# --duration seconds with the athlete's token. Prints schemathesis's summary and the server's error lines, and
# exits non-zero when schemathesis found a failure or the server stopped.
# WORKOUT_BIN=path runs that `workout` binary instead of building one (a build kept aside, or while another
# build holds the build folder).
#
# Positive data the server rightly refuses although the schema cannot say so are accepted for two operations
# only (the configuration below): an upload of bytes that are not a FIT file (422 invalid_fit: no schema says
# what a FIT file is) and a batch the engine refuses for what came before it (409/422: a schema sees one request,
# not the session's state). Everything else the server refuses, the document forbids.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
duration=600 backend=sqlite workers=2
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --postgres) backend=postgres; shift ;;
    --workers) workers="$2"; shift 2 ;;
    *) echo "usage: scripts/fuzz-server.sh [--duration SECONDS] [--postgres] [--workers N]" >&2; exit 2 ;;
  esac
done

schemathesis_version="4.32.5"
venv="$root/.venv-fuzz"
if ! "$venv/bin/python3" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$schemathesis_version')" 2>/dev/null; then
  echo "installing schemathesis $schemathesis_version into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q "schemathesis==$schemathesis_version" >&2
fi

if [ -n "${WORKOUT_BIN:-}" ]; then
  workout="$WORKOUT_BIN"
else
  swift build -c release --product workout >/dev/null
  workout="$(swift build -c release --show-bin-path)/workout"
fi
data=$(mktemp -d /tmp/workout-fuzz.XXXXXX)
chmod 700 "$data"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$data"
}
trap cleanup EXIT
if [ "$backend" = postgres ]; then
  source scripts/test-postgres.sh
  WORKOUT_TEST_POSTGRES_URL="" start_test_postgres
  # start_test_postgres sets its own EXIT trap (the cluster's removal), replacing ours: the server must stop
  # too (it was left running, and its data folder behind).
  trap 'cleanup; stop_test_postgres' EXIT
  db_args=(--db "$WORKOUT_TEST_POSTGRES_URL" --data "$data/server")
else
  db_args=(--db "$data/server")
fi
token=$("$workout" athletes add fuzz --team fuzzers "${db_args[@]}")
"$workout" athletes add fuzz-mate --team fuzzers "${db_args[@]}" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$workout" serve "${db_args[@]}" --host 127.0.0.1 --port "$port" --log-level error >"$data/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
cat >"$data/schemathesis.toml" <<EOF
[[operations]]
include-name = "POST /v1/workouts"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "409", "422", "429", "5xx"]

[[operations]]
include-name = "POST /v1/sessions/{id}/batches"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429", "5xx"]
EOF
echo "schemathesis $schemathesis_version, $backend, release build, $duration s, $workers workers, port $port" >&2
status=0
timeout --kill-after=30 $((duration + 120)) "$venv/bin/st" --config-file "$data/schemathesis.toml" run docs/openapi.yaml \
  --url "http://127.0.0.1:$port" -H "Authorization: Bearer $token" --checks all --max-time "$duration" \
  --workers "$workers" --no-color --request-timeout 30 --report ndjson --report-dir "$data/report" \
  --generation-database none || status=$?
if ! kill -0 "$server" 2>/dev/null; then
  echo "the server stopped during the run; its log:" >&2
  cat "$data/serve.log" >&2
  status=1
fi
echo "server error lines: $(grep -c . "$data/serve.log" || true)"
head -20 "$data/serve.log"
exit "$status"
