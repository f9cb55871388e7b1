// libFuzzer target for the Apple Health export reader (`scripts/fuzz.sh RUNS AppleHealth` builds it with
// the sources of WorkoutModel, WorkoutEngine and WorkoutFormats, WorkoutImport's session replay and the
// reader's files as one module, -sanitize=fuzzer,address).
//
// Each input is an export XML. Properties:
// - the pull parser gives the same events, the same error (what and where) and the same count of forbidden
//   characters whether it reads the input in one go or in pieces of 1 to 17 bytes cut by the input
//   itself, and whether a start tag's attributes are made text or only checked (`skipsAttributes`);
// - the reader's two passes and its scripts (`HealthExportReading.read`) never trap, with the input also
//   read as a GPX route; each workout's script is replayed through a live session (up to 600 steps; a
//   longer replay only repeats the engine's hot path) and finished;
// - the second pass gives the same outcomes (each workout's script or refusal, and where) whether it reads
//   each workout's element by itself, from the offsets the first pass found (as from a file), or the whole
//   input again;
// - read as a GPX route, the input gives the same points (bit for bit) or the same error (what, line, column)
//   with the scan of plain points (`HealthGPX.scanPoint`) and event by event, read whole or in pieces.
// - the first pass's records (each handed over, bit for bit, with its source), counts and recoveries, or its
//   error, are the same with the scan of plain records (`HealthExportScanner.scanRecord`) and event by event,
//   read whole or in pieces;
// - read from a file, the first pass in two halves at once (`HealthExportSplit`) gives the same outcomes, counts
//   or error as one parse.
// Any crash, trap, sanitizer report, time-out or memory blow-up is a finding; thrown errors are the
// expected outcome.
import Foundation

/// WorkoutImport's protocol of format errors (declared in FileImport.swift, which needs the store).
protocol FormatError: Error, Sendable, CustomStringConvertible {}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppleHealth(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = events(bytes, pieces: nil, skipping: false)
    let pieces = events(bytes, pieces: bytes, skipping: false)
    guard whole == pieces else {
        fatalError("reading in pieces changed the parse: \(whole.debugDescription) vs \(pieces.debugDescription)")
    }
    let skipped = events(bytes, pieces: nil, skipping: true)
    guard skipped == whole.withoutAttributes else {
        fatalError("skipping attributes changed the parse: \(whole.debugDescription) vs \(skipped.debugDescription)")
    }
    let route = gpx(bytes, pieces: nil, scans: false)
    for (pieces, scans) in [(false, true), (true, false), (true, true)] {
        let other = gpx(bytes, pieces: pieces ? bytes : nil, scans: scans)
        guard other == route else {
            let how = "\(pieces ? "in pieces" : "whole") \(scans ? "with" : "without") the scan"
            fatalError("GPX points read \(how): \(other) vs \(route)")
        }
    }
    let records = firstPass(bytes, pieces: nil, scans: false)
    for (pieces, scans) in [(false, true), (true, false), (true, true)] {
        let other = firstPass(bytes, pieces: pieces ? bytes : nil, scans: scans)
        guard other == records else {
            let how = "\(pieces ? "in pieces" : "whole") \(scans ? "with" : "without") the scan"
            fatalError("the first pass's records read \(how): \(other) vs \(records)")
        }
    }
    var scripts: [SessionScript] = []
    var parted: [String] = []
    let limits = ImportOptions(idSalt: size % 3 == 0 ? 7 : 0, longestSpan: 86_400 * 7)
    try? HealthExportReading.read(
        entry: "export.xml", xml: { reader(bytes, pieces: nil) },
        xmlPart: { from, to in
            let lower = min(max(0, from), bytes.count)
            return reader(Array(bytes[lower..<min(max(lower, to), bytes.count)]), pieces: nil)
        },
        routes: [{ reader(bytes, pieces: nil) }], limits: limits
    ) { outcome in
        if case .success(let workout) = outcome { scripts.append(workout.script) }
        parted.append(summary(outcome))
    }
    var again: [String] = []
    try? HealthExportReading.read(
        entry: "export.xml", xml: { reader(bytes, pieces: nil) }, routes: [{ reader(bytes, pieces: nil) }],
        limits: limits
    ) { outcome in again.append(summary(outcome)) }
    guard parted == again else {
        fatalError("reading each workout by itself changed the outcomes: \(parted) vs \(again)")
    }
    // Pass 1 in two halves (the input as a file, its second half parsed on another thread from a cut near its
    // middle): the same outcomes, counts or error as one parse.
    // Small limits (1 to 3 sources, 2 records held before the temporary file) reach the second half's renumbering,
    // its sources beyond the limit and the logs' files.
    let sourceLimit = 1 + Int(bytes.first ?? 0) % 3
    let oneParse = fileReading(bytes, limits: limits, sourceLimit: sourceLimit, split: false)
    let halves = fileReading(bytes, limits: limits, sourceLimit: sourceLimit, split: true)
    guard oneParse == halves else {
        fatalError("reading in two halves changed the reading: \(halves) vs \(oneParse)")
    }
    for script in scripts where script.steps.count <= 600 {
        let clock = ManualClock(script.start)
        guard
            let session = try? WorkoutSession(
                configuration: script.configuration, clock: clock, options: script.builderOptions)
        else { continue }
        _ = try? script.replay(into: session, clock: clock)
        _ = try? session.builder.finishWorkout()
    }
    return 0
}

/// Each workout's outcome, the counts and the error of reading `bytes` from a temporary file, with pass 1 in two
/// halves at once when `split` (any size: `HealthExportSplit` cuts where it finds a cut).
func fileReading(_ bytes: [UInt8], limits: ImportOptions, sourceLimit: Int, split: Bool) -> [String] {
    var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("fuzz-health-XXXXXX").utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
    guard descriptor >= 0 else { return ["no temporary file"] }
    defer { close(descriptor) }
    template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == bytes.count else { return ["not written"] }
    var outcomes: [String] = []
    do {
        try HealthExportReading.read(
            entry: "export.xml", xml: { HealthExportReading.part(descriptor: descriptor, from: 0, to: .max) },
            xmlPart: { from, to in HealthExportReading.part(descriptor: descriptor, from: from, to: to) },
            splittable: split ? HealthSplittableFile(descriptor: descriptor, size: bytes.count, minimumSize: 0) : nil,
            routes: [], limits: limits, spoolLimit: 2, sourceLimit: sourceLimit,
            each: { outcome in
                // Which samples each workout got too: their sources and values' bits.
                var samples = ""
                if case .success(let workout) = outcome {
                    for step in workout.script.steps {
                        guard case .samples(let batch) = step.step else { continue }
                        for sample in batch { samples += " \(sample.source.name):\(sample.quantity.value.bitPattern)" }
                    }
                }
                outcomes.append(summary(outcome) + samples)
            }, counted: { outcomes.append("\($0)") })
    } catch {
        outcomes.append("\(error)")
    }
    return outcomes
}

/// What the first pass makes of `bytes` as text: each record handed over (its values' bits and source), the counts
/// and recoveries; or its error.
func firstPass(_ bytes: [UInt8], pieces: [UInt8]?, scans: Bool) -> String {
    let scanner = HealthExportScanner(pass: .workoutsAndRecords)
    var text = ""
    scanner.onRecord = { record, source in
        text += "\(record.type.rawValue) \(record.value.bitPattern) \(record.start.timeIntervalSinceReferenceDate.bitPattern) "
            + "\(record.end.timeIntervalSinceReferenceDate.bitPattern) \(source)\n"
    }
    scanner.onWorkout = { workout in text += "workout \(workout.start) \(workout.end) \(workout.location)\n" }
    do {
        let forbidden = try HealthExportReading.scan(
            entry: "export.xml", { reader(bytes, pieces: pieces) }, scanner, scansRecords: scans)
        let recoveries = scanner.recoveries.map { "\($0.value.bitPattern) \($0.date) \($0.source) \($0.metadata.sorted { $0.key < $1.key })" }
        return text + "\(forbidden) \(scanner.records) \(scanner.unreadableRecords) \(scanner.sawExport) \(recoveries)"
    } catch {
        return text + "\(error)"
    }
}

/// A workout's outcome as text: its script's window, steps, metadata and line, or its refusal.
func summary(_ outcome: Result<HealthScriptedWorkout, HealthImportError>) -> String {
    switch outcome {
    case .success(let workout):
        let script = workout.script
        return "\(script.start) \(script.end) \(script.steps.count) \(script.sampleCount) \(script.routePointCount) "
            + "\(script.metadata.count) line \(workout.details.line)"
    case .failure(let error):
        return error.description
    }
}

/// The GPX route points of `bytes` (each value's bits), or the error, read with or without the scan of plain points.
func gpx(_ bytes: [UInt8], pieces: [UInt8]?, scans: Bool) -> Result<[[UInt64?]], XMLStreamError> {
    Result { () throws(XMLStreamError) in
        try HealthGPX.points(read: reader(bytes, pieces: pieces), scans: scans).map { point in
            [
                point.date.timeIntervalSinceReferenceDate.bitPattern, point.latitude.bitPattern,
                point.longitude.bitPattern, point.altitude?.bitPattern, point.speed?.bitPattern,
                point.course?.bitPattern, point.horizontalAccuracy?.bitPattern,
            ]
        }
    }
}

/// A parse's outcome: its events, its error and its forbidden characters.
struct Parse: Equatable, CustomDebugStringConvertible {
    var events: [XMLEvent] = []
    var error: XMLStreamError?
    var forbidden = 0

    /// The same parse with every start tag's attributes dropped.
    var withoutAttributes: Parse {
        var copy = self
        copy.events = events.map { event in
            if case .start(let name, _) = event { return .start(name: name, attributes: []) }
            return event
        }
        return copy
    }

    var debugDescription: String { "\(events.count) events, error \(error.map(\.description) ?? "none")" }
}

/// Reads `bytes`, in pieces of 1 to 17 bytes whose sizes come from `pieces` when given.
func reader(_ bytes: [UInt8], pieces: [UInt8]?) -> XMLPullParser.Read {
    var position = 0
    var step = 0
    return { target in
        var count = min(target.count, bytes.count - position)
        if let pieces, !pieces.isEmpty {
            count = min(count, 1 + Int(pieces[step % pieces.count] % 17))
            step += 1
        }
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
        }
        position += count
        return count
    }
}

/// The parse of `bytes` (a fragment with several top-level elements allowed, as the reader reads).
func events(_ bytes: [UInt8], pieces: [UInt8]?, skipping: Bool) -> Parse {
    let parser = XMLPullParser(chunkSize: 4096, allowsFragments: true, read: reader(bytes, pieces: pieces))
    if skipping { parser.skipsAttributes = { _, _ in true } }
    var parse = Parse()
    do {
        while let event = try parser.next() {
            parse.events.append(event)
            guard parse.events.count < 100_000 else { break }
        }
    } catch {
        parse.error = error
    }
    parse.forbidden = parser.forbiddenCharacters
    return parse
}
