import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

// Review of issue 6: session detectors and heart-rate recovery across a journal recovery (the app
// crashed; `recoverActiveSession` rebuilds the session from the journal), and the store's attach.
// Every test here FAILS on the reviewed code because of a bug.

private func heartRate(_ bpm: Double, at seconds: Double) -> QuantitySample {
    QuantitySample(.heartRate, bpm, at: t(seconds), source: strap)
}

@Suite("Review 6: detectors and recovery after a crash")
struct Review6StoreTests {
    /// After an explicit leg change detection is off for the session ("the first explicit leg
    /// change turns detection off for the session"). A recovered session turns it back on: the
    /// journal holds the activities but not that the change was explicit, and the detectors start
    /// fresh. The same input then gives different legs with and without a crash.
    @Test func aRecoveredSessionDetectsTransitionsAgainAfterAnExplicitChange() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)),
            commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.session.advanceToNextLeg(at: t(600))  // T1 by the button
        #expect(!recording.session.detectsTransitions)
        try recording.close()

        let recovered = try #require(try store.recoverActiveSession(clock: ManualClock(t(650)), commitInterval: 0))
        #expect(!recovered.session.detectsTransitions)
        try recovered.builder.add([QuantitySample(.cyclingCadence, 90, at: t(700), source: bike)])
        #expect(recovered.session.currentLegIndex == 1, "a riding cue began a leg by itself")
        try recovered.discard()
    }

    /// Motion-paused when the app crashed: the recovered auto-pause detector starts "not paused"
    /// while the builder's timeline is still motion-paused, so moving again never emits
    /// motionResumed and the rest of the ride is excluded from active time.
    @Test func aMotionPauseOpenAtTheCrashNeverResumes() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
            options: BuilderOptions(autoPause: .standard), commitInterval: 0)
        try recording.session.start(at: t(0))
        for s in 0..<70 {
            try recording.builder.add([QuantitySample(.cyclingSpeed, s < 60 ? 8 : 0, at: t(Double(s)), source: bike)])
        }
        #expect(recording.builder.events.map(\.type) == [.motionPaused])
        try recording.close()

        let recovered = try #require(try store.recoverActiveSession(clock: ManualClock(t(70)), commitInterval: 0))
        for s in 70..<150 {
            try recovered.builder.add([QuantitySample(.cyclingSpeed, 8, at: t(Double(s)), source: bike)])
        }
        try recovered.session.stop(at: t(150))
        try recovered.session.end(at: t(150))
        let workout = try recovered.finish()
        #expect(workout.events.map(\.type) == [.motionPaused, .motionResumed])
        #expect(workout.duration == 140)
    }

    /// Stopped, then the app crashed during the recovery window. After recovery the session says it
    /// stopped (stopDate) but the recovery collector never saw the stop: readings are refused and
    /// finishHeartRateRecovery throws "exercise has not stopped yet; stop the session first",
    /// which is false and cannot be acted on (stop is illegal now). The documented outcome is a
    /// result with a reason (window cut short / too few readings), never this error.
    @Test func recoveryAfterACrashInTheRecoveryWindowThrowsNotStopped() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<600).map { heartRate(160, at: Double($0)) })
        try recording.session.stop(at: t(600))
        try recording.close()

        let recovered = try #require(try store.recoverActiveSession(clock: ManualClock(t(610)), commitInterval: 0))
        #expect(recovered.session.stopDate == t(600))
        #expect(recovered.session.heartRateRecoveryWindowEnd == t(730))
        let kept = recovered.session.addRecoveryHeartRate(
            (10...130).map { heartRate(160 - 0.5 * Double($0), at: 600 + Double($0)) })
        #expect(kept == 121)
        #expect(throws: Never.self) { try recovered.session.finishHeartRateRecovery(at: t(730)) }
        try recovered.discard()
    }

    /// Attaching the same recovery twice stores two heartRateRecoveryOneMinute samples for the one
    /// workout (the HRR sample is meant to be one per workout; attach is not idempotent).
    @Test func attachingTheRecoveryTwiceStoresTwoSamples() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<600).map { heartRate(160, at: Double($0)) })
        try recording.session.stop(at: t(600))
        try recording.session.end(at: t(600))
        let workout = try recording.finish()
        recording.session.addRecoveryHeartRate((0...130).map { heartRate(160 - 0.5 * Double($0), at: 600 + Double($0)) })
        let result = try recording.session.finishHeartRateRecovery(at: t(730))
        #expect(result.sample != nil)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        try store.attachHeartRateRecovery(result, toWorkout: workout.id)
        let stored = try store.samples(workout: workout.id).filter { $0.type == .heartRateRecoveryOneMinute }
        #expect(stored.count == 1)
    }
}
