import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutStore

/// What the FIT reader knows of an imported file beyond the workout: the device's sessions, the legs,
/// the damage of a salvaged file and the comparison with the device's summaries.
public struct FITImportDetails: Sendable {
    public var legs: [ImportedLeg]
    /// The device's sessions in time order (what the comparison holds ours to).
    public var sessions: [FITSummary]
    public var damage: FITError?
    public var comparison: FITComparison?
}

/// Reads FIT activity files (`FITImportPlan`): one workout per file.
public enum FITFileReader: WorkoutFileReader {
    public static let format = "FIT"

    /// A FIT file: `.FIT` at bytes 8…11 of its header, or a `.fit` name (a damaged header is still refused
    /// by the decoder with its reason).
    public static func recognizes(head: [UInt8], name: String) -> Bool {
        if head.count >= 12, Array(head[8..<12]) == Array(".FIT".utf8) { return true }
        return name.lowercased().hasSuffix(".fit")
    }

    public static func read(
        path: String, options: ImportOptions, each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError) {
        // The bytes are only needed to decode and plan: released before the replay.
        let planned = { () throws(FileImportError) -> FITImportPlan in
            guard let bytes = FileImport.readWhole(path) else {
                let exists = FileManager.default.fileExists(atPath: path)
                throw .unreadable(path: path, detail: exists ? "permission denied or not a file" : "no such file")
            }
            do throws(ImportError) {
                return try FITImportPlan(bytes: bytes, options: options)
            } catch {
                throw .format(path: path, error)
            }
        }
        var plan = try planned()
        plan.metadata[ImportMetadataKey.fileName] = .string((path as NSString).lastPathComponent)
        plan.metadata.merge(DeviceSummary.metadata(plan.sessions)) { current, _ in current }
        each(.success(workout(plan)))
    }

    /// A planned FIT import as the format-neutral input of the live path.
    public static func workout(_ plan: FITImportPlan) -> ReadWorkout {
        let details = FITImportDetails(legs: plan.legs, sessions: plan.sessions, damage: plan.damage, comparison: nil)
        var read = ReadWorkout(
            script: SessionScript(plan), anomalies: plan.anomalies, damageDetail: plan.damage?.description,
            details: details
        ) { workout, samples in
            let comparison = FITComparison(plan: plan, workout: workout, samples: samples)
            var compared = details
            compared.comparison = comparison
            return (comparison.rows, compared)
        }
        if plan.options.idSalt != 0 { read.earlierIdentifiers = [plan.unsaltedIdentifiers] }
        return read
    }
}

extension FileImportResult {
    /// The FIT reader's account, nil for another format.
    public var fit: FITImportDetails? { details as? FITImportDetails }
    /// The FIT file's legs (empty for another format).
    public var legs: [ImportedLeg] { fit?.legs ?? [] }
    /// The FIT file's sessions in time order (empty for another format).
    public var sessions: [FITSummary] { fit?.sessions ?? [] }
    /// The damage of a salvaged FIT file.
    public var damage: FITError? { fit?.damage }
    /// Our figures next to the FIT device's, when compared.
    public var comparison: FITComparison? { fit?.comparison }
}

extension FileImport {
    /// Imports the FIT file at `path` into `store` with the FIT reader, whatever the file's name; content of a
    /// format holding many workouts (an Apple Health export) is refused with `ManyWorkoutsFileError`, which
    /// says to use `workout import`.
    public static func runFIT(
        path: String, into store: WorkoutStore, options: ImportOptions = ImportOptions(), compare: Bool = false,
        progress: ((Double) -> Void)? = nil
    ) throws(FileImportError) -> FileImportResult {
        try refuseManyWorkouts(path: path, byName: false)
        let results = try runAll(
            path: path, reader: FITFileReader.self, into: store, options: options, compare: compare, progress: progress)
        guard let first = results.first else { throw .unreadable(path: path, detail: "the file holds no workout") }
        return try first.get()
    }
}
