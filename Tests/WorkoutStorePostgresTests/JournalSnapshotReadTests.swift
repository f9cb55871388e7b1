import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// A journal read back (recovery) sees each commit wholly or not at all, however its statements interleave with
/// a commit: its session, changes and chunks are read in one snapshot (REPEATABLE READ).
@Suite(
    "PostgreSQL journal read-back: one snapshot",
    .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct JournalSnapshotReadTests {
    /// Starts psql holding an ACCESS EXCLUSIVE lock on `table` of `url` (until `release`), once it is granted.
    ///
    /// The lock is held until `release` ends its backend, however long that takes (an hour at most): a lock that
    /// ended on its own (it once ended after 120 s) let a read that started late under the whole test command go
    /// through unheld, and the test waited for a wait that could no longer come.
    /// A psql that ends before its lock is granted (refused a connection while every suite beside this one holds
    /// the test server's) is started again, up to three times; the error names what psql said. The wait is long
    /// (300 s): under the whole test command a poll can wait its turn on the cooperative pool for minutes.
    static func lock(_ table: String, url: String) async throws -> Process {
        var said = ""
        for _ in 0..<3 {
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            holder.arguments = [
                "psql", url, "-v", "ON_ERROR_STOP=1", "-Atc",
                "BEGIN; LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600); COMMIT;",
            ]
            let errors = Pipe()
            holder.standardOutput = FileHandle.nullDevice
            holder.standardError = errors
            try holder.run()
            let granted = await waitUntil(300, every: .milliseconds(20)) {
                (try? TestPostgres.psql(url, Self.locks(table, granted: true))) == "1" || !holder.isRunning
            }
            if granted, holder.isRunning { return holder }
            if holder.isRunning { holder.terminate() }
            await onOwnThread { holder.waitUntilExit() }
            said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        throw TestFailure("\(table) was not locked (psql: \(said.isEmpty ? "nothing" : said))")
    }

    /// How many ACCESS EXCLUSIVE locks on `table` are granted, or how many locks on it are waited for.
    static func locks(_ table: String, granted: Bool) -> String {
        "SELECT count(*) FROM pg_locks WHERE relation = '\(table)'::regclass AND "
            + (granted ? "mode = 'AccessExclusiveLock' AND granted" : "NOT granted")
    }

    /// Ends the session holding the lock (its backend: killing psql leaves the server's pg_sleep running).
    static func release(_ table: String, holder: Process, url: String) async {
        _ = try? TestPostgres.psql(
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = '\(table)'::regclass "
                + "AND mode = 'AccessExclusiveLock' AND granted")
        await onOwnThread { holder.waitUntilExit() }
    }

    /// The read is held between its changes and its chunks (the sample chunks' partition locked), a commit of
    /// route points (a change and a route chunk, no sample chunk) lands meanwhile, then the read goes on. Read
    /// committed, it would see the commit's route chunk without its changes, and recovery would refuse the journal
    /// as damaged ("route points that no journal change names"); in one snapshot it sees none of the commit (nor its
    /// metadata change), and the next read all of it.
    @Test func aReadHeldWhileACommitLandsSeesNoneOfIt() async throws {
        let database = try TestPostgres.ownDatabase("snapshot")
        defer { TestPostgres.drop(database) }
        let url = database.url
        let athlete = UUID()
        let pool = try PostgresWorkoutDatabase(url: url, poolSize: 4)
        defer { pool.closeConnections() }
        let store = try pool.store(athlete: athlete)
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running, locationType: .outdoor),
            clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        func points(_ range: Range<Int>) -> [RoutePoint] {
            range.map { RoutePoint(date: t(Double($0)), latitude: 45 + Double($0) * 1e-5, longitude: 6) }
        }
        try recording.builder.add((0..<10).map { QuantitySample(.heartRate, 120, at: t(Double($0)), source: SourceDevice(name: "strap")) })
        _ = try recording.builder.addRoute(points(0..<10))
        try recording.commit()

        let partition = PostgresSchema.partition("sample_chunk", athlete: athlete)
        let holder = try await Self.lock(partition, url: url)
        let readerPool = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { readerPool.closeConnections() }
        let reader = try readerPool.store(athlete: athlete)
        let id = recording.id
        let ended = ReadEnded()
        let read = Task {
            defer { ended.flag.withLock { $0 = true } }
            return try await onOwnThread { try reader.recoverActiveSession(id: id, commitInterval: 0) }
        }
        // The read has its session and changes, and waits for the sample chunks (any count but 0: an autovacuum
        // may wait on the partition beside it), or it ended without waiting (refused a connection, say).
        var waiting = false
        _ = await waitUntil(300, every: .milliseconds(20)) {
            let count = (try? TestPostgres.psql(url, Self.locks(partition, granted: false))) ?? "0"
            waiting = count != "0" && !count.isEmpty
            return waiting || ended.flag.withLock { $0 }
        }
        if ended.flag.withLock({ $0 }) {
            await Self.release(partition, holder: holder, url: url)
            let outcome = await read.result
            throw TestFailure("the read ended before it waited for the sample chunks: \(outcome)")
        }
        if waiting {
            _ = try recording.builder.addRoute(points(10..<20))
            try recording.builder.addMetadata(["second": .string("committed")])
            try recording.commit()
        }
        await Self.release(partition, holder: holder, url: url)
        try #require(waiting, "the read never waited for the sample chunks")

        let held = try #require(try await read.value)
        #expect(held.builder.metadata["second"] == nil, "the held read saw none of the commit")
        #expect(try held.committedSamples().count == 10)
        let after = try #require(try store.recoverActiveSession(id: id, commitInterval: 0))
        #expect(after.builder.metadata["second"] == .string("committed"), "the next read sees all of it")
    }
}

/// Whether the held read of ``JournalSnapshotReadTests`` has ended.
private final class ReadEnded: Sendable {
    let flag = Mutex(false)
}
