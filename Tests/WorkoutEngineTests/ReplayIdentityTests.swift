import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// A recording replayed from its changes (recovery, import) rebuilds the same workout: identifiers and legs.
@Suite("Replay: identifiers and legs")
struct ReplayIdentityTests {
    /// A call that throws draws no identifier from the seeded sequence.
    @Test func aRefusedCallLeavesTheSeededIdentifiersAsTheyWere() throws {
        func make() throws -> LiveWorkoutBuilder {
            let builder = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)),
                options: BuilderOptions(identifiers: .seeded(3)))
            try builder.beginCollection(at: t(0))
            return builder
        }
        let clean = try make()
        let a = try clean.addActivity(configuration: WorkoutConfiguration(activityType: .running), start: t(0))
        let other = try make()
        #expect(throws: EngineError.self) {
            try other.addActivity(configuration: WorkoutConfiguration(activityType: .running), start: t(-5))
        }
        let b = try other.addActivity(configuration: WorkoutConfiguration(activityType: .running), start: t(0))
        #expect(a.id == b.id)
    }

    /// One options value used for an original and a rebuilt builder gives both the same workout id.
    @Test func oneSeededOptionsValueGivesTwoBuildersTheSameWorkoutID() throws {
        let options = BuilderOptions(identifiers: .seeded(3))
        let config = WorkoutConfiguration(activityType: .running)
        let first = try LiveWorkoutBuilder(configuration: config, options: options)
        let second = try LiveWorkoutBuilder(configuration: config, options: options)
        #expect(first.workoutID == second.workoutID)
    }

    /// A replay with default options rebuilds the same workout id (the id is recorded).
    @Test func aReplayWithDefaultOptionsRebuildsTheRecordedWorkoutID() throws {
        let sink = InMemoryRecording()
        let (builder, _) = try collectingBuilder(sink: sink)
        try builder.add([hr(100, at: 0), hr(110, at: 1)])
        try builder.endCollection(at: t(2))
        let original = try builder.finishWorkout()
        let replay = try LiveWorkoutBuilder(configuration: WorkoutConfiguration(activityType: .running))
        for change in sink.changes { try replay.apply(change) }
        #expect(replay.workoutID == original.id)
    }

    /// After a recovery, the next activity gets an id no existing activity has.
    @Test func aRecoveredSessionIssuesNoActivityIDTwice() throws {
        let sink = InMemoryRecording()
        let config = WorkoutConfiguration(activityType: .swimBikeRun)
        let session = try WorkoutSession(
            configuration: config, clock: ManualClock(t(0)), options: BuilderOptions(identifiers: .seeded(9)),
            sink: sink)
        try session.start(at: t(0))
        try session.advanceToNextLeg(at: t(10))
        let rebuilt = try WorkoutSession(
            configuration: config, clock: ManualClock(t(0)), options: BuilderOptions(identifiers: .seeded(9)))
        for change in sink.changes { try rebuilt.builder.apply(change) }
        try rebuilt.advanceToNextLeg(at: t(20))
        let ids = rebuilt.builder.activities().map(\.id)
        #expect(Set(ids).count == ids.count)
    }

    /// Activities added straight on the builder move the leg plan the same in a replay as live.
    @Test func aReplayEndsOnTheSameLegAsTheLiveSession() throws {
        let sink = InMemoryRecording()
        let config = WorkoutConfiguration(activityType: .swimBikeRun)
        let session = try WorkoutSession(configuration: config, clock: ManualClock(t(0)), sink: sink)
        try session.start(at: t(0))
        let swim = try #require(session.builder.currentActivity(at: t(0)))
        try session.builder.updateActivity(id: swim.id, end: t(10))
        try session.builder.addActivity(configuration: WorkoutConfiguration(activityType: .transition), start: t(10))
        let rebuilt = try WorkoutSession(configuration: config, clock: ManualClock(t(0)))
        for change in sink.changes { try rebuilt.builder.apply(change) }
        #expect(rebuilt.currentLegIndex == session.currentLegIndex)
    }
}
