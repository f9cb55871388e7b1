// libFuzzer target for the FIT decoder and the import (`scripts/fuzz.sh RUNS FIT` builds it with the
// sources of WorkoutModel, WorkoutEngine and WorkoutFormats as one module, -sanitize=fuzzer,address).
//
// Each input is decoded with checksums checked, then as the import reads it (damaged-file salvage
// on: what precedes the damage, flagged), then, so that mutations reach the parser, with checksums
// ignored and salvage on; what decodes is planned as an import (explicit and automatic legs) and
// replayed through a live session (one of the two, by the input's size; plans of up to 600 steps).
// Any crash, trap or sanitizer report is a finding; thrown errors are the expected outcome. Salvage
// must agree with the strict decoder: a file that decodes strictly salvages to the same messages with
// no damage, and a file the strict decoder refuses is either refused too or flagged as damaged.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFIT(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let strict = try? FITDecoder.decode(bytes)
    let salvaged = try? FITDecoder.decode(bytes, options: FITDecodeOptions(salvage: true))
    if let strict {
        guard let salvaged, salvaged == strict, salvaged.damage == nil else {
            fatalError("salvage changed a sound file's decoding")
        }
    } else if let salvaged, salvaged.damage == nil {
        fatalError("salvage decoded a file the strict decoder refuses without flagging damage")
    }
    guard
        let file = try? FITDecoder.decode(bytes, options: FITDecodeOptions(verifyChecksums: false, salvage: true))
    else { return 0 }
    // Both plans; one replay per input, explicit or automatic legs by the input's size (a replay is
    // the engine's hot path, the same for both).
    let autoSegment = size % 2 == 1
    _ = try? FITImportPlan(file: file, options: ImportOptions(autoSegment: !autoSegment), seed: 1)
    replay(file, autoSegment: autoSegment)
    return 0
}

/// Plans the import of `file` and replays it through a live session.
func replay(_ file: FITFile, autoSegment: Bool) {
    guard let plan = try? FITImportPlan(file: file, options: ImportOptions(autoSegment: autoSegment), seed: 1)
    else { return }
    // The plan is the import's own logic; a long replay only repeats the engine's hot path.
    guard plan.steps.count <= 600 else { return }
    let clock = ManualClock(plan.start)
    guard
        let session = try? WorkoutSession(
            configuration: plan.configuration, clock: clock, options: plan.builderOptions)
    else { return }
    _ = try? plan.replay(into: session, clock: clock)
    _ = try? plan.finishRecovery(of: session)
    _ = try? session.builder.finishWorkout()
}

/// With `FIT_FUZZ_SEEDS=DIR` the binary writes a seed corpus of small FIT files to DIR and exits.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    guard let directory = ProcessInfo.processInfo.environment["FIT_FUZZ_SEEDS"] else { return 0 }
    for (name, bytes) in FuzzSeeds.all() {
        _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
    }
    exit(0)
}

/// Small FIT files that reach every message the importer reads.
enum FuzzSeeds {
    typealias Field = FITWriter.Field

    static func all() -> [(String, [UInt8])] {
        let triathlon = triathlon()
        // Damaged copies: cut short in a record, and a flipped data byte (file CRC mismatch).
        var flipped = triathlon
        flipped[flipped.count / 2] ^= 0x10
        return [
            ("run.fit", run()), ("pool.fit", pool()), ("triathlon.fit", triathlon),
            ("triathlon-cut.fit", Array(triathlon[..<(triathlon.count * 2 / 3)])), ("triathlon-flipped.fit", flipped),
        ]
    }

    static let start: UInt32 = 1_000_000_000

    static func header(_ writer: inout FITWriter) {
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 42), .uint32(4, start)])
        writer.write(21, [.uint32(253, start), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
    }

    static func record(_ writer: inout FITWriter, _ t: UInt32, distance: Double, cycles: UInt32? = nil) {
        writer.write(
            20,
            [
                .uint32(253, start + t), .sint32(0, 500_000_000 + Int32(t) * 100), .sint32(1, -100_000_000),
                .uint8(3, UInt8(120 + t % 40)), .uint8(4, 80), .scaled(5, distance, scale: 100, size: 4),
                .scaled(73, 3.1, scale: 1000, size: 4), .uint16(7, 200), .uint32(19, cycles),
            ])
    }

    static func session(
        _ writer: inout FITWriter, sport: UInt8, sub: UInt8 = 0, from: UInt32, to: UInt32, index: UInt16
    ) {
        writer.write(
            19,
            [
                .uint32(253, start + to), .uint32(2, start + from), .scaled(7, Double(to - from), scale: 1000, size: 4),
                .enumeration(25, sport),
            ])
        writer.write(
            18,
            [
                .uint16(254, index), .uint32(253, start + to), .uint32(2, start + from), .enumeration(5, sport),
                .enumeration(6, sub), .scaled(7, Double(to - from), scale: 1000, size: 4),
                .scaled(8, Double(to - from), scale: 1000, size: 4),
                .scaled(44, sub == 17 ? 25 : nil, scale: 100, size: 2),
            ])
    }

    static func run() -> [UInt8] {
        var writer = FITWriter()
        header(&writer)
        for t in UInt32(0)..<40 {
            if t == 10 {
                writer.write(21, [.uint32(253, start + t), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 1)])
            }
            if t == 15 {
                writer.write(21, [.uint32(253, start + t), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 1)])
            }
            record(&writer, t, distance: t == 20 ? 1 : Double(t) * 3)
        }
        session(&writer, sport: 1, from: 0, to: 40, index: 0)
        writer.write(34, [.uint32(253, start + 40), .uint16(1, 1)])
        return writer.finish()
    }

    static func pool() -> [UInt8] {
        var writer = FITWriter()
        header(&writer)
        // A swim strap's hr messages: the first with its time reference, then packed 12-bit event times.
        writer.write(
            132,
            [
                .uint32(253, start), .uint16(0, 16384), Field(number: 6, baseType: 0x02, bytes: [100]),
                Field(number: 9, baseType: 0x86, bytes: [0, 4, 0, 0]),
            ])
        writer.write(
            132,
            [
                Field(number: 6, baseType: 0x02, bytes: [101, 102, 103, 104, 105, 106, 107, 108]),
                Field(number: 10, baseType: 0x0D, bytes: [0, 8, 0, 0, 12, 0, 0, 16, 0, 0, 20, 0]),
            ])
        let kinds: [(UInt8, UInt8?, UInt16?)] = [
            (1, 0, 18), (1, 0, 19), (0, nil, nil), (1, 4, 0), (1, 2, 12), (1, 0, 17),
        ]
        var t: UInt32 = 0
        for (index, (type, stroke, strokes)) in kinds.enumerated() {
            writer.write(
                101,
                [
                    .uint16(254, UInt16(index)), .uint32(253, start + t + 25), .uint32(2, start + t),
                    .scaled(3, 25.4, scale: 1000, size: 4), .uint16(5, strokes), .enumeration(7, stroke),
                    .enumeration(12, type),
                ])
            record(&writer, t + 25, distance: Double(index + 1) * 25)
            t += 25
        }
        session(&writer, sport: 5, sub: 17, from: 0, to: t, index: 0)
        return writer.finish()
    }

    static func triathlon() -> [UInt8] {
        var writer = FITWriter()
        header(&writer)
        let legs: [(UInt8, UInt8)] = [(5, 18), (3, 0), (2, 0), (3, 0), (1, 0)]
        var distance = 0.0
        for (index, (sport, sub)) in legs.enumerated() {
            let from = UInt32(index) * 20
            for t in from..<(from + 20) {
                distance += sport == 2 ? 9 : sport == 5 ? 1 : 3
                record(&writer, t, distance: distance, cycles: sport == 5 ? t * 2 : nil)
            }
            session(&writer, sport: sport, sub: sub, from: from, to: from + 20, index: UInt16(index))
        }
        return writer.finish()
    }
}
