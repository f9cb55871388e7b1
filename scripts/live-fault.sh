#!/usr/bin/env bash
# Issue 12's fault figures, short form (docs/live-load.md): scripts/live-load.sh --fault with SESSIONS live
# sessions for SECONDS and no uploads: PostgreSQL restarted with `pg_ctl restart -m immediate` at a third of
# the run, the server `kill -9`'d and started again at two thirds; then acknowledged samples lost or stored
# twice are counted (sessions never read back are "unverified", apart), and the journals are checked for gaps
# (before the kill and after the run, live-load.sh). `--fault-in-recovery` as a further option
# kills the server while PostgreSQL is in crash recovery instead (scripts/live-load.sh). For the full-load
# figure: scripts/live-load.sh --sessions 1000 --duration 600 --uploads 20 --fault
#   scripts/live-fault.sh [SESSIONS] [SECONDS] [more live-load.sh options]
set -uo pipefail
cd "$(dirname "$0")/.."
sessions="${1:-50}"
seconds="${2:-60}"
shift $(( $# > 2 ? 2 : $# ))
exec scripts/live-load.sh --sessions "$sessions" --duration "$seconds" --uploads 0 --athletes 20 --fault "$@"
