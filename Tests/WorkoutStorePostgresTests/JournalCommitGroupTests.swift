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

    /// Athletes whose ids sort in the reverse of their positions: the group's members are locked and written in
    /// the order of their ids, and each outcome must still reach its own commit.
    private static func athletes(_ count: Int) -> [UUID] {
        (0..<count).compactMap { index in
            UUID(uuidString: String(format: "%X", 15 - index) + UUID().uuidString.dropFirst())
        }
    }

    /// A recording of its own athlete, its first ten samples committed alone.
    private static func startedRecording(_ database: PostgresWorkoutDatabase, athlete: UUID) throws
        -> (UUID, JournaledRecording)
    {
        let recording = try database.store(athlete: athlete).beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add(pulses(0..<10))
        try recording.commit()
        return (athlete, recording)
    }

    /// Commits each recording from a thread of its own while the pool's one connection is held, and lets the
    /// connection go only once all of them are queued: each commit's error, nil for a commit that succeeded.
    /// `whileCommitting` runs once the connection is let go, before the commits are waited for, with a check of
    /// whether the commit at a position has been answered. With `first`, that position's commit is queued before
    /// the others (its thread is the one committing the group).
    private static func commitTogether(
        _ database: PostgresWorkoutDatabase, _ recordings: [JournaledRecording], first: Int? = nil,
        cancellations: [Int: StoreCancellation] = [:], whileCommitting: (_ answered: (Int) -> Bool) -> Void = { _ in }
    ) throws -> [StoreError?] {
        let connection = HeldTransaction(database)
        let outcomes = Mutex<[Int: StoreError]>([:])
        let answered = Mutex<Set<Int>>([])
        let committed = DispatchGroup()
        let deadline = Date().addingTimeInterval(60)
        let order = first.map { first in [first] + recordings.indices.filter { $0 != first } } ?? Array(recordings.indices)
        for index in order {
            let recording = recordings[index]
            if index != first, first != nil {
                while database.liveCommitsWaiting < 1, Date() < deadline { usleep(2_000) }
            }
            DispatchQueue.global().async(group: committed) {
                do throws(StoreError) {
                    if let cancellation = cancellations[index] {
                        try cancellation.run { () throws(StoreError) in try recording.commit() }
                    } else {
                        try recording.commit()
                    }
                } catch {
                    outcomes.withLock { $0[index] = error }
                }
                answered.withLock { _ = $0.insert(index) }
            }
        }
        while database.liveCommitsWaiting < recordings.count, Date() < deadline { usleep(2_000) }
        let queued = database.liveCommitsWaiting
        connection.end()
        whileCommitting { index in answered.withLock { $0.contains(index) } }
        committed.wait()
        #expect(queued == recordings.count, "every commit was queued before the connection came free")
        return outcomes.withLock { found in recordings.indices.map { found[$0] } }
    }

    /// The statement another server's transaction locks `session`'s row with.
    private static func rowLock(_ session: UUID) -> String {
        "SELECT 1 FROM journal_session WHERE uuid = '\(session.uuidString.lowercased())' FOR UPDATE"
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
        let started = try Self.athletes(6).map { try Self.startedRecording(database, athlete: $0) }
        for (index, (_, recording)) in started.enumerated() {
            try recording.builder.add(Self.pulses(10..<(20 + index)))
            // Every other session brings route points too.
            if index % 2 == 0 {
                _ = try recording.builder.addRoute(
                    (0..<(3 + index)).map { RoutePoint(date: t(Double(10 + $0)), latitude: 47, longitude: 8 + Double($0) / 1e4) })
            }
        }
        let before = database.liveCommitGroups
        let firstNew = try started.map { try Self.storedSeqs($0.1.id).count }
        let errors = try Self.commitTogether(database, started.map(\.1))
        #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
        let after = database.liveCommitGroups
        #expect(
            after.groups - before.groups == 1 && after.commits - before.commits == 6 && after.alone == before.alone,
            "one group statement of six: \(after)")
        // Independently of the counters: the six sessions' new changes are one transaction's rows.
        let sessions = zip(started, firstNew).map { "(session = '\($0.1.id.uuidString.lowercased())' AND seq >= \($1))" }
        #expect(
            try TestPostgres.psql(
                try #require(TestPostgres.url),
                "SELECT count(DISTINCT xmin::text) FROM journal_change WHERE " + sessions.joined(separator: " OR ")) == "1")
        for (index, (athlete, recording)) in started.enumerated() {
            let seqs = try Self.storedSeqs(recording.id)
            #expect(seqs == Array(0..<Int64(seqs.count)) && seqs.count >= 2, "contiguous: \(seqs)")
            let points = try TestPostgres.psql(
                try #require(TestPostgres.url),
                "SELECT coalesce(sum(r.count), 0) FROM route_chunk r JOIN journal_session s ON s.athlete = r.athlete "
                    + "AND s.workout_row = r.workout_row WHERE s.uuid = '\(recording.id.uuidString.lowercased())'")
            #expect(points == (index % 2 == 0 ? "\(3 + index)" : "0"), "the route points of session \(index)")
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
        let started = try Self.athletes(4).map { try Self.startedRecording(database, athlete: $0) }
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

        let before = database.liveCommitGroups
        let errors = try Self.commitTogether(database, started.map(\.1))
        let after = database.liveCommitGroups
        #expect(
            after.groups - before.groups == 1 && after.commits - before.commits == 4 && after.alone == before.alone,
            "one group statement wrote two and refused two: \(after)")
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

    @Test(
        "a row PostgreSQL refuses in a group, at once or when it commits, fails its own session's commit only",
        arguments: [false, true])
    func aRefusedRowFailsOnlyItsSession(deferred: Bool) throws {
        let url = try #require(TestPostgres.url)
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { database.closeConnections() }
        let started = try Self.athletes(3).map { try Self.startedRecording(database, athlete: $0) }
        for (_, recording) in started { try recording.builder.add(Self.pulses(10..<20)) }
        let (faultyAthlete, faulty) = started[1]
        let before = try Self.storedSeqs(faulty.id)
        let removeTrigger = try failJournalInsert(athlete: faultyAthlete, seq: Int64(before.count), deferred: deferred)

        let counted = database.liveCommitGroups
        let errors = try Self.commitTogether(database, started.map(\.1))
        try TestPostgres.psql(url, removeTrigger)
        #expect(database.liveCommitGroups.alone - counted.alone == 3, "the group failed, each member was committed alone")
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

    @Test(
        "a session whose row another transaction holds locked does not hold up its group: committed alone after",
        arguments: [true, false])
    func aLockedSessionIsCommittedAloneAfterTheOthers(queuedFirst: Bool) throws {
        let url = try #require(TestPostgres.url)
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { database.closeConnections() }
        let otherServer = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { otherServer.closeConnections() }
        let started = try Self.athletes(3).map { try Self.startedRecording(database, athlete: $0) }
        for (_, recording) in started { try recording.builder.add(Self.pulses(10..<20)) }
        // Another server's transaction holds the second session's row.
        let lock = HeldTransaction(otherServer, Self.rowLock(started[1].1.id))
        defer { lock.end() }
        let before = database.liveCommitGroups
        var othersFirst = false
        // Queued first, the locked session's thread is the one committing the group; else another thread is.
        let errors = try Self.commitTogether(database, started.map(\.1), first: queuedFirst ? 1 : 0) { answered in
            let deadline = Date().addingTimeInterval(60)
            while !(answered(0) && answered(2)), Date() < deadline { usleep(2_000) }
            othersFirst = answered(0) && answered(2) && !answered(1)
            lock.end()
        }
        #expect(othersFirst, "the group's other sessions were answered while the locked one waited")
        #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
        let after = database.liveCommitGroups
        #expect(after.groups - before.groups == 1 && after.alone - before.alone == 1, "\(after)")
        for (athlete, recording) in started {
            let recovered = try #require(
                try database.store(athlete: athlete).recoverActiveSession(id: recording.id, commitInterval: 0))
            #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<20).map(\.start))
        }
    }

    @Test("a skipped locked member waiting for its row alone is cut off when its client hangs up: nothing is lost")
    func aLockedMembersWaitIsCancelled() throws {
        let url = try #require(TestPostgres.url)
        let database = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { database.closeConnections() }
        let otherServer = try PostgresWorkoutDatabase(url: url, poolSize: 1)
        defer { otherServer.closeConnections() }
        let started = try Self.athletes(3).map { try Self.startedRecording(database, athlete: $0) }
        for (_, recording) in started { try recording.builder.add(Self.pulses(10..<20)) }
        let (lockedAthlete, locked) = started[1]
        let lock = HeldTransaction(otherServer, Self.rowLock(locked.id))
        defer { lock.end() }
        let hangUp = StoreCancellation()
        var waitedForTheLock = false
        var cutOff = false
        let errors = try Self.commitTogether(database, started.map(\.1), cancellations: [1: hangUp]) { answered in
            // The group answers the others; the locked member's own commit then waits for its row.
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, !waitedForTheLock {
                let waiting = try? TestPostgres.psql(
                    url,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        + "AND query LIKE 'CALL workout_journal_commit(%'")
                waitedForTheLock = waiting == "1" && answered(0) && answered(2)
                if !waitedForTheLock { usleep(20_000) }
            }
            hangUp.cancel()
            let cutOffBy = Date().addingTimeInterval(30)
            while Date() < cutOffBy, !answered(1) { usleep(10_000) }
            cutOff = answered(1)
            // Let the row go in any case, so that a wait that was not cut off ends (and fails below) rather than hangs.
            lock.end()
        }
        #expect(waitedForTheLock, "the locked member's commit waited for its row after the others were answered")
        #expect(cutOff, "the hang-up ended the wait for the row")
        #expect(errors[0] == nil && errors[2] == nil, "\(errors)")
        #expect(errors[1] != nil, "the hung-up commit is not acknowledged")
        // Its samples go with the session's next commit: nothing lost, nothing twice.
        try locked.builder.add(Self.pulses(20..<30))
        try locked.commit()
        let recovered = try #require(
            try database.store(athlete: lockedAthlete).recoverActiveSession(id: locked.id, commitInterval: 0))
        #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<30).map(\.start))
    }

    @Test("several committers at once, sessions committing in turns: every journal contiguous, every sample once")
    func severalCommittersKeepEveryJournalWhole() throws {
        // A pool of 4: two committers, each taking groups while the other commits.
        let database = try PostgresWorkoutDatabase(url: try #require(TestPostgres.url), poolSize: 4)
        defer { database.closeConnections() }
        let started = try Self.athletes(12).map { try Self.startedRecording(database, athlete: $0) }
        // Each journal row takes 5 ms to write, so that commits queue behind the two committers and go in groups.
        let url = try #require(TestPostgres.url)
        var removals: [String] = []
        defer { for removal in removals { _ = try? TestPostgres.psql(url, removal) } }
        for (athlete, _) in started {
            let partition = PostgresSchema.partition("journal_change", athlete: athlete)
            let function = "workout_test_slow_" + athlete.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try TestPostgres.psql(
                url,
                "CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS "
                    + "$$BEGIN PERFORM pg_sleep(0.005); RETURN NULL; END$$")
            try TestPostgres.psql(
                url, "CREATE TRIGGER slow AFTER INSERT ON \(partition) FOR EACH ROW EXECUTE FUNCTION \(function)()")
            removals.append("DROP TRIGGER slow ON \(partition); DROP FUNCTION \(function)()")
        }
        let before = database.liveCommitGroups
        let failures = Mutex<[String]>([])
        let committed = DispatchGroup()
        for (_, recording) in started {
            DispatchQueue.global().async(group: committed) {
                for turn in 1...8 {
                    do {
                        try recording.builder.add(Self.pulses((turn * 10)..<(turn * 10 + 10)))
                        try recording.commit()
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        committed.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(database.liveCommitGroups.groups > before.groups, "commits went in groups: \(database.liveCommitGroups)")
        for (athlete, recording) in started {
            let seqs = try Self.storedSeqs(recording.id)
            #expect(seqs == Array(0..<Int64(seqs.count)), "contiguous: \(seqs)")
            let recovered = try #require(
                try database.store(athlete: athlete).recoverActiveSession(id: recording.id, commitInterval: 0))
            #expect(try recovered.committedSamples().map(\.start) == Self.pulses(0..<90).map(\.start))
        }
    }
}

/// A transaction of `database` held open on a thread of its own, after `statement` if any (holding a pool's
/// connection, or a row's lock), until `end()`.
private final class HeldTransaction: Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let finished = DispatchGroup()

    /// Returns once the transaction holds what it holds (or failed).
    init(_ database: PostgresWorkoutDatabase, _ statement: String? = nil) {
        let holding = DispatchSemaphore(value: 0)
        let release = release
        DispatchQueue.global().async(group: finished) {
            _ = try? database.transaction(readOnly: statement == nil) { statements in
                if let statement { _ = try statements.rows(statement) }
                holding.signal()
                release.wait()
            }
            // A transaction that failed before it held anything lets the caller go on too.
            holding.signal()
        }
        holding.wait()
    }

    /// Ends the transaction and waits for it to end; again, it does nothing more.
    func end() {
        release.signal()
        finished.wait()
    }
}
