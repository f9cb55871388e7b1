#!/usr/bin/env bash
# Report sizes, `workout report` times and Chromium --dump-dom wall times (median of 3 runs, browser
# start included; an empty page as the baseline; and the page's own parse time as it notes it) for the
# README's figures: the full-distance replay, the pool-swim scenario, three real recordings and the
# 24-hour ultra. Usage: scripts/report-figures.sh [SHARED_DATA_DIR]   (builds `workout` first)
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${1:-${WORKOUT_SHARED_DATA:-../shared/data}}"
swift build --product workout >&2
workout="$(swift build --show-bin-path)/workout"
chromium="$(command -v chromium || command -v chromium-browser)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
db="$scratch/store/workouts.sqlite"
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(--no-sandbox)

id_of() { "$workout" "$@" --db "$db" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print((d.get("workout") or d)["id"])'; }

measure() {
  local name="$1" id="$2" page="$scratch/$1.html" times=() parsed=()
  local start end
  start=$(date +%s.%N); "$workout" report "$id" --db "$db" --output "$page" >/dev/null; end=$(date +%s.%N)
  local render; render=$(echo "$end - $start" | bc)
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$chromium" --headless "${sandbox[@]}" --disable-gpu --no-first-run --user-data-dir="$scratch/profile" \
      --dump-dom "file://$page" 2>/dev/null >"$scratch/dom.html"
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
    parsed+=("$(grep -o 'data-parsed-ms="[0-9]*"' "$scratch/dom.html" | grep -o '[0-9]*' || echo 0)")
  done
  local median; median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
  local parse; parse=$(printf '%s\n' "${parsed[@]}" | sort -n | sed -n 2p)
  printf '| %s | %s | %.2f s | %.2f s | %s ms |\n' "$name" "$(stat -c %s "$page")" "$render" "$median" "$parse"
}

blank() {
  local times=() start end
  echo '<!DOCTYPE html><title>blank</title>' >"$scratch/blank.html"
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$chromium" --headless "${sandbox[@]}" --disable-gpu --no-first-run --user-data-dir="$scratch/profile" \
      --dump-dom "file://$scratch/blank.html" >/dev/null 2>&1
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '| (baseline: an empty page) | 35 | - | %.2f s | - |\n' "$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)"
}

echo "| workout | bytes | workout report | --dump-dom (median of 3) | parsed by (data-parsed-ms) |"
echo "|---|---:|---:|---:|---:|"
blank
measure "full-distance replay (seed 1)" "$(id_of replay full)"
measure "pool-swim scenario (seed 1)" "$(id_of replay pool-swim)"
measure "mk_triathlon_summary_last.fit" "$(id_of import "$shared/fit/mk_triathlon_summary_last.fit")"
measure "mk_sdk_activity_poolswim_with_hr.fit" "$(id_of import "$shared/fit/mk_sdk_activity_poolswim_with_hr.fit")"
measure "fp_edge810-vector.fit" "$(id_of import "$shared/fit/fp_edge810-vector.fit")"
measure "ultra-24h replay (seed 1)" "$(id_of replay ultra-24h)"
