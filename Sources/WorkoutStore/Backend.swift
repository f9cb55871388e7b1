import Foundation
import WorkoutEngine
import WorkoutModel

// The store seam (docs/storage-chunks.md, "Backends"). `WorkoutStore` keeps everything that is the
// same for every backend: chunking and chunk encoding, sample and route queries over decoded chunks,
// statistics, the journal's logic, observers. A backend keeps rows: workouts with their activities,
// statistics and events, chunks with their index columns, and the journal. It compiles workout
// queries to its own parameterised statements. It throws `StoreError` only.
//
// A backend instance may be scoped (one athlete, a set of athletes): every call then sees and
// writes only that scope. The seam has no notion of who owns what.

/// A chunk of samples of one stream (one workout, quantity type and source), as a backend stores it.
///
/// The index fields are what a backend needs to select chunks without decoding them: a date-range
/// query reads only chunks whose [startMin, startMax] / [endMin, endMax] can match.
package struct SampleChunk: Sendable, Hashable {
    package var type: QuantityType
    package var source: SourceDevice
    /// Number of samples.
    package var count: Int
    /// Ordinal of the chunk's first sample in its workout: with the workout, the chunk's key. A chunk
    /// written again with the same key (the open tail of a recording) replaces the earlier one.
    package var firstOrdinal: Int64
    package var lastOrdinal: Int64
    /// Sample starts and ends, seconds since 2001-01-01 UTC.
    package var startMin: Double
    package var startMax: Double
    package var endMin: Double
    package var endMax: Double
    /// Values in the type's canonical unit (nil when no sample converts).
    package var valueMin: Double?
    package var valueMax: Double?
    /// The encoded chunk (`ChunkCodec`, format "WKC" version 1).
    package var payload: [UInt8]

    package init(
        type: QuantityType, source: SourceDevice, count: Int, firstOrdinal: Int64, lastOrdinal: Int64,
        startMin: Double, startMax: Double, endMin: Double, endMax: Double, valueMin: Double?, valueMax: Double?,
        payload: [UInt8]
    ) {
        self.type = type
        self.source = source
        self.count = count
        self.firstOrdinal = firstOrdinal
        self.lastOrdinal = lastOrdinal
        self.startMin = startMin
        self.startMax = startMax
        self.endMin = endMin
        self.endMax = endMax
        self.valueMin = valueMin
        self.valueMax = valueMax
        self.payload = payload
    }
}

/// A chunk of route points of one workout.
package struct RouteChunk: Sendable, Hashable {
    package var count: Int
    /// Ordinal of the first point in the workout's route (insertion order); the chunk's key.
    package var firstOrdinal: Int64
    package var lastOrdinal: Int64
    package var dateMin: Double
    package var dateMax: Double
    package var payload: [UInt8]

    package init(count: Int, firstOrdinal: Int64, lastOrdinal: Int64, dateMin: Double, dateMax: Double, payload: [UInt8]) {
        self.count = count
        self.firstOrdinal = firstOrdinal
        self.lastOrdinal = lastOrdinal
        self.dateMin = dateMin
        self.dateMax = dateMax
        self.payload = payload
    }
}

/// A stored chunk with the workout it belongs to.
package struct StoredChunk<Chunk: Sendable>: Sendable {
    package var workout: UUID
    /// Orders workouts as they were first written (ties between workouts at the same instant).
    package var workoutOrder: Int64
    package var chunk: Chunk

    package init(workout: UUID, workoutOrder: Int64, chunk: Chunk) {
        self.workout = workout
        self.workoutOrder = workoutOrder
        self.chunk = chunk
    }
}

/// Which sample chunks to read. Every bound is on the chunk's index columns; a chunk that passes
/// may still hold no matching sample (the store filters decoded samples exactly). Finished workouts
/// only, unless `workout` names a recording in progress (the journal reads its own chunks).
package struct ChunkFilter: Sendable, Hashable {
    package var type: QuantityType?
    package var source: SourceDevice?
    package var workout: UUID?
    /// startMin < startBefore
    package var startBefore: Double?
    /// startMax >= startFrom
    package var startFrom: Double?
    /// endMax >= endFrom
    package var endFrom: Double?
    /// endMin <= endThrough
    package var endThrough: Double?

    package init(
        type: QuantityType? = nil, source: SourceDevice? = nil, workout: UUID? = nil, startBefore: Double? = nil,
        startFrom: Double? = nil, endFrom: Double? = nil, endThrough: Double? = nil
    ) {
        self.type = type
        self.source = source
        self.workout = workout
        self.startBefore = startBefore
        self.startFrom = startFrom
        self.endFrom = endFrom
        self.endThrough = endThrough
    }
}

/// A journaled session as stored: its settings (JSON text written by the store) and its workout row.
package struct JournalSessionRecord: Sendable, Hashable {
    package var id: UUID
    /// `WorkoutConfiguration` as JSON.
    package var configuration: String
    /// The builder options (`JournalOptions`) as JSON.
    package var options: String
    package var created: Date

    package init(id: UUID, configuration: String, options: String, created: Date) {
        self.id = id
        self.configuration = configuration
        self.options = options
        self.created = created
    }
}

/// One change of a session's journal, numbered by `seq` from 0.
package struct JournalEntry: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable {
        /// `count` samples, the next ones in the recording's ordinal order.
        case samples
        /// `count` route points, the next ones in the route's ordinal order.
        case route
        /// Any other change, as JSON text in `payload` (`RecordingChange`'s Codable form).
        case change
    }
    package var seq: Int64
    package var kind: Kind
    package var count: Int
    package var payload: String?

    package init(seq: Int64, kind: Kind, count: Int = 0, payload: String? = nil) {
        self.seq = seq
        self.kind = kind
        self.count = count
        self.payload = payload
    }
}

/// What a journal commit does besides appending changes.
package enum JournalClosing: Sendable {
    /// The recording becomes the finished `workout`. Its samples and route stay where they are, except that
    /// the backend merges the journal's small chunks into full ones in the same transaction, after writing
    /// the commit's chunks: it reads the recording's chunks and applies `ChunkCompaction.plan` (deleting the
    /// chunks named, then writing the new ones), unless the commit says its chunks are `alreadyCompact`.
    case finish(Workout)
    /// The recording and everything it wrote are deleted.
    case discard
}

/// One journal commit: applied in one transaction, or not at all.
package struct JournalCommit: Sendable {
    package var session: UUID
    package var entries: [JournalEntry]
    /// Inserted, or replacing the chunk with the same first ordinal (the open tail of a stream).
    package var sampleChunks: [SampleChunk]
    package var routeChunks: [RouteChunk]
    package var closing: JournalClosing?
    /// Whether the recording's chunks are already as a save writes them (`JournalChunking.whole`): a finish
    /// then has nothing to merge and the backend skips reading the chunks back.
    package var alreadyCompact: Bool
    /// For a finishing commit, which writes none of its entries (the journal is deleted in the same
    /// transaction): the numbers the stored journal's next change may have for the commit to be applied, from
    /// the writer's committed changes (`lowerBound`) to those and the entries of its failed commits
    /// (`upperBound`: a commit answered as failed that was kept after all). Outside it, a commit the writer was
    /// told was done was not kept, and finishing would save a workout without that commit's samples while its
    /// statistics count them: the backend refuses with `StoreError.journalOutOfStep`, writing nothing, as it
    /// refuses entries that do not continue the journal. Nil: no such check (a commit with entries is checked by
    /// its first entry; a discard deletes whatever the journal holds).
    package var finishingJournalEnd: ClosedRange<Int64>?

    package init(
        session: UUID, entries: [JournalEntry], sampleChunks: [SampleChunk], routeChunks: [RouteChunk],
        closing: JournalClosing?, alreadyCompact: Bool = false, finishingJournalEnd: ClosedRange<Int64>? = nil
    ) {
        self.session = session
        self.entries = entries
        self.sampleChunks = sampleChunks
        self.routeChunks = routeChunks
        self.closing = closing
        self.alreadyCompact = alreadyCompact
        self.finishingJournalEnd = finishingJournalEnd
    }
}

/// A journal as read back for recovery.
package struct LoadedJournal: Sendable {
    package var session: JournalSessionRecord
    /// In seq order.
    package var entries: [JournalEntry]
    package var sampleChunks: [SampleChunk]
    package var routeChunks: [RouteChunk]

    package init(
        session: JournalSessionRecord, entries: [JournalEntry], sampleChunks: [SampleChunk], routeChunks: [RouteChunk]
    ) {
        self.session = session
        self.entries = entries
        self.sampleChunks = sampleChunks
        self.routeChunks = routeChunks
    }
}

/// A storage backend of `WorkoutStore`: SQLite (`SQLiteBackend`, this module) or another database
/// (PostgreSQL in the `WorkoutStorePostgres` target). Every method is one transaction and thread-safe;
/// errors are `StoreError`s a user can act on.
package protocol StoreBackend: Sendable {
    /// What the store is, for messages (`path` of `WorkoutStore`): a file path, a redacted URL.
    var location: String { get }

    // MARK: saving

    /// Saves a finished workout with its chunks. Throws `.workoutExists` when the id is taken.
    func save(_ workout: Workout, sampleChunks: [SampleChunk], routeChunks: [RouteChunk]) throws(StoreError)

    /// Saves finished workouts with their chunks in one transaction, each in a savepoint of its own: a workout that
    /// cannot be saved (`.workoutExists`) is left out whole, the others kept. Returns each one's error (nil: saved),
    /// in order; throws when the transaction as a whole fails (nothing saved). The default saves each in a
    /// transaction of its own.
    func saveEach(_ workouts: [ImportedWorkout]) throws(StoreError) -> [StoreError?]

    /// Begins a bulk load: many workouts are about to be saved through `saveEach`, until `endBulkLoad()`. A backend
    /// may then keep its query indexes up to date once, at the end, rather than row by row; what `saveEach` saves
    /// and what queries answer stay the same (queries may be slower until the load ends). Loads may overlap: the
    /// indexes come back when the last one ends. `threshold`: the workouts a load saves before the backend may
    /// decide to. The default does nothing.
    func beginBulkLoad(threshold: Int)
    /// Ends a load begun by `beginBulkLoad(threshold:)`. Throws when the indexes cannot be made again (a locked or
    /// full file): the workouts saved are kept, and the store makes the indexes when the next load ends or the
    /// store is next opened.
    func endBulkLoad() throws(StoreError)

    /// Deletes a finished workout and its chunks; records the deletion for anchored queries.
    /// Throws `.workoutNotFound`.
    func delete(workout: UUID) throws(StoreError)

    /// Replaces a finished workout's metadata and some of its sample chunks, moving its anchor; one
    /// transaction. The workout's chunks of the types in `replacing` are read and those for which
    /// `isReplaced` is true are deleted; `update` receives the stored metadata and the next free sample
    /// ordinal of the workout (taken before the deletion) and returns the new metadata and the chunks
    /// to write. Throws `.workoutNotFound`.
    func updateWorkout(
        _ workout: UUID, replacing: Set<QuantityType>, where isReplaced: (SampleChunk) throws(StoreError) -> Bool,
        _ update: (Metadata, Int64) throws(StoreError) -> (Metadata, [SampleChunk])
    ) throws(StoreError)

    // MARK: reading

    func workout(id: UUID) throws(StoreError) -> Workout?
    /// Whether a finished workout with `id` is stored (`workout(id:) != nil`, without reading it).
    func containsWorkout(id: UUID) throws(StoreError) -> Bool
    func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout]
    func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID]
    func anchoredWorkouts(since anchor: QueryAnchor?, limit: Int?) throws(StoreError) -> AnchoredWorkouts
    /// Chunks passing `filter`, any order.
    func sampleChunks(_ filter: ChunkFilter) throws(StoreError) -> [StoredChunk<SampleChunk>]
    /// The route chunks of a finished workout, any order.
    func routeChunks(workout: UUID) throws(StoreError) -> [RouteChunk]

    // MARK: journal

    /// Creates a session's journal and its recording (a workout not yet visible to queries).
    /// Throws `.workoutExists` when a workout has the session's id.
    func beginJournal(_ session: JournalSessionRecord, configuration: WorkoutConfiguration, start: Date)
        throws(StoreError)
    func commitJournal(_ commit: JournalCommit) throws(StoreError)
    /// Journaled sessions, oldest first.
    func journalSessions() throws(StoreError) -> [JournalSessionRecord]
    /// The session `id` (the newest when nil), nil when there is none.
    func loadJournal(id: UUID?) throws(StoreError) -> LoadedJournal?
    /// The entries of session `id`'s journal numbered `seq` or later, in order; nil when there is no such session.
    /// Only those are read (not the journal from its start, nor the recording's chunks): what a writer needs to learn
    /// where the journal ends after its own number.
    func journalEntries(id: UUID, from seq: Int64) throws(StoreError) -> [JournalEntry]?

    // MARK: changes made elsewhere

    /// Starts delivering the changes that other writers make to this backend's data (other store instances,
    /// other processes on the same database) as they commit; `deliver` runs on any thread. The changes made
    /// through this backend instance are not delivered (the store publishes those itself).
    ///
    /// Returns what keeps the feed going (dropping it ends the feed), or nil when the backend cannot see
    /// other writers: the default, and SQLite's answer (observers see their own store instance's changes only).
    func observeOtherWriters(_ deliver: @escaping @Sendable (StoreChange) -> Void) -> (any AnyObject & Sendable)?
}

extension StoreBackend {
    package func saveEach(_ workouts: [ImportedWorkout]) throws(StoreError) -> [StoreError?] {
        var errors: [StoreError?] = []
        for item in workouts {
            do {
                try save(item.workout, sampleChunks: item.sampleChunks, routeChunks: item.routeChunks)
                errors.append(nil)
            } catch {
                errors.append(error)
            }
        }
        return errors
    }

    package func observeOtherWriters(_ deliver: @escaping @Sendable (StoreChange) -> Void) -> (any AnyObject & Sendable)? {
        nil
    }

    package func beginBulkLoad(threshold: Int) {}
    package func endBulkLoad() throws(StoreError) {}
}

/// A compact binary form of a commit's journal entries, for backends that store one row per commit
/// (SQLite does): per entry a kind byte (1 samples, 2 route, 3 change), then the count (varint) or
/// the change's JSON (length varint and UTF-8 bytes). Entries are numbered from the row's first seq.
package enum JournalPacking {
    package static func pack(_ entries: [JournalEntry]) -> [UInt8] {
        var out = ByteWriter()
        for entry in entries {
            switch entry.kind {
            case .samples:
                out.bytes.append(1)
                out.varint(UInt64(max(0, entry.count)))
            case .route:
                out.bytes.append(2)
                out.varint(UInt64(max(0, entry.count)))
            case .change:
                out.bytes.append(3)
                let utf8 = Array((entry.payload ?? "").utf8)
                out.varint(UInt64(utf8.count))
                out.bytes += utf8
            }
        }
        return out.bytes
    }

    package static func unpack(_ bytes: [UInt8], firstSeq: Int64) throws(ChunkCodecError) -> [JournalEntry] {
        var reader = ByteReader(bytes)
        var entries: [JournalEntry] = []
        var seq = firstSeq
        while !reader.isAtEnd {
            switch try reader.byte("journal entry") {
            case 1: entries.append(JournalEntry(seq: seq, kind: .samples, count: try reader.count(limit: 1 << 30, "count")))
            case 2: entries.append(JournalEntry(seq: seq, kind: .route, count: try reader.count(limit: 1 << 30, "count")))
            case 3:
                let length = try reader.count(limit: 1 << 30, "change")
                let payload = try reader.take(length, "change")
                entries.append(JournalEntry(seq: seq, kind: .change, payload: String(decoding: payload, as: UTF8.self)))
            case let other: throw ChunkCodecError("unknown journal entry kind \(other)")
            }
            guard seq < Int64.max || reader.isAtEnd else { throw ChunkCodecError("journal entry numbers overflow") }
            seq &+= 1
        }
        return entries
    }
}
