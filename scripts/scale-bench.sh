#!/usr/bin/env bash
# The scale figures of issue 12 (docs/performance.md, Server): a PostgreSQL store of ATHLETES × WORKOUTS (default
# 1000 × 1000, teams of 50) made by scripts/scale-generate.sql, then "any cycling activity with average heart
# rate > 150" timed through the store (release build of workout-scale-bench): for one athlete and for a team
# of 50. Uses $WORKOUT_BENCH_POSTGRES_URL (an empty database) or starts a throw-away cluster like the tests.
#   scripts/scale-bench.sh [ATHLETES] [WORKOUTS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
athletes="${1:-1000}"
workouts="${2:-1000}"
runs="${3:-200}"
source scripts/ensure-packages.sh
ensure_packages
source scripts/test-postgres.sh
WORKOUT_TEST_POSTGRES_URL="${WORKOUT_BENCH_POSTGRES_URL:-}" start_test_postgres
url="$WORKOUT_TEST_POSTGRES_URL"
swift build --product workout >/dev/null
swift build -c release --product workout-scale-bench >/dev/null
data=$(mktemp -d /tmp/workout-scale.XXXXXX)
# The schema: the server applies its migrations when it starts.
.build/debug/workout serve --db "$url" --data "$data" --port 0 --log-level error >"$data/serve.out" &
server=$!
for _ in $(seq 1 100); do grep -q listening "$data/serve.out" && break; sleep 0.2; done
kill -TERM "$server"
wait "$server" || true
started=$(date +%s)
psql "$url" -q -v athletes="$athletes" -v workouts="$workouts" -f scripts/scale-generate.sql
echo "generated $athletes athletes x $workouts workouts in $(( $(date +%s) - started )) s"
psql "$url" -Atc "SELECT athlete FROM athlete_partition ORDER BY athlete" >"$data/ids.txt"
one=$(head -n 1 "$data/ids.txt")
echo "plan for one athlete (the statement the backend sends, values inlined):"
psql "$url" -Atc "EXPLAIN (ANALYZE, COSTS OFF) SELECT w.uuid FROM workout w WHERE w.athlete = '$one' AND NOT w.recording
  AND w.row_id IN (SELECT s0.workout_row FROM statistic s0 WHERE s0.athlete = '$one' AND s0.activity_row IS NOT NULL
  AND s0.quantity_type = 'heartRate' AND s0.activity_type = 'cycling' AND s0.average > 150)
  ORDER BY w.start DESC, w.uuid DESC"
team=$(head -n 50 "$data/ids.txt" | sed "s/.*/'&'/" | paste -sd,)
echo "plan for a team of 50 (the teams' table):"
psql "$url" -Atc "EXPLAIN (ANALYZE, COSTS OFF) SELECT DISTINCT s0.workout_start, s0.workout_uuid FROM team_statistic s0
  WHERE s0.athlete = ANY(ARRAY[$team]::uuid[]) AND s0.activity_row IS NOT NULL AND s0.quantity_type = 'heartRate'
  AND s0.activity_type = 'cycling' AND s0.average > 150"
.build/release/workout-scale-bench "$url" "$data/ids.txt" "$runs"
rm -rf "$data"
