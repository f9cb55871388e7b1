import ArgumentParser
import Foundation
import Testing
import WorkoutModel
import WorkoutStore

@testable import WorkoutCLI

@Suite("value parsers")
struct ValueParserTests {
    @Test(
        arguments: [
            ("90s", 90.0), ("30m", 1800), ("1h30m", 5400), ("1h30m15s", 5415), ("2h", 7200), ("1.5h", 5400),
            ("1h 30m", 5400), ("1:30:00", 5400), ("30:00", 1800), ("0:45", 45), ("1800", 1800), ("90.5", 90.5),
            ("  10M ", 600), ("0", 0),
        ])
    func durationsParse(text: String, seconds: TimeInterval) throws {
        #expect(try Parse.duration(text) == seconds)
    }

    @Test(arguments: [
        "", "abc", "30x", "m", "1h30", "30m1h", "1m1m", "1:5", "1:60", "1:2:3:4", "-5", "1.2.3s", "inf", "nan",
    ])
    func badDurationsSayWhatIsAccepted(text: String) {
        let error = #expect(throws: ValidationError.self) {
            _ = try Parse.duration(text)
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("is not a duration") && message.contains("1h30m"))
    }

    @Test(
        arguments: [
            (">150", Comparison.greaterThan, 150.0), (">=150", .greaterThanOrEqual, 150), ("<120", .lessThan, 120),
            ("<=120", .lessThanOrEqual, 120), ("=140", .equal, 140), ("==140", .equal, 140),
            ("!=140", .notEqual, 140), ("> 150.5", .greaterThan, 150.5), (" >= 0 ", .greaterThanOrEqual, 0),
            ("<-3", .lessThan, -3),
        ])
    func comparisonsParse(text: String, comparison: Comparison, value: Double) throws {
        #expect(try Parse.comparison(text) == ComparisonExpression(comparison: comparison, value: value))
    }

    @Test(arguments: ["150", "", ">", ">abc", "=>150", "<>150", ">150bpm", ">inf", ">nan", "~150", ">1e3"])
    func badComparisonsSayWhatIsAccepted(text: String) {
        let error = #expect(throws: ValidationError.self) {
            _ = try Parse.comparison(text)
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("is not a comparison") && message.contains(">="))
    }

    /// 2026-05-09T00:00:00Z.
    static let may9 = Date(timeIntervalSince1970: 1_778_284_800)

    @Test func bareDatesAreWholeUTCDays() throws {
        let day = try Parse.date("2026-05-09")
        #expect(day.date == Self.may9)
        #expect(day.isWholeDay)
        #expect(day.rangeStart == Self.may9)
        #expect(day.rangeEnd == Self.may9.addingTimeInterval(86400))
    }

    @Test(
        arguments: [
            ("2026-05-09T06:13:20Z", 22400.0), ("2026-05-09T06:13:20", 22400),
            ("2026-05-09 06:13:20z", 22400), ("2026-05-09T06:13Z", 22380), ("2026-05-09T06:13:20.25Z", 22400.25),
            ("2026-05-09T08:13:20+02:00", 22400), ("2026-05-09T01:13:20-0500", 22400),
        ])
    func instantsParse(text: String, secondsAfterMidnight: TimeInterval) throws {
        let instant = try Parse.date(text)
        #expect(instant.date == Self.may9.addingTimeInterval(secondsAfterMidnight))
        #expect(!instant.isWholeDay)
        #expect(instant.rangeEnd == instant.date)
    }

    @Test(
        arguments: [
            "", "yesterday", "2026-5-9", "2026-13-01", "2026-02-30", "2026-05-09T25:00:00Z", "2026-05-09T06:61Z",
            "2026-05-09T06:13:20+2", "09/05/2026", "2026-05-09Z",
        ])
    func badDatesSayWhatIsAccepted(text: String) {
        let error = #expect(throws: ValidationError.self) {
            _ = try Parse.date(text)
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("is not a date") && message.contains("YYYY-MM-DD"))
    }

    @Test(
        arguments: [
            ("cycling", WorkoutActivityType.cycling), ("Running", .running), ("swimBikeRun", .swimBikeRun),
            ("swim-bike-run", .swimBikeRun), ("triathlon", .swimBikeRun), ("run", .running), ("swim", .swimming),
            ("WALKING", .walking),
        ])
    func typeNamesParse(text: String, type: WorkoutActivityType) throws {
        #expect(try Parse.activityType(text) == type)
    }

    @Test func unknownTypeNamesListTheTypes() {
        let error = #expect(throws: ValidationError.self) {
            _ = try Parse.activityType("rowing")
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("unknown type 'rowing'") && message.contains("swimBikeRun"))
    }

    @Test func workoutIDsAreUUIDsInAnyCase() throws {
        let id = try #require(UUID(uuidString: "C15C0289-EC2D-4A91-A7EC-8E65A18DEBBE"))
        #expect(try Parse.workoutID("c15c0289-ec2d-4a91-a7ec-8e65a18debbe") == id)
        let error = #expect(throws: ValidationError.self) {
            _ = try Parse.workoutID("C15C0289")
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("'C15C0289' is not a workout id"))
    }
}
