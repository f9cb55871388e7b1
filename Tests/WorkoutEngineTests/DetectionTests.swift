import Foundation
import Testing
@testable import WorkoutEngine
import WorkoutModel

@Suite("Auto-pause and automatic transitions")
struct DetectionTests {
    /// A ride at 8 m/s with a stop (speed 0) from `stop` for `length` seconds, 1 Hz.
    private func ride(until end: Int, stop: Int, length: Int) -> [[QuantitySample]] {
        (0..<end).map { second in
            let stopped = second >= stop && second < stop + length
            return [
                QuantitySample(.cyclingSpeed, stopped ? 0 : 8, at: t(Double(second)), source: bikeSensor),
                QuantitySample(
                    .distanceCycling, stopped ? 0 : 8, at: t(Double(second)), end: t(Double(second + 1)),
                    source: bikeSensor),
            ]
        }
    }

    @Test func aStopOnTheBikeIsAMotionPauseExcludedFromActiveTime() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
            options: BuilderOptions(autoPause: .standard))
        try session.start(at: t(0))
        for batch in ride(until: 150, stop: 60, length: 30) { try session.builder.add(batch) }
        try session.stop(at: t(150))
        let workout = try session.builder.finishWorkout()
        let motion = workout.events.filter { $0.type == .motionPaused || $0.type == .motionResumed }
        #expect(motion.map(\.type) == [.motionPaused, .motionResumed])
        #expect(motion.map(\.start) == [t(60), t(90)])
        #expect(workout.duration == 120)
        #expect(abs((workout.statistics[.distanceCycling]?.sum?.value ?? 0) - 120 * 8) < 1e-6)
    }

    @Test func withoutAutoPauseAStopIsActiveTime() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        for batch in ride(until: 150, stop: 60, length: 30) { try session.builder.add(batch) }
        try session.stop(at: t(150))
        let workout = try session.builder.finishWorkout()
        #expect(workout.events.isEmpty)
        #expect(workout.duration == 150)
    }

    @Test func aShortSlowdownUnderTheHoldTimeDoesNotPause() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
            options: BuilderOptions(autoPause: .standard))
        try session.start(at: t(0))
        for batch in ride(until: 100, stop: 50, length: 2) { try session.builder.add(batch) }
        try session.stop(at: t(100))
        #expect(try session.builder.finishWorkout().events.isEmpty)
    }

    @Test func anExplicitLegChangeTurnsDetectionOff() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        #expect(session.detectsTransitions)
        try session.advanceToNextLeg(at: t(600))
        #expect(!session.detectsTransitions)
        // Riding cues no longer begin a leg by themselves.
        try session.builder.add([QuantitySample(.cyclingCadence, 90, at: t(700), source: bikeSensor)])
        #expect(session.currentLegIndex == 1)
    }

    @Test func ridingAfterSwimmingBeginsT1AndTheBikeWhereTheCuesChange() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        for second in 0..<300 {
            try session.builder.add([
                QuantitySample(
                    .distanceSwimming, 1, at: t(Double(second)), end: t(Double(second + 1)), source: watch)
            ])
        }
        // A 4 s transition, under the detector's 10 s quiet window: the ride's first cue ends it.
        for second in 304..<400 {
            try session.builder.add([QuantitySample(.cyclingCadence, 85, at: t(Double(second)), source: bikeSensor)])
        }
        let activities = session.builder.activities()
        #expect(activities.map(\.configuration.activityType) == [.swimming, .transition, .cycling])
        #expect(activities.map(\.start) == [t(0), t(300), t(304)])
        #expect(session.currentLegIndex == 2)
    }
}

private let transitionWatch = SourceDevice(name: "Watch", identifier: "watch-link:1")

private func swimBikeRunSession(options: BuilderOptions = BuilderOptions()) throws -> WorkoutSession {
    let session = try WorkoutSession(
        configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)), options: options)
    try session.start(at: t(0))
    return session
}

/// One second of a synthetic triathlon: swim [0, 300), T1 [300, 330), bike [330, 600), T2 [600, 620),
/// run [620, 800).
private func triathlonSecond(_ s: Int) -> [QuantitySample] {
    let a = t(Double(s))
    let b = t(Double(s + 1))
    switch s {
    case ..<300:
        return [QuantitySample(.distanceSwimming, 1.2, at: a, end: b, source: transitionWatch)]
    case ..<330, 600..<620:
        return [QuantitySample(.distanceWalkingRunning, 1.5, at: a, end: b, source: transitionWatch)]
    case ..<600:
        return [
            QuantitySample(.cyclingCadence, 85, at: a, source: bikeSensor),
            QuantitySample(.distanceCycling, 8, at: a, end: b, source: bikeSensor),
        ]
    default:
        return [
            QuantitySample(.runningCadence, 170, at: a, source: footPod),
            QuantitySample(.distanceWalkingRunning, 3, at: a, end: b, source: footPod),
        ]
    }
}

/// Auto-pause and transition detection with leg changes, out-of-order and dropped input, and replay.
extension DetectionTests {
    /// NEXT pressed while the bike is motion-paused (the rider stopped at the dismount line) resumes at the
    /// boundary, as a detected leg change does: T2, whose type has no auto-pause rule, is active throughout.
    @Test func anExplicitLegChangeWhileMotionPausedResumesForTheNextLeg() throws {
        let session = try swimBikeRunSession(options: BuilderOptions(autoPause: .standard))
        try session.advanceToNextLeg(at: t(10))  // T1
        try session.advanceToNextLeg(at: t(20))  // bike
        for s in 20..<100 {
            try session.builder.add([QuantitySample(.cyclingSpeed, s < 90 ? 8 : 0, at: t(Double(s)), source: bikeSensor)])
        }
        try session.advanceToNextLeg(at: t(100))  // T2, by the button
        for s in 100..<130 {
            try session.builder.add([
                QuantitySample(
                    .distanceWalkingRunning, 1.5, at: t(Double(s)), end: t(Double(s + 1)), source: transitionWatch)
            ])
        }
        try session.advanceToNextLeg(at: t(130))  // run
        for s in 130..<200 {
            try session.builder.add([QuantitySample(.runningSpeed, 3, at: t(Double(s)), source: footPod)])
        }
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        let t2 = workout.activities[3]
        #expect(t2.configuration.activityType == .transition)
        #expect(t2.duration == 30, "T2 active time")
    }

    /// A user pause dated a moment before the newest speed reading (inside the reorder window) is accepted
    /// with auto-pause on as without it, even when a detector placed a motion event at that reading.
    @Test func aUserPauseInsideTheReorderWindowWorksWithAutoPauseOn() throws {
        func run(_ autoPause: AutoPauseSettings?) throws -> WorkoutSession {
            let session = try WorkoutSession(
                configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
                options: BuilderOptions(autoPause: autoPause))
            try session.start(at: t(0))
            for s in 0...71 {
                let speed: Double = (60..<70).contains(s) ? 0 : 8
                try session.builder.add([QuantitySample(.cyclingSpeed, speed, at: t(Double(s)), source: bikeSensor)])
            }
            return session
        }
        let plain = try run(nil)
        #expect(throws: Never.self) { try plain.pause(at: t(69.5)) }
        let detecting = try run(.standard)
        #expect(throws: Never.self) { try detecting.pause(at: t(69.5)) }
    }

    /// Two speed readings that arrive swapped (inside the reorder window, which the builder sorts) give the
    /// same motion pause and duration as in order.
    @Test func speedsArrivingSlightlyOutOfOrderDoNotMoveTheMotionPause() throws {
        func ride(order: [Int]) throws -> Workout {
            let session = try WorkoutSession(
                configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
                options: BuilderOptions(autoPause: .standard))
            try session.start(at: t(0))
            for s in order {
                let speed: Double = (60..<90).contains(s) ? 0 : 8
                try session.builder.add([QuantitySample(.cyclingSpeed, speed, at: t(Double(s)), source: bikeSensor)])
            }
            try session.stop(at: t(120))
            return try session.builder.finishWorkout()
        }
        let inOrder = try ride(order: Array(0..<120))
        var swapped = Array(0..<120)
        swapped.swapAt(60, 61)
        let outOfOrder = try ride(order: swapped)
        #expect(inOrder.events.map(\.start) == [t(60), t(90)])
        #expect(outOfOrder.events.map(\.start) == inOrder.events.map(\.start))
        #expect(outOfOrder.duration == inOrder.duration)
    }

    // MARK: transitions

    /// A sample the builder drops as invalid (an out-of-range cadence during the swim) is counted and does
    /// not drive transition detection: the bike does not begin (DESIGN §5).
    @Test func aSampleDroppedAsInvalidDoesNotBeginTheBike() throws {
        let session = try swimBikeRunSession()
        for s in 0..<60 { try session.builder.add(triathlonSecond(s)) }
        let report = try session.builder.add([QuantitySample(.cyclingCadence, 9000, at: t(60), source: bikeSensor)])
        #expect(report.dropped[.outOfRange] == 1)
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming])
    }

    /// A dropped sample with a far-future start (end before start: badInterval) begins no leg, and the
    /// session can still be stopped now.
    @Test func aDroppedFutureDatedSampleNeitherBeginsALegNorBlocksTheStop() throws {
        let session = try swimBikeRunSession()
        for s in 0..<60 { try session.builder.add(triathlonSecond(s)) }
        let bogus = QuantitySample(.cyclingCadence, 90, at: t(100_000), end: t(99_999), source: bikeSensor)
        let report = try session.builder.add([bogus])
        #expect(report.dropped[.badInterval] == 1)
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming])
        #expect(throws: Never.self) { try session.stop(at: t(60)) }
    }

    /// The same race fed second by second and in two large batches gives the same legs, leg starts and
    /// notCollected count (the detector does not decide once per batch).
    @Test func batchingDoesNotChangeTheDetectedLegs() throws {
        let perSecond = try swimBikeRunSession()
        for s in 0..<800 { try perSecond.builder.add(triathlonSecond(s)) }
        try perSecond.stop(at: t(800))
        let a = try perSecond.builder.finishWorkout()
        #expect(a.activities.map(\.configuration.activityType) == [.swimming, .transition, .cycling, .transition, .running])

        let batched = try swimBikeRunSession()
        try batched.builder.add((0..<310).flatMap(triathlonSecond))
        try batched.builder.add((310..<800).flatMap(triathlonSecond))
        try batched.stop(at: t(800))
        let b = try batched.builder.finishWorkout()
        #expect(b.activities.map(\.configuration.activityType) == a.activities.map(\.configuration.activityType))
        #expect(b.activities.map(\.start) == a.activities.map(\.start))
        #expect(b.counters[.notCollected] == a.counters[.notCollected])
    }

    /// A batch that holds a detected leg change judges the speeds after it by the new leg's sport and auto-pause
    /// rule: the whole race in one batch, with a 30 s stop on the bike, pauses and resumes there as when fed
    /// second by second (the speeds used to be judged by the swim's context the batch began in, and dropped).
    @Test func speedsAfterALegChangeInTheSameBatchFollowTheNewLegsRule() throws {
        func second(_ s: Int) -> [QuantitySample] {
            guard (330..<600).contains(s) else { return triathlonSecond(s) }
            return triathlonSecond(s) + [
                QuantitySample(.cyclingSpeed, (450..<480).contains(s) ? 0 : 8, at: t(Double(s)), source: bikeSensor)
            ]
        }
        func motion(_ batches: [[QuantitySample]]) throws -> [(WorkoutEventType, Date)] {
            let session = try swimBikeRunSession(options: BuilderOptions(autoPause: .standard))
            for batch in batches { try session.builder.add(batch) }
            try session.stop(at: t(800))
            let workout = try session.builder.finishWorkout()
            #expect(
                workout.activities.map(\.configuration.activityType)
                    == [.swimming, .transition, .cycling, .transition, .running])
            return workout.events.filter { $0.type == .motionPaused || $0.type == .motionResumed }.map {
                ($0.type, $0.start)
            }
        }
        let perSecond = try motion((0..<800).map(second))
        #expect(perSecond.map(\.0) == [.motionPaused, .motionResumed])
        #expect(perSecond.first?.1 == t(450))
        let oneBatch = try motion([(0..<800).flatMap(second)])
        #expect(oneBatch.map(\.0) == perSecond.map(\.0))
        #expect(oneBatch.map(\.1) == perSecond.map(\.1))
    }

    /// A lookback too short for a window of `minimumEvidence` (10) seconds with cues after the last cue is
    /// refused (quietWindow 1 s, lookback 3 s could never end a swim); the shortest accepted, max(1, 10) + 2 =
    /// 12 s, still ends the swim at its last stroke and begins the bike at the ride's first cue when the cues come
    /// every second (a 1 s transition: the window's seconds without cues count against the lookback too).
    @Test func aLookbackTooShortForTheEvidenceIsRefusedAndTheShortestAcceptedEndsTheSwim() throws {
        func session(quietWindow: TimeInterval, lookback: TimeInterval) throws -> WorkoutSession {
            try WorkoutSession(
                configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)),
                options: BuilderOptions(
                    automaticTransitions: TransitionDetectionOptions(quietWindow: quietWindow, lookback: lookback)))
        }
        #expect(throws: EngineError.self) { try session(quietWindow: 1, lookback: 3) }
        #expect(throws: EngineError.self) { try session(quietWindow: 1, lookback: 11) }
        #expect(throws: EngineError.self) { try session(quietWindow: 30, lookback: 31) }
        let shortest = try session(quietWindow: 1, lookback: 12)
        try shortest.start(at: t(0))
        for second in 0..<100 {
            try shortest.builder.add([
                QuantitySample(.distanceSwimming, 1, at: t(Double(second)), end: t(Double(second + 1)), source: watch)
            ])
        }
        for second in 101..<160 {
            try shortest.builder.add([QuantitySample(.cyclingCadence, 85, at: t(Double(second)), source: bikeSensor)])
        }
        let activities = shortest.builder.activities()
        #expect(activities.map(\.configuration.activityType) == [.swimming, .transition, .cycling])
        #expect(activities.map(\.start) == [t(0), t(100), t(101)])
    }

    /// A detected boundary lies within `lookback` of the newest input (the builder's reorder window), never a
    /// few seconds before it to be moved by the builder: a swim's last stroke at 99 s, the ride's cues from
    /// 100 s, with and without a 3 s gap in the data (smart recording) as the window completes (the end used
    /// to lie 2 s before the window; with the gap, the swim's last cue has now left it and ends nothing).
    @Test func aDetectedEndLiesWithinTheLookbackOfTheNewestInput() {
        let lookback = 12.0
        func changes(rideSeconds: [Int]) -> [(change: DetectedChange, newest: Double)] {
            var detector = TransitionDetector(options: TransitionDetectionOptions(quietWindow: 1, lookback: lookback))
            var found: [(change: DetectedChange, newest: Double)] = []
            let swim = (0..<100).map {
                QuantitySample(.distanceSwimming, 1, at: t(Double($0)), end: t(Double($0 + 1)), source: watch)
            }
            let ride = rideSeconds.map { QuantitySample(.cyclingCadence, 85, at: t(Double($0)), source: bikeSensor) }
            for sample in swim + ride {
                detector.observe(sample, value: sample.quantity.value, legStart: seconds(t(0)))
                found = detector.decide(leg: 0, legStart: seconds(t(0))).map { ($0, detector.now) }
                if !found.isEmpty { break }  // the first decision (the session would begin T1 there)
            }
            return found
        }
        let dense = changes(rideSeconds: Array(100..<130))
        #expect(dense.map(\.change) == [.beginLeg(1, at: seconds(t(100)))])
        for (change, newest) in dense + changes(rideSeconds: Array(100..<111) + Array(114..<130)) {
            guard case .beginLeg(_, let at) = change else { continue }
            #expect(at >= newest - lookback, "\(change) decided at \(newest)")
        }
    }

    /// The next-leg collection lookahead serves automatic detection only: a swim-bike-run builder without a
    /// session (imports, tools) drops cycling power during T1 as notCollected (DESIGN §5: "in swim-bike-run
    /// the set switches with the leg").
    @Test func aBuilderWithoutSessionDoesNotCollectTheNextLegsTypes() throws {
        let builder = try LiveWorkoutBuilder(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try builder.beginCollection(at: t(0))
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .swimming), start: t(0), end: t(100))
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .transition), start: t(100))
        let report = try builder.add([QuantitySample(.cyclingPower, 200, at: t(110), source: bikeSensor)])
        #expect(report.dropped[.notCollected] == 1)
        #expect(builder.currentActivity(at: t(120))?.statistics[.cyclingPower] == nil)
    }

    /// After an explicit leg change (detection off for good) there is no lookahead: T1 drops the bike's
    /// cadence as notCollected.
    @Test func afterAnExplicitLegChangeT1NoLongerCollectsTheBikesTypes() throws {
        let session = try swimBikeRunSession()
        try session.advanceToNextLeg(at: t(600))
        #expect(!session.detectsTransitions)
        let report = try session.builder.add([QuantitySample(.cyclingCadence, 90, at: t(700), source: bikeSensor)])
        #expect(report.dropped[.notCollected] == 1)
    }

    /// The lookahead follows the plan's leg, not the activity's index: with T1 skipped by detection (no swim
    /// cues) the bike looks ahead to T2, whose first seconds of walking distance count in T2.
    @Test func afterASkippedT1TheBikeLooksAheadToT2() throws {
        let session = try swimBikeRunSession()
        for s in 0..<700 {
            let a = t(Double(s))
            let b = t(Double(s + 1))
            var batch = [hr(140, at: Double(s))]  // the swim has no swim cues (open water, no stroke data)
            switch s {
            case 300..<600:
                batch += [
                    QuantitySample(.cyclingCadence, 85, at: a, source: bikeSensor),
                    QuantitySample(.distanceCycling, 8, at: a, end: b, source: bikeSensor),
                ]
            case 600..<630:
                batch.append(QuantitySample(.distanceWalkingRunning, 1.5, at: a, end: b, source: transitionWatch))
            case 630...:
                batch.append(QuantitySample(.runningCadence, 170, at: a, source: footPod))
            default:
                break
            }
            try session.builder.add(batch)
        }
        try session.stop(at: t(700))
        let workout = try session.builder.finishWorkout()
        #expect(
            workout.activities.map(\.configuration.activityType) == [.swimming, .cycling, .transition, .running])
        #expect(workout.counters[.notCollected] == 0)
        let t2 = try #require(workout.activities.first { $0.configuration.activityType == .transition })
        #expect(t2.statistics[.distanceWalkingRunning]?.sumValue == 45)
    }

    /// Replaying the changes of a detected swim → bike with T1 skipped (leg 0 → leg 2), as crash recovery
    /// does, rebuilds leg index 2: more riding begins no second bike.
    @Test func replayingADetectedSkipOfT1KeepsTheLegIndex() throws {
        let sink = InMemoryRecording()
        let options = BuilderOptions(identifiers: .seeded(6))
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)),
            options: options, sink: sink)
        try session.start(at: t(0))
        for s in 0..<400 {
            var batch = [hr(140, at: Double(s))]  // no swim cues: T1 is skipped
            if s >= 300 { batch.append(QuantitySample(.cyclingCadence, 85, at: t(Double(s)), source: bikeSensor)) }
            try session.builder.add(batch)
        }
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming, .cycling])
        #expect(session.currentLegIndex == 2)

        let rebuilt = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)), options: options)
        for change in sink.changes { try rebuilt.builder.apply(change) }
        #expect(rebuilt.currentLegIndex == 2)
        // More riding after the recovery.
        for s in 400..<450 {
            try rebuilt.builder.add([QuantitySample(.cyclingCadence, 85, at: t(Double(s)), source: bikeSensor)])
        }
        #expect(rebuilt.builder.activities().map(\.configuration.activityType) == [.swimming, .cycling])
    }
}
