#!/usr/bin/env python3
"""Which call stacks hold more heap late in a run than early: growth by allocation site from a heaptrack file.

    heaptrack -o /tmp/serve workout serve …        # under a load (scripts/live-load.sh), then stop it
    scripts/heap-growth.py /tmp/serve.zst 25 45 215 240 [--top 12]

For every allocation site it takes the bytes still allocated there, at least once a second; over each
window (seconds since the program started) it keeps the smallest figure (so a transient peak, an import
say, does not count), and prints the sites whose figure grew most from the first window to the second,
with their innermost frames. How the issue 12 load's memory growth was found (CHANGELOG.md, "Server scale, live load and faults").
Reads heaptrack's own text format (v3, zstd-compressed), no heaptrack_gui needed.
"""
import argparse, collections, subprocess

FRAMES_SKIPPED = ("swift_slowAlloc", "swift_allocObject", "ContiguousArrayBuffer", "createNewBuffer")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("first_from", type=float)
    parser.add_argument("first_to", type=float)
    parser.add_argument("second_from", type=float)
    parser.add_argument("second_to", type=float)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    windows = [(args.first_from, args.first_to), (args.second_from, args.second_to)]
    sizes, traces_of, live = [], [], []      # per allocation site: size, trace, bytes alive now
    strings, ips, traces = [""], [None], [None]
    lowest = [None, None]                     # per window: per site, the smallest bytes alive seen
    last = -1.0
    reader = subprocess.Popen(["zstdcat", args.file], stdout=subprocess.PIPE, bufsize=1 << 20)
    for line in reader.stdout:
        kind = line[:1]
        if kind == b"+":
            site = int(line[2:], 16)
            live[site] += sizes[site]
        elif kind == b"-":
            site = int(line[2:], 16)
            live[site] -= sizes[site]
        elif kind == b"a":
            _, size, trace = line.split()
            sizes.append(int(size, 16))
            traces_of.append(int(trace, 16))
            live.append(0)
        elif kind == b"c":
            now = int(line.split()[1], 16) / 1000
            if now - last < 1:
                continue
            last = now
            for index, (start, end) in enumerate(windows):
                if not start <= now <= end:
                    continue
                if lowest[index] is None:
                    lowest[index] = list(live)
                else:
                    seen = lowest[index]
                    seen.extend([0] * (len(live) - len(seen)))
                    for site, value in enumerate(live):
                        if value < seen[site]:
                            seen[site] = value
        elif kind == b"t":
            _, ip, parent = line.split()
            traces.append((int(ip, 16), int(parent, 16)))
        elif kind == b"i":
            ips.append([int(x, 16) for x in line.split()[2:]])
        elif kind == b"s":
            parts = line.rstrip(b"\n").split(b" ", 2)
            strings.append(parts[2].decode(errors="replace") if len(parts) > 2 else "")
    if lowest[0] is None or lowest[1] is None:
        raise SystemExit("a window holds no time stamp of the file: check the seconds given")
    for seen in lowest:
        seen.extend([0] * (len(live) - len(seen)))
    growth = collections.Counter()
    for site in range(len(live)):
        change = lowest[1][site] - lowest[0][site]
        if change:
            growth[traces_of[site]] += change

    def frames(trace):
        names = []
        while trace and len(names) < 16:
            ip, parent = traces[trace]
            info = ips[ip] if ip < len(ips) else None
            if info and len(info) >= 2:
                name = strings[info[1]]
                if not any(skip in name for skip in FRAMES_SKIPPED):
                    names.append(name[:110] + (f" :{info[3]}" if len(info) >= 4 else ""))
            trace = parent
        return names[:4]

    print(f"growth from {windows[0]} s to {windows[1]} s: {sum(growth.values()) / 1e6:.2f} MB")
    for trace, change in growth.most_common(args.top):
        print(f"\n{change / 1e6:8.2f} MB")
        for name in frames(trace):
            print("    " + name)


main()
