import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// One leg of a synthetic race: constant values so the expected statistics follow from the plan.
private struct Leg {
    var type: WorkoutActivityType
    var seconds: Int
    var heartRate: Double
    var distanceType: QuantityType
    var metresPerSecond: Double
    var power: (QuantityType, Double)?
}

private let legs = [
    Leg(type: .swimming, seconds: 1500, heartRate: 140, distanceType: .distanceSwimming, metresPerSecond: 1.0),
    Leg(type: .transition, seconds: 120, heartRate: 150, distanceType: .distanceWalkingRunning, metresPerSecond: 2.0),
    Leg(
        type: .cycling, seconds: 3600, heartRate: 145, distanceType: .distanceCycling, metresPerSecond: 10,
        power: (.cyclingPower, 220)),
    Leg(type: .transition, seconds: 60, heartRate: 155, distanceType: .distanceWalkingRunning, metresPerSecond: 2.5),
    Leg(
        type: .running, seconds: 2400, heartRate: 160, distanceType: .distanceWalkingRunning, metresPerSecond: 4,
        power: (.runningPower, 260)),
]

@Suite("Swim-bike-run")
struct TriathlonTests {
    /// Races the plan through a session: 1 Hz heart rate, per-second distance, power where the leg has it,
    /// and cycling power sent during the run (which the run leg does not collect).
    private func race(batch: Int, sink: (any WorkoutRecordingSink)? = nil, seed: UInt64 = 7) throws -> Workout {
        let clock = ManualClock(t(0))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun, swimmingLocationType: .openWater),
            clock: clock, options: BuilderOptions(identifiers: .seeded(seed)), sink: sink)
        try session.start(at: t(0))
        var now = 0
        var pending: [QuantitySample] = []
        for (index, leg) in legs.enumerated() {
            if index > 0 { try session.advanceToNextLeg(at: t(Double(now))) }
            for second in 0..<leg.seconds {
                let at = Double(now + second)
                pending.append(hr(leg.heartRate, at: at))
                pending.append(
                    QuantitySample(leg.distanceType, leg.metresPerSecond, at: t(at), end: t(at + 1), source: footPod))
                if let (type, watts) = leg.power {
                    pending.append(QuantitySample(type, watts, at: t(at), source: bikeSensor))
                }
                if leg.type == .running {
                    pending.append(QuantitySample(.cyclingPower, 999, at: t(at), source: bikeSensor))
                }
                if pending.count >= batch {
                    try session.builder.add(pending)
                    pending.removeAll()
                }
            }
            now += leg.seconds
        }
        try session.builder.add(pending)
        clock.set(t(Double(now)))
        try session.stop()
        try session.end()
        return try session.builder.finishWorkout()
    }

    @Test func fiveOrderedLegsWithTheirOwnStatistics() throws {
        let workout = try race(batch: 64)
        #expect(workout.activities.count == 5)
        #expect(workout.activities.map(\.configuration.activityType) == legs.map(\.type))
        var boundary = 0
        for (activity, leg) in zip(workout.activities, legs) {
            #expect(activity.start == t(Double(boundary)))
            boundary += leg.seconds
            #expect(activity.end == t(Double(boundary)))
            #expect(activity.duration == Double(leg.seconds))
            let heartRate = try #require(activity.statistics[.heartRate])
            #expect(heartRate.averageValue == leg.heartRate)
            #expect(heartRate.minimum?.value == leg.heartRate)
            #expect(heartRate.maximum?.value == leg.heartRate)
            #expect(heartRate.sampleCount == leg.seconds)
            let distance = try #require(activity.statistics[leg.distanceType]?.sumValue)
            #expect(abs(distance - leg.metresPerSecond * Double(leg.seconds)) < 1e-6)
            if let (type, watts) = leg.power {
                #expect(activity.statistics[type]?.averageValue == watts)
            }
            // Each leg keeps only its own types.
            let otherDistances = Set([QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning])
                .subtracting([leg.distanceType])
            for type in otherDistances { #expect(activity.statistics[type] == nil) }
        }
        #expect(workout.activities[4].statistics[.cyclingPower] == nil)
        #expect(
            workout.counters[.notCollected] == legs[4].seconds, "cycling power during the run is dropped and counted")
        let total = legs.reduce(0) { $0 + $1.seconds }
        #expect(workout.elapsed == Double(total))
        let weighted = legs.reduce(0.0) { $0 + $1.heartRate * Double($1.seconds) } / Double(total)
        #expect(abs(try #require(workout.statistics[.heartRate]?.averageValue) - weighted) < 1e-9)
        #expect(workout.statistics[.heartRate]?.maximum?.value == 160)
    }

    @Test func advancingPastTheLastLegIsRefused() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        for second in 1...4 { try session.advanceToNextLeg(at: t(Double(second))) }
        #expect(session.currentLegIndex == 4)
        #expect(throws: EngineError.noNextLeg(.swimBikeRun)) { try session.advanceToNextLeg(at: t(5)) }
        #expect(session.builder.activities().count == 5)
    }

    @Test func batchingDoesNotChangeTheResult() throws {
        #expect(try race(batch: 1) == race(batch: 5000))
    }

    @Test func replayingTheRecordedChangesRebuildsTheSameWorkout() throws {
        let sink = InMemoryRecording()
        let original = try race(batch: 100, sink: sink)
        let rebuilt = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun, swimmingLocationType: .openWater),
            clock: ManualClock(t(0)), options: BuilderOptions(identifiers: .seeded(7)))
        var finished: Workout?
        for change in sink.changes {
            if case .finished(let workout) = change { finished = workout; continue }
            try rebuilt.builder.apply(change)
        }
        #expect(rebuilt.state == .ended)
        #expect(try rebuilt.builder.finishWorkout() == original)
        #expect(finished == original)
        #expect(sink.samples.count == original.counters.accepted)
    }

    @Test func seededIdentifiersMakeRunsIdenticalAndSeedsDiffer() throws {
        #expect(try race(batch: 64, seed: 1) == race(batch: 64, seed: 1))
        #expect(try race(batch: 64, seed: 1).id != race(batch: 64, seed: 2).id)
    }
}
