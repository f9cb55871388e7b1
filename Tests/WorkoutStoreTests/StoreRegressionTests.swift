import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@Suite("Store: regressions found in review")
struct StoreRegressionTests {
    private func hr(_ s: Double, _ v: Double = 140) -> QuantitySample {
        QuantitySample(.heartRate, v, at: t(s), source: strap)
    }

    // 1. One unencodable change poisoned the journal forever; non-finite metadata is now refused.
    @Test(arguments: Backend.testable) func nonFiniteMetadataPoisonsTheJournal(_ backend: Backend) throws {
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

    // 2. A transient failure in finish() makes the recording unfinishable in-process.
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

    // 3. A cumulative sample ending exactly at a bucket's start makes the empty bucket non-empty.
    @Test(arguments: Backend.testable) func cumulativeSampleEndingAtBucketStartFillsTheNextBucket(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 60, heartRate: 140, maxHeartRate: 140)
        ])
        try store.save(workout, samples: samples)
        // distance samples cover [0, 60); bucket [60, 120) has no data.
        let buckets = try store.statisticsCollection(
            .distanceCycling, from: t(0), to: t(120), anchor: t(0), interval: .minute)
        #expect(buckets.count == 2)
        #expect(buckets[0].statistics?.sampleCount == 60)
        #expect(buckets[1].statistics == nil, "got \(String(describing: buckets[1].statistics))")
        #expect(try store.statistics(.distanceCycling, from: t(60), to: t(120)) == nil)
    }

    // 4. Opening a foreign SQLite file threw but had already converted it to WAL.
    @Test func openingAForeignDatabaseThrowsAndModifiesIt() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("other.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE meta(a TEXT); INSERT INTO meta VALUES ('x')") }
        try queue.close()
        let before = try #require(FileManager.default.contents(atPath: path))
        #expect(throws: StoreError.notAWorkoutStore(path: path)) { try WorkoutStore(path: path) }
        #expect(FileManager.default.contents(atPath: path) == before, "the file was modified")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    // 5. Crashes reachable from statisticsCollection input. SQLite only: the arithmetic is the store's, the
    // same for both backends, and each case runs in a child process (an empty store).
    @Test func tinyIntervalDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            guard let folder = try? temporaryFolder(),
                let store = try? WorkoutStore(path: folder.appendingPathComponent("x.sqlite").path)
            else { return }
            _ = try? store.statisticsCollection(
                .heartRate, from: t(0), to: t(10), anchor: t(0), interval: .seconds(Double.leastNonzeroMagnitude))
        }
    }

    @Test func nanAnchorDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            guard let folder = try? temporaryFolder(),
                let store = try? WorkoutStore(path: folder.appendingPathComponent("x.sqlite").path)
            else { return }
            _ = try? store.statisticsCollection(
                .heartRate, from: t(0), to: t(10), anchor: Date(timeIntervalSinceReferenceDate: .nan), interval: .minute
            )
        }
    }

    // 6. Sources with "" and nil fields were conflated at the store only; "" now means absent everywhere.
    @Test(arguments: Backend.testable) func emptyAndNilSourceFieldsNameTheSameSource(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = SourceDevice(name: "Watch")
        let empty = SourceDevice(name: "Watch", identifier: "")
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        let samples = [
            QuantitySample(.heartRate, 120, at: t(1), source: plain),
            QuantitySample(.heartRate, 121, at: t(2), source: empty),
        ]
        try recording.builder.add(samples)
        try recording.session.end(at: t(3))
        let workout = try recording.finish()
        #expect(plain == empty)
        #expect(try store.samples(workout: workout.id).map(\.source) == samples.map(\.source))
        let decoded = try JSONDecoder().decode(SourceDevice.self, from: Data(#"{"name":"Watch","model":""}"#.utf8))
        #expect(decoded == plain)
    }

    // 8. finish() after stop, then end(): journal rows orphaned by a later commit.
    @Test(arguments: Backend.testable) func commitAfterFinishLeavesNoOrphanJournalRows(_ backend: Backend) throws {
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

    // 9. Anchored: delete then re-save the same id.
    @Test(arguments: Backend.testable) func anchoredDeleteThenResave(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        try store.save(a)
        let anchor = try store.anchoredWorkouts().anchor
        try store.delete(workout: a.id)
        try store.save(a)
        let changes = try store.anchoredWorkouts(since: anchor)
        // The workout exists now; a consumer applying added then deleted would drop it.
        #expect(!(changes.added.map(\.id) == [a.id] && changes.deleted == [a.id]))
    }
}
