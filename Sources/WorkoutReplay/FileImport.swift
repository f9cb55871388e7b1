import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutStore

/// What importing one file produced.
public struct FileImportResult: Sendable {
    public var path: String
    /// The saved workout (with the heart-rate recovery merged into its metadata when there is one).
    public var workout: Workout
    public var legs: [ImportedLeg]
    /// The device's sessions in time order (what the comparison holds ours to).
    public var sessions: [FITSummary]
    /// The damage of a salvaged file (the workout holds what precedes it), nil for a sound file.
    public var damage: FITError?
    public var anomalies: [ImportAnomaly]
    /// Our figures next to the device's, per session and lap, when asked for.
    public var comparison: FITComparison?
    public var heartRateRecovery: HeartRateRecoveryResult?
    /// Samples and route points offered to the builder.
    public var samplesSent: Int
    public var routePointsSent: Int
}

/// Why a file was not imported; nothing was saved.
public enum FileImportError: Error, Sendable, CustomStringConvertible {
    case unreadable(path: String, detail: String)
    case format(path: String, ImportError)
    case alreadyImported(path: String, workout: UUID)
    case store(path: String, StoreError)

    public var description: String {
        switch self {
        case .unreadable(let path, let detail): "\(path): cannot read the file (\(detail))"
        case .format(let path, let error): "\(path): \(error)"
        case .alreadyImported(let path, let workout):
            "\(path) is already imported as workout \(workout); delete it first (`workout delete \(workout)`) to import it again"
        case .store(let path, let error): "\(path): \(error)"
        }
    }
}

/// Replays a recorded FIT file through the same live path as a recording (and as `RaceReplay`): a
/// journaled session and its builder on a virtual clock, then the store. Every statistic is the
/// engine's; the device's summaries are only compared with.
public enum FileImport {
    /// Imports the FIT file at `path` into `store`.
    ///
    /// - Parameters:
    ///   - compare: also compare our workout with the device's summaries (reads the saved samples back).
    ///   - progress: called with the fraction of the file's timeline replayed (0…1).
    public static func run(
        path: String, into store: WorkoutStore, options: FITImportOptions = FITImportOptions(), compare: Bool = false,
        progress: ((Double) -> Void)? = nil
    ) throws(FileImportError) -> FileImportResult {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw .unreadable(path: path, detail: exists ? "permission denied or not a file" : "no such file")
        }
        let bytes = [UInt8](data)
        var plan: FITImportPlan
        do {
            plan = try FITImportPlan(bytes: bytes, options: options)
        } catch {
            throw .format(path: path, error)
        }
        plan.metadata[ImportMetadataKey.fileName] = .string((path as NSString).lastPathComponent)
        plan.metadata.merge(DeviceSummary.metadata(plan.sessions)) { current, _ in current }
        do {
            return try run(plan, path: path, into: store, compare: compare, progress: progress)
        } catch {
            if case .workoutExists(let id) = error { throw .alreadyImported(path: path, workout: id) }
            throw .store(path: path, error)
        }
    }

    /// Replays a planned import into `store`.
    static func run(
        _ plan: FITImportPlan, path: String, into store: WorkoutStore, compare: Bool, progress: ((Double) -> Void)?
    ) throws(StoreError) -> FileImportResult {
        // The same file gives the same ids: refuse to import it twice (also when it was imported without the salt
        // of `FITImportOptions.idSalt`, before it was given one).
        var unsalted = plan.builderOptions
        unsalted.identifiers = plan.unsaltedIdentifiers
        for options in plan.options.idSalt == 0 ? [plan.builderOptions] : [plan.builderOptions, unsalted] {
            if let id = try? LiveWorkoutBuilder(configuration: plan.configuration, options: options).workoutID,
                try store.workout(id: id) != nil
            {
                throw .workoutExists(id)
            }
        }
        let clock = ManualClock(plan.start)
        // The file is replayed faster than real time and committed once, by the finish: chunks as a save writes
        // them, nothing to merge. An import cut short leaves an empty journal (the server discards it when the file
        // is uploaded again).
        let recording = try store.beginRecording(
            configuration: plan.configuration, clock: clock, options: plan.builderOptions, commitInterval: 0,
            chunking: .whole)
        let total = max(1, plan.steps.count)
        do throws(EngineError) {
            var lastReport = -1
            try plan.replay(into: recording.session, clock: clock) { index, _ in
                let percent = (index + 1) * 100 / total
                if percent != lastReport {
                    lastReport = percent
                    progress?(Double(index + 1) / Double(total))
                }
                return true
            }
        } catch {
            try? recording.discard()
            throw .engine(error)
        }
        var workout = try recording.finish()
        var recovery: HeartRateRecoveryResult?
        let result: HeartRateRecoveryResult?
        do {
            result = try plan.finishRecovery(of: recording.session)
        } catch {
            throw .engine(error)
        }
        if let result {
            try store.attachHeartRateRecovery(result, toWorkout: workout.id)
            workout.metadata.merge(result.workoutMetadata) { _, new in new }
            recovery = result
        }
        var comparison: FITComparison?
        if compare {
            comparison = FITComparison(plan: plan, workout: workout, samples: try store.samples(workout: workout.id))
        }
        return FileImportResult(
            path: path, workout: workout, legs: plan.legs, sessions: plan.sessions, damage: plan.damage,
            anomalies: plan.anomalies, comparison: comparison,
            heartRateRecovery: recovery,
            samplesSent: plan.sampleCount, routePointsSent: plan.routePointCount)
    }
}
