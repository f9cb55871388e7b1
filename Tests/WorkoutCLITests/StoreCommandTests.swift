import Foundation
import Testing
import WorkoutModel
import WorkoutTestSupport

@Suite("workout list, show, query, delete")
struct StoreCommandTests {
    // MARK: list

    @Test func listPrintsOneLinePerWorkout() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["list", "--db", db])
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            #expect(result.lines.count == 2)
            let listed = Set(result.lines.compactMap { $0.split(separator: " ").first.map(String.init) })
            #expect(listed == Set(ids.map(\.uuidString)))
            for line in result.lines {
                #expect(line.contains("2026-05-09T06:13:20Z"))
                #expect(line.contains("cycling"))
                #expect(line.contains("0:05:00 elapsed"))
                #expect(line.contains("0:05:00 active"))
                #expect(line.contains(" km "))
                #expect(line.hasSuffix("bpm avg"))
                #expect(!line.contains("- bpm"))
            }
        }
    }

    @Test func listLimitKeepsTheNewest() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["list", "--db", db, "--limit", "1"])
            #expect(result.status == 0)
            #expect(result.lines.count == 1)
            #expect(ids.contains { result.stdout.hasPrefix($0.uuidString) })
        }
    }

    @Test func listJSONIsAnArrayOfWorkouts() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["list", "--db", db, "--json"])
            #expect(result.status == 0)
            let workouts = try decodeJSON([Workout].self, result.stdout)
            #expect(workouts.count == 2)
            #expect(Set(workouts.map(\.id)) == Set(ids))
            #expect(workouts.allSatisfy { $0.activities.count == 3 && $0.activityType == .cycling })
        }
    }

    @Test func listOfAnEmptyStorePrintsNothingOnStandardOutput() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cli-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("store.sqlite").path
        let text = try runCommand(["list", "--db", db])
        #expect(text.status == 0)
        #expect(text.stdout.isEmpty)
        #expect(text.stderr.contains("no workouts"))
        let json = try runCommand(["list", "--db", db, "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    // MARK: show

    @Test func showPrintsTheHeaderAndOneRowPerActivity() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["show", "--db", db, ids[0].uuidString])
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            let lines = result.lines
            #expect(lines.first == "workout     \(ids[0].uuidString)")
            #expect(lines.contains("type        cycling"))
            #expect(lines.contains("elapsed     0:05:00"))
            let header = try #require(lines.firstIndex { $0.hasPrefix("#") })
            #expect(lines[header].split(separator: " ", omittingEmptySubsequences: true).first == "#")
            let rows = lines[(header + 1)...].map { $0.split(separator: " ").map(String.init) }
            #expect(rows.count == 4)  // three activities and the totals
            let activities = rows.filter { $0.first.flatMap { Int($0) } != nil }
            #expect(activities.map { $0[0] } == ["1", "2", "3"])
            #expect(activities.map { $0[1] } == ["cycling", "cycling", "cycling"])
            #expect(activities.map { $0[2] } == ["0:00:00", "0:02:00", "0:04:00"])  // offset
            #expect(activities.map { $0[3] } == ["0:02:00", "0:02:00", "0:01:00"])  // elapsed
            #expect(activities.map { $0[4] } == ["0:02:00", "0:02:00", "0:01:00"])  // active
            for row in activities {
                #expect(row[6] == "km")
                #expect(row[8] == "bpm" && row[10] == "bpm")
                #expect(row[12] == "km/h")
                #expect(row[14] == "W")
            }
            let total = try #require(rows.last)
            #expect(total.first == "total")
            #expect(Array(total.dropFirst().prefix(2)) == ["0:05:00", "0:05:00"])
        }
    }

    @Test func showJSONIsTheWorkout() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["show", "--db", db, ids[1].uuidString.lowercased(), "--json"])
            #expect(result.status == 0)
            let workout = try decodeJSON(Workout.self, result.stdout)
            #expect(workout.id == ids[1])
            #expect(workout.activities.count == 3)
            #expect(workout.statistics[.heartRate]?.average != nil)
        }
    }

    @Test func showOfAnUnknownIDFailsNamingIt() throws {
        try withTwoRides { db, _ in
            let unknown = UUID()
            let result = try runCommand(["show", "--db", db, unknown.uuidString])
            #expect(result.status != 0)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(unknown.uuidString))
            #expect(result.stderr.trimmingCharacters(in: .newlines).split(separator: "\n").count == 1)
        }
    }

    @Test func showOfAMalformedIDIsAValidationError() throws {
        try withTwoRides { db, _ in
            let result = try runCommand(["show", "--db", db, "not-a-uuid"])
            #expect(result.status != 0)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("'not-a-uuid' is not a workout id"))
        }
    }

    // MARK: query

    @Test func queryByActivityHeartRate() throws {
        try withTwoRides { db, ids in
            let both = try runCommand(["query", "--db", db, "--activity", "cycling", "--avg-heart-rate", ">0"])
            #expect(both.status == 0)
            #expect(both.lines.count == 2)
            #expect(
                Set(both.lines.compactMap { $0.split(separator: " ").first.map(String.init) })
                    == Set(ids.map(\.uuidString)))

            let none = try runCommand(["query", "--db", db, "--avg-heart-rate", ">500"])
            #expect(none.status == 0)
            #expect(none.stdout.isEmpty)
            #expect(none.stderr.contains("no workouts match"))

            let wrongSport = try runCommand(["query", "--db", db, "--activity", "running", "--avg-heart-rate", ">0"])
            #expect(wrongSport.status == 0)
            #expect(wrongSport.lines.isEmpty)

            let maximum = try runCommand(["query", "--db", db, "--max-heart-rate", ">=1", "--min-heart-rate", "<=300"])
            #expect(maximum.lines.count == 2)
        }
    }

    @Test func queryByPowerMergesCyclingAndRunningPower() throws {
        try withTwoRides { db, _ in
            let both = try runCommand(["query", "--db", db, "--avg-power", ">0"])
            #expect(both.status == 0)
            #expect(both.lines.count == 2)
            let limited = try runCommand(["query", "--db", db, "--avg-power", ">0", "--limit", "1"])
            #expect(limited.lines.count == 1)
            let none = try runCommand(["query", "--db", db, "--activity", "cycling", "--avg-power", ">5000"])
            #expect(none.lines.isEmpty)
        }
    }

    @Test func queryByTypeAndDuration() throws {
        try withTwoRides { db, _ in
            let tooShort = try runCommand(["query", "--db", db, "--min-duration", "10m"])
            #expect(tooShort.status == 0)
            #expect(tooShort.lines.isEmpty)
            let longEnough = try runCommand(["query", "--db", db, "--type", "cycling", "--min-duration", "4m"])
            #expect(longEnough.lines.count == 2)
            let short = try runCommand(["query", "--db", db, "--max-duration", "0:10:00"])
            #expect(short.lines.count == 2)
            let tooLong = try runCommand(["query", "--db", db, "--max-duration", "290"])
            #expect(tooLong.lines.isEmpty)
            let running = try runCommand(["query", "--db", db, "--type", "running"])
            #expect(running.status == 0)
            #expect(running.lines.isEmpty)
        }
    }

    @Test func queryByDates() throws {
        try withTwoRides { db, _ in
            let listed = try decodeJSON([Workout].self, try runCommand(["list", "--db", db, "--json"]).stdout)
            let start = try #require(listed.first?.start)
            let iso = { (date: Date) in date.formatted(Date.ISO8601FormatStyle()) }
            let day = String(iso(start).prefix(10))
            func count(_ arguments: [String]) throws -> Int {
                let result = try runCommand(["query", "--db", db] + arguments)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                return result.lines.count
            }
            #expect(try count(["--from", iso(start)]) == 2)  // inclusive
            #expect(try count(["--from", iso(start.addingTimeInterval(1))]) == 0)
            #expect(try count(["--to", iso(start)]) == 0)  // exclusive
            #expect(try count(["--to", iso(start.addingTimeInterval(1))]) == 2)
            #expect(try count(["--from", day, "--to", day]) == 2)  // a bare date is the whole day
            #expect(try count(["--to", day]) == 2)
            #expect(try count(["--from", iso(start.addingTimeInterval(86400)).prefix(10).description]) == 0)
        }
    }

    @Test func queryJSONIsAnArray() throws {
        try withTwoRides { db, ids in
            let some = try runCommand([
                "query", "--db", db, "--activity", "cycling", "--avg-heart-rate", ">0", "--json",
            ])
            #expect(Set(try decodeJSON([Workout].self, some.stdout).map(\.id)) == Set(ids))
            let none = try runCommand(["query", "--db", db, "--avg-heart-rate", ">500", "--json"])
            #expect(try decodeJSON([Workout].self, none.stdout).isEmpty)
        }
    }

    @Test(arguments: [
        (["--avg-heart-rate", "150"], "is not a comparison"), (["--avg-power", ">lots"], "is not a comparison"),
        (["--min-duration", "soon"], "is not a duration"), (["--from", "2026-02-30"], "is not a date"),
        (["--type", "rowing"], "unknown type 'rowing'"), (["--activity", "rowing"], "unknown type 'rowing'"),
        (["--limit", "0"], "--limit must be at least 1"),
    ])
    func badQueryValuesAreValidationErrors(arguments: [String], message: String) throws {
        try withTwoRides { db, _ in
            let result = try runCommand(["query", "--db", db] + arguments)
            #expect(result.status != 0)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(message))
        }
    }

    // MARK: delete

    @Test func deleteRemovesTheWorkout() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["delete", "--db", db, ids[0].uuidString])
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix("deleted \(ids[0].uuidString)"))
            let listed = try runCommand(["list", "--db", db])
            #expect(listed.lines.count == 1)
            #expect(listed.lines.first?.hasPrefix(ids[1].uuidString) == true)
            let shown = try runCommand(["show", "--db", db, ids[0].uuidString])
            #expect(shown.status != 0)
            let again = try runCommand(["delete", "--db", db, ids[0].uuidString])
            #expect(again.status != 0)
            #expect(again.stderr.contains(ids[0].uuidString))
        }
    }

    @Test func deleteJSONNamesTheDeletedID() throws {
        try withTwoRides { db, ids in
            let result = try runCommand(["delete", "--db", db, ids[1].uuidString, "--json"])
            #expect(result.status == 0)
            #expect(try decodeJSON([String: UUID].self, result.stdout) == ["deleted": ids[1]])
            let listed = try decodeJSON([Workout].self, try runCommand(["list", "--db", db, "--json"]).stdout)
            #expect(listed.map(\.id) == [ids[0]])
        }
    }

    @Test func deleteOfAnUnknownOrMalformedIDFails() throws {
        try withTwoRides { db, _ in
            let unknown = UUID()
            let missing = try runCommand(["delete", "--db", db, unknown.uuidString])
            #expect(missing.status != 0)
            #expect(missing.stdout.isEmpty)
            #expect(missing.stderr.contains("no workout with id \(unknown.uuidString)"))
            let malformed = try runCommand(["delete", "--db", db, "12345"])
            #expect(malformed.status != 0)
            #expect(malformed.stderr.contains("'12345' is not a workout id"))
            #expect(try runCommand(["list", "--db", db]).lines.count == 2)
        }
    }

    @Test func aFileThatIsNotAStoreIsAClearError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let notADatabase = folder.appendingPathComponent("notes.txt")
        try Data(repeating: 0x41, count: 4096).write(to: notADatabase)
        let result = try runCommand(["list", "--db", notADatabase.path])
        #expect(result.status != 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("is not a SQLite database"))
    }
}
