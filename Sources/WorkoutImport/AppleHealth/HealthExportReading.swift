import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

/// Why an Apple Health export (or one workout of it) cannot be imported.
public enum HealthImportError: FormatError, Hashable {
    /// The XML is not well-formed: what and where (the entry, line and column).
    case notWellFormed(entry: String, XMLStreamError)
    /// A zip that is not one, is cut short or holds something refused (the entry and why).
    case archive(entry: String?, detail: String)
    /// Neither `export.xml` nor any other export XML was found.
    case noExport(detail: String)
    /// One workout is damaged (an impossible value, a date that cannot be read): refused whole.
    case damagedWorkout(entry: String, line: Int, column: Int, start: Date?, detail: String)
    /// The temporary file holding the records between the passes cannot be written or read (disk full).
    case temporaryStorage(detail: String)
    /// One workout's records or route points could not be read back from the temporary file in pass 2: the workout
    /// is refused whole (nothing of it is saved), where it is in the export and why.
    case spoolUnreadable(entry: String, line: Int, column: Int, start: Date?, detail: String)
    /// The export file changed after pass 1 read it (another export saved over it, an edit): what pass 1 learnt no
    /// longer belongs to what pass 2 would read. Nothing more is read; the import is to be run again.
    case exportChanged(entry: String, detail: String)

    public var description: String {
        switch self {
        case .notWellFormed(let entry, let error):
            "\(entry) is not well-formed XML at \(error); the export is damaged (export it again from the Health app)"
        case .archive(let entry, let detail):
            (entry.map { "zip entry \($0): " } ?? "") + detail
        case .noExport(let detail):
            "no Apple Health export here: \(detail); give export.zip, its unzipped folder or export.xml"
        case .damagedWorkout(let entry, let line, let column, let start, let detail):
            "the workout at \(entry) line \(line), column \(column)"
                + (start.map { " (started \($0))" } ?? "") + " is refused: \(detail)"
        case .temporaryStorage(let detail):
            "nothing more could be imported: \(detail)"
        case .spoolUnreadable(let entry, let line, let column, let start, let detail):
            "the workout at \(entry) line \(line), column \(column)"
                + (start.map { " (started \($0))" } ?? "")
                + " is refused, nothing of it saved: \(detail); free space in the temporary folder (or set TMPDIR to "
                + "another) and import the export again (the workouts already imported are recognised and kept)"
        case .exportChanged(let entry, let detail):
            "\(entry) changed while it was read (\(detail)); nothing after that was imported: wait until the export "
                + "is written whole, then import it again (the workouts already imported are recognised and kept)"
        }
    }
}

/// What an Apple Health import left out, counted (the workouts' own outcomes are separate).
public struct HealthExportCounts: Sendable, Hashable, Codable {
    public var workouts = 0
    public var damagedWorkouts = 0
    /// Top-level `Record`s, and of them those inside a workout's window of a type the engine knows.
    public var records = 0
    public var recordsInWorkouts = 0
    /// Records outside every workout's window (or of a type the engine does not record): left out.
    public var recordsLeftOut = 0
    /// Records inside a window dropped for a better-ranked source of the same type.
    public var recordsOfOtherSources = 0
    /// Records of a source first named after `HealthExportReading.sourceLimit` others: left out (and counted in
    /// `recordsLeftOut` too).
    public var recordsOfExcessSources = 0
    public var unreadableRecords = 0
    public var correlations = 0
    /// Top-level elements that are neither records nor workouts (ActivitySummary, ClinicalRecord …).
    public var otherElements = 0
    /// GPX files read, and route points outside every workout.
    public var routeFiles = 0
    public var routePointsLeftOut = 0
    /// Heart-rate recovery records attached to a workout, and those following none.
    public var recoveriesAttached = 0
    public var recoveriesLeftOut = 0
    /// XML 1.0 forbidden control characters read as spaces.
    public var forbiddenCharacters = 0
    /// Workouts refused because their records or route points could not be read back from the temporary file
    /// (`HealthImportError.spoolUnreadable`).
    public var workoutsNotReadBack = 0
}

/// What the Apple Health reader knows of one imported workout.
public struct HealthImportDetails: Sendable {
    /// The export's counts (the same for every workout of one export).
    public var counts: HealthExportCounts
    /// Where the workout starts in the export.
    public var entry: String
    public var line: Int
    public var comparison: [ComparisonRow]?
}


/// The workouts' windows, found by the instants they hold: buckets of UTC hours on a few levels (1 h,
/// 96 h, 96² h …), each window in the finest level where it touches at most 97 buckets. A record's owners
/// are found in the one bucket per level that holds its start: a handful of lookups per record, whatever
/// the export's size, and a years-long window takes a few buckets, not one per hour (nor a check per
/// record, which made 20 000 long windows and 200 000 records billions of checks).
struct HealthWindowIndex {
    /// Per level, per bucket, the windows (positions in `windows`) touching it.
    private var levels: [[Int: [Int]]] = []
    private let windows: [(start: Date, end: Date, owner: Int)]
    /// A window touches at most `span + 1` buckets of its level.
    static let span = 96

    init(_ windows: [(Date, Date, Int)]) {
        self.windows = windows.map { (start: $0.0, end: $0.1, owner: $0.2) }
        for (position, window) in self.windows.enumerated() {
            let first = Self.hour(window.start)
            let last = Self.hour(window.end)
            guard last >= first else { continue }
            var level = 0
            while Self.bucket(last, level) - Self.bucket(first, level) > Self.span { level += 1 }
            while levels.count <= level { levels.append([:]) }
            for bucket in Self.bucket(first, level)...Self.bucket(last, level) {
                levels[level][bucket, default: []].append(position)
            }
        }
    }

    /// The UTC hour holding `date`, counted from 1970 (negative before it).
    static func hour(_ date: Date) -> Int {
        let hours = (date.timeIntervalSince1970 / 3600).rounded(.down)
        guard !hours.isNaN else { return 0 }
        // Dates no export holds (beyond ±10⁶ years) are clamped rather than trapping the conversion.
        return Int(max(-1e10, min(1e10, hours)))
    }

    /// The bucket of `hour` on `level` (buckets of 96^level hours, floored for hours before 1970).
    static func bucket(_ hour: Int, _ level: Int) -> Int {
        var width = 1
        for _ in 0..<level { width *= span }
        return hour >= 0 ? hour / width : -((-hour + width - 1) / width)
    }

    /// The owners of the windows holding `from...to`, in the order the windows were given.
    func containing(_ from: Date, _ to: Date) -> [Int] {
        var found: [Int] = []
        let hour = Self.hour(from)
        for level in levels.indices {
            for position in levels[level][Self.bucket(hour, level)] ?? [] {
                let window = windows[position]
                if window.start <= from, window.end >= to { found.append(position) }
            }
        }
        return found.count > 1 ? found.sorted().map { windows[$0].owner } : found.map { windows[$0].owner }
    }
}

/// One workout of an export, ready for the live path.
struct HealthScriptedWorkout: Sendable {
    var script: SessionScript
    var anomalies: [ImportAnomaly]
    var details: HealthImportDetails
    /// The ids the workout had before `idSalt` salted them.
    var earlierIdentifiers: [IdentifierSource]
}

/// The format's reading, apart from files: two passes over the export XML (from any source of bytes),
/// the routes, and one script per workout. `AppleHealthReader` gives it files; the fuzz target bytes.
enum HealthExportReading {
    /// A reader of the export XML (or of one GPX file) from its start; nil when it cannot be opened.
    typealias Open = () -> XMLPullParser.Read?

    /// A reader of the export XML's bytes `from..<to` (one workout's element, read again by itself); nil when it
    /// cannot be opened.
    typealias OpenPart = (_ from: Int, _ to: Int) -> XMLPullParser.Read?

    /// A reader of the bytes `from..<to` of the open file `descriptor` (POSIX reads at their offsets; `to` may be
    /// `Int.max`: to the end).
    static func part(descriptor: Int32, from: Int, to: Int) -> XMLPullParser.Read {
        var next = from
        return { buffer in
            let wanted = min(buffer.count, max(0, to - next))
            guard wanted > 0 else { return 0 }
            while true {
                let got = pread(descriptor, buffer.baseAddress, wanted, off_t(next))
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                next += got
                return got
            }
        }
    }

    /// One pass over the XML with `scanner` (or over a part of it, from `startingAt`); the forbidden characters
    /// read as spaces. A plain top-level record is read straight from the parser's buffer
    /// (`HealthExportScanner.scanRecord`), any other element event by event; with `scansRecords` false every one
    /// is read by events (tests compare the two).
    static func scan(
        entry: String, _ open: Open, _ scanner: HealthExportScanner, startingAt: XMLPosition? = nil,
        chunkSize: Int = 1 << 16, scansRecords: Bool = true
    ) throws(HealthImportError) -> Int {
        try scan(entry: entry, open, scanner, startingAt: startingAt, chunkSize: chunkSize, scansRecords: scansRecords)
            .forbidden
    }

    /// `scan(entry:_:_:startingAt:chunkSize:scansRecords:)`, also stopping at the offset `stopAt` when the parser is
    /// there between two children of the root `HealthData` (`stopped`: where; elsewhere the scan goes on past it),
    /// with `inside` the elements open where the part begins, and `cancelled` asked before each element (true: the
    /// scan ends there, as if at the end).
    static func scan(
        entry: String, _ open: Open, _ scanner: HealthExportScanner, startingAt: XMLPosition? = nil,
        inside: [String] = [], stopAt: Int? = nil, cancelled: (() -> Bool)? = nil, chunkSize: Int = 1 << 16,
        scansRecords: Bool = true
    ) throws(HealthImportError) -> (forbidden: Int, stopped: XMLPosition?) {
        guard let read = open() else {
            throw .notWellFormed(
                entry: entry,
                XMLStreamError(
                    detail: "the input cannot be opened", position: startingAt ?? XMLPosition(offset: 0, line: 1, column: 1)))
        }
        let parser = XMLPullParser(
            chunkSize: chunkSize, allowsFragments: true, startingAt: startingAt, inside: inside, read: read)
        parser.skipsAttributes = { [unowned scanner] element, parent in
            scanner.skipsAttributes(of: element, in: parent)
        }
        parser.skipsAttribute = { [unowned scanner] element, attribute in
            scanner.skipsAttribute(attribute, of: element)
        }
        let scanRecord = scanner.scanRecord
        do {
            while true {
                if let stopAt, parser.position.offset == stopAt, parser.givenAll,
                    parser.openElements == ["HealthData"]
                {
                    return (parser.forbiddenCharacters, parser.position)
                }
                if let cancelled, cancelled() { break }
                if scansRecords, scanner.readsRecordsHere, let record = parser.scanElement(scanRecord) {
                    scanner.take(record)
                    continue
                }
                guard let event = try parser.next() else { break }
                scanner.tagStart = parser.tagStart
                scanner.handle(event, at: parser.position)
            }
        } catch {
            throw .notWellFormed(entry: entry, error)
        }
        return (parser.forbiddenCharacters, nil)
    }

    /// Reads the export: each workout's script or why it is refused, in document order; `counted` is given
    /// the export's counts once all are handed over (also when no workout was taken). `spoolLimit`: the records
    /// held in memory before they go to a temporary file (`HealthRecordSpool`).
    ///
    /// Two passes over the XML, so that memory does not grow with the export (records come grouped by type, not
    /// in time order, and before or after the workouts: no workout is complete until the whole file is read):
    /// 1. the workouts' windows, sources and refusals (a few dozen bytes each; the workouts are dropped), and
    ///    every quantity record of a known type, logged in document order (`HealthRecordLog`: 32 bytes each, in
    ///    memory up to 8 MiB, then in a temporary file); the windows known, the log is read back once: each
    ///    record inside a taken workout's window is spooled for that workout (`HealthRecordSpool`, the same
    ///    bounds), and per workout, type and source counted, which chooses each workout's source per type
    ///    before any workout is given;
    /// 2. the workouts again, each handed over (with its spooled records, recovery and route) as its
    ///    element ends and dropped once `each` returns.
    /// Every count is known before the first workout is handed over.
    ///
    /// With `splittable` (the same file, open), pass 1 reads a large file's second half on another thread meanwhile
    /// (`HealthExportSplit`); the result is the same.
    ///
    /// With `xmlPart` (a file), pass 2 reads each workout's element by itself, where pass 1 found it, instead of the
    /// whole XML again: the records, the bulk of an export, are read once. `changed` (a file) says what changed in
    /// the file since pass 1 began (nil: nothing); it is asked before pass 2 and before each workout is read again,
    /// and a change ends the read with `HealthImportError.exportChanged`. `temporaryFolder`: where the temporary
    /// files go (`TMPDIR`'s by default).
    ///
    /// A workout whose records or route points cannot be read back from the temporary file in pass 2 is refused
    /// whole (`HealthImportError.spoolUnreadable`, counted in `HealthExportCounts.workoutsNotReadBack`), as is every
    /// later one (the file failed): none is handed over with some of its records missing.
    static func read(
        entry: String, xml: Open, xmlPart: OpenPart? = nil, splittable: HealthSplittableFile? = nil,
        changed: (() -> String?)? = nil, routes: [Open],
        limits: ImportOptions = ImportOptions(), spoolLimit: Int = HealthRecordSpool.defaultLimit,
        sourceLimit: Int = sourceLimit, temporaryFolder: String = NSTemporaryDirectory(),
        each: (Result<HealthScriptedWorkout, HealthImportError>) -> Void,
        counted: (HealthExportCounts) -> Void = { _ in }
    ) throws(HealthImportError) {
        // Pass 1: the workouts' windows (the workouts themselves are read again in pass 2) and the records, logged
        // until the windows are known (an export puts its records before its workouts, but nothing promises it).
        let whole = HealthPassOnePart(
            limits: limits, spoolLimit: spoolLimit, sourceLimit: sourceLimit, folder: temporaryFolder)
        let first = whole.scanner
        // A large file: its second half read by another thread meanwhile (`HealthExportSplit`), joined after the
        // first in document order.
        let split = splittable.flatMap { file in
            HealthExportSplit.start(
                file, entry: entry, limits: limits, spoolLimit: spoolLimit, sourceLimit: sourceLimit,
                folder: temporaryFolder)
        }
        // Its thread joined however the reading ends (a throw included), before the caller closes the file.
        defer { split?.cancel() }
        let scanned = try scan(entry: entry, xml, first, stopAt: split?.cut)
        var forbidden = scanned.forbidden
        var secondHalf: (part: HealthPassOnePart, numbers: [Int32?])?
        if let split {
            if let stop = scanned.stopped {
                if let part = try split.wait() {
                    secondHalf = (part, whole.numbers(for: part.sources, sourceLimit: sourceLimit))
                    forbidden += part.forbidden
                } else {
                    // The second half cannot be joined: its results freed, read on from the cut here, as one parse.
                    split.cancel()
                    let rest = { part(descriptor: split.file.descriptor, from: stop.offset, to: Int.max) }
                    forbidden += try scan(entry: entry, rest, first, startingAt: stop, inside: ["HealthData"]).forbidden
                }
            } else {
                // Not stopped at the cut: the second half's reading, no longer wanted, ends now.
                split.cancel()
            }
        }
        // The second half's workouts after the first's: the numbers records and recoveries are matched to go on.
        let workouts = whole.windows + (secondHalf?.part.windows ?? [])
        var excessSourceRecords = whole.excessSourceRecords + (secondHalf?.part.excessSourceRecords ?? 0)
        let sources = whole.sources
        let log = whole.log
        if let failure = log.failure ?? secondHalf?.part.log.failure { throw .temporaryStorage(detail: failure) }
        guard first.sawExport else {
            throw .noExport(detail: "\(entry) holds no HealthData, Workout or Record")
        }
        var counts = HealthExportCounts()
        counts.forbiddenCharacters = forbidden
        let secondScanner = secondHalf?.part.scanner
        counts.records = first.records + (secondScanner?.records ?? 0)
        counts.correlations = first.correlations + (secondScanner?.correlations ?? 0)
        counts.otherElements = first.otherElements + (secondScanner?.otherElements ?? 0)
        counts.workouts = workouts.count
        counts.damagedWorkouts = workouts.filter { $0.refusal != nil }.count
        let order = workouts.indices.filter { workouts[$0].refusal == nil }.sorted { workouts[$0].start < workouts[$1].start }
        let windows = HealthWindowIndex(order.map { (workouts[$0].start, workouts[$0].end, $0) })
        func containing(_ from: Date, _ to: Date) -> [Int] { windows.containing(from, to) }
        // The logged records inside a workout's window, spooled per workout; per workout, type and source how many
        // (and which source came first, for a tie).
        let spool = HealthRecordSpool(limit: spoolLimit, folder: temporaryFolder)
        var perSource: [HealthSourceKey: (count: Int, first: Int)] = [:]
        var inWindows = 0
        func match(_ record: HealthRecord) {
            let owners = containing(record.start, record.end)
            guard !owners.isEmpty else { return }
            inWindows += 1
            for owner in owners {
                spool.append(record, to: owner)
                let key = HealthSourceKey(owner: owner, type: record.type.index, source: record.source)
                let sequence = perSource.count
                perSource[key, default: (0, sequence)].count += 1
            }
        }
        log.forEach(match)
        if let (part, numbers) = secondHalf {
            // The second part's records after the first's, their sources numbered as the first part's.
            part.log.forEach { record in
                guard record.source >= 0, Int(record.source) < numbers.count, let number = numbers[Int(record.source)]
                else {
                    excessSourceRecords += 1
                    return
                }
                var record = record
                record.source = number
                match(record)
            }
        }
        if let failure = log.failure ?? secondHalf?.part.log.failure ?? spool.failure {
            throw .temporaryStorage(detail: failure)
        }
        log.close()
        secondHalf?.part.log.close()
        counts.recordsOfExcessSources = excessSourceRecords
        counts.unreadableRecords = first.unreadableRecords + (secondScanner?.unreadableRecords ?? 0)
        counts.recordsInWorkouts = inWindows
        counts.recordsLeftOut = counts.records - inWindows
        // The best-ranked source per workout and type: the fewest rank, then the most records, then the first seen.
        var best: [HealthSourceKey: (rank: Int, count: Int, first: Int, source: Int32)] = [:]
        for (key, tally) in perSource {
            let rank = HealthSourcePreference.rank(
                sources[Int(key.source)], device: nil, workoutSource: workouts[key.owner].sourceName)
            let slot = HealthSourceKey(owner: key.owner, type: key.type, source: -1)
            if let current = best[slot],
                (current.rank, -current.count, current.first) <= (rank, -tally.count, tally.first)
            {
                continue
            }
            best[slot] = (rank, tally.count, tally.first, key.source)
        }
        for (key, tally) in perSource
        where best[HealthSourceKey(owner: key.owner, type: key.type, source: -1)]?.source != key.source {
            counts.recordsOfOtherSources += tally.count
        }
        perSource = [:]
        // Heart-rate recovery records: to the workout that ended last before them, within an hour.
        // (The taken workouts by end, then start order: a binary search per recovery, not a scan of all.)
        var recoveries: [Int: HealthRecoveryRecord] = [:]
        let byEnd = order.indices.sorted { (workouts[order[$0]].end, $0) < (workouts[order[$1]].end, $1) }.map { order[$0] }
        /// The first position in `byEnd` whose end is not before `date` (with `orEqual`, not before or at it).
        func firstEnding(after date: Date, orEqual: Bool) -> Int {
            var low = 0
            var high = byEnd.count
            while low < high {
                let middle = (low + high) / 2
                let end = workouts[byEnd[middle]].end
                if end < date || (orEqual && end == date) { low = middle + 1 } else { high = middle }
            }
            return low
        }
        for recovery in first.recoveries + (secondScanner?.recoveries ?? []) {
            var owner: Int?
            let after = firstEnding(after: recovery.date, orEqual: true)
            if after > 0, recovery.date.timeIntervalSince(workouts[byEnd[after - 1]].end) <= 3600 {
                // Of the workouts ending at that instant, the first in start order.
                owner = byEnd[firstEnding(after: workouts[byEnd[after - 1]].end, orEqual: false)]
            }
            if let owner {
                recoveries[owner] = recovery
                counts.recoveriesAttached += 1
            } else {
                counts.recoveriesLeftOut += 1
            }
        }
        // Routes: every GPX file read once, each point spooled for the workouts whose window holds its time (the
        // files in their order, each file's points in time order), where pass 2 takes them.
        let routePoints = HealthRouteSpool(limit: max(1, spoolLimit / 2), folder: temporaryFolder)
        for open in routes {
            guard let read = open(), let points = try? HealthGPX.points(read: read), !points.isEmpty else { continue }
            counts.routeFiles += 1
            for point in points {
                let owners = containing(point.date, point.date)
                if owners.isEmpty { counts.routePointsLeftOut += 1 }
                for owner in owners { routePoints.append(point, to: owner) }
            }
        }
        if let failure = routePoints.failure { throw .temporaryStorage(detail: failure) }
        // Pass 2 reads the file again: it must be the one pass 1 read (another export saved over it would give
        // workouts that the windows, records and routes gathered above do not belong to).
        func checkUnchanged() throws(HealthImportError) {
            if let change = changed?() { throw .exportChanged(entry: entry, detail: change) }
        }
        try checkUnchanged()
        // Pass 2: each workout, handed over as its element ends.
        let second = HealthExportScanner(pass: .workouts)
        var index = 0
        let finalCounts = counts
        try withoutActuallyEscaping(each) { each throws(HealthImportError) in
            // Cleared however the block ends: a closure still holding `each` after it is a runtime trap, and the
            // scans below throw (a part that cannot be read, a file cut short between the passes).
            defer { second.onWorkout = nil }
            second.onWorkout = { workout in
                defer { index += 1 }
                let location = workout.location
                guard index < workouts.count, workouts[index].start == workout.start,
                    workouts[index].end == workout.end, workouts[index].sourceName == workout.sourceName
                else {
                    each(
                        .failure(
                            .damagedWorkout(
                                entry: entry, line: location.line, column: location.column, start: nil,
                                detail: "the export changed while it was read; import it again")))
                    return
                }
                if let refusal = workouts[index].refusal {
                    each(
                        .failure(
                            .damagedWorkout(
                                entry: entry, line: location.line, column: location.column,
                                start: workout.start == .distantPast ? nil : workout.start, detail: refusal)))
                    return
                }
                var route: [RoutePoint] = workout.routes.flatMap(\.locations)
                route += routePoints.take(index)
                route.sort { $0.date < $1.date }
                let records = spool.take(index)
                // What could not be read back is missing from both: the workout is refused whole, not saved with holes.
                if let failure = spool.failure ?? routePoints.failure {
                    counts.workoutsNotReadBack += 1
                    each(
                        .failure(
                            .spoolUnreadable(
                                entry: entry, line: location.line, column: location.column,
                                start: workout.start == .distantPast ? nil : workout.start, detail: failure)))
                    return
                }
                var kept: [KeptRecord] = []
                for record in records {
                    let key = HealthSourceKey(owner: index, type: record.type.index, source: -1)
                    guard best[key]?.source == record.source else { continue }
                    let name = sources[Int(record.source)]
                    kept.append(
                        KeptRecord(
                            record: record, sourceRank: best[key]?.rank ?? 3, sourceName: name))
                }
                var builder = HealthScriptBuilder(workout: workout, records: kept, route: route, recovery: recoveries[index])
                var script = builder.script()
                var earlier: [IdentifierSource] = []
                if limits.idSalt != 0, let seed = script.builderOptions.identifiers.seed {
                    earlier = [script.builderOptions.identifiers]
                    script.builderOptions.identifiers = .seeded(seed ^ limits.idSalt)
                }
                let details = HealthImportDetails(counts: finalCounts, entry: entry, line: location.line, comparison: nil)
                each(
                    .success(
                        HealthScriptedWorkout(
                            script: script, anomalies: builder.anomalies, details: details, earlierIdentifiers: earlier)))
            }
            if let xmlPart, workouts.allSatisfy({ $0.span != nil }) {
                // Each workout's element by itself: parsed from where pass 1 found it, with its positions.
                for (position, window) in workouts.enumerated() {
                    guard let span = window.span else { continue }
                    try checkUnchanged()
                    let length = max(0, span.end - span.start.offset)
                    _ = try scan(
                        entry: entry, { xmlPart(span.start.offset, span.end) }, second, startingAt: span.start,
                        chunkSize: min(1 << 16, length))
                    if index != position + 1 {
                        // Not the workout pass 1 found there: the file changed between the passes.
                        index = position + 1
                        each(
                            .failure(
                                .damagedWorkout(
                                    entry: entry, line: span.start.line, column: span.start.column, start: nil,
                                    detail: "the export changed while it was read; import it again")))
                    }
                }
            } else {
                _ = try scan(entry: entry, xml, second)
            }
        }
        counted(counts)
    }

    /// Distinct source names of records kept, at most (a real export names tens: the watch, the phone, apps).
    static let sourceLimit = 10_000

    /// Why `workout` is refused (damaged, or outside `limits`); nil when it is taken.
    static func refusal(of workout: HealthWorkout, limits: ImportOptions) -> String? {
        if let damage = workout.damage { return damage }
        if let longest = limits.longestSpan, workout.end.timeIntervalSince(workout.start) > longest {
            let hours = longest / 3_600
            let shown = hours == hours.rounded() ? "\(Int(hours))" : String(format: "%.1f", hours)
            return "it runs from \(workout.start) to \(workout.end), longer than the \(shown) hours a workout may "
                + "last here"
        }
        if let latest = limits.latestEnd, workout.end > latest {
            return "it ends at \(workout.end), after \(latest): check the device's clock"
        }
        return nil
    }
}

/// What pass 1 keeps of a workout: its window, source and refusal (pass 2 reads the workout again).
struct HealthWorkoutWindow: Sendable {
    var start: Date
    var end: Date
    var sourceName: String
    var refusal: String?
    /// Where its element is in the XML (`HealthWorkout.span`).
    var span: (start: XMLPosition, end: Int)?
}

/// A workout, a quantity type (its dense index) and a source (-1: the best one's slot).
struct HealthSourceKey: Hashable, Sendable {
    var owner: Int
    var type: Int
    var source: Int32
}

/// One record as `HealthRecordSpool` and `HealthRecordLog` keep it in memory and in their temporary files: 32 bytes
/// of plain values.
private struct HealthStoredRecord: BitwiseCopyable {
    var start: Double
    var end: Double
    var value: Double
    var type: Int32
    var source: Int32
}

/// The records kept for each workout between the records pass and the workout's replay: held in memory up to
/// `limit` records (8 MiB), then written in blocks to an unlinked temporary file, so that memory stays bounded
/// whatever the export's size. `take` gives a workout's records in the order they were appended.
final class HealthRecordSpool {
    private typealias Entry = HealthStoredRecord

    private let spool: HealthSpool<Entry>
    /// Why the temporary file could not be written or read (the import is refused with it).
    var failure: String? { spool.failure }

    /// Records held in memory before they go to the file: 8 MiB.
    static let defaultLimit = 1 << 18

    init(limit: Int = defaultLimit, folder: String = NSTemporaryDirectory()) {
        spool = HealthSpool(limit: limit, what: "records", folder: folder)
    }

    func append(_ record: HealthRecord, to owner: Int) {
        spool.append(
            Entry(
                start: record.start.timeIntervalSinceReferenceDate, end: record.end.timeIntervalSinceReferenceDate,
                value: record.value, type: Int32(record.type.index), source: record.source),
            to: owner)
    }

    /// The records of `owner` (released from the spool).
    func take(_ owner: Int) -> [HealthRecord] {
        let types = QuantityType.allCases
        return spool.take(owner).compactMap { entry in
            guard entry.type >= 0, Int(entry.type) < types.count else { return nil }
            return HealthRecord(
                type: types[Int(entry.type)], value: entry.value,
                start: Date(timeIntervalSinceReferenceDate: entry.start), end: Date(timeIntervalSinceReferenceDate: entry.end),
                source: entry.source)
        }
    }
}

/// The GPX route points kept for each workout between the routes' one read and the workout's replay (as
/// `HealthRecordSpool`: in memory up to `limit` points, then in a temporary file), so that each route file is read
/// once, not again for every workout its time span touches. `take` gives a workout's points in the order they were
/// appended.
final class HealthRouteSpool {
    /// One point as spooled: 56 bytes, a missing value as NaN (the GPX reader keeps finite values only).
    private struct Entry: BitwiseCopyable {
        var date: Double
        var latitude: Double
        var longitude: Double
        var altitude: Double
        var speed: Double
        var course: Double
        var horizontalAccuracy: Double
    }

    private let spool: HealthSpool<Entry>
    /// Why the temporary file could not be written or read (the import is refused with it).
    var failure: String? { spool.failure }

    init(limit: Int, folder: String = NSTemporaryDirectory()) {
        spool = HealthSpool(limit: limit, what: "route points", folder: folder)
    }

    func append(_ point: RoutePoint, to owner: Int) {
        spool.append(
            Entry(
                date: point.date.timeIntervalSinceReferenceDate, latitude: point.latitude, longitude: point.longitude,
                altitude: point.altitude ?? .nan, speed: point.speed ?? .nan, course: point.course ?? .nan,
                horizontalAccuracy: point.horizontalAccuracy ?? .nan),
            to: owner)
    }

    /// The points of `owner` (released from the spool).
    func take(_ owner: Int) -> [RoutePoint] {
        func optional(_ value: Double) -> Double? { value.isNaN ? nil : value }
        return spool.take(owner).map { entry in
            RoutePoint(
                date: Date(timeIntervalSinceReferenceDate: entry.date), latitude: entry.latitude,
                longitude: entry.longitude, altitude: optional(entry.altitude), speed: optional(entry.speed),
                course: optional(entry.course), horizontalAccuracy: optional(entry.horizontalAccuracy))
        }
    }
}

/// Every quantity record of a known type of the export, in document order, from the first pass until the workouts'
/// windows are known: held in memory up to `limit` records (8 MiB at the default), beyond that written in blocks to
/// the end of a temporary file (as `HealthSpool`'s). `forEach` reads them back once, in order, a block at a time, so
/// memory stays bounded whatever the number of records; disk takes 32 bytes a record.
final class HealthRecordLog {
    private typealias Entry = HealthStoredRecord

    private let limit: Int
    private var held: [Entry] = []
    private let file: HealthTemporaryFile
    /// Entries written to the file, from its start.
    private var inFile = 0
    /// Why the temporary file could not be written or read (the import is refused with it).
    var failure: String? { file.failure }

    init(limit: Int = HealthRecordSpool.defaultLimit, folder: String = NSTemporaryDirectory()) {
        self.limit = max(1, limit)
        file = HealthTemporaryFile(what: "records", folder: folder)
    }

    func append(_ record: HealthRecord) {
        guard file.failure == nil else { return }
        held.append(
            Entry(
                start: record.start.timeIntervalSinceReferenceDate, end: record.end.timeIntervalSinceReferenceDate,
                value: record.value, type: Int32(record.type.index), source: record.source))
        if held.count >= limit {
            if held.withUnsafeBytes({ file.append($0) }) != nil { inFile += held.count }
            held.removeAll(keepingCapacity: true)
        }
    }

    /// Gives every record in the order appended (those of an unknown type index, which none is, left out).
    func forEach(_ body: (HealthRecord) -> Void) {
        let types = QuantityType.allCases
        func give(_ entries: UnsafeBufferPointer<Entry>) {
            for entry in entries where entry.type >= 0 && Int(entry.type) < types.count {
                body(
                    HealthRecord(
                        type: types[Int(entry.type)], value: entry.value,
                        start: Date(timeIntervalSinceReferenceDate: entry.start),
                        end: Date(timeIntervalSinceReferenceDate: entry.end), source: entry.source))
            }
        }
        var done = 0
        while done < inFile, file.failure == nil {
            let count = min(limit, inFile - done)
            let block = [Entry](unsafeUninitializedCapacity: count) { buffer, initialized in
                let read = file.read(
                    into: UnsafeMutableRawBufferPointer(buffer), at: Int64(done * MemoryLayout<Entry>.stride))
                initialized = read ? count : 0
            }
            guard block.count == count else { return }
            block.withUnsafeBufferPointer(give)
            done += count
        }
        guard file.failure == nil else { return }
        held.withUnsafeBufferPointer(give)
    }

    /// Lets go of the records and the temporary file.
    func close() {
        held = []
        inFile = 0
        file.close()
    }
}

/// An unlinked temporary file (in `folder`, `TMPDIR` by default; unlinked as soon as it is made, so nothing is left behind even when the
/// import is cut short), made at the first write. Its first failure stays in `failure` and stops every later use.
final class HealthTemporaryFile {
    /// What it holds, for the errors (`records`).
    private let what: String
    /// The folder it is made in.
    private let folder: String
    private var descriptor: Int32 = -1
    /// Bytes written.
    private(set) var size: Int64 = 0
    /// Why the file could not be made, written or read (the import is refused with it).
    private(set) var failure: String?

    init(what: String, folder: String = NSTemporaryDirectory()) {
        self.what = what
        self.folder = folder
    }

    deinit {
        if descriptor >= 0 { Foundation.close(descriptor) }
    }

    func close() {
        if descriptor >= 0 { Foundation.close(descriptor) }
        descriptor = -1
        size = 0
    }

    /// Writes `bytes` at the end of the file: their offset, nil on failure.
    func append(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard failure == nil else { return nil }
        if descriptor < 0 {
            var template = Array((folder as NSString).appendingPathComponent("health-spool-XXXXXX").utf8CString)
            descriptor = template.withUnsafeMutableBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return -1 }
                return mkstemp(base)
            }
            guard descriptor >= 0 else {
                failure = "cannot make the \(what)' temporary file in \(folder) "
                    + "(\(String(cString: strerror(errno)))); set TMPDIR to a folder with free space"
                return nil
            }
            // Unlinked at once: the file goes with the descriptor, also when the import is cut short.
            template.withUnsafeBufferPointer { buffer in
                if let base = buffer.baseAddress { _ = unlink(base) }
            }
        }
        var done = 0
        while done < bytes.count {
            let put = pwrite(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(size) + off_t(done))
            if put < 0, errno == EINTR { continue }
            guard put > 0 else {
                failure = "cannot write the \(what)' temporary file in \(folder) "
                    + "(\(String(cString: strerror(errno)))); free disk space there or set TMPDIR to a folder with free space"
                return nil
            }
            done += put
        }
        let offset = size
        size += Int64(bytes.count)
        return offset
    }

    /// Fills `bytes` from `offset`; false (and `failure` set) when they cannot all be read.
    func read(into bytes: UnsafeMutableRawBufferPointer, at offset: Int64) -> Bool {
        guard failure == nil else { return false }
        var done = 0
        while done < bytes.count {
            let got = pread(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset) + off_t(done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            done += got
        }
        if done < bytes.count {
            failure = "the \(what)' temporary file could not be read back (\(String(cString: strerror(errno))))"
            return false
        }
        return true
    }
}

/// Plain values kept per workout: in memory up to `limit` of them, beyond that in blocks in a temporary file
/// (`HealthTemporaryFile`).
final class HealthSpool<Entry: BitwiseCopyable> {
    private let limit: Int
    private var buffers: [Int: [Entry]] = [:]
    private var buffered = 0
    /// Per workout, its blocks in the file (byte offset, entries).
    private var blocks: [Int: [(offset: Int64, count: Int)]] = [:]
    private let file: HealthTemporaryFile
    /// Why the temporary file could not be written or read (the import is refused with it).
    var failure: String? { file.failure }

    init(limit: Int, what: String, folder: String = NSTemporaryDirectory()) {
        self.limit = max(1, limit)
        file = HealthTemporaryFile(what: what, folder: folder)
    }

    func append(_ entry: Entry, to owner: Int) {
        guard failure == nil else { return }
        buffers[owner, default: []].append(entry)
        buffered += 1
        if buffered >= limit { spill() }
    }

    /// The entries of `owner` (released from the spool).
    func take(_ owner: Int) -> [Entry] {
        var entries: [Entry] = []
        for block in blocks.removeValue(forKey: owner) ?? [] where failure == nil {
            let chunk = [Entry](unsafeUninitializedCapacity: block.count) { buffer, initialized in
                initialized = file.read(into: UnsafeMutableRawBufferPointer(buffer), at: block.offset) ? block.count : 0
            }
            entries += chunk
        }
        if let held = buffers.removeValue(forKey: owner) {
            buffered -= held.count
            entries += held
        }
        return entries
    }

    /// Writes every held entry to the temporary file, one block per workout.
    private func spill() {
        for (owner, entries) in buffers {
            guard let offset = entries.withUnsafeBytes({ file.append($0) }) else { return }
            blocks[owner, default: []].append((offset, entries.count))
        }
        buffers = [:]
        buffered = 0
    }
}
