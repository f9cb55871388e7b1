#!/usr/bin/env python3
"""FIT benchmark: our decoder and import against Garmin's FIT SDK for Python, on the same files.

Builds the `workout` tool in release and a decode timer (scripts/fit-benchmark.swift with
Sources/WorkoutFormats/FIT, swiftc -O), replays the simulated full-distance triathlon (`full`) into a
fresh store and exports it as FIT, the same for the 24-hour run (`ultra-24h`, a file of several
megabytes), then measures on those files (and on the largest real recording in ../shared/data/fit when
present):
  1. our decode: read the file and decode every message (checksums verified), median of 20 runs;
  2. our import: `workout import` end to end (process start to exit: decode, plan, live session and
     builder, journal, store, comparison), median of --runs runs into fresh stores;
  3. garmin-fit-sdk (Python, .venv-fit): Stream.from_file + Decoder.read() with its defaults,
     timed inside Python (interpreter start excluded), median of --runs runs.
Bar: our decode at least 100x faster than the SDK.

Usage: scripts/fit-benchmark.py [--runs N] [--skip-build]   (--skip-build: use the release `workout` as built)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sdk_python():
    path = subprocess.run([os.path.join(ROOT, "scripts", "ensure-python-sdk.sh")], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return path


def build(skip):
    out = os.path.join(ROOT, ".build", "fit-benchmark")
    os.makedirs(out, exist_ok=True)
    decoder = os.path.join(out, "fit-decode")
    if not skip:
        subprocess.run(["swift", "build", "-c", "release", "--product", "workout"], cwd=ROOT, check=True)
    sources = [os.path.join(ROOT, "Sources", "WorkoutFormats", "FIT", name)
               for name in sorted(os.listdir(os.path.join(ROOT, "Sources", "WorkoutFormats", "FIT")))]
    timer = os.path.join(ROOT, "scripts", "fit-benchmark.swift")
    if not os.path.exists(decoder) or max(map(os.path.getmtime, sources + [timer])) > os.path.getmtime(decoder):
        main = os.path.join(out, "main.swift")  # top-level code lives in main.swift
        shutil.copyfile(timer, main)
        subprocess.run(["swiftc", "-O", "-module-name", "FITBenchmark"] + sources + [main, "-o", decoder], check=True)
    return os.path.join(ROOT, ".build", "release", "workout"), decoder


def export_replay(tool, folder, scenario):
    db = os.path.join(folder, scenario + ".sqlite")
    replay = subprocess.run([tool, "replay", scenario, "--seed", "1", "--db", db, "--json"], check=True,
                            capture_output=True, text=True)
    workout = json.loads(replay.stdout)
    path = os.path.join(folder, scenario + ".fit")
    subprocess.run([tool, "export", workout["id"], "--format", "fit", "--output", path, "--db", db], check=True,
                   capture_output=True)
    return path


def ours_decode(decoder, path):
    out = subprocess.run([decoder, path, "20"], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]) / 1000, int(out[1])


def ours_import(tool, path, runs):
    walls = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            subprocess.run([tool, "import", path, "--db", os.path.join(folder, "import.sqlite")], check=True,
                           capture_output=True)
            walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def sdk_decode(python, path, runs):
    probe = (
        "import sys,time\n"
        "from garmin_fit_sdk import Decoder, Stream\n"
        "s=time.perf_counter()\n"
        "m,e=Decoder(Stream.from_file(sys.argv[1])).read()\n"
        "print(time.perf_counter()-s, len(m.get('record_mesgs',[])), len(e))\n"
    )
    walls = []
    records = 0
    for _ in range(runs):
        out = subprocess.run([python, "-c", probe, path], check=True, capture_output=True, text=True).stdout.split()
        if out[2] != "0":
            sys.exit(f"garmin-fit-sdk reported decode errors on {path}")
        walls.append(float(out[0]))
        records = int(out[1])
    return statistics.median(walls), records


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-build", action="store_true")
    options = parser.parse_args()
    python = sdk_python()
    tool, decoder = build(options.skip_build)
    with tempfile.TemporaryDirectory() as folder:
        files = [("simulated full-distance triathlon (`full`, exported)", export_replay(tool, folder, "full")),
                 ("simulated 24-hour run (`ultra-24h`, exported)", export_replay(tool, folder, "ultra-24h"))]
        real = os.path.join(ROOT, "..", "shared", "data", "fit", "fp_activity-large-fenxi2-multisport.fit")
        if os.path.exists(real):
            files.append(("fenix 2 multisport (largest real file)", real))
        ok = True
        for label, path in files:
            size = os.path.getsize(path) / 1e6
            decode, records = ours_decode(decoder, path)
            imported = ours_import(tool, path, options.runs)
            sdk, sdk_records = sdk_decode(python, path, options.runs)
            if records != sdk_records:
                sys.exit(f"{label}: we decode {records} records, the SDK {sdk_records}")
            ratio = sdk / decode
            ok = ok and ratio >= 100
            print(f"{label}: {size:.2f} MB, {records} records")
            print(f"  decode, ours:            {decode * 1000:8.1f} ms")
            print(f"  decode, garmin-fit-sdk:  {sdk * 1000:8.1f} ms   ({ratio:.0f}x ours; bar >= 100x)")
            print(f"  import end to end, ours: {imported * 1000:8.1f} ms   ({sdk / imported:.1f}x faster than the SDK's decode)")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
