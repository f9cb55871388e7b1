import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

/// What the journal needs to rebuild a session's builder exactly.
struct JournalOptions: Codable, Sendable {
    var holdCap: TimeInterval
    var reorderWindow: TimeInterval
    var invalidInput: InvalidInputPolicy
    var explicitTypes: [QuantityType]?
    var seed: UInt64?
    /// The detectors' settings (they change the builder's reorder window and collection masks).
    /// Absent in journals written before they existed: detection off, as it was then.
    var automaticTransitions: TransitionDetectionOptions?
    var autoPause: AutoPauseSettings?
    var heartRateRecovery: HeartRateRecoveryOptions?
    /// Absent in journals written before it existed: readings held.
    var interpolation: ReadingInterpolation?
    var averagesExcludeRests: Bool?
    var openWaterSWOLF: OpenWaterSWOLF?
    /// A multisport's leg sequence when not its configuration's plan (absent: the configuration's).
    var legs: LegSequence?

    init(_ options: BuilderOptions) {
        holdCap = options.holdCap
        reorderWindow = options.reorderWindow
        invalidInput = options.invalidInput
        explicitTypes = options.dataSource.explicitTypes.map { $0.sorted { $0.rawValue < $1.rawValue } }
        seed = options.identifiers.seed
        automaticTransitions = options.automaticTransitions
        autoPause = options.autoPause
        heartRateRecovery = options.heartRateRecovery
        interpolation = options.interpolation
        averagesExcludeRests = options.averagesExcludeRests
        openWaterSWOLF = options.openWaterSWOLF
        legs = options.legs
    }

    func builderOptions(workoutID: UUID) -> BuilderOptions {
        BuilderOptions(
            holdCap: holdCap, reorderWindow: reorderWindow, invalidInput: invalidInput,
            dataSource: WorkoutDataSource(explicitTypes: explicitTypes.map(Set.init)),
            identifiers: seed.map { IdentifierSource.seeded($0) } ?? .random, workoutID: workoutID,
            automaticTransitions: automaticTransitions ?? TransitionDetectionOptions(enabled: false),
            autoPause: autoPause, heartRateRecovery: heartRateRecovery ?? HeartRateRecoveryOptions(),
            interpolation: interpolation ?? .hold, averagesExcludeRests: averagesExcludeRests ?? false,
            openWaterSWOLF: openWaterSWOLF, legs: legs)
    }
}

/// The journal sink: buffers accepted changes in memory and commits them in groups.
///
/// `record` only appends under a lock (it runs while the builder holds its own lock); `commit`
/// writes the buffer in one transaction. A background thread commits at most `interval` apart.
///
/// Samples go to chunks of the recording's workout, numbered by ordinal in the order accepted. Each
/// stream (type and source) has an open tail chunk: a commit rewrites only the tails it added to,
/// and a tail that reaches `Series.journalTailCapacity` is closed and not written again until the
/// recording finishes, when the backend merges the small chunks into full ones (`ChunkCompaction`), in
/// the finishing transaction. So the memory a recording holds and a commit's work stay bounded however
/// long it records. The change list
/// keeps, for a batch of samples or route points, only its count: recovery takes the next samples
/// by ordinal.
final class JournalWriter: WorkoutRecordingSink {
    /// The chunks being filled (each stream's samples since its last closed chunk) and what a failed
    /// commit left to write again. Touched only under `commitLock`, mutated in place.
    struct Tails: Sendable {
        /// Samples (route points) at which a stream's open chunk closes (`JournalChunking`).
        var capacity = Series.journalTailCapacity
        var nextOrdinal: Int64 = 0
        var nextRouteOrdinal: Int64 = 0
        var samples: [Series.StreamKey: Series.StreamBuilder] = [:]
        var route: [RoutePoint] = []
        var routeFirst: Int64 = 0
        /// Prepared but not yet committed (not yet due, or the last commit failed): written with the next commit.
        /// A change other than samples and route points is kept as it is and made JSON only when a commit
        /// writes its entry: a closing commit writes none (an import's only commit, at its finish, encodes
        /// nothing).
        var pendingEntries: [PendingEntry] = []
        var pendingClosed: [SampleChunk] = []
        var pendingRouteClosed: [RouteChunk] = []
        var pendingRouteTouched = false
        var pendingSamples = 0
        /// The changes of the prepared entries, for the commit observer once they are durable.
        var pendingChanges: [RecordingChange] = []
    }

    /// A journal entry before it is written: a change's JSON is made only when a commit writes it.
    struct PendingEntry: Sendable {
        var seq: Int64
        var kind: JournalEntry.Kind
        var count = 0
        var change: RecordingChange?

        /// The entry as the backend stores it.
        var entry: JournalEntry {
            JournalEntry(
                seq: seq, kind: kind, count: count,
                payload: change.map { (try? JSON.encode($0)) ?? "null" })
        }
    }

    private struct State: Sendable {
        var buffer: [RecordingChange] = []
        /// The seq of the next change committed.
        var nextSeq: Int64
        var replaying: Bool
        var committedSamples: Int
        var lastError: StoreError?
        /// Set once the journal was moved into a workout or discarded: nothing more is written.
        var closed = false
    }

    let store: WorkoutStore
    let session: UUID
    private let state: Mutex<State>
    /// Serialises commits (the background thread and explicit flushes) and guards the tails.
    private let commitLock: Mutex<Tails>
    /// Called after each commit with the total number of samples committed so far.
    let onCommit: (@Sendable (Int) -> Void)?
    /// Called after each commit with the changes it made durable (see `CommitObserver`).
    let observer: CommitObserver?

    init(
        store: WorkoutStore, session: UUID, nextSeq: Int64, committedSamples: Int, tails: Tails,
        replaying: Bool, onCommit: (@Sendable (Int) -> Void)?, observer: CommitObserver? = nil
    ) {
        self.store = store
        self.session = session
        self.onCommit = onCommit
        self.observer = observer
        state = Mutex(State(nextSeq: nextSeq, replaying: replaying, committedSamples: committedSamples))
        commitLock = Mutex(tails)
    }

    func record(_ change: RecordingChange) {
        switch change {
        case .finished, .discarded: return  // the store's finish/discard handle these atomically
        default: break
        }
        state.withLock { state in
            if !state.replaying, !state.closed { state.buffer.append(change) }
        }
    }

    func endReplay() { state.withLock { $0.replaying = false } }

    var lastError: StoreError? { state.withLock { $0.lastError } }

    /// Commits everything buffered so far in one transaction.
    func commit() throws(StoreError) {
        let total = try commitLock.withLock { (tails: inout Tails) throws(StoreError) -> Int? in
            try commitLocked(&tails, closing: nil)
        }
        // Outside the lock, so that the callback may itself commit.
        if let total { onCommit?(total) }
    }

    /// Commits what is buffered with `closing` in the same transaction, after which the journal
    /// is closed (finish, discard). On failure nothing changed and the call may be repeated.
    func commit(closing: JournalClosing) throws(StoreError) {
        try commitLock.withLock { (tails: inout Tails) throws(StoreError) in
            _ = try commitLocked(&tails, closing: closing)
        }
    }

    /// Returns the total of committed samples when something was committed. The buffered changes
    /// go into the tails at once; a commit that fails stays pending and is written with the next.
    private func commitLocked(_ tails: inout Tails, closing: JournalClosing?) throws(StoreError) -> Int? {
        let (changes, seq, closed) = state.withLock { state in
            defer { state.buffer.removeAll(keepingCapacity: true) }
            return (state.buffer, state.nextSeq, state.closed)
        }
        guard !closed else { return nil }
        guard !changes.isEmpty || !tails.pendingEntries.isEmpty || closing != nil else { return nil }
        // The entries of failed commits, one of which may have been kept after all (its answer lost).
        let failedEntries = Int64(tails.pendingEntries.count)
        Self.prepare(changes, from: seq + failedEntries, tails: &tails)
        if observer != nil { tails.pendingChanges += changes }
        var sampleChunks = tails.pendingClosed
        var written: [Series.StreamKey] = []
        for (key, tail) in tails.samples where tail.touched && tail.count > 0 {
            sampleChunks.append(tail.chunk())
            written.append(key)
        }
        var routeChunks = tails.pendingRouteClosed
        if tails.pendingRouteTouched, !tails.route.isEmpty {
            routeChunks.append(Series.routeChunk(tails.route[...], firstOrdinal: tails.routeFirst))
        }
        // A closing commit deletes the journal's entries in its own transaction: its pending ones are not written
        // (an import finishes with thousands of them in its only commit). A discard deletes the chunks too.
        // A finish writes none of its entries, so no entry shows where it continues the journal: it says so itself
        // (`finishingJournalEnd`), and the backend refuses it when a commit reported done is missing.
        var discarding = false
        var finishingJournalEnd: ClosedRange<Int64>?
        switch closing {
        case .discard: discarding = true
        case .finish: finishingJournalEnd = seq...(seq + failedEntries)
        case nil: break
        }
        var commit = JournalCommit(
            session: session, entries: closing == nil ? tails.pendingEntries.map(\.entry) : [],
            sampleChunks: discarding ? [] : sampleChunks, routeChunks: discarding ? [] : routeChunks, closing: closing,
            alreadyCompact: tails.capacity == Series.capacity, finishingJournalEnd: finishingJournalEnd)
        do throws(StoreError) {
            do throws(StoreError) {
                try store.backend.commitJournal(commit)
            } catch {
                // A failed commit may have been kept after all (its answer lost): the stored journal then goes on
                // past `seq`, and this commit, starting with that one's entries again, is out of step. The entries
                // the journal holds are no longer pending; the rest are written.
                guard case .journalOutOfStep = error, closing == nil, failedEntries > 0,
                    try keptFailedEntries(&tails, from: seq, upTo: failedEntries)
                else { throw error }
                commit.entries = tails.pendingEntries.map(\.entry)
                try store.backend.commitJournal(commit)
            }
        } catch {
            state.withLock { $0.lastError = error }
            throw error
        }
        // Only now: a tail whose commit failed stays touched and is written with the next commit.
        for key in written { tails.samples[key]?.touched = false }
        let entries = Int64(tails.pendingEntries.count)
        let samples = tails.pendingSamples
        tails.pendingEntries.removeAll(keepingCapacity: true)
        tails.pendingClosed.removeAll()
        tails.pendingRouteClosed.removeAll()
        tails.pendingRouteTouched = false
        tails.pendingSamples = 0
        if let observer, !tails.pendingChanges.isEmpty {
            // Under the commit lock: the observer sees commits in the order they were made.
            let durable = tails.pendingChanges
            tails.pendingChanges.removeAll(keepingCapacity: true)
            observer(durable)
        }
        return state.withLock { state in
            state.nextSeq += entries
            state.committedSamples += samples
            state.lastError = nil
            if closing != nil {
                state.closed = true
                state.buffer.removeAll()
            }
            return state.committedSamples
        }
    }

    /// After a commit refused as out of step: whether the stored journal ends within the entries of failed commits
    /// (a commit answered as failed that was kept, its answer lost). Its entries from `seq` on are read back (not the
    /// whole journal: a recording's grows by a commit a second); when it goes on past `seq`
    /// (the writer's committed changes) by at most `failed` changes, all of them the entries this writer sent (seq,
    /// kind, count and payload alike), those entries are kept ones, counted as committed and no longer pending
    /// (their chunks are written again by the retry: a chunk replaces the one with its first ordinal), and true is
    /// returned. Otherwise (a commit reported done was not kept, the journal is
    /// gone) false, and nothing changed. Under the commit lock.
    private func keptFailedEntries(
        _ tails: inout Tails, from seq: Int64, upTo failed: Int64
    ) throws(StoreError) -> Bool {
        // The stored entries from the writer's number on: the journal before it is the writer's committed changes.
        guard let stored = try store.backend.journalEntries(id: session, from: seq), let last = stored.last?.seq,
            case let (next, overflow) = last.addingReportingOverflow(1), !overflow
        else { return false }
        guard next > seq, next - seq <= failed, next - seq <= Int64(tails.pendingEntries.count) else { return false }
        let kept = Int(next - seq)
        // Kept entries are the ones this writer sent, change for change; another writer's are not.
        guard stored.elementsEqual(tails.pendingEntries[..<kept].lazy.map(\.entry)) else { return false }
        let samples = tails.pendingEntries[..<kept].reduce(0) { $0 + ($1.kind == .samples ? $1.count : 0) }
        tails.pendingEntries.removeFirst(kept)
        tails.pendingSamples -= samples
        state.withLock { state in
            state.nextSeq += Int64(kept)
            state.committedSamples += samples
        }
        return true
    }

    /// Adds `changes` (numbered from `seq`) to the tails and to what is pending: their entries, the
    /// chunks they closed (written once), the streams whose open tail they extended.
    static func prepare(_ changes: [RecordingChange], from seq: Int64, tails: inout Tails) {
        // The streams used last, with their place in `tails.samples`: a sample of one of them is appended without
        // hashing its key (four strings of its source). Kept across the changes of this call (an import's
        // thousands of one-record changes use the same few streams); an insertion or removal moves places, and
        // the list is emptied then.
        var recent: [(key: Series.StreamKey, index: [Series.StreamKey: Series.StreamBuilder].Index)] = []
        for (offset, change) in changes.enumerated() {
            let number = seq + Int64(offset)
            switch change {
            case .samples(let batch):
                for sample in batch {
                    let ordinal = tails.nextOrdinal
                    tails.nextOrdinal += 1
                    let index: [Series.StreamKey: Series.StreamBuilder].Index
                    // Compared field by field: a known stream's sample makes no key (no copy of its source's strings).
                    if let known = recent.firstIndex(where: { $0.key.type == sample.type && $0.key.source == sample.source }) {
                        index = recent[known].index
                    } else {
                        let key = Series.StreamKey(type: sample.type, source: sample.source)
                        if let found = tails.samples.index(forKey: key) {
                            index = found
                        } else {
                            tails.samples[key] = Series.StreamBuilder(key)
                            recent.removeAll()
                            guard let inserted = tails.samples.index(forKey: key) else { continue }
                            index = inserted
                        }
                        if recent.count == 8 { recent.removeFirst() }
                        recent.append((key, index))
                    }
                    // Mutated in place; the builder notes it was touched.
                    let count = tails.samples.values[index].append(ordinal, sample)
                    if count >= tails.capacity {
                        tails.pendingClosed.append(tails.samples.remove(at: index).value.chunk())
                        recent.removeAll()
                    }
                }
                tails.pendingEntries.append(PendingEntry(seq: number, kind: .samples, count: batch.count))
                tails.pendingSamples += batch.count
            case .route(let points):
                for point in points {
                    if tails.route.isEmpty { tails.routeFirst = tails.nextRouteOrdinal }
                    tails.route.append(point)
                    tails.nextRouteOrdinal += 1
                    tails.pendingRouteTouched = true
                    if tails.route.count >= tails.capacity {
                        tails.pendingRouteClosed.append(Series.routeChunk(tails.route[...], firstOrdinal: tails.routeFirst))
                        tails.route.removeAll(keepingCapacity: true)
                    }
                }
                tails.pendingEntries.append(PendingEntry(seq: number, kind: .route, count: points.count))
            default:
                tails.pendingEntries.append(PendingEntry(seq: number, kind: .change, change: change))
            }
        }
    }
}

/// Told, after each journal commit, which changes it made durable: every accepted change exactly once, in the
/// order the session accepted them, only after the transaction holding it succeeded (a failed commit's changes
/// come with the commit that writes them). The last call comes with `finish()`'s commit.
///
/// Called on the committing thread while the journal's commit lock is held, so that calls arrive in commit
/// order: do little (hand the changes to a queue) and never commit, finish or discard the same recording
/// from it, which would deadlock. A live upload to a server is built on this (WorkoutUpload).
public typealias CommitObserver = @Sendable ([RecordingChange]) -> Void

/// A background thread that commits a journal at a fixed interval until stopped.
final class PeriodicCommitter: Sendable {
    private let stopped = Mutex(false)
    private let condition = NSCondition()

    init(interval: TimeInterval, writer: JournalWriter) {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                if !isStopped { _ = condition.wait(until: Date().addingTimeInterval(interval)) }
                condition.unlock()
                if isStopped { return }
                try? writer.commit()  // a failure stays in writer.lastError and is retried next time
            }
        }
        thread.name = "workout-journal"
        thread.start()
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    func stop() {
        stopped.withLock { $0 = true }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}

/// A session recording into the store's journal: crash-safe, finished atomically into a workout.
///
/// Every accepted change is committed within `commitInterval` (1 s by default); after a crash,
/// `WorkoutStore.recoverActiveSession` rebuilds the session and builder from the journal and
/// recording goes on. `finish()` saves the workout and removes the journal in one transaction.
public final class JournaledRecording: Sendable {
    public let session: WorkoutSession
    public let store: WorkoutStore
    public var id: UUID { writer.session }
    let writer: JournalWriter
    private let committer: PeriodicCommitter?

    init(session: WorkoutSession, store: WorkoutStore, writer: JournalWriter, commitInterval: TimeInterval) {
        self.session = session
        self.store = store
        self.writer = writer
        committer = commitInterval > 0 ? PeriodicCommitter(interval: commitInterval, writer: writer) : nil
    }

    public var builder: LiveWorkoutBuilder { session.builder }

    deinit {
        committer?.stop()
    }

    /// The last background commit's error, if the latest attempt failed (it is retried).
    public var journalError: StoreError? { writer.lastError }

    /// Commits everything recorded so far now.
    public func commit() throws(StoreError) { try writer.commit() }

    /// The samples committed to the journal so far, in the order they were accepted.
    public func committedSamples() throws(StoreError) -> [QuantitySample] {
        guard let journal = try store.backend.loadJournal(id: writer.session) else { return [] }
        return try WorkoutStore.changes(of: journal).0.flatMap { change -> [QuantitySample] in
            if case .samples(let samples) = change { return samples }
            return []
        }
    }

    /// Commits what is buffered and stops background commits, without finishing: the journal stays
    /// and `WorkoutStore.recoverActiveSession` picks the session up later.
    public func close() throws(StoreError) {
        committer?.stop()
        try writer.commit()
    }

    /// Saves the workout, moving the journal's samples and route into it and deleting the journal,
    /// in one transaction; then finishes the builder. The session must have stopped or ended.
    ///
    /// If saving fails (a locked file, a full disk), nothing changed: the journal keeps recording
    /// and `finish()` may be called again.
    ///
    /// - Parameter completing: an import's last word on the saved workout before it is written (an
    ///   Apple Health import fills the statistics the export states for types without samples).
    @discardableResult
    public func finish(completing: ((inout Workout) -> Void)? = nil) throws(StoreError) -> Workout {
        guard session.builder.state == .ended else { throw .sessionNotEnded(state: session.state.rawValue) }
        // What finishWorkout() will return: the builder's state at its end, every sample folded in.
        var workout = session.builder.snapshot()
        completing?(&workout)
        // The journal's tail, the completed workout and the journal's removal: one transaction,
        // taken under the commit lock so that no background commit can land after it. The samples and
        // route are already in the workout's chunks: nothing is copied.
        try writer.commit(closing: .finish(workout))
        committer?.stop()
        do {
            _ = try session.builder.finishWorkout()
        } catch {
            throw .engine(error)
        }
        store.broadcaster.publish(.added([workout.id]))
        return workout
    }

    /// Discards the recording and deletes its journal.
    public func discard() throws(StoreError) {
        committer?.stop()
        if session.builder.state != .discarded, session.builder.state != .finished {
            do { try session.builder.discardWorkout() } catch { throw .engine(error) }
        }
        try writer.commit(closing: .discard)
    }
}

/// How a journaled recording lays out its samples and route while it records (docs/storage-chunks.md).
public enum JournalChunking: Sendable, Equatable {
    /// For recording as it happens: a stream's open chunk closes at 32 samples, so that a commit rewrites
    /// little however long the recording; finishing merges the small chunks into full ones.
    case live
    /// For replaying a file faster than real time (an import) that commits rarely, best once at its finish:
    /// chunks close at 4,096 samples, as a save writes them, so finishing has nothing to merge. Each commit
    /// rewrites every open chunk (up to 4,096 samples per stream): not for frequent commits. A session recovered
    /// after a crash goes on as `.live`.
    case whole
}

/// A session found in the journal.
public struct JournalSessionInfo: Sendable, Hashable {
    public var id: UUID
    public var configuration: WorkoutConfiguration
    public var created: Date
}

extension WorkoutStore {
    /// Starts a session that records into the journal.
    ///
    /// - Parameters:
    ///   - configuration: what the workout is (activity type, location, planned legs).
    ///   - clock: the source of "now" for the session's calls without a date.
    ///   - options: the builder's tunables (hold cap, reorder window, invalid-input policy …).
    ///   - commitInterval: the longest time between group commits (seconds; 0 = only explicit commits).
    ///   - onCommit: called after each commit with the number of samples committed so far.
    ///   - observer: called after each commit with the changes it made durable (`CommitObserver`).
    ///   - chunking: how the journal lays out samples while recording (`.live` unless replaying a file).
    public func beginRecording(
        configuration: WorkoutConfiguration, clock: any WorkoutClock = SystemClock(),
        options: BuilderOptions = BuilderOptions(), commitInterval: TimeInterval = 1,
        onCommit: (@Sendable (Int) -> Void)? = nil, observer: CommitObserver? = nil, chunking: JournalChunking = .live
    ) throws(StoreError) -> JournaledRecording {
        let writerBox = WriterBox()
        let session: WorkoutSession
        do {
            session = try WorkoutSession(configuration: configuration, clock: clock, options: options, sink: writerBox)
        } catch {
            throw .engine(error)
        }
        let id = session.builder.workoutID
        let now = clock.now()
        let record: JournalSessionRecord
        do {
            record = JournalSessionRecord(
                id: id, configuration: JSON.encode(configuration), options: try JSON.encode(JournalOptions(options)),
                created: now)
        } catch {
            throw .database(path: path, detail: "cannot encode the session's settings: \(error)")
        }
        try backend.beginJournal(record, configuration: configuration, start: now)
        var tails = JournalWriter.Tails()
        if chunking == .whole { tails.capacity = Series.capacity }
        let writer = JournalWriter(
            store: self, session: id, nextSeq: 0, committedSamples: 0, tails: tails,
            replaying: false, onCommit: onCommit, observer: observer)
        writerBox.set(writer)
        return JournaledRecording(session: session, store: self, writer: writer, commitInterval: commitInterval)
    }

    /// Sessions with a journal (recording, or interrupted by a crash), oldest first.
    public func journaledSessions() throws(StoreError) -> [JournalSessionInfo] {
        try backend.journalSessions().map { (record) throws(StoreError) in
            JournalSessionInfo(
                id: record.id, configuration: try Self.decodeSetting(WorkoutConfiguration.self, record.configuration, record.id),
                created: record.created)
        }
    }

    static func decodeSetting<T: Decodable>(_ type: T.Type, _ text: String, _ session: UUID) throws(StoreError) -> T {
        do {
            return try JSON.decode(type, text)
        } catch {
            throw .corruptChunk(workout: session, detail: "the journal's \(T.self) does not read: \(error)")
        }
    }

    /// Rebuilds the session and builder of a journaled session (the newest when `id` is nil) after a
    /// crash; recording goes on from there. Nil when there is no journaled session.
    ///
    /// The rebuilt session has every change committed before the crash, in order, and nothing else.
    public func recoverActiveSession(
        id: UUID? = nil, clock: any WorkoutClock = SystemClock(), commitInterval: TimeInterval = 1,
        onCommit: (@Sendable (Int) -> Void)? = nil
    ) throws(StoreError) -> JournaledRecording? {
        guard let journal = try backend.loadJournal(id: id) else {
            if let id { throw .sessionNotFound(id) }
            return nil
        }
        let sessionID = journal.session.id
        let configuration = try Self.decodeSetting(WorkoutConfiguration.self, journal.session.configuration, sessionID)
        let options = try Self.decodeSetting(JournalOptions.self, journal.session.options, sessionID)
        let (changes, tails, sampleCount) = try Self.changes(of: journal)
        let writer = JournalWriter(
            store: self, session: sessionID, nextSeq: Int64(journal.entries.count), committedSamples: sampleCount,
            tails: tails, replaying: true, onCommit: onCommit)
        let session: WorkoutSession
        do {
            session = try WorkoutSession(
                configuration: configuration, clock: clock, options: options.builderOptions(workoutID: sessionID),
                sink: writer)
            for change in changes { try session.builder.apply(change) }
        } catch {
            throw .engine(error)
        }
        writer.endReplay()
        return JournaledRecording(session: session, store: self, writer: writer, commitInterval: commitInterval)
    }

    /// Every committed change of a journal, in order, with its samples and route points taken from
    /// the recording's chunks by ordinal; the writer's state to go on from; how many samples.
    static func changes(of journal: LoadedJournal) throws(StoreError) -> ([RecordingChange], JournalWriter.Tails, Int) {
        let id = journal.session.id
        var samples: [(Int64, QuantitySample)] = []
        samples.reserveCapacity(journal.sampleChunks.reduce(0) { $0 + $1.count })
        for chunk in journal.sampleChunks { samples += try Series.decode(chunk, workout: id) }
        samples.sort { $0.0 < $1.0 }
        var route: [(Int64, RoutePoint)] = []
        for chunk in journal.routeChunks { route += try Series.decode(chunk, workout: id) }
        route.sort { $0.0 < $1.0 }
        var changes: [RecordingChange] = []
        changes.reserveCapacity(journal.entries.count)
        var sampleCursor = 0
        var routeCursor = 0
        for (index, entry) in journal.entries.enumerated() {
            // Changes are numbered 0, 1, 2 … (recovery goes on from their count): a gap or a changed number
            // would reorder them or collide with the next commit's.
            guard entry.seq == Int64(index) else {
                throw .corruptChunk(
                    workout: id, detail: "journal change \(index) is numbered \(entry.seq): the journal was changed")
            }
            switch entry.kind {
            case .samples:
                // A change naming samples no chunk holds: refused rather than recovered short.
                guard entry.count >= 0, entry.count <= samples.count - sampleCursor else {
                    throw .corruptChunk(
                        workout: id,
                        detail: "journal change \(entry.seq) names \(entry.count) samples; the recording's chunks "
                            + "hold \(samples.count - sampleCursor) more")
                }
                let end = sampleCursor + entry.count
                changes.append(.samples(samples[sampleCursor..<end].map(\.1)))
                sampleCursor = end
            case .route:
                guard entry.count >= 0, entry.count <= route.count - routeCursor else {
                    throw .corruptChunk(
                        workout: id,
                        detail: "journal change \(entry.seq) names \(entry.count) route points; the recording's "
                            + "chunks hold \(route.count - routeCursor) more")
                }
                let end = routeCursor + entry.count
                changes.append(.route(route[routeCursor..<end].map(\.1)))
                routeCursor = end
            case .change:
                do {
                    changes.append(try JSON.decode(RecordingChange.self, entry.payload ?? ""))
                } catch {
                    throw .corruptChunk(workout: id, detail: "journal change \(entry.seq) does not read: \(error)")
                }
            }
        }
        // Every sample and route point of the chunks is named by a change: chunks holding more were written by a
        // commit whose changes are missing (the journal was changed), and replaying without them would drop those
        // samples silently (and number the next ones past them).
        guard sampleCursor == samples.count, routeCursor == route.count else {
            throw .corruptChunk(
                workout: id,
                detail: "the recording's chunks hold \(samples.count - sampleCursor) samples and \(route.count - routeCursor) "
                    + "route points that no journal change names: the journal was changed")
        }
        // Later samples start new chunks (the partly filled ones stay as they are).
        var tails = JournalWriter.Tails()
        let lastSample = samples.last?.0 ?? -1
        let lastPoint = route.last?.0 ?? -1
        guard lastSample < Int64.max, lastPoint < Int64.max else {
            throw .corruptChunk(workout: id, detail: "a chunk's ordinals leave no room for the next sample")
        }
        tails.nextOrdinal = lastSample + 1
        tails.nextRouteOrdinal = lastPoint + 1
        return (changes, tails, samples.count)
    }
}

/// Lets the session be created (it needs its sink) before the writer (which needs the session's id).
final class WriterBox: WorkoutRecordingSink {
    private let writer = Mutex<JournalWriter?>(nil)
    func set(_ writer: JournalWriter) { self.writer.withLock { $0 = writer } }
    func record(_ change: RecordingChange) { writer.withLock { $0 }?.record(change) }
}
