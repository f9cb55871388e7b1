# Sourced by scripts/test.sh: a throw-away PostgreSQL cluster for the tests that need a real server.
#
# `start_test_postgres` installs Debian's `postgresql` when no server binaries are found, creates a cluster
# in a new temporary folder (as the `postgres` user when running as root: PostgreSQL refuses to run as
# root), starts it on 127.0.0.1 on a free port with its socket in that folder, creates the database
# `workout_test` and exports its URL as WORKOUT_TEST_POSTGRES_URL. The server and the folder are removed
# when the shell exits (trap). A URL already in WORKOUT_TEST_POSTGRES_URL is used as it is (an existing
# server of the developer's); nothing is started then.
#
# Tests that need PostgreSQL fail when the variable is missing and CI=true (never skip silently in CI).

_test_postgres_dir=""
_test_postgres_bin=""
_test_postgres_user=""

_test_postgres_as() {
  # Runs a server binary as the cluster's owner.
  if [ -n "$_test_postgres_user" ]; then
    runuser -u "$_test_postgres_user" -- "$@"
  else
    "$@"
  fi
}

_test_postgres_shown() {
  # The URL for messages: its password (user:password@) as ***.
  printf '%s' "$1" | sed -E 's#^([^:/]*://[^:@/]*):.*@#\1:***@#'
}

_test_postgres_find_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

stop_test_postgres() {
  if [ -n "$_test_postgres_dir" ] && [ -d "$_test_postgres_dir/replica" ]; then
    _test_postgres_as "$_test_postgres_bin/pg_ctl" -D "$_test_postgres_dir/replica" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "$_test_postgres_dir" ] && [ -d "$_test_postgres_dir" ]; then
    _test_postgres_as "$_test_postgres_bin/pg_ctl" -D "$_test_postgres_dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$_test_postgres_dir"
  fi
  _test_postgres_dir=""
}

start_test_postgres() {
  if [ -n "${WORKOUT_TEST_POSTGRES_URL:-}" ]; then
    echo "PostgreSQL for the tests: $(_test_postgres_shown "$WORKOUT_TEST_POSTGRES_URL") (given)" >&2
    return 0
  fi
  _test_postgres_bin=$(_test_postgres_find_bin || true)
  if [ -z "$_test_postgres_bin" ]; then
    echo "installing PostgreSQL (Debian's postgresql) for the tests" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    # The package's own cluster is not used (nor started here): policy-rc.d may refuse it in containers.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
    _test_postgres_bin=$(_test_postgres_find_bin)
  fi
  _test_postgres_user=""
  if [ "$(id -u)" -eq 0 ]; then
    _test_postgres_user=postgres
    id -u postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
  fi
  _test_postgres_dir=$(mktemp -d /tmp/workout-test-pg.XXXXXX)
  chmod 700 "$_test_postgres_dir"
  [ -z "$_test_postgres_user" ] || chown "$_test_postgres_user" "$_test_postgres_dir"
  trap stop_test_postgres EXIT
  _test_postgres_as "$_test_postgres_bin/initdb" -D "$_test_postgres_dir/data" -U postgres -A trust \
    --no-locale -E UTF8 --no-sync >"$_test_postgres_dir/initdb.log" 2>&1 || {
    cat "$_test_postgres_dir/initdb.log" >&2
    return 1
  }
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  # Durability is not what these tests measure (the fault tests restart the server, not the machine):
  # fsync off keeps a shared 2-core machine quick. Enough connections for the pool tests, and locks for
  # statements that touch every athlete's partition (scripts/scale-generate.sql).
  # WORKOUT_TEST_POSTGRES_DURABLE=1 (the live load figures, scripts/live-load.sh) keeps PostgreSQL's durable
  # defaults (fsync on, synchronous_commit on: a commit is on disk when acknowledged) and sizes the cluster for
  # a sustained write load: more shared buffers and WAL between checkpoints.
  local settings="-c fsync=off -c synchronous_commit=off"
  if [ "${WORKOUT_TEST_POSTGRES_DURABLE:-}" = 1 ]; then
    settings="-c fsync=on -c synchronous_commit=on -c shared_buffers=512MB -c max_wal_size=4GB -c checkpoint_timeout=15min -c wal_compression=on${WORKOUT_TEST_POSTGRES_SETTINGS:+ $WORKOUT_TEST_POSTGRES_SETTINGS}"
  fi
  _test_postgres_as "$_test_postgres_bin/pg_ctl" -D "$_test_postgres_dir/data" -l "$_test_postgres_dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $_test_postgres_dir $settings -c max_connections=200 -c max_locks_per_transaction=256" \
    start >/dev/null || {
    cat "$_test_postgres_dir/server.log" >&2
    return 1
  }
  _test_postgres_as "$_test_postgres_bin/createdb" -h 127.0.0.1 -p "$port" -U postgres workout_test
  export WORKOUT_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/workout_test"
  export WORKOUT_TEST_POSTGRES_DATA="$_test_postgres_dir/data"
  export WORKOUT_TEST_POSTGRES_BIN="$_test_postgres_bin"
  echo "PostgreSQL for the tests: $(_test_postgres_shown "$WORKOUT_TEST_POSTGRES_URL") (throw-away cluster in $_test_postgres_dir)" >&2
}

# `start_test_postgres_replica` (after start_test_postgres): a streaming-replication hot standby of the
# throw-away cluster (pg_basebackup -R, on its own free port), for the server's --read-url tests; exports
# WORKOUT_TEST_POSTGRES_REPLICA_URL (the replica's workout_test). Nothing is started for a given server
# (WORKOUT_TEST_POSTGRES_URL set beforehand): the replica tests then need WORKOUT_TEST_POSTGRES_REPLICA_URL too.
start_test_postgres_replica() {
  if [ -n "${WORKOUT_TEST_POSTGRES_REPLICA_URL:-}" ] || [ -z "$_test_postgres_dir" ]; then
    return 0
  fi
  local primary_port port
  primary_port=$(printf '%s' "$WORKOUT_TEST_POSTGRES_URL" | sed -E 's#.*:([0-9]+)/[^/]*$#\1#')
  _test_postgres_as "$_test_postgres_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres \
    -D "$_test_postgres_dir/replica" -R -X stream >"$_test_postgres_dir/basebackup.log" 2>&1 || {
    cat "$_test_postgres_dir/basebackup.log" >&2
    return 1
  }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  # A hot standby needs at least the primary's max_connections and max_locks_per_transaction.
  _test_postgres_as "$_test_postgres_bin/pg_ctl" -D "$_test_postgres_dir/replica" -l "$_test_postgres_dir/replica.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $_test_postgres_dir -c hot_standby=on -c fsync=off -c max_connections=200 -c max_locks_per_transaction=256" \
    start >/dev/null || {
    cat "$_test_postgres_dir/replica.log" >&2
    return 1
  }
  export WORKOUT_TEST_POSTGRES_REPLICA_URL="postgres://postgres@127.0.0.1:$port/workout_test"
  echo "PostgreSQL replica for the tests: $WORKOUT_TEST_POSTGRES_REPLICA_URL (streaming from the test cluster)" >&2
}
