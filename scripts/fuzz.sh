#!/usr/bin/env bash
# Fuzzes each decoder with libFuzzer: scripts/fuzz.sh [runs per target, default 1000000] [targets…]
#
# Builds Fuzz/<Target>/main.swift with the decoder sources (Sources/WorkoutSensors/Decoding plus the
# dependency-free ANT.swift, ANTHost.swift and WatchLink.swift; ANTHost fuzzes the stick's host side) through `swiftc -sanitize=fuzzer,address`, writes a
# seed corpus of valid frames made by the encoders (Fuzz/Seeds), then runs each target for the given
# number of executions. New inputs go to .build/fuzz/corpus-work/<Target>; crashes to
# .build/fuzz/crashes/<Target>. Exits non-zero when a target crashes or fails a property.
#
# The FIT target (Fuzz/FIT/main.swift: the FIT decoder with and without checksums and with
# damaged-file salvage, which must agree with the strict decoder; the import plan and its replay
# through a live session) is built with the sources of WorkoutModel, WorkoutEngine and
# WorkoutFormats and WorkoutImport's session replay compiled as one module (their imports of each
# other removed); its seeds are small
# files it generates itself (FIT_FUZZ_SEEDS) and the real recordings under 64 KB in ../shared/data.
#
# The AppleHealth target (Fuzz/AppleHealth/main.swift) fuzzes the Apple Health export reader: the pull parser
# must give the same events and errors read whole or in pieces, with attributes made text or only checked;
# the reader's passes, scripts and their replays must never trap; read as a GPX route, the scan of plain points
# and the events give the same points or error; the first pass's scan of plain records and its events hand over
# the same records, counts and recoveries or give the same error; read from a file, the first pass in two halves
# at once gives what one parse gives. Seeds: the shared exports and fragments, Fuzz/Seeds/AppleHealth.
#
# The Chunks target (Fuzz/Chunks/main.swift) fuzzes the store's chunk decoder (Sources/WorkoutStore/Chunks,
# compiled alone): arbitrary bytes never trap, decoded chunks re-encode to the same bits, columns made from
# the input round-trip exactly; its seeds are valid chunks it writes itself (CHUNK_FUZZ_SEEDS).
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-1000000}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(NMEA ANT ANTHost WatchLink GATT FIT Chunks AppleHealth)

out=.build/fuzz
mkdir -p "$out"
decoders=(Sources/WorkoutSensors/Decoding/*.swift Sources/WorkoutSensors/ANT.swift Sources/WorkoutSensors/ANTHost.swift Sources/WorkoutSensors/WatchLink.swift)

echo "== seed corpus"
swiftc -O -module-name Seeds Fuzz/Seeds/main.swift Sources/WorkoutSensors/{ANT,NMEA,WatchLink}.swift -o "$out/seeds"
rm -rf "$out/seeds-corpus"
"$out/seeds" "$out/seeds-corpus"

status=0
summary=()
for target in "${targets[@]}"; do
    echo "== $target: build"
    max_len=4096
    if [ "$target" = FIT ]; then
        # One module of WorkoutModel, WorkoutEngine and WorkoutFormats (about 2 minutes to build).
        rm -rf "$out/fit-src" && mkdir -p "$out/fit-src"
        # The replay of a plan lives in WorkoutImport (the format-neutral live path): its two files that
        # need only Model, Engine and Formats come along.
        for file in $(find Sources/WorkoutModel Sources/WorkoutEngine Sources/WorkoutFormats -name '*.swift') \
            Sources/WorkoutImport/SessionReplay.swift Sources/WorkoutImport/FIT/FITPlanReplay.swift; do
            name="$(echo "${file#Sources/}" | tr '/' '_')"
            sed -E '/^import Workout(Model|Engine|Formats)$/d' "$file" >"$out/fit-src/$name"
        done
        swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzFIT \
            Fuzz/FIT/main.swift "$out"/fit-src/*.swift -o "$out/fuzz-FIT"
        rm -rf "$out/seeds-corpus/FIT" && mkdir -p "$out/seeds-corpus/FIT"
        FIT_FUZZ_SEEDS="$out/seeds-corpus/FIT" "$out/fuzz-FIT" >/dev/null 2>&1 || true
        if [ -d ../shared/data/fit ]; then
            find ../shared/data/fit -name '*.fit' -size -64k -exec cp {} "$out/seeds-corpus/FIT/" \;
        fi
        max_len=8192
    elif [ "$target" = AppleHealth ]; then
        # The export reader (XMLStream, the scanner, the reading, the scripts, GPX) with WorkoutModel,
        # WorkoutEngine, WorkoutFormats and WorkoutImport's session replay as one module; seeds: the shared
        # exports and fragments (nr_fragments, ds, od, js's export.xml) and the GPX routes in Fuzz/Seeds/AppleHealth.
        rm -rf "$out/health-src" && mkdir -p "$out/health-src"
        for file in $(find Sources/WorkoutModel Sources/WorkoutEngine Sources/WorkoutFormats -name '*.swift') \
            Sources/WorkoutImport/SessionReplay.swift Sources/WorkoutImport/AppleHealth/{XMLStream,HealthExport,HealthExportScanner,HealthExportReading,HealthExportSplit,HealthScript,GPXRoute}.swift; do
            name="$(echo "${file#Sources/}" | tr '/' '_')"
            sed -E '/^import Workout(Model|Engine|Formats)$/d' "$file" >"$out/health-src/$name"
        done
        swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzAppleHealth -package-name workout_engine \
            Fuzz/AppleHealth/main.swift "$out"/health-src/*.swift -o "$out/fuzz-AppleHealth"
        rm -rf "$out/seeds-corpus/AppleHealth" && mkdir -p "$out/seeds-corpus/AppleHealth"
        # Small GPX routes (plain points, odd forms, a malformed point) for the scan-against-events property.
        cp Fuzz/Seeds/AppleHealth/*.gpx "$out/seeds-corpus/AppleHealth/"
        shared="${WORKOUT_SHARED_DATA:-../shared/data}/applehealth"
        if [ -d "$shared" ]; then
            cp "$shared"/nr_fragments/*.xml "$shared"/ds_export.xml "$shared"/od_sampleexport-2.xml \
                "$shared"/ds_zip_contents/apple_health_export/export.xml "$out/seeds-corpus/AppleHealth/" 2>/dev/null || true
            cp "$shared"/ds_zip_contents/apple_health_export/export.xml "$out/seeds-corpus/AppleHealth/ds_zip_export.xml" \
                2>/dev/null || true
            unzip -p "$shared/js_export.zip" apple_health_export/export.xml >"$out/seeds-corpus/AppleHealth/js_export.xml" || true
            # hk_export.xml's header and DTD, 20 of its heart-rate records and its first workout.
            { head -n 82 "$shared/hk_export.xml"; grep -m 20 'HKQuantityTypeIdentifierHeartRate"' "$shared/hk_export.xml"
                grep -m 1 -A 3 '<Workout ' "$shared/hk_export.xml"; echo '</HealthData>'; } >"$out/seeds-corpus/AppleHealth/hk_head.xml"
        fi
    elif [ "$target" = Chunks ]; then
        # The store's chunk codec alone (Sources/WorkoutStore/Chunks: no imports); seeds from the encoder.
        swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzChunks -package-name workout_engine \
            Fuzz/Chunks/main.swift Sources/WorkoutStore/Chunks/*.swift -o "$out/fuzz-Chunks"
        rm -rf "$out/seeds-corpus/Chunks" && mkdir -p "$out/seeds-corpus/Chunks"
        CHUNK_FUZZ_SEEDS="$out/seeds-corpus/Chunks" "$out/fuzz-Chunks" >/dev/null 2>&1 || true
    else
        # The ANT host replays a whole session per input: shorter inputs reach as deep, much faster.
        if [ "$target" = ANTHost ]; then max_len=1024; fi
        swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name "Fuzz$target" \
            "Fuzz/$target/main.swift" Fuzz/Support.swift "${decoders[@]}" -o "$out/fuzz-$target"
    fi
    mkdir -p "$out/corpus-work/$target" "$out/crashes/$target"
    echo "== $target: $runs runs"
    log="$out/fuzz-$target.log"
    started=$(date +%s.%N)
    if "$out/fuzz-$target" -runs="$runs" -max_len="$max_len" -print_final_stats=1 \
        -artifact_prefix="$out/crashes/$target/" \
        "$out/corpus-work/$target" "$out/seeds-corpus/$target" >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
        tail -40 "$log"
    fi
    elapsed=$(echo "$(date +%s.%N) - $started" | bc)
    executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    line=$(printf '%-10s %-6s %10s executions in %6.1f s (%s exec/s) %s' "$target" "$result" "$executions" "$elapsed" "$rate" "$coverage")
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
