import Foundation
import Testing
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutImport
import WorkoutReplay
import WorkoutReport
import WorkoutStore

/// A report costs what its content costs, not what its time span costs: the time axis has a bounded number of
/// grid lines and labels whatever the span (issue 27: an 86-byte FIT file spanning 136 years gave a 24 MB report,
/// a grid line every 6 hours).
@Suite("Report size by content, not span")
struct ReportSpanTests {
    /// A valid FIT activity of two heart-rate records, the first at FIT time `first` and the last at `last`.
    static func twoRecords(first: UInt32, last: UInt32) -> [UInt8] {
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 7), .uint32(4, first)])
        writer.write(20, [.uint32(253, first), .uint8(3, 120)])
        writer.write(20, [.uint32(253, last), .uint8(3, 130)])
        return writer.finish()
    }

    /// The report of `bytes` imported into a new store in `folder`.
    static func report(_ bytes: [UInt8], name: String, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("\(name).fit").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let store = try WorkoutStore(path: folder.appendingPathComponent("\(name).sqlite").path)
        let result = try FileImport.run(path: path, into: store)
        return WorkoutReport.html(try ReportInput.load(id: result.workout.id, from: store))
    }

    /// The number of grid lines on the time axis of a report.
    static func timeGridLines(_ html: String) -> Int {
        guard let axis = html.range(of: "<g class=\"axis x-axis\">"),
            let end = html.range(of: "</g>", range: axis.upperBound..<html.endIndex)
        else { return -1 }
        return html[axis.upperBound..<end.lowerBound].components(separatedBy: "<line class=\"grid\"").count - 1
    }

    @Test func aFileSpanning136YearsGivesAReportNoLargerThanAnHoursOne() throws {
        try withTemporaryFolder { folder in
            // FIT times are seconds since 1989-12-31 in 32 bits: 0x10000000 (1998) to 0xFFFFFFFE (2126), 136 years.
            let long = Self.twoRecords(first: 0x1000_0000, last: 0xFFFF_FFFE)
            let hour = Self.twoRecords(first: 0x4000_0000, last: 0x4000_0000 + 3600)
            #expect(long.count < 100, "the file is \(long.count) bytes")
            let longReport = try Self.report(long, name: "long", in: folder)
            let hourReport = try Self.report(hour, name: "hour", in: folder)
            #expect(
                longReport.utf8.count <= hourReport.utf8.count + 2048,
                "136 years: \(longReport.utf8.count) bytes, one hour: \(hourReport.utf8.count) bytes")
            let lines = Self.timeGridLines(longReport)
            #expect(lines >= 2 && lines <= 11, "\(lines) grid lines on the time axis")
        }
    }

    @Test(arguments: [600.0, 3600, 86400, 30 * 86400, 365.25 * 86400, 136 * 365.25 * 86400, 1e12] as [Double])
    func timeAxisTicksAreBoundedByTheChartsWidth(span: TimeInterval) throws {
        try withTemporaryFolder { _ in
            let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
            let strap = SourceDevice(name: "Strap")
            let workout = Workout(
                id: UUID(), configuration: WorkoutConfiguration(activityType: .running), start: start,
                end: start.addingTimeInterval(span), duration: span, activities: [], events: [], metadata: [:],
                statistics: [:], counters: IngestCounters())
            let samples = [0, span].map { QuantitySample(.heartRate, 120, at: start.addingTimeInterval($0), source: strap) }
            for columns in [200, 1000] {
                var options = ReportOptions()
                options.columns = columns
                let html = WorkoutReport.html(ReportInput(workout: workout, samples: samples, route: []), options: options)
                let lines = Self.timeGridLines(html)
                // At least 80 pixels between ticks: over 200 columns at most 3 lines, over 1000 at most 11.
                #expect(lines >= 1 && lines <= columns / 80 + 1, "span \(span) s over \(columns) columns: \(lines) lines")
            }
        }
    }
}
