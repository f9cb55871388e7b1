import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// A multisport of any sequence of legs (`BuilderOptions.legs`): stated by the caller, or found from the sensors.
@Suite("Leg sequences: stated and detected")
struct LegSequenceTests {
    /// One second of a run at 3.5 m/s (a foot pod's speed, cadence and distance).
    private func run(_ second: Int) -> [QuantitySample] {
        [
            QuantitySample(.runningSpeed, 3.5, at: t(Double(second)), source: footPod),
            QuantitySample(.runningCadence, 170, at: t(Double(second)), source: footPod),
            QuantitySample(
                .distanceWalkingRunning, 3.5, at: t(Double(second)), end: t(Double(second + 1)), source: footPod),
        ]
    }

    /// One second of a ride at 8 m/s.
    private func ride(_ second: Int) -> [QuantitySample] {
        [
            QuantitySample(.cyclingSpeed, 8, at: t(Double(second)), source: bikeSensor),
            QuantitySample(.cyclingCadence, 90, at: t(Double(second)), source: bikeSensor),
            QuantitySample(.distanceCycling, 8, at: t(Double(second)), end: t(Double(second + 1)), source: bikeSensor),
        ]
    }

    /// One second standing still in a transition zone (the foot pod reads 0 m/s).
    private func still(_ second: Int) -> [QuantitySample] {
        [QuantitySample(.runningSpeed, 0, at: t(Double(second)), source: footPod)]
    }

    /// A duathlon: run 0–600 s, stand at the rack 600–660 s, ride 660–1500 s, stand 1500–1560 s, run 1560–2000 s.
    private func duathlon(_ session: WorkoutSession) throws -> Workout {
        try session.start(at: t(0))
        for second in 0..<2000 {
            let batch: [QuantitySample] =
                switch second {
                case ..<600: run(second)
                case ..<660: still(second)
                case ..<1500: ride(second)
                case ..<1560: still(second)
                default: run(second)
                }
            try session.builder.add(batch)
        }
        try session.stop(at: t(2000))
        try session.end(at: t(2000))
        return try session.builder.finishWorkout()
    }

    /// Where the legs begin (seconds) and what they are.
    private func legs(_ workout: Workout) -> [(WorkoutActivityType, Double)] {
        workout.activities.map { ($0.configuration.activityType, $0.start.timeIntervalSince(t(0))) }
    }

    private func expectDuathlon(_ workout: Workout) {
        let found = legs(workout)
        #expect(found.map(\.0) == [.running, .transition, .cycling, .transition, .running])
        guard found.count == 5 else { return }
        // The run ends at its last step (599 s), the ride begins at its first turn (660 s), ends at its last
        // (1499 s), and the run begins at its first step after the rack (1560 s): within 2 s each.
        for (index, expected) in [(0, 0.0), (1, 600), (2, 660), (3, 1500), (4, 1560)] {
            #expect(abs(found[index].1 - expected) <= 2, "leg \(index + 1) at \(found[index].1) s")
        }
        #expect(workout.activities.dropFirst().allSatisfy { $0.metadata[MetadataKey.detectedBy] == .string("automatic") })
    }

    /// A stated race format (run, bike, run) plans five legs and the detector moves along it.
    @Test func aStatedDuathlonIsFoundLegByLeg() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .stated([.running, .cycling, .running])))
        #expect(session.plannedLegs.map(\.activityType) == [.running, .transition, .cycling, .transition, .running])
        expectDuathlon(try duathlon(session))
    }

    /// Not stated, the sequence comes from the sensors: the plan grows as legs are found.
    @Test func anUnstatedSequenceIsDetected() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .detected))
        #expect(session.plannedLegs.isEmpty)
        let workout = try duathlon(session)
        expectDuathlon(workout)
        #expect(session.plannedLegs.map(\.activityType) == workout.activities.map(\.configuration.activityType))
    }

    /// A stop at a drink station in the middle of a run, running on after it, ends no leg.
    @Test func aStopInARunEndsNothing() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .detected))
        try session.start(at: t(0))
        for second in 0..<1200 { try session.builder.add(second >= 500 && second < 590 ? still(second) : run(second)) }
        try session.stop(at: t(1200))
        let workout = try session.builder.finishWorkout()
        #expect(workout.activities.map(\.configuration.activityType) == [.running])
    }

    /// The lap button moves along a stated plan, as along a triathlon's.
    @Test func theButtonMovesAlongAStatedPlan() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .stated([.swimming, .running, .swimming])))
        try session.start(at: t(0))
        try session.advanceToNextLeg(at: t(100))
        try session.advanceToNextLeg(at: t(130))
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming, .transition, .running])
        #expect(session.currentLegIndex == 2)
    }

    /// The button on a detected sequence, which plans no leg ahead, says so and what to do instead; it does not
    /// name the workout's type as a plan ("the other plan"). Past a stated sequence's last leg, the error names
    /// that sequence.
    @Test func theButtonPastThePlanSaysWhichPlanEnded() throws {
        let detected = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .detected))
        try detected.start(at: t(0))
        #expect(throws: EngineError.noNextPlannedLeg(sports: [], detected: true)) {
            try detected.advanceToNextLeg(at: t(100))
        }
        let message = EngineError.noNextPlannedLeg(sports: [], detected: true).description
        #expect(message.contains("detected") && message.contains("beginNewActivity") && !message.contains("other"))
        let stated = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .stated([.running, .cycling])))
        try stated.start(at: t(0))
        try stated.advanceToNextLeg(at: t(100))
        try stated.advanceToNextLeg(at: t(130))
        #expect(throws: EngineError.noNextPlannedLeg(sports: [.running, .cycling], detected: false)) {
            try stated.advanceToNextLeg(at: t(200))
        }
        // A swim-bike-run configuration's own plan keeps its error.
        #expect(EngineError.noNextLeg(.swimBikeRun).description.contains("swimBikeRun"))
        // A detected sequence under a swim-bike-run configuration (`import --auto-segment` of a triathlon) plans
        // nothing ahead either: not "the swimBikeRun plan has no leg after the current one" while its own plan
        // holds five.
        let triathlon = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun, swimmingLocationType: .openWater),
            clock: ManualClock(t(0)), options: BuilderOptions(legs: .detected))
        #expect(triathlon.plannedLegs.isEmpty)
        try triathlon.start(at: t(0))
        #expect(throws: EngineError.noNextPlannedLeg(sports: [], detected: true)) {
            try triathlon.advanceToNextLeg(at: t(100))
        }
    }

    /// A journal's changes rebuild a detected plan's legs and workout: the detector's decisions are journaled.
    @Test func aReplayRebuildsTheDetectedLegs() throws {
        let sink = InMemoryRecording()
        let options = BuilderOptions(identifiers: .seeded(5), legs: .detected)
        let configuration = WorkoutConfiguration(activityType: .other)
        let original = try duathlon(
            try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)), options: options, sink: sink))
        let rebuilt = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)), options: options)
        for change in sink.changes { try rebuilt.builder.apply(change) }
        #expect(rebuilt.plannedLegs.map(\.activityType) == original.activities.map(\.configuration.activityType))
        #expect(rebuilt.currentLegIndex == 4)
        #expect(rebuilt.builder.activities() == original.activities)
    }

    /// A stated sequence needs two or more of swimming, cycling and running, never one sport twice in a row.
    @Test(arguments: [
        [WorkoutActivityType.running], [.running, .running, .cycling], [.running, .walking], [],
    ])
    func aStatedSequenceThatIsNoMultisportIsRefused(sports: [WorkoutActivityType]) {
        #expect(throws: EngineError.self) {
            try WorkoutSession(
                configuration: WorkoutConfiguration(activityType: .other), options: BuilderOptions(legs: .stated(sports)))
        }
    }

    /// A sequence to be detected with detection off would record no activity at all: refused.
    @Test func aDetectedSequenceWithoutDetectionIsRefused() {
        var options = BuilderOptions(legs: .detected)
        options.automaticTransitions.enabled = false
        #expect(throws: EngineError.self) {
            try WorkoutSession(configuration: WorkoutConfiguration(activityType: .other), options: options)
        }
    }
}
