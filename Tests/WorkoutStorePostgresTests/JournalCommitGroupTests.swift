import Dispatch
import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// Live sessions' commits waiting for a connection at the same moment go to PostgreSQL together: one statement and
/// one commit for the group (`CALL workout_journal_commit_group`), each session's outcome its own.
///
/// Each test holds the pool's one connection until every commit is queued, so that the group is known: the
/// first committer waits for the connection, the others wait behind it, and all are taken at once.
@Suite(
    "PostgreSQL live commits: sessions committing at the same moment share one statement and one commit",
    .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct JournalCommitGroupTests {
    private static let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")

    private static func pulses(_ range: Range<Int>) -> [QuantitySample] {
        range.map { QuantitySample(.heartRate, 120 + Double($0 % 40), at: t(Double($0)), source: strap) }
    }

    /// A recording of its own athlete, its first ten samples committed alone.
    private static func startedRecording(_ database: PostgresWorkoutDatabase) throws -> (UUID, JournaledRecording) {
        let athlete = UUID()
        let recording = try database.store(athlete: athlete).beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add(pulses(0..<10))
        try recording.commit()
        return (athlete, recording)
    }

    /// Commits each recording from a thread of its own while the pool's one connection is held, and lets the
    /// connection go only once all of them are queued: each commit's error, nil for a commit that succeeded.
    private static func commitTogether(_ database: PostgresWorkoutDatabase, _ recordings: [JournaledRecording]) throws
        -> [StoreError?]
    {
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = DispatchGroup()
        DispatchQueue.global().async(group: held) {
            _ = try? database.transaction(readOnly: true) { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let outcomes = Mutex<[Int: StoreError]>([:])
        let committed = DispatchGroup()
        for (index, recording) in recordings.enumerated() {
            DispatchQueue.global().async(group: committed) {
                do throws(StoreError) {
                    try recording.commit()
                } catch {
                    outcomes.withLock { $0[index] = error }
                }
            }
        }
        let deadline = Date().addingTimeInterval(60)
        while database.liveCommitsWaiting < recordings.count, Date() < deadline { usleep(2_000) }
        let queued = database.liveCommitsWaiting
        release.signal()
        held.wait()
        committed.wait()
        #expect(queued == recordings.count, "every commit was queued before the connection came free")
        return outcomes.withLock { found in recordings.indices.map { found[$0] } }
    }

    private static func storedSeqs(_ session: UUID) throws -> [Int64] {
        let text = try TestPostgres.psql(
            try #require(TestPostgres.url),
            "SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), '') FROM journal_change "
                + "WHERE session = '\(session.uuidString.lowercased())'")
        return text.split(separator: ",").compactMap { Int64($0) }
    }

    @Test("commits queued at the same moment are one group: every session's journal contiguous, its samples whole")
    func waitingCommitsGoTogether() throws {
        let database = try PostgresWorkoutDatabase(url: try #require(TestPostgres.url), poolSize: 1)
        defer { database.closeConnections() }
        let started = try (0..<6).map { _ in try Self.startedRecording(database) }
        for (index, (_, recording)) in started.enumerated() {
            try recording.builder.add(Self.pulses(10..<(20 + index)))
        }
        let before = database.liveCommitGroups
        let errors = try Self.commitTogether(database, started.map(\.1))
        #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
        let after = database.liveCommitGroups
        #expect(after.groups - before.groups == 1 && after.commits - before.commits == 6, "one group of six: \(after)")
        for (index, (athlete, recording)) in started.enumerated() {
            let seqs = try Self.storedSeqs(recording.id)
            #expect(seqs == Array(0..<Int64(seqs.count)) && seqs.count >= 2, "contiguous: \(seqs)")
            let recovered = try #require(
                try database.store(athlete: athlete).recoverActiveSession(id: recording.id, commitInterval: 0))
            #expect(
                try recovered.committedSamples().map(\.start) == Self.pulses(0..<(20 + index)).map(\.start),
                "every sample once, in order, read back from the journal")
        }
    }

    @Test("in a group, a session whose journal is out of step or gone is refused alone: the others are written")
    func aRefusedMemberLeavesTheOthersWritten() throws {
        let url = try #require(TestPostgres.url)
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { database.closeConnections() }
        let started = try (0..<4).map { _ in try Self.startedRecording(database) }
        for (_, recording) in started { try recording.builder.add(Self.pulses(10..<20)) }
        // The second session's stored journal loses its last change (the writer numbers past it); the third's
        // journal is gone.
        let outOfStep = started[1].1.id.uuidString.lowercased()
        try TestPostgres.psql(
            url,
            "DELETE FROM journal_change WHERE session = '\(outOfStep)' AND seq = "
                + "(SELECT max(seq) FROM journal_change WHERE session = '\(outOfStep)')")
        let seqsBefore = try Self.storedSeqs(started[1].1.id)
        try TestPostgres.psql(
            url, "DELETE FROM journal_session WHERE uuid = '\(started[2].1.id.uuidString.lowercased())'")

        let errors = try Self.commitTogether(database, started.map(\.1))
        #expect(errors[0] == nil && errors[3] == nil, "the sessions in step are committed: \(errors)")
        guard case .journalOutOfStep(let session, _) = errors[1] else {
            Issue.record("the session out of step: \(String(describing: errors[1]))")
            return
        }
        #expect(session == started[1].1.id)
        guard case .sessionNotFound(let gone) = errors[2] else {
            Issue.record("the session whose journal is gone: \(String(describing: errors[2]))")
            return
        }
        #expect(gone == started[2].1.id)
        #expect(try Self.storedSeqs(started[1].1.id) == seqsBefore, "nothing of the refused commit was written")
        for index in [0, 3] {
            let (athlete, recording) = started[index]
            let recovered = try #require(
                try database.store(athlete: athlete).recoverActiveSession(id: recording.id, commitInterval: 0))
            #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<20).map(\.start))
        }
    }

    /// A trigger on `athlete`'s journal partition failing the insert of change `seq`: at once, or (`deferred`) when
    /// its transaction commits, after the statement completed. Returns the statement removing it.
    private static func failing(athlete: UUID, seq: Int64, deferred: Bool) throws -> String {
        let url = try #require(TestPostgres.url)
        let partition = PostgresSchema.partition("journal_change", athlete: athlete)
        let function = "workout_test_group_fail_" + athlete.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try TestPostgres.psql(
            url,
            """
            CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS
              $$BEGIN IF NEW.seq = \(seq) THEN RAISE EXCEPTION 'change % refused', NEW.seq; END IF;
              RETURN NULL; END$$
            """)
        try TestPostgres.psql(
            url,
            "CREATE CONSTRAINT TRIGGER fail_seq AFTER INSERT ON \(partition) "
                + (deferred ? "DEFERRABLE INITIALLY DEFERRED " : "") + "FOR EACH ROW EXECUTE FUNCTION \(function)()")
        return "DROP TRIGGER fail_seq ON \(partition); DROP FUNCTION \(function)()"
    }

    @Test(
        "a row PostgreSQL refuses in a group, at once or when it commits, fails its own session's commit only",
        arguments: [false, true])
    func aRefusedRowFailsOnlyItsSession(deferred: Bool) throws {
        let url = try #require(TestPostgres.url)
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { database.closeConnections() }
        let started = try (0..<3).map { _ in try Self.startedRecording(database) }
        for (_, recording) in started { try recording.builder.add(Self.pulses(10..<20)) }
        let (faultyAthlete, faulty) = started[1]
        let before = try Self.storedSeqs(faulty.id)
        let removeTrigger = try Self.failing(athlete: faultyAthlete, seq: Int64(before.count), deferred: deferred)

        let errors = try Self.commitTogether(database, started.map(\.1))
        try TestPostgres.psql(url, removeTrigger)
        #expect(errors[0] == nil && errors[2] == nil, "the other sessions are committed: \(errors)")
        #expect(errors[1] != nil, "a commit PostgreSQL refused is not acknowledged")
        #expect(try Self.storedSeqs(faulty.id) == before, "the refused commit wrote nothing")
        for index in [0, 2] {
            let (athlete, recording) = started[index]
            let recovered = try #require(
                try database.store(athlete: athlete).recoverActiveSession(id: recording.id, commitInterval: 0))
            #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<20).map(\.start))
        }
        // The refused commit's samples go with the session's next commit: nothing lost, nothing twice.
        try faulty.builder.add(Self.pulses(20..<30))
        try faulty.commit()
        let recovered = try #require(
            try database.store(athlete: faultyAthlete).recoverActiveSession(id: faulty.id, commitInterval: 0))
        #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<30).map(\.start))
    }
}
