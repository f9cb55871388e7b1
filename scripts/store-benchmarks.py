#!/usr/bin/env python3
"""Store benchmarks end to end (issue 11): the `workout` tool against a baseline build, same run.

Measures, for each tool (ours: .build/release/workout; the baseline: --baseline PATH, e.g. a release
build of an older commit), medians of --runs runs, each into a fresh temporary store:
  1. `workout replay full --seed 5 --speed max`: wall time, CPU time (user + sys), store bytes per
     sample (file size after a WAL checkpoint / samples saved);
  2. `workout import` of mk_big_activity.fit and fp_activity-large-fenxi2-multisport.fit: wall and
     CPU time;
  3. every FIT file over 100 KB in ../shared/data/fit: database growth of one import (checkpointed
     file size minus the empty store's) against the FIT file's size.

Usage: scripts/store-benchmarks.py [--runs N] [--baseline PATH] [--skip-build] [--data DIR]
"""
import argparse
import glob
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = (
    "import resource,subprocess,sys,time;"
    "s=time.perf_counter();p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
    "w=time.perf_counter()-s;u=resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(p.returncode,w,u.ru_utime+u.ru_stime);print(p.stdout if p.returncode==0 else p.stderr)"
)


def timed(args):
    """(wall s, cpu s, stdout) of one run, in its own python child so that rusage is its own."""
    result = subprocess.run([sys.executable, "-c", PROBE] + args, capture_output=True, text=True, check=True)
    head, _, body = result.stdout.partition("\n")
    code, wall, cpu = head.split()
    if code != "0":
        raise RuntimeError(f"{' '.join(args)} failed: {body.strip()[:300]}")
    return float(wall), float(cpu), body


def checkpointed_size(db):
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return os.path.getsize(db)


def empty_size(tool, folder):
    db = os.path.join(folder, "empty.sqlite")
    subprocess.run([tool, "list", "--db", db], capture_output=True, check=True)
    return checkpointed_size(db)


def replay(tool, runs):
    walls, cpus, sizes, samples = [], [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            db = os.path.join(folder, "replay.sqlite")
            wall, cpu, out = timed([tool, "replay", "full", "--seed", "5", "--speed", "max", "--db", db, "--json"])
            samples = json.loads(out)["counters"]["accepted"]
            walls.append(wall)
            cpus.append(cpu)
            sizes.append(checkpointed_size(db))
    return statistics.median(walls), statistics.median(cpus), statistics.median(sizes) / samples, samples


def import_file(tool, path, runs):
    walls, cpus, growth = [], [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            base = empty_size(tool, folder)
            db = os.path.join(folder, "empty.sqlite")
            wall, cpu, _ = timed([tool, "import", path, "--db", db])
            walls.append(wall)
            cpus.append(cpu)
            growth = checkpointed_size(db) - base
    return statistics.median(walls), statistics.median(cpus), growth


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "fit"))
    options = parser.parse_args()
    if not options.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "workout"], cwd=ROOT, check=True)
    tools = [("ours", os.path.join(ROOT, ".build", "release", "workout"))]
    if options.baseline:
        tools.insert(0, ("baseline", options.baseline))

    for name, tool in tools:
        wall, cpu, per_sample, samples = replay(tool, options.runs)
        print(f"[{name}] replay full --seed 5 --speed max: median wall {wall:.3f} s, cpu {cpu:.3f} s, "
              f"{per_sample:.2f} bytes/sample ({samples} samples); bars <= 0.5 s, <= 8 bytes/sample")
        for fit in ["mk_big_activity.fit", "fp_activity-large-fenxi2-multisport.fit"]:
            wall, cpu, _ = import_file(tool, os.path.join(options.data, fit), options.runs)
            print(f"[{name}] import {fit}: median wall {wall:.3f} s, cpu {cpu:.3f} s; bar <= 0.25 s")
    for name, tool in tools:
        worst = 0.0
        for path in sorted(glob.glob(os.path.join(options.data, "*.fit"))):
            size = os.path.getsize(path)
            if size <= 100_000:
                continue
            try:
                _, _, growth = import_file(tool, path, 1)
            except RuntimeError as error:
                print(f"[{name}] growth {os.path.basename(path)}: import failed ({error})")
                continue
            worst = max(worst, growth / size)
            print(f"[{name}] growth {os.path.basename(path)}: {growth} bytes for a {size}-byte file "
                  f"({growth / size:.2f}x)")
        print(f"[{name}] largest growth/file ratio over files > 100 KB: {worst:.2f} (bar <= 1)")


if __name__ == "__main__":
    main()
