import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore
import WorkoutTestSupport

private func withStore<R>(_ body: (WorkoutStore) throws -> R) throws -> R {
    let folder = try temporaryFolder("intel")
    defer { try? FileManager.default.removeItem(at: folder) }
    return try body(try WorkoutStore(path: folder.appendingPathComponent("w.sqlite").path))
}

/// The scenario as a 50 m pool race (every swim distance of these races is whole 50 m lengths).
private func inPool(_ scenario: Scenario) -> Scenario {
    var pool = scenario
    pool.swimmingLocation = .pool
    pool.lapLength = 50
    return pool
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

private func swolf(_ event: WorkoutEvent) -> Double? {
    if case .double(let value)? = event.metadata[SwimMetadataKey.swolf] { return value }
    return nil
}

@Suite("Swimming, recovery and multisport detection against the simulator's ground truth")
struct GroundTruthDetectionTests {
    /// Ten seeds per distance (five open-water races, five in a 50 m pool), legs found automatically.
    @Test(arguments: ["sprint", "olympic", "half", "full"])
    func automaticLegsSwolfAndRecoveryMatchTheTruth(_ name: String) throws {
        let base = try Scenario.load(name)
        var boundaryErrors: [Double] = []
        var recoveryErrors: [Double] = []
        for seed in UInt64(1)...10 {
            let pool = seed > 5
            let scenario = pool ? inPool(base) : base
            let result = try withStore { store in
                try RaceReplay.run(scenario, seed: seed, into: store, options: ReplayOptions(legChanges: .automatic))
            }
            let workout = result.workout
            let truth = result.truth
            let label = "\(name) seed \(seed)\(pool ? " pool" : "")"
            #expect(result.detectorFailures == 0, "\(label)")
            // The right leg sequence, every time.
            try #require(
                workout.activities.map(\.configuration.activityType) == truth.legs.map(\.type), "\(label) legs")
            for (activity, leg) in zip(workout.activities, truth.legs).dropFirst() {
                boundaryErrors.append(abs(activity.start.timeIntervalSince(leg.start)))
                #expect(activity.metadata[MetadataKey.detectedBy] == .string("automatic"), "\(label)")
            }
            // HRR1 within ±2 bpm of the model's true value.
            let recovery = try #require(result.heartRateRecovery, "\(label) recovery")
            let hrr = try #require(recovery.oneMinuteDrop, "\(label) HRR1: \(String(describing: recovery))")
            recoveryErrors.append(hrr - truth.heartRateRecoveryOneMinute)
            #expect(abs(hrr - truth.heartRateRecoveryOneMinute) <= 2, "\(label) HRR1 \(hrr) vs \(truth)")
            let two = try #require(recovery.twoMinuteDrop, "\(label) two-minute drop")
            #expect(abs(two - truth.heartRateRecoveryTwoMinutes) <= 2, "\(label) HRR2")
            #expect(workout.metadata[MetadataKey.heartRateRecoveryOneMinute] == .double(hrr))
            // SWOLF: every length exact, sets and the swim within 0.5 of the truth's mean.
            let lengths = workout.events.filter { $0.type == .lap && $0.metadata[SwimMetadataKey.lengthKind] != nil }
            let trueLengths = truth.legs[0].lengths
            #expect(lengths.count == trueLengths.count, "\(label) lengths")
            for (event, length) in zip(lengths, trueLengths) {
                let expected = length.kind == "active" ? length.strokes.map { length.duration + Double($0) } : nil
                #expect(swolf(event) == expected, "\(label) length at \(length.start)")
            }
            let trueSwolfs = trueLengths.compactMap { $0.kind == "active" ? $0.strokes : nil }.isEmpty
                ? [] : trueLengths.compactMap { length in length.strokes.map { length.duration + Double($0) } }
            let swim = workout.activities[0].statistics[.swimmingSWOLF]
            if pool {
                let mean = trueSwolfs.reduce(0, +) / Double(trueSwolfs.count)
                let average = try #require(swim?.average?.value, "\(label) swim SWOLF")
                #expect(abs(average - mean) <= 0.5, "\(label) swim SWOLF \(average) vs \(mean)")
                let sets = workout.events.filter { $0.metadata[MetadataKey.segmentKind] == .string("swimSet") }
                #expect(!sets.isEmpty, "\(label) swim sets")
                for set in sets {
                    let inside = trueLengths.filter {
                        $0.start >= set.start && $0.start < set.end && $0.kind == "active" && $0.strokes != nil
                    }
                    let setMean = inside.map { $0.duration + Double($0.strokes ?? 0) }.reduce(0, +) / Double(inside.count)
                    #expect(abs((swolf(set) ?? .nan) - setMean) <= 0.5, "\(label) set at \(set.start)")
                }
            } else {
                #expect(lengths.isEmpty && swim == nil, "\(label): open water has no SWOLF")
            }
        }
        let sortedErrors = boundaryErrors.sorted()
        print(
            "\(name): boundary error median \(median(boundaryErrors)) s, max \(sortedErrors.last ?? 0) s; "
                + "HRR1 error \(recoveryErrors.map { ($0 * 10).rounded() / 10 })")
        #expect(median(boundaryErrors) <= 5, "\(name) median boundary error")
        #expect((sortedErrors.last ?? 0) <= 20, "\(name) max boundary error")
    }

    @Test func aRedLightOnTheBikeIsAnAutoPauseNotATransition() throws {
        var scenario = try Scenario.load("sprint")
        let bike = try #require(scenario.legs.firstIndex { $0.type == .cycling })
        let stop = Scenario.Segment(distance: nil, duration: 45, intensity: 0.3, style: nil, kind: .stop)
        scenario.legs[bike].segments.insert(stop, at: 1)
        let result = try withStore { store in
            try RaceReplay.run(
                scenario, seed: 3, into: store, options: ReplayOptions(legChanges: .automatic, autoPause: .standard))
        }
        let workout = result.workout
        #expect(workout.activities.map(\.configuration.activityType) == result.truth.legs.map(\.type))
        let ride = workout.activities[bike]
        let truthRide = result.truth.legs[bike]
        #expect(abs(ride.start.timeIntervalSince(truthRide.start)) <= 5)
        #expect(abs((ride.end ?? .distantPast).timeIntervalSince(truthRide.end)) <= 5)
        let motion = workout.events.filter { $0.type == .motionPaused || $0.type == .motionResumed }
        #expect(motion.map(\.type) == [.motionPaused, .motionResumed])
        let paused = (motion.last?.start ?? .distantPast).timeIntervalSince(motion.first?.start ?? .distantFuture)
        #expect(abs(paused - 45) <= 3, "motion pause of \(paused) s")
        #expect(abs(((ride.elapsed ?? 0) - ride.duration) - 45) <= 3)
    }

    @Test func transitionsShorterThanTheDetectorWindowAreStillFound() throws {
        var scenario = try Scenario.load("sprint")
        for leg in scenario.legs.indices where scenario.legs[leg].type == .transition {
            scenario.legs[leg].segments = [Scenario.Segment(duration: 3, intensity: 0.6)]
        }
        for seed in UInt64(1)...3 {
            let result = try withStore { store in
                try RaceReplay.run(scenario, seed: seed, into: store, options: ReplayOptions(legChanges: .automatic))
            }
            let workout = result.workout
            try #require(workout.activities.map(\.configuration.activityType) == result.truth.legs.map(\.type))
            for (activity, leg) in zip(workout.activities, result.truth.legs) {
                #expect(abs(activity.start.timeIntervalSince(leg.start)) <= 1, "seed \(seed) \(leg.type)")
            }
        }
    }

    @Test func aStrapDropoutDuringRecoveryIsReportedNotGuessed() throws {
        var scenario = try Scenario.load("sprint")
        let probe = try withStore { store in try RaceReplay.run(scenario, seed: 2, into: store) }
        let finish = probe.truth.finish.timeIntervalSince(probe.truth.start)
        scenario.dropouts = [Scenario.Dropout(sensor: .heartRate, start: finish + 45, duration: 35)]
        let result = try withStore { store in
            let result = try RaceReplay.run(scenario, seed: 2, into: store)
            // The reason is stored with the workout.
            let saved = try #require(try store.workout(id: result.workout.id))
            #expect(
                saved.metadata[MetadataKey.heartRateRecoveryOneMinuteUnavailable]
                    == .string(HeartRateRecoveryUnavailable.tooFewRecoveryReadings.rawValue))
            #expect(try store.samples(workout: result.workout.id).allSatisfy { $0.type != .heartRateRecoveryOneMinute })
            return result
        }
        #expect(result.heartRateRecovery?.sample == nil)
        #expect(result.heartRateRecovery?.oneMinuteUnavailable == .tooFewRecoveryReadings)
        // The strap is back well before two minutes: the two-minute drop is still there.
        #expect(result.heartRateRecovery?.twoMinuteDrop != nil)
        // And without the dropout the sample is stored with the workout.
        try withStore { store in
            let full = try RaceReplay.run(try Scenario.load("sprint"), seed: 2, into: store)
            let stored = try store.samples(workout: full.workout.id).filter { $0.type == .heartRateRecoveryOneMinute }
            #expect(stored.count == 1)
            #expect(stored.first?.quantity.value == full.heartRateRecovery?.oneMinuteDrop)
        }
    }

    /// What the detectors decided is in the recorded changes: replaying them (a journal recovery)
    /// rebuilds the same workout without running the detectors again.
    @Test func aDetectedRaceRebuildsFromItsChangesIdentically() throws {
        var scenario = try Scenario.load("sprint")
        let bike = try #require(scenario.legs.firstIndex { $0.type == .cycling })
        scenario.legs[bike].segments.insert(Scenario.Segment(duration: 30, intensity: 0.3, kind: .stop), at: 1)
        var simulator = WatchSimulator(scenario: scenario, seed: 5)
        let sink = InMemoryRecording()
        let options = BuilderOptions(identifiers: .seeded(9), autoPause: .standard)
        let session = try WorkoutSession(
            configuration: scenario.configuration, clock: ManualClock(simulator.start), options: options, sink: sink)
        try session.start(at: simulator.start)
        while let second = simulator.next() {
            guard second.leg != nil else {
                try session.stop(at: second.time)
                try session.end(at: second.time)
                break
            }
            try session.builder.add(second.samples)
            if !second.events.isEmpty { try session.builder.add(second.events) }
            if !second.route.isEmpty { try session.builder.addRoute(second.route) }
        }
        let original = try session.builder.finishWorkout()
        #expect(original.activities.count == 5)
        #expect(original.events.contains { $0.type == .motionPaused })
        let rebuilt = try WorkoutSession(
            configuration: scenario.configuration, clock: ManualClock(simulator.start), options: options)
        for change in sink.changes {
            if case .finished = change { continue }
            try rebuilt.builder.apply(change)
        }
        #expect(try rebuilt.builder.finishWorkout() == original)
    }
}
