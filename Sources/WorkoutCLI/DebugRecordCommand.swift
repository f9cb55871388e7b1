import ArgumentParser
import Foundation
import WorkoutEngine
import WorkoutModel
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
            let session = recording.session
            var index = session.builder.counters.accepted
            let total = seconds * SyntheticRide.streams
            let wallStart = Date()
            while index < total {
                let second = index / SyntheticRide.streams
                clock.set(ride.date(second))
                // A recovered session may already have begun this second's activity.
                if second % leg == 0, index % SyntheticRide.streams == 0,
                    session.builder.currentActivity()?.start != ride.date(second)
                {
                    try session.beginNewActivity(
                        configuration: WorkoutConfiguration(activityType: .cycling), at: ride.date(second))
                }
                let end = min(total, (second + 1) * SyntheticRide.streams)
                try session.builder.add(ride.samples(index..<end))
                index = end
                if speed > 0 {
                    let due = wallStart.addingTimeInterval(Double(second + 1) / speed)
                    let wait = due.timeIntervalSinceNow
                    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                }
            }
            try session.stop(at: ride.date(seconds))
            try session.end(at: ride.date(seconds))
            let workout = try recording.finish()
            emitLine("saved \(workout.id) \(workout.counters.accepted)")
        } catch let error as StoreError {
            throw UserFacingError(error)
        } catch let error as EngineError {
            throw UserFacingError(error)
        }
    }
}
