import Foundation
import Testing
@testable import WorkoutEngine
import WorkoutModel

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
