import Foundation
import Testing
@testable import WorkoutEngine
import WorkoutModel

private let watch = SourceDevice(name: "Watch", identifier: "watch-link:1")

/// A pool length (lap event) of `duration` seconds starting at `start`.
private func length(
    _ start: Double, _ duration: Double, _ kind: LengthKind, style: String? = "freestyle", strokes: Int? = nil
) -> WorkoutEvent {
    var metadata: Metadata = [SwimMetadataKey.lengthKind: .string(kind.rawValue)]
    if let style { metadata[SwimMetadataKey.strokeStyle] = .string(style) }
    if let strokes { metadata[SwimMetadataKey.strokes] = .int(strokes) }
    return WorkoutEvent(type: .lap, start: t(start), duration: duration, metadata: metadata)
}

private func number(_ value: MetadataValue?) -> Double? {
    switch value {
    case .double(let number)?: number
    case .int(let number)?: Double(number)
    default: nil
    }
}

private func poolSwim() throws -> WorkoutSession {
    let configuration = WorkoutConfiguration(
        activityType: .swimming, locationType: .indoor, swimmingLocationType: .pool, lapLength: Quantity(25, .meter))
    let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)))
    try session.start(at: t(0))
    return session
}

@Suite("SWOLF from pool lengths")
struct SwolfTests {
    @Test func lengthsSetsAndTheWorkoutCarrySwolfDrillsAndRestsDoNot() throws {
        let session = try poolSwim()
        try session.builder.add([
            length(0, 20, .active, strokes: 15),  // 35
            length(20, 22.5, .active, strokes: 16),  // 38.5
            length(42.5, 30, .drill),  // no SWOLF, still part of the freestyle set
            length(72.5, 30, .rest, style: nil),  // ends the set
            length(102.5, 25, .active, style: "backstroke", strokes: 18),  // 43
            length(127.5, 24, .active, style: "breaststroke", strokes: 20),  // 44: a new style, a new set
        ])
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        let laps = workout.events.filter { $0.type == .lap }
        #expect(laps.map { number($0.metadata[SwimMetadataKey.swolf]) } == [35, 38.5, nil, nil, 43, 44])
        let sets = workout.events.filter { $0.type == .segment }
        #expect(sets.count == 3)
        #expect(sets.map(\.start) == [t(0), t(102.5), t(127.5)])
        #expect(sets.map(\.duration) == [72.5, 25, 24])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.swolf]) } == [36.75, 43, 44])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.lengths]) } == [3, 1, 1])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.activeLengths]) } == [2, 1, 1])
        let swolf = try #require(workout.statistics[.swimmingSWOLF])
        #expect(swolf.average?.value == (35 + 38.5 + 43 + 44) / 4)
        #expect(swolf.minimum?.value == 35)
        #expect(swolf.maximum?.value == 44)
        #expect(swolf.sampleCount == 4)
        // The builder's own events stay as given; SWOLF is derived, not stored twice.
        #expect(session.builder.events.allSatisfy { $0.metadata[SwimMetadataKey.swolf] == nil })
    }

    @Test func aSwimOfOnlyDrillsHasNoSwolfAnywhere() throws {
        let session = try poolSwim()
        try session.builder.add([length(0, 30, .drill), length(30, 31, .drill), length(61, 29, .drill)])
        try session.stop(at: t(100))
        let workout = try session.builder.finishWorkout()
        #expect(workout.statistics[.swimmingSWOLF] == nil)
        #expect(workout.events.allSatisfy { $0.metadata[SwimMetadataKey.swolf] == nil })
        let sets = workout.events.filter { $0.type == .segment }
        #expect(sets.count == 1)
        #expect(number(sets.first?.metadata[SwimMetadataKey.activeLengths]) == 0)
    }

    @Test func perActivitySwolfInATriathlonAndLegsEndSets() throws {
        let configuration = WorkoutConfiguration(
            activityType: .swimBikeRun, swimmingLocationType: .pool, lapLength: Quantity(50, .meter))
        let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add([length(0, 40, .active, strokes: 30), length(40, 42, .active, strokes: 32)])
        try session.advanceToNextLeg(at: t(90))
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        #expect(workout.activities[0].statistics[.swimmingSWOLF]?.average?.value == 72)
        #expect(workout.activities[1].statistics[.swimmingSWOLF] == nil)
        #expect(workout.statistics[.swimmingSWOLF]?.average?.value == 72)
    }

    @Test func malformedLengthMetadataIsRefusedAndNothingIsStored() throws {
        let session = try poolSwim()
        var bad = length(0, 20, .active, strokes: 10)
        bad.metadata[SwimMetadataKey.strokes] = .int(-3)
        #expect(throws: EngineError.self) { try session.builder.add([length(30, 20, .active, strokes: 9), bad]) }
        var unknown = length(0, 20, .active)
        unknown.metadata[SwimMetadataKey.lengthKind] = .string("floating")
        #expect(throws: EngineError.self) { try session.builder.add([unknown]) }
        #expect(session.builder.events.isEmpty)
        // SWOLF samples are never collected: SWOLF comes from lengths only.
        let report = try session.builder.add([QuantitySample(.swimmingSWOLF, 40, at: t(5), source: watch)])
        #expect(report.dropped[.notCollected] == 1)
    }
}

@Suite("One-minute heart-rate recovery")
struct HeartRateRecoveryTests {
    /// A running session at a flat 160 bpm for 10 minutes, stopped at t(600).
    private func stoppedRun(options: BuilderOptions = BuilderOptions()) throws -> WorkoutSession {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), options: options)
        try session.start(at: t(0))
        try session.builder.add((0..<600).map { hr($0 == 300 ? 175 : 160, at: Double($0)) })
        try session.stop(at: t(600))
        try session.end(at: t(600))
        return session
    }

    /// Heart rate falling by 0.5 bpm a second from 160 after the stop, at 1 Hz for `seconds`.
    private func recovery(_ seconds: ClosedRange<Int>, skipping gap: Range<Int> = 0..<0) -> [QuantitySample] {
        seconds.filter { !gap.contains($0) }.map { hr(160 - 0.5 * Double($0), at: 600 + Double($0)) }
    }

    /// A long session keeps about two end windows of exercise readings, not a count that takes minutes to
    /// reach (a server holds one collector per live session), and still has the whole window at the stop.
    @Test(arguments: [1.0, 4.0])
    func theExerciseTailStaysAboutTwoEndWindowsLong(hertz: Double) throws {
        let options = HeartRateRecoveryOptions(endWindow: 30)
        var collector = RecoveryCollector(options: options)
        let window = (options.endWindow + 5) * hertz + 1
        var longest = 0
        for index in 0..<Int(2 * 3600 * hertz) {
            collector.observeExercise(HeartRateReading(time: Double(index) / hertz, value: 150))
            longest = max(longest, collector.tail.count)
        }
        #expect(longest <= max(2 * Int(window), RecoveryCollector.minimumPrune))
        let stop = 2 * 3600 - 1 / hertz
        collector.stop(at: stop)
        #expect(collector.tail.count == Int(options.endWindow * hertz) + 1)
        #expect(collector.tail.first?.time == stop - options.endWindow)
    }

    /// Paused at t(600) while the strap goes on sending for three minutes, then stopped: exercise ended at the
    /// pause, so the end window before it and the readings of the pause give the recovery a stop at t(600)
    /// gives (160 bpm at the end, 0.5 bpm a second down from there: 30 after one minute, 60 after two).
    @Test func aStopAfterALongPauseRecoversFromThePause() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add((0..<600).map { hr($0 == 300 ? 175 : 160, at: Double($0)) })
        try session.pause(at: t(600))
        try session.builder.add(recovery(1...180))
        try session.stop(at: t(781))
        try session.end(at: t(781))
        _ = try session.builder.finishWorkout()
        let result = try session.finishHeartRateRecovery(at: t(781))
        #expect(result.heartRateAtEnd.map { abs($0 - 160) < 1e-9 } == true)
        let sample = try #require(result.sample)
        #expect(abs(sample.quantity.value - 30) < 1e-9)
        #expect(sample.start == t(600))
        #expect(abs((result.twoMinuteDrop ?? 0) - 60) < 1e-9)
    }

    @Test func recoveryIsTheDropOverOneMinuteWithItsMetadata() throws {
        let session = try stoppedRun()
        let workout = try session.builder.finishWorkout()
        #expect(session.heartRateRecoveryWindowEnd == t(730))
        #expect(session.addRecoveryHeartRate(recovery(0...130)) == 131)
        let result = try session.finishHeartRateRecovery(at: t(730))
        let sample = try #require(result.sample)
        #expect(sample.type == .heartRateRecoveryOneMinute)
        #expect(abs(sample.quantity.value - 30) < 1e-9)
        #expect(sample.start == t(600) && sample.end == t(660))
        #expect(abs((result.twoMinuteDrop ?? 0) - 60) < 1e-9)
        #expect(sample.metadata[MetadataKey.heartRateRecoveryTestType] == .string("maxExercise"))
        #expect(sample.metadata[MetadataKey.heartRateRecoveryActivityType] == .string("running"))
        #expect(number(sample.metadata[MetadataKey.heartRateRecoveryActivityDuration]) == workout.duration)
        // The highest heart rate of the workout, not of the end window.
        #expect(number(sample.metadata[MetadataKey.heartRateRecoveryMaxObservedHeartRate]) == 175)
        #expect(number(result.workoutMetadata[MetadataKey.heartRateRecoveryOneMinute]) == sample.quantity.value)
        // Finishing again returns the same result; later readings are not kept.
        #expect(try session.finishHeartRateRecovery(at: t(800)) == result)
        #expect(session.addRecoveryHeartRate([hr(100, at: 700)]) == 0)
    }

    @Test func theResultCarriesTheRecoveryWindowReadingsMarkedWithTheirSource() throws {
        let session = try stoppedRun()
        let pod = SourceDevice(name: "Optical", identifier: "ble:9")
        // Readings of the window (one from another sensor), one past the window, one at the stop.
        var readings = recovery(1...100) + [hr(150, at: 650.5, source: pod), hr(90, at: 731)]
        readings.append(hr(161, at: 600))
        #expect(session.addRecoveryHeartRate(readings) == 102)
        let result = try session.finishHeartRateRecovery(at: t(700))
        // Collected up to the finish only (t(700)), in time order, each marked, each with its source.
        let times = result.readings.map { $0.start.timeIntervalSince(t(600)) }
        #expect(times == times.sorted())
        #expect(times.first == 0 && times.last == 100)
        #expect(result.readings.count == 102)
        #expect(result.readings.allSatisfy { $0.type == .heartRate && $0.isHeartRateRecoveryReading })
        #expect(result.readings.filter { $0.source == pod }.map(\.quantity.value) == [150])
        #expect(result.readings.filter { $0.source == strap }.count == 101)
    }

    @Test func aResultEncodedBeforeReadingsExistedDecodesWithNone() throws {
        let session = try stoppedRun()
        session.addRecoveryHeartRate(recovery(0...130))
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.readings.count == 131)
        // Typed metadata coding, as the store writes it (plain JSON reads an integral double as an int).
        let encoder = JSONEncoder()
        encoder.userInfo[MetadataValue.typedCoding] = true
        var object = try #require(
            try JSONSerialization.jsonObject(with: try encoder.encode(result)) as? [String: Any])
        #expect(object["readings"] != nil)
        object["readings"] = nil
        let old = try JSONDecoder().decode(
            HeartRateRecoveryResult.self, from: try JSONSerialization.data(withJSONObject: object))
        var expected = result
        expected.readings = []
        #expect(old == expected)
        // And the current form round-trips whole.
        #expect(try JSONDecoder().decode(HeartRateRecoveryResult.self, from: try encoder.encode(result)) == result)
    }

    @Test func theTestTypeIsConfigurable() throws {
        let options = BuilderOptions(heartRateRecovery: HeartRateRecoveryOptions(testType: .predictionSubMaxExercise))
        let session = try stoppedRun(options: options)
        session.addRecoveryHeartRate(recovery(0...130))
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.sample?.metadata[MetadataKey.heartRateRecoveryTestType] == .string("predictionSubMaxExercise"))
    }

    @Test func aWindowCutShortGivesNoSampleAndSaysWhy() throws {
        let session = try stoppedRun()
        session.addRecoveryHeartRate(recovery(0...40))
        let result = try session.finishHeartRateRecovery(at: t(640))
        #expect(result.sample == nil)
        #expect(result.oneMinuteUnavailable == .windowCutShort)
        #expect(result.twoMinutesUnavailable == .windowCutShort)
        #expect(result.workoutMetadata[MetadataKey.heartRateRecoveryOneMinuteUnavailable] == .string("windowCutShort"))
        #expect(result.heartRateAtEnd.map { abs($0 - 160) < 1e-9 } == true)
    }

    @Test func cutAfterTheMinuteStillGivesHRR1ButNotTheTwoMinuteDrop() throws {
        let session = try stoppedRun()
        session.addRecoveryHeartRate(recovery(0...65))
        let result = try session.finishHeartRateRecovery(at: t(665))
        #expect(result.oneMinuteDrop.map { abs($0 - 30) < 1e-9 } == true)
        #expect(result.twoMinutesUnavailable == .windowCutShort)
    }

    @Test func aStrapDropoutAroundTheMinuteMarkGivesNoSample() throws {
        let session = try stoppedRun()
        session.addRecoveryHeartRate(recovery(0...130, skipping: 45..<80))
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.sample == nil)
        #expect(result.oneMinuteUnavailable == .tooFewRecoveryReadings)
        #expect(result.twoMinuteDrop.map { abs($0 - 60) < 1e-9 } == true)
    }

    @Test func aDropoutEarlyInTheRecoveryDoesNotMatter() throws {
        let session = try stoppedRun()
        session.addRecoveryHeartRate(recovery(0...130, skipping: 5..<45))
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.oneMinuteDrop.map { abs($0 - 30) < 1e-9 } == true)
    }

    @Test func noExerciseHeartRateMeansNoRecovery() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add([hr(150, at: 10), hr(150, at: 11)])
        try session.stop(at: t(600))
        session.addRecoveryHeartRate(recovery(0...130))
        let result = try session.finishHeartRateRecovery(at: t(730))
        #expect(result.oneMinuteUnavailable == .tooFewExerciseReadings)
    }

    @Test func recoveryBeforeStopIsRefusedAndDisabledRecoverySaysSo() throws {
        let session = try WorkoutSession(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)))
        try session.start(at: t(0))
        #expect(throws: EngineError.self) { try session.finishHeartRateRecovery(at: t(10)) }
        #expect(session.addRecoveryHeartRate([hr(120, at: 5)]) == 0)
        let off = try stoppedRun(options: BuilderOptions(heartRateRecovery: HeartRateRecoveryOptions(enabled: false)))
        #expect(off.heartRateRecoveryWindowEnd == nil)
        #expect(try off.finishHeartRateRecovery(at: t(730)).oneMinuteUnavailable == .disabled)
        #expect(throws: EngineError.self) {
            try BuilderOptions(heartRateRecovery: HeartRateRecoveryOptions(window: -1)).validateForTests()
        }
    }
}

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

extension BuilderOptions {
    /// Options are validated when a builder is made; make one to validate.
    func validateForTests() throws {
        _ = try LiveWorkoutBuilder(configuration: WorkoutConfiguration(activityType: .running), options: self)
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

extension HeartRateRecoveryTests {
    /// Exact duplicate recovery readings count once: one reading sent five times does not meet
    /// `minimumReadings` (5), the one-minute value is `.tooFewRecoveryReadings`.
    @Test func oneRecoveryReadingRepeatedFiveTimesCountsOnce() throws {
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
