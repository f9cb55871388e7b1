#!/usr/bin/env bash
# The external kill test at length: `workout debug-record` killed with SIGKILL at N random instants
# (default 100), each recovered, continued and compared with an uninterrupted recording
# (Tests/WorkoutStoreTests/CrashRecoveryTests.swift). Usage: scripts/kill-test.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
WORKOUT_KILL_TRIALS="${1:-100}" swift test --filter 'CrashRecoveryTests/killedRecorderRecovers'
