import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

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
