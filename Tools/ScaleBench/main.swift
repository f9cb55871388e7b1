import Foundation
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

// Times "any cycling activity with average heart rate > 150" through the PostgreSQL store, for one athlete and
// for a team of 50 (the server's coach query: one scoped store per athlete), on the database made by
// scripts/scale-generate.sql. Usage: workout-scale-bench URL IDS_FILE [RUNS]. Prints medians and p90 in ms.

let arguments = CommandLine.arguments
guard arguments.count >= 3, let ids = try? String(contentsOfFile: arguments[2], encoding: .utf8) else {
    FileHandle.standardError.write(Data("usage: workout-scale-bench postgres://… athlete-ids.txt [runs]\n".utf8))
    exit(2)
}
let runs = arguments.count > 3 ? Int(arguments[3]) ?? 200 : 200
let athletes = ids.split(separator: "\n").compactMap { UUID(uuidString: String($0)) }
guard athletes.count >= 50 else {
    FileHandle.standardError.write(Data("need at least 50 athletes, got \(athletes.count)\n".utf8))
    exit(2)
}
let database: PostgresWorkoutDatabase
var stores: [UUID: WorkoutStore] = [:]
do {
    database = try PostgresWorkoutDatabase(url: arguments[1], poolSize: 4)
    for athlete in athletes { stores[athlete] = try database.store(athlete: athlete) }
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
let query = WorkoutQuery(activities: [
    ActivityPredicate(
        activityType: .cycling,
        conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, .countPerMinute))])
])

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = (ContinuousClock.now - start).components
    return Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
}

func report(_ name: String, _ times: [Double], found: Int) {
    let sorted = times.sorted()
    let median = sorted[sorted.count / 2]
    let p90 = sorted[min(sorted.count - 1, sorted.count * 9 / 10)]
    print(String(format: "%@: median %.2f ms, p90 %.2f ms over %d runs (%d workouts found in the last run)", name, median, p90, times.count, found))
}

var generator = SystemRandomNumberGenerator()
do {
    // Warm the pool's connections and the caches once.
    for athlete in athletes.prefix(50) { _ = try stores[athlete]?.workoutIDs(matching: query) }
    var single: [Double] = []
    var found = 0
    for _ in 0..<runs {
        let athlete = athletes[Int.random(in: 0..<athletes.count, using: &generator)]
        single.append(try milliseconds { found = try stores[athlete]?.workoutIDs(matching: query).count ?? 0 })
    }
    report("one athlete, workout ids", single, found: found)
    var full: [Double] = []
    for _ in 0..<max(10, runs / 10) {
        let athlete = athletes[Int.random(in: 0..<athletes.count, using: &generator)]
        var limited = query
        limited.limit = 20
        full.append(try milliseconds { found = try stores[athlete]?.workouts(matching: limited).count ?? 0 })
    }
    report("one athlete, 20 newest workouts decoded", full, found: found)
    var team: [Double] = []
    var loop: [Double] = []
    for _ in 0..<max(10, runs / 5) {
        let first = Int.random(in: 0...(athletes.count - 50), using: &generator)
        let members = Array(athletes[first..<(first + 50)])
        let store = try database.teamStore(athletes: members)
        _ = try store.workoutIDs(matching: query)  // the connection's first look at these partitions
        team.append(try milliseconds { found = try store.workoutIDs(matching: query).count })
        loop.append(
            try milliseconds {
                for athlete in members { _ = try stores[athlete]?.workoutIDs(matching: query) }
            })
    }
    report("team of 50, workout ids (one team store)", team, found: found)
    report("team of 50, workout ids (50 athlete stores in turn)", loop, found: found)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
