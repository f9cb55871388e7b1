#!/usr/bin/env python3
"""Live-session load on a `workout serve` (issue 12 acceptance; docs/server.md, docs/live-load.md).

SESSIONS recorders each open a live session and post one batch a second with one sample of each of five
streams (heart rate, power, cadence, speed, distance: 5 samples/s per session), for DURATION seconds, while
UPLOADS FIT uploads a second go to the same server. Every acknowledgement's latency is recorded; a batch
that fails is retried from the session's last acknowledged number (GET the session) as a real recorder
would. At the end each session is ended and finished, and the saved workout's samples are counted against
what was acknowledged: lost = acknowledged but missing, doubled = stored twice. The server's resident memory
(VmRSS of --pid) is sampled every 10 s. Loopback only; every number is bounded by the arguments.

  scripts/live-load.py --url http://127.0.0.1:8080 --tokens FILE --pid PID [--sessions 1000] [--duration 600]
                       [--uploads 20] [--fit-dir DIR]

FILE holds one athlete token a line (`workout athletes add` output); sessions and uploads go round-robin over
them. Uploads cycle over the .fit files of DIR; each upload is made a new file (the header's profile version
set to a running number, both CRCs computed again), so the server's deduplication by content never answers
one from an earlier import: every upload is a full import (a duplicate answer is counted as such).
"""
import argparse, asyncio, json, os, statistics, sys, time, uuid
from datetime import datetime, timedelta, timezone

STREAMS = [("heartRate", 140, "count/min"), ("cyclingPower", 200, "W"), ("cyclingCadence", 85, "count/min"),
           ("cyclingSpeed", 9.5, "m/s"), ("distanceCycling", 9.5, "m")]


def fit_crc(data, crc=0):
    """The FIT protocol's CRC-16 (nibble table, as its protocol document gives it)."""
    table = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
    for byte in data:
        tmp = table[crc & 0xF]
        crc = ((crc >> 4) & 0x0FFF) ^ tmp ^ table[byte & 0xF]
        tmp = table[crc & 0xF]
        crc = ((crc >> 4) & 0x0FFF) ^ tmp ^ table[(byte >> 4) & 0xF]
    return crc


def zero_bytes_operator(count):
    """The CRC state change of `count` zero bytes, a linear map on 16 bits: its 16 columns."""
    def apply(columns, state):
        result = 0
        for bit in range(16):
            if state >> bit & 1:
                result ^= columns[bit]
        return result
    one = [fit_crc(b"\0", 1 << bit) for bit in range(16)]
    result = [1 << bit for bit in range(16)]  # identity
    while count:
        if count & 1:
            result = [apply(one, column) for column in result]
        one = [apply(one, column) for column in one]
        count >>= 1
    return lambda state: apply(result, state)


def unique_fit(content, number, cache={}):
    """`content` (a FIT file) as a different file: profile version `number`, header and file CRCs redone.

    The decoder does not interpret the profile version, so the import is the same workout, yet the bytes (and
    so the server's content hash and the workout's ids) are new. Only the first file of a chained file changes.
    The CRC is linear: the file CRC changes by the CRC of the changed header bytes carried over the rest of the
    file as zeros (an operator computed once a file), so a large file costs no more than a small one.
    """
    data = bytearray(content)
    header_size, data_size = data[0], int.from_bytes(data[4:8], "little")
    end = header_size + data_size
    if header_size < 12 or len(data) < end + 2:
        return bytes(data)
    old = bytes(data[:header_size])
    data[2:4] = (number & 0xFFFF).to_bytes(2, "little")
    if header_size >= 14 and data[12:14] != b"\0\0":
        data[12:14] = fit_crc(data[0:12]).to_bytes(2, "little")
    key = (len(content), end, header_size)
    if key not in cache:
        cache[key] = zero_bytes_operator(end - header_size)
    delta = cache[key](fit_crc(bytes(a ^ b for a, b in zip(old, data[:header_size]))))
    stored = int.from_bytes(data[end:end + 2], "little")
    data[end:end + 2] = (stored ^ delta).to_bytes(2, "little")
    return bytes(data)


class Connection:
    """One keep-alive HTTP/1.1 connection (loopback, Content-Length bodies only)."""

    def __init__(self, host, port):
        self.host, self.port, self.reader, self.writer = host, port, None, None

    async def request(self, method, path, token, body=b"", content_type="application/json"):
        """`content_type`: the body's media type (a FIT upload is application/octet-stream: the server answers
        415 to a body sent as anything else than it takes)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Length: {len(body)}\r\nContent-Type: {content_type}\r\n\r\n").encode()
        try:
            self.writer.write(head + body)
            await self.writer.drain()
            # The whole head in one read (one await, not one a line: the generator's CPU is the server's too).
            try:
                head = await self.reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as error:
                raise ConnectionError("closed") from error
            lines = head.split(b"\r\n")
            status = int(lines[0].split()[1])
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value.strip())
            data = await self.reader.readexactly(length) if length else b""
            return status, data
        except Exception:
            self.close()
            raise

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader, self.writer = None, None


def iso(date):
    return date.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def sample_objects(start, end):
    """The five samples of a batch as JSON objects, all at `start` (text), the distance over `start`…`end`."""
    return [{"type": t, "value": v, "unit": u, "start": start, **({"end": end} if t == "distanceCycling" else {})}
            for t, v, u in STREAMS]


def batch_objects(seq, start):
    """Batch `seq` as JSON objects: the reference `batch_body` is checked against when the generator starts."""
    at = start + timedelta(seconds=seq - 1)
    items = [{"kind": "start", "at": iso(start)}] if seq == 1 else []
    items.append({"kind": "samples", "samples": sample_objects(iso(at), iso(at + timedelta(seconds=1)))})
    return {"seq": seq, "items": items}


# A batch's JSON with its number and dates left open (every batch has the same five streams and values): filled
# with `%` it is the body `json.dumps` makes of `batch_objects`, in about 5 µs a batch where building the objects
# and dumping them, each sample's date formatted anew, took about 16 µs (timeit, best of 5).
BATCH_TEMPLATE = ('{"seq": %(seq)d, "items": [%(first)s{"kind": "samples", "samples": '
                  + json.dumps(sample_objects("@S@", "@E@")).replace("%", "%%")
                  .replace('"@S@"', '"%(start)s"').replace('"@E@"', '"%(end)s"') + "}]}")


def batch_body(seq, start):
    """Batch `seq` of a recorder that started at `start`: its five samples at start + seq - 1 s (distance over
    the second that follows), the first batch also `start`."""
    at = start + timedelta(seconds=seq - 1)
    first = '{"kind": "start", "at": "%s"}, ' % iso(start) if seq == 1 else ""
    return (BATCH_TEMPLATE % {"seq": seq, "first": first, "start": iso(at),
                              "end": iso(at + timedelta(seconds=1))}).encode()


async def session(args, token, host, port, results, stop_at, due):
    conn = Connection(host, port)
    sid = str(uuid.uuid4())
    start = datetime.now(timezone.utc)
    # The recorder's own clock: its batches fall due a whole number of seconds after `due`, its planned start,
    # however late it got going or the server answered its open (anchoring them to either would bunch sessions
    # into the same part of every second for the whole run, a burst no fleet of devices makes).
    began = due
    asked = time.monotonic()
    status, _ = await conn.request("PUT", f"/v1/sessions/{sid}", token, json.dumps({"activityType": "cycling"}).encode())
    results["opens"].append((asked - results["began"], time.monotonic() - asked))
    if status not in (200, 201):
        results["errors"].append(f"open {status}")
        return
    # acked: the server's last committed batch as this recorder knows it; highest: the highest number it ever
    # had acknowledged (a server that comes back with less than that has lost acknowledged batches).
    acked, highest, seq, latencies = 0, 0, 0, results["latencies"]
    # A recorder makes five samples a second whatever the server does: batch n is due n - 1 seconds after the
    # recorder started, and a batch whose answer came late is followed at once by the next one due.
    while time.monotonic() < stop_at:
        seq = acked + 1
        body = batch_body(seq, start)
        sent = time.monotonic()
        try:
            status, data = await conn.request("POST", f"/v1/sessions/{sid}/batches", token, body)
            if status == 200:
                latencies.append(time.monotonic() - sent)
                results["late"].append(sent - results["began"] >= 60 and time.monotonic() - sent)
                results["minutes"].setdefault(int((sent - results["began"]) // 60), []).append(latencies[-1])
                # The start in finer steps: where a cold server's first seconds go.
                if sent - results["began"] < 20:
                    results["seconds"].setdefault(int(sent - results["began"]), []).append(latencies[-1])
                if sent - results["began"] < 150:
                    results["tens"].setdefault(int((sent - results["began"]) // 10), []).append(latencies[-1])
                acked = json.loads(data)["ack"]
                highest = max(highest, acked)
            else:
                results["errors"].append(f"batch {status} {data[:120]!r}")
                status, data = await conn.request("GET", f"/v1/sessions/{sid}", token)
                if status == 200:
                    acked = json.loads(data)["lastBatch"]
        except Exception as error:  # the server went away: retry from its last committed batch
            results["errors"].append(f"batch {type(error).__name__}")
            await asyncio.sleep(1)
            try:
                status, data = await conn.request("GET", f"/v1/sessions/{sid}", token)
                if status == 200:
                    acked = json.loads(data)["lastBatch"]
            except Exception:
                pass
            continue
        await asyncio.sleep(max(0, began + acked - time.monotonic()))
    results["sessions"].append((sid, highest, acked, start, token))
    conn.close()


async def finish(args, token, host, port, sid, highest, acked, start, results):
    """Ends and saves the session, then reads the saved workout back: every sample of batches 1…highest must be
    there once (lost: missing; doubled: stored more than once).

    A step that fails (an error answer, a connection cut: the server restarting, PostgreSQL recovering) is tried
    again, from the session's state as the server tells it, for up to --finish-patience seconds. A session whose
    save or read-back never succeeded is *unverified*: its samples were neither seen stored nor seen missing, so
    they are counted apart, never as lost (a failed read-back says nothing of what the database holds)."""
    conn = Connection(host, port)
    deadline = time.monotonic() + args.finish_patience
    stored = None
    attempt = 0
    while stored is None and time.monotonic() < deadline:
        if attempt:
            await asyncio.sleep(min(5, attempt))
        attempt += 1
        try:
            status, data = await conn.request("GET", f"/v1/sessions/{sid}", token)
            finished = status == 409 and b"session_finished" in data  # saved already (its answer was cut off)
            if status == 200:
                state = json.loads(data)
                if state["state"] not in ("ended", "finished"):
                    end = iso(start + timedelta(seconds=state["lastBatch"] + 1))
                    body = json.dumps({"seq": state["lastBatch"] + 1,
                                       "items": [{"kind": "stop", "at": end}, {"kind": "end", "at": end}]}).encode()
                    status, data = await conn.request("POST", f"/v1/sessions/{sid}/batches", token, body)
                    if status != 200:
                        results["errors"].append(f"end {status} {data[:120]!r}")
                        continue
            elif not finished:
                results["errors"].append(f"state {status} {data[:120]!r}")
                continue
            status, data = await conn.request("POST", f"/v1/sessions/{sid}/finish", token)
            if status != 200:
                results["errors"].append(f"finish {status} {data[:120]!r}")
                continue
            status, data = await conn.request("GET", f"/v1/samples?workout={sid}&limit=100000", token)
            if status != 200:
                results["errors"].append(f"samples {status} {data[:120]!r}")
                continue
            stored = json.loads(data).get("samples", [])
        except Exception as error:
            results["errors"].append(f"finish {type(error).__name__}")
            conn.close()
    conn.close()
    if stored is None:
        results["unverified"] += highest * len(STREAMS)
        results["unverified_sessions"] += 1
        return
    if attempt > 1:
        results["finish_retried"] += 1
    keys = [(s["sample"]["type"], s["sample"]["start"]) for s in stored]
    present = set(keys)
    for seq in range(1, highest + 1):
        at = iso(start + timedelta(seconds=seq - 1))
        results["lost"] += sum(1 for t, _, _ in STREAMS if (t, at) not in present)
    results["doubled"] += len(keys) - len(present)
    results["stored"] += len(keys)


def upload_files(args):
    """The FIT files uploads cycle over, each one's CRC operator computed (cached in `unique_fit`).

    Called before the clock starts: the operators cost CPU (a file's is its size in zero bytes carried through
    the CRC), while making an upload unique once they are known is a copy and a few table lookups, done as it is
    sent. Preparing every upload beforehand instead held gigabytes and, done once the clock ran, kept the event
    loop from starting the sessions on time: all of them then started together and posted in step all run long.
    """
    if args.uploads <= 0 or not args.fit_dir:
        return []
    files = sorted(os.path.join(args.fit_dir, name) for name in os.listdir(args.fit_dir) if name.endswith(".fit"))
    contents = [open(path, "rb").read() for path in files]
    # A file cut short (its header's data size runs past its end) is refused by the server: not a load.
    contents = [c for c in contents if len(c) >= 14 and len(c) >= c[0] + int.from_bytes(c[4:8], "little") + 2]
    for content in contents:
        unique_fit(content, 0)
    return contents


async def uploads(args, tokens, host, port, results, stop_at, contents):
    """FIT uploads at a fixed rate, at most --upload-connections at once (a late one is counted as missed).

    Upload i is file i mod N made unique with profile version first_profile + i div N (wrapping at 65536), so
    every upload of the run is a different file (the server's deduplication never answers it)."""
    if not contents:
        return
    idle = [Connection(host, port) for _ in range(args.upload_connections)]

    async def one(index):
        conn = idle.pop()
        sent = time.monotonic()
        try:
            body = unique_fit(contents[index % len(contents)], (args.first_profile + index // len(contents)) & 0xFFFF)
            status, data = await conn.request("POST", "/v1/workouts", tokens[index % len(tokens)], body,
                                              content_type="application/octet-stream")
            results["uploads"].append((status, time.monotonic() - sent))
            if status in (200, 201):
                minute = int((time.monotonic() - results["began"]) // 60)
                results["upload_minutes"][minute] = results["upload_minutes"].get(minute, 0) + 1
            else:
                results["upload_errors"].append(f"{status} {data[:160]!r}")
        except Exception as error:
            results["upload_errors"].append(f"{type(error).__name__}")
            results["uploads"].append((0, time.monotonic() - sent))
        finally:
            idle.append(conn)

    interval = 1 / args.uploads
    began = time.monotonic()
    index, running = 0, set()
    while time.monotonic() < stop_at:
        if idle:
            task = asyncio.ensure_future(one(index))
            running.add(task)
            task.add_done_callback(running.discard)
        else:
            results["uploads_missed"] += 1
        index += 1
        await asyncio.sleep(max(0, began + index * interval - time.monotonic()))
    if running:
        await asyncio.gather(*running)


async def memory(args, results, stop_at):
    while time.monotonic() < stop_at:
        pid = args.pid
        try:
            if args.pid_file:
                with open(args.pid_file) as file:
                    pid = int(file.read().strip() or pid)
        except (OSError, ValueError):
            pass
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        results["rss"].append((time.monotonic(), int(line.split()[1])))
        except OSError:
            pass
        await asyncio.sleep(10)


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--tokens", required=True, help="a file of athlete tokens, one a line")
    parser.add_argument("--pid", type=int, default=0)
    parser.add_argument("--pid-file", help="a file holding the server's pid (read at each sample: a restarted server)")
    parser.add_argument("--upload-connections", type=int, default=64,
                        help="the most uploads in flight at once (default 64: the uploads the server queues)")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=600)
    parser.add_argument("--uploads", type=float, default=20)
    parser.add_argument("--fit-dir")
    parser.add_argument("--finish-patience", type=float, default=300,
                        help="seconds a session's end, save and read-back are tried again before it is unverified")
    parser.add_argument("--first-profile", type=int, default=None,
                        help="the first profile version written into uploads (default: random, so reruns are new files)")
    args = parser.parse_args()
    host, _, port = args.url.removeprefix("http://").rstrip("/").partition(":")
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("loopback only: --url must be http://127.0.0.1:PORT")
    if not (0 < args.sessions <= 5000 and 0 < args.duration <= 3600 and 0 <= args.uploads <= 100):
        sys.exit("bounded: --sessions 1…5000, --duration 1…3600 s, --uploads 0…100 per second")
    if args.first_profile is None:
        args.first_profile = int.from_bytes(os.urandom(2), "little")
    tokens = [line.strip() for line in open(args.tokens) if line.strip()]
    if not tokens:
        sys.exit(f"no tokens in {args.tokens}")
    now = datetime.now(timezone.utc)
    if any(batch_body(seq, now) != json.dumps(batch_objects(seq, now)).encode() for seq in (1, 2, 3600)):
        sys.exit("the batch template no longer makes the body json.dumps makes; mend BATCH_TEMPLATE")
    results = {"latencies": [], "errors": [], "sessions": [], "uploads": [], "rss": [], "lost": 0, "doubled": 0,
               "upload_errors": [], "uploads_missed": 0, "lag": [], "unverified": 0, "unverified_sessions": 0,
               "finish_retried": 0,
               "stored": 0, "late": [], "minutes": {}, "seconds": {}, "tens": {}, "opens": [], "upload_minutes": {}}
    contents = upload_files(args)
    began = time.monotonic()
    results["began"] = began
    stop_at = began + args.duration
    # The sessions start spread evenly over the first second (a thousand a second at most), as devices would:
    # session i's clock starts at `began + (i mod 1000) / 1000` whenever the event loop gets to it.
    dues = [began + i % 1000 / 1000 for i in range(args.sessions)]
    tasks = [session(args, tokens[i % len(tokens)], host, int(port), results, stop_at, dues[i]) for i in range(args.sessions)]
    async def staggered(index, task):
        await asyncio.sleep(max(0, dues[index] - time.monotonic()))
        await task
    async def lag():
        # How late the generator's own event loop wakes up: latencies include it, so a busy generator shows here.
        while time.monotonic() < stop_at:
            before = time.monotonic()
            await asyncio.sleep(0.1)
            results["lag"].append(time.monotonic() - before - 0.1)
    await asyncio.gather(*(staggered(i, t) for i, t in enumerate(tasks)), uploads(args, tokens, host, int(port), results, stop_at, contents),
                         memory(args, results, stop_at), lag())
    for i in range(0, len(results["sessions"]), 100):
        await asyncio.gather(*(finish(args, token, host, int(port), sid, highest, acked, start, results)
                               for sid, highest, acked, start, token in results["sessions"][i:i + 100]))
    report(args, results)


def report(args, results):
    def pct(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(len(values) * p))] * 1000 if values else float("nan")
    latencies = results["latencies"]
    acked = sum(highest for _, highest, _, _, _ in results["sessions"])
    samples = acked * len(STREAMS)
    print(f"sessions: {len(results['sessions'])} of {args.sessions} ran {args.duration:.0f} s; batches acknowledged {acked} "
          f"({samples} samples, {samples / args.duration:.0f} samples/s)")
    print(f"ack latency: p50 {pct(latencies, 0.5):.1f} ms, p99 {pct(latencies, 0.99):.1f} ms, max {pct(latencies, 1.0):.1f} ms "
          f"({len(latencies)} acknowledgements; generator's own lag p99 {pct(results['lag'], 0.99):.1f} ms)")
    settled = [latency for latency in results["late"] if latency is not False]
    if settled:
        print(f"ack latency after the first minute: p50 {pct(settled, 0.5):.1f} ms, p99 {pct(settled, 0.99):.1f} ms "
              f"({len(settled)} acknowledgements)")
    if results["opens"]:
        waits = [wait for _, wait in results["opens"]]
        print(f"session opens: {len(waits)} answered, latency p50 {pct(waits, 0.5):.0f} ms, p99 {pct(waits, 0.99):.0f} ms; "
              f"the last answered {max(at + wait for at, wait in results['opens']):.2f} s after the start")
    if results["seconds"]:
        print("ack latency by second, first 20 s (acks p50/p99 ms): " + ", ".join(
            f"{second}: {len(values)} {pct(values, 0.5):.0f}/{pct(values, 0.99):.0f}" for second, values in sorted(results["seconds"].items())))
    if results["tens"]:
        print("ack latency by 10 s, first 150 s (acks p50/p99 ms): " + ", ".join(
            f"{ten * 10}: {len(values)} {pct(values, 0.5):.0f}/{pct(values, 0.99):.0f}" for ten, values in sorted(results["tens"].items())))
    if len(results["minutes"]) > 1:
        print("ack latency by minute (p50/p99 ms): " + ", ".join(
            f"{minute + 1}: {pct(values, 0.5):.0f}/{pct(values, 0.99):.0f}" for minute, values in sorted(results["minutes"].items())))
    ok_uploads = [t for s, t in results["uploads"] if s in (200, 201)]
    duplicates = sum(1 for s, _ in results["uploads"] if s == 200)
    print(f"uploads: {len(ok_uploads)} imported ({duplicates} answered as duplicates), {len(ok_uploads) / args.duration:.1f}/s "
          f"of {args.uploads:g}/s asked; failed {len(results['uploads']) - len(ok_uploads)}, not sent (all "
          f"{args.upload_connections} connections busy) {results['uploads_missed']}; latency p50 "
          f"{pct(ok_uploads, 0.5):.0f} ms, p99 {pct(ok_uploads, 0.99):.0f} ms"
          + (f" (first failure: {results['upload_errors'][0]})" if results["upload_errors"] else ""))
    # Minutes of the run (the last one may be shorter); uploads answered after the run's end are counted apart.
    run_minutes = range((int(args.duration) + 59) // 60)
    if len(run_minutes) > 1:
        after = sum(count for minute, count in results["upload_minutes"].items() if minute not in run_minutes)
        print("uploads imported by minute (per second of each minute of the run, by when answered): " + ", ".join(
            f"{minute + 1}: {results['upload_minutes'].get(minute, 0) / min(60, args.duration - 60 * minute):.1f}"
            for minute in run_minutes) + f"; answered after the end: {after}")
    print(f"acknowledged samples: {samples}, read back {results['stored']}, lost {results['lost']}, "
          f"stored twice {results['doubled']}, unverified {results['unverified']} ({results['unverified_sessions']} "
          f"sessions whose save or read-back never succeeded; {results['finish_retried']} saved on a retry); "
          f"batch errors {len(results['errors'])}"
          + (f" (first: {results['errors'][0]})" if results["errors"] else ""))
    if results["errors"]:
        # By kind (what failed and its status or exception), each with its first answer: batches during the run,
        # and the end, state, finish and read-back steps (each tried again; a session never read back is unverified).
        kinds = {}
        for error in results["errors"]:
            kind = " ".join(error.split(" ")[:2])
            count, first = kinds.get(kind, (0, error))
            kinds[kind] = (count + 1, first)
        print("errors by kind: " + "; ".join(f"{kind}: {count} (first: {first[:160]})"
                                             for kind, (count, first) in sorted(kinds.items())))
    rss = results["rss"]
    if len(rss) >= 2:
        t0 = rss[0][0]
        second = [kb for t, kb in rss if 60 <= t - t0 < 120] or [rss[1][1]]
        last = [kb for t, kb in rss if t - t0 >= rss[-1][0] - t0 - 60] or [rss[-1][1]]
        print(f"server RSS: second minute {statistics.mean(second) / 1024:.0f} MB, last minute {statistics.mean(last) / 1024:.0f} MB, "
              f"change {(statistics.mean(last) / statistics.mean(second) - 1) * 100:+.1f} %")
    used = os.times()
    print(f"generator CPU time: {used.user + used.system:.0f} s")


asyncio.run(main())
