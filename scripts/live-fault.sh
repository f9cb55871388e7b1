#!/usr/bin/env bash
# Issue 12's fault figures (README, Server): live sessions on a PostgreSQL-backed `workout serve`;
# PostgreSQL is restarted with `pg_ctl restart -m immediate` a quarter of the way in and the server is
# `kill -9`'d and started again half way; scripts/live-load.py then counts acknowledged samples lost or
# stored twice. Uses a throw-away cluster (scripts/test-postgres.sh) and the debug build.
#   scripts/live-fault.sh [SESSIONS] [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
sessions="${1:-50}"
seconds="${2:-60}"
source scripts/ensure-packages.sh
ensure_packages
source scripts/test-postgres.sh
WORKOUT_TEST_POSTGRES_URL="" start_test_postgres
url="$WORKOUT_TEST_POSTGRES_URL"
swift build --product workout >/dev/null
workout=.build/debug/workout
data=$(mktemp -d /tmp/workout-fault.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
for i in $(seq 1 20); do "$workout" athletes add "fault$i" --db "$url" --data "$data/server"; done >"$data/tokens"
"$workout" serve --db "$url" --data "$data/server" --port "$port" --log-level error >"$data/serve.log" 2>&1 &
server=$!
sleep 3
python3 scripts/live-load.py --url "http://127.0.0.1:$port" --tokens "$data/tokens" --pid "$server" \
  --sessions "$sessions" --duration "$seconds" --uploads 0 >"$data/load.out" 2>&1 &
load=$!
sleep $(( seconds / 4 ))
echo "pg_ctl restart -m immediate"
as_postgres=()
[ "$(id -u)" -eq 0 ] && as_postgres=(runuser -u postgres --)
"${as_postgres[@]}" "$WORKOUT_TEST_POSTGRES_BIN/pg_ctl" -D "$WORKOUT_TEST_POSTGRES_DATA" -m immediate -w restart >/dev/null
sleep $(( seconds / 4 ))
echo "kill -9 the server, start it again"
kill -9 "$server"
wait "$server" 2>/dev/null
"$workout" serve --db "$url" --data "$data/server" --port "$port" --log-level error >>"$data/serve.log" 2>&1 &
server=$!
wait "$load"
cat "$data/load.out"
kill -TERM "$server"
wait "$server"
rm -rf "$data"
