import Foundation
import NIOPosix
import Synchronization
import WorkoutEngine
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// Every athlete's store, opened on first use: one SQLite file per athlete in the data folder's `athletes/`,
/// or the athlete's partitions of a PostgreSQL database.
///
/// A store is scoped to one athlete: a request can only reach the stores of the athletes its token may read.
final class AthleteStores: Sendable {
    enum Backing: Sendable {
        case sqlite(folder: String, statementTimeout: TimeInterval)
        case postgres(PostgresWorkoutDatabase)
    }
    let backing: Backing
    /// Where reads go when they have their own database (`--read-url`, a replica); nil: `backing`.
    let reader: Backing?
    private let open = Mutex<[UUID: WorkoutStore]>([:])
    private let openForReading = Mutex<[UUID: WorkoutStore]>([:])
    /// Held while a store is being opened (on a store thread, a database round trip or more), one lock per
    /// stripe of athletes, so that two requests never open the same athlete's store twice while other athletes'
    /// stores open at the same time (a thousand recorders starting at once meet hundreds of athletes); the
    /// caches' own locks are held only to read or add an entry, so that a request finding its store open never
    /// waits for another's being opened.
    private let opening: [NSLock] = (0..<AthleteStores.openingStripes).map { _ in NSLock() }
    private static let openingStripes = 64

    init(backing: Backing, reader: Backing? = nil) {
        self.backing = backing
        self.reader = reader
    }

    /// The store of `athlete` for writes, live sessions and reads that must see them.
    ///
    /// A store opened before is returned at once; opening one (creating the athlete's partitions, say) runs on a
    /// store thread, off the request's.
    func store(for athlete: Athlete) async throws(APIError) -> WorkoutStore {
        if let store = open.withLock({ $0[athlete.id] }) { return store }
        return try await Offload.run { () throws(APIError) -> WorkoutStore in try self.storeOpening(for: athlete) }
    }

    /// `store(for:)` for code already on a store thread: opens the store there when it is not open yet (blocks).
    func storeOpening(for athlete: Athlete) throws(APIError) -> WorkoutStore {
        if let store = open.withLock({ $0[athlete.id] }) { return store }
        return try open(athlete, in: backing, cache: open)
    }

    /// The store of `athlete` for lists, shows, samples and reports: the read replica's when there is one.
    func readStore(for athlete: Athlete) async throws(APIError) -> WorkoutStore {
        guard let reader else { return try await store(for: athlete) }
        if let store = openForReading.withLock({ $0[athlete.id] }) { return store }
        return try await Offload.run { () throws(APIError) -> WorkoutStore in
            try self.open(athlete, in: reader, cache: self.openForReading)
        }
    }

    private func open(
        _ athlete: Athlete, in backing: Backing, cache: borrowing Mutex<[UUID: WorkoutStore]>
    ) throws(APIError) -> WorkoutStore {
        let lock = opening[Int(athlete.id.uuid.15) % Self.openingStripes]
        lock.lock()
        defer { lock.unlock() }
        if let store = cache.withLock({ $0[athlete.id] }) { return store }
        do throws(StoreError) {
            let store: WorkoutStore
            switch backing {
            case .sqlite(let folder, let statementTimeout):
                let path = (folder as NSString).appendingPathComponent("\(athlete.id.uuidString.lowercased()).sqlite")
                store = try WorkoutStore(path: path, busyTimeout: 5, statementTimeout: statementTimeout)
            case .postgres(let database):
                store = try database.store(athlete: athlete.id)
            }
            cache.withLock { $0[athlete.id] = store }
            return store
        } catch {
            throw .unavailable("the store of athlete \(athlete.name) cannot be opened now; try again", detail: "\(error)")
        }
    }

    /// Whether the store of athlete `id` has been opened (for writes or reads) by this server.
    func isOpen(_ id: UUID) -> Bool {
        open.withLock { $0[id] != nil } || openForReading.withLock { $0[id] != nil }
    }

    /// Whether the workouts' database answers (readiness).
    func ping() -> Bool { Self.ping(backing) }

    /// Whether the read replica answers (true without one).
    func pingReader() -> Bool { reader.map(Self.ping) ?? true }

    private static func ping(_ backing: Backing) -> Bool {
        switch backing {
        case .sqlite: true
        case .postgres(let database): database.ping()
        }
    }

    /// Closes the databases' idle connections (the server's last step when it stops).
    func closeConnections() {
        for backing in [backing] + (reader.map { [$0] } ?? []) {
            if case .postgres(let database) = backing { database.closeConnections() }
        }
    }
}

/// The metadata key holding a live session's last committed batch number (in the journal and the saved workout).
public let lastBatchMetadataKey = "ServerLastBatch"

/// Runs blocking store work (SQLite, PostgreSQL round trips, FIT imports) off Swift's cooperative threads, so
/// that a slow commit never stalls the HTTP connections of other requests.
///
/// Three fixed pools of threads: `live` (first come first served) for what an acknowledgement
/// waits for (live batches' commits, token lookups), enough threads that every pooled PostgreSQL connection can
/// be busy while others wait their turn; `store` for the rest (sessions opened or read back from their journal,
/// queries, the directory), fewer, so that a thousand recorders starting at once, or a coach's large query, hold
/// at most that many connections and never queue in front of the batches of sessions already recording; and
/// `uploads` for FIT imports, a few threads only, for the same reason. `store` and `uploads` are shared fairly
/// (`FairPool`): one requester's work holds at most part of the threads, and waiting work is taken one requester
/// after the other (docs/server-operations-limits.md). A fixed pool, not a concurrent
/// DispatchQueue: blocking work on one makes libdispatch start thread after thread, and hundreds of threads on two
/// cores delay every ack.
enum Offload {
    /// Threads for live batches and token lookups.
    static let liveThreads = 24
    /// Threads for other store work: opening and recovering sessions, queries, the directory.
    static let storeThreads = 8
    /// Threads for FIT imports. Each runs at nice 10, so on a machine busy with live sessions the imports' share
    /// of the CPU grows with their number, and the live sessions' shrinks: beside 1,000 live sessions on two
    /// cores (docs/live-load.md, 10 minutes) two imported all 20 uploads/s asked with the acknowledgements' p99
    /// at 46 ms (25/s over 150 s); on a day the shared host left the machine less CPU (and with a generator that
    /// skipped uploads while its 16 connections were busy) two imported 17.6 to 18.7/s, four 19.3/s with the p99
    /// at 417 ms (their imports slowed the sessions' opens).
    static let uploadThreads = 2
    /// Imports waiting for an upload thread beyond which an upload is answered 503 (try again later).
    static let uploadQueueLimit = 64
    /// The most store threads the work of one requester (an athlete, a coach's team) holds at once: half of them,
    /// so that one athlete's slow queries never leave the others without a thread.
    static let storeThreadsPerRequester = storeThreads / 2
    /// Store calls of one requester waiting or running beyond which its next request is answered 429.
    static let storeQueuePerRequester = 64
    /// Uploads of one athlete waiting or being imported beyond which its next upload is answered 429.
    static let uploadsPerAthlete = 4

    static let live: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: liveThreads)
        pool.start()
        return pool
    }()
    /// The store threads, shared fairly between requesters (`FairPool`).
    static let store = FairPool(
        threads: storeThreads, perKeyThreads: storeThreadsPerRequester, perKeyQueue: storeQueuePerRequester,
        totalQueue: 100_000)
    /// The upload threads, shared fairly between athletes: an athlete's imports wait behind its own, in turn with
    /// the other athletes'.
    static let uploads = FairPool(
        threads: uploadThreads, perKeyThreads: uploadThreads, perKeyQueue: uploadsPerAthlete,
        totalQueue: uploadQueueLimit + uploadThreads)

    /// Who the current request is for, as the store threads' fairness key: the athlete or team of its token once
    /// `WorkoutServer.principal` has looked it up, else the token itself (set per request by `ErrorMiddleware`).
    @TaskLocal static var requester: Requester?

    /// The fairness key of a request (`requester`), filled in once its token is known.
    final class Requester: Sendable {
        let token: String
        let principal = Mutex<Principal?>(nil)
        init(_ token: String) { self.token = token }

        /// "athlete:ID" or "team:NAME" once the token is known, else the token.
        var key: String {
            switch principal.withLock({ $0 }) {
            case .athlete(let athlete): "athlete:\(athlete.id)"
            case .coach(let team): "team:\(team)"
            case nil: token
            }
        }
    }

    /// Runs `body` on one of `pool`'s threads (the live pool: first come first served).
    static func run<T: Sendable>(
        on pool: NIOThreadPool, _ body: @escaping @Sendable () throws(APIError) -> T
    ) async throws(APIError) -> T {
        let result: Result<T, APIError>
        do {
            result = try await pool.runIfActive { Result { () throws(APIError) -> T in try body() } }
        } catch {
            // Only a pool that was shut down throws here; the pools above live as long as the process.
            throw .unavailable("the server is stopping; try again")
        }
        return try result.get()
    }

    /// Runs `body` on a store thread, in turn with other requesters' work (`requester`); 429 when this requester
    /// already has `storeQueuePerRequester` calls waiting or running.
    ///
    /// A request's work is `interruptible` (its client hanging up cancels its statements); work done for no client
    /// (closing sessions at shutdown, releasing idle ones) is not: it runs to its end even in a cancelled task.
    static func run<T: Sendable>(
        interruptible: Bool = true, _ body: @escaping @Sendable () throws(APIError) -> T
    ) async throws(APIError) -> T {
        let key = requester?.key ?? ""
        return try await run(on: store, key: key, interruptible: interruptible, body) {
            APIError(
                status: 429, code: "too_many_requests",
                message: "\(storeQueuePerRequester) requests of this token are already waiting for the database; "
                    + "wait for their answers", retryAfter: 1)
        }
    }

    /// Runs `body` on `pool` under `key`, `refusal` when the key has its most calls waiting or running. A call
    /// whose task is cancelled (its client hung up, the server stops) is dropped unrun while it waits; once it
    /// runs, an `interruptible` one has its store statements interrupted (`StoreCancellation`: the running one
    /// cut off, the next ones refused), so its thread is free at once, not at the statement time limit, and one
    /// cancelled before it starts is answered `.cancelled` unrun. Only a failure is answered `.cancelled`: work
    /// that finished (a write committed) keeps its answer, even when the cancellation came as it finished.
    static func run<T: Sendable>(
        on pool: FairPool, key: String, interruptible: Bool = false,
        _ body: @escaping @Sendable () throws(APIError) -> T, refusal: () -> APIError
    ) async throws(APIError) -> T {
        typealias Waiting = CheckedContinuation<Result<T, APIError>?, Never>
        let submitted = Mutex<(id: UInt64, continuation: Waiting)?>(nil)
        let cancellation = StoreCancellation(caller: key)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiting) in
                let id = pool.submit(key: key) {
                    guard interruptible else {
                        return continuation.resume(returning: Result { () throws(APIError) -> T in try body() })
                    }
                    // Cancelled before it ran (before its submission was noted, so `onCancel` could not drop it).
                    if cancellation.isCancelled { return continuation.resume(returning: .failure(.cancelled)) }
                    let result = Result { () throws(APIError) -> T in try cancellation.run(body) }
                    // Interrupted work fails as a timed-out statement would: answered as cancelled instead.
                    if case .failure = result, cancellation.isCancelled {
                        return continuation.resume(returning: .failure(.cancelled))
                    }
                    continuation.resume(returning: result)
                }
                guard let id else { return continuation.resume(returning: nil) }
                submitted.withLock { $0 = (id, continuation) }
                // Cancelled before it was submitted (`onCancel` ran first and found nothing to drop): dropped now
                // if it still waits, rather than holding a place in the queue until a thread takes it.
                if interruptible, cancellation.isCancelled, pool.cancel(key: key, id: id) {
                    continuation.resume(returning: .failure(.cancelled))
                }
            }
        } onCancel: {
            // A job still waiting is dropped and its caller answered; one already running is interrupted when it
            // may be (else it finishes: the statement time limit bounds it).
            if let (id, continuation) = submitted.withLock({ $0 }), pool.cancel(key: key, id: id) {
                continuation.resume(returning: .failure(.cancelled))
            } else if interruptible {
                cancellation.cancel()
            }
        }
        guard let result else { throw refusal() }
        return try result.get()
    }

    /// Runs a FIT import on the upload threads, in turn with other athletes' imports; 429 when this athlete already
    /// has `uploadsPerAthlete` uploads waiting or being imported, 503 when too many are waiting in all.
    static func upload<T: Sendable>(
        athlete: String, _ body: @escaping @Sendable () throws(APIError) -> T
    ) async throws(APIError) -> T {
        try await run(
            on: uploads, key: athlete,
            { () throws(APIError) -> T in
                lowerThreadPriority()
                return try body()
            },
            refusal: {
                uploads.load(of: athlete) >= uploadsPerAthlete
                    ? APIError(
                        status: 429, code: "too_many_uploads",
                        message: "\(uploadsPerAthlete) uploads of this athlete are already being imported or waiting; "
                            + "send this file again once one is answered", retryAfter: 5)
                    : APIError(
                        status: 503, code: "uploads_busy",
                        message: "\(uploadQueueLimit) uploads are already waiting to be imported; send this file again later",
                        retryAfter: 10)
            })
    }

    /// Gives the calling thread (an upload thread) the lowest scheduling priority but one (nice 10; Linux
    /// schedules threads each with its own nice value): on a busy machine an import's CPU then goes to live
    /// sessions' acknowledgements first, and imports, which nobody waits on second by second, take the rest.
    /// A failure (not permitted) leaves the priority as it was.
    private static func lowerThreadPriority() {
        #if os(Linux)
            // The thread's id from /proc/thread-self ("pid/task/tid"): gettid(2) is not imported into Swift.
            var link = [CChar](repeating: 0, count: 64)
            let length = readlink("/proc/thread-self", &link, 63)
            guard length > 0,
                let tid = String(decoding: link[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    .split(separator: "/").last
                .flatMap({ id_t($0) })
            else { return }
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, 10)
        #endif
    }
}

/// One live session on the server: a journaled recording that applies numbered batches in order.
///
/// Each batch is applied and then committed together with its number (a metadata change in the same journal
/// transaction), so after any crash the journal says exactly which batches it holds: a client resending from
/// its last acknowledged number loses nothing and doubles nothing. A batch that fails to apply or commit is
/// undone by rebuilding the session from the journal. Calls run one at a time (a lock held on an `Offload` thread).
final class LiveSession: Sendable {
    let athlete: Athlete
    let id: UUID
    let store: WorkoutStore
    /// Held for each call's whole work on an `Offload` thread: calls of one session run one at a time, in turn.
    private let serial = Mutex<Void>(())
    private let current: Mutex<(recording: JournaledRecording?, lastBatch: Int)>
    /// Set when the session could not be read back from its journal (the database did not answer): its
    /// `recording` is nil but the session is not finished; the next call reads it back first.
    private let stale = Atomic<Bool>(false)
    /// When a request last used the session (uptime, nanoseconds), for the idle timeout.
    private let lastUse = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)
    /// Set under the session's lock when the session was released for idleness: its calls answer 503 (send
    /// again) and the registry hands out a new object read back from the journal.
    private let released = Atomic<Bool>(false)

    /// Where a journal that recovery refuses as damaged is answered from (`DamagedJournals`).
    let damaged: DamagedJournals

    init(athlete: Athlete, id: UUID, store: WorkoutStore, recording: JournaledRecording, damaged: DamagedJournals) {
        self.athlete = athlete
        self.id = id
        self.store = store
        self.damaged = damaged
        current = Mutex((recording, Self.lastBatch(of: recording)))
    }

    private static func lastBatch(of recording: JournaledRecording) -> Int {
        switch recording.builder.metadata[lastBatchMetadataKey] {
        case .int(let value): return value
        case .double(let value) where value.isFinite && value >= 0 && value < 1e15: return Int(value)
        default: return 0
        }
    }

    struct State: Encodable, Sendable {
        var id: UUID
        var athlete: String
        var lastBatch: Int
        var state: String
        var samples: Int
    }

    /// Marks the session used now; a released one refuses the call (its client sends it again).
    private func use() throws(APIError) {
        lastUse.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        if released.load(ordering: .acquiring) {
            throw .unavailable("session \(id) was idle and has just been released; send the request again")
        }
    }

    /// Seconds since a request last used the session.
    var idleSeconds: Double {
        Double(DispatchTime.now().uptimeNanoseconds &- lastUse.load(ordering: .relaxed)) / 1e9
    }

    /// Releases the session when idle for `timeout` seconds (checked under its lock, after any call in
    /// flight): committed and closed, journal kept. Returns whether it was released.
    func releaseIfIdle(timeout: Double) async -> Bool {
        (try? await Offload.run(interruptible: false) { () throws(APIError) -> Bool in
            self.serial.withLock { _ -> Bool in
                guard self.idleSeconds >= timeout, !self.released.load(ordering: .acquiring) else { return false }
                self.released.store(true, ordering: .releasing)
                try? self.current.withLock { $0.recording }?.close()
                return true
            }
        }) ?? false
    }

    func state() async throws(APIError) -> State {
        try await Offload.run { () throws(APIError) -> State in
            try self.serial.withLock { _ throws(APIError) in
                try self.use()
                try self.recoverIfStale()
            }
            return self.snapshot()
        }
    }

    /// The state as it is in memory now, without a database call: for a session just opened or read back
    /// (never stale); `state()` for any other.
    func snapshot() -> State {
        let (recording, lastBatch) = current.withLock { ($0.recording, $0.lastBatch) }
        return State(
            id: id, athlete: athlete.name, lastBatch: lastBatch,
            state: recording?.session.state.rawValue ?? "finished",
            samples: recording?.builder.counters.accepted ?? 0)
    }

    /// Applies batch `seq` (the next number) and commits it; a number already committed is acknowledged again
    /// without applying anything.
    func apply(seq: Int, steps: CheckedBatch) async throws(APIError) -> (ack: Int, duplicate: Bool) {
        try await Offload.run(on: Offload.live) { () throws(APIError) -> (ack: Int, duplicate: Bool) in
            try self.serial.withLock { _ throws(APIError) -> (ack: Int, duplicate: Bool) in
                try self.applyLocked(seq: seq, steps: steps)
            }
        }
    }

    private func applyLocked(seq: Int, steps batch: CheckedBatch) throws(APIError) -> (ack: Int, duplicate: Bool) {
        try use()
        try recoverIfStale()
        let (recording, lastBatch) = current.withLock { ($0.recording, $0.lastBatch) }
        guard let recording else {
            throw .conflict("session_finished", "session \(id) is finished; start a new session with a new id")
        }
        guard seq >= 1 else { throw .unprocessable("invalid_seq", "batch numbers start at 1; got \(seq)") }
        if seq <= lastBatch { return (seq, true) }
        guard seq == lastBatch + 1 else {
            throw .conflict(
                "out_of_sequence",
                "batch \(seq) is out of sequence: the last committed batch is \(lastBatch); send batch \(lastBatch + 1) next",
                details: ["expected": String(lastBatch + 1)])
        }
        // No session longer than `TimeBounds.longest`: checked against its start before anything is applied.
        try batch.checkSpan(sessionStart: recording.session.startDate)
        do throws(EngineError) {
            for step in batch.steps { try apply(step, to: recording) }
            try recording.builder.addMetadata([lastBatchMetadataKey: .int(seq)])
        } catch .builderState(_, .notStarted) {
            // Samples, events or the batch number before the session started (an empty batch 1, say).
            if let damage = rebuild() { throw damage }
            throw .conflict(
                "session_not_started",
                "batch \(seq) was refused and nothing of it was kept: session \(id) has not started; "
                    + "send a 'start' item ({\"kind\": \"start\", \"at\": …}) first, in this batch or an earlier one")
        } catch {
            if let damage = rebuild() { throw damage }
            throw .unprocessable("rejected_by_engine", "batch \(seq) was refused and nothing of it was kept: \(error)")
        }
        do {
            try recording.commit()
        } catch {
            // Nothing of the batch is kept (a commit whose changes did not continue the journal,
            // `journalOutOfStep`, wrote nothing either): the session is read back from its journal, whose
            // `lastBatch` the client resends from.
            if let damage = rebuild() { throw damage }
            throw .unavailable("batch \(seq) could not be committed; send it again", detail: "\(error)")
        }
        current.withLock { $0.lastBatch = seq }
        return (seq, false)
    }

    private func apply(_ step: BatchStep, to recording: JournaledRecording) throws(EngineError) {
        let session = recording.session
        switch step {
        case .call(let call): try session.perform(call)
        case .samples(let samples):
            if !samples.isEmpty { _ = try recording.builder.add(samples) }
        case .events(let events):
            if !events.isEmpty { try recording.builder.add(events) }
        case .leg(let configuration, let at): try session.beginNewActivity(configuration: configuration, at: at)
        case .nextLeg(let at): try session.advanceToNextLeg(at: at)
        case .endActivity(let at): try session.endCurrentActivity(at: at)
        }
    }

    /// Drops the in-memory session (with its uncommitted changes) and rebuilds it from the journal; the answer
    /// `journal_damaged` when recovery refused the journal as damaged (the caller throws it instead of its own
    /// answer, so the first report of the damage reaches the client, the log and the counter), nil otherwise (a
    /// journal that cannot be read now leaves the session stale, read back on the next call).
    private func rebuild() -> APIError? {
        do {
            try recover()
            return nil
        } catch {
            return error.code == "journal_damaged" ? error : nil
        }
    }

    private func recoverIfStale() throws(APIError) {
        if stale.load(ordering: .acquiring) { try recover() }
    }

    /// Reads the session back from its journal. A journal that is gone leaves the session finished; one that
    /// cannot be read now (the database is away) leaves it stale, read back again on the next call; one refused
    /// as damaged too, answered 500 `journal_damaged` (`DamagedJournals`).
    private func recover() throws(APIError) {
        let recovered: JournaledRecording?
        do {
            recovered = try store.recoverActiveSession(id: id, commitInterval: 0)
        } catch .sessionNotFound {
            recovered = nil
        } catch {
            current.withLock { $0.recording = nil }
            stale.store(true, ordering: .releasing)
            if let answer = damaged.answer(athlete: athlete, session: id, error) { throw answer }
            throw .unavailable(
                "session \(id) cannot be read back from its journal now; send the batch again", detail: "\(error)")
        }
        current.withLock { current in
            current.recording = recovered
            if let recovered { current.lastBatch = Self.lastBatch(of: recovered) }
        }
        stale.store(false, ordering: .releasing)
    }

    /// Saves the workout; the session must have ended (an `end` item).
    func finish() async throws(APIError) -> Workout {
        try await Offload.run { () throws(APIError) -> Workout in
            try self.serial.withLock { _ throws(APIError) -> Workout in try self.finishLocked() }
        }
    }

    private func finishLocked() throws(APIError) -> Workout {
        try use()
        try recoverIfStale()
        guard let recording = current.withLock({ $0.recording }) else {
            // Saved meanwhile (by a request racing this one), or its journal is gone: the saved workout, read as
            // every store read is (a store that cannot answer is a 503, never "not known").
            if let workout = try Self.savedWorkout(id: id, in: store) { return workout }
            throw .notFound("session \(id) is not known")
        }
        guard recording.session.state == .ended else {
            throw .conflict(
                "session_not_ended",
                "session \(id) is \(recording.session.state.rawValue); send an 'end' item in a batch before finishing")
        }
        do {
            let workout = try recording.finish()
            current.withLock { $0.recording = nil }
            return workout
        } catch {
            if case .sessionNotFound = error {
                // An earlier finish was kept though its answer was lost (the connection cut after PostgreSQL
                // committed): the journal is gone and the workout saved; this finish answers it. Gone and not
                // saved (discarded elsewhere): not known, as every later request will hear.
                let saved = try Self.savedWorkout(id: id, in: store)
                current.withLock { $0.recording = nil }
                if let saved { return saved }
                throw .notFound("session \(id) is not known")
            }
            guard case .journalOutOfStep = error else {
                throw .unavailable("session \(id) could not be saved; try again", detail: "\(error)")
            }
            // A commit answered as done is missing from the journal (`JournalCommit.finishingJournalEnd`): nothing
            // was saved. The session is read back from its journal, whose `lastBatch` the client resends from.
            if let damage = rebuild() { throw damage }
            guard !stale.load(ordering: .acquiring) else {
                // The journal could not be read back now: its last batch is not known, so none is named.
                throw .unavailable(
                    "session \(id) could not be saved and cannot be read back from its journal now; "
                        + "read the session's lastBatch and resend the batches after it, then finish",
                    detail: "\(error)")
            }
            let lastBatch = current.withLock { $0.lastBatch }
            throw .unavailable(
                "session \(id) could not be saved: the server's journal holds its batches up to \(lastBatch) only; "
                    + "send the batches after \(lastBatch) again, then finish", detail: "\(error)")
        }
    }

    /// The saved workout `id` of `store`, nil when there is none (blocks: on a store thread). A store that cannot
    /// answer throws as every other store read does (`Parsing.storeError`: 503, the cause in the log only).
    static func savedWorkout(id: UUID, in store: WorkoutStore) throws(APIError) -> Workout? {
        do throws(StoreError) { return try store.workout(id: id) } catch { throw Parsing.storeError(error) }
    }

    /// Commits anything pending (graceful shutdown); the journal stays for the next start.
    func close() async {
        _ = try? await Offload.run(interruptible: false) { () throws(APIError) in
            self.serial.withLock { _ in try? self.current.withLock { $0.recording }?.close() }
        }
    }
}

/// The live sessions being recorded, by athlete and id; sessions not in memory are recovered from the journal.
actor LiveSessions {
    private struct Key: Hashable {
        var athlete: UUID
        var session: UUID
    }
    private var sessions: [Key: LiveSession] = [:]
    /// The sessions whose journal recovery refused as damaged.
    nonisolated let damaged = DamagedJournals()

    static func options(id: UUID) -> BuilderOptions {
        // Strict: a bad sample refuses its batch (the client hears why) instead of being dropped silently.
        BuilderOptions(invalidInput: .reject, workoutID: id)
    }

    /// The session when it is in memory (opened or recovered by `athlete`).
    func inMemory(athlete: Athlete, id: UUID) -> LiveSession? {
        sessions[Key(athlete: athlete.id, session: id)]
    }

    /// Keeps `session` unless one with its key is already kept (opened or recovered meanwhile): the kept one.
    /// `keep` for a session `open` reserved a place for (the place is now the session's).
    private func keepOpened(_ session: LiveSession) -> LiveSession {
        unreserve(athlete: session.athlete)
        return keep(session)
    }

    private func keep(_ session: LiveSession) -> LiveSession {
        let key = Key(athlete: session.athlete.id, session: session.id)
        if let kept = sessions[key] { return kept }
        sessions[key] = session
        return session
    }

    // The store work of `existing` and `open` (journal reads, the first commit) runs on the store threads,
    // not on the actor: 1,000 recorders opening or resuming at once would otherwise queue every batch of
    // every session behind their round trips.

    /// The session, from memory or recovered from the athlete's journal; nil when there is none.
    ///
    /// A session read back from the journal (one released for idleness, or one of before a restart) takes one of
    /// the athlete's `limit` places like a session opened: beyond it, 429 `too_many_sessions` and nothing is read.
    nonisolated func existing(
        athlete: Athlete, id: UUID, store: WorkoutStore, limit: Int = .max
    ) async throws(APIError) -> LiveSession? {
        if let session = await inMemory(athlete: athlete, id: id) { return session }
        guard await reserve(athlete: athlete, limit: limit) != nil else {
            throw await tooMany(athlete: athlete, limit: limit)
        }
        let recovered: JournaledRecording?
        do {
            recovered = try await Offload.run { () throws(APIError) -> JournaledRecording? in
                try Self.recover(athlete: athlete, id: id, from: store, damaged: self.damaged)
            }
        } catch {
            await unreserve(athlete: athlete)
            throw error
        }
        guard let recovered else {
            await unreserve(athlete: athlete)
            return nil
        }
        return await keepOpened(
            LiveSession(athlete: athlete, id: id, store: store, recording: recovered, damaged: damaged))
    }

    /// The 429 of an athlete at its limit of sessions.
    private func tooMany(athlete: Athlete, limit: Int) -> APIError {
        .tooManyRequests(
            "too_many_sessions",
            "athlete \(athlete.name) has \(openCount(athlete: athlete)) live sessions open on this server, the most "
                + "allowed (`workout serve --max-sessions-per-athlete`); finish one, or wait until an idle one is released",
            details: ["limit": String(limit)])
    }

    /// Session `id` read back from `store`'s journal; nil when it has none (blocks: on a store thread). A journal
    /// refused as damaged is a 500 `journal_damaged` (`DamagedJournals`), any other failure a 503.
    private static func recover(
        athlete: Athlete, id: UUID, from store: WorkoutStore, damaged: DamagedJournals
    ) throws(APIError) -> JournaledRecording? {
        do {
            return try store.recoverActiveSession(id: id, commitInterval: 0)
        } catch .sessionNotFound {
            return nil
        } catch {
            if let answer = damaged.answer(athlete: athlete, session: id, error) { throw answer }
            throw .unavailable("session \(id) cannot be read from the journal now; try again", detail: "\(error)")
        }
    }

    /// Sessions being opened now (their journal being begun on a store thread), by athlete.
    private var opening: [UUID: Int] = [:]

    /// Takes one of `athlete`'s `limit` places for a session being opened; nil (and nothing taken) when the
    /// sessions in memory and those being opened already fill them: otherwise how many there were.
    private func reserve(athlete: Athlete, limit: Int) -> Int? {
        let count = sessions.keys.filter { $0.athlete == athlete.id }.count + opening[athlete.id, default: 0]
        guard count < limit else { return nil }
        opening[athlete.id, default: 0] += 1
        return count
    }

    private func unreserve(athlete: Athlete) {
        opening[athlete.id, default: 1] -= 1
        if opening[athlete.id] == 0 { opening[athlete.id] = nil }
    }

    /// How many sessions of `athlete` are in memory or being opened.
    private func openCount(athlete: Athlete) -> Int {
        sessions.keys.filter { $0.athlete == athlete.id }.count + opening[athlete.id, default: 0]
    }

    /// Opens session `id` (idempotent: an existing session is returned as it is, from memory or read back from
    /// its journal). A new session beyond the athlete's `limit` of sessions in memory (counting those being
    /// opened) is a 429, answered before `prepare` runs: a refused open writes nothing.
    ///
    /// `prepare` runs first on a store thread (blocking; it may throw, a 403 say) and gives the athlete's store
    /// and whether `id` is new (claimed by this request, so no session of this server began a journal for it).
    /// A session not in memory costs one store-thread task, its round trips in turn: `prepare`, the journal
    /// read (not for a new id) and the journal's begin (a thousand recorders opening at once wait behind each
    /// other's tasks once, not once per step). A begin refused because the id is taken reads the journal after
    /// all (a journal begun by a racing request, or by something other than a live session, is resumed) and
    /// answers 409 only for a saved workout.
    nonisolated func open(
        athlete: Athlete, id: UUID, configuration: WorkoutConfiguration, limit: Int = .max,
        prepare: @escaping @Sendable () throws(APIError) -> (WorkoutStore, new: Bool)
    ) async throws(APIError) -> (LiveSession, created: Bool) {
        if let session = await inMemory(athlete: athlete, id: id) { return (session, false) }
        guard await reserve(athlete: athlete, limit: limit) != nil else {
            // Refused before any store or directory work: nothing is written (no claim of the id), and a session
            // of the journal is not read back beyond the limit either.
            throw await tooMany(athlete: athlete, limit: limit)
        }
        struct Opened: Sendable {
            var recording: JournaledRecording
            var store: WorkoutStore
            var resumed: Bool
        }
        let opened: Opened
        let damaged = damaged
        do {
            opened = try await Offload.run { () throws(APIError) -> Opened in
                let (store, new) = try prepare()
                if !new, let recovered = try Self.recover(athlete: athlete, id: id, from: store, damaged: damaged) {
                    return Opened(recording: recovered, store: store, resumed: true)
                }
                do {
                    let recording = try store.beginRecording(
                        configuration: configuration, options: Self.options(id: id), commitInterval: 0)
                    return Opened(recording: recording, store: store, resumed: false)
                } catch StoreError.workoutExists {
                    // The id is taken: by a journal (one begun by a request racing this one, or one no claim
                    // knows of), which is resumed, or by a saved workout.
                    if let recovered = try Self.recover(athlete: athlete, id: id, from: store, damaged: damaged) {
                        return Opened(recording: recovered, store: store, resumed: true)
                    }
                    if try LiveSession.savedWorkout(id: id, in: store) != nil {
                        throw .conflict("session_finished", "session \(id) is already saved as a workout; use a new id")
                    }
                    throw .unavailable("session \(id) is being opened or saved by another request; send it again")
                } catch {
                    throw .unavailable("session \(id) cannot be started now; try again", detail: "\(error)")
                }
            }
        } catch {
            await unreserve(athlete: athlete)
            // The same id opened at the same time by another request (a client's retry): that one is kept.
            if let session = await inMemory(athlete: athlete, id: id) { return (session, false) }
            throw error
        }
        let session = LiveSession(
            athlete: athlete, id: id, store: opened.store, recording: opened.recording, damaged: damaged)
        let kept = await keepOpened(session)
        return (kept, !opened.resumed && kept === session)
    }

    func forget(athlete: Athlete, id: UUID) {
        sessions[Key(athlete: athlete.id, session: id)] = nil
    }

    var count: Int { sessions.count }

    /// Releases the sessions idle for `timeout` seconds or more (journals kept); returns how many.
    func releaseIdle(olderThan timeout: Double) async -> Int {
        var released = 0
        for (key, session) in sessions where session.idleSeconds >= timeout {
            if await session.releaseIfIdle(timeout: timeout) {
                // Still the same object (an actor call may have replaced it meanwhile)?
                if sessions[key] === session { sessions[key] = nil }
                released += 1
            }
        }
        return released
    }

    /// Commits every session's pending changes (graceful shutdown).
    func closeAll() async {
        for session in sessions.values { await session.close() }
    }
}

/// The live sessions whose journal recovery refused as damaged (a gap in its changes, a chunk that does not decode,
/// samples no change names, changes that do not replay): permanent, so answered 500 `journal_damaged` on every
/// request, not 503 "try again" for ever. Recovery never renumbers or skips changes to get past the damage (the
/// changes after a gap would replay other samples than they were acknowledged with); the journal stays as it
/// is for an operator. The first answer of each session is logged at error level and counted
/// (`workout_live_journals_damaged_total`); its repeats are logged at debug level only.
///
/// A damaged store file (SQLite's "malformed", `StoreError.corrupt`) is not a damaged journal: the damage may be on
/// any page of the file, and a new session would go into the same file. It is answered as every other store read
/// meeting it is (503 `unavailable`, the cause in the log), and left to the operator's restore.
final class DamagedJournals: Sendable {
    private let reported = Mutex<Set<UUID>>([])

    /// The answer for session `id` of `athlete` whose journal recovery refused with `error`; nil when `error` is
    /// not damage (a database away, a timeout: worth trying again).
    func answer(athlete: Athlete, session id: UUID, _ error: StoreError) -> APIError? {
        switch error {
        case .corruptChunk, .engine: break
        default: return nil
        }
        let first = reported.withLock { $0.insert(id).inserted }
        return .journalDamaged(
            session: id, detail: "the journal of live session \(id) of athlete \(athlete.name) is damaged: \(error)",
            repeated: !first)
    }
}
