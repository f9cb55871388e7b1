import Foundation
import Synchronization
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutTestSupport

@testable import WorkoutStore

/// A cancelled caller's SQLite work stops before its next statement, however short its statements are, and keeps
/// nothing; work bound to no cancellation runs on (issue 27: the progress handler, every 1,000 virtual-machine
/// steps, never ran for the short statements of a transaction, so a cancelled request's transaction ran to its
/// end and committed).
@Suite("store cancellation on SQLite")
struct StoreCancellationTests {
    /// A fresh SQLite backend in a temporary folder (removed by the caller), with the time limit far away, holding
    /// a 20-minute ride with 1 Hz heart rate.
    static func storeWithRide() throws -> (SQLiteBackend, WorkoutStore, UUID, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cancel-\(UUID())")
        let backend = try SQLiteBackend(path: folder.appendingPathComponent("store.sqlite").path, statementTimeout: 600)
        let store = WorkoutStore(backend: backend)
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 1200, heartRate: 140, maxHeartRate: 170)
        ])
        try store.save(workout, samples: samples)
        return (backend, store, workout.id, folder)
    }

    /// Heart-rate readings at 1 Hz from `start` seconds, `count` of them, as chunks from ordinal `next`.
    static func readings(from start: Double, count: Int, next: Int64) -> [SampleChunk] {
        Series.chunks(
            (0..<count).map { pulse(100, at: start + Double($0)) }, firstOrdinal: next)
    }

    /// Runs `work` bound to a new cancellation, which `work` is given to cancel midway, and expects the store to
    /// stop it with `.timedOut`.
    static func expectStoppedWhenCancelled(
        sourceLocation: SourceLocation = #_sourceLocation, _ work: (StoreCancellation) throws(StoreError) -> Void
    ) {
        let cancellation = StoreCancellation()
        #expect(throws: StoreError.timedOut, sourceLocation: sourceLocation) {
            try cancellation.run { () throws(StoreError) in try work(cancellation) }
        }
    }

    @Test("a write cancelled between its statements fails before the next one and keeps nothing")
    func aWriteCancelledBetweenStatementsStopsAndKeepsNothing() throws {
        let (backend, store, id, folder) = try Self.storeWithRide()
        defer { try? FileManager.default.removeItem(at: folder) }
        let samplesBefore = try store.samples(workout: id).count
        // The cancellation comes inside the transaction, after its reads and deletes, before its inserts and the
        // workout's update: statements of a few dozen steps each, which the progress handler never sees.
        Self.expectStoppedWhenCancelled { cancellation throws(StoreError) in
            try backend.updateWorkout(id, replacing: [], where: { _ in false }) {
                (metadata: Metadata, next: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in
                cancellation.cancel()
                var changed = metadata
                changed["cancelled"] = .string("written")
                return (changed, Self.readings(from: 5000, count: 600, next: next))
            }
        }
        let workout = try #require(try store.workout(id: id))
        #expect(workout.metadata["cancelled"] == nil, "the cancelled transaction's update was committed")
        #expect(try store.samples(workout: id).count == samplesBefore, "the cancelled transaction's chunks were kept")
    }

    @Test("a write cancelled as it reads its rows deletes nothing")
    func aWriteCancelledAsItReadsDeletesNothing() throws {
        let (backend, store, id, folder) = try Self.storeWithRide()
        defer { try? FileManager.default.removeItem(at: folder) }
        let samplesBefore = try store.samples(workout: id).count
        let replaced = CallCount()
        Self.expectStoppedWhenCancelled { cancellation throws(StoreError) in
            // Every heart-rate chunk is to go: the first one cancels, its delete must not run.
            try backend.updateWorkout(id, replacing: [.heartRate], where: { _ in
                cancellation.cancel()
                replaced.add()
                return true
            }) { (metadata: Metadata, _: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in (metadata, []) }
        }
        #expect(replaced.value == 1, "the work went on past the cancellation: \(replaced.value) chunks examined")
        #expect(try store.samples(workout: id).count == samplesBefore, "chunks of the cancelled transaction went")
    }

    @Test("after a cancelled caller's write, the store serves the next callers, reads and writes")
    func theStoreServesOnAfterACancelledWrite() throws {
        let (backend, store, id, folder) = try Self.storeWithRide()
        defer { try? FileManager.default.removeItem(at: folder) }
        Self.expectStoppedWhenCancelled { cancellation throws(StoreError) in
            try backend.updateWorkout(id, replacing: [], where: { _ in false }) {
                (metadata: Metadata, next: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in
                cancellation.cancel()
                return (metadata, Self.readings(from: 5000, count: 60, next: next))
            }
        }
        // Work for no client (no cancellation bound), and another caller's: both run and commit.
        let samplesBefore = try store.samples(workout: id).count
        try backend.updateWorkout(id, replacing: [], where: { _ in false }) {
            (metadata: Metadata, next: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in
            var changed = metadata
            changed["after"] = .string("no client")
            return (changed, Self.readings(from: 5000, count: 60, next: next))
        }
        try StoreCancellation().run { () throws(StoreError) in
            try backend.updateWorkout(id, replacing: [], where: { _ in false }) {
                (metadata: Metadata, next: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in
                var changed = metadata
                changed["again"] = .string("another caller")
                return (changed, Self.readings(from: 6000, count: 60, next: next))
            }
        }
        let workout = try #require(try store.workout(id: id))
        #expect(workout.metadata["after"] == .string("no client"))
        #expect(workout.metadata["again"] == .string("another caller"))
        #expect(try store.samples(workout: id).count == samplesBefore + 120)
    }
}

/// A count kept by a closure the store calls.
final class CallCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
