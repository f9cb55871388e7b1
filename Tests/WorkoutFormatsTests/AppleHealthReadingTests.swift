import Foundation
import Testing
import WorkoutFormats
@testable import WorkoutImport
import WorkoutModel
import WorkoutStore

/// The Apple Health reader's own parts: the window index, the import limits and salt, the counts, the
/// GPX dates and the parser's length limit. The exports here are written by hand in the format of
/// HealthKit's export (the attributes as the shared exports have them); each expectation follows from
/// what the export holds.
@Suite("Apple Health reading")
struct AppleHealthReadingTests {
    /// A UTC instant from its calendar fields (Foundation's calendar, not the reader's date code).
    static func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) throws
        -> Date
    {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        return try #require(
            calendar.date(
                from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)))
    }

    static func workout(_ start: String, _ end: String, minutes: Int, duration: String? = nil) -> String {
        " <Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"\(duration ?? String(minutes))\" "
            + "durationUnit=\"min\" sourceName=\"W\" startDate=\"\(start)\" endDate=\"\(end)\"/>\n"
    }

    static func heartRate(_ date: String, _ value: String = "120") -> String {
        " <Record type=\"HKQuantityTypeIdentifierHeartRate\" sourceName=\"W\" unit=\"count/min\" "
            + "startDate=\"\(date)\" endDate=\"\(date)\" value=\"\(value)\"/>\n"
    }

    static func recovery(_ date: String, _ value: String) -> String {
        " <Record type=\"HKQuantityTypeIdentifierHeartRateRecoveryOneMinute\" sourceName=\"W\" unit=\"count/min\" "
            + "startDate=\"\(date)\" endDate=\"\(date)\" value=\"\(value)\"/>\n"
    }

    static func export(_ body: String) -> [UInt8] {
        Array("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n".utf8)
    }

    /// Reads `bytes` in pieces of 4 096 bytes.
    static func reader(_ bytes: [UInt8]) -> XMLPullParser.Read {
        var position = 0
        return { target in
            let count = min(target.count, bytes.count - position, 4096)
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
            }
            position += count
            return count
        }
    }

    /// The outcomes (refusal texts or nil for a taken workout) and the final counts of reading `bytes`.
    static func read(_ bytes: [UInt8], limits: ImportOptions = ImportOptions()) throws
        -> (outcomes: [String?], counts: HealthExportCounts?)
    {
        var outcomes: [String?] = []
        var final: HealthExportCounts?
        try HealthExportReading.read(
            entry: "export.xml", xml: { reader(bytes) }, routes: [], limits: limits,
            each: { outcome in
                switch outcome {
                case .success: outcomes.append(nil)
                case .failure(let error): outcomes.append(error.description)
                }
            }, counted: { final = $0 })
        return (outcomes, final)
    }

    func temporaryExport(_ bytes: [UInt8]) throws -> (path: String, folder: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("health-reading-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("export.xml")
        try Data(bytes).write(to: file)
        return (file.path, folder)
    }

    // MARK: The window index

    /// A workout's element that cannot be read again by itself in the second pass (its part not opened: the file
    /// gone or the descriptors exhausted between the passes) is a typed error of the import, not a trap.
    @Test func aWorkoutPartThatCannotBeReadAgainIsATypedError() throws {
        let bytes = Self.export(Self.workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:10:00 +0000", minutes: 10))
        var taken = 0
        #expect(throws: HealthImportError.self) {
            try HealthExportReading.read(
                entry: "export.xml", xml: { Self.reader(bytes) }, xmlPart: { _, _ in nil }, routes: [],
                each: { if case .success = $0 { taken += 1 } })
        }
        #expect(taken == 0)
    }

    @Test func aWindowEndingOnTheHourHoldsThatInstantAndNothingAfter() throws {
        let index = HealthWindowIndex([(try Self.utc(2024, 5, 1, 10), try Self.utc(2024, 5, 1, 11), 7)])
        let end = try Self.utc(2024, 5, 1, 11)
        #expect(index.containing(end, end) == [7])
        #expect(index.containing(end.addingTimeInterval(-1), end) == [7])
        #expect(index.containing(end, end.addingTimeInterval(1)).isEmpty)
        #expect(index.containing(end.addingTimeInterval(1), end.addingTimeInterval(1)).isEmpty)
    }

    @Test func windowsLongerThanFourDaysAndYearsLongAreFoundInsideOnly() throws {
        let start = try Self.utc(2024, 5, 1, 10, 30)
        let hundredHours = start.addingTimeInterval(100 * 3600)
        let threeYears = try Self.utc(2027, 5, 1, 10, 30)
        let index = HealthWindowIndex([(start, hundredHours, 1), (start, threeYears, 2)])
        let middle = start.addingTimeInterval(50 * 3600)
        #expect(index.containing(middle, middle.addingTimeInterval(60)) == [1, 2])
        #expect(index.containing(hundredHours, hundredHours) == [1, 2])
        let after = hundredHours.addingTimeInterval(1)
        #expect(index.containing(after, after) == [2])
        let late = try Self.utc(2026, 12, 31, 23, 59, 59)
        #expect(index.containing(late, late) == [2])
        let before = start.addingTimeInterval(-1)
        #expect(index.containing(before, before).isEmpty)
        #expect(index.containing(threeYears.addingTimeInterval(1), threeYears.addingTimeInterval(1)).isEmpty)
    }

    @Test func windowsBefore1970AndAcrossItAreFound() throws {
        let across = (try Self.utc(1969, 12, 31, 22, 30), try Self.utc(1970, 1, 1, 1, 30), 1)
        let long1960 = (try Self.utc(1960, 3, 1, 0, 15), try Self.utc(1960, 3, 6, 0, 15), 2)
        let index = HealthWindowIndex([across, long1960])
        let lastMinute = try Self.utc(1969, 12, 31, 23, 59)
        #expect(index.containing(lastMinute, try Self.utc(1970, 1, 1, 0, 1)) == [1])
        #expect(index.containing(try Self.utc(1969, 12, 31, 22, 29), lastMinute).isEmpty)
        let inside = try Self.utc(1960, 3, 5, 23, 0)
        #expect(index.containing(inside, inside) == [2])
        let outside = try Self.utc(1960, 3, 1, 0, 14)
        #expect(index.containing(outside, outside).isEmpty)
    }

    @Test func aRecordAcrossTwoTouchingWindowsBelongsToNeitherAndTheSharedInstantToBoth() throws {
        let index = HealthWindowIndex([
            (try Self.utc(2024, 5, 1, 10), try Self.utc(2024, 5, 1, 11), 4),
            (try Self.utc(2024, 5, 1, 11), try Self.utc(2024, 5, 1, 12), 9),
        ])
        #expect(index.containing(try Self.utc(2024, 5, 1, 10, 59, 30), try Self.utc(2024, 5, 1, 11, 0, 30)).isEmpty)
        let shared = try Self.utc(2024, 5, 1, 11)
        #expect(index.containing(shared, shared) == [4, 9])
    }

    // MARK: Limits, counts, salt

    /// Issue: a refused workout took records and a recovery (counted as in a workout, then dropped).
    @Test func workoutsRefusedByTheLimitsTakeNoRecordOrRecovery() throws {
        let bytes = Self.export(
            Self.workout("2020-01-01 00:00:00 +0000", "2020-01-09 00:00:00 +0000", minutes: 11_520)  // 8 days
                + Self.workout("2020-02-01 10:00:00 +0000", "2020-02-01 10:30:00 +0000", minutes: 30)
                + Self.workout("2020-03-01 10:00:00 +0000", "2020-03-01 10:30:00 +0000", minutes: 30)  // after latestEnd
                + Self.heartRate("2020-01-05 12:00:00 +0000") + Self.heartRate("2020-01-05 12:00:05 +0000")
                + Self.heartRate("2020-02-01 10:10:00 +0000") + Self.heartRate("2020-03-01 10:10:00 +0000")
                + Self.heartRate("2020-04-01 10:10:00 +0000")
                + Self.recovery("2020-03-01 10:31:00 +0000", "30") + Self.recovery("2020-02-01 10:31:00 +0000", "25"))
        let limits = ImportOptions(longestSpan: 7 * 86_400, latestEnd: try Self.utc(2020, 2, 15))
        let (outcomes, final) = try Self.read(bytes, limits: limits)
        let counts = try #require(final)
        #expect(outcomes.count == 3)
        #expect(outcomes[0]?.contains("longer than the 168 hours") == true)
        #expect(outcomes[1] == nil)
        #expect(outcomes[2]?.contains("check the device's clock") == true)
        #expect(counts.workouts == 3)
        #expect(counts.damagedWorkouts == 2)
        #expect(counts.records == 7)
        #expect(counts.recordsInWorkouts == 1)
        #expect(counts.recordsLeftOut == 6)
        #expect(counts.recoveriesAttached == 1)
        #expect(counts.recoveriesLeftOut == 1)
    }

    /// Issue: with no workout taken, recovery records vanished uncounted.
    @Test func recoveriesAreCountedWhenNoWorkoutIsTaken() throws {
        let bytes = Self.export(
            Self.workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:30:00 +0000", minutes: 30, duration: "x")
                + Self.recovery("2020-01-01 10:31:00 +0000", "30") + Self.recovery("2020-01-01 10:32:00 +0000", "abc")
                + Self.heartRate("2020-01-01 10:10:00 +0000", "nan"))
        let (outcomes, final) = try Self.read(bytes)
        let counts = try #require(final)
        #expect(outcomes.count == 1 && outcomes[0] != nil)
        #expect(counts.damagedWorkouts == 1)
        #expect(counts.recoveriesAttached == 0)
        #expect(counts.recoveriesLeftOut == 1)
        #expect(counts.unreadableRecords == 2)
        #expect(counts.recordsInWorkouts == 0)
        #expect(counts.recordsLeftOut == 3)
    }

    @Test func theSaltGivesOtherIdsAndStillFindsTheUnsaltedImport() throws {
        let (path, folder) = try temporaryExport(
            Self.export(
                Self.workout("2020-02-01 10:00:00 +0000", "2020-02-01 10:30:00 +0000", minutes: 30)
                    + Self.heartRate("2020-02-01 10:10:00 +0000")))
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try temporaryStore()
        let plain = try #require(try FileImport.runAll(path: path, into: first).first).get().workout.id
        // The same export salted, into the store holding it unsalted: found under its earlier id.
        let again = try #require(try FileImport.runAll(path: path, into: first, options: ImportOptions(idSalt: 7)).first)
        guard case .failure(.alreadyImported(_, let existing)) = again else {
            Issue.record("a salted import of an export already imported unsalted was not refused: \(again)")
            return
        }
        #expect(existing == plain)
        // Into another store: two salts, two workouts, neither with the unsalted id; a salt twice is one.
        let second = try temporaryStore()
        let seven = try #require(try FileImport.runAll(path: path, into: second, options: ImportOptions(idSalt: 7)).first)
            .get().workout.id
        let nine = try #require(try FileImport.runAll(path: path, into: second, options: ImportOptions(idSalt: 9)).first)
            .get().workout.id
        #expect(Set([plain, seven, nine]).count == 3)
        let twice = try #require(try FileImport.runAll(path: path, into: second, options: ImportOptions(idSalt: 9)).first)
        guard case .failure(.alreadyImported(_, let id)) = twice else {
            Issue.record("the same salted import twice was not refused: \(twice)")
            return
        }
        #expect(id == nine)
        #expect(try second.workouts(matching: WorkoutQuery()).count == 2)
    }

    /// Issue: `FileImport.run` (the server's FIT upload) stored every workout of an export and answered
    /// for the first only; an export is refused whole there now, nothing stored.
    @Test func aHealthExportIsRefusedWholeWhereOneWorkoutIsExpected() throws {
        let (path, folder) = try temporaryExport(
            Self.export(
                Self.workout("2020-01-01 00:00:00 +0000", "2020-01-09 00:00:00 +0000", minutes: 11_520)
                    + Self.workout("2020-02-01 10:00:00 +0000", "2020-02-01 10:30:00 +0000", minutes: 30)))
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try temporaryStore()
        #expect {
            _ = try FileImport.run(path: path, into: store, options: ImportOptions(longestSpan: 7 * 86_400))
        } throws: { error in
            guard case .format(_, let format) = error as? FileImportError else { return false }
            return format is ManyWorkoutsFileError && "\(format)".contains("workout import")
        }
        #expect(throws: FileImportError.self) { _ = try FileImport.run(path: folder.path, into: store) }
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
    }

    // MARK: Dates

    @Test func gpxTimesInApplesFormAreReadAndImpossibleOnesRefused() throws {
        #expect(HealthGPX.time("2025-09-26T17:00:18Z") == (try Self.utc(2025, 9, 26, 17, 0, 18)))
        #expect(HealthGPX.time("2024-02-29T10:00:00Z") == (try Self.utc(2024, 2, 29, 10)))
        #expect(HealthGPX.time(" 2025-12-31T23:59:59Z\n") == (try Self.utc(2025, 12, 31, 23, 59, 59)))
        for impossible in [
            "2025-02-31T10:00:00Z", "2025-02-29T10:00:00Z", "2025-04-31T10:00:00Z", "2025-09-26T17:00:60Z",
            "2025-09-26X17:00:18Z", "2025-09-26 17:00:18Z", "2025-13-01T10:00:00Z", "2025-09-00T10:00:00Z",
        ] {
            #expect(HealthGPX.time(impossible) == nil, "\(impossible)")
        }
        #expect(HealthDate.parse("2025-02-31 10:00:00 +0000") == nil)
        #expect(HealthDate.parse("2100-02-29 10:00:00 +0000") == nil)
        #expect(HealthDate.parse("2000-02-29 10:00:00 +0000") == (try Self.utc(2000, 2, 29, 10)))
    }

    /// A workout's local start is written as Foundation's ISO 8601 formatter writes it (the formatter is the oracle):
    /// every zone Foundation knows, at seeded times from 1900 to 2100 (whole seconds, as exports give them, and some
    /// with fractions), around each zone's changes of offset, and at the edges (years 1000-1582, 2100-2200, before
    /// 1970 by a fraction, just short of a whole second).
    @Test func aWorkoutsLocalStartIsWrittenAsTheISO8601FormatterWritesIt() throws {
        var random = SeededGenerator(seed: 24)
        var checked = 0
        for identifier in TimeZone.knownTimeZoneIdentifiers + ["UTC", "GMT"] {
            let zone = try #require(TimeZone(identifier: identifier))
            let fractions = [0, 0, 0, 0.75, 0.9996, 0.000_001]
            var dates = (0..<40).map { index in
                Date(
                    timeIntervalSince1970: Double(random.next() % 6_311_390_400) - 2_208_988_800
                        + fractions[index % fractions.count])
            }
            dates += [-30_610_224_000, -12_219_292_800, 4_102_444_800, 7_258_118_399, -1e-6, 1_500_000_000.9999].map {
                Date(timeIntervalSince1970: $0)
            }
            var change = Date(timeIntervalSince1970: 1_300_000_000)
            for _ in 0..<4 {
                guard let next = zone.nextDaylightSavingTimeTransition(after: change) else { break }
                dates += [-1, 0, 1, 3_599, 3_600].map { next.addingTimeInterval($0) }
                change = next
            }
            dates.append(Date(timeIntervalSince1970: -0.25))
            for date in dates {
                #expect(
                    HealthDate.internetDateTime(date, in: zone) == HealthDate.formatted(date, in: zone),
                    "\(identifier) \(date.timeIntervalSince1970)")
                checked += 1
            }
        }
        #expect(checked > 10_000)
    }

    @Test func gpxPointsWithAnImpossibleTimeAreLeftOut() throws {
        let gpx = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="Apple Health Export" xmlns="http://www.topografix.com/GPX/1/1">
             <trk><trkseg>
              <trkpt lon="13.4" lat="52.5"><ele>34.0</ele><time>2025-03-01T10:00:00Z</time></trkpt>
              <trkpt lon="13.5" lat="52.5"><ele>34.0</ele><time>2025-02-31T10:00:01Z</time></trkpt>
              <trkpt lon="13.6" lat="52.5"><ele>34.0</ele><time>2025-02-28T10:00:02Z</time></trkpt>
             </trkseg></trk>
            </gpx>
            """
        let points = try HealthGPX.points(read: Self.reader(Array(gpx.utf8)))
        #expect(points.map(\.date) == [try Self.utc(2025, 2, 28, 10, 0, 2), try Self.utc(2025, 3, 1, 10)])
        #expect(points.map(\.longitude) == [13.6, 13.4])
    }

    /// Route files are read once and their points spooled per workout: each workout gets the points in its window
    /// (ends included) from every file, in time order, the same whether they stayed in memory or went through the
    /// temporary file; a point in no window is counted as left out.
    @Test func eachWorkoutTakesTheRoutePointsInItsWindowFromMemoryOrTheTemporaryFile() throws {
        func gpx(_ seconds: [Int]) -> [UInt8] {
            let points = seconds.map { second in
                String(format: "<trkpt lon=\"13.%d\" lat=\"52.5\"><ele>%d</ele><time>2020-01-01T10:%02d:%02dZ</time></trkpt>",
                    second, second, second / 60, second % 60)
            }
            return Array(("<gpx version=\"1.1\"><trk><trkseg>" + points.joined() + "</trkseg></trk></gpx>").utf8)
        }
        // Two workouts, 10:00–10:10 and 10:05–10:20; a file across both, one inside the second, one point after both.
        let files = [gpx([0, 60, 300, 599, 600, 601]), gpx([900, 1200, 1201])]
        let bytes = Self.export(
            Self.workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:10:00 +0000", minutes: 10)
                + Self.workout("2020-01-01 10:05:00 +0000", "2020-01-01 10:20:00 +0000", minutes: 15))
        func routes(spoolLimit: Int) throws -> (points: [[Int]], leftOut: Int) {
            var points: [[Int]] = []
            var leftOut = -1
            try HealthExportReading.read(
                entry: "export.xml", xml: { Self.reader(bytes) }, routes: files.map { file in { Self.reader(file) } },
                spoolLimit: spoolLimit,
                each: { outcome in
                    guard case .success(let workout) = outcome else { return }
                    var seconds: [Int] = []
                    for step in workout.script.steps {
                        if case .route(let route) = step.step {
                            seconds += route.compactMap { $0.altitude.map { Int($0) } }
                        }
                    }
                    points.append(seconds)
                },
                counted: { leftOut = $0.routePointsLeftOut })
            return (points, leftOut)
        }
        let inMemory = try routes(spoolLimit: 1 << 18)
        #expect(inMemory.points == [[0, 60, 300, 599, 600], [300, 599, 600, 601, 900, 1200]])
        #expect(inMemory.leftOut == 1)
        let spooled = try routes(spoolLimit: 2)
        #expect(spooled.points == inMemory.points)
        #expect(spooled.leftOut == inMemory.leftOut)
    }

    // MARK: The parser's length limit

    /// A value longer than 16 MiB (16 777 216 bytes) once decoded is an error, kept or only checked.
    @Test(arguments: [false, true])
    func aValueOverSixteenMebibytesIsRefusedKeptOrSkipped(skipping: Bool) throws {
        var bytes = Array("<a v=\"&amp;".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "x"), count: 16_777_216)
        bytes += Array("\"/>".utf8)
        let parser = XMLPullParser(read: Self.reader(bytes))
        if skipping { parser.skipsAttributes = { _, _ in true } }
        #expect {
            while try parser.next() != nil {}
        } throws: { error in
            "\(error)".contains("longer than 16777216 bytes")
        }
        // One byte less decoded is read.
        var fits = Array("<a v=\"&amp;".utf8)
        fits += [UInt8](repeating: UInt8(ascii: "x"), count: 16_777_215)
        fits += Array("\"/>".utf8)
        let reading = XMLPullParser(read: Self.reader(fits))
        if skipping { reading.skipsAttributes = { _, _ in true } }
        var values: [Int] = []
        while let event = try reading.next() {
            if case .start(_, let attributes) = event { values += attributes.map(\.value.utf8.count) }
        }
        #expect(values == (skipping ? [] : [16_777_216]))
    }

    // MARK: Memory: the records spooled between the passes

    /// Each distinct source name of a record is kept for the whole import: an export naming a new source in every
    /// record (hostile, or broken) would grow memory with its records. Beyond `sourceLimit` names, the records of a
    /// source not yet seen are left out and counted; those of the sources already seen still count.
    @Test func recordsOfSourcesBeyondTheLimitAreLeftOutAndCounted() throws {
        var body = Self.workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:30:00 +0000", minutes: 30)
        for minute in 0..<6 {
            // Sources S0…S5, one record each (S5 two in a row: a source left out stays left out), then S0 again.
            for _ in 0..<(minute == 5 ? 2 : 1) {
                body += Self.heartRate(String(format: "2020-01-01 10:%02d:00 +0000", minute), String(100 + minute))
                    .replacingOccurrences(of: "sourceName=\"W\"", with: "sourceName=\"S\(minute)\"")
            }
        }
        body += Self.heartRate("2020-01-01 10:10:00 +0000", "150").replacingOccurrences(
            of: "sourceName=\"W\"", with: "sourceName=\"S0\"")
        let bytes = Self.export(body)
        var counts: HealthExportCounts?
        var taken = 0
        try HealthExportReading.read(
            entry: "export.xml", xml: { Self.reader(bytes) }, routes: [], sourceLimit: 4,
            each: { outcome in if case .success = outcome { taken += 1 } }, counted: { counts = $0 })
        let final = try #require(counts)
        #expect(taken == 1)
        #expect(final.records == 8)
        #expect(final.recordsOfExcessSources == 3)
        // S4 and S5 are left out with the records outside every window; S0's second record still counts.
        #expect(final.recordsInWorkouts == 5)
        #expect(final.recordsLeftOut == 3)
        #expect(HealthExportReading.sourceLimit == 10_000)
    }


    @Test func theSpoolGivesEachWorkoutItsRecordsInOrderFromTheFileAndMemory() throws {
        let spool = HealthRecordSpool(limit: 3)
        let start = try Self.utc(2024, 5, 1, 10)
        func record(_ second: Int, _ value: Double, _ source: Int32) -> HealthRecord {
            HealthRecord(
                type: .heartRate, value: value, start: start.addingTimeInterval(Double(second)),
                end: start.addingTimeInterval(Double(second)), source: source)
        }
        // Seven records for three workouts: two spills of three (to the file), one left in memory.
        let appended: [(Int, HealthRecord)] = [
            (0, record(0, 100, 0)), (1, record(1, 101, 1)), (0, record(2, 102, 0)), (2, record(3, 103, 2)),
            (0, record(4, 104, 0)), (1, record(5, 105, 1)), (0, record(6, 106, 0)),
        ]
        for (owner, record) in appended { spool.append(record, to: owner) }
        let zero = spool.take(0)
        #expect(zero.map(\.value) == [100, 102, 104, 106])
        #expect(zero.map(\.start) == [0, 2, 4, 6].map { start.addingTimeInterval(Double($0)) })
        #expect(zero.allSatisfy { $0.type == .heartRate && $0.source == 0 && $0.end == $0.start })
        #expect(spool.take(1).map(\.value) == [101, 105])
        #expect(spool.take(0).isEmpty)
        #expect(spool.take(2).map(\.source) == [2])
        #expect(spool.failure == nil)
    }

    /// Each workout gets the same samples whether its records stayed in memory or went through the temporary
    /// file; records after the workouts in the document count too (exports do not promise an order).
    @Test func workoutsGetTheSameSamplesFromTheTemporaryFileAsFromMemory() throws {
        var body = ""
        for minute in 0...50 {
            body += Self.heartRate(String(format: "2020-01-01 10:%02d:00 +0000", minute), String(100 + minute))
        }
        func steps(_ source: String, _ from: Int, _ value: Int) -> String {
            " <Record type=\"HKQuantityTypeIdentifierStepCount\" sourceName=\"\(source)\" unit=\"count\" "
                + String(format: "startDate=\"2020-01-01 10:%02d:00 +0000\" endDate=\"2020-01-01 10:%02d:00 +0000\" ", from, from + 1)
                + "value=\"\(value)\"/>\n"
        }
        body += Self.workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:30:00 +0000", minutes: 30)
        body += Self.workout("2020-01-01 10:20:00 +0000", "2020-01-01 10:50:00 +0000", minutes: 30)
        // After the workouts: the phone's steps all along, the watch's (the workouts' source) from 10:25.
        for minute in 0..<50 { body += steps("P", minute, 50) }
        for minute in 25..<50 { body += steps("W", minute, 60) }
        let bytes = Self.export(body)
        func samples(spoolLimit: Int) throws -> [[String]] {
            var workouts: [[String]] = []
            try HealthExportReading.read(
                entry: "export.xml", xml: { Self.reader(bytes) }, routes: [], spoolLimit: spoolLimit,
                each: { outcome in
                    guard case .success(let workout) = outcome else { return }
                    var found: [String] = []
                    for step in workout.script.steps {
                        if case .samples(let samples) = step.step {
                            found += samples.map {
                                "\($0.type.rawValue) \($0.quantity.value) \($0.start.timeIntervalSince1970) \($0.source.name)"
                            }
                        }
                    }
                    workouts.append(found.sorted())
                })
            return workouts
        }
        let inMemory = try samples(spoolLimit: 1 << 18)
        let spooled = try samples(spoolLimit: 2)
        #expect(spooled == inMemory)
        #expect(inMemory.count == 2)
        // 10:00–10:30: 31 readings, the watch's 5 step records (10:25…10:29), not the phone's 30.
        #expect(inMemory.first?.filter { $0.hasPrefix("heartRate ") }.count == 31)
        #expect(inMemory.first?.filter { $0.hasPrefix("stepCount ") && $0.hasSuffix(" W") }.count == 5)
        #expect(inMemory.first?.filter { $0.hasSuffix(" P") }.isEmpty == true)
        // 10:20–10:50: 31 readings and the watch's 25 step records.
        #expect(inMemory.last?.filter { $0.hasPrefix("heartRate ") }.count == 31)
        #expect(inMemory.last?.filter { $0.hasPrefix("stepCount ") && $0.hasSuffix(" W") }.count == 25)
    }

    /// Two overlapping 30-minute workouts (10:00 and 10:20) with a heart-rate record a minute, 10:00–10:50.
    static func twoWorkoutsWithRecords() -> [UInt8] {
        var body = ""
        for minute in 0...50 {
            body += heartRate(String(format: "2020-01-01 10:%02d:00 +0000", minute), String(100 + minute))
        }
        body += workout("2020-01-01 10:00:00 +0000", "2020-01-01 10:30:00 +0000", minutes: 30)
        body += workout("2020-01-01 10:20:00 +0000", "2020-01-01 10:50:00 +0000", minutes: 30)
        return export(body)
    }

    // Pass 2 took each workout's records from the temporary file and, when they could not be read back, handed the
    // workout over with those records missing (saved with holes), the import only failing after it. Now that
    // workout is refused whole with a typed error, and counted. The file is cut short behind the reader's back
    // (after the first workout was handed over), as a file that cannot be read back.
    // (It finds the temporary file through /proc/self/fd: Linux only.)
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func aWorkoutWhoseRecordsCannotBeReadBackIsRefusedWhole() throws {
        let folder = try temporaryFolder("spool")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = Self.twoWorkoutsWithRecords()
        var outcomes: [Result<HealthScriptedWorkout, HealthImportError>] = []
        var counts: HealthExportCounts?
        var thrown: HealthImportError?
        do {
            try HealthExportReading.read(
                entry: "export.xml", xml: { Self.reader(bytes) }, routes: [], spoolLimit: 2,
                temporaryFolder: folder.path,
                each: { outcome in
                    outcomes.append(outcome)
                    guard outcomes.count == 1 else { return }
                    // The records' temporary file (unlinked, in `folder`) loses its content.
                    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
                    for name in descriptors {
                        let link = "/proc/self/fd/\(name)"
                        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link),
                            target.hasPrefix(folder.path + "/health-spool-")
                        else { continue }
                        let descriptor = open(link, O_WRONLY)
                        if descriptor >= 0 {
                            _ = ftruncate(descriptor, 0)
                            close(descriptor)
                        }
                    }
                },
                counted: { counts = $0 })
        } catch {
            thrown = error
        }
        #expect(thrown == nil, "\(String(describing: thrown))")
        #expect(outcomes.count == 2)
        #expect((try? outcomes.first?.get()) != nil, "the first workout's records were read before the damage")
        guard case .failure(.spoolUnreadable(let entry, _, _, let start, let detail))? = outcomes.last else {
            Issue.record(
                "expected the second workout refused as spoolUnreadable, got \(String(describing: outcomes.last))")
            return
        }
        #expect(entry == "export.xml")
        #expect(start == (try Self.utc(2020, 1, 1, 10, 20)))
        #expect(detail.contains("could not be read back"), "\(detail)")
        #expect(counts?.workoutsNotReadBack == 1)
    }

    // Pass 2 reads each workout's element again from the file: a file rewritten after pass 1 read it (another
    // export saved over it) gave workouts that pass 1's records and windows do not belong to. The file's identity
    // (device, inode, size, modification time) is now checked before each workout is read again, and a change is
    // refused with a typed error saying to run the import again. Here the second workout's duration is rewritten
    // in place (same size, same inode) after the first workout was handed over.
    @Test func anExportRewrittenBetweenThePassesIsRefused() throws {
        let folder = try temporaryFolder("rewritten")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("export.xml").path
        let bytes = Self.twoWorkoutsWithRecords()
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let original = String(decoding: bytes, as: UTF8.self)
        let second = try #require(original.range(of: "duration=\"30\"", options: .backwards))
        let offset = original.utf8.distance(from: original.startIndex, to: second.lowerBound)
        var successes = 0
        var refusedAfter = false
        var thrown: FileImportError?
        do {
            try AppleHealthReader.read(path: path, options: ImportOptions()) { outcome in
                if case .success = outcome { successes += 1 } else { refusedAfter = true }
                guard successes == 1, !refusedAfter else { return }
                let descriptor = open(path, O_WRONLY)
                guard descriptor >= 0 else { return }
                defer { close(descriptor) }
                let changed = Array("duration=\"29\"".utf8)
                _ = changed.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
                // Saved a moment later than the file pass 1 read (timestamps may be coarser than this test).
                var status = stat()
                _ = fstat(descriptor, &status)
                #if canImport(Darwin)
                    var times = [status.st_atimespec, status.st_mtimespec]
                #else
                    var times = [status.st_atim, status.st_mtim]
                #endif
                times[1].tv_sec += 2
                _ = futimens(descriptor, &times)
            }
        } catch {
            thrown = error
        }
        #expect(successes == 1, "the rewritten workout was read as if nothing changed")
        guard case .format(_, let error)? = thrown,
            case .exportChanged(let entry, let detail)? = error as? HealthImportError
        else {
            Issue.record("expected exportChanged, got \(String(describing: thrown))")
            return
        }
        #expect(entry == "export.xml")
        #expect(detail.contains("modified"), "\(detail)")
        #expect(HealthImportError.exportChanged(entry: entry, detail: detail).description.contains("import it again"))
    }

    /// A batch of workouts waiting for their save counts what they hold decoded, not only their encoded chunks: 128
    /// one-hour runs of 18,000 samples each (their chunks about 5 bytes a sample) close their batch long before the
    /// 128th, so that the batch holds at most about `batchBytes` (16 MiB) and not 128 workouts' samples (about 290 MB).
    @Test func aBatchOfLongWorkoutsIsSavedBeforeItHoldsTheirSamplesAll() {
        let held = FileImport.heldBytes(chunkBytes: 18_000 * 5, inputs: 18_000)
        let workoutsInABatch = FileImport.batchBytes / held + 1
        #expect(workoutsInABatch < 16)
        #expect(workoutsInABatch * held < 2 * FileImport.batchBytes)
    }
}
