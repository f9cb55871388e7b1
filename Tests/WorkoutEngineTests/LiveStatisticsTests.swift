import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// The builder's statistics: time-weighted averages, held values, cumulative samples split at boundaries.
@Suite("Live builder: statistics")
struct LiveStatisticsTests {
    @Test func timeWeightedAverageWithADropoutLongerThanTheHoldCap() throws {
        let (builder, _) = try collectingBuilder(options: BuilderOptions(holdCap: 5))
        try builder.add((0..<60).map { hr(100, at: Double($0)) })
        // Strap drops out from 60 s to 120 s.
        try builder.add((120..<180).map { hr(160, at: Double($0)) })
        try builder.endCollection(at: t(180))
        let stats = try #require(builder.statistics(for: .heartRate))
        // 100 holds for 59 s + 5 s (the cap) = 64 s; 160 holds for 60 s; the dropout's 55 s count for nothing.
        let expected = (100.0 * 64 + 160.0 * 60) / (64 + 60)
        #expect(abs(try #require(stats.averageValue) - expected) < 1e-9)
        #expect(stats.coveredTime == 124)
        #expect(stats.duration == 180)
        #expect(stats.minimum?.value == 100)
        #expect(stats.maximum?.value == 160)
        #expect(stats.mostRecent?.value == 160)
        #expect(stats.mostRecentDate == t(179))
    }

    @Test func regularOneHertzAverageIsTheArithmeticMean() throws {
        let (builder, _) = try collectingBuilder()
        let values = (0..<300).map { 120 + Double(($0 * 37) % 41) }
        try builder.add(values.enumerated().map { hr($0.element, at: Double($0.offset)) })
        try builder.endCollection(at: t(300))
        let mean = values.reduce(0, +) / Double(values.count)
        #expect(abs(try #require(builder.statistics(for: .heartRate)?.averageValue) - mean) < 1e-9)
    }

    @Test func liveStatisticsHoldTheLastValueUpToNow() throws {
        let (builder, clock) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(200, at: 10)])
        clock.set(t(12))
        // 100 holds 5 s (cap), 200 holds 2 s up to now.
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(abs(try #require(stats.averageValue) - (500.0 + 400) / 7) < 1e-9)
        #expect(builder.elapsedTime() == 12)
    }

    @Test func cumulativeSampleStraddlingABoundaryIsSplitInProportion() throws {
        let clock = ManualClock(t(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: clock,
            options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: Set(QuantityType.allCases))))
        try session.start(at: t(0))
        let first = try session.beginNewActivity(configuration: WorkoutConfiguration(activityType: .running), at: t(0))
        let second = try session.beginNewActivity(
            configuration: WorkoutConfiguration(activityType: .walking), at: t(100))
        // 120 m over 90...110: 10 of its 20 s lie on each side of the boundary at 100.
        try session.builder.add([
            QuantitySample(.distanceWalkingRunning, 120, at: t(90), end: t(110), source: footPod)
        ])
        // 60 m over 150...180 with a pause covering 160...170: only 40 m are active time.
        try session.pause(at: t(160))
        try session.resume(at: t(170))
        try session.builder.add([
            QuantitySample(.distanceWalkingRunning, 60, at: t(150), end: t(180), source: footPod)
        ])
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        let byID = Dictionary(uniqueKeysWithValues: workout.activities.map { ($0.id, $0) })
        let a = try #require(byID[first.id]?.statistics[.distanceWalkingRunning]?.sumValue)
        let b = try #require(byID[second.id]?.statistics[.distanceWalkingRunning]?.sumValue)
        #expect(abs(a - 60) < 1e-9)
        #expect(abs(b - (60 + 40)) < 1e-9)
        #expect(abs(try #require(workout.statistics[.distanceWalkingRunning]?.sumValue) - 160) < 1e-9)
    }
}
