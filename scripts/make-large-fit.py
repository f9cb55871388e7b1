#!/usr/bin/env python3
"""Makes a large, valid FIT activity from a real one: its records repeated with shifted timestamps.

usage: make-large-fit.py SOURCE.fit OUT.fit --megabytes 60

The output holds the source's file_id and its record messages (with the definitions they need), repeated until the
file reaches the size asked for; each repetition's timestamps are shifted by the source's record span plus one
second, so the records go on in time order. Sessions, laps and events are left out: the importer then spans the
workout over the records (anomaly "no sessions"). Compressed-timestamp headers keep working (their offsets are
relative to the last full timestamp, which is shifted). The header's data size and the file CRC are recomputed.
Used by the import-memory tests (Tests/WorkoutServerTests/ImportMemoryTests.swift) and docs/server-operations-limits.md.
"""
import argparse
import struct
import sys

CRC_TABLE = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]


def crc16(data, crc=0):
    for byte in data:
        tmp = CRC_TABLE[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ CRC_TABLE[byte & 0xF]
        tmp = CRC_TABLE[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ CRC_TABLE[(byte >> 4) & 0xF]
    return crc


def messages(data):
    """Yields (kind, bytes, info) for each message of the first FIT file in data."""
    header_size = data[0]
    data_size = struct.unpack_from("<I", data, 4)[0]
    offset, end = header_size, header_size + data_size
    local = {}
    while offset < end:
        header = data[offset]
        if header & 0x80:  # compressed timestamp data message
            kind_local = (header >> 5) & 0x3
            definition = local[kind_local]
            size = 1 + definition["size"]
            yield "data", data[offset:offset + size], definition, None
            offset += size
        elif header & 0x40:  # definition
            kind_local = header & 0x0F
            developer = bool(header & 0x20)
            architecture = data[offset + 2]
            endian = ">" if architecture == 1 else "<"
            global_number = struct.unpack_from(endian + "H", data, offset + 3)[0]
            count = data[offset + 5]
            fields = []
            position = offset + 6
            field_offset = 0
            timestamp_at = None
            for _ in range(count):
                number, size, _base = data[position], data[position + 1], data[position + 2]
                if number == 253 and size == 4:
                    timestamp_at = field_offset
                fields.append((number, size))
                field_offset += size
                position += 3
            if developer:
                dev_count = data[position]
                position += 1
                for _ in range(dev_count):
                    field_offset += data[position + 1]
                    position += 3
            local[kind_local] = {"global": global_number, "size": field_offset, "timestamp": timestamp_at,
                                 "endian": endian}
            yield "definition", data[offset:position], local[kind_local], kind_local
            offset = position
        else:
            kind_local = header & 0x0F
            definition = local[kind_local]
            size = 1 + definition["size"]
            yield "data", data[offset:offset + size], definition, None
            offset += size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--megabytes", type=float, default=60)
    args = parser.parse_args()
    data = open(args.source, "rb").read()
    kept = []  # (kind, bytes, definition)
    first = last = None
    for kind, raw, definition, _ in messages(data):
        if kind == "definition":
            kept.append((kind, raw, definition))
        elif definition["global"] in (0, 20):
            kept.append((kind, raw, definition))
            if definition["global"] == 20 and definition["timestamp"] is not None:
                (stamp,) = struct.unpack_from(definition["endian"] + "I", raw, 1 + definition["timestamp"])
                first = stamp if first is None else min(first, stamp)
                last = stamp if last is None else max(last, stamp)
    if first is None:
        sys.exit("the source has no timestamped records")
    span = last - first + 1
    target = int(args.megabytes * 1024 * 1024)
    body = bytearray()
    repetition = 0
    while len(body) < target:
        for kind, raw, definition in kept:
            if repetition > 0 and kind == "data" and definition["global"] == 0:
                continue  # one file_id
            if kind == "data" and definition["global"] == 20 and definition["timestamp"] is not None and not raw[0] & 0x80:
                raw = bytearray(raw)
                at = 1 + definition["timestamp"]
                (stamp,) = struct.unpack_from(definition["endian"] + "I", raw, at)
                struct.pack_into(definition["endian"] + "I", raw, at, stamp + repetition * span)
                raw = bytes(raw)
            body += raw
        repetition += 1
    header = bytearray(struct.pack("<BBHI4s", 14, 0x20, 2132, len(body), b".FIT"))
    header += struct.pack("<H", crc16(header))
    whole = bytes(header) + bytes(body)
    with open(args.out, "wb") as out:
        out.write(whole)
        out.write(struct.pack("<H", crc16(whole)))
    print(f"{args.out}: {len(whole) + 2} bytes, {repetition} repetitions of {span} s of records", file=sys.stderr)


if __name__ == "__main__":
    main()
