import Foundation
import GRDB
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
    }

    func builderOptions(workoutID: UUID) -> BuilderOptions {
        BuilderOptions(
            holdCap: holdCap, reorderWindow: reorderWindow, invalidInput: invalidInput,
            dataSource: WorkoutDataSource(explicitTypes: explicitTypes.map(Set.init)),
            identifiers: seed.map { IdentifierSource.seeded($0) } ?? .random, workoutID: workoutID,
            automaticTransitions: automaticTransitions ?? TransitionDetectionOptions(enabled: false),
            autoPause: autoPause, heartRateRecovery: heartRateRecovery ?? HeartRateRecoveryOptions(),
            interpolation: interpolation ?? .hold, averagesExcludeRests: averagesExcludeRests ?? false,
            openWaterSWOLF: openWaterSWOLF)
    }
}

/// The journal sink: buffers accepted changes in memory and commits them in groups.
///
/// `record` only appends under a lock (it runs while the builder holds its own lock); `commit`
/// writes the buffer in one transaction. A background thread commits at most `interval` apart.
final class JournalWriter: WorkoutRecordingSink {
    private struct State: Sendable {
        var buffer: [RecordingChange] = []
        var nextSeq: Int64
        var replaying: Bool
        var committedSamples: Int
        var lastError: StoreError?
        /// Set once the journal was moved into a workout or discarded: nothing more is written.
        var closed = false
    }

    let store: WorkoutStore
    let session: UUID
    /// The workout row the session records into (samples and route go there directly).
    let workoutRow: Int64
    private let state: Mutex<State>
    /// Serialises commits (the background thread and explicit flushes).
    private let commitLock = Mutex(())
    /// Called after each commit with the total number of samples committed so far.
    let onCommit: (@Sendable (Int) -> Void)?

    init(
        store: WorkoutStore, session: UUID, workoutRow: Int64, nextSeq: Int64, committedSamples: Int,
        replaying: Bool, onCommit: (@Sendable (Int) -> Void)?
    ) {
        self.store = store
        self.session = session
        self.workoutRow = workoutRow
        self.onCommit = onCommit
        state = Mutex(State(nextSeq: nextSeq, replaying: replaying, committedSamples: committedSamples))
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
        let total = try commitLock.withLock { (_: inout Void) throws(StoreError) -> Int? in
            try commitLocked()
        }
        // Outside the lock, so that the callback may itself commit.
        if let total { onCommit?(total) }
    }

    /// Commits what is buffered and runs `closing` in the same transaction, after which the journal
    /// is closed (finish, discard). On failure nothing changed and the call may be repeated.
    func commit(closing: @escaping (Database) throws -> Void) throws(StoreError) {
        try commitLock.withLock { (_: inout Void) throws(StoreError) in
            _ = try commitLocked(closing: closing)
        }
    }

    /// Returns the total of committed samples when something was committed.
    private func commitLocked(closing: ((Database) throws -> Void)? = nil) throws(StoreError) -> Int? {
        let (changes, seq, closed) = state.withLock { state in
            defer { state.buffer.removeAll(keepingCapacity: true) }
            return (state.buffer, state.nextSeq, state.closed)
        }
        guard !closed else { return nil }
        guard !changes.isEmpty || closing != nil else { return nil }
        let written: (Int64, Int)
        do {
            written = try store.write { db in
                let written = try self.write(changes, from: seq, db)
                try closing?(db)
                return written
            }
        } catch {
            // Nothing was written: put the changes back in front, in order, for the next commit.
            state.withLock { state in
                state.buffer.insert(contentsOf: changes, at: 0)
                state.lastError = error
            }
            throw error
        }
        return state.withLock { state in
            state.nextSeq = written.0
            state.committedSamples += written.1
            state.lastError = nil
            if closing != nil {
                state.closed = true
                state.buffer.removeAll()
            }
            return state.committedSamples
        }
    }

    /// Writes `changes` numbered from `seq`; returns the next seq and how many samples were written.
    private func write(_ changes: [RecordingChange], from seq: Int64, _ db: Database) throws -> (Int64, Int) {
        var seq = seq
        var samples = 0
        var inserter = try SampleInserter(db)
        let statement = try db.cachedStatement(
            sql:
                "INSERT INTO journal_change(session, seq, kind, payload, first_row, row_count) VALUES (?, ?, ?, ?, ?, ?)"
        )
        let id = session.uuidString
        for change in changes {
            switch change {
            case .samples(let batch):
                // Written once, into the workout's own rows; the change names their row ids.
                var first: Int64?
                for sample in batch {
                    let row = try inserter.insert(sample, workout: workoutRow)
                    if first == nil { first = row }
                }
                try statement.execute(arguments: [id, seq, "samples", nil as String?, first, batch.count])
                samples += batch.count
            case .route(let points):
                try store.insertRoute(db, workout: workoutRow, points: points)
                let first = points.isEmpty ? nil : db.lastInsertedRowID - Int64(points.count) + 1
                try statement.execute(arguments: [id, seq, "route", nil as String?, first, points.count])
            default:
                try statement.execute(arguments: [
                    id, seq, "change", try JSON.encode(change), nil as Int64?, nil as Int?,
                ])
            }
            seq += 1
        }
        return (seq, samples)
    }

}

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
        let id = writer.session.uuidString
        let row = writer.workoutRow
        return try store.read { db in
            try WorkoutStore.loadJournal(db, session: id, workoutRow: row).0.flatMap { change -> [QuantitySample] in
                if case .samples(let samples) = change { return samples }
                return []
            }
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
    @discardableResult
    public func finish() throws(StoreError) -> Workout {
        guard session.builder.state == .ended else { throw .sessionNotEnded(state: session.state.rawValue) }
        // What finishWorkout() will return: the builder's state at its end, every sample folded in.
        let workout = session.builder.snapshot()
        let id = writer.session.uuidString
        let row = writer.workoutRow
        let store = self.store
        // The journal's tail, the completed workout row and the journal's removal: one transaction,
        // taken under the commit lock so that no background commit can land after it. The samples and
        // route are already in the workout's rows: nothing is copied.
        try writer.commit(closing: { db in
            _ = try store.insertWorkout(db, workout, recordingRow: row)
            try WorkoutStore.deleteJournal(db, id: id)
        })
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
        let id = writer.session.uuidString
        let row = writer.workoutRow
        try writer.commit(closing: { db in
            try db.execute(sql: "DELETE FROM sample WHERE workout_id = ?", arguments: [row])
            try db.execute(sql: "DELETE FROM route_point WHERE workout_id = ?", arguments: [row])
            try db.execute(sql: "DELETE FROM workout WHERE id = ? AND recording = 1", arguments: [row])
            try WorkoutStore.deleteJournal(db, id: id)
        })
    }
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
    ///   - commitInterval: the longest time between group commits (seconds; 0 = only explicit commits).
    ///   - onCommit: called after each commit with the number of samples committed so far.
    public func beginRecording(
        configuration: WorkoutConfiguration, clock: any WorkoutClock = SystemClock(),
        options: BuilderOptions = BuilderOptions(), commitInterval: TimeInterval = 1,
        onCommit: (@Sendable (Int) -> Void)? = nil
    ) throws(StoreError) -> JournaledRecording {
        let writerBox = WriterBox()
        let session: WorkoutSession
        do {
            session = try WorkoutSession(configuration: configuration, clock: clock, options: options, sink: writerBox)
        } catch {
            throw .engine(error)
        }
        let id = session.builder.workoutID
        let storedOptions = JournalOptions(options)
        let now = clock.now()
        let row = try write { db -> Int64 in
            let row = try insertRecordingRow(db, id: id, configuration: configuration, start: now)
            try db.execute(
                sql: """
                    INSERT INTO journal_session(uuid, configuration, options, created, workout_id)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id.uuidString, try JSON.encode(configuration), try JSON.encode(storedOptions),
                    now.timeIntervalSinceReferenceDate, row,
                ])
            return row
        }
        let writer = JournalWriter(
            store: self, session: id, workoutRow: row, nextSeq: 0, committedSamples: 0, replaying: false,
            onCommit: onCommit)
        writerBox.set(writer)
        return JournaledRecording(session: session, store: self, writer: writer, commitInterval: commitInterval)
    }

    /// Sessions with a journal (recording, or interrupted by a crash), oldest first.
    public func journaledSessions() throws(StoreError) -> [JournalSessionInfo] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT uuid, configuration, created FROM journal_session ORDER BY created")
                .map { row in
                    JournalSessionInfo(
                        id: try Self.uuid(row["uuid"]),
                        configuration: try JSON.decode(WorkoutConfiguration.self, row["configuration"]),
                        created: Date(timeIntervalSinceReferenceDate: row["created"]))
                }
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
        typealias Loaded = (UUID, Int64, WorkoutConfiguration, JournalOptions, [RecordingChange], Int)
        let loaded = try read { db -> Loaded? in
            let row: Row?
            if let id {
                row = try Row.fetchOne(
                    db, sql: "SELECT * FROM journal_session WHERE uuid = ?", arguments: [id.uuidString])
            } else {
                row = try Row.fetchOne(db, sql: "SELECT * FROM journal_session ORDER BY created DESC LIMIT 1")
            }
            guard let row else { return nil }
            let session: String = row["uuid"]
            let workoutRow: Int64 = row["workout_id"]
            let (changes, sampleCount) = try Self.loadJournal(db, session: session, workoutRow: workoutRow)
            return (
                try Self.uuid(session), workoutRow, try JSON.decode(WorkoutConfiguration.self, row["configuration"]),
                try JSON.decode(JournalOptions.self, row["options"]), changes, sampleCount
            )
        }
        guard let (sessionID, workoutRow, configuration, options, changes, sampleCount) = loaded else {
            if let id { throw .sessionNotFound(id) }
            return nil
        }
        let writer = JournalWriter(
            store: self, session: sessionID, workoutRow: workoutRow, nextSeq: Int64(changes.count),
            committedSamples: sampleCount, replaying: true, onCommit: onCommit)
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

    /// Every committed change of a session, in order, with its samples and route points read back
    /// from the workout row's own rows; and how many samples there are.
    static func loadJournal(_ db: Database, session: String, workoutRow: Int64) throws -> ([RecordingChange], Int) {
        var samples: [(row: Int64, sample: QuantitySample)] = []
        var sources: [String: SourceDevice] = [:]
        let cursor = try Row.fetchCursor(
            db,
            sql: """
                SELECT s.type, s.start, s."end", s.value, s.unit, s.canonical, s.metadata,
                       src.name, src.manufacturer, src.model, src.identifier, s.id
                FROM sample s JOIN source src ON src.id = s.source_id
                WHERE s.workout_id = ? ORDER BY s.id
                """, arguments: [workoutRow])
        while let row = try cursor.next() {
            if let sample = try decodeSample(row, offset: 0, sources: &sources) { samples.append((row[11], sample)) }
        }
        var route: [(row: Int64, point: RoutePoint)] = []
        let routeRows = try Row.fetchCursor(
            db, sql: "SELECT rowid AS row, * FROM route_point WHERE workout_id = ? ORDER BY rowid",
            arguments: [workoutRow])
        while let row = try routeRows.next() { route.append((row["row"], decodeRoutePoint(row))) }

        /// The entries whose row ids lie in [first, first + count), from a cursor moving forward.
        func take<T>(_ all: [(row: Int64, item: T)], from cursor: inout Int, first: Int64?, count: Int) -> [T] {
            guard let first, count > 0 else { return [] }
            while cursor < all.count, all[cursor].row < first { cursor += 1 }
            var result: [T] = []
            while cursor < all.count, all[cursor].row < first + Int64(count) {
                result.append(all[cursor].item)
                cursor += 1
            }
            return result
        }
        let sampleEntries = samples.map { (row: $0.row, item: $0.sample) }
        let routeEntries = route.map { (row: $0.row, item: $0.point) }
        var sampleCursor = 0
        var routeCursor = 0
        var changes: [RecordingChange] = []
        let rows = try Row.fetchCursor(
            db,
            sql: "SELECT seq, kind, payload, first_row, row_count FROM journal_change WHERE session = ? ORDER BY seq",
            arguments: [session])
        while let row = try rows.next() {
            let kind: String = row["kind"]
            let first: Int64? = row["first_row"]
            let count: Int = row["row_count"] ?? 0
            switch kind {
            case "samples":
                changes.append(.samples(take(sampleEntries, from: &sampleCursor, first: first, count: count)))
            case "route":
                changes.append(.route(take(routeEntries, from: &routeCursor, first: first, count: count)))
            default:
                changes.append(try JSON.decode(RecordingChange.self, row["payload"]))
            }
        }
        return (changes, samples.count)
    }

    static func deleteJournal(_ db: Database, id: String) throws {
        try db.execute(sql: "DELETE FROM journal_change WHERE session = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM journal_session WHERE uuid = ?", arguments: [id])
    }
}

/// Lets the session be created (it needs its sink) before the writer (which needs the session's id).
final class WriterBox: WorkoutRecordingSink {
    private let writer = Mutex<JournalWriter?>(nil)
    func set(_ writer: JournalWriter) { self.writer.withLock { $0 = writer } }
    func record(_ change: RecordingChange) { writer.withLock { $0 }?.record(change) }
}
