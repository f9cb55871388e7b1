#!/usr/bin/env python3
"""Import speed, baseline against ours, in the same run: `workout import` end to end on the same files.

Usage: scripts/import-compare.py BASELINE_WORKOUT OURS_WORKOUT [--runs N]

Both arguments are release builds of the `workout` tool (e.g. a worktree of the baseline commit built
with `swift build -c release --product workout`, and this clone's .build/release/workout). The
baseline tool replays and exports the simulated `full` triathlon and `ultra-24h` run as FIT (as
scripts/fit-benchmark.py does); those two and the largest real recordings of ../shared/data/fit (fenix
2 multisport, the Bryton ride) are imported into fresh stores, baseline and ours alternating, N runs
each (default 5). Prints the medians and ours/baseline; exits non-zero when ours is more than 10 %
slower on any file.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_replay(tool, folder, scenario):
    db = os.path.join(folder, scenario + ".sqlite")
    replay = subprocess.run([tool, "replay", scenario, "--seed", "1", "--db", db, "--json"], check=True,
                            capture_output=True, text=True)
    workout = json.loads(replay.stdout)
    path = os.path.join(folder, scenario + ".fit")
    subprocess.run([tool, "export", workout["id"], "--format", "fit", "--output", path, "--db", db], check=True,
                   capture_output=True)
    return path


def timed_import(tool, path):
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        subprocess.run([tool, "import", path, "--db", os.path.join(folder, "import.sqlite")], check=True,
                       capture_output=True)
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("baseline")
    parser.add_argument("ours")
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = [("full (exported)", export_replay(options.baseline, folder, "full")),
                 ("ultra-24h (exported)", export_replay(options.baseline, folder, "ultra-24h"))]
        real = os.path.join(ROOT, "..", "shared", "data", "fit")
        for label, name in [("fenix 2 multisport", "fp_activity-large-fenxi2-multisport.fit"),
                            ("Bryton ride", "mk_big_activity.fit")]:
            if os.path.exists(os.path.join(real, name)):
                files.append((label, os.path.join(real, name)))
        ok = True
        for label, path in files:
            base, ours = [], []
            for _ in range(options.runs):
                base.append(timed_import(options.baseline, path))
                ours.append(timed_import(options.ours, path))
            b, o = statistics.median(base), statistics.median(ours)
            ok = ok and o <= 1.10 * b
            print(f"{label:22s} {os.path.getsize(path) / 1e6:5.2f} MB  baseline {b * 1000:7.0f} ms  "
                  f"ours {o * 1000:7.0f} ms  ({o / b:.2f}x; runs {min(ours) * 1000:.0f}-{max(ours) * 1000:.0f} ms)")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
