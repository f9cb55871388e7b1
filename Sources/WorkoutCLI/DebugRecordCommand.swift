import ArgumentParser
import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

/// A hidden command for crash tests: records a synthetic ride into the journal in real time,
/// printing `committed N` after each group commit, and `saved ID N` when done. With `--resume`,
/// recovers the journaled session first and continues where it stopped.
struct DebugRecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-record", abstract: "Record a synthetic ride into the journal (for crash tests).",
        shouldDisplay: false)

    @OptionGroup var store: StoreOptions
    @Option(help: "Seed of the synthetic ride.") var seed: UInt64 = 1
    @Option(help: "Ride length in seconds.") var seconds: Int = 600
    @Option(help: "Seconds of ride per second of wall time (0: as fast as possible).") var speed: Double = 200
    @Option(help: "Longest time between journal commits, in seconds.") var commitInterval: Double = 0.02
    @Option(help: "Seconds per activity (a new cycling activity begins at each multiple).") var leg: Int = 120
    @Flag(help: "Recover the journaled session and continue it.") var resume = false

    func run() throws {
        let database = try store.open()
        let ride = SyntheticRide(seed: seed)
        let clock = ManualClock(ride.start)
        let report: @Sendable (Int) -> Void = { count in
            emitLine("committed \(count)")
        }
        let recording: JournaledRecording
        do {
            if resume,
                let recovered = try database.recoverActiveSession(
                    clock: clock, commitInterval: commitInterval, onCommit: report)
            {
                recording = recovered
            } else {
                recording = try database.beginRecording(
                    configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
                    options: BuilderOptions(identifiers: .seeded(seed)), commitInterval: commitInterval,
                    onCommit: report)
                try recording.session.start(at: ride.start)
            }
            let wallStart = Date()
            try SyntheticRideDriver.drive(recording.session, ride: ride, clock: clock, seconds: seconds, leg: leg) {
                second in
                guard speed > 0 else { return }
                let wait = wallStart.addingTimeInterval(Double(second + 1) / speed).timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            let workout = try recording.finish()
            emitLine("saved \(workout.id) \(workout.counters.accepted)")
        } catch let error as StoreError {
            throw UserFacingError(error)
        } catch let error as EngineError {
            throw UserFacingError(error)
        }
    }
}
