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
# CALLGRIND_OUT=file runs the server under `valgrind --tool=callgrind` and keeps the instructions of the uploads
# alone (counting starts after /health answers, `callgrind_control --zero`, and ends at the last answer,
# `--dump`): deterministic, unlike CPU time on a shared machine (compare with `callgrind_annotate --inclusive=yes`).
# Valgrind 3.19 crashes when a Swift program's main thread leaves for libdispatch's signal thread (async main's
# dispatch_main): the server runs with scripts/valgrind-dispatch-main.c preloaded, which drains the main queue on
# the main thread instead. A binary with DWARF 5 debug information is read by valgrind only without it: give it
# a copy made with `objcopy --strip-debug` (the symbols stay).
# WORKOUT_UPLOAD_ROUNDS (3) sets how many athletes upload the files.
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
for i in $(seq "${WORKOUT_UPLOAD_ROUNDS:-3}"); do tokens+=("$("$bin" athletes add "upload$i" "${db[@]}")") || exit 1; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
grind=()
if [ -n "${CALLGRIND_OUT:-}" ]; then
  cc -O2 -shared -fPIC -o "$data/dispatch-main.so" scripts/valgrind-dispatch-main.c \
    -L/opt/swift/usr/lib/swift/linux -ldispatch -Wl,-rpath,/opt/swift/usr/lib/swift/linux || exit 1
  grind=(env LD_PRELOAD="$data/dispatch-main.so" valgrind --tool=callgrind --dump-instr=no
    --callgrind-out-file="$CALLGRIND_OUT")
fi
"${grind[@]}" "$bin" serve "${db[@]}" --port "$port" --log-level error >"$data/log" 2>&1 &
server=$!
for _ in $(seq 1200); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
[ -n "${CALLGRIND_OUT:-}" ] && callgrind_control --zero "$server" >/dev/null
cpu() { local f; read -r -a f <"/proc/$server/stat"; echo $(( f[13] + f[14] )) $(( f[13] )) $(( f[14] )) $(( f[9] )); }
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
[ -n "${CALLGRIND_OUT:-}" ] && callgrind_control --dump=uploads "$server" >/dev/null
read -r b bu bs bf <<<"$before"
read -r a au as af <<<"$after"
echo "$bin: server CPU $(( a - b )) ticks (user $(( au - bu )), system $(( as - bs )); $(getconf CLK_TCK)/s), $(( af - bf )) minor page faults, wall $(python3 -c "print(round($ended - $started, 1))") s;" \
  "answers: $(echo $codes | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
