#!/usr/bin/env python3
"""Whole-command benchmarks: one build step, one median rule, results written as data.

    scripts/bench.py [options] replay    replay of `full` at --speed max end to end, samples/s; peak memory
                                        of `ultra-24h` against `hour-run` (bar: at most 1.3x)
    scripts/bench.py [options] store     `replay full --seed 5`: wall, CPU, store bytes per sample; import of
                                        the two largest real files: wall, CPU; database growth of one import
                                        of every FIT file over 100 KB (with --baseline: the baseline too)
    scripts/bench.py [options] fit       our FIT decode (timer built with swiftc -O) against garmin-fit-sdk's
                                        Decoder.read() on the exported `full` and `ultra-24h` and the largest
                                        real file (bar: at least 100x); our import of the same files
    scripts/bench.py [options] report    report bytes, `workout report` time, Chromium --dump-dom wall time
                                        and the page's own parse time, against an empty page
    scripts/bench.py [options] compare BASELINE_WORKOUT
                                        import of the exported `full` and `ultra-24h`, the fenix 2 and the
                                        Bryton files: baseline and ours alternating; exits 1 when ours is
                                        over 10 % slower on any file
    scripts/bench.py [options] health    import of a generated ~2 GB Apple Health export
                                        (scripts/make-large-health-export.py, in a temporary folder, or
                                        --health-export DIR) against a plain streaming parse of the same
                                        export.xml by the reader's own pull parser (scripts/xml-parse-baseline.swift,
                                        swiftc -O), in the same run: seconds per GB of each and the import's
                                        peak resident memory (bars: within 2x of the parse; under 200 MB)
    scripts/bench.py [options] all      replay, store, fit, report

The build step: `swift build -c release --product workout` once (`--debug` builds and times the debug
product instead, for a quick check of the harness; `--skip-build` uses what is built). The median rule:
every process is run --runs times (5 by default), each into a fresh temporary store, and the figure is
the median of those runs (wall time from process start to exit; CPU = user + system of that process,
taken in its own child so that one run's figures do not leak into the next). The FIT decode timer and
garmin-fit-sdk are timed inside their process (start-up excluded), the timer as the median of 20
decodes, the SDK as the median of --runs processes.

Results go into Benchmarks/Results/figures.json (each figure by id, with --machine naming the machine
in that file), then docs/performance.md is regenerated (scripts/performance-doc.py). `--smoke` runs
each command once on smaller inputs and writes nothing (nor does `--debug`): it only checks that the
harness works.
"""
import argparse
import glob
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "Benchmarks", "Results", "figures.json")
SHARED = os.environ.get("WORKOUT_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
FENIX2 = "fp_activity-large-fenxi2-multisport.fit"
BRYTON = "mk_big_activity.fit"
PROBE = (
    "import resource,subprocess,sys,time;"
    "s=time.perf_counter();p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
    "w=time.perf_counter()-s;u=resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(p.returncode,w,u.ru_utime+u.ru_stime,u.ru_maxrss);print(p.stdout if p.returncode==0 else p.stderr)"
)


class Bench:
    def __init__(self, options):
        self.options = options
        self.runs = 1 if options.smoke else options.runs
        self.figures = {}  # id -> (figure text, values)

    # --- the build step -------------------------------------------------------------------------
    def build(self):
        configuration = "debug" if self.options.debug else "release"
        if not self.options.skip_build:
            subprocess.run(["swift", "build", "-c", configuration, "--product", "workout"], cwd=ROOT, check=True)
        path = subprocess.run(["swift", "build", "-c", configuration, "--show-bin-path"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        self.tool = os.path.join(path, "workout")

    # --- the median rule ------------------------------------------------------------------------
    def run(self, args):
        """(wall s, cpu s, peak RSS MiB, stdout) of one process, measured in its own Python child."""
        result = subprocess.run([sys.executable, "-c", PROBE] + args, capture_output=True, text=True, check=True)
        head, _, body = result.stdout.partition("\n")
        code, wall, cpu, rss = head.split()
        if code != "0":
            raise RuntimeError(f"{' '.join(args)} failed: {body.strip()[:300]}")
        return float(wall), float(cpu), int(rss) / 1024, body

    def median(self, measure):
        """Median of each component of `measure()` over the runs; `measure` makes its own fresh store."""
        samples = [measure() for _ in range(self.runs)]
        return tuple(statistics.median(column) for column in zip(*samples))

    def record(self, key, figure, **values):
        print(f"{key}: {figure}")
        self.figures[key] = (figure, values)

    # --- helpers --------------------------------------------------------------------------------
    def replay(self, tool, scenario, seed, folder):
        db = os.path.join(folder, f"{scenario}.sqlite")
        wall, cpu, rss, out = self.run([tool, "replay", scenario, "--seed", str(seed), "--speed", "max",
                                        "--db", db, "--json"])
        workout = json.loads(out)
        return wall, cpu, rss, workout, db

    def export(self, tool, folder, scenario):
        _, _, _, workout, db = self.replay(tool, scenario, 1, folder)
        path = os.path.join(folder, scenario + ".fit")
        subprocess.run([tool, "export", workout["id"], "--format", "fit", "--output", path, "--db", db],
                       check=True, capture_output=True)
        return path

    def import_file(self, tool, path):
        with tempfile.TemporaryDirectory() as folder:
            db = os.path.join(folder, "import.sqlite")
            subprocess.run([tool, "list", "--db", db], capture_output=True, check=True)
            empty = checkpointed_size(db)
            wall, cpu, _, _ = self.run([tool, "import", path, "--db", db])
            return wall, cpu, checkpointed_size(db) - empty

    def real(self, name):
        path = os.path.join(SHARED, "fit", name)
        return path if os.path.exists(path) else None

    # --- the benchmarks -------------------------------------------------------------------------
    def bench_replay(self):
        def full():
            with tempfile.TemporaryDirectory() as folder:
                wall, cpu, _, workout, _ = self.replay(self.tool, "full", 1, folder)
                return wall, cpu, workout["counters"]["accepted"]
        wall, cpu, samples = self.median(full)
        self.record("replay.full", f"{wall:.2f} s, CPU {cpu:.2f} s ({samples:,.0f} samples, "
                    f"{samples / wall:,.0f} samples/s)", wall_s=wall, cpu_s=cpu, samples=samples)

        def peak(scenario):
            def measure():
                with tempfile.TemporaryDirectory() as folder:
                    return (self.replay(self.tool, scenario, 1, folder)[2],)
            return self.median(measure)[0]
        hour, ultra = peak("hour-run"), peak("ultra-24h")
        self.record("replay.memory", f"{ultra:.1f} MiB vs {hour:.1f} MiB ({ultra / hour:.2f}×)",
                    ultra_mib=ultra, hour_mib=hour)

    def bench_store(self):
        tools = [("ours", self.tool)] + ([("baseline", self.options.baseline)] if self.options.baseline else [])
        for name, tool in tools:
            suffix = "" if name == "ours" else " (baseline)"

            def full():
                with tempfile.TemporaryDirectory() as folder:
                    wall, cpu, _, workout, db = self.replay(tool, "full", 5, folder)
                    samples = workout["counters"]["accepted"]
                    return wall, cpu, checkpointed_size(db) / samples
            wall, cpu, per_sample = self.median(full)
            print(f"[{name}] replay full --seed 5: wall {wall:.3f} s, CPU {cpu:.3f} s")
            if name == "ours":
                self.record("store.size", f"{per_sample:.2f} bytes per sample", bytes_per_sample=per_sample)
            else:
                print(f"[baseline] {per_sample:.2f} bytes per sample")
            figures = []
            for file in [BRYTON, FENIX2]:
                path = self.real(file)
                if path is None:
                    print(f"{file}: not in {SHARED}/fit, skipped")
                    continue
                wall, cpu, _ = self.median(lambda: self.import_file(tool, path))
                figures.append((file, wall, cpu))
            if figures and name == "ours":
                self.record("import.large", " / ".join(f"{f}: CPU {c:.2f} s, wall {w:.2f} s" for f, w, c in figures),
                            **{f"{f}_wall_s": w for f, w, _ in figures})
            elif figures:
                print(f"[baseline]{suffix} " + " / ".join(f"{f}: CPU {c:.2f} s, wall {w:.2f} s" for f, w, c in figures))
            worst, worst_file = 0.0, None
            for path in sorted(glob.glob(os.path.join(SHARED, "fit", "*.fit"))):
                size = os.path.getsize(path)
                if size <= 100_000:
                    continue
                try:
                    _, _, growth = self.import_file(tool, path)
                except RuntimeError as error:
                    print(f"[{name}] growth {os.path.basename(path)}: import failed ({error})")
                    continue
                if growth / size > worst:
                    worst, worst_file = growth / size, os.path.basename(path)
                if self.options.smoke:
                    break
            if worst_file and name == "ours":
                self.record("import.growth", f"at most {worst:.2f}× the file ({worst_file})", worst_ratio=worst)

    def bench_health(self):
        size = (50 << 20) if self.options.smoke else self.options.health_size
        with tempfile.TemporaryDirectory(dir=self.options.health_tmp) as folder:
            export = self.options.health_export
            if export is None:
                export = os.path.join(folder, "generated")
                subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make-large-health-export.py"), export,
                                "--size", str(size)], check=True)
            xml = os.path.join(export, "apple_health_export", "export.xml")
            gigabytes = os.path.getsize(xml) / 1e9
            parser = build_xml_baseline()

            def parse():
                wall, cpu, rss, out = self.run([parser, xml])
                return wall, cpu, rss, int(out.split()[1])

            def import_export():
                db = os.path.join(folder, "health.sqlite")
                for suffix in ["", "-wal", "-shm"]:
                    if os.path.exists(db + suffix):
                        os.remove(db + suffix)
                wall, cpu, rss, out = self.run([self.tool, "import", export, "--db", db])
                return wall, cpu, rss, out.count("imported ")

            # Alternating, so that the machine's mood hits both alike.
            pairs = [(parse(), import_export()) for _ in range(self.runs)]
            p_wall, p_cpu, _, elements = (statistics.median(column) for column in zip(*[p for p, _ in pairs]))
            i_wall, i_cpu, i_rss, workouts = (statistics.median(column) for column in zip(*[i for _, i in pairs]))
            self.record(
                "import.health",
                f"{gigabytes:.2f} GB export.xml ({elements:,.0f} elements, {workouts:,.0f} workouts imported): import "
                f"{i_wall / gigabytes:.0f} s/GB (CPU {i_cpu / gigabytes:.0f} s/GB), peak RSS {i_rss:.0f} MiB; plain "
                f"parse {p_wall / gigabytes:.0f} s/GB (CPU {p_cpu / gigabytes:.0f} s/GB): {i_wall / p_wall:.2f}x wall, "
                f"{i_cpu / p_cpu:.2f}x CPU",
                gigabytes=gigabytes, import_wall_s=i_wall, import_cpu_s=i_cpu, import_peak_rss_mib=i_rss,
                parse_wall_s=p_wall, parse_cpu_s=p_cpu, workouts=workouts)

    def bench_fit(self):
        python = subprocess.run([os.path.join(ROOT, "scripts", "ensure-python-sdk.sh")], check=True,
                                capture_output=True, text=True).stdout.strip().splitlines()[-1]
        decoder = build_fit_timer()
        with tempfile.TemporaryDirectory() as folder:
            files = [("fit.decode-full", self.export(self.tool, folder, "full"))]
            if not self.options.smoke:
                files.append(("fit.decode-ultra", self.export(self.tool, folder, "ultra-24h")))
            if self.real(FENIX2):
                files.append(("fit.decode-fenix2", self.real(FENIX2)))
            imports = []
            for key, path in files:
                out = subprocess.run([decoder, path, "20"], check=True, capture_output=True, text=True).stdout.split()
                ours, records = float(out[0]) / 1000, int(out[1])
                sdk_walls = []
                for _ in range(self.runs):
                    sdk, sdk_records, errors = sdk_decode(python, path)
                    if errors or sdk_records != records:
                        sys.exit(f"{path}: we decode {records} records, the SDK {sdk_records} ({errors} errors)")
                    sdk_walls.append(sdk)
                sdk = statistics.median(sdk_walls)
                self.record(key, f"ours {ours * 1000:.1f} ms vs SDK {sdk:.2f} s ({sdk / ours:.0f}×); "
                            f"{os.path.getsize(path) / 1e6:.2f} MB, {records:,} records", ours_s=ours, sdk_s=sdk)
                wall, _, _ = self.median(lambda: self.import_file(self.tool, path))
                imports.append((key.split("-", 1)[1], wall))
            self.record("fit.import", ", ".join(f"`{name}` {wall:.2f} s" for name, wall in imports),
                        **{f"{name}_s": wall for name, wall in imports})

    def bench_report(self):
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            sys.exit("chromium is not installed (scripts/test.sh installs it: ensure_test_packages)")
        sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
        with tempfile.TemporaryDirectory() as folder:
            db = os.path.join(folder, "store", "workouts.sqlite")

            def dump(page):
                start = time.perf_counter()
                dom = subprocess.run([chromium, "--headless", *sandbox, "--disable-gpu", "--no-first-run",
                                      f"--user-data-dir={folder}/profile", "--dump-dom", f"file://{page}"],
                                     capture_output=True, text=True).stdout
                wall = time.perf_counter() - start
                marker = dom.find('data-parsed-ms="')
                parsed = int(dom[marker + 16:dom.index('"', marker + 16)]) if marker >= 0 else 0
                return wall, parsed

            blank = os.path.join(folder, "blank.html")
            with open(blank, "w") as handle:
                handle.write("<!DOCTYPE html><title>blank</title>")
            wall, _ = self.median(lambda: dump(blank))
            self.record("report.empty", f"`--dump-dom` {wall:.2f} s", dump_dom_s=wall)
            cases = [("report.full", ["replay", "full", "--seed", "1", "--speed", "max"]),
                     ("report.pool-swim", ["replay", "pool-swim", "--seed", "1", "--speed", "max"]),
                     ("report.fr255-triathlon", ["import", os.path.join(SHARED, "fit", "mk_triathlon_summary_last.fit")]),
                     ("report.fenix3-pool", ["import", os.path.join(SHARED, "fit", "mk_sdk_activity_poolswim_with_hr.fit")]),
                     ("report.edge810", ["import", os.path.join(SHARED, "fit", "fp_edge810-vector.fit")]),
                     ("report.ultra", ["replay", "ultra-24h", "--seed", "1", "--speed", "max"])]
            if self.options.smoke:
                cases = cases[1:2]
            for key, args in cases:
                made = subprocess.run([self.tool, *args, "--db", db, "--json"], check=True, capture_output=True,
                                      text=True)
                answer = json.loads(made.stdout)
                workout = (answer.get("workout") or answer)["id"]
                page = os.path.join(folder, key + ".html")
                write, _, _, _ = self.run([self.tool, "report", workout, "--db", db, "--output", page])
                wall, parsed = self.median(lambda: dump(page))
                self.record(key, f"{os.path.getsize(page):,} bytes; `workout report` {write:.2f} s; `--dump-dom` "
                            f"{wall:.2f} s (median of {self.runs}); parsed in {parsed:.0f} ms",
                            bytes=os.path.getsize(page), report_s=write, dump_dom_s=wall, parsed_ms=parsed)

    def bench_compare(self, baseline):
        with tempfile.TemporaryDirectory() as folder:
            files = [("full", self.export(baseline, folder, "full"))]
            if not self.options.smoke:
                files.append(("ultra-24h", self.export(baseline, folder, "ultra-24h")))
                files += [(label, self.real(name)) for label, name in [("fenix 2", FENIX2), ("Bryton", BRYTON)]
                          if self.real(name)]
            slower = False
            parts = []
            for label, path in files:
                base, ours = [], []
                for _ in range(self.runs):  # alternating, so that the machine's mood hits both alike
                    base.append(self.import_file(baseline, path)[0])
                    ours.append(self.import_file(self.tool, path)[0])
                b, o = statistics.median(base), statistics.median(ours)
                slower = slower or o > 1.10 * b
                parts.append(f"`{label}` {b:.2f} → {o:.2f} s")
            self.record("import.baseline", ", ".join(parts))
            return 1 if slower else 0

    # --- results --------------------------------------------------------------------------------
    def write(self):
        if self.options.smoke or self.options.debug or not self.figures:
            return
        with open(RESULTS) as handle:
            data = json.load(handle)
        if self.options.machine not in data["machines"]:
            sys.exit(f"unknown machine {self.options.machine!r}: describe it under \"machines\" in {RESULTS}")
        entries = {figure["id"]: figure for section in data["sections"] for figure in section["figures"]}
        for key, (figure, values) in self.figures.items():
            entry = entries.get(key)
            if entry is None:
                sys.exit(f"{key}: no such figure in {RESULTS}; add it to a section first")
            entry.update(figure=figure, machine=self.options.machine, values=values,
                         measured=time.strftime("%Y-%m-%d", time.gmtime()))
        with open(RESULTS, "w") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        subprocess.run([os.path.join(ROOT, "scripts", "performance-doc.py")], check=True)
        print(f"wrote {RESULTS} and docs/performance.md")


def checkpointed_size(db):
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return os.path.getsize(db)


def build_fit_timer():
    """The FIT decode timer: scripts/fit-benchmark.swift with Sources/WorkoutFormats/FIT, swiftc -O."""
    out = os.path.join(ROOT, ".build", "fit-benchmark")
    os.makedirs(out, exist_ok=True)
    decoder = os.path.join(out, "fit-decode")
    folder = os.path.join(ROOT, "Sources", "WorkoutFormats", "FIT")
    sources = [os.path.join(folder, name) for name in sorted(os.listdir(folder))]
    timer = os.path.join(ROOT, "scripts", "fit-benchmark.swift")
    if not os.path.exists(decoder) or max(map(os.path.getmtime, sources + [timer])) > os.path.getmtime(decoder):
        main = os.path.join(out, "main.swift")  # top-level code lives in main.swift
        shutil.copyfile(timer, main)
        subprocess.run(["swiftc", "-O", "-module-name", "FITBenchmark"] + sources + [main, "-o", decoder], check=True)
    return decoder


def build_xml_baseline():
    """The plain streaming parse: scripts/xml-parse-baseline.swift with the reader's XMLStream.swift, swiftc -O."""
    out = os.path.join(ROOT, ".build", "xml-baseline")
    os.makedirs(out, exist_ok=True)
    binary = os.path.join(out, "xml-parse-baseline")
    sources = [os.path.join(ROOT, "Sources", "WorkoutImport", "AppleHealth", "XMLStream.swift")]
    timer = os.path.join(ROOT, "scripts", "xml-parse-baseline.swift")
    if not os.path.exists(binary) or max(map(os.path.getmtime, sources + [timer])) > os.path.getmtime(binary):
        main = os.path.join(out, "main.swift")  # top-level code lives in main.swift
        shutil.copyfile(timer, main)
        subprocess.run(["swiftc", "-O", "-module-name", "XMLBaseline"] + sources + [main, "-o", binary], check=True)
    return binary


def sdk_decode(python, path):
    probe = (
        "import sys,time\n"
        "from garmin_fit_sdk import Decoder, Stream\n"
        "s=time.perf_counter()\n"
        "m,e=Decoder(Stream.from_file(sys.argv[1])).read()\n"
        "print(time.perf_counter()-s, len(m.get('record_mesgs',[])), len(e))\n"
    )
    out = subprocess.run([python, "-c", probe, path], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("benchmark", choices=["replay", "store", "fit", "report", "health", "compare", "all"])
    parser.add_argument("baseline_tool", nargs="?", help="compare: a release build of the baseline's `workout`")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure; the figure is their median")
    parser.add_argument("--baseline", help="store: also measure this `workout` build, in the same run")
    parser.add_argument("--machine", default="dev-2core", help="the machine, as named in figures.json")
    parser.add_argument("--skip-build", action="store_true", help="use the `workout` already built")
    parser.add_argument("--debug", action="store_true", help="build and time the debug product (harness checks)")
    parser.add_argument("--smoke", action="store_true", help="one run of each, smaller inputs, nothing written")
    parser.add_argument("--health-export", help="health: an export folder to import (default: generate one)")
    parser.add_argument("--health-size", type=int, default=2 << 30, help="health: bytes of the generated export.xml")
    parser.add_argument("--health-tmp", help="health: where to generate it (default: the system's temporary folder)")
    options = parser.parse_args()
    bench = Bench(options)
    bench.build()
    status = 0
    if options.benchmark == "compare":
        if not options.baseline_tool:
            parser.error("compare needs the baseline's `workout`")
        status = bench.bench_compare(options.baseline_tool)
    else:
        names = ["replay", "store", "fit", "report"] if options.benchmark == "all" else [options.benchmark]
        for name in names:
            getattr(bench, f"bench_{name}")()
    bench.write()
    sys.exit(status)


if __name__ == "__main__":
    main()
