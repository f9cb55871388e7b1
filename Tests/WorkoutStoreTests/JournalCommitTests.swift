import Foundation
import GRDB
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator

@testable import WorkoutStore

@Suite("Store: journal commits and finishing refuse what would poison or orphan the journal")
struct JournalCommitTests {
    private func hr(_ s: Double, _ v: Double = 140) -> QuantitySample {
        QuantitySample(.heartRate, v, at: t(s), source: strap)
    }

    // One unencodable change poisoned the journal forever; non-finite metadata is now refused.
    @Test(arguments: Backend.available) func nonFiniteMetadataPoisonsTheJournal(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        #expect(throws: EngineError.invalidMetadata(key: "weird")) {
            try recording.builder.addMetadata(["weird": .double(.nan)])
        }
        try recording.builder.add([
            QuantitySample(.heartRate, 150, at: t(9.5), source: strap, metadata: ["quality": .double(.infinity)])
        ])
        #expect(recording.builder.counters[.invalidMetadata] == 1)
        try recording.builder.add((10..<20).map { hr(Double($0)) })
        #expect(throws: Never.self) { try recording.commit() }
        #expect(throws: Never.self) { try recording.commit() }
        #expect(try recording.committedSamples().count == 20)
    }

    // A transient failure in finish() makes the recording unfinishable in-process.
    // SQLite only: the transient failure is another connection holding the file's write lock.
    @Test func finishIsNotRetryableAfterATransientFailure() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("s.sqlite").path
        let store = try WorkoutStore(path: path, busyTimeout: 0.2)
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.session.end(at: t(10))
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let holder = try DatabaseQueue(path: path, configuration: configuration)
        try holder.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        #expect(throws: StoreError.locked(path: path)) { try recording.finish() }
        try holder.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try holder.close()
        // The lock is gone: finishing again should work.
        #expect(throws: Never.self) { try recording.finish() }
        #expect(try store.workouts(matching: WorkoutQuery()).count == 1)
    }

    // A writer numbering past its stored journal (a commit it was told was done was not kept, as PostgreSQL's
    // early autocommit answer at an immediate shutdown gave) used to write on, leaving a gap that recovery refused
    // for ever ("journal change 4 is numbered 5"). The store now refuses such a commit, writing nothing, and the
    // journal read back holds every change kept and goes on.
    /// A running recording with ten heart-rate samples committed, then a commit of one change (metadata "lost")
    /// deleted behind the writer's back: the stored journal ends one change before the writer's next number.
    func recordingWhoseLastCommitWasLost(_ fixture: StoreFixture) throws -> JournaledRecording {
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        // A commit of one change, then lost behind the writer's back.
        try recording.builder.addMetadata(["lost": .string("yes")])
        try recording.commit()
        let session = recording.id.uuidString
        try fixture.execute(
            sqlite: """
                DELETE FROM journal_change WHERE session = ?
                AND seq = (SELECT max(seq) FROM journal_change WHERE session = ?)
                """, [session, session],
            postgres: """
                DELETE FROM journal_change WHERE athlete = \(fixture.athleteLiteral) AND session = $1::uuid
                AND seq = (SELECT max(seq) FROM journal_change WHERE athlete = \(fixture.athleteLiteral) AND session = $1::uuid)
                """, [session.lowercased()])
        return recording
    }

    @Test(arguments: Backend.available) func aCommitThatDoesNotContinueTheJournalIsRefused(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let recording = try recordingWhoseLastCommitWasLost(fixture)

        try recording.builder.add((10..<20).map { hr(Double($0)) })
        let refused = #expect(throws: StoreError.self) { try recording.commit() }
        if case .journalOutOfStep(let id, _) = refused {
            #expect(id == recording.id)
        } else {
            Issue.record("expected journalOutOfStep, got \(String(describing: refused))")
        }

        // Read back: the changes kept, nothing of the refused commit; recording goes on from there.
        let recovered = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(try recovered.committedSamples().map(\.start) == (0..<10).map { t(Double($0)) })
        #expect(recovered.builder.metadata["lost"] == nil)
        try recovered.builder.add((10..<20).map { hr(Double($0)) })
        try recovered.commit()
        let again = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(try again.committedSamples().map(\.start) == (0..<20).map { t(Double($0)) })
    }

    // A finish writes none of its entries (the journal is deleted in its transaction), so the check above never
    // saw it: a writer whose last commit was lost finished anyway, saving a workout that holds what the journal
    // does not (here the lost commit's metadata; a lost commit of samples would leave its closed chunks missing
    // while the workout's statistics count them). Now the finish is refused, nothing saved, and the journal read
    // back goes on and finishes with what it holds.
    @Test(arguments: Backend.available) func aFinishThatDoesNotContinueTheJournalIsRefused(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let recording = try recordingWhoseLastCommitWasLost(fixture)

        try recording.session.end(at: t(10))
        let refused = #expect(throws: StoreError.self) { try recording.finish() }
        if case .journalOutOfStep(let id, _) = refused {
            #expect(id == recording.id)
        } else {
            Issue.record("expected journalOutOfStep, got \(String(describing: refused))")
        }
        #expect(try fixture.store.workouts(matching: WorkoutQuery()).isEmpty, "nothing saved")

        let recovered = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(recovered.builder.metadata["lost"] == nil)
        try recovered.builder.add((10..<20).map { hr(Double($0)) })
        try recovered.session.end(at: t(20))
        let workout = try recovered.finish()
        #expect(workout.metadata["lost"] == nil)
        #expect(try fixture.store.samples(workout: workout.id).map(\.start) == (0..<20).map { t(Double($0)) })
    }

    // A commit answered as failed but kept after all (its answer lost) left the writer numbering its next commits
    // from before it: each one, starting with the kept commit's entries again, was refused as out of step until the
    // finish (whose check allows for it). The writer now reads where the stored journal ends and goes on from there:
    // nothing lost, nothing stored twice.
    @Test(arguments: Backend.available)
    func aFailedCommitThatWasKeptAfterAllIsNotWrittenAgain(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let losing = AnswerLosingBackend(fixture.store.backend)
        let recording = try WorkoutStore(backend: losing).beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        try recording.builder.add((10..<20).map { hr(Double($0)) })
        try recording.builder.addMetadata(["kept": .string("after all")])
        losing.loseNextAnswer()
        #expect(throws: StoreError.timedOut) { try recording.commit() }
        #expect(recording.journalError == .timedOut)

        // The next commits (the periodic committer's) go on.
        for batch in 2..<4 {
            try recording.builder.add((batch * 10..<batch * 10 + 10).map { hr(Double($0)) })
            #expect(throws: Never.self) { try recording.commit() }
        }
        #expect(recording.journalError == nil)
        // Where the journal ends was read from the writer's number on, not by loading the whole journal (every
        // change since the start and every chunk of the recording).
        #expect(losing.journalsLoaded == 0, "the whole journal was loaded to learn where it ends")
        let all = (0..<40).map { t(Double($0)) }
        #expect(try recording.committedSamples().map(\.start) == all, "every sample once")
        let recovered = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(try recovered.committedSamples().map(\.start) == all)
        #expect(recovered.builder.metadata["kept"] == .string("after all"))
        try recovered.close()

        try recording.session.end(at: t(40))
        let workout = try recording.finish()
        #expect(try fixture.store.samples(workout: workout.id).map(\.start) == all)
        #expect(workout.metadata["kept"] == .string("after all"))
    }

    // The stored journal may end where a failed commit's entries would, yet hold another writer's entries (a
    // session continued elsewhere while this writer's answer was lost): those are not this writer's kept commit.
    // The writer compares what is stored with what it sent and, when they differ, refuses as out of step as
    // before, never writing its own entries over the other's.
    @Test(arguments: Backend.available)
    func aJournalEndingWhereAFailedCommitWouldButHoldingOtherEntriesIsRefused(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let losing = AnswerLosingBackend(fixture.store.backend)
        let recording = try WorkoutStore(backend: losing).beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        try recording.builder.addMetadata(["writer": .string("this one")])
        losing.storeInsteadOfNextCommit { commit in
            var other = commit
            other.entries = commit.entries.map { entry in
                var entry = entry
                entry.payload = entry.payload?.replacingOccurrences(of: "this one", with: "another")
                return entry
            }
            return other
        }
        #expect(throws: StoreError.timedOut) { try recording.commit() }

        try recording.builder.add((10..<20).map { hr(Double($0)) })
        let refused = #expect(throws: StoreError.self) { try recording.commit() }
        if case .journalOutOfStep(let id, _) = refused {
            #expect(id == recording.id)
        } else {
            Issue.record("expected journalOutOfStep, got \(String(describing: refused))")
        }
        let recovered = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        #expect(recovered.builder.metadata["writer"] == .string("another"))
        try recovered.close()
    }

    // A packed row whose stated count is not what it holds would make every later commit out of step (the
    // continuity check numbers on from the stated count): recovery refuses it as damage, not 503 for ever.
    @Test func aPackedRowThatMisstatesItsCountIsDamage() throws {
        let fixture = try StoreFixture(.sqlite)
        defer { fixture.cleanup() }
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        #expect(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0) != nil)
        _ = try fixture.execute(
            sqlite: "UPDATE journal_change SET row_count = row_count + 1 WHERE session = ? AND kind = 'batch'",
            [recording.id.uuidString], postgres: "")
        let refused = #expect(throws: StoreError.self) {
            try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0)
        }
        guard case .corruptChunk = refused else {
            Issue.record("expected corruptChunk, got \(String(describing: refused))")
            return
        }
    }

    // What a writer reads to learn where its journal ends after its own number (`journalEntries`): the entries from
    // that number on, also from inside a commit's packed row, none past the end, nil for no such session; the same
    // entries `loadJournal` gives.
    @Test(arguments: Backend.available) func theJournalIsReadFromAWritersNumberOn(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        defer { fixture.cleanup() }
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        try recording.builder.addMetadata(["a": .string("1")])
        try recording.builder.add((10..<20).map { hr(Double($0)) })
        try recording.builder.addMetadata(["b": .string("2")])
        try recording.commit()
        let backend = fixture.store.backend
        let whole = try #require(try backend.loadJournal(id: recording.id)).entries
        #expect(whole.count >= 4)
        let end = (whole.last?.seq ?? 0) + 1
        for seq in whole.map(\.seq) + [end, end + 5] {
            let ranged = try backend.journalEntries(id: recording.id, from: seq)
            #expect(ranged == whole.filter { $0.seq >= seq }, "from \(seq)")
        }
        #expect(try backend.journalEntries(id: UUID(), from: 0) == nil)
    }

    // A damaged file whose last journal row is numbered Int64.max: the next commit computed the number after it
    // (`seq + count`) unchecked and trapped, taking the recording process down. It is refused as damage instead.
    @Test func aJournalNumberedUpToTheLargestNumberIsDamageNotATrap() throws {
        let fixture = try StoreFixture(.sqlite)
        defer { fixture.cleanup() }
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.commit()
        _ = try fixture.execute(
            sqlite: """
                UPDATE journal_change SET seq = 9223372036854775807, row_count = 1
                WHERE session = ? AND seq = (SELECT max(seq) FROM journal_change WHERE session = ?)
                """, [recording.id.uuidString, recording.id.uuidString], postgres: "")
        try recording.builder.add((10..<20).map { hr(Double($0)) })
        let refused = #expect(throws: StoreError.self) { try recording.commit() }
        guard case .corruptChunk(let workout, let detail) = refused else {
            Issue.record("expected corruptChunk, got \(String(describing: refused))")
            return
        }
        #expect(workout == recording.id)
        #expect(detail.contains("9223372036854775807"), "\(detail)")
    }

    // finish() after stop, then end(): journal rows orphaned by a later commit.
    @Test(arguments: Backend.available) func commitAfterFinishLeavesNoOrphanJournalRows(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<10).map { hr(Double($0)) })
        try recording.session.stop(at: t(10))
        try recording.finish()
        try recording.session.end(at: t(11))
        try recording.commit()
        let orphans = try fixture.execute(
            sqlite: "SELECT count(*) FROM journal_change",
            postgres: "SELECT count(*)::text FROM journal_change WHERE athlete = \(fixture.athleteLiteral)")
        #expect(orphans == [["0"]])
    }
}

/// A backend whose next journal commit is applied by the real backend underneath but answered as failed
/// (`StoreError.timedOut`), as a commit whose answer was lost after the database kept it.
final class AnswerLosingBackend: StoreBackend {
    let backend: any StoreBackend
    private let losing = Mutex(false)

    init(_ backend: any StoreBackend) { self.backend = backend }

    /// The next journal commit is kept, and answered as failed.
    func loseNextAnswer() { losing.withLock { $0 = true } }

    /// The next journal commit is replaced by what `other` makes of it (another writer's entries), stored, and
    /// answered as failed.
    func storeInsteadOfNextCommit(_ other: @escaping @Sendable (JournalCommit) -> JournalCommit) {
        replacing.withLock { $0 = other }
    }
    private let replacing = Mutex<(@Sendable (JournalCommit) -> JournalCommit)?>(nil)

    var location: String { backend.location }

    func commitJournal(_ commit: JournalCommit) throws(StoreError) {
        if let other = replacing.withLock({ other in
            defer { other = nil }
            return other
        }) {
            try backend.commitJournal(other(commit))
            throw .timedOut
        }
        try backend.commitJournal(commit)
        let lose = losing.withLock { lose in
            defer { lose = false }
            return lose
        }
        if lose { throw .timedOut }
    }

    func save(_ workout: Workout, sampleChunks: [SampleChunk], routeChunks: [RouteChunk]) throws(StoreError) {
        try backend.save(workout, sampleChunks: sampleChunks, routeChunks: routeChunks)
    }
    func delete(workout: UUID) throws(StoreError) { try backend.delete(workout: workout) }
    func updateWorkout(
        _ workout: UUID, replacing: Set<QuantityType>, where isReplaced: (SampleChunk) throws(StoreError) -> Bool,
        _ update: (Metadata, Int64) throws(StoreError) -> (Metadata, [SampleChunk])
    ) throws(StoreError) {
        try backend.updateWorkout(workout, replacing: replacing, where: isReplaced, update)
    }
    func workout(id: UUID) throws(StoreError) -> Workout? { try backend.workout(id: id) }
    func containsWorkout(id: UUID) throws(StoreError) -> Bool { try backend.containsWorkout(id: id) }
    func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout] {
        try backend.workouts(matching: query)
    }
    func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID] {
        try backend.workoutIDs(matching: query)
    }
    func anchoredWorkouts(since anchor: QueryAnchor?, limit: Int?) throws(StoreError) -> AnchoredWorkouts {
        try backend.anchoredWorkouts(since: anchor, limit: limit)
    }
    func sampleChunks(_ filter: ChunkFilter) throws(StoreError) -> [StoredChunk<SampleChunk>] {
        try backend.sampleChunks(filter)
    }
    func routeChunks(workout: UUID) throws(StoreError) -> [RouteChunk] { try backend.routeChunks(workout: workout) }
    func beginJournal(
        _ session: JournalSessionRecord, configuration: WorkoutConfiguration, start: Date
    ) throws(StoreError) {
        try backend.beginJournal(session, configuration: configuration, start: start)
    }
    func journalSessions() throws(StoreError) -> [JournalSessionRecord] { try backend.journalSessions() }
    func loadJournal(id: UUID?) throws(StoreError) -> LoadedJournal? {
        loaded.withLock { $0 += 1 }
        return try backend.loadJournal(id: id)
    }
    func journalEntries(id: UUID, from seq: Int64) throws(StoreError) -> [JournalEntry]? {
        try backend.journalEntries(id: id, from: seq)
    }
    /// How many times a whole journal was loaded.
    var journalsLoaded: Int { loaded.withLock { $0 } }
    private let loaded = Mutex(0)
}
