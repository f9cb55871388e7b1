import Foundation
import Synchronization
import WorkoutEngine
import WorkoutFormats
import WorkoutModel
import WorkoutStore

/// What importing one workout of a file produced.
public struct FileImportResult: Sendable {
    public var path: String
    /// The reader that read it (`FIT`, `Apple Health`).
    public var format: String
    /// The saved workout (with the heart-rate recovery merged into its metadata when there is one).
    public var workout: Workout
    public var anomalies: [ImportAnomaly]
    /// The damage of a salvaged file (the workout holds what precedes it), nil for a sound file.
    public var damageDetail: String?
    /// Our figures next to the file's own, per session/activity and lap, when asked for.
    public var comparisonRows: [ComparisonRow]?
    public var heartRateRecovery: HeartRateRecoveryResult?
    /// Samples and route points offered to the builder.
    public var samplesSent: Int
    public var routePointsSent: Int
    /// The reader's own account of the file (FIT: `FITImportDetails`); format-specific accessors
    /// live beside each reader.
    public var details: any Sendable
}

/// An error a reader reports about its format (FIT: `ImportError`).
public protocol FormatError: Error, Sendable, CustomStringConvertible {}

extension ImportError: FormatError {}

/// A file of a format holding many workouts (an Apple Health export) where one workout is expected (a
/// FIT upload to the server, `FileImport.run`): refused whole, nothing of it read or saved.
public struct ManyWorkoutsFileError: FormatError, Hashable {
    /// The file's format (`Apple Health`).
    public var format: String

    public init(format: String) { self.format = format }

    public var description: String {
        "this is an \(format) export, which holds many workouts, not a single-workout FIT file: nothing of it was "
            + "imported; import it with `workout import` instead"
    }
}

/// Why a file (or one workout of it) was not imported; nothing of it was saved.
public enum FileImportError: Error, Sendable, CustomStringConvertible {
    case unreadable(path: String, detail: String)
    case format(path: String, any FormatError)
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

/// One workout a reader found in a file, ready for the live path.
public struct ReadWorkout: Sendable {
    public var script: SessionScript
    public var anomalies: [ImportAnomaly]
    public var damageDetail: String?
    /// The reader's own account (kept in `FileImportResult.details`).
    public var details: any Sendable
    /// Other ids the same workout may have been stored under before (an import made before `ImportOptions.idSalt`
    /// salted its ids): a workout stored under one of them is a duplicate too.
    public var earlierIdentifiers: [IdentifierSource] = []
    /// Compares the saved workout and its samples with what the file states: the rows, and the
    /// details with the comparison in them.
    public var compare: @Sendable (Workout, [QuantitySample]) -> (rows: [ComparisonRow], details: any Sendable)

    public init(
        script: SessionScript, anomalies: [ImportAnomaly] = [], damageDetail: String? = nil, details: any Sendable,
        compare: @escaping @Sendable (Workout, [QuantitySample]) -> (rows: [ComparisonRow], details: any Sendable)
    ) {
        self.script = script
        self.anomalies = anomalies
        self.damageDetail = damageDetail
        self.details = details
        self.compare = compare
    }
}

extension FileImport {
    /// Fills the statistics a file states for types the engine had no sample of (the device's figure,
    /// `sampleCount` 0); the engine's own statistics are never replaced.
    ///
    /// The filled ones are listed in the workout's `statedStatisticsKey` metadata (`workout.heartRate,
    /// activity2.heartRate`), so that a comparison never holds the device's figure against itself.
    static func fillStated(_ stated: StatedStatistics, into workout: inout Workout) {
        var filled: [String] = []
        for statistic in stated.workout where workout.statistics[statistic.quantityType] == nil {
            workout.statistics[statistic.quantityType] = statistic
            filled.append("workout.\(statistic.quantityType.rawValue)")
        }
        for (index, statistics) in stated.activities.enumerated() where index < workout.activities.count {
            for statistic in statistics where workout.activities[index].statistics[statistic.quantityType] == nil {
                workout.activities[index].statistics[statistic.quantityType] = statistic
                filled.append("activity\(index + 1).\(statistic.quantityType.rawValue)")
            }
        }
        if !filled.isEmpty { workout.metadata[statedStatisticsKey] = .string(filled.joined(separator: ",")) }
    }

    /// Metadata key listing the statistics that are the file's own figures (no sample to recompute them).
    public static let statedStatisticsKey = "ImportStatedStatistics"
}

/// A file format's reader: recognises its files and turns them into session scripts.
public protocol WorkoutFileReader: Sendable {
    /// The format's name (`FIT`).
    static var format: String { get }
    /// Whether a file starting with `head` (its first bytes, up to 512) and named `name` is of this format.
    static func recognizes(head: [UInt8], name: String) -> Bool
    /// Reads the file at `path` (or folder, for a format that is one), handing `each` its workouts in
    /// file order, each as a script or as the reason it was refused (the others go on). Workouts are
    /// handed over one at a time so that a large file's are never all held at once.
    ///
    /// - Throws: when the file as a whole cannot be read (no workout was handed over for it).
    static func read(
        path: String, options: ImportOptions, each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError)
}

/// Imports recorded files through the same live path as a recording (and as `RaceReplay`): a
/// session and its builder on a virtual clock, then the store. Every statistic is the engine's; a
/// file's own summaries are only compared with. No journal is kept (`WorkoutStore.beginImport`): a
/// file's workouts are saved a batch at a time, in one transaction, each whole or not at all.
///
/// A reader per format (`FileImport.readers`) turns a file into `SessionScript`s; the import path
/// after that is the same for every format.
public enum FileImport {
    /// The readers, tried in order on a file's first bytes and name.
    public static let readers: [any WorkoutFileReader.Type] = [FITFileReader.self, AppleHealthReader.self]

    /// The reader for the file at `path` (by its content, then its extension), nil when none knows it.
    public static func reader(forFileAt path: String) -> (any WorkoutFileReader.Type)? {
        var head: [UInt8] = []
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8]((try? handle.read(upToCount: 512)) ?? Data())
            try? handle.close()
        }
        let name = (path as NSString).lastPathComponent
        return readers.first { $0.recognizes(head: head, name: name) }
    }

    /// Imports the file at `path` into `store` with the reader its content names: one result per workout
    /// of the file, each imported or refused on its own.
    ///
    /// - Parameters:
    ///   - compare: also compare each workout with the file's own figures (reads the saved samples back).
    ///   - progress: called with the fraction of a workout's timeline replayed (0…1).
    /// - Throws: when no reader knows the file or it cannot be read at all.
    public static func runAll(
        path: String, into store: WorkoutStore, options: ImportOptions = ImportOptions(), compare: Bool = false,
        progress: ((Double) -> Void)? = nil
    ) throws(FileImportError) -> [Result<FileImportResult, FileImportError>] {
        var results: [Result<FileImportResult, FileImportError>] = []
        try runEach(path: path, into: store, options: options, compare: compare, progress: progress) { results.append($0) }
        return results
    }

    /// Imports the file at `path` with `reader`.
    public static func runAll(
        path: String, reader: any WorkoutFileReader.Type, into store: WorkoutStore,
        options: ImportOptions = ImportOptions(), compare: Bool = false, progress: ((Double) -> Void)? = nil
    ) throws(FileImportError) -> [Result<FileImportResult, FileImportError>] {
        var results: [Result<FileImportResult, FileImportError>] = []
        try runEach(path: path, reader: reader, into: store, options: options, compare: compare, progress: progress) {
            results.append($0)
        }
        return results
    }

    /// Imports the file at `path` (with the reader its content names, as `runAll`), handing each workout's
    /// result to `each` once it is stored, in file order. The workouts are saved a batch at a time (up to
    /// `batchWorkouts`, or `batchBytes` held: `heldBytes`) in one transaction: nothing of a workout is held once
    /// its batch is saved, so an export of many thousand workouts imports in memory that does not grow with it.
    public static func runEach(
        path: String, into store: WorkoutStore, options: ImportOptions = ImportOptions(), compare: Bool = false,
        progress: ((Double) -> Void)? = nil, each: (Result<FileImportResult, FileImportError>) -> Void
    ) throws(FileImportError) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw .unreadable(path: path, detail: exists ? "permission denied or not a file" : "no such file")
        }
        var isFolder: ObjCBool = false
        let reader: any WorkoutFileReader.Type =
            FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
            ? AppleHealthReader.self : (Self.reader(forFileAt: path) ?? FITFileReader.self)
        try runEach(
            path: path, reader: reader, into: store, options: options, compare: compare, progress: progress, each: each)
    }

    /// Imports the file at `path` with `reader`, handing each workout's result to `each` once stored.
    public static func runEach(
        path: String, reader: any WorkoutFileReader.Type, into store: WorkoutStore,
        options: ImportOptions = ImportOptions(), compare: Bool = false, progress: ((Double) -> Void)? = nil,
        each: (Result<FileImportResult, FileImportError>) -> Void
    ) throws(FileImportError) {
        // What an import held goes back to the system once it is done (glibc keeps freed memory otherwise).
        defer { MemoryRelease.afterLargeWork(bytes: fileSize(path)) }
        // The replayed workouts are saved a batch at a time, in one transaction (a savepoint each: one that cannot be
        // saved is left out whole, the others kept), and their results handed over in file order once saved. While a
        // full batch is saved on a thread of its own, the next ones are read and replayed (`BatchSave`): up to
        // `batchesAhead` batches wait for their save or are saved meanwhile (a save slower than usual, a checkpoint of
        // the store's log, does not hold the reading up), and the results are handed over on the calling thread, in
        // order.
        var pending: [Pending] = []
        var pendingBytes = 0
        // What the pending batch saves, and what it holds that nothing needs after the replay (each workout's script):
        // both go to the thread that saves, which lays the workouts out in chunks and frees them there.
        var toSave: [ImportedWorkout] = []
        var scripts: [SessionScript] = []
        var saving: [(entries: [Pending], save: BatchSave)] = []
        // One after the other, in file order: a workout's first copy in the file is the one saved.
        let saver = DispatchQueue(label: "workout import save")
        func handOver(_ entries: [Pending], _ saved: [StoreError?]) {
            var next = 0
            for entry in entries {
                switch entry {
                case .result(let result): each(result)
                case .replayed(let item):
                    let error =
                        next < saved.count
                        ? saved[next] : StoreError.database(path: store.path, detail: "no answer from the store's save")
                    next += 1
                    do throws(StoreError) {
                        if let error { throw error }
                        each(.success(try item.result(path: path, into: store, compare: compare)))
                    } catch {
                        each(.failure(Self.failure(error, path: path)))
                    }
                }
            }
        }
        /// Saves the pending batch: on the saver's thread (`inBackground`, once fewer than `batchesAhead` batches are
        /// under way there, the oldest handed over first) or here, once every batch before is handed over.
        func flush(inBackground: Bool) {
            while !saving.isEmpty, saving.count >= (inBackground ? batchesAhead : 1) {
                let (entries, save) = saving.removeFirst()
                handOver(entries, save.wait())
            }
            let entries = pending
            let batch = BatchSave.Batch(workouts: toSave, releasing: scripts)
            pending.removeAll()
            toSave.removeAll()
            scripts.removeAll()
            pendingBytes = 0
            // Under a caller's cancellation (a server request) every batch is saved here: the caller's share of the
            // store's connections is counted per cancellation, and two threads would take two connections under it.
            if inBackground, !batch.workouts.isEmpty, StoreCancellation.current == nil {
                saving.append((entries, BatchSave(batch, into: store, on: saver)))
            } else {
                handOver(entries, BatchSave.save(batch, into: store))
            }
        }
        // A file of many workouts (an Apple Health export) is a bulk load: the store may keep its query indexes once,
        // at the end (`WorkoutStore.beginBulkImport`). A FIT file's one workout is not (a server's uploads would add up).
        let bulk = reader.format != FITFileReader.format ? store.beginBulkImport() : nil
        do {
            try reader.read(path: path, options: options) { read in
                switch read {
                case .failure(let error):
                    pending.append(.result(.failure(error)))
                case .success(let read):
                    do throws(StoreError) {
                        let (item, imported) = try replay(read, format: reader.format, into: store, progress: progress)
                        pending.append(.replayed(item))
                        toSave.append(imported)
                        scripts.append(read.script)
                        pendingBytes += Self.heldBytes(imported, read.script)
                    } catch {
                        pending.append(.result(.failure(Self.failure(error, path: path))))
                    }
                }
                if pending.count >= batchWorkouts || pendingBytes >= batchBytes { flush(inBackground: true) }
            }
        } catch {
            flush(inBackground: false)
            throw error
        }
        flush(inBackground: false)
        // Every result is handed over: the indexes not made again now (a locked or full file) are made when the
        // store is next opened or the next import ends (`BulkImport.finish()`), nothing saved is lost.
        try? bulk?.finish()
    }

    /// A store error as the import of one workout reports it.
    static func failure(_ error: StoreError, path: String) -> FileImportError {
        if case .workoutExists(let id) = error { return .alreadyImported(path: path, workout: id) }
        return .store(path: path, error)
    }

    /// A batch of replayed workouts being saved on a thread of its own (`WorkoutStore.saveImported(_:)`, which lays
    /// them out in chunks there), while the caller reads and replays the next batch (only without a caller's
    /// `StoreCancellation`: `runEach`). What the batch holds is freed on that thread too.
    final class BatchSave: Sendable {
        /// The workouts to save, and what is freed with them once saved (their scripts).
        struct Batch: Sendable {
            var workouts: [ImportedWorkout]
            var releasing: [SessionScript]
        }

        private let done = DispatchSemaphore(value: 0)
        private let outcome = Mutex<[StoreError?]>([])

        /// Saves `batch` on `queue` (a serial queue: batches are saved in the order given).
        init(_ batch: consuming Batch, into store: WorkoutStore, on queue: DispatchQueue) {
            // The block holds the only reference: the batch is freed on the queue's thread, with the block.
            queue.async { [self, batch] in
                let saved = Self.save(batch, into: store)
                outcome.withLock { $0 = saved }
                done.signal()
            }
        }

        /// Each workout's error (nil: saved), once the save is done.
        func wait() -> [StoreError?] {
            done.wait()
            return outcome.withLock { $0 }
        }

        /// Saves the batch here: each workout's error, the transaction's for all when it failed as a whole.
        static func save(_ batch: consuming Batch, into store: WorkoutStore) -> [StoreError?] {
            do throws(StoreError) {
                return try store.saveImported(batch.workouts)
            } catch {
                return Array(repeating: error, count: batch.workouts.count)
            }
        }
    }

    /// A workout of a file, replayed and waiting to be saved with the others of its batch; or a result to hand over
    /// in its turn.
    enum Pending {
        case result(Result<FileImportResult, FileImportError>)
        case replayed(Replayed)
    }

    /// A workout replayed, not yet saved: what its result needs once it is (its samples and script are the save's:
    /// `ImportedWorkout`).
    struct Replayed {
        var format: String
        var workout: Workout
        var recovery: HeartRateRecoveryResult?
        var anomalies: [ImportAnomaly]
        var damageDetail: String?
        var details: any Sendable
        var compare: @Sendable (Workout, [QuantitySample]) -> (rows: [ComparisonRow], details: any Sendable)
        var samplesSent: Int
        var routePointsSent: Int

        /// Once saved (with its heart-rate recovery: `ImportedWorkout.attaching(_:)`): the comparison made.
        func result(path: String, into store: WorkoutStore, compare: Bool) throws(StoreError) -> FileImportResult {
            var rows: [ComparisonRow]?
            var details = self.details
            if compare {
                let compared = self.compare(workout, try store.samples(workout: workout.id))
                rows = compared.rows
                details = compared.details
            }
            return FileImportResult(
                path: path, format: format, workout: workout, anomalies: anomalies, damageDetail: damageDetail,
                comparisonRows: rows, heartRateRecovery: recovery, samplesSent: samplesSent,
                routePointsSent: routePointsSent, details: details)
        }
    }

    /// Imports a file holding one workout (a FIT file): its result, or why it was refused.
    ///
    /// A file of a format holding many workouts (an Apple Health export, or a folder) is refused before
    /// anything is read or saved (`ManyWorkoutsFileError`): one result cannot answer for many workouts.
    /// Import those with `runAll`.
    public static func run(
        path: String, into store: WorkoutStore, options: ImportOptions = ImportOptions(), compare: Bool = false,
        progress: ((Double) -> Void)? = nil
    ) throws(FileImportError) -> FileImportResult {
        try refuseManyWorkouts(path: path, byName: true)
        let results = try runAll(path: path, into: store, options: options, compare: compare, progress: progress)
        guard let first = results.first else {
            throw .unreadable(path: path, detail: "the file holds no workout")
        }
        return try first.get()
    }

    /// Throws `ManyWorkoutsFileError` for a folder or a file whose content (or, with `byName`, name) is of a
    /// format holding many workouts: where one workout is expected, nothing of it is read or saved.
    static func refuseManyWorkouts(path: String, byName: Bool) throws(FileImportError) {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw .format(path: path, ManyWorkoutsFileError(format: AppleHealthReader.format))
        }
        // By content first (the server's spooled uploads are all named `.fit`), then by name.
        var head: [UInt8] = []
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8]((try? handle.read(upToCount: 512)) ?? Data())
            try? handle.close()
        }
        if let reader = readers.first(where: { $0.recognizes(head: head, name: "") })
            ?? (byName ? reader(forFileAt: path) : nil), reader.format != FITFileReader.format
        {
            throw .format(path: path, ManyWorkoutsFileError(format: reader.format))
        }
    }

    /// Replays one read workout into `store`: the one path from any file into the engine.
    public static func run(
        _ read: ReadWorkout, format: String, path: String, into store: WorkoutStore, compare: Bool,
        progress: ((Double) -> Void)?
    ) throws(StoreError) -> FileImportResult {
        let (item, imported) = try replay(read, format: format, into: store, progress: progress)
        if let error = try store.saveImported([imported]).first ?? nil { throw error }
        return try item.result(path: path, into: store, compare: compare)
    }

    /// Replays one read workout through a session and its builder: the workout, finished, with its samples and route
    /// (laid out in chunks when saved), nothing saved yet; and what its result needs.
    static func replay(
        _ read: ReadWorkout, format: String, into store: WorkoutStore, progress: ((Double) -> Void)?
    ) throws(StoreError) -> (Replayed, ImportedWorkout) {
        let plan = read.script
        // The same file gives the same ids: refuse to import it twice (also under the ids it had before
        // `ImportOptions.idSalt` salted them).
        for identifiers in [plan.builderOptions.identifiers] + read.earlierIdentifiers {
            var options = plan.builderOptions
            options.identifiers = identifiers
            if let id = try? LiveWorkoutBuilder(configuration: plan.configuration, options: options).workoutID,
                try store.containsWorkout(id: id)
            {
                throw .workoutExists(id)
            }
        }
        let clock = ManualClock(plan.start)
        // The file is replayed faster than real time into one new workout, without a journal (`ImportRecording`):
        // nothing is written until the workout is saved with its samples and route, so a workout refused halfway
        // (a damaged file) or an import cut short leaves nothing behind. Every `commitSteps` steps the samples
        // accepted so far are laid out in encoded chunks, so that a large file's samples are never all held.
        let recording = try store.beginImport(
            configuration: plan.configuration, clock: clock, options: plan.builderOptions)
        let total = max(1, plan.steps.count)
        do throws(EngineError) {
            var lastReport = -1
            try plan.replay(into: recording.session, clock: clock) { index, _ in
                let percent = (index + 1) * 100 / total
                if percent != lastReport {
                    lastReport = percent
                    progress?(Double(index + 1) / Double(total))
                }
                if (index + 1) % commitSteps == 0 { recording.flush() }
                return true
            }
        } catch {
            try? recording.discard()
            throw .engine(error)
        }
        let imported = try recording.complete { workout in Self.fillStated(plan.statedStatistics, into: &workout) }
        let recovery: HeartRateRecoveryResult?
        do {
            recovery = try plan.finishRecovery(of: recording.session)
        } catch {
            throw .engine(error)
        }
        // The recovery is saved with the workout, in its savepoint: never a saved workout without it.
        let saved = recovery.map { imported.attaching($0) } ?? imported
        let item = Replayed(
            format: format, workout: saved.workout, recovery: recovery, anomalies: read.anomalies,
            damageDetail: read.damageDetail, details: read.details, compare: read.compare,
            samplesSent: plan.sampleCount, routePointsSent: plan.routePointCount)
        return (item, saved)
    }
}

extension FileImport {
    /// Steps of a replay between two layouts of its samples in chunks (`ImportRecording.flush()`): what is held
    /// of a large file's samples between them is bounded.
    static let commitSteps = 20_000

    /// Workouts of a file saved in one transaction, at most (`WorkoutStore.saveImported(_:)`): a transaction per
    /// workout wrote the pages they share (the statistics' indexes, the anchor, the b-trees' last leaves) to
    /// SQLite's log again for each.
    static let batchWorkouts = 128
    /// Bytes held for a batch, at most (`heldBytes(_:_:)`: the encoded chunks and the decoded inputs kept until the
    /// batch is saved): a batch of large workouts is saved sooner.
    static let batchBytes = 16 << 20
    /// Batches saved or waiting for their save while the next is read and replayed, at most (`runEach`).
    static let batchesAhead = 2
    /// Bytes a decoded sample or route point of a waiting workout holds, about (a `QuantitySample` with its type,
    /// dates, value and source is about 110): what a pending workout keeps besides its encoded chunks.
    static let heldBytesPerInput = 128

    /// What a workout waiting for its batch's save holds, about: its encoded chunks and its decoded inputs (an Apple
    /// Health workout keeps every sample of its script until the comparison; one hour of a watch's run is 15,000–20,000
    /// of them, about 2 MB, where its chunks are a few bytes a sample). Counting the chunks alone let a batch of 128
    /// such workouts hold 250 MB.
    static func heldBytes(chunkBytes: Int, inputs: Int) -> Int {
        chunkBytes + inputs * heldBytesPerInput
    }

    /// What a replayed workout waiting for its batch's save holds with its script (`heldBytes(chunkBytes:inputs:)`;
    /// `ImportedWorkout.chunkBytes` counts its samples not yet laid out in chunks).
    static func heldBytes(_ imported: ImportedWorkout, _ script: SessionScript) -> Int {
        heldBytes(chunkBytes: imported.chunkBytes, inputs: script.sampleCount + script.routePointCount)
    }

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
