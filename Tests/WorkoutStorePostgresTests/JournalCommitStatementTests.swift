import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// A live session's journal commit, the statement PostgreSQL runs a thousand times a second under load, is parsed
/// once per connection (a named prepared statement) and then only bound and executed: parsing and analysing the
/// CALL of 34 arguments again on every commit cost about a fifth of PostgreSQL's work per commit (docs/live-load.md).
@Suite(
    "PostgreSQL journal commits: one prepared statement per connection",
    .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct JournalCommitStatementTests {
    private static let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")

    private static func pulses(_ range: Range<Int>) -> [QuantitySample] {
        range.map { QuantitySample(.heartRate, 120 + Double($0 % 40), at: t(Double($0)), source: strap) }
    }

    /// The commit statements prepared on the pool's one connection.
    private static func preparedCommits(_ database: PostgresWorkoutDatabase) throws -> Int64 {
        let rows = try database.transaction(readOnly: true) { statements in
            try statements.rows(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'CALL workout_journal_commit(%'")
        }
        guard case .int(let count) = rows.first?.first else { return -1 }
        return count
    }

    @Test("live commits on one connection prepare the commit once and run it by name after")
    func liveCommitsReuseOnePreparedStatement() throws {
        let url = try #require(TestPostgres.url)
        // One connection: every commit and the check below run on it.
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        let store = try database.store(athlete: UUID())
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        for second in 0..<3 {
            try recording.builder.add(Self.pulses((second * 10)..<(second * 10 + 10)))
            try recording.commit()
        }
        #expect(try Self.preparedCommits(database) == 1, "one prepared commit statement on the connection")
        let samples = try recording.committedSamples()
        #expect(samples.map(\.start) == Self.pulses(0..<30).map(\.start), "every sample once, in order")
    }

    @Test("a connection PostgreSQL ended takes its prepared statement with it: the next connection prepares its own")
    func aNewConnectionPreparesTheCommitAgain() throws {
        let database = try TestPostgres.ownDatabase("prepared")
        defer { TestPostgres.drop(database) }
        let (name, url, base) = database
        let pool = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        let store = try pool.store(athlete: UUID())
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add(Self.pulses(0..<10))
        try recording.commit()

        try TestPostgres.psql(base, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        // The first call after the termination may still meet the closed connection; a failed commit stays pending.
        try recording.builder.add(Self.pulses(10..<20))
        try? recording.commit()
        try recording.builder.add(Self.pulses(20..<30))
        try recording.commit()
        #expect(try Self.preparedCommits(pool) == 1, "the new connection prepared the commit")
        let samples = try recording.committedSamples()
        #expect(samples.map(\.start) == Self.pulses(0..<30).map(\.start), "every sample once, in order")
    }
}
