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
    public var workout: Workout
    public var truth: GroundTruth
    /// How many samples the sensors sent during the race (what the builder was offered).
    public var samplesSent: Int
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
        var simulator = WatchSimulator(scenario: scenario, seed: seed)
        let clock = ManualClock(simulator.start)
        // The ids derive from the scenario and the seed: the same replay gives the same workout, and
        // different scenarios with one seed do not collide.
        let identifiers = IdentifierSource.seeded(seed ^ fnv1a(scenario.name))
        let recording = try store.beginRecording(
            configuration: scenario.configuration, clock: clock, options: BuilderOptions(identifiers: identifiers))

        var truth = GroundTruthRecorder(scenario: scenario)
        var sent = 0
        let wallStart = Date()
        do {
            try recording.session.start(at: simulator.start)
            var stopped = false
            while let second = simulator.next() {
                truth.observe(second)
                guard let leg = second.leg else {
                    // After the finish: the recovery window (heart-rate recovery arrives with its issue).
                    if !stopped {
                        try finish(recording, at: second.time)
                        stopped = true
                    }
                    continue
                }
                clock.set(second.time)
                if second.beginsLeg, !scenario.configuration.plannedLegs.isEmpty {
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
        let workout = try recording.finish()
        return ReplayResult(workout: workout, truth: truth.result(of: simulator), samplesSent: sent)
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
