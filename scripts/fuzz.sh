#!/usr/bin/env bash
# Fuzzes the FIT decoder and import with libFuzzer (Swift's -sanitize=fuzzer, with AddressSanitizer).
#
#   scripts/fuzz.sh [RUNS] [extra libFuzzer flags…]     default 1000000 runs
#
# The target (Fuzz/FIT.swift) decodes each input with and without checksums, plans what decodes as
# an import and replays it through a live session. It is built from the sources of WorkoutModel,
# WorkoutEngine and WorkoutFormats compiled as one module (their imports of each other removed), so
# no package build is needed; the build is cached in .build/fuzz and redone when a source changes.
# The corpus grows in .build/fuzz/corpus, seeded with small generated files (and ../shared/data/fit
# when present). A crash leaves crash-* / leak-* files in .build/fuzz and a non-zero exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
shift || true
out=.build/fuzz
binary="$out/fuzz-fit"
sources=(Sources/WorkoutModel Sources/WorkoutEngine Sources/WorkoutFormats Fuzz/FIT.swift)
mkdir -p "$out/src" "$out/corpus" "$out/seeds"

if [ ! -x "$binary" ] || [ -n "$(find "${sources[@]}" -name '*.swift' -newer "$binary" | head -1)" ]; then
  echo "building $binary (about 2 minutes)" >&2
  rm -f "$out"/src/*.swift
  for file in $(find Sources/WorkoutModel Sources/WorkoutEngine Sources/WorkoutFormats -name '*.swift'); do
    name="$(echo "${file#Sources/}" | tr '/' '_')"
    sed -E '/^import Workout(Model|Engine)$/d' "$file" >"$out/src/$name"
  done
  cp Fuzz/FIT.swift "$out/src/FuzzTarget.swift"
  swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name FuzzFIT "$out"/src/*.swift -o "$binary"
fi

FIT_FUZZ_SEEDS="$out/seeds" "$binary" >/dev/null 2>&1 || true
seeds=("$out/seeds")
if [ -d ../shared/data/fit ]; then
  # The real recordings up to 64 KB (larger ones only slow each run down).
  mkdir -p "$out/real"
  find ../shared/data/fit -name '*.fit' -size -64k -exec cp {} "$out/real/" \;
  seeds+=("$out/real")
fi
cd "$out"
exec ./fuzz-fit -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$@" corpus "${seeds[@]#$out/}"
