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

/// Reads Apple Health exports: `export.zip`, its unzipped folder, or `export.xml` (with the
/// `workout-routes/` folder beside it). See docs/apple-health.md.
public enum AppleHealthReader: WorkoutFileReader {
    public static let format = "Apple Health"

    public static func recognizes(head: [UInt8], name: String) -> Bool {
        let lower = name.lowercased()
        // A zip: FIT files never start so; the zip's content decides later (no export in it is an error).
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return true }
        let text = String(decoding: head, as: UTF8.self)
        if text.contains("<HealthData") || text.contains("DOCTYPE HealthData") { return true }
        let trimmed = text.drop { $0.isWhitespace }
        if trimmed.hasPrefix("<Workout ") || trimmed.hasPrefix("<Record ") { return true }
        return lower == "export.xml" && !text.contains("<gpx")
    }

    /// The export XML and routes folder of a folder (the unzipped export or its parent), nil when
    /// it holds none.
    public static func exportFiles(inFolder path: String) -> (xml: String, routes: String?)? {
        let manager = FileManager.default
        var folder = path
        let nested = (path as NSString).appendingPathComponent("apple_health_export")
        var isFolder: ObjCBool = false
        if manager.fileExists(atPath: nested, isDirectory: &isFolder), isFolder.boolValue { folder = nested }
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return nil }
        // The XML's name is localised (Exportieren.xml): the non-CDA .xml directly in the folder.
        let candidates = names.filter { $0.lowercased().hasSuffix(".xml") && !$0.lowercased().contains("cda") }.sorted()
        guard let name = candidates.first(where: { $0 == "export.xml" }) ?? candidates.first else { return nil }
        let routes = (folder as NSString).appendingPathComponent("workout-routes")
        return (
            (folder as NSString).appendingPathComponent(name),
            manager.fileExists(atPath: routes, isDirectory: &isFolder) && isFolder.boolValue ? routes : nil
        )
    }

    public static func read(
        path: String, options: ImportOptions, each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw .unreadable(path: path, detail: "no such file or folder")
        }
        if isFolder.boolValue {
            guard let files = exportFiles(inFolder: path) else {
                throw .format(path: path, HealthImportError.noExport(detail: "\(path) holds no export.xml"))
            }
            try read(xml: files.xml, routes: files.routes, label: path, each: each)
            return
        }
        var head = [UInt8]()
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8]((try? handle.read(upToCount: 4)) ?? Data())
            try? handle.close()
        }
        if head.starts(with: [0x50, 0x4B]) || path.lowercased().hasSuffix(".zip") {
            let folder: String
            do {
                folder = try HealthArchive.extract(zip: path)
            } catch {
                throw .format(path: path, error)
            }
            defer { try? FileManager.default.removeItem(atPath: folder) }
            guard let files = exportFiles(inFolder: folder) else {
                throw .format(path: path, HealthImportError.noExport(detail: "the zip holds no apple_health_export/export.xml"))
            }
            try read(xml: files.xml, routes: files.routes, label: path, each: each)
            return
        }
        let sibling = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent("workout-routes")
        var routesFolder: ObjCBool = false
        let routes = FileManager.default.fileExists(atPath: sibling, isDirectory: &routesFolder) && routesFolder.boolValue
            ? sibling : nil
        try read(xml: path, routes: routes, label: path, each: each)
    }

    /// One pass over the XML with `scanner`.
    static func scan(xml: String, label: String, _ scanner: HealthExportScanner) throws(FileImportError) -> Int {
        guard let handle = FileHandle(forReadingAtPath: xml) else {
            throw .unreadable(path: xml, detail: "cannot open the export XML")
        }
        defer { try? handle.close() }
        let parser = XMLPullParser(allowsFragments: true) { buffer in
            let data = try handle.read(upToCount: buffer.count) ?? Data()
            data.copyBytes(to: buffer)
            return data.count
        }
        do {
            while let event = try parser.next() {
                scanner.handle(event, at: parser.position)
            }
        } catch {
            throw .format(path: label, HealthImportError.notWellFormed(entry: (xml as NSString).lastPathComponent, error))
        }
        return parser.forbiddenCharacters
    }

    static func read(
        xml: String, routes: String?, label: String, each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError) {
        let entry = (xml as NSString).lastPathComponent
        // Pass 1: the workouts (small) and the heart-rate recovery records.
        let first = HealthExportScanner(pass: .workouts)
        let forbidden = try scan(xml: xml, label: label, first)
        guard first.sawExport else {
            throw .format(path: label, HealthImportError.noExport(detail: "\(entry) holds no HealthData, Workout or Record"))
        }
        var counts = HealthExportCounts()
        counts.forbiddenCharacters = forbidden
        counts.records = first.records
        counts.correlations = first.correlations
        counts.otherElements = first.otherElements
        let workouts = first.workouts
        counts.workouts = workouts.count
        // Windows sorted by start, with the running maximum end, for the records' pass.
        let order = workouts.indices.filter { workouts[$0].damage == nil }.sorted { workouts[$0].start < workouts[$1].start }
        let starts = order.map { workouts[$0].start }
        var maxEnd: [Date] = []
        for index in order { maxEnd.append(max(maxEnd.last ?? .distantPast, workouts[index].end)) }
        func containing(_ from: Date, _ to: Date) -> [Int] {
            // The last window starting at or before `from`.
            var low = 0
            var high = starts.count
            while low < high {
                let middle = (low + high) / 2
                if starts[middle] <= from { low = middle + 1 } else { high = middle }
            }
            var found: [Int] = []
            var position = low - 1
            while position >= 0, maxEnd[position] >= to {
                let index = order[position]
                if workouts[index].end >= to { found.append(index) }
                position -= 1
            }
            return found
        }
        // Pass 2: quantity records inside a workout's window, per workout.
        var kept: [Int: [KeptRecord]] = [:]
        var sources: [String] = []
        var sourceIndex: [String: Int32] = [:]
        let second = HealthExportScanner(pass: .records)
        var inWindows = 0
        second.onRecord = { record, source in
            let owners = containing(record.start, record.end)
            guard !owners.isEmpty else { return }
            inWindows += 1
            var record = record
            if let index = sourceIndex[source] {
                record.source = index
            } else {
                record.source = Int32(sources.count)
                sourceIndex[source] = record.source
                sources.append(source)
            }
            for owner in owners {
                let rank = HealthSourcePreference.rank(source, device: nil, workoutSource: workouts[owner].sourceName)
                kept[owner, default: []].append(KeptRecord(record: record, sourceRank: rank, sourceName: source))
            }
        }
        if !order.isEmpty { _ = try scan(xml: xml, label: label, second) }
        counts.unreadableRecords = first.unreadableRecords + second.unreadableRecords
        counts.recordsInWorkouts = inWindows
        counts.recordsLeftOut = counts.records - inWindows
        // The best-ranked source per workout and type.
        for (owner, records) in kept {
            var best: [QuantityType: (rank: Int, source: Int32, count: Int)] = [:]
            var perSource: [QuantityType: [Int32: Int]] = [:]
            for record in records { perSource[record.record.type, default: [:]][record.record.source, default: 0] += 1 }
            for record in records {
                let count = perSource[record.record.type]?[record.record.source] ?? 0
                let candidate = (record.sourceRank, record.record.source, count)
                if let current = best[record.record.type] {
                    if candidate.0 < current.rank || (candidate.0 == current.rank && candidate.2 > current.count) {
                        best[record.record.type] = candidate
                    }
                } else {
                    best[record.record.type] = candidate
                }
            }
            let chosen = records.filter { best[$0.record.type]?.source == $0.record.source }
            counts.recordsOfOtherSources += records.count - chosen.count
            kept[owner] = chosen
        }
        // Heart-rate recovery records: to the workout that ended last before them, within an hour.
        var recoveries: [Int: HealthRecoveryRecord] = [:]
        for recovery in first.recoveries {
            let candidates = order.filter {
                workouts[$0].end <= recovery.date && recovery.date.timeIntervalSince(workouts[$0].end) <= 3600
            }
            if let owner = candidates.max(by: { workouts[$0].end < workouts[$1].end }) {
                recoveries[owner] = recovery
                counts.recoveriesAttached += 1
            } else {
                counts.recoveriesLeftOut += 1
            }
        }
        // Routes: every GPX file's time span, then each workout takes the points in its window.
        var gpx: [(path: String, first: Date, last: Date)] = []
        if let routes, let names = try? FileManager.default.contentsOfDirectory(atPath: routes) {
            for name in names.sorted() where name.lowercased().hasSuffix(".gpx") {
                let file = (routes as NSString).appendingPathComponent(name)
                guard let points = try? HealthGPX.points(path: file), let firstPoint = points.first,
                    let lastPoint = points.last
                else { continue }
                counts.routeFiles += 1
                gpx.append((file, firstPoint.date, lastPoint.date))
                counts.routePointsLeftOut += points.filter { point in
                    !order.contains { workouts[$0].start <= point.date && workouts[$0].end >= point.date }
                }.count
            }
        }
        for index in workouts.indices {
            let workout = workouts[index]
            if let damage = workout.damage {
                counts.damagedWorkouts += 1
                each(
                    .failure(
                        .format(
                            path: label,
                            HealthImportError.damagedWorkout(
                                entry: entry, line: workout.location.line, column: workout.location.column,
                                start: workout.start == .distantPast ? nil : workout.start, detail: damage))))
                continue
            }
            var route: [RoutePoint] = workout.routes.flatMap(\.locations)
            for file in gpx where file.last >= workout.start && file.first <= workout.end {
                route += (try? HealthGPX.points(path: file.path) { $0 >= workout.start && $0 <= workout.end }) ?? []
            }
            route.sort { $0.date < $1.date }
            var builder = HealthScriptBuilder(
                workout: workout, records: kept[index] ?? [], route: route, recovery: recoveries[index])
            let script = builder.script()
            let details = HealthImportDetails(counts: counts, entry: entry, line: workout.location.line, comparison: nil)
            let stated = script.metadata
            each(
                .success(
                    ReadWorkout(script: script, anomalies: builder.anomalies, details: details) { saved, _ in
                        let rows = HealthComparison.rows(workout: saved, stated: stated)
                        var compared = details
                        compared.comparison = rows
                        return (rows, compared)
                    }))
        }
    }
}
