import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

private func power(_ watts: Double, at seconds: Double) -> QuantitySample {
    QuantitySample(.cyclingPower, watts, at: t(seconds), source: bikeSensor)
}

/// Where a reading's value and hold go when a pause, an activity boundary or a resend meets it.
@Suite("Live builder: readings at pauses, boundaries and resends")
struct ReadingAttributionTests {
    /// A reading taken while paused is kept out of min/max, and its hold does not run on into active time.
    @Test func aReadingTakenWhilePausedNeitherCountsNorHoldsIntoActiveTime() throws {
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

    /// A hold crossing an activity start feeds neither the next activity nor a transition that collects no power.
    @Test func aHoldStopsAtAnActivityBoundary() throws {
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
        // … so it has no cycling power statistics (it had average 100, no min/max, sampleCount 0).
        #expect(activities[2].statistics[.cyclingPower] == nil)
    }

    /// A leg change placed exactly at the last folded instant (inside the reorder window) gives that reading to the new leg.
    @Test func aLegChangeAtTheLastFoldedInstantMovesThatReadingToTheNewLeg() throws {
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

    /// A pause at the last folded instant keeps the reading at that instant out of min/max.
    @Test func aPauseAtTheLastFoldedInstantKeepsThatReadingOutOfMinAndMax() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(100, at: 1), hr(190, at: 2), hr(100, at: 4)])  // folds up to 2
        try builder.add([WorkoutEvent(type: .pause, start: t(2))])
        try builder.add([WorkoutEvent(type: .resume, start: t(4))])
        try builder.endCollection(at: t(5))
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(stats.maximum?.value == 100)
    }

    /// An exact duplicate of a folded reading that shares its start with another reading is dropped as a duplicate.
    @Test func aResentReadingSharingItsStartWithAnotherIsADuplicate() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 10), hr(101, at: 10), hr(120, at: 13)])
        let report = try builder.add([hr(100, at: 10)])
        #expect(report.dropped[.duplicate] == 1)
    }

    /// Finite but extreme dates overflowed the proration to NaN: such a sample is refused and counted.
    @Test func aSampleOverExtremeFiniteDatesIsRefusedNotStoredAsNaN() throws {
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
