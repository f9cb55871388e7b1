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
        // What an import held goes back to the system once it is done (glibc keeps freed memory otherwise).
        defer { MemoryRelease.afterLargeWork(bytes: fileSize(path)) }
        // The bytes are only needed to decode and plan: released before the replay.
        let planned = { () throws(FileImportError) -> FITImportPlan in
            guard let bytes = readWhole(path) else {
                let exists = FileManager.default.fileExists(atPath: path)
                throw .unreadable(path: path, detail: exists ? "permission denied or not a file" : "no such file")
            }
            do throws(ImportError) {
                return try FITImportPlan(bytes: bytes, options: options)
            } catch {
                throw .format(path: path, error)
            }
        }
        var plan: FITImportPlan = try planned()
        plan.metadata[ImportMetadataKey.fileName] = .string((path as NSString).lastPathComponent)
        plan.metadata.merge(DeviceSummary.metadata(plan.sessions)) { current, _ in current }
        do {
            return try run(plan, path: path, into: store, compare: compare, progress: progress)
        } catch {
            if case .workoutExists(let id) = error { throw .alreadyImported(path: path, workout: id) }
            throw .store(path: path, error)
        }
    }

    /// Steps of a replay between two commits of its journal: a large file's changes are written as the replay
    /// goes (each commit rewrites the streams' open chunks, up to 4,096 samples each), a small file's at its end.
    static let commitSteps = 20_000

    /// The size of the file at `path` (0 when it cannot be read).
    static func fileSize(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// The bytes of the file at `path`, read once into one array (no second copy); nil when it cannot be read.
    static func readWhole(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int(status.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = 0
            while count < size {
                let got = read(descriptor, buffer.baseAddress.map { $0 + count }, size - count)
                if got < 0, errno == EINTR { continue }
                guard got > 0 else {
                    failed = got < 0
                    return
                }
                count += got
            }
        }
        return failed ? nil : bytes
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
        // The file is replayed faster than real time and committed every `commitSteps` steps and by the finish:
        // chunks as a save writes them, nothing to merge, and never more than those steps' changes waiting in
        // memory. An import cut short leaves a journal that no live session owns (the server discards it when the
        // file is uploaded again).
        let recording = try store.beginRecording(
            configuration: plan.configuration, clock: clock, options: plan.builderOptions, commitInterval: 0,
            chunking: .whole)
        let total = max(1, plan.stepCount)
        var commitFailure: StoreError?
        do throws(EngineError) {
            var lastReport = -1
            try plan.replay(into: recording.session, clock: clock) { index, _ in
                let percent = (index + 1) * 100 / total
                if percent != lastReport {
                    lastReport = percent
                    progress?(Double(index + 1) / Double(total))
                }
                if (index + 1) % commitSteps == 0 {
                    do throws(StoreError) { try recording.commit() } catch {
                        commitFailure = error
                        return false
                    }
                }
                return true
            }
        } catch {
            try? recording.discard()
            throw .engine(error)
        }
        if let commitFailure {
            try? recording.discard()
            throw commitFailure
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

/// Gives memory that large work freed back to the system.
enum MemoryRelease {
    /// After work on `bytes` of input: glibc's `malloc_trim(0)` when they were a megabyte or more (freed memory
    /// otherwise stays in the process's heaps: a 60 MB import kept gigabytes resident).
    static func afterLargeWork(bytes: Int) {
        guard bytes >= 1 << 20 else { return }
        #if os(Linux)
            typealias Trim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }
}
