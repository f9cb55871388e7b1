import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

@Suite("Store: a session recovered after a crash keeps its detectors, pauses and recovery window")
struct RecoveredSessionStateTests {
    /// After an explicit leg change detection is off for the session ("the first explicit leg
    /// change turns detection off for the session"), also in the session recovered from the journal:
    /// the same input gives the same legs with and without a crash.
    @Test(arguments: Backend.available) func aRecoveredSessionKeepsTransitionDetectionOffAfterAnExplicitLegChange(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
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

    /// Motion-paused when the app crashed: the recovered auto-pause detector knows it is paused, so
    /// moving again emits motionResumed and the rest of the ride counts as active time.
    @Test(arguments: Backend.available) func aMotionPauseOpenAtTheCrashResumesWhenMovingAgain(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
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

    /// Stopped, then the app crashed during the recovery window: the recovered session knows it
    /// stopped, takes the window's readings and finishes the recovery (a result, never "exercise has
    /// not stopped yet", which could not be acted on once stopped).
    @Test(arguments: Backend.available) func aSessionRecoveredInTheRecoveryWindowTakesReadingsAndFinishesTheRecovery(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<600).map { pulse(160, at: Double($0)) })
        try recording.session.stop(at: t(600))
        try recording.close()

        let recovered = try #require(try store.recoverActiveSession(clock: ManualClock(t(610)), commitInterval: 0))
        #expect(recovered.session.stopDate == t(600))
        #expect(recovered.session.heartRateRecoveryWindowEnd == t(730))
        let kept = recovered.session.addRecoveryHeartRate(
            (10...130).map { pulse(160 - 0.5 * Double($0), at: 600 + Double($0)) })
        #expect(kept == 121)
        #expect(throws: Never.self) { try recovered.session.finishHeartRateRecovery(at: t(730)) }
        try recovered.discard()
    }
}
