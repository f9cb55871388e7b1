import Benchmark
import Foundation
import GRDB
import GRDBSQLite
import WorkoutEngine
import WorkoutModel
import WorkoutSimulator
import WorkoutStore

/// Store benchmarks. Every figure is a custom metric timed with ContinuousClock around the
/// measured call only; fixtures are built once (per process) in each benchmark's setup.
///
/// - save: one finished 200,000-sample workout (SyntheticRide through a session) saved with
///   `WorkoutStore.save(_:samples:)` into a fresh file each iteration, in rows/s; next to it the raw
///   SQLite floor: the same rows into a table of the same shape, one transaction, one prepared
///   statement, raw binds, WAL and synchronous=NORMAL like the store.
/// - query: `workoutIDs(matching:)` "a cycling activity with average heart rate > 150 bpm" over the
///   cached 100,000-workout corpus (`QueryCorpus`), latency in µs and the number of matches.
/// - sample queries on the saved 200,000-sample ride (11 h, five 1 Hz streams): one hour of heart
///   rate (a date-range query, 3,600 samples) and all samples of the workout, latency in ms.
/// - recovery: a 10-hour 1 Hz five-stream recording (180,000 samples, one commit per simulated
///   second) left unfinished, then per iteration: open the store and `recoverActiveSession`, in ms.

private let saveSeconds = 40_000
private let saveCount = saveSeconds * SyntheticRide.streams  // 200,000
private let recoverySeconds = 36_000  // 10 h
private let recoveryCount = recoverySeconds * SyntheticRide.streams  // 180,000

private let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("workout-store-bench").path

private func log(_ line: String) {
    FileHandle.standardError.write(Data(("[Store] " + line + "\n").utf8))
}

private func scratchPath(_ name: String) -> String {
    try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    return (scratch as NSString).appendingPathComponent("\(name)-\(UUID().uuidString).sqlite")
}

private func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

private struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: fixtures (built once, on first use in a setup hook)

private struct RideFixture: Sendable {
    let workout: Workout
    let samples: [QuantitySample]
}

/// 200,000 SyntheticRide samples (40,000 s × 5 streams) through a session: a real finished Workout.
private let rideFixture = Result { () throws -> RideFixture in
    let ride = SyntheticRide(seed: 42)
    let samples = ride.samples(0..<saveCount)
    let session = try WorkoutSession(
        configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(ride.start),
        options: BuilderOptions(identifiers: .seeded(11)))
    try session.start(at: ride.start)
    for offset in stride(from: 0, to: samples.count, by: 500) {
        _ = try session.builder.add(Array(samples[offset..<min(offset + 500, samples.count)]))
    }
    try session.stop(at: ride.date(saveSeconds))
    let workout = try session.builder.finishWorkout()
    guard workout.counters.accepted == saveCount else {
        throw BenchError("ride fixture: builder accepted \(workout.counters.accepted) of \(saveCount)")
    }
    return RideFixture(workout: workout, samples: samples)
}

private struct QueryFixture: Sendable {
    let store: WorkoutStore
    let counts: QueryCorpus.Counts
}

private let queryFixture = Result { () throws -> QueryFixture in
    let (store, counts) = try QueryCorpus.open(log: log)
    return QueryFixture(store: store, counts: counts)
}

/// A store holding the finished 200,000-sample ride (`rideFixture`, 11 h 7 min), for sample queries.
private let savedRideFixture = Result { () throws -> (WorkoutStore, UUID) in
    let fixture = try rideFixture.get()
    let store = try WorkoutStore(path: scratchPath("saved-ride"))
    try store.save(fixture.workout, samples: fixture.samples)
    return (store, fixture.workout.id)
}

/// A store holding the journal of an unfinished 10-hour recording (a crash after the last commit).
private let journalFixture = Result { () throws -> String in
    let path = scratchPath("journal")
    let ride = SyntheticRide(seed: 7)
    let clock = ManualClock(ride.start)
    let started = ContinuousClock.now
    do {
        let store = try WorkoutStore(path: path)
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(identifiers: .seeded(3)), commitInterval: 0)
        try recording.session.start(at: ride.start)
        for second in 0..<recoverySeconds {
            clock.set(ride.date(second))
            let base = second * SyntheticRide.streams
            _ = try recording.builder.add(ride.samples(base..<(base + SyntheticRide.streams)))
            try recording.commit()
        }
        let accepted = recording.builder.counters.accepted
        try recording.close()
        guard accepted == recoveryCount else {
            throw BenchError("journal fixture: builder accepted \(accepted) of \(recoveryCount)")
        }
    }
    let elapsed = seconds(ContinuousClock.now - started)
    log(
        "journal fixture: \(recoverySeconds) commits of \(SyntheticRide.streams) samples in "
            + String(format: "%.1f s (%.0f µs per commit)", elapsed, elapsed * 1e6 / Double(recoverySeconds)))
    return path
}

// MARK: raw SQLite baseline

private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// The store's `sample` table and its two indexes (Schema v1), nothing else.
private let sampleTableSQL = """
    CREATE TABLE sample(
        id INTEGER PRIMARY KEY, workout_id INTEGER NOT NULL, type TEXT NOT NULL,
        start REAL NOT NULL, "end" REAL NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL,
        canonical REAL NOT NULL, source_id INTEGER NOT NULL, metadata TEXT);
    CREATE INDEX sample_type_start ON sample(type, start);
    CREATE INDEX sample_workout ON sample(workout_id);
    """

/// Inserts `samples` in the open transaction with one prepared statement and raw binds.
private func rawInsert(_ db: Database, _ samples: [QuantitySample]) throws {
    let statement = try db.makeStatement(
        sql: """
            INSERT INTO sample(workout_id, type, start, "end", value, unit, canonical, source_id, metadata)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
    let handle = statement.sqliteStatement
    var sourceIDs: [SourceDevice: Int64] = [:]
    for sample in samples {
        let source: Int64
        if let id = sourceIDs[sample.source] {
            source = id
        } else {
            source = Int64(sourceIDs.count + 1)
            sourceIDs[sample.source] = source
        }
        sqlite3_bind_int64(handle, 1, 1)
        sqlite3_bind_text(handle, 2, sample.type.rawValue, -1, transient)
        sqlite3_bind_double(handle, 3, sample.start.timeIntervalSinceReferenceDate)
        sqlite3_bind_double(handle, 4, sample.end.timeIntervalSinceReferenceDate)
        sqlite3_bind_double(handle, 5, sample.quantity.value)
        sqlite3_bind_text(handle, 6, sample.quantity.unit.symbol, -1, transient)
        sqlite3_bind_double(handle, 7, sample.quantity.value)
        sqlite3_bind_int64(handle, 8, source)
        sqlite3_bind_null(handle, 9)
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else {
            throw BenchError("raw insert: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
        }
    }
}

// MARK: benchmarks

let benchmarks: @Sendable () -> Void = {
    let rowsPerSecond = BenchmarkMetric.custom("rows/s", polarity: .prefersLarger, useScalingFactor: false)
    let queryMicroseconds = BenchmarkMetric.custom("query (µs)", polarity: .prefersSmaller, useScalingFactor: false)
    let matches = BenchmarkMetric.custom("matches", polarity: .prefersLarger, useScalingFactor: false)
    let recoveryMilliseconds = BenchmarkMetric.custom(
        "open+recover (ms)", polarity: .prefersSmaller, useScalingFactor: false)
    let clock = ContinuousClock()

    let saveConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, rowsPerSecond], warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 10)

    Benchmark(
        "save 200k samples", configuration: saveConfiguration,
        closure: { benchmark in
            let fixture = try rideFixture.get()
            let path = scratchPath("save")
            defer { removeDatabase(path) }
            let elapsed: Duration
            do {
                let store = try WorkoutStore(path: path)
                benchmark.startMeasurement()
                let start = clock.now
                try store.save(fixture.workout, samples: fixture.samples)
                elapsed = clock.now - start
                benchmark.stopMeasurement()
            }
            benchmark.measurement(rowsPerSecond, Int(Double(fixture.samples.count) / seconds(elapsed)))
        }, setup: { _ = try rideFixture.get() })

    Benchmark(
        "raw SQLite bulk insert 200k (baseline)", configuration: saveConfiguration,
        closure: { benchmark in
            let fixture = try rideFixture.get()
            let path = scratchPath("raw")
            defer { removeDatabase(path) }
            let elapsed: Duration
            do {
                var configuration = Configuration()
                configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
                let pool = try DatabasePool(path: path, configuration: configuration)  // WAL, as the store
                try pool.write { db in try db.execute(sql: sampleTableSQL) }
                benchmark.startMeasurement()
                let start = clock.now
                try pool.write { db in try rawInsert(db, fixture.samples) }
                elapsed = clock.now - start
                benchmark.stopMeasurement()
                let rows = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sample") ?? 0 }
                guard rows == fixture.samples.count else { throw BenchError("raw insert: \(rows) rows") }
                try pool.close()
            }
            benchmark.measurement(rowsPerSecond, Int(Double(fixture.samples.count) / seconds(elapsed)))
        }, setup: { _ = try rideFixture.get() })

    let cyclingHeartRateAbove150 = WorkoutQuery(activities: [
        ActivityPredicate(
            activityType: .cycling,
            conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, .countPerMinute))])
    ])
    Benchmark(
        "query cycling avg HR > 150 over 100k workouts",
        configuration: Benchmark.Configuration(
            metrics: [.wallClock, queryMicroseconds, matches], warmupIterations: 3, maxDuration: .seconds(10),
            maxIterations: 200),
        closure: { benchmark in
            let store = try queryFixture.get().store
            benchmark.startMeasurement()
            let start = clock.now
            let ids = try store.workoutIDs(matching: cyclingHeartRateAbove150)
            let elapsed = clock.now - start
            benchmark.stopMeasurement()
            blackHole(ids)
            benchmark.measurement(queryMicroseconds, Int(seconds(elapsed) * 1e6))
            benchmark.measurement(matches, ids.count)
        },
        setup: {
            let fixture = try queryFixture.get()
            let ids = try fixture.store.workoutIDs(matching: cyclingHeartRateAbove150)
            log("query corpus: \(fixture.counts); cycling avg HR > 150 matches \(ids.count) workouts")
        })

    let queryMilliseconds = BenchmarkMetric.custom("query (ms)", polarity: .prefersSmaller, useScalingFactor: false)
    let sampleCount = BenchmarkMetric.custom("samples", polarity: .prefersLarger, useScalingFactor: false)
    let sampleQueryConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, queryMilliseconds, sampleCount], warmupIterations: 2, maxDuration: .seconds(10),
        maxIterations: 50)
    Benchmark(
        "sample query: 1 h of heart rate out of an 11-hour workout", configuration: sampleQueryConfiguration,
        closure: { benchmark in
            let (store, _) = try savedRideFixture.get()
            let ride = SyntheticRide(seed: 42)
            let query = SampleQuery(type: .heartRate, dates: DateRange(start: ride.date(18_000), end: ride.date(21_600)))
            benchmark.startMeasurement()
            let start = clock.now
            let samples = try store.samples(matching: query)
            let elapsed = clock.now - start
            benchmark.stopMeasurement()
            benchmark.measurement(queryMilliseconds, Int((seconds(elapsed) * 1e3).rounded()))
            benchmark.measurement(sampleCount, samples.count)
        }, setup: { _ = try savedRideFixture.get() })

    Benchmark(
        "sample query: all 200k samples of a workout", configuration: sampleQueryConfiguration,
        closure: { benchmark in
            let (store, id) = try savedRideFixture.get()
            benchmark.startMeasurement()
            let start = clock.now
            let samples = try store.samples(workout: id)
            let elapsed = clock.now - start
            benchmark.stopMeasurement()
            benchmark.measurement(queryMilliseconds, Int((seconds(elapsed) * 1e3).rounded()))
            benchmark.measurement(sampleCount, samples.count)
        }, setup: { _ = try savedRideFixture.get() },
        teardown: { if case .success(let (store, _)) = savedRideFixture { removeDatabase(store.path) } })

    Benchmark(
        "recover a 10-hour journal",
        configuration: Benchmark.Configuration(
            metrics: [.wallClock, recoveryMilliseconds], warmupIterations: 1, maxDuration: .seconds(20),
            maxIterations: 20),
        closure: { benchmark in
            let path = try journalFixture.get()
            let accepted: Int
            let elapsed: Duration
            do {
                benchmark.startMeasurement()
                let start = clock.now
                let store = try WorkoutStore(path: path)
                guard let recording = try store.recoverActiveSession(commitInterval: 0) else {
                    throw BenchError("recovery: no journaled session")
                }
                elapsed = clock.now - start
                benchmark.stopMeasurement()
                accepted = recording.builder.counters.accepted
                try recording.close()  // not finished: the journal stays for the next iteration
            }
            guard accepted == recoveryCount else {
                throw BenchError("recovery: builder accepted \(accepted) of \(recoveryCount)")
            }
            benchmark.measurement(recoveryMilliseconds, Int((seconds(elapsed) * 1e3).rounded()))
        },
        setup: { _ = try journalFixture.get() },
        teardown: { if case .success(let path) = journalFixture { removeDatabase(path) } })
}
