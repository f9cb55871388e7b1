import Foundation
import Testing
import WorkoutTestSupport
import WorkoutModel
@testable import WorkoutEngine

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

    /// The order a batch carries its samples in (the builder takes any).
    enum Order: String, CaseIterable, Sendable {
        case oldestFirst, newestFirst, shuffled
    }

    /// A ride (0–600 s), a walk through T (600–720 s: the foot pod's distance at 1 m/s, on foot but no run yet) with
    /// one speed sample at 3 m/s in it (630 s: a foot pod's jump, or a record's GPS speed), then a run whose foot pod
    /// sends its speed alone (3.2 m/s, no cadence) at the seconds `runSpeeds` gives, to 1200 s; `beside` sends 0 m/s
    /// every second from 600 s (a second source: a watch indoors, beside the foot pod).
    private func walkThenRun(
        runSpeeds: [Int] = Array(720..<1200), beside: SourceDevice? = nil
    ) -> [[QuantitySample]] {
        let paced = Set(runSpeeds)
        return (0..<1200).map { second in
            let at = t(Double(second))
            var batch: [QuantitySample] =
                switch second {
                case ..<600: ride(second)
                case ..<720:
                    [QuantitySample(.distanceWalkingRunning, 1, at: at, end: t(Double(second + 1)), source: footPod)]
                        + (second == 630 ? [QuantitySample(.runningSpeed, 3, at: at, source: footPod)] : [])
                default: paced.contains(second) ? [QuantitySample(.runningSpeed, 3.2, at: at, source: footPod)] : []
                }
            if let beside, second >= 600 { batch.append(QuantitySample(.runningSpeed, 0, at: at, source: beside)) }
            return batch
        }
    }

    /// The legs detected from `seconds` (one list of samples a second), sent in batches of `batch` seconds each
    /// carrying its samples in `order`.
    private func detect(
        _ seconds: [[QuantitySample]], batch: Int = 1, order: Order = .oldestFirst
    ) throws -> [(WorkoutActivityType, Double)] {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(t(0)),
            options: BuilderOptions(legs: .detected))
        try session.start(at: t(0))
        var generator = SeededGenerator(seed: 26)
        for first in stride(from: 0, to: seconds.count, by: batch) {
            var samples = Array(seconds[first..<Swift.min(first + batch, seconds.count)].joined())
            switch order {
            case .oldestFirst: break
            case .newestFirst: samples.sort { $0.start > $1.start }
            case .shuffled: samples.shuffle(using: &generator)
            }
            try session.builder.add(samples)
        }
        let end = t(Double(seconds.count))
        try session.stop(at: end)
        try session.end(at: end)
        return legs(try session.builder.finishWorkout())
    }

    /// Ride, T from 600 s, run from 720 s, each boundary within 2 s.
    private func expectRideWalkRun(_ found: [(WorkoutActivityType, Double)], _ context: String = "in order") {
        #expect(found.map(\.0) == [.cycling, .transition, .running], "\(context): \(found)")
        guard found.count == 3 else { return }
        #expect(abs(found[1].1 - 600) <= 2, "\(context): T at \(found[1].1) s")
        #expect(abs(found[2].1 - 720) <= 2, "\(context): run at \(found[2].1) s")
    }

    /// A running pace begins a run only when it holds 2 s: one on-foot speed sample at 3 m/s in a walk through the
    /// transition zone is not enough (it began the run 90 s early, at 630 s). The run that follows carries an
    /// on-foot speed alone (a foot pod without cadence): once its pace has held 2 s it begins where its first sample
    /// is.
    @Test func oneSpeedSampleAtPaceBeginsNoRun() throws {
        expectRideWalkRun(try detect(walkThenRun()))
    }

    /// The same samples give the same legs whatever order a batch carries them in (newest first: the rule that
    /// followed samples as they came restarted its row at each older sample and never began the run).
    @Test(arguments: Order.allCases) func aBatchInAnyOrderGivesTheSameLegs(order: Order) throws {
        let found = try detect(walkThenRun(), batch: 10, order: order)
        expectRideWalkRun(found, "\(order)")
        let inOrder = try detect(walkThenRun(), batch: 10)
        #expect(found.map(\.0) == inOrder.map(\.0) && found.map(\.1) == inOrder.map(\.1), "\(order)")
    }

    /// A second source reading 0 m/s every second beside the foot pod's pace (a watch indoors: an indoor brick)
    /// breaks none of the foot pod's rows: a row is one source's samples (a rule with one row for every source never
    /// began the run: each 0 m/s cleared it).
    @Test func anotherSourceAtZeroBreaksNoRow() throws {
        expectRideWalkRun(try detect(walkThenRun(beside: watch)))
        expectRideWalkRun(try detect(walkThenRun(beside: watch), batch: 10, order: .newestFirst), "newest first")
    }

    /// Speed samples 16–30 s apart (smart recording) still make a row: the run begins at its first sample (a rule
    /// taking samples at most 15 s apart as a row never began it). The one sample of the walk lies 90 s before the
    /// run's first: no row with it.
    @Test func speedSamplesUpTo30SecondsApartHold() throws {
        var run: [Int] = []
        var second = 720
        while second < 1200 {
            run.append(second)
            second += run.count % 2 == 0 ? 16 : 30
        }
        expectRideWalkRun(try detect(walkThenRun(runSpeeds: run)))
        expectRideWalkRun(try detect(walkThenRun(runSpeeds: run), batch: 10, order: .newestFirst), "newest first")
    }

    /// A source's rows of speed samples on foot (`TransitionDetector.FootSpeeds`) are a function of its samples, not of
    /// the order they come in: 400 samples (0–3 m/s, 0.3–31 s apart) added oldest first, newest first and in three
    /// shuffled orders hold the same steps and paces as the rows of the samples sorted by time (a row: samples one after
    /// the other from 0.5 m/s, or from 2 m/s, at most 30 s apart, held once it spans 2 s). A slower sample that comes
    /// late breaks the held row it falls in, and its parts are held again only if they still span 2 s. Added oldest
    /// first with the older samples dropped as they go (`keepingFrom`), the kept ones hold the same.
    @Test func aSourcesRowsAreTheSameInAnyOrder() {
        var generator = SeededGenerator(seed: 7)
        var samples: [(time: Double, value: Double)] = []
        var time = 1000.0
        for _ in 0..<400 {
            time += [0.3, 1, 1, 1, 2, 5, 16, 31].randomElement(using: &generator) ?? 1
            samples.append((time, [0, 0.3, 0.6, 1.5, 2.5, 2.5, 3, 3].randomElement(using: &generator) ?? 0))
        }
        var expected = [UInt8](repeating: 0, count: samples.count)
        for (bit, bound) in [(TransitionDetector.FootSpeeds.step, 0.5), (TransitionDetector.FootSpeeds.pace, 2.0)] {
            var first = 0
            while first < samples.count {
                guard samples[first].value >= bound else {
                    first += 1
                    continue
                }
                var last = first
                while last + 1 < samples.count, samples[last + 1].value >= bound,
                    samples[last + 1].time - samples[last].time <= 30
                {
                    last += 1
                }
                if samples[last].time - samples[first].time >= 2 {
                    for index in first...last { expected[index] |= bit }
                }
                first = last + 1
            }
        }
        #expect(expected.contains { $0 & TransitionDetector.FootSpeeds.pace != 0 } && expected.contains(0))
        var orders: [(String, [(time: Double, value: Double)])] = [
            ("oldest first", samples), ("newest first", samples.reversed()),
        ]
        for round in 1...3 { orders.append(("shuffled \(round)", samples.shuffled(using: &generator))) }
        for (name, order) in orders {
            var rows = TransitionDetector.FootSpeeds(source: footPod)
            for sample in order { _ = rows.add(sample.value, at: sample.time, keepingFrom: -.infinity) }
            #expect(rows.times == samples.map(\.time), "\(name)")
            #expect(rows.held == expected, "\(name): \(zip(rows.held, expected).filter { $0 != $1 }.count) differ")
        }
        var kept = TransitionDetector.FootSpeeds(source: footPod)
        for sample in samples { _ = kept.add(sample.value, at: sample.time, keepingFrom: sample.time - 400) }
        #expect(kept.dropped != nil)
        #expect(kept.held == Array(expected.suffix(kept.held.count)))
    }

    /// A late sample that joins the newest dropped sample's row to a held row makes that row held in the dropped
    /// summary too, so a slower sample coming later still breaks it: 29 s joins the dropped 0 s (both from 0.5 m/s,
    /// 29 s apart) to the held 42–52 s; 32 s cuts 29 s off from 42 s, and 28 s from 0 s, leaving 29 s alone (no step).
    @Test func aRowReachingIntoTheDroppedSamplesBreaksLikeAnyOther() {
        var rows = TransitionDetector.FootSpeeds(source: footPod)
        for (time, value) in [(0.0, 1.0), (1000, 3), (52, 3), (42, 3), (29, 3), (32, 0.2), (28, 0.2)] {
            _ = rows.add(value, at: time, keepingFrom: time - 608)
        }
        #expect(rows.dropped?.time == 0)
        let index = rows.times.firstIndex(of: 29)
        #expect(index.map { rows.held[$0] } == 0, "29 s is a row of its own: no step, no pace")
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
