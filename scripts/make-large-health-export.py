#!/usr/bin/env python3
"""Writes a large Apple Health export from the real files' own elements, repeated with shifted dates.

    scripts/make-large-health-export.py OUT [--size BYTES] [--shift-days D] [--routes-every N]

Writes OUT/apple_health_export/export.xml (about --size bytes, default 2 GiB) and
OUT/apple_health_export/workout-routes/*.gpx, from ../shared/data/applehealth (or
$WORKOUT_SHARED_DATA/applehealth):

- the template is the whole of hk_export.xml's data (its 10,939 records, heart rate among them,
  34 correlations, 61 old-shape workouts, ...; not its ExportDate and Me, written once) and the
  seven nr_fragments workouts (new shape: activities, events, statistics, routes) with the 17
  heart-rate records beside them, each fragment moved by whole days into hk_export's months;
- repetition k of the template has every date moved by k x (--shift-days days + 13 s): the
  repetitions overlap in time as a real export's years of dense records do (the 13 s keep
  every workout's identity, source + type + start and end, distinct);
- the fragments' GPX files are written for every --routes-every-th repetition (default 10),
  their times moved with their workout (matched by time, as the reader matches them); the other
  repetitions' routes have no points (the reader counts nothing for a route without a file).

Nothing is generated from our own encoders: every element is a real file's, only its dates move.
The header (XML declaration and the DOCTYPE of HealthKit Export Version 3) is hk_export.xml's.
"""
import argparse
import calendar
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("WORKOUT_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
XML_DATE = re.compile(rb"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)( [+-]\d{4})")
GPX_DATE = re.compile(rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)")
REPEAT_SECONDS = 13


def split(text, pattern):
    """The text as literal pieces and wall-clock seconds: [lit, secs, suffix, lit, secs, suffix, ..., lit]."""
    parts = []
    last = 0
    for match in pattern.finditer(text):
        parts.append(text[last:match.start()])
        y, mo, d, h, mi, s = (int(match.group(i)) for i in range(1, 7))
        parts.append(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))
        parts.append(match.group(7) if pattern is XML_DATE else b"")
        last = match.end()
    parts.append(text[last:])
    return parts


class Formatter:
    """Wall-clock seconds as text, from caches of days and times of day (fast enough for 20 M dates)."""

    def __init__(self, separator):
        self.separator = separator
        self.days = {}
        self.times = [b"%02d:%02d:%02d" % (t // 3600, t // 60 % 60, t % 60) for t in range(86400)]

    def __call__(self, seconds):
        day, second = divmod(seconds, 86400)
        text = self.days.get(day)
        if text is None:
            y, mo, d = _civil(day)
            text = self.days[day] = b"%04d-%02d-%02d" % (y, mo, d) + self.separator
        return text + self.times[second]


def _civil(days):
    """Year, month, day of days since 1970-01-01 (Howard Hinnant's algorithm)."""
    days += 719468
    era = (days if days >= 0 else days - 146096) // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def render(parts, shift, formatter):
    out = []
    for index, part in enumerate(parts):
        if index % 3 == 1:
            out.append(formatter(part + shift))
        else:
            out.append(part)
    return b"".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=2 << 30, help="bytes of export.xml (default 2 GiB)")
    parser.add_argument("--shift-days", type=int, default=3, help="days between repetitions (default 3)")
    parser.add_argument("--routes-every", type=int, default=10, help="GPX files for every Nth repetition")
    options = parser.parse_args()
    if options.routes_every < 1:
        parser.error("--routes-every must be at least 1 (GPX files for every Nth repetition)")
    data = os.path.join(SHARED, "applehealth")
    with open(os.path.join(data, "hk_export.xml"), "rb") as handle:
        hk = handle.read()
    body_start = hk.index(b"<HealthData")
    header = hk[:hk.index(b">", body_start) + 1] + b"\n"
    me_end = hk.index(b"/>", hk.index(b"<Me ")) + 2
    exported = hk[hk.index(b"<ExportDate"):me_end]
    hk_body = hk[me_end:hk.rindex(b"</HealthData>")]
    hk_start = min(t for t in split(hk_body, XML_DATE)[1::3])
    # The fragments, each moved by whole days into hk_export's months, 40 days apart.
    fragments = []
    gpx = []
    folder = os.path.join(data, "nr_fragments")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".xml"))
    windows = []
    for index, name in enumerate(names):
        with open(os.path.join(folder, name), "rb") as handle:
            text = handle.read()
        times = split(text, XML_DATE)[1::3]
        shift = (hk_start + 86400 * (14 + 40 * index)) // 86400 * 86400 - min(times) // 86400 * 86400
        fragments.append(render(split(text, XML_DATE), shift, Formatter(b" ")))
        match = re.search(rb'<Workout [^>]*startDate="([^"]+)"[^>]*endDate="([^"]+)"', text)
        if match:
            def instant(value):
                parts = split(value, XML_DATE)
                sign = -1 if parts[2].strip().startswith(b"-") else 1
                offset = int(parts[2].strip()[1:3]) * 3600 + int(parts[2].strip()[3:5]) * 60
                return parts[1] - sign * offset
            windows.append((instant(match.group(1)), instant(match.group(2)), shift))
    routes = os.path.join(folder, "workout-routes")
    for name in sorted(os.listdir(routes)):
        with open(os.path.join(routes, name), "rb") as handle:
            text = handle.read()
        parts = split(text, GPX_DATE)
        # The track points' times: those after the first <trkpt (a metadata/time before it, if any, is not one).
        first_point = text.find(b"<trkpt")
        points = [calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)) + (0, 0, 0))
                  for m in GPX_DATE.finditer(text) if 0 <= first_point < m.start()]
        owner = next((w for w in windows if points and w[0] - 60 <= points[0] <= w[1] + 60), None)
        if owner:
            gpx.append((name, parts, owner[2]))
    template = split(hk_body + b"\n" + b"\n".join(fragments) + b"\n", XML_DATE)
    out = os.path.join(options.out, "apple_health_export")
    os.makedirs(os.path.join(out, "workout-routes"), exist_ok=True)
    formatter = Formatter(b" ")
    gpx_formatter = Formatter(b"T")
    written = 0
    repetitions = 0
    route_files = 0
    with open(os.path.join(out, "export.xml"), "wb") as handle:
        handle.write(header)
        handle.write(b" " + exported + b"\n")
        while written < options.size:
            shift = repetitions * (options.shift_days * 86400 + REPEAT_SECONDS)
            chunk = render(template, shift, formatter)
            handle.write(chunk)
            written += len(chunk)
            if repetitions % options.routes_every == 0:
                for name, parts, fragment_shift in gpx:
                    path = os.path.join(out, "workout-routes", "r%05d_%s" % (repetitions, name))
                    with open(path, "wb") as route:
                        route.write(render(parts, shift + fragment_shift, gpx_formatter))
                    route_files += 1
            repetitions += 1
        handle.write(b"</HealthData>\n")
    print("%s: %d bytes, %d repetitions, %d route files" % (os.path.join(out, "export.xml"), written, repetitions,
                                                            route_files))


if __name__ == "__main__":
    sys.exit(main())
