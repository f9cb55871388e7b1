#!/usr/bin/env python3
"""Checks FIT, GPX and TCX files against independent readers, for the WorkoutFormats tests.

FIT files are read with Garmin's official FIT SDK for Python (garmin-fit-sdk, installed into
.venv-fit by scripts/ensure-python-sdk.sh); GPX and TCX with the standard library's XML parser.

  fit-verify.py dump FILE.fit              what the SDK decodes (records, hr messages, lengths, laps,
                                           sessions), as JSON, to compare with our decoder
  fit-verify.py check FILE.fit EXPECTED    the SDK decodes the file with no integrity error and finds
                                           the values in EXPECTED (JSON written by the test)
  fit-verify.py gpx FILE.gpx EXPECTED      the GPX parses and holds the expected points
  fit-verify.py tcx FILE.tcx EXPECTED      the TCX parses and holds the expected structure

Prints a JSON report; the exit status is 0 when nothing is wrong.
"""
import json
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

FIT_EPOCH = 631065600


def fit_seconds(value):
    """FIT seconds (int) of an SDK datetime or an int."""
    if isinstance(value, datetime):
        return int(value.replace(tzinfo=timezone.utc).timestamp()) - FIT_EPOCH
    return value


def sdk_read(path):
    from garmin_fit_sdk import Decoder, Stream

    integrity = Decoder(Stream.from_file(path)).check_integrity()
    decoder = Decoder(Stream.from_file(path))
    messages, errors = decoder.read(
        apply_scale_and_offset=True,
        convert_datetimes_to_dates=False,
        convert_types_to_strings=False,
        expand_sub_fields=True,
        expand_components=True,
        merge_heart_rates=False,
    )
    return integrity, messages, [str(error) for error in errors]


def as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def dump(path):
    integrity, messages, errors = sdk_read(path)
    records = []
    for record in messages.get("record_mesgs", []):
        records.append({
            "timestamp": record.get("timestamp"),
            "heart_rate": record.get("heart_rate"),
            "distance": record.get("distance"),
            "speed": record.get("enhanced_speed", record.get("speed")),
            "cadence": record.get("cadence"),
            "power": record.get("power"),
            "lat": record.get("position_lat"),
            "lon": record.get("position_long"),
            "total_cycles": record.get("total_cycles"),
        })
    beats = []
    for message in messages.get("hr_mesgs", []):
        bpm = as_list(message.get("filtered_bpm"))
        times = as_list(message.get("event_timestamp"))
        beats.append({"timestamp": message.get("timestamp"), "fraction": message.get("fractional_timestamp"),
                      "bpm": bpm, "event_timestamp": times})
    keys = ["start_time", "total_elapsed_time", "total_timer_time", "total_strokes", "swim_stroke", "length_type"]
    lengths = [{key: message.get(key) for key in keys} for message in messages.get("length_mesgs", [])]
    summary_keys = ["start_time", "total_elapsed_time", "total_timer_time", "total_distance", "avg_heart_rate",
                    "max_heart_rate", "sport", "num_lengths", "num_active_lengths", "avg_swolf"]
    laps = [{key: message.get(key) for key in summary_keys} for message in messages.get("lap_mesgs", [])]
    sessions = [{key: message.get(key) for key in summary_keys} for message in messages.get("session_mesgs", [])]
    events = [{"timestamp": message.get("timestamp"), "event": message.get("event"),
               "event_type": message.get("event_type"), "data": message.get("data")}
              for message in messages.get("event_mesgs", [])]
    return {"integrity": integrity, "errors": errors, "records": records, "hr": beats, "lengths": lengths,
            "laps": laps, "sessions": sessions, "events": events}


def close(a, b, tolerance):
    return a is not None and b is not None and abs(a - b) <= tolerance


def check_fit(path, expected):
    problems = []
    integrity, messages, errors = sdk_read(path)
    if not integrity:
        problems.append("check_integrity() is False")
    if errors:
        problems.append("decode errors: %s" % errors)
    sessions = messages.get("session_mesgs", [])
    if len(sessions) != len(expected["sessions"]):
        problems.append("%d sessions, expected %d" % (len(sessions), len(expected["sessions"])))
    for index, (got, want) in enumerate(zip(sessions, expected["sessions"])):
        def compare(key, value, tolerance=0):
            if value is None:
                return
            if not close(got.get(key), value, tolerance):
                problems.append("session %d %s: %r, expected %r" % (index + 1, key, got.get(key), value))
        compare("sport", want["sport"])
        compare("sub_sport", want.get("sub_sport"))
        compare("start_time", want["start_time"])
        compare("total_elapsed_time", want["total_elapsed_time"], 0.0015)
        compare("total_timer_time", want["total_timer_time"], 0.0015)
        compare("total_distance", want.get("total_distance"), 0.015)
        compare("avg_heart_rate", want.get("avg_heart_rate"))
        compare("max_heart_rate", want.get("max_heart_rate"))
        compare("num_lengths", want.get("num_lengths"))
        compare("total_cycles", want.get("total_strokes"))
        compare("avg_swolf", want.get("avg_swolf"))
    records = {record.get("timestamp"): record for record in messages.get("record_mesgs", [])}
    checked_heart_rates = 0
    for timestamp, value in expected.get("heart_rates", []):
        record = records.get(timestamp)
        if record is None or record.get("heart_rate") != value:
            problems.append("record at %d: heart rate %r, expected %r"
                            % (timestamp, record and record.get("heart_rate"), value))
        checked_heart_rates += 1
    # Records after the end (the heart-rate recovery window) hold heart rate only, exactly the expected ones.
    end = expected.get("records_end")
    inside = [t for t in records if end is None or t <= end]
    if end is not None:
        after = sorted([t, records[t].get("heart_rate")] for t in records if t > end)
        want_after = sorted(list(entry) for entry in expected.get("recovery_records", []))
        if after != want_after:
            problems.append("records after the end %r, expected %r" % (after, want_after))
        for t in records:
            if t > end and set(k for k, v in records[t].items() if v is not None) - {"timestamp", "heart_rate"}:
                problems.append("record at %d after the end holds more than heart rate: %r" % (t, records[t]))
    last = max(inside) if inside else None
    if expected.get("final_distance") is not None:
        final = records[last].get("distance") if last is not None else None
        if not close(final, expected["final_distance"], 0.015):
            problems.append("last record distance %r, expected %r" % (final, expected["final_distance"]))
    lengths = messages.get("length_mesgs", [])
    if len(lengths) != len(expected.get("lengths", [])):
        problems.append("%d lengths, expected %d" % (len(lengths), len(expected.get("lengths", []))))
    for index, (got, want) in enumerate(zip(lengths, expected.get("lengths", []))):
        for key, tolerance in (("start_time", 0), ("total_elapsed_time", 0.0015), ("total_strokes", 0),
                               ("length_type", 0), ("swim_stroke", 0)):
            if want.get(key) is None and got.get(key) is None:
                continue
            if not close(got.get(key), want.get(key), tolerance):
                problems.append("length %d %s: %r, expected %r" % (index, key, got.get(key), want.get(key)))
    timer = [(message.get("timestamp"), message.get("event_type"), message.get("data"))
             for message in messages.get("event_mesgs", []) if message.get("event") == 0]
    want_timer = [tuple(entry) for entry in expected.get("timer_events", [])]
    if timer != want_timer:
        problems.append("timer events %r, expected %r" % (timer, want_timer))
    recovery = [message.get("data") for message in messages.get("event_mesgs", []) if message.get("event") == 21]
    if recovery != expected.get("recovery_hr", []):
        problems.append("recovery_hr events %r, expected %r" % (recovery, expected.get("recovery_hr", [])))
    activity = messages.get("activity_mesgs", [])
    if len(activity) != 1 or activity[0].get("num_sessions") != len(expected["sessions"]):
        problems.append("activity message %r" % activity)
    return problems, {"sessions": len(sessions), "records": len(records), "heart_rates": checked_heart_rates,
                      "lengths": len(lengths), "timer_events": len(timer)}


def check_gpx(path, expected):
    problems = []
    ns = {"g": "http://www.topografix.com/GPX/1/1", "x": "http://www.garmin.com/xmlschemas/TrackPointExtension/v1"}
    root = ET.parse(path).getroot()
    if root.get("version") != "1.1":
        problems.append("gpx version %r" % root.get("version"))
    segments = root.findall("g:trk/g:trkseg", ns)
    if len(segments) != expected["segments"]:
        problems.append("%d track segments, expected %d" % (len(segments), expected["segments"]))
    points = root.findall("g:trk/g:trkseg/g:trkpt", ns)
    if len(points) != expected["points"]:
        problems.append("%d track points, expected %d" % (len(points), expected["points"]))
    by_time = {}
    for point in points:
        by_time[point.findtext("g:time", namespaces=ns)] = point
    for time, heart_rate in expected.get("heart_rates", []):
        point = by_time.get(time)
        got = point.findtext("g:extensions/x:TrackPointExtension/x:hr", namespaces=ns) if point is not None else None
        if got is None or int(got) != heart_rate:
            problems.append("point at %s: hr %r, expected %r" % (time, got, heart_rate))
    return problems, {"points": len(points), "segments": len(segments)}


def check_tcx(path, expected):
    problems = []
    ns = {"t": "http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2"}
    root = ET.parse(path).getroot()
    sessions = root.findall("t:Activities/t:MultiSportSession", ns)
    activities = root.findall(".//t:Activity", ns)
    transitions = root.findall(".//t:Transition", ns)
    if len(sessions) != expected["multisport_sessions"]:
        problems.append("%d MultiSportSession, expected %d" % (len(sessions), expected["multisport_sessions"]))
    sports = [activity.get("Sport") for activity in activities]
    if sports != expected["sports"]:
        problems.append("activity sports %r, expected %r" % (sports, expected["sports"]))
    if len(transitions) != expected["transitions"]:
        problems.append("%d transitions, expected %d" % (len(transitions), expected["transitions"]))
    total = 0.0
    for lap in root.findall(".//t:Lap", ns) + transitions:
        total += float(lap.findtext("t:TotalTimeSeconds", namespaces=ns))
    if abs(total - expected["total_time"]) > 0.01 * max(1, len(activities) + len(transitions)):
        problems.append("laps and transitions total %.3f s, expected %.3f s" % (total, expected["total_time"]))
    points = root.findall(".//t:Trackpoint", ns)
    if len(points) < expected["min_points"]:
        problems.append("%d track points, expected at least %d" % (len(points), expected["min_points"]))
    positions = root.findall(".//t:Trackpoint/t:Position", ns)
    if len(positions) != expected["min_points"]:
        problems.append("%d track points with a position, expected %d" % (len(positions), expected["min_points"]))
    return problems, {"activities": len(activities), "transitions": len(transitions), "points": len(points)}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, path = argv[1], argv[2]
    if mode == "dump":
        json.dump(dump(path), sys.stdout)
        return 0
    with open(argv[3]) as handle:
        expected = json.load(handle)
    checker = {"check": check_fit, "gpx": check_gpx, "tcx": check_tcx}.get(mode)
    if checker is None:
        print("unknown mode %r" % mode, file=sys.stderr)
        return 2
    problems, checked = checker(path, expected)
    json.dump({"ok": not problems, "problems": problems[:50], "checked": checked}, sys.stdout)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
