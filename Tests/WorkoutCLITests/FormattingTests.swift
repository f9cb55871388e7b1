import Foundation
import Testing
import WorkoutModel

@testable import WorkoutCLI

@Suite("output formatting")
struct FormattingTests {
    @Test(
        arguments: [
            (300.0, "0:05:00"), (0, "0:00:00"), (59.6, "0:01:00"), (3725.4, "1:02:05"), (93789, "26:03:09"),
            (-5, "-0:00:05"),
        ])
    func durationsAreHoursMinutesSeconds(seconds: TimeInterval, text: String) {
        #expect(Format.duration(seconds) == text)
    }

    @Test func unknownValuesAreADash() {
        #expect(Format.duration(nil) == "-")
        #expect(Format.duration(.nan) == "-")
        #expect(Format.kilometres(nil) == "-")
        #expect(Format.whole(nil, "bpm") == "-")
        #expect(Format.speedOrPace(meters: nil, seconds: 60, type: .running) == "-")
        #expect(Format.speedOrPace(meters: 1000, seconds: 0, type: .cycling) == "-")
    }

    @Test func timestampsAreUTCToTheSecond() {
        #expect(Format.timestamp(Date(timeIntervalSince1970: 1_778_307_200)) == "2026-05-09T06:13:20Z")
    }

    @Test func numbersWithUnits() {
        #expect(Format.kilometres(3124.6) == "3.12 km")
        #expect(Format.kilometres(0) == "0.00 km")
        #expect(Format.whole(150.6, "bpm") == "151 bpm")
    }

    @Test func paceForRunningAndWalkingSpeedForCyclingPer100mForSwimming() {
        #expect(Format.speedOrPace(meters: 5000, seconds: 1500, type: .running) == "5:00 /km")
        #expect(Format.speedOrPace(meters: 1000, seconds: 611.6, type: .walking) == "10:12 /km")
        #expect(Format.speedOrPace(meters: 30000, seconds: 3600, type: .cycling) == "30.0 km/h")
        #expect(Format.speedOrPace(meters: 400, seconds: 420, type: .swimming) == "1:45 /100m")
    }

    @Test func tablesAlignColumns() {
        let lines = Format.table(
            [["#", "TYPE", "KM"], ["1", "cycling", "12.5"], ["10", "run", "3"]], rightAligned: [0, 2])
        #expect(lines == [" #  TYPE       KM", " 1  cycling  12.5", "10  run         3"])
    }

    @Test func powerFollowsTheSport() {
        let start = Date(timeIntervalSince1970: 0)
        let both: [QuantityType: Statistics] = [
            .cyclingPower: Statistics(
                quantityType: .cyclingPower, start: start, end: start, average: Quantity(200, .watt), duration: 1),
            .runningPower: Statistics(
                quantityType: .runningPower, start: start, end: start, average: Quantity(250, .watt), duration: 1),
        ]
        #expect(Format.powerType(for: .cycling, in: both) == .cyclingPower)
        #expect(Format.powerType(for: .running, in: both) == .runningPower)
        #expect(Format.powerType(for: .swimBikeRun, in: both) == nil)
        #expect(Format.powerType(for: .other, in: both.filter { $0.key == .runningPower }) == .runningPower)
    }

    @Test func distanceSumsTheDistanceTypes() {
        let start = Date(timeIntervalSince1970: 0)
        func sum(_ type: QuantityType, _ value: Double, _ unit: QuantityUnit) -> Statistics {
            Statistics(quantityType: type, start: start, end: start, sum: Quantity(value, unit), duration: 1)
        }
        let statistics: [QuantityType: Statistics] = [
            .distanceSwimming: sum(.distanceSwimming, 1500, .meter),
            .distanceCycling: sum(.distanceCycling, 40, .kilometer),
            .distanceWalkingRunning: sum(.distanceWalkingRunning, 10000, .meter),
            .activeEnergyBurned: sum(.activeEnergyBurned, 900, .kilocalorie),
        ]
        #expect(statistics.distance == 51500)
        #expect([QuantityType: Statistics]().distance == nil)
    }

    @Test func jsonHasSortedKeysAndISODatesWithMilliseconds() throws {
        struct Sample: Encodable {
            var zulu = 1
            var alpha = Date(timeIntervalSince1970: 1_778_307_200)
            var beta = Date(timeIntervalSince1970: 1_420_445_121.687)
            var unit = "count/min"
            var metadata: Metadata = ["Strokes": .int(28), "ImportDevice": .string("Garmin Forerunner 920XT")]
        }
        #expect(
            try Format.json(Sample())
                == #"{"alpha":"2026-05-09T06:13:20.000Z","beta":"2015-01-05T08:05:21.687Z","metadata":"#
                + #"{"ImportDevice":"Garmin Forerunner 920XT","Strokes":28},"unit":"count/min","zulu":1}"#)
    }

    @Test func jsonDatesAreRoundedToTheNearestMillisecondNotTruncated() {
        // 442 051 568.687 s after 2001-01-01 is stored as …568.68699998…: truncating writes .686.
        #expect(
            Format.jsonTimestamp(Date(timeIntervalSinceReferenceDate: 442_051_568.687)) == "2015-01-04T08:06:08.687Z")
        #expect(
            Format.jsonTimestamp(Date(timeIntervalSinceReferenceDate: 442_051_568.0004)) == "2015-01-04T08:06:08.000Z")
        // Half a millisecond before the next second rounds up into it.
        #expect(
            Format.jsonTimestamp(Date(timeIntervalSinceReferenceDate: 442_051_568.9996)) == "2015-01-04T08:06:09.000Z")
        #expect(Format.jsonTimestamp(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }

    @Test func aGarminProductNumberStoredByAnEarlierImportIsNamedInTheOutputs() {
        let workout = Workout(
            id: UUID(), configuration: WorkoutConfiguration(activityType: .swimming),
            start: Date(timeIntervalSince1970: 0),
            end: Date(timeIntervalSince1970: 60), duration: 60, activities: [], events: [],
            metadata: ["ImportDevice": .string("Garmin product 1765")], statistics: [:], counters: IngestCounters())
        let presented = Format.presented(workout)
        #expect(presented.metadata["ImportDevice"] == .string("Garmin Forerunner 920XT"))
        #expect(presented.metadata["ImportProduct"] == .int(1765))
        #expect(
            Format.workoutDetail(workout).contains { $0.hasPrefix("device") && $0.hasSuffix("Garmin Forerunner 920XT") }
        )
        // Anything else is shown as stored.
        var other = workout
        other.metadata["ImportDevice"] = .string("Wahoo ELEMNT")
        #expect(Format.presented(other) == other)
    }
}
