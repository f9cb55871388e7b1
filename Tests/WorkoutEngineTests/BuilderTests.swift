import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

@Suite("Live builder")
struct BuilderTests {
    @Test func pauseAndResumeAccounting() throws {
        let clock = ManualClock(t(0))
        let session = try WorkoutSession(configuration: WorkoutConfiguration(activityType: .running), clock: clock)
        try session.start(at: t(0))
        try session.pause(at: t(100))
        // While paused: elapsed runs on, active time stands still.
        #expect(session.builder.elapsedTime(at: t(130)) == 130)
        #expect(session.builder.activeDuration(at: t(130)) == 100)
        try session.resume(at: t(160))
        try session.pause(at: t(300))
        try session.resume(at: t(330))
        try session.builder.add([WorkoutEvent(type: .motionPaused, start: t(400))])
        try session.builder.add([WorkoutEvent(type: .motionResumed, start: t(420))])
        try session.stop(at: t(600))
        try session.end(at: t(610))
        let workout = try session.builder.finishWorkout()
        #expect(workout.elapsed == 600)
        #expect(workout.duration == 600 - 60 - 30 - 20)
        #expect(workout.events.map(\.type) == [.pause, .resume, .pause, .resume, .motionPaused, .motionResumed])
    }

    @Test func overlappingUserAndMotionPausesCountOnce() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([WorkoutEvent(type: .pause, start: t(100))])
        try builder.add([WorkoutEvent(type: .motionPaused, start: t(150))])
        try builder.add([WorkoutEvent(type: .resume, start: t(160))])  // still motion-paused
        try builder.add([WorkoutEvent(type: .motionResumed, start: t(200))])
        try builder.endCollection(at: t(300))
        #expect(builder.activeDuration() == 300 - 100)
    }

    @Test func redundantPauseAndResumeAreNormalisedAwayAndCounted() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([WorkoutEvent(type: .resume, start: t(5))])  // first pause/resume event is never a resume
        try builder.add([WorkoutEvent(type: .pause, start: t(10)), WorkoutEvent(type: .pause, start: t(20))])
        try builder.add([WorkoutEvent(type: .resume, start: t(30)), WorkoutEvent(type: .resume, start: t(40))])
        #expect(builder.events.map(\.type) == [.pause, .resume])
        #expect(builder.counters[.redundantPauseOrResume] == 3)
        try builder.endCollection(at: t(100))
        #expect(builder.activeDuration() == 80)
    }

    @Test func samplesDuringAPauseDoNotCount() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(100, at: 1), hr(100, at: 2)])
        try builder.add([WorkoutEvent(type: .pause, start: t(3))])
        try builder.add([hr(190, at: 4)])  // paused: stored, not counted
        try builder.add([WorkoutEvent(type: .resume, start: t(5))])
        try builder.add([hr(120, at: 5), hr(120, at: 6)])
        try builder.endCollection(at: t(7))
        let stats = try #require(builder.statistics(for: .heartRate))
        #expect(stats.maximum?.value == 120)
        #expect(stats.sampleCount == 5)
        // 3 s of 100, then the paused 190 holds into no active time, then 2 s of 120.
        #expect(abs(try #require(stats.averageValue) - (300 + 240) / 5.0) < 1e-9)
    }

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

    @Test func outOfOrderSamplesInsideTheWindowAreSortedAndDuplicatesCounted() throws {
        let values: [(Double, Double)] = [(0, 100), (1, 110), (2, 120), (3, 130), (4, 140), (5, 150)]
        let (ordered, _) = try collectingBuilder()
        try ordered.add(values.map { hr($0.1, at: $0.0) })
        try ordered.endCollection(at: t(6))

        let (shuffled, _) = try collectingBuilder(options: BuilderOptions(reorderWindow: 2))
        let order = [0, 2, 1, 3, 5, 4]
        try shuffled.add(order.map { hr(values[$0].1, at: values[$0].0) })
        let report = try shuffled.add([hr(150, at: 5), hr(130, at: 3)])  // exact duplicates
        #expect(report.dropped[.duplicate] == 2)
        try shuffled.endCollection(at: t(6))
        #expect(shuffled.statistics(for: .heartRate) == ordered.statistics(for: .heartRate))
        #expect(shuffled.counters[.duplicate] == 2)
    }

    @Test func samplesOlderThanTheWindowAreDroppedAsTooLate() throws {
        let (builder, _) = try collectingBuilder(options: BuilderOptions(reorderWindow: 2))
        try builder.add((0..<10).map { hr(100, at: Double($0)) })
        let report = try builder.add([hr(180, at: 3.5)])
        #expect(report.accepted == 0)
        #expect(report.dropped[.tooLate] == 1)
        #expect(builder.statistics(for: .heartRate)?.maximum?.value == 100)
    }

    @Test func badValuesAreDroppedAndCountedByReason() throws {
        let (builder, _) = try collectingBuilder()
        let report = try builder.add([
            hr(.nan, at: 1),
            hr(.infinity, at: 2),
            hr(-.infinity, at: 3),
            hr(-60, at: 4),
            QuantitySample(.distanceWalkingRunning, 100, .countPerMinute, at: t(5), source: footPod),
            hr(150, at: 6),
            hr(150, at: -10),
        ])
        #expect(report.accepted == 1)
        #expect(report.dropped == [.notFinite: 3, .outOfRange: 1, .wrongDimension: 1, .outsideWorkout: 1])
        #expect(builder.counters[.notFinite] == 3)
        #expect(builder.counters.accepted == 1)
        #expect(report.firstProblem?.contains("non-finite") == true)
        #expect(builder.statistics(for: .distanceWalkingRunning) == nil)
        #expect(builder.statistics(for: .heartRate)?.maximum?.value == 150)
    }

    @Test func rejectPolicyThrowsTypedErrorsAndTakesNothing() throws {
        let (builder, _) = try collectingBuilder(options: BuilderOptions(invalidInput: .reject))
        try builder.add([hr(120, at: 0)])
        #expect(throws: EngineError.invalidSample(.notFinite(.heartRate, .infinity))) {
            try builder.add([hr(130, at: 1), hr(.infinity, at: 2)])
        }
        #expect(
            throws: EngineError.invalidSample(.outOfRange(.heartRate, value: -5, unit: .countPerMinute, range: 1...300))
        ) {
            try builder.add([hr(-5, at: 2)])
        }
        #expect(
            throws: EngineError.invalidSample(
                .wrongDimension(.distanceWalkingRunning, unit: .countPerMinute, expected: .length))
        ) {
            try builder.add([QuantitySample(.distanceWalkingRunning, 5, .countPerMinute, at: t(3), source: footPod)])
        }
        #expect(builder.counters.accepted == 1, "the valid sample in the refused batch was not taken")
        #expect(builder.statistics(for: .heartRate)?.sampleCount == 1)
    }

    @Test func typesTheLegDoesNotCollectAreDroppedAndCounted() throws {
        let (builder, _) = try collectingBuilder(.running)
        try builder.addActivity(configuration: WorkoutConfiguration(activityType: .running), start: t(0))
        let report = try builder.add([
            QuantitySample(.cyclingPower, 250, at: t(1), source: bikeSensor),
            QuantitySample(.runningPower, 250, at: t(1), source: footPod),
        ])
        #expect(report.accepted == 1)
        #expect(report.dropped[.notCollected] == 1)
    }

    @Test func unitsAreConvertedToTheCanonicalUnit() throws {
        let (builder, _) = try collectingBuilder(.cycling)
        try builder.add([
            QuantitySample(.distanceCycling, 1.5, .kilometer, at: t(0), end: t(60), source: bikeSensor),
            QuantitySample(.cyclingSpeed, 36, .kilometerPerHour, at: t(0), source: bikeSensor),
            QuantitySample(.heartRate, 2.5, .hertz, at: t(0), source: strap),
        ])
        try builder.endCollection(at: t(60))
        let distance = try #require(builder.statistics(for: .distanceCycling)?.sum)
        #expect(distance.unit == .meter && abs(distance.value - 1500) < 1e-9)
        let speed = try #require(builder.statistics(for: .cyclingSpeed)?.maximum)
        #expect(speed.unit == .meterPerSecond && abs(speed.value - 10) < 1e-9)
        let heartRate = try #require(builder.statistics(for: .heartRate)?.maximum)
        #expect(heartRate.unit == .countPerMinute && abs(heartRate.value - 150) < 1e-9)
    }

    @Test func activitiesMustNotOverlapAndMustLieInsideTheWorkout() throws {
        let (builder, _) = try collectingBuilder(.other)
        let run = WorkoutConfiguration(activityType: .running)
        try builder.addActivity(configuration: run, start: t(10), end: t(20))
        let before = builder.activities(at: t(50))
        #expect(throws: EngineError.activityOverlap(start: t(15), end: t(25), existingStart: t(10), existingEnd: t(20)))
        {
            try builder.addActivity(configuration: run, start: t(15), end: t(25))
        }
        #expect(throws: EngineError.activityOverlap(start: t(5), end: t(12), existingStart: t(10), existingEnd: t(20)))
        {
            try builder.addActivity(configuration: run, start: t(5), end: t(12))
        }
        #expect(throws: EngineError.activityOutsideWorkout(start: t(-5), end: t(5))) {
            try builder.addActivity(configuration: run, start: t(-5), end: t(5))
        }
        #expect(throws: EngineError.activityEndBeforeStart(start: t(40), end: t(30))) {
            try builder.addActivity(configuration: run, start: t(40), end: t(30))
        }
        try builder.addActivity(configuration: run, start: t(30))  // open
        #expect(throws: EngineError.activityStillOpen(start: t(30))) {
            try builder.addActivity(configuration: run, start: t(40))
        }
        try builder.addActivity(configuration: run, start: t(0), end: t(10))  // touching is fine
        try builder.endCollection(at: t(60))
        #expect(throws: EngineError.activityOutsideWorkout(start: t(61), end: t(70))) {
            try builder.addActivity(configuration: run, start: t(61), end: t(70))
        }
        let activities = builder.activities()
        #expect(activities.map(\.start) == [t(0), t(10), t(30)])
        #expect(activities.last?.end == t(60), "ending collection closes the open activity")
        #expect(before.count == 1)
    }

    @Test func eventsAreValidated() throws {
        let (builder, _) = try collectingBuilder(.swimming)
        try builder.add([WorkoutEvent(type: .lap, start: t(0), duration: 30)])
        #expect(throws: EngineError.overlappingLap(start: t(20), end: t(50))) {
            try builder.add([WorkoutEvent(type: .lap, start: t(20), duration: 30)])
        }
        #expect(throws: EngineError.invalidEventDuration(.marker, duration: 3)) {
            try builder.add([WorkoutEvent(type: .marker, start: t(40), duration: 3)])
        }
        #expect(throws: EngineError.eventOutsideWorkout(.marker, start: t(-1), end: t(-1))) {
            try builder.add([WorkoutEvent(type: .marker, start: t(-1))])
        }
        // Segments may overlap each other and laps.
        try builder.add([
            WorkoutEvent(type: .segment, start: t(0), duration: 60),
            WorkoutEvent(type: .segment, start: t(10), duration: 60),
            WorkoutEvent(type: .lap, start: t(30), duration: 30),
        ])
        #expect(builder.events.count == 4)
        // All or nothing: a bad event in a batch leaves the good one out too.
        #expect(throws: EngineError.self) {
            try builder.add([
                WorkoutEvent(type: .marker, start: t(70)), WorkoutEvent(type: .lap, start: t(35), duration: 5),
            ])
        }
        #expect(builder.events.count == 4)
    }

    @Test func endingBeforeRecordedDataIsRefusedAndLosesNothing() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(110, at: 50)])
        #expect(throws: EngineError.endBeforeRecordedData(end: t(40), latest: t(50))) {
            try builder.endCollection(at: t(40))
        }
        #expect(builder.state == .collecting)
        try builder.endCollection(at: t(60))
        #expect(builder.statistics(for: .heartRate)?.sampleCount == 2)
    }

    @Test func lateArrivalsInsideTheWorkoutAreTakenAfterEndingButNothingAfterFinish() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0)])
        try builder.endCollection(at: t(10))
        let report = try builder.add([hr(120, at: 5), hr(130, at: 11)])
        #expect(report.accepted == 1)
        #expect(report.dropped[.outsideWorkout] == 1)
        let workout = try builder.finishWorkout()
        #expect(workout.statistics[.heartRate]?.maximum?.value == 120)
        #expect(throws: EngineError.builderState(operation: "add samples", state: .finished)) {
            try builder.add([hr(100, at: 1)])
        }
        #expect(throws: EngineError.builderState(operation: "add events", state: .finished)) {
            try builder.add([WorkoutEvent(type: .marker, start: t(1))])
        }
        #expect(throws: EngineError.builderState(operation: "discard the workout", state: .finished)) {
            try builder.discardWorkout()
        }
    }

    @Test func notStartedBuilderRefusesSamples() throws {
        let builder = try LiveWorkoutBuilder(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock())
        #expect(throws: EngineError.builderState(operation: "add samples", state: .notStarted)) {
            try builder.add([hr(100, at: 0)])
        }
    }

    @Test func impossibleOptionsAreRefused() {
        #expect(throws: EngineError.self) {
            _ = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .running), options: BuilderOptions(holdCap: -1))
        }
        #expect(throws: EngineError.self) {
            _ = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .swimming, lapLength: Quantity(25, .countPerMinute)))
        }
    }

    @Test func routePointsAreValidatedAndCounted() throws {
        let sink = InMemoryRecording()
        let (builder, _) = try collectingBuilder(sink: sink)
        let report = try builder.addRoute([
            RoutePoint(date: t(1), latitude: 48.1, longitude: 11.5),
            RoutePoint(date: t(2), latitude: 91, longitude: 11.5),
            RoutePoint(date: t(3), latitude: 48.1, longitude: .nan),
        ])
        #expect(report.accepted == 1)
        #expect(builder.counters[.badLocation] == 2)
        let routed = sink.changes.compactMap { change -> [RoutePoint]? in
            if case .route(let points) = change { return points }
            return nil
        }
        #expect(routed.flatMap { $0 }.count == 1)
    }
}

@Suite("Live builder: laps")
struct LapToleranceTests {
    @Test func lapsThatTouchUpToRoundingAreNotOverlaps() throws {
        let (builder, _) = try collectingBuilder(.swimming)
        let first = WorkoutEvent(type: .lap, start: t(0.1), duration: 28.3)
        // The next lap starts where the first "ends", give or take the rounding of start + duration.
        let second = WorkoutEvent(type: .lap, start: t(0.1).addingTimeInterval(28.3 - 1e-6), duration: 30)
        try builder.add([first, second])
        #expect(builder.events.count == 2)
        #expect(throws: EngineError.self) {
            try builder.add([WorkoutEvent(type: .lap, start: t(58.0), duration: 5)])  // a real overlap of 0.4 s
        }
    }
}

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
