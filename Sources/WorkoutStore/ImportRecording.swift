import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

/// A session replaying a file into one new workout (an import), without a journal: its samples and route points
/// are kept as accepted and laid out in chunks as a save writes them (`JournalChunking.whole`) at each `flush()` and
/// by the save, and `finish()` writes the workout with every chunk in one transaction (`WorkoutStore.save`'s).
///
/// A recording keeps a journal so that a crash loses at most a second of what a device sent; a file is still there
/// after a crash, so an import cut short is simply imported again, and a journal would only cost: a transaction to
/// begin it, its rows written and deleted again, and its session row read at each commit. Nothing is written before
/// `finish()`: an import cut short, or a workout refused halfway (a damaged file), leaves nothing in the store, and
/// its workout id is not held (before, an import cut short left a journal holding it).
///
/// Memory: the samples accepted since the last `flush()`, each stream's open chunk (up to 4,096 samples) and the
/// encoded chunks already closed (a few bytes a sample).
public final class ImportRecording: Sendable {
    public let session: WorkoutSession
    public let store: WorkoutStore
    let writer: ImportWriter

    init(session: WorkoutSession, store: WorkoutStore, writer: ImportWriter) {
        self.session = session
        self.store = store
        self.writer = writer
    }

    public var builder: LiveWorkoutBuilder { session.builder }

    /// Lays the samples and route points accepted so far out in chunks (only encoded chunks stay), so that what
    /// is held between two calls stays bounded; nothing is written to the store.
    public func flush() { writer.flush() }

    /// Saves the workout with its samples and route in one transaction (`.workoutExists` when its id is taken),
    /// then finishes the builder. The session must have ended.
    ///
    /// - Parameter completing: an import's last word on the saved workout before it is written (an Apple Health
    ///   import fills the statistics the export states for types without samples).
    @discardableResult
    public func finish(completing: ((inout Workout) -> Void)? = nil) throws(StoreError) -> Workout {
        let completed = try complete(completing: completing)
        if let error = try store.saveImported([completed]).first ?? nil { throw error }
        return completed.workout
    }

    /// Finishes the builder and hands the workout over with its samples and route, nothing written:
    /// `WorkoutStore.saveImported(_:)` lays them out in chunks and saves them, with other workouts of the same file in
    /// one transaction (on the thread that saves: an import's batch saved on a thread of its own lays its workouts
    /// out there). The session must have ended.
    ///
    /// - Parameter completing: an import's last word on the workout before it is handed over.
    public func complete(completing: ((inout Workout) -> Void)? = nil) throws(StoreError) -> ImportedWorkout {
        guard session.builder.state == .ended else { throw .sessionNotEnded(state: session.state.rawValue) }
        // What finishWorkout() returns: the builder's state at its end, every sample folded in.
        var workout = session.builder.snapshot()
        completing?(&workout)
        let accepted = writer.take()
        do {
            _ = try session.builder.finishWorkout()
        } catch {
            throw .engine(error)
        }
        return ImportedWorkout(workout: workout, accepted: accepted)
    }

    /// Drops the recording: nothing of it was written.
    public func discard() throws(StoreError) {
        writer.close()
        if session.builder.state != .discarded, session.builder.state != .finished {
            do { try session.builder.discardWorkout() } catch { throw .engine(error) }
        }
    }
}

/// A finished workout of an import with its samples and route, not yet saved (`ImportRecording.complete(completing:)`,
/// `WorkoutStore.saveImported(_:)`, which lays them out in chunks where it runs).
public struct ImportedWorkout: Sendable {
    public let workout: Workout
    /// The samples and route points the session accepted, with the chunks already closed (`laidOut()` makes the
    /// rest), nil once laid out.
    let accepted: AcceptedChanges?
    /// Every chunk, once laid out (`laidOut()`); before, the chunks that follow the accepted ones (a heart-rate
    /// recovery's: `attaching(_:)`).
    package let sampleChunks: [SampleChunk]
    package let routeChunks: [RouteChunk]

    init(
        workout: Workout, accepted: AcceptedChanges?, sampleChunks: [SampleChunk] = [], routeChunks: [RouteChunk] = []
    ) {
        self.workout = workout
        self.accepted = accepted
        self.sampleChunks = sampleChunks
        self.routeChunks = routeChunks
    }

    /// What holding it costs, roughly: its encoded chunks, and a sample or route point not yet laid out at
    /// `AcceptedChanges.bytesPerSample` (it is held decoded).
    public var chunkBytes: Int {
        sampleChunks.reduce(0) { $0 + $1.payload.count } + routeChunks.reduce(0) { $0 + $1.payload.count }
            + (accepted?.heldBytes ?? 0)
    }

    /// This workout with every sample and route point laid out in chunks (the journal's layout, a save's chunk size:
    /// ordinals in the order accepted, then the chunks attached after them).
    package func laidOut() -> ImportedWorkout {
        guard let accepted else { return self }
        let (samples, route) = accepted.chunks()
        return ImportedWorkout(
            workout: workout, accepted: nil, sampleChunks: samples + sampleChunks, routeChunks: route + routeChunks)
    }

    /// This workout with its heart-rate recovery in it, as `WorkoutStore.attachHeartRateRecovery(_:toWorkout:)` stores
    /// one (the one-minute sample, the marked readings of the window, the values or why they are missing in the
    /// metadata), so that `WorkoutStore.saveImported(_:)` saves them with the workout, in its savepoint: a workout
    /// is never saved without its recovery (attached after the save, in a transaction of its own, a failure there
    /// left it so for good).
    public func attaching(_ recovery: HeartRateRecoveryResult) -> ImportedWorkout {
        var workout = workout
        workout.metadata = recovery.replacingRecovery(in: workout.metadata)
        let next = max(accepted?.nextOrdinal ?? 0, (sampleChunks.lazy.map(\.lastOrdinal).max() ?? -1) + 1)
        return ImportedWorkout(
            workout: workout, accepted: accepted,
            sampleChunks: sampleChunks + recovery.storedChunks(firstOrdinal: next), routeChunks: routeChunks)
    }
}

extension HeartRateRecoveryResult {
    /// `metadata` with this recovery's values (or why they are missing) in place of any earlier recovery's.
    func replacingRecovery(in metadata: Metadata) -> Metadata {
        var metadata = metadata
        for key in [
            MetadataKey.heartRateRecoveryOneMinute, MetadataKey.heartRateRecoveryTwoMinutes,
            MetadataKey.heartRateRecoveryOneMinuteUnavailable, MetadataKey.heartRateRecoveryTwoMinutesUnavailable,
        ] {
            metadata[key] = nil
        }
        metadata.merge(workoutMetadata) { _, new in new }
        return metadata
    }

    /// The chunks a workout stores of this recovery, numbered from `firstOrdinal`: the one-minute sample when there
    /// is one and the heart-rate readings of the window, each marked `MetadataKey.heartRateRecoveryReading` (in
    /// chunks of their own: a later attach finds them so).
    func storedChunks(firstOrdinal: Int64) -> [SampleChunk] {
        let readings = self.readings.filter { $0.type == .heartRate }.map { reading in
            var reading = reading
            reading.metadata[MetadataKey.heartRateRecoveryReading] = .bool(true)
            return reading
        }
        let samples = (sample.map { [$0] } ?? []) + readings
        return samples.isEmpty ? [] : Series.chunks(samples, firstOrdinal: firstOrdinal)
    }
}

/// The sink of an `ImportRecording`: keeps the samples and route points the session accepts (laid out in chunks at
/// `flush()`, or by the save: `AcceptedChanges`); every other change is the builder's, and the workout it finishes
/// with holds it.
final class ImportWriter: WorkoutRecordingSink {
    private struct State: Sendable {
        var accepted: AcceptedChanges
        /// Set once the changes were taken or the recording dropped: nothing more is kept.
        var closed = false
    }

    private let state = Mutex(State(accepted: AcceptedChanges()))

    func record(_ change: RecordingChange) {
        switch change {
        case .samples, .route:
            state.withLock { state in
                if !state.closed { state.accepted.append(change) }
            }
        default: return
        }
    }

    func flush() {
        state.withLock { state in state.accepted.layOut() }
    }

    /// Every change kept, after which nothing more is kept.
    func take() -> AcceptedChanges {
        state.withLock { state in
            state.closed = true
            defer { state.accepted = AcceptedChanges() }
            return state.accepted
        }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            state.accepted = AcceptedChanges()
        }
    }
}

/// The samples and route points an import's session accepted, in the order accepted: those laid out so far in the
/// journal's tails (chunks per stream, closed at a save's chunk size) and those not yet (`changes`).
struct AcceptedChanges: Sendable {
    /// What a sample or route point not yet encoded holds, about (the change's copy of a `QuantitySample`, or its
    /// place in a stream's open chunk): `ImportedWorkout.chunkBytes`.
    static let bytesPerSample = 128

    var changes: [RecordingChange] = []
    /// Samples and route points in `changes`.
    var unprepared = 0
    var tails: JournalWriter.Tails

    init() {
        tails = JournalWriter.Tails()
        tails.capacity = Series.capacity
    }

    /// Keeps a change of samples or route points.
    mutating func append(_ change: RecordingChange) {
        changes.append(change)
        switch change {
        case .samples(let samples): unprepared += samples.count
        case .route(let points): unprepared += points.count
        default: break
        }
    }

    /// The ordinal the next sample would take.
    var nextOrdinal: Int64 {
        var next = tails.nextOrdinal
        for case .samples(let samples) in changes { next += Int64(samples.count) }
        return next
    }

    /// Bytes held, about: the closed chunks' and `bytesPerSample` for every sample not encoded yet.
    var heldBytes: Int {
        let open = tails.samples.values.reduce(0) { $0 + $1.count } + tails.route.count
        return tails.pendingClosed.reduce(0) { $0 + $1.payload.count }
            + tails.pendingRouteClosed.reduce(0) { $0 + $1.payload.count } + (open + unprepared) * Self.bytesPerSample
    }

    /// Lays `changes` out in the tails (the journal's layout: ordinals in the order accepted, a chunk per stream closed
    /// at `capacity`); the entries it notes are a journal's, not kept.
    mutating func layOut() {
        guard !changes.isEmpty else { return }
        JournalWriter.prepare(changes, from: 0, tails: &tails)
        changes.removeAll(keepingCapacity: true)
        unprepared = 0
        tails.pendingEntries.removeAll(keepingCapacity: true)
        tails.pendingSamples = 0
    }

    /// Every chunk: closed ones, then each stream's open one.
    func chunks() -> ([SampleChunk], [RouteChunk]) {
        var laid = self
        laid.layOut()
        var samples = laid.tails.pendingClosed
        for tail in laid.tails.samples.values where tail.count > 0 { samples.append(tail.chunk()) }
        var route = laid.tails.pendingRouteClosed
        if !laid.tails.route.isEmpty {
            route.append(Series.routeChunk(laid.tails.route[...], firstOrdinal: laid.tails.routeFirst))
        }
        return (samples, route)
    }
}

extension WorkoutStore {
    /// Starts a session that replays a file into one new workout, without a journal (`ImportRecording`).
    ///
    /// - Parameters:
    ///   - configuration: what the workout is (activity type, location, planned legs).
    ///   - clock: the source of "now" for the session's calls without a date (the replay's virtual clock).
    ///   - options: the builder's tunables (identifiers, hold cap, reorder window …).
    public func beginImport(
        configuration: WorkoutConfiguration, clock: any WorkoutClock, options: BuilderOptions = BuilderOptions()
    ) throws(StoreError) -> ImportRecording {
        let writer = ImportWriter()
        let session: WorkoutSession
        do {
            session = try WorkoutSession(configuration: configuration, clock: clock, options: options, sink: writer)
        } catch {
            throw .engine(error)
        }
        return ImportRecording(session: session, store: self, writer: writer)
    }

    /// Tells the store that an import of many workouts begins: until the returned load is finished, the store may
    /// keep its query indexes up to date once at the end instead of workout by workout (SQLite: the statistics' four
    /// value indexes are dropped once the imports under way have saved `threshold` workouts and those are at least a
    /// fifth of the store's, asked again as the import doubles, and made again when the last load under way in this
    /// store instance finishes: seconds on a large store, where keeping them cost about 25 s on a 2 GB Apple Health
    /// export; PostgreSQL does nothing). What is saved and what queries answer do not change; queries by activity
    /// statistics are slower meanwhile, in this process and others. An import cut short leaves the indexes to be
    /// made when the store is next opened (by a process other than a running import's).
    public func beginBulkImport() -> BulkImport { beginBulkImport(threshold: BulkImport.defaultThreshold) }

    /// `beginBulkImport()` with the number of saved workouts after which the store may drop its indexes.
    package func beginBulkImport(threshold: Int) -> BulkImport {
        backend.beginBulkLoad(threshold: threshold)
        return BulkImport(backend: backend)
    }

    /// Saves finished workouts of an import (`ImportRecording.complete(completing:)`) in one transaction, each
    /// workout in a savepoint of its own: a workout that cannot be saved (its id taken: `.workoutExists`) is left
    /// out whole and the others are kept. Returns each workout's error, nil for a saved one, in order.
    ///
    /// - Throws: when the transaction as a whole fails (a locked or full file): nothing of it was saved.
    public func saveImported(_ workouts: [ImportedWorkout]) throws(StoreError) -> [StoreError?] {
        guard !workouts.isEmpty else { return [] }
        let errors = try backend.saveEach(workouts.map { $0.laidOut() })
        let saved = zip(workouts, errors).compactMap { $1 == nil ? $0.workout.id : nil }
        if !saved.isEmpty { broadcaster.publish(.added(saved)) }
        return errors
    }
}

/// An import of many workouts in progress (`WorkoutStore.beginBulkImport()`); `finish()` ends it. Dropped unfinished,
/// it finishes itself on the thread that drops it (which may then wait seconds for the indexes) and forgets any error
/// (the store makes its indexes again when the next import ends or the store is next opened).
public final class BulkImport: Sendable {
    /// Workouts an import saves before the store may drop its indexes: below this, keeping them costs less than
    /// making them again.
    package static let defaultThreshold = 1_024
    let backend: any StoreBackend
    let finished = Mutex(false)

    init(backend: any StoreBackend) { self.backend = backend }

    /// Ends the import: the store makes again the indexes it dropped, once the last of the imports under way in this
    /// store instance ends (it blocks for that: seconds on a large store), whatever the caller's cancellation.
    /// Calling it again does nothing.
    ///
    /// - Throws: when the indexes cannot be made (a locked or full file): every workout saved is kept, and the store
    ///   makes the indexes when the next import ends or it is next opened.
    public func finish() throws(StoreError) {
        guard !finished.withLock({ finished in defer { finished = true }; return finished }) else { return }
        try backend.endBulkLoad()
    }

    deinit { try? finish() }
}
