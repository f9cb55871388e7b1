import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

private func power(_ watts: Double, at seconds: Double) -> QuantitySample {
    QuantitySample(.cyclingPower, watts, at: t(seconds), source: bikeSensor)
}

@Suite("Regressions found in review")
struct RegressionTests {
    // B1: a reading taken while paused is kept out of min/max but its hold runs on into active time.
    @Test func pausedReadingPushesAverageAboveMaximum() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(100, at: 1), hr(100, at: 2)])
        try builder.add([WorkoutEvent(type: .pause, start: t(3))])
        try builder.add([hr(190, at: 4)])  // paused: not in min/max …
        try builder.add([WorkoutEvent(type: .resume, start: t(5))])
        try builder.add([hr(120, at: 7)])  // … but 190 holds over the active [5, 7)
        try builder.endCollection(at: t(8))
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(stats.maximum?.value == 120)
        #expect(try #require(stats.averageValue) <= 120)
    }

    // B1: a hold crossing an activity start feeds the next activity's average but not its min/max/count.
    @Test func holdCrossingActivityBoundaryLeaksIntoNextActivity() throws {
        let (builder, _) = try collectingBuilder(.swimBikeRun)
        let hard = try builder.addActivity(configuration: WorkoutConfiguration(activityType: .cycling), start: t(0))
        try builder.add((0..<10).map { power(300, at: Double($0)) })
        try builder.updateActivity(id: hard.id, end: t(9.5))
        let easy = try builder.addActivity(configuration: WorkoutConfiguration(activityType: .cycling), start: t(9.5))
        try builder.add((10..<20).map { power(100, at: Double($0)) })
        try builder.updateActivity(id: easy.id, end: t(20))
        // A transition collects no power and receives no power sample …
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .transition), start: t(20))
        try builder.add([hr(150, at: 20), hr(150, at: 25)])
        try builder.endCollection(at: t(30))
        let activities = builder.activities()
        let easyPower = try #require(activities[1].statistics[.cyclingPower])
        #expect(easyPower.maximum?.value == 100)
        #expect(try #require(easyPower.averageValue) <= 100)
        // … yet it reports cycling power statistics (average 100, no min/max, sampleCount 0).
        #expect(activities[2].statistics[.cyclingPower] == nil)
    }

    // B2: a boundary placed exactly at the last folded instant leaves that reading in the old activity.
    @Test func legChangeAtLastFoldedInstantMisattributesReading() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add((0..<10).map { hr(140, at: Double($0)) })
        try session.builder.add((10...12).map { hr(170, at: Double($0)) })  // folds up to t = 10
        try session.advanceToNextLeg(at: t(10))  // 2 s back: allowed (reorder window)
        try session.stop(at: t(13))
        let activities = session.builder.activities()
        #expect(activities[0].statistics[.heartRate]?.maximum?.value == 140)
        #expect(activities[1].statistics[.heartRate]?.sampleCount == 3)
    }

    // B2: same with a pause: a reading at the pause instant is counted in min/max.
    @Test func pauseAtLastFoldedInstantCountsPausedReading() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(100, at: 1), hr(190, at: 2), hr(100, at: 4)])  // folds up to 2
        try builder.add([WorkoutEvent(type: .pause, start: t(2))])
        try builder.add([WorkoutEvent(type: .resume, start: t(4))])
        try builder.endCollection(at: t(5))
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(stats.maximum?.value == 100)
    }

    // B3: a call that throws still advances the shared seeded id generator.
    @Test func failedCallConsumesSeededIdentifier() throws {
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

    // B3: one options value used for the original and the rebuilt builder gives different workout ids.
    @Test func sharedOptionsGiveDifferentWorkoutIDs() throws {
        let options = BuilderOptions(identifiers: .seeded(3))
        let config = WorkoutConfiguration(activityType: .running)
        let first = try LiveWorkoutBuilder(configuration: config, options: options)
        let second = try LiveWorkoutBuilder(configuration: config, options: options)
        #expect(first.workoutID == second.workoutID)
    }

    // B4: replay with default options does not rebuild the same workout: the id is not recorded.
    @Test func replayWithDefaultOptionsChangesWorkoutID() throws {
        let sink = InMemoryRecording()
        let (builder, _) = try collectingBuilder(sink: sink)
        try builder.add([hr(100, at: 0), hr(110, at: 1)])
        try builder.endCollection(at: t(2))
        let original = try builder.finishWorkout()
        let replay = try LiveWorkoutBuilder(configuration: WorkoutConfiguration(activityType: .running))
        for change in sink.changes { try replay.apply(change) }
        #expect(replay.workoutID == original.id)
    }

    // B4: after recovery, the next activity gets an id that an existing activity already has.
    @Test func recoveredSessionReissuesAnExistingActivityID() throws {
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

    // B5: replay advances the leg plan for activities added straight on the builder; live does not.
    @Test func replayAdvancesLegIndexDifferently() throws {
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

    // B6: an exact duplicate of a folded reading that shares its start with another reading is accepted.
    @Test func resentReadingIsNotDetectedAsDuplicate() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 10), hr(101, at: 10), hr(120, at: 13)])
        let report = try builder.add([hr(100, at: 10)])
        #expect(report.dropped[.duplicate] == 1)
    }

    // B7: finite but extreme dates overflowed the proration to NaN; such a sample is now refused.
    @Test func extremeFiniteDatesStoreNaN() throws {
        let builder = try LiveWorkoutBuilder(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)))
        try builder.beginCollection(at: Date(timeIntervalSinceReferenceDate: -1e308))
        try builder.add([
            QuantitySample(
                .distanceWalkingRunning, 5, at: Date(timeIntervalSinceReferenceDate: -1e308),
                end: Date(timeIntervalSinceReferenceDate: 1e308), source: footPod)
        ])
        #expect(builder.counters[.badInterval] == 1)
        #expect(builder.statistics(for: .distanceWalkingRunning) == nil)
    }
}
