import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutSimulator
import WorkoutStore

/// How fast a replay runs: a multiple of real time, or as fast as possible on virtual time.
public enum ReplaySpeed: Sendable, Hashable, CustomStringConvertible {
    case times(Double)
    case max

    /// Parses `1x`, `60x`, `1000x` or `max`.
    public init?(_ text: String) {
        if text == "max" {
            self = .max
            return
        }
        guard text.hasSuffix("x"), let factor = Double(text.dropLast()), factor.isFinite, factor > 0 else { return nil }
        self = .times(factor)
    }

    public var description: String {
        switch self {
        case .max: "max"
        case .times(let factor): "\(factor)x"
        }
    }
}

/// Where a replay is, for a progress display.
public struct ReplayProgress: Sendable {
    /// Race seconds done.
    public var raceSeconds: Int
    public var leg: WorkoutActivityType?
    public var legNumber: Int?
}

/// What a replay produced.
public struct ReplayResult: Sendable {
    /// The saved workout (with the heart-rate recovery merged into its metadata when there is one).
    public var workout: Workout
    public var truth: GroundTruth
    /// How many samples the sensors sent during the race (what the builder was offered).
    public var samplesSent: Int
    /// The heart-rate recovery computed from the post-race heart rate.
    public var heartRateRecovery: HeartRateRecoveryResult?
    /// Detected changes the builder refused (0 unless something is wrong).
    public var detectorFailures: Int = 0
}

/// How a replay finds the legs of a multisport race and what else it turns on.
public struct ReplayOptions: Sendable {
    /// How legs change in a multisport race.
    public enum LegChanges: String, Sendable, CaseIterable {
        /// The watch's NEXT button at each leg's first second (explicit changes).
        case buttons
        /// No buttons: the session's automatic transition detection finds the legs.
        case automatic
    }

    public var speed: ReplaySpeed = .max
    public var legChanges: LegChanges = .buttons
    /// Auto-pause rules for the session; nil never auto-pauses.
    public var autoPause: AutoPauseSettings?

    public init(speed: ReplaySpeed = .max, legChanges: LegChanges = .buttons, autoPause: AutoPauseSettings? = nil) {
        self.speed = speed
        self.legChanges = legChanges
        self.autoPause = autoPause
    }
}

/// Replays a simulated race through the same live path as a recording: a journaled session and
/// its builder on a virtual clock, then the store. The saved workout is the same at every speed.
public enum RaceReplay {
    /// Runs `scenario` with `seed` into `store`.
    ///
    /// - Parameters:
    ///   - speed: `.max` never sleeps; `.times(k)` paces race seconds at k per wall second.
    ///   - progress: called about once per race minute.
    public static func run(
        _ scenario: Scenario, seed: UInt64, into store: WorkoutStore, speed: ReplaySpeed = .max,
        progress: (@Sendable (ReplayProgress) -> Void)? = nil
    ) throws(StoreError) -> ReplayResult {
        try run(scenario, seed: seed, into: store, options: ReplayOptions(speed: speed), progress: progress)
    }

    /// Runs `scenario` with `seed` into `store` with `options`.
    ///
    /// After the finish the post-race heart rate feeds the session's heart-rate recovery; the
    /// workout is saved at the finish and the recovery attached as soon as the post-race data has
    /// been replayed.
    public static func run(
        _ scenario: Scenario, seed: UInt64, into store: WorkoutStore, options: ReplayOptions,
        progress: (@Sendable (ReplayProgress) -> Void)? = nil
    ) throws(StoreError) -> ReplayResult {
        let speed = options.speed
        var simulator = WatchSimulator(scenario: scenario, seed: seed)
        let clock = ManualClock(simulator.start)
        // The ids derive from the scenario and the seed: the same replay gives the same workout, and
        // different scenarios with one seed do not collide.
        let identifiers = IdentifierSource.seeded(seed ^ fnv1a(scenario.name))
        let recording = try store.beginRecording(
            configuration: scenario.configuration, clock: clock,
            options: BuilderOptions(identifiers: identifiers, autoPause: options.autoPause))

        var truth = GroundTruthRecorder(scenario: scenario)
        var sent = 0
        let wallStart = Date()
        var recoveryEnd: Date?
        do {
            try recording.session.start(at: simulator.start)
            var stopped = false
            while let second = simulator.next() {
                truth.observe(second)
                guard let leg = second.leg else {
                    // After the finish: the heart rate of the recovery window.
                    if !stopped {
                        try finish(recording, at: second.time)
                        stopped = true
                    }
                    recording.session.addRecoveryHeartRate(second.samples)
                    recoveryEnd = second.time.addingTimeInterval(1)
                    continue
                }
                clock.set(second.time)
                if second.beginsLeg, !scenario.configuration.plannedLegs.isEmpty, options.legChanges == .buttons {
                    try recording.session.advanceToNextLeg(at: second.time)
                }
                try recording.builder.add(second.samples)
                if !second.events.isEmpty { try recording.builder.add(second.events) }
                if !second.route.isEmpty { try recording.builder.addRoute(second.route) }
                sent += second.samples.count
                // Faster than real time the wall-clock commit interval would let the journal's buffer
                // grow with the race; commit every five race minutes too (the same journal path).
                if second.offset % 300 == 299 { try recording.commit() }
                if second.offset % 60 == 0 {
                    progress?(
                        ReplayProgress(raceSeconds: second.offset, leg: scenario.legs[leg].type, legNumber: leg + 1))
                }
                if case .times(let factor) = speed {
                    let due = wallStart.addingTimeInterval(Double(second.offset + 1) / factor)
                    let wait = due.timeIntervalSinceNow
                    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                }
            }
            if !stopped {
                let end = truth.result(of: simulator).finish
                try finish(recording, at: end)
            }
        } catch let error as EngineError {
            try? recording.discard()
            throw .engine(error)
        } catch let error as StoreError {
            try? recording.discard()
            throw error
        } catch {
            try? recording.discard()
            throw .database(path: store.path, detail: String(describing: error))
        }
        var workout = try recording.finish()
        var recovery: HeartRateRecoveryResult?
        if let stop = recording.session.stopDate {
            do {
                let result = try recording.session.finishHeartRateRecovery(at: recoveryEnd ?? stop)
                try store.attachHeartRateRecovery(result, toWorkout: workout.id)
                workout.metadata.merge(result.workoutMetadata) { _, new in new }
                recovery = result
            } catch let error as StoreError {
                throw error
            } catch {
                throw .database(path: store.path, detail: String(describing: error))
            }
        }
        return ReplayResult(
            workout: workout, truth: truth.result(of: simulator), samplesSent: sent, heartRateRecovery: recovery,
            detectorFailures: recording.session.detectorFailures)
    }

    /// FNV-1a of a name, to mix a scenario into a seed.
    static func fnv1a(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    private static func finish(_ recording: JournaledRecording, at end: Date) throws {
        try recording.session.stop(at: end)
        try recording.session.end(at: end)
    }
}
