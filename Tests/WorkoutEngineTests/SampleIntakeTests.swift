import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// What the builder does with each sample and route point it is given: sorted, converted, dropped and counted, or refused.
@Suite("Live builder: samples taken, converted, dropped and refused")
struct SampleIntakeTests {
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
