import ArgumentParser
import Foundation
import Testing
import WorkoutModel
import WorkoutStore

@testable import WorkoutCLI

@Suite("query options")
struct QueryOptionTests {
    @Test func heartRateConditionsAndActivityFormOnePredicate() throws {
        let command = try QueryCommand.parse([
            "--activity", "cycling", "--avg-heart-rate", ">150", "--max-heart-rate", "<=190", "--min-heart-rate",
            "!=60", "--avg-power", ">=200",
        ])
        let queries = command.queries
        #expect(queries.count == 1)
        let query = try #require(queries.first)
        #expect(query.activityType == nil)
        #expect(
            query.activities == [
                ActivityPredicate(
                    activityType: .cycling,
                    conditions: [
                        StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, .countPerMinute)),
                        StatisticCondition(.heartRate, .maximum, .lessThanOrEqual, Quantity(190, .countPerMinute)),
                        StatisticCondition(.heartRate, .minimum, .notEqual, Quantity(60, .countPerMinute)),
                        StatisticCondition(.cyclingPower, .average, .greaterThanOrEqual, Quantity(200, .watt)),
                    ])
            ])
    }

    @Test func powerForRunningIsRunningPower() throws {
        let command = try QueryCommand.parse(["--activity", "running", "--avg-power", ">300"])
        #expect(
            command.queries.map(\.activities) == [
                [
                    ActivityPredicate(
                        activityType: .running,
                        conditions: [StatisticCondition(.runningPower, .average, .greaterThan, Quantity(300, .watt))])
                ]
            ])
    }

    @Test func powerWithoutAnActivityTypeAsksForEitherPower() throws {
        let command = try QueryCommand.parse(["--avg-power", ">300", "--avg-heart-rate", "<170"])
        let hr = StatisticCondition(.heartRate, .average, .lessThan, Quantity(170, .countPerMinute))
        #expect(
            command.queries.map(\.activities) == [
                [
                    ActivityPredicate(
                        conditions: [
                            hr, StatisticCondition(.cyclingPower, .average, .greaterThan, Quantity(300, .watt)),
                        ])
                ],
                [
                    ActivityPredicate(
                        conditions: [
                            hr, StatisticCondition(.runningPower, .average, .greaterThan, Quantity(300, .watt)),
                        ])
                ],
            ])
    }

    @Test func typeDurationsDatesAndLimitGoToTheWorkoutQuery() throws {
        let command = try QueryCommand.parse([
            "--type", "running", "--min-duration", "30m", "--max-duration", "1:30:00", "--from", "2026-05-01",
            "--to", "2026-05-09", "--limit", "5",
        ])
        let query = try #require(command.queries.first)
        #expect(command.queries.count == 1)
        #expect(query.activityType == .running)
        #expect(query.activities.isEmpty)
        #expect(query.minimumDuration == 1800)
        #expect(query.maximumDuration == 5400)
        #expect(query.dates.start == Date(timeIntervalSince1970: 1_777_593_600))  // 2026-05-01T00:00:00Z
        #expect(query.dates.end == ValueParserTests.may9.addingTimeInterval(86400))  // the whole of May 9
        #expect(query.dates.options == .strictStartDate)
        #expect(query.limit == 5)
        #expect(!query.ascending)
    }

    @Test func activityAloneIsAPredicateWithoutConditions() throws {
        let command = try QueryCommand.parse(["--activity", "swimming"])
        #expect(command.queries.map(\.activities) == [[ActivityPredicate(activityType: .swimming)]])
    }

    @Test(arguments: [
        ["--limit", "0"], ["--min-duration", "1h", "--max-duration", "30m"],
        ["--from", "2026-05-10", "--to", "2026-05-09"],
        ["--from", "2026-05-09T10:00:00Z", "--to", "2026-05-09T10:00:00Z"],
    ])
    func contradictoryOptionsAreRejected(arguments: [String]) {
        #expect(throws: (any Error).self) {
            _ = try QueryCommand.parse(arguments)
        }
    }

    @Test func aBareDateRangeOfOneDayIsAccepted() throws {
        let command = try QueryCommand.parse(["--from", "2026-05-09", "--to", "2026-05-09"])
        let query = try #require(command.queries.first)
        #expect(query.dates.start == ValueParserTests.may9)
        #expect(query.dates.end == ValueParserTests.may9.addingTimeInterval(86400))
    }

    @Test func mergedResultsAreNewestFirstWithoutRepeatsAndLimited() {
        func workout(_ type: WorkoutActivityType, startingAt seconds: TimeInterval) -> Workout {
            let start = Date(timeIntervalSince1970: seconds)
            return Workout(
                id: UUID(), configuration: WorkoutConfiguration(activityType: type), start: start,
                end: start.addingTimeInterval(60), duration: 60, activities: [], events: [], metadata: [:],
                statistics: [:], counters: IngestCounters())
        }
        let ride = workout(.cycling, startingAt: 300)
        let run = workout(.running, startingAt: 200)
        let olderRide = workout(.cycling, startingAt: 100)
        let tie = workout(.running, startingAt: 300)
        #expect(QueryCommand.merge([[ride, olderRide], [run, ride]], limit: nil) == [ride, run, olderRide])
        #expect(QueryCommand.merge([[ride, olderRide], [run]], limit: 2) == [ride, run])
        #expect(QueryCommand.merge([[ride], [tie]], limit: nil) == [ride, tie])
    }
}
