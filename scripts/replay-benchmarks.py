#!/usr/bin/env python3
"""Replay benchmarks (issue: simulated watch hardware and race replay).

Builds the `workout` tool in release, then measures, on this machine:
  1. end-to-end time to replay and save a full-distance triathlon at --speed max
     (process start to exit: simulator, session, builder, journal, store), and samples per second;
  2. peak resident memory of replaying the 24-hour ultra against a 1-hour run
     (bar: ultra <= 1.3 x the 1-hour figure).
Each figure is the median of --runs runs, each into a fresh temporary store.

Usage: scripts/replay-benchmarks.py [--runs N] [--skip-build]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def replay(tool, scenario):
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "bench.sqlite")
        args = [tool, "replay", scenario, "--seed", "1", "--speed", "max", "--db", db, "--json"]
        # ru_maxrss of RUSAGE_CHILDREN is the maximum over all children so far: measure each run in
        # its own python child so that figures do not leak into each other.
        probe = (
            "import resource,subprocess,sys,time;"
            "s=time.perf_counter();p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
            "w=time.perf_counter()-s;"
            "print(p.returncode,w,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
            "print(p.stdout if p.returncode==0 else p.stderr)"
        )
        result = subprocess.run([sys.executable, "-c", probe] + args, capture_output=True, text=True, check=True)
        head, _, body = result.stdout.partition("\n")
        code, wall, rss = head.split()
        if code != "0":
            sys.exit(f"replay {scenario} failed: {body.strip()}")
        workout = json.loads(body)
        return float(wall), int(rss) / 1024, workout["counters"]["accepted"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-build", action="store_true")
    options = parser.parse_args()
    if not options.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "workout"], cwd=ROOT, check=True)
    tool = os.path.join(ROOT, ".build", "release", "workout")

    walls, samples = [], 0
    for _ in range(options.runs):
        wall, _, samples = replay(tool, "full")
        walls.append(wall)
    full = statistics.median(walls)
    print(f"full-distance replay, --speed max, end to end: median {full:.2f} s "
          f"(runs: {', '.join(f'{w:.2f}' for w in walls)}); {samples} samples, "
          f"{samples / full:,.0f} samples/s; bar <= 2 s: {'met' if full <= 2 else 'NOT met'}")

    hour = statistics.median(replay(tool, "hour-run")[1] for _ in range(options.runs))
    ultra = statistics.median(replay(tool, "ultra-24h")[1] for _ in range(options.runs))
    ratio = ultra / hour
    print(f"peak resident memory: hour-run {hour:.1f} MiB, ultra-24h {ultra:.1f} MiB, ratio {ratio:.2f}; "
          f"bar <= 1.3: {'met' if ratio <= 1.3 else 'NOT met'}")


if __name__ == "__main__":
    main()
