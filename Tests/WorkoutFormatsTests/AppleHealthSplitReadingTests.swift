import Foundation
import Testing
import WorkoutFormats
import WorkoutModel
import WorkoutTestSupport

@testable import WorkoutImport

/// A large export's first pass in two halves at once (`HealthExportSplit`): whatever the cut, the reading is one
/// parse's, workout for workout and count for count; an error in the second half names the document's line.
@Suite("Apple Health reading in two halves")
struct AppleHealthSplitReadingTests {
    /// Each workout's outcome (its start, samples, route points, the samples' values and sources; or the refusal),
    /// the counts, or the error that ended the reading.
    struct Reading: Equatable {
        var outcomes: [String] = []
        var counts: HealthExportCounts?
        var error: String?
    }

    /// Reads the export file at `path`, its second half meanwhile on another thread when `split` (any size).
    static func read(
        _ path: String, split: Bool, sourceLimit: Int = HealthExportReading.sourceLimit
    ) throws -> Reading {
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let descriptor = handle.fileDescriptor
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        var reading = Reading()
        do {
            try HealthExportReading.read(
                entry: "export.xml", xml: { HealthExportReading.part(descriptor: descriptor, from: 0, to: .max) },
                xmlPart: { from, to in HealthExportReading.part(descriptor: descriptor, from: from, to: to) },
                splittable: split ? HealthSplittableFile(descriptor: descriptor, size: size, minimumSize: 0) : nil,
                routes: [], sourceLimit: sourceLimit,
                each: { outcome in
                    switch outcome {
                    case .success(let workout):
                        let script = workout.script
                        var values = 0.0
                        var sources = Set<String>()
                        for step in script.steps {
                            guard case .samples(let samples) = step.step else { continue }
                            for sample in samples {
                                values += sample.quantity.value
                                sources.insert(sample.source.name)
                            }
                        }
                        let counts = "\(script.sampleCount) \(script.routePointCount)"
                        reading.outcomes.append("\(script.start) \(counts) \(values) \(sources.sorted())")
                    case .failure(let error):
                        reading.outcomes.append(error.description)
                    }
                }, counted: { reading.counts = $0 })
        } catch {
            reading.error = error.description
        }
        return reading
    }

    /// Whether the first part's scan, told to stop at the cut found in the file, stops there (between two of the
    /// root's children) rather than reading on to the end; nil when the file has no cut.
    static func stopsAtTheCut(_ path: String) throws -> Bool? {
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let descriptor = handle.fileDescriptor
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        guard let cut = HealthExportSplit.cut(descriptor: descriptor, near: size / 2, size: size) else { return nil }
        let scanner = HealthExportScanner(pass: .workoutsAndRecords)
        return try HealthExportReading.scan(
            entry: "export.xml", { HealthExportReading.part(descriptor: descriptor, from: 0, to: .max) }, scanner,
            stopAt: cut
        ).stopped != nil
    }

    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("split-\(UUID().uuidString).xml").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A heart-rate record at 10:`minute` of 1 January 2020 from `source` (`AppleHealthReadingTests.heartRate`).
    static func heartRate(minute: Int, value: Int, source: String = "W") -> String {
        AppleHealthReadingTests.heartRate(String(format: "2020-01-01 10:%02d:00 +0000", minute % 60), String(value))
            .replacingOccurrences(of: "sourceName=\"W\"", with: "sourceName=\"\(source)\"")
    }

    /// A run from 10:00 to 11:00 on 1 January 2020 (`AppleHealthReadingTests.workout`).
    static let workout = AppleHealthReadingTests.workout(
        "2020-01-01 10:00:00 +0000", "2020-01-01 11:00:00 +0000", minutes: 60)

    @Test func aRealExportReadInTwoHalvesGivesWhatOneParseGives() throws {
        let path = SharedData.directory + "/applehealth/hk_export.xml"
        // The real file has a cut, and its first part's scan stops there: the second half is read by the other thread.
        #expect(try Self.stopsAtTheCut(path) == true)
        let whole = try Self.read(path, split: false)
        let halves = try Self.read(path, split: true)
        #expect(whole.error == nil)
        #expect(!whole.outcomes.isEmpty)
        #expect((whole.counts?.records ?? 0) > 10_000)
        #expect(halves == whole)
    }

    @Test func recordsAndSourcesOfTheSecondHalfComeAfterTheFirstsAsInOneParse() throws {
        // Sources first named in the second half, one named in both; a workout in each half.
        var body = ""
        for minute in 0..<40 { body += Self.heartRate(minute: minute, value: 100 + minute, source: "A\(minute % 3)") }
        body += Self.workout
        for minute in 20..<60 { body += Self.heartRate(minute: minute, value: 60 + minute, source: "B\(minute % 4)") }
        body += Self.heartRate(minute: 59, value: 150, source: "A1")
        body += Self.workout.replacingOccurrences(of: "10:00:00", with: "10:30:00")
        let path = try Self.write("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try Self.stopsAtTheCut(path) == true)
        let whole = try Self.read(path, split: false)
        #expect(whole.outcomes.count == 2)
        #expect(try Self.read(path, split: true) == whole)
    }

    @Test func aSecondHalfNamingMoreSourcesThanTheLimitIsReadOnFromTheCutAsOneParse() throws {
        // Limit 3: the first half names S0; the second S1, S2, S3 (beyond the limit: left out) and S0 again, whose
        // records one parse keeps. The second half alone cannot tell S0 from a fourth new source.
        var body = Self.workout
        for minute in 0..<30 { body += Self.heartRate(minute: minute, value: 100 + minute, source: "S0") }
        for minute in 30..<60 { body += Self.heartRate(minute: minute, value: 100, source: "S\(1 + minute % 3)") }
        for minute in 40..<50 { body += Self.heartRate(minute: minute, value: 90, source: "S0") }
        let path = try Self.write("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try Self.stopsAtTheCut(path) == true)
        let whole = try Self.read(path, split: false, sourceLimit: 3)
        #expect(whole.counts?.recordsOfExcessSources == 10)
        #expect(whole.counts?.recordsInWorkouts == 60)
        #expect(try Self.read(path, split: true, sourceLimit: 3) == whole)
    }

    @Test func aCutInsideACommentIsNotTakenAndTheReadingIsOneParses() throws {
        // The middle of the file is inside a comment holding what looks like a cut and a record.
        var body = ""
        for minute in 0..<20 { body += Self.heartRate(minute: minute, value: 120) }
        let lookalike = ">\n" + Self.heartRate(minute: 5, value: 250)
        body += " <!-- " + String(repeating: "x", count: 20_000) + lookalike + " -->\n"
        body += Self.workout.replacingOccurrences(of: "10:00:00", with: "09:50:00")
        let path = try Self.write("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try Self.stopsAtTheCut(path) == false)
        let whole = try Self.read(path, split: false)
        #expect(whole.counts?.records == 20)
        #expect(try Self.read(path, split: true) == whole)
    }

    @Test func anErrorInTheSecondHalfNamesTheDocumentsLineAsOneParseDoes() throws {
        var body = ""
        for minute in 0..<30 { body += Self.heartRate(minute: minute, value: 120) }
        body += Self.workout
        for minute in 30..<50 { body += Self.heartRate(minute: minute, value: 120) }
        // Line 53: an attribute given twice.
        body += " <Record type=\"HKQuantityTypeIdentifierHeartRate\" value=\"1\" value=\"2\"/>\n"
        for minute in 50..<60 { body += Self.heartRate(minute: minute, value: 120) }
        let path = try Self.write("<HealthData locale=\"en_US\">\n\(body)</HealthData>\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try Self.stopsAtTheCut(path) == true)
        let whole = try Self.read(path, split: false)
        let error = try #require(whole.error)
        #expect(error.contains("line 53"))
        #expect(try Self.read(path, split: true) == whole)
    }
}
