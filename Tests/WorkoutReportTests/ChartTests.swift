import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReport

/// The report's drawings on inputs the replays and files do not produce: sparse readings, a lone
/// reading, and values at the edge of what the engine accepts.
@Suite("Report charts")
struct ReportChartTests {
    let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    let strap = SourceDevice(name: "Strap")

    func workout(seconds: TimeInterval, type: WorkoutActivityType = .running, events: [WorkoutEvent] = []) -> Workout {
        Workout(
            id: UUID(), configuration: WorkoutConfiguration(activityType: type), start: start,
            end: start.addingTimeInterval(seconds), duration: seconds, activities: [], events: events, metadata: [:],
            statistics: [:], counters: IngestCounters())
    }

    /// The `d` of the heart-rate panel's mean line.
    func heartRateLine(_ svg: String) throws -> String {
        let panel = try #require(svg.range(of: "data-series=\"heartRate\""), "no heart-rate panel")
        let line = try #require(svg.range(of: "<path class=\"line\" d=\"", range: panel.upperBound..<svg.endIndex))
        let end = try #require(svg.range(of: "\"", range: line.upperBound..<svg.endIndex))
        return String(svg[line.upperBound..<end.lowerBound])
    }

    @Test func readingsEveryFewSecondsDrawOneUnbrokenLine() throws {
        // 30 minutes, a reading every 5 s (a watch's optical sensor): 1.8 s per pixel column, so
        // neighbouring readings are 2 to 3 columns apart, yet nothing is missing.
        let samples = stride(from: 0.0, through: 1800, by: 5).map {
            QuantitySample(.heartRate, 120 + $0 / 60, at: start.addingTimeInterval($0), source: strap)
        }
        let line = try heartRateLine(
            WorkoutReport.timelineSVG(ReportInput(workout: workout(seconds: 1800), samples: samples, route: [])))
        #expect(line.filter { $0 == "M" }.count == 1, "the line is broken into pieces: \(line.prefix(200))")
        #expect(line.filter { $0 == "L" }.count == samples.count - 1)
    }

    @Test func aLoneReadingIsDrawn() throws {
        let samples = [QuantitySample(.heartRate, 150, at: start.addingTimeInterval(600), source: strap)]
        let line = try heartRateLine(
            WorkoutReport.timelineSVG(ReportInput(workout: workout(seconds: 3600), samples: samples, route: [])))
        // A path of one point draws nothing.
        #expect(line.contains("L"), "a lone reading is an invisible path: \(line)")
    }

    @Test func strokeCountsTheEngineAcceptsDrawWithoutACrash() throws {
        // The engine takes any whole number >= 0 as a length's strokes.
        func length(_ offset: TimeInterval, _ kind: LengthKind, strokes: Int) -> WorkoutEvent {
            WorkoutEvent(
                type: .lap, start: start.addingTimeInterval(offset), duration: 30,
                metadata: [
                    SwimMetadataKey.lengthKind: .string(kind.rawValue), SwimMetadataKey.strokes: .int(strokes),
                ])
        }
        let events = [length(0, .active, strokes: 20), length(30, .drill, strokes: Int.max)]
        let input = ReportInput(
            workout: workout(seconds: 60, type: .swimming, events: events), samples: [], route: [])
        let html = WorkoutReport.html(input)
        #expect(html.contains("id=\"lengths\""))
    }
}
