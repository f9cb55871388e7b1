import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// The builder's pause accounting: user and motion pauses, redundant pauses, samples taken while paused.
@Suite("Live builder: pauses in the active time")
struct PauseAccountingTests {
    @Test func pauseAndResumeAccounting() throws {
        let clock = ManualClock(t(0))
        let session = try WorkoutSession(configuration: WorkoutConfiguration(activityType: .running), clock: clock)
        try session.start(at: t(0))
        try session.pause(at: t(100))
        // While paused: elapsed runs on, active time stands still.
        #expect(session.builder.elapsedTime(at: t(130)) == 130)
        #expect(session.builder.activeDuration(at: t(130)) == 100)
        try session.resume(at: t(160))
        try session.pause(at: t(300))
        try session.resume(at: t(330))
        try session.builder.add([WorkoutEvent(type: .motionPaused, start: t(400))])
        try session.builder.add([WorkoutEvent(type: .motionResumed, start: t(420))])
        try session.stop(at: t(600))
        try session.end(at: t(610))
        let workout = try session.builder.finishWorkout()
        #expect(workout.elapsed == 600)
        #expect(workout.duration == 600 - 60 - 30 - 20)
        #expect(workout.events.map(\.type) == [.pause, .resume, .pause, .resume, .motionPaused, .motionResumed])
    }

    @Test func overlappingUserAndMotionPausesCountOnce() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([WorkoutEvent(type: .pause, start: t(100))])
        try builder.add([WorkoutEvent(type: .motionPaused, start: t(150))])
        try builder.add([WorkoutEvent(type: .resume, start: t(160))])  // still motion-paused
        try builder.add([WorkoutEvent(type: .motionResumed, start: t(200))])
        try builder.endCollection(at: t(300))
        #expect(builder.activeDuration() == 300 - 100)
    }

    @Test func redundantPauseAndResumeAreNormalisedAwayAndCounted() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([WorkoutEvent(type: .resume, start: t(5))])  // first pause/resume event is never a resume
        try builder.add([WorkoutEvent(type: .pause, start: t(10)), WorkoutEvent(type: .pause, start: t(20))])
        try builder.add([WorkoutEvent(type: .resume, start: t(30)), WorkoutEvent(type: .resume, start: t(40))])
        #expect(builder.events.map(\.type) == [.pause, .resume])
        #expect(builder.counters[.redundantPauseOrResume] == 3)
        try builder.endCollection(at: t(100))
        #expect(builder.activeDuration() == 80)
    }

    @Test func samplesDuringAPauseDoNotCount() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(100, at: 1), hr(100, at: 2)])
        try builder.add([WorkoutEvent(type: .pause, start: t(3))])
        try builder.add([hr(190, at: 4)])  // paused: stored, not counted
        try builder.add([WorkoutEvent(type: .resume, start: t(5))])
        try builder.add([hr(120, at: 5), hr(120, at: 6)])
        try builder.endCollection(at: t(7))
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(stats.maximum?.value == 120)
        #expect(stats.sampleCount == 5)
        // 3 s of 100, then the paused 190 holds into no active time, then 2 s of 120.
        #expect(abs(try #require(stats.averageValue) - (300 + 240) / 5.0) < 1e-9)
    }
}
