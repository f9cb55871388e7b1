#!/usr/bin/env python3
"""Live-session load on a `workout serve` (issue 12 acceptance; README, Server).

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
them. Uploads cycle over the .fit files of DIR and the athletes so that each (file, athlete) is new while
there are enough of them (a repeat is a duplicate the server recognises, and counted as such).
"""
import argparse, asyncio, json, os, statistics, sys, time, uuid
from datetime import datetime, timedelta, timezone

STREAMS = [("heartRate", 140, "count/min"), ("cyclingPower", 200, "W"), ("cyclingCadence", 85, "count/min"),
           ("cyclingSpeed", 9.5, "m/s"), ("distanceCycling", 9.5, "m")]


class Connection:
    """One keep-alive HTTP/1.1 connection (loopback, Content-Length bodies only)."""

    def __init__(self, host, port):
        self.host, self.port, self.reader, self.writer = host, port, None, None

    async def request(self, method, path, token, body=b""):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n").encode()
        try:
            self.writer.write(head + body)
            await self.writer.drain()
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("closed")
            status = int(status_line.split()[1])
            length = 0
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
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


async def session(args, token, host, port, results, stop_at):
    conn = Connection(host, port)
    sid = str(uuid.uuid4())
    start = datetime.now(timezone.utc)
    status, _ = await conn.request("PUT", f"/v1/sessions/{sid}", token, json.dumps({"activityType": "cycling"}).encode())
    if status not in (200, 201):
        results["errors"].append(f"open {status}")
        return
    acked, seq, latencies = 0, 0, results["latencies"]
    while time.monotonic() < stop_at:
        seq = acked + 1
        at = start + timedelta(seconds=seq - 1)
        items = [{"kind": "start", "at": iso(start)}] if seq == 1 else []
        items.append({"kind": "samples", "samples": [
            {"type": t, "value": v, "unit": u, "start": iso(at), **({"end": iso(at + timedelta(seconds=1))} if t == "distanceCycling" else {})}
            for t, v, u in STREAMS]})
        body = json.dumps({"seq": seq, "items": items}).encode()
        sent = time.monotonic()
        try:
            status, data = await conn.request("POST", f"/v1/sessions/{sid}/batches", token, body)
            if status == 200:
                latencies.append(time.monotonic() - sent)
                acked = json.loads(data)["ack"]
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
        await asyncio.sleep(max(0, 1 - (time.monotonic() - sent)))
    results["sessions"].append((sid, acked, start, token))
    conn.close()


async def finish(args, token, host, port, sid, acked, start, results):
    conn = Connection(host, port)
    end = iso(start + timedelta(seconds=acked + 1))
    body = json.dumps({"seq": acked + 1, "items": [{"kind": "stop", "at": end}, {"kind": "end", "at": end}]}).encode()
    await conn.request("POST", f"/v1/sessions/{sid}/batches", token, body)
    status, _ = await conn.request("POST", f"/v1/sessions/{sid}/finish", token)
    status, data = await conn.request("GET", f"/v1/samples?workout={sid}&limit=100000", token)
    stored = json.loads(data).get("samples", []) if status == 200 else []
    keys = [(s["sample"]["type"], s["sample"]["start"]) for s in stored]
    expected = acked * len(STREAMS)
    results["lost"] += max(0, expected - len(set(keys)))
    results["doubled"] += len(keys) - len(set(keys))
    conn.close()


async def uploads(args, tokens, host, port, results, stop_at):
    if args.uploads <= 0 or not args.fit_dir:
        return
    files = sorted(os.path.join(args.fit_dir, name) for name in os.listdir(args.fit_dir) if name.endswith(".fit"))
    contents = [open(path, "rb").read() for path in files]
    conn = Connection(host, port)
    interval = 1 / args.uploads
    index = 0
    while time.monotonic() < stop_at:
        sent = time.monotonic()
        body = contents[index % len(contents)]
        token = tokens[(index // len(contents)) % len(tokens)]
        index += 1
        try:
            status, _ = await conn.request("POST", "/v1/workouts", token, body)
            results["uploads"].append((status, time.monotonic() - sent))
        except Exception as error:
            results["errors"].append(f"upload {type(error).__name__}")
        await asyncio.sleep(max(0, interval - (time.monotonic() - sent)))


async def memory(args, results, stop_at):
    while time.monotonic() < stop_at:
        try:
            with open(f"/proc/{args.pid}/status") as status:
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
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=600)
    parser.add_argument("--uploads", type=float, default=20)
    parser.add_argument("--fit-dir")
    args = parser.parse_args()
    host, _, port = args.url.removeprefix("http://").rstrip("/").partition(":")
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("loopback only: --url must be http://127.0.0.1:PORT")
    if not (0 < args.sessions <= 5000 and 0 < args.duration <= 3600 and 0 <= args.uploads <= 100):
        sys.exit("bounded: --sessions 1…5000, --duration 1…3600 s, --uploads 0…100 per second")
    tokens = [line.strip() for line in open(args.tokens) if line.strip()]
    if not tokens:
        sys.exit(f"no tokens in {args.tokens}")
    results = {"latencies": [], "errors": [], "sessions": [], "uploads": [], "rss": [], "lost": 0, "doubled": 0}
    began = time.monotonic()
    stop_at = began + args.duration
    tasks = [session(args, tokens[i % len(tokens)], host, int(port), results, stop_at) for i in range(args.sessions)]
    # Start the sessions over the first seconds, as devices would.
    async def staggered(index, task):
        await asyncio.sleep(index % 1000 / 1000)
        await task
    await asyncio.gather(*(staggered(i, t) for i, t in enumerate(tasks)), uploads(args, tokens, host, int(port), results, stop_at),
                         memory(args, results, stop_at))
    for i in range(0, len(results["sessions"]), 100):
        await asyncio.gather(*(finish(args, token, host, int(port), sid, acked, start, results)
                               for sid, acked, start, token in results["sessions"][i:i + 100]))
    latencies = sorted(results["latencies"])
    def pct(p):
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000 if latencies else float("nan")
    acked = sum(a for _, a, _, _ in results["sessions"])
    print(f"sessions {len(results['sessions'])}/{args.sessions}, {args.duration:.0f} s, batches acknowledged {acked} "
          f"({acked * len(STREAMS)} samples, {acked * len(STREAMS) / args.duration:.0f} samples/s)")
    print(f"ack latency: p50 {pct(0.5):.1f} ms, p99 {pct(0.99):.1f} ms, max {pct(1.0):.1f} ms")
    ok_uploads = [t for s, t in results["uploads"] if s in (200, 201)]
    duplicates = sum(1 for s, _ in results["uploads"] if s == 200)
    print(f"uploads: {len(ok_uploads)} ok ({duplicates} duplicates) of {len(results['uploads'])} "
          f"({len(results['uploads']) / args.duration:.1f}/s), median {statistics.median(ok_uploads) * 1000 if ok_uploads else float('nan'):.0f} ms")
    print(f"acknowledged samples lost: {results['lost']}, stored twice: {results['doubled']}, errors: {len(results['errors'])}"
          + (f" (first: {results['errors'][0]})" if results["errors"] else ""))
    rss = results["rss"]
    if len(rss) >= 2:
        t0 = rss[0][0]
        second = [kb for t, kb in rss if 60 <= t - t0 < 120] or [rss[1][1]]
        last = [kb for t, kb in rss if t - t0 >= rss[-1][0] - t0 - 60] or [rss[-1][1]]
        print(f"server RSS: second minute {statistics.mean(second) / 1024:.0f} MB, last minute {statistics.mean(last) / 1024:.0f} MB, "
              f"change {(statistics.mean(last) / statistics.mean(second) - 1) * 100:+.1f} %")


asyncio.run(main())
