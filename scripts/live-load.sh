#!/usr/bin/env bash
# Issue 12's load and fault figures (docs/live-load.md): a release `workout serve` on a throw-away PostgreSQL
# cluster with durable settings (fsync on, synchronous_commit on), live sessions and FIT uploads from
# scripts/live-load.py, optionally with faults injected mid-run.
#
#   scripts/live-load.sh [--sessions 1000] [--duration 600] [--uploads 20] [--athletes 200] [--pool-size N]
#                        [--sqlite] [--fault | --fault-in-recovery] [--debug] [--statements] [--perf SECONDS]
#
# --fault: PostgreSQL is restarted with `pg_ctl restart -m immediate` at a third of the run and the server is
# `kill -9`'d and started again at two thirds (of the run's clock: a restart still recovering then, `pg_ctl`
# waiting, does not move the kill); sessions resume (live-load.py counts what was lost or doubled).
# --fault-in-recovery: instead, at a third of the run, PostgreSQL is stopped with `-m immediate`, the server
# `kill -9`'d and PostgreSQL started again at once, not waited for, while the server is started again (it is
# restarted until it stays up: its crash recovery runs under the new server's load).
# --sqlite: the server's per-athlete SQLite stores instead of PostgreSQL (no PostgreSQL restart then).
# --statements: PostgreSQL's pg_stat_statements (planning tracked) is on; its top statements are printed.
# --perf SECONDS: a whole-machine `perf record -a -g` of that long from the middle of the run (WORKOUT_PERF_OUT;
# not with --fault).
# On PostgreSQL the journals are checked for gaps (a change not numbered one past the one before it: a commit
# acknowledged and lost, issue 27) just before the server's kill of --fault (the sessions then in memory have
# written past any gap the PostgreSQL restart left) and after the run (the journals left: sessions not saved).
# WORKOUT_BIN=path runs that `workout` binary instead of building one (to compare two builds).
# WORKOUT_LOAD_LOG=path keeps a copy of the server's log there (with --fault and --fault-in-recovery, by default
# /tmp/workout-fault-serve-TIME.log: a fault run's log is the evidence of what went wrong).
# Prints live-load.py's figures, the machine's load average during the run, and the server's and
# PostgreSQL's CPU time.
set -uo pipefail
cd "$(dirname "$0")/.."
sessions=1000 duration=600 uploads=20 athletes=200 pool_size="" backend=postgres fault=0 configuration=release
statements=0 perf_seconds=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) sessions="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --uploads) uploads="$2"; shift 2 ;;
    --athletes) athletes="$2"; shift 2 ;;
    --pool-size) pool_size="$2"; shift 2 ;;
    --sqlite) backend=sqlite; shift ;;
    --fault) fault=1; shift ;;
    --fault-in-recovery) fault=recovery; shift ;;
    --debug) configuration=debug; shift ;;
    --statements) statements=1; shift ;;
    --perf) perf_seconds="$2"; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
source scripts/ensure-packages.sh
ensure_packages
if [ -n "${WORKOUT_BIN:-}" ]; then
  workout="$WORKOUT_BIN"  # a given binary (comparing builds), not built here
else
  swift build -c "$configuration" --product workout >/dev/null || exit 1
  workout="$(swift build -c "$configuration" --show-bin-path)/workout"
fi
data=$(mktemp -d /tmp/workout-load.XXXXXX)
chmod 700 "$data"
db_args=()
if [ "$backend" = postgres ]; then
  source scripts/test-postgres.sh
  [ "$statements" = 1 ] && export WORKOUT_TEST_POSTGRES_SETTINGS="${WORKOUT_TEST_POSTGRES_SETTINGS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
  WORKOUT_TEST_POSTGRES_URL="" WORKOUT_TEST_POSTGRES_DURABLE=1 start_test_postgres || exit 1
  [ "$statements" = 1 ] && psql -q "$WORKOUT_TEST_POSTGRES_URL" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
  db_args=(--db "$WORKOUT_TEST_POSTGRES_URL" --data "$data/server")
else
  db_args=(--db "$data/server")
fi
serve_args=("${db_args[@]}")
[ -n "$pool_size" ] && serve_args+=(--pool-size "$pool_size")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
for i in $(seq 1 "$athletes"); do "$workout" athletes add "load$i" "${db_args[@]}"; done >"$data/tokens" || exit 1
# The statements of the run only (not those adding the athletes and their partitions).
[ "$statements" = 1 ] && psql -q "$WORKOUT_TEST_POSTGRES_URL" -c "SELECT pg_stat_statements_reset()" >/dev/null
start_server() {
  "$workout" serve "${serve_args[@]}" --port "$port" --log-level error >>"$data/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$server" 2>/dev/null || break  # it exited (PostgreSQL unreachable, say)
    sleep 0.1
  done
  echo "the server did not answer /health; its log:" >&2
  cat "$data/serve.log" >&2
  return 1
}
start_server || exit 1
echo "$backend, $configuration build, $sessions sessions × 5 streams at 1 Hz, $uploads uploads/s, $duration s, $athletes athletes" \
  "(generator at nice $([ "$(id -u)" -eq 0 ] && echo -10 || echo 0))"
read -r load_before _ </proc/loadavg
# CPU seconds of the PostgreSQL cluster: the postmaster and its live children, plus the children that ended
# (counted into the postmaster's cutime/cstime when it reaps them).
postgres_cpu() {
  [ "$backend" = postgres ] || { echo 0; return; }
  local pid ticks=0 f
  pid=$(head -1 "$WORKOUT_TEST_POSTGRES_DATA/postmaster.pid" 2>/dev/null) || { echo 0; return; }
  for f in /proc/[0-9]*/stat; do
    read -r -a fields <"$f" 2>/dev/null || continue
    if [ "${fields[0]}" = "$pid" ]; then
      ticks=$(( ticks + fields[13] + fields[14] + fields[15] + fields[16] ))
    elif [ "${fields[3]}" = "$pid" ]; then
      ticks=$(( ticks + fields[13] + fields[14] ))
    fi
  done
  echo $(( ticks / $(getconf CLK_TCK) ))
}
postgres_before=$(postgres_cpu)
# PostgreSQL's sessions (backends started: each costs a fork and cold caches, planning and PL/pgSQL compiling
# again) and transactions committed and rolled back, summed over the cluster's databases (PostgreSQL 14+).
postgres_counts() {
  [ "$backend" = postgres ] || return 0
  psql -qAt "$WORKOUT_TEST_POSTGRES_URL" -c "SELECT sum(sessions) || ' ' || sum(xact_commit) || ' ' || sum(xact_rollback) FROM pg_stat_database" 2>/dev/null
}
counts_before=$(postgres_counts)
# The generator stands in for devices with processors of their own: as root it runs at a higher priority
# than the server and PostgreSQL it measures, so its own event loop is not what the latencies wait for.
generator=(python3)
[ "$(id -u)" -eq 0 ] && generator=(nice -n -10 python3)
"${generator[@]}" scripts/live-load.py --url "http://127.0.0.1:$port" --tokens "$data/tokens" --pid "$server" \
  --pid-file "$data/server.pid" --sessions "$sessions" --duration "$duration" --uploads "$uploads" \
  --fit-dir "${WORKOUT_FIT_DIR:-/work/shared/data/fit}" >"$data/load.out" 2>&1 &
load=$!
echo "$server" >"$data/server.pid"
loads=()
sample_load() { local one _; read -r one _ </proc/loadavg; loads+=("$one"); }
as_postgres=()
[ "$(id -u)" -eq 0 ] && as_postgres=(runuser -u postgres --)
began=$(date +%s)
# Sleeps until SECONDS after the run began (not after the last step: a step that waits does not move the next).
sleep_until() { local left=$(( began + $1 - $(date +%s) )); [ "$left" -gt 0 ] && sleep "$left"; return 0; }
# kill -9 the server and start it again. It does not start while PostgreSQL cannot be reached (it exits:
# "cannot connect"; PostgreSQL still in crash recovery, say), so it is started again until it stays up, as a
# supervisor would: up to 600 attempts, each start_server's own wait plus a second.
kill_and_restart_server() {
  kill -9 "$server"
  wait "$server" 2>/dev/null
  local attempt
  for attempt in $(seq 1 600); do
    start_server 2>/dev/null && break
    kill -9 "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    if [ "$attempt" = 600 ]; then
      echo "the server did not start again; its log:" >&2
      tail -20 "$data/serve.log" >&2
      kill "$load"
      exit 1
    fi
    sleep 1
  done
  echo "$server" >"$data/server.pid"
  echo "$(date -u +%T) the server answers again (/health) after $attempt start(s)"
}
# Journal gaps on PostgreSQL: changes not numbered one past the one before them in their session's journal (or
# a journal not starting at 0). Prints how many journals were checked, how many gaps, and up to 5 of them.
journal_gaps() {
  [ "$backend" = postgres ] || return 0
  local when="$1" checked found
  checked=$(psql -qAt "$WORKOUT_TEST_POSTGRES_URL" -c "SELECT count(*) FROM (SELECT DISTINCT athlete, session FROM journal_change) s" 2>/dev/null) || checked="?"
  found=$(psql -qAt "$WORKOUT_TEST_POSTGRES_URL" -c "SELECT '  session ' || session || ': change ' || seq
      || coalesce(' follows change ' || prev, ' begins the journal') FROM (
      SELECT session, seq, lag(seq) OVER (PARTITION BY athlete, session ORDER BY seq) AS prev FROM journal_change) x
    WHERE seq <> coalesce(prev, -1) + 1 ORDER BY session, seq" 2>/dev/null) || { echo "journal gap check ($when): the query failed"; return 0; }
  echo "journal gaps ($when): $(printf '%s' "$found" | grep -c .) in $checked journals"
  if [ -n "$found" ]; then printf '%s\n' "$found" | head -5; gaps_found=1; fi
  return 0
}
gaps_found=0
if [ "$fault" = 1 ]; then
  sleep_until $(( duration / 3 ))
  sample_load
  if [ "$backend" = postgres ]; then
    echo "$(date -u +%T) pg_ctl restart -m immediate"
    # In the background: a crash recovery longer than pg_ctl's wait (60 s) must not move the server's kill.
    ( "${as_postgres[@]}" "$WORKOUT_TEST_POSTGRES_BIN/pg_ctl" -D "$WORKOUT_TEST_POSTGRES_DATA" -m immediate -w -t 600 restart >/dev/null 2>&1 \
        && echo "$(date -u +%T) PostgreSQL is back" || echo "$(date -u +%T) pg_ctl restart failed" ) &
  fi
  sleep_until $(( 2 * duration / 3 ))
  sample_load
  journal_gaps "before the server's kill"
  echo "$(date -u +%T) kill -9 the server, start it again"
  kill_and_restart_server
elif [ "$fault" = recovery ]; then
  [ "$backend" = postgres ] || { echo "--fault-in-recovery needs PostgreSQL" >&2; exit 2; }
  sleep_until $(( duration / 3 ))
  sample_load
  eval "postmaster=( $(cat "$WORKOUT_TEST_POSTGRES_DATA/postmaster.opts") )"
  echo "$(date -u +%T) pg_ctl stop -m immediate, PostgreSQL started again (crash recovery), the server kill -9'd"
  "${as_postgres[@]}" "$WORKOUT_TEST_POSTGRES_BIN/pg_ctl" -D "$WORKOUT_TEST_POSTGRES_DATA" -m immediate -w stop >/dev/null
  # With the command line it ran with (port, socket folder, settings: postmaster.opts), not waited for.
  "${as_postgres[@]}" "${postmaster[@]}" >>"$(dirname "$WORKOUT_TEST_POSTGRES_DATA")/server.log" 2>&1 &
  kill_and_restart_server
fi
if [ "$perf_seconds" -gt 0 ] && [ "$fault" = 0 ]; then
  # A whole-machine profile (server, PostgreSQL, generator) from the middle of the run.
  sleep $(( duration / 2 ))
  perf record -a -g -o "${WORKOUT_PERF_OUT:-/tmp/live-load.perf}" -- sleep "$perf_seconds" >/dev/null 2>&1
  echo "perf profile of ${perf_seconds} s: ${WORKOUT_PERF_OUT:-/tmp/live-load.perf} (perf report -i … --sort comm,dso)"
fi
while kill -0 "$load" 2>/dev/null; do
  sample_load
  sleep 30
done
wait "$load"
cat "$data/load.out"
journal_gaps "after the run: the journals of sessions not saved"
echo "load average (1 min) during the run: ${loads[*]} (before: $load_before)"
read -r _ _ _ _ _ _ _ _ _ _ _ _ _ utime stime _ <"/proc/$server/stat" 2>/dev/null || true
[ -n "${utime:-}" ] && echo "server CPU time since its (last) start: $(( (utime + stime) / $(getconf CLK_TCK) )) s"
[ "$backend" = postgres ] && echo "PostgreSQL CPU time during the run: $(( $(postgres_cpu) - postgres_before )) s (a restart with --fault resets it)"
if [ "$backend" = postgres ] && [ -n "$counts_before" ]; then
  read -r sessions_before commits_before rollbacks_before <<<"$counts_before"
  read -r sessions_after commits_after rollbacks_after <<<"$(postgres_counts)"
  [ -n "${sessions_after:-}" ] && echo "PostgreSQL during the run: $(( sessions_after - sessions_before )) sessions started," \
    "$(( commits_after - commits_before )) transactions committed, $(( rollbacks_after - rollbacks_before )) rolled back" \
    "(a restart with --fault resets them)"
fi
# The server's own view of a batch: from its arrival at the session to its commit (workout_live_batch_commit_seconds,
# a histogram): the share of the generator's latency spent inside the server's session and database work.
curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | awk '
  /^workout_live_batch_commit_seconds_bucket/ && match($0, /[{,]le="[^"]*"/) { n++; bound[n] = substr($0, RSTART + 5, RLENGTH - 6); cum[n] = $2 }
  /^workout_live_batch_commit_seconds_count/ { total = $2 }
  END {
    if (total == 0) exit
    line = "server batch commit (arrival at the session to commit): " total " batches;"
    for (i = 1; i <= n; i++) if (bound[i] != "+Inf") line = line sprintf(" ≤%g s %.1f %%;", bound[i], cum[i] * 100 / total)
    print line
  }'
kill -TERM "$server"
wait "$server"
if [ "$statements" = 1 ]; then
  echo "PostgreSQL statements by total time (planning + execution):"
  psql -q "$WORKOUT_TEST_POSTGRES_URL" -P pager=off -c "SELECT calls, round((total_plan_time + total_exec_time)::numeric) AS total_ms,
      round((total_plan_time / nullif(calls, 0))::numeric, 3) AS plan_ms, round((total_exec_time / nullif(calls, 0))::numeric, 3) AS exec_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS query
    FROM pg_stat_statements ORDER BY total_plan_time + total_exec_time DESC LIMIT 12"
  psql -q "$WORKOUT_TEST_POSTGRES_URL" -P pager=off -c "SELECT split_part(relname, '_', 1) || '_' || split_part(relname, '_', 2) AS tables,
      sum(n_tup_ins) AS inserted, sum(n_tup_upd) AS updated, sum(n_tup_hot_upd) AS hot_updated
    FROM pg_stat_user_tables WHERE relname LIKE 'sample_chunk_%' OR relname LIKE 'route_chunk_%' GROUP BY 1"
  psql -q "$WORKOUT_TEST_POSTGRES_URL" -P pager=off -c "SELECT wal_records, wal_fpi, pg_size_pretty(wal_bytes) AS wal, wal_write, wal_sync FROM pg_stat_wal"
fi
[ -s "$data/serve.log" ] && { echo "server log (last lines):"; tail -5 "$data/serve.log"; }
# WORKOUT_LOAD_LOG=path keeps the whole server log (the data folder is removed).
if [ -z "${WORKOUT_LOAD_LOG:-}" ] && [ "$fault" != 0 ]; then WORKOUT_LOAD_LOG="/tmp/workout-fault-serve-$(date -u +%Y%m%dT%H%M%S).log"; fi
[ -n "${WORKOUT_LOAD_LOG:-}" ] && cp "$data/serve.log" "$WORKOUT_LOAD_LOG" && echo "server log kept: $WORKOUT_LOAD_LOG"
rm -rf "$data"
# A journal with a gap is a defect (a batch acknowledged and not kept): the run fails.
if [ "$gaps_found" = 1 ]; then echo "FAIL: a journal has a gap (above)"; exit 1; fi
