import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// The heart-rate readings of the recovery window, stored with the workout by
/// `attachHeartRateRecovery`: marked, never doubled, never part of the exercise's statistics.
@Suite("Heart-rate recovery readings in the store")
struct RecoveryReadingsTests {
    /// A 10-minute run at 160 bpm (and 170 bpm for its last minute) stopped at t(600), its workout
    /// saved, then 131 readings of the recovery window falling 0.5 bpm a second: the recovery result.
    func recordedRun(_ store: WorkoutStore) throws -> (Workout, HeartRateRecoveryResult) {
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add(
            (0..<600).map { QuantitySample(.heartRate, $0 >= 540 ? 170 : 160, at: t(Double($0)), source: strap) })
        try recording.session.stop(at: t(600))
        try recording.session.end(at: t(600))
        let workout = try recording.finish()
        let kept = recording.session.addRecoveryHeartRate(
            (0...130).map { QuantitySample(.heartRate, 170 - 0.5 * Double($0), at: t(600 + Double($0)), source: strap) })
        #expect(kept == 131)
        return (workout, try recording.session.finishHeartRateRecovery(at: t(730)))
    }

    @Test(arguments: Backend.available) func attachingTwiceKeepsOneRecoveryAndItsReadingsOnce(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, result) = try recordedRun(store)
        #expect(result.readings.count == 131)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        let samples = try store.samples(workout: workout.id)
        #expect(samples.filter { $0.type == .heartRateRecoveryOneMinute }.count == 1)
        let readings = samples.filter(\.isHeartRateRecoveryReading)
        #expect(readings.count == 131)
        #expect(readings.allSatisfy { $0.type == .heartRate && $0.source == strap })
        #expect(readings.map(\.start) == (0...130).map { t(600 + Double($0)) })
        #expect(readings.first?.quantity.value == 170 && readings.last?.quantity.value == 105)
        // The exercise's own readings are untouched.
        #expect(samples.filter { $0.type == .heartRate && !$0.isHeartRateRecoveryReading }.count == 600)

        // Attaching another result replaces the readings (here fewer), and one without readings or
        // sample (a result encoded before readings existed) leaves neither behind.
        var shorter = result
        shorter.readings = Array(result.readings.prefix(70))
        try store.attachHeartRateRecovery(shorter, toWorkout: workout.id)
        #expect(try store.samples(workout: workout.id).filter(\.isHeartRateRecoveryReading).count == 70)
        var bare = result
        bare.readings = []
        bare.sample = nil
        try store.attachHeartRateRecovery(bare, toWorkout: workout.id)
        let after = try store.samples(workout: workout.id)
        #expect(after.filter(\.isHeartRateRecoveryReading).isEmpty)
        #expect(after.filter { $0.type == .heartRateRecoveryOneMinute }.isEmpty)
        #expect(after.filter { $0.type == .heartRate }.count == 600)
    }

    @Test(arguments: Backend.available) func recoveryReadingsAreLeftOutOfTheExercisesStatistics(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, result) = try recordedRun(store)
        let before = try #require(try store.workout(id: workout.id))
        let spanBefore = try store.statistics(.heartRate, from: workout.start, to: workout.end, workout: workout.id)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        let after = try #require(try store.workout(id: workout.id))
        // The stored statistics are the builder's, not recomputed from the stored readings: the
        // readings after the stop (down to 105 bpm) change neither the minimum nor the average.
        #expect(after.statistics == before.statistics)
        #expect(after.activities.map(\.statistics) == before.activities.map(\.statistics))
        let heartRate = try #require(after.statistics[.heartRate])
        #expect(heartRate.minimum?.value == 160)
        #expect(heartRate.sampleCount == 600)
        // A statistics query over the exercise (the workout's span) does not reach them either.
        let spanAfter = try store.statistics(.heartRate, from: workout.start, to: workout.end, workout: workout.id)
        #expect(spanAfter == spanBefore)
        #expect(spanAfter?.minimum?.value == 160)
        // They are heart rate the athlete had: a query over the recovery window sees them all.
        let window = try #require(
            try store.statistics(.heartRate, from: t(600), to: t(731), workout: workout.id))
        #expect(window.sampleCount == 131)
        #expect(window.minimum?.value == 105)
    }

    /// Attaching the same recovery twice keeps one heartRateRecoveryOneMinute sample for the workout
    /// (one per workout: attach replaces).
    @Test(arguments: Backend.available) func attachingTheRecoveryTwiceStoresOneRecoverySample(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<600).map { pulse(160, at: Double($0)) })
        try recording.session.stop(at: t(600))
        try recording.session.end(at: t(600))
        let workout = try recording.finish()
        recording.session.addRecoveryHeartRate((0...130).map { pulse(160 - 0.5 * Double($0), at: 600 + Double($0)) })
        let result = try recording.session.finishHeartRateRecovery(at: t(730))
        #expect(result.sample != nil)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        let stored = try store.samples(workout: workout.id).filter { $0.type == .heartRateRecoveryOneMinute }
        #expect(stored.count == 1)
    }
}
