import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

// Review of issue 6 (SWOLF, heart-rate recovery, auto-pause, automatic transitions).
// Every test here FAILS on the reviewed code because of a bug, unless marked "PINS".

private let review6Watch = SourceDevice(name: "Watch", identifier: "watch-link:1")

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
        return [QuantitySample(.distanceSwimming, 1.2, at: a, end: b, source: review6Watch)]
    case ..<330, 600..<620:
        return [QuantitySample(.distanceWalkingRunning, 1.5, at: a, end: b, source: review6Watch)]
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

@Suite("Review 6: detectors and recovery")
struct Review6EngineTests {
    // MARK: auto-pause

    /// The lap/NEXT button pressed while the bike is motion-paused (the rider stopped at the
    /// dismount line): the motion pause stays open through T2, whose type has no auto-pause rule,
    /// so nothing ever resumes it; T2 gets 0 s of active time. The detected path
    /// (beginDetectedLeg) resumes at the boundary; the explicit path does not.
    @Test func anExplicitLegChangeWhileMotionPausedLeavesTheTransitionPaused() throws {
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
                    .distanceWalkingRunning, 1.5, at: t(Double(s)), end: t(Double(s + 1)), source: review6Watch)
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

    /// A user pause dated a moment before the newest speed reading is accepted without auto-pause
    /// (it is inside the reorder window) but throws once a detector placed a motion event at that
    /// reading: the user's pause button fails because of a detector.
    @Test func aUserPauseFailsBecauseADetectorPlacedAMotionEventAtTheNewestReading() throws {
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

    /// Two speed readings that arrive swapped (well inside the reorder window, which the builder
    /// sorts) move the motion pause: the detector drops any reading older than the newest it saw,
    /// so the first slow second is lost and the pause starts a second late.
    @Test func speedsArrivingSlightlyOutOfOrderMoveTheMotionPause() throws {
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

    /// A sample the builder drops as invalid (out of range) still drives transition detection:
    /// one corrupt cadence reading during the swim begins the bike. DESIGN §5: bad values are
    /// "dropped and counted, never silently stored" — here their effect is stored as legs.
    @Test func aSampleDroppedAsInvalidStillBeginsTheBike() throws {
        let session = try swimBikeRunSession()
        for s in 0..<60 { try session.builder.add(triathlonSecond(s)) }
        let report = try session.builder.add([QuantitySample(.cyclingCadence, 9000, at: t(60), source: bikeSensor)])
        #expect(report.dropped[.outOfRange] == 1)
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming])
    }

    /// Worse: a dropped sample with a far-future start (end before start, dropped as badInterval)
    /// begins the bike at that future instant, and the session can no longer be stopped now.
    @Test func aDroppedFutureDatedSampleMakesTheSessionUnstoppable() throws {
        let session = try swimBikeRunSession()
        for s in 0..<60 { try session.builder.add(triathlonSecond(s)) }
        let bogus = QuantitySample(.cyclingCadence, 90, at: t(100_000), end: t(99_999), source: bikeSensor)
        let report = try session.builder.add([bogus])
        #expect(report.dropped[.badInterval] == 1)
        #expect(session.builder.activities().map(\.configuration.activityType) == [.swimming])
        #expect(throws: Never.self) { try session.stop(at: t(60)) }
    }

    /// The same race fed second by second and in two batches gives different workouts: the
    /// detector decides once per batch, so a batch holding the bike's start and the run's start
    /// only begins the bike; the run's cadence in that batch is dropped as notCollected, and with no
    /// later batch the run (and T2) never exist.
    @Test func batchingChangesTheDetectedLegs() throws {
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

    /// The next-leg collection lookahead (planMasks) is meant for automatic detection, but it is
    /// set by the builder options alone: a swim-bike-run builder WITHOUT a session (imports, tools;
    /// no detection possible) now keeps cycling power recorded during T1 and attributes it to T1.
    /// DESIGN §5: "in swim-bike-run the set switches with the leg"; before this change it was
    /// dropped as notCollected.
    @Test func aBuilderWithoutSessionCollectsTheNextLegsTypes() throws {
        let builder = try LiveWorkoutBuilder(
            configuration: WorkoutConfiguration(activityType: .swimBikeRun), clock: ManualClock(t(0)))
        try builder.beginCollection(at: t(0))
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .swimming), start: t(0), end: t(100))
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .transition), start: t(100))
        let report = try builder.add([QuantitySample(.cyclingPower, 200, at: t(110), source: bikeSensor)])
        #expect(report.dropped[.notCollected] == 1)
        #expect(builder.currentActivity(at: t(120))?.statistics[.cyclingPower] == nil)
    }

    /// Same lookahead after an explicit leg change (detection off for good): T1 collects the bike's
    /// types and shows cycling cadence in its statistics.
    @Test func afterAnExplicitLegChangeT1StillCollectsTheBikesTypes() throws {
        let session = try swimBikeRunSession()
        try session.advanceToNextLeg(at: t(600))
        #expect(!session.detectsTransitions)
        let report = try session.builder.add([QuantitySample(.cyclingCadence, 90, at: t(700), source: bikeSensor)])
        #expect(report.dropped[.notCollected] == 1)
    }

    /// The lookahead mask is indexed by ACTIVITY index (planMasks[index + 1]), not by plan leg. When
    /// detection skips T1 (no swim cues: the bike's first cue begins leg 2 directly) the bike is
    /// activity 1, so it "looks ahead" to planMasks[2] (the bike itself) instead of T2: the walking
    /// distance of T2's first seconds (before T2 is detected) is dropped as notCollected.
    @Test func afterASkippedT1TheLookaheadIsOffByOneLeg() throws {
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
                batch.append(QuantitySample(.distanceWalkingRunning, 1.5, at: a, end: b, source: review6Watch))
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

    /// Journal replay rebuilds the leg index with `nextLegIndex`, which only steps one planned leg at
    /// a time. A detected swim → bike with T1 skipped (leg 0 → leg 2) replays as leg 0: the rebuilt
    /// session (a crash recovery does exactly this) thinks it is still swimming, detection then
    /// "begins the bike" again in the middle of the bike, and the NEXT button would begin T1.
    @Test func replayingADetectedSkipOfT1LosesTheLegIndex() throws {
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

    // MARK: heart-rate recovery

    /// `minimumReadings` (5) is meant to prove the strap was there around the minute mark, but the
    /// recovery path keeps exact duplicates (the builder drops them): one reading sent five times
    /// yields an HRR1 value instead of `.tooFewRecoveryReadings`.
    @Test func oneRecoveryReadingRepeatedFiveTimesPassesTheMinimum() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add((0..<600).map { hr(160, at: Double($0)) })
        try session.stop(at: t(600))
        session.addRecoveryHeartRate((0...40).map { hr(160 - 0.5 * Double($0), at: 600 + Double($0)) })
        let kept = session.addRecoveryHeartRate(Array(repeating: hr(130, at: 660), count: 5))
        #expect(kept == 1, "exact duplicates kept")
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.oneMinuteUnavailable == .tooFewRecoveryReadings)
    }
}
