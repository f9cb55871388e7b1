import Foundation
import GRDB
import GRDBSQLite
import WorkoutEngine
import WorkoutModel

// The StoreBackend operations of the SQLite backend.
extension SQLiteBackend {
    // MARK: saving

    package func save(_ workout: Workout, sampleChunks: [SampleChunk], routeChunks: [RouteChunk]) throws(StoreError) {
        try write { db in
            let row = try insertWorkout(db, workout)
            var writer = try ChunkWriter(db)
            for chunk in sampleChunks { try writer.write(chunk, workout: row) }
            for chunk in routeChunks { try writer.write(chunk, workout: row) }
        }
    }

    /// One transaction, a savepoint per workout: an import's workouts share the pages they write (the statistics'
    /// indexes, the anchor, the b-trees' last leaves), which a transaction per workout wrote to the log again each
    /// time. A workout that fails is rolled back to its savepoint, the others kept; an error that ended the
    /// transaction itself (SQLite rolls back on a full disk or an I/O error) fails them all, nothing saved.
    package func saveEach(_ workouts: [ImportedWorkout]) throws(StoreError) -> [StoreError?] {
        try write { db in
            try deferIndexesIfWorthIt(db)
            var writer = try ChunkWriter(db)
            var errors: [StoreError?] = []
            errors.reserveCapacity(workouts.count)
            for item in workouts {
                // A source row inserted in a savepoint rolled back is gone: its cached id goes too.
                let sources = writer.sources
                do {
                    try db.inSavepoint {
                        let row = try insertWorkout(db, item.workout)
                        for chunk in item.sampleChunks { try writer.write(chunk, workout: row) }
                        for chunk in item.routeChunks { try writer.write(chunk, workout: row) }
                        return .commit
                    }
                    errors.append(nil)
                } catch {
                    guard db.isInsideTransaction else { throw error }
                    writer.sources = sources
                    errors.append(StoreError.from(error, path: path))
                }
            }
            noteBulkSaves(errors.count { $0 == nil })
            return errors
        }
    }

    package func delete(workout id: UUID) throws(StoreError) {
        try write { db in
            guard
                let row = try Int64.fetchOne(
                    db, sql: "SELECT id FROM workout WHERE uuid = ? AND recording = 0", arguments: [id.uuidString])
            else { throw StoreError.workoutNotFound(id) }
            try Self.deleteRows(db, workout: row)
            let anchor = try nextAnchor(db)
            try db.execute(
                sql: "INSERT INTO deleted_object(anchor, kind, uuid) VALUES (?, 'workout', ?)",
                arguments: [anchor, id.uuidString])
        }
        reclaimSpace()
    }

    /// Deletes a workout row with its chunks (activities, statistics and events cascade).
    static func deleteRows(_ db: Database, workout row: Int64) throws {
        try db.execute(sql: "DELETE FROM sample_chunk WHERE workout_id = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM route_chunk WHERE workout_id = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM workout WHERE id = ?", arguments: [row])
    }

    package func updateWorkout(
        _ id: UUID, replacing types: Set<QuantityType>,
        where isReplaced: (SampleChunk) throws(StoreError) -> Bool,
        _ update: (Metadata, Int64) throws(StoreError) -> (Metadata, [SampleChunk])
    ) throws(StoreError) {
        try write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT id, metadata FROM workout WHERE uuid = ? AND recording = 0",
                    arguments: [id.uuidString])
            else { throw StoreError.workoutNotFound(id) }
            let rowID: Int64 = row["id"]
            let metadata = try JSON.decode(Metadata.self, row["metadata"] as String)
            let next =
                try Int64.fetchOne(
                    db, sql: "SELECT max(last_ordinal) + 1 FROM sample_chunk WHERE workout_id = ?", arguments: [rowID])
                ?? 0
            var sourceCache: [String: SourceDevice] = [:]
            for type in types.sorted(by: { $0.rawValue < $1.rawValue }) {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT c.id, c.count, c.first_ordinal, c.last_ordinal, c.start_min, c.start_max, c.end_min,
                               c.end_max, c.value_min, c.value_max, c.data, src.name, src.manufacturer, src.model,
                               src.identifier
                        FROM sample_chunk c JOIN source src ON src.id = c.source_id
                        WHERE c.workout_id = ? AND c.type = ?
                        """, arguments: [rowID, type.rawValue])
                for chunkRow in rows {
                    let chunk = Self.sampleChunk(
                        chunkRow, type: type, source: Self.source(chunkRow, offset: 11, cache: &sourceCache))
                    if try isReplaced(chunk) {
                        try db.execute(sql: "DELETE FROM sample_chunk WHERE id = ?", arguments: [chunkRow[0] as Int64])
                    }
                }
            }
            let (newMetadata, chunks) = try update(metadata, next)
            var writer = try ChunkWriter(db)
            for chunk in chunks { try writer.write(chunk, workout: rowID) }
            try db.execute(
                sql: "UPDATE workout SET metadata = ?, anchor = ? WHERE id = ?",
                arguments: [JSON.encode(newMetadata), try nextAnchor(db), rowID])
        }
    }

    // MARK: reading

    package func workout(id: UUID) throws(StoreError) -> Workout? {
        try read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM workout WHERE uuid = ? AND recording = 0"),
                    arguments: [id.uuidString])
            else { return nil }
            return try Self.decodeWorkout(db, row)
        }
    }

    package func containsWorkout(id: UUID) throws(StoreError) -> Bool {
        // One statement, which SQLite runs in a read transaction of its own: no BEGIN and COMMIT around it (an
        // import asks this before each workout; with them, the transaction cost more than the lookup).
        try read(transaction: false) { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM workout WHERE uuid = ? AND recording = 0"), arguments: [id.uuidString]
            ) == true
        }
    }

    package func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout] {
        if query.isActivityOnly {
            let ids = try workoutIDs(matching: query)
            return try read { db in
                try ids.compactMap { id in
                    try Row.fetchOne(
                        db, sql: "SELECT * FROM workout WHERE uuid = ? AND recording = 0", arguments: [id.uuidString]
                    )
                    .map { try Self.decodeWorkout(db, $0) }
                }
            }
        }
        let (sql, arguments) = try Self.workoutSQL(query, columns: "w.*")
        return try read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { try Self.decodeWorkout(db, $0) }
        }
    }

    package func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID] {
        if query.isActivityOnly {
            let matches = try query.activities.map { (predicate) throws(StoreError) in try Self.matchSQL(predicate) }
            return try read { db in try Self.activityOnlyIDs(db, matches, query) }
        }
        let (sql, arguments) = try Self.workoutSQL(query, columns: "w.uuid")
        return try read { db in
            try String.fetchAll(db, sql: sql, arguments: arguments).map(Self.uuid)
        }
    }

    /// A sample chunk from a row whose columns 1 to 10 are the chunk's count, first and last ordinal, start
    /// and end bounds, value bounds and data, in that order (every chunk query here selects them so).
    static func sampleChunk(_ row: Row, type: QuantityType, source: SourceDevice) -> SampleChunk {
        let data: Data = row[10]
        return SampleChunk(
            type: type, source: source, count: row[1], firstOrdinal: row[2], lastOrdinal: row[3], startMin: row[4],
            startMax: row[5], endMin: row[6], endMax: row[7], valueMin: row[8], valueMax: row[9], payload: [UInt8](data))
    }

    package func sampleChunks(_ filter: ChunkFilter) throws(StoreError) -> [StoredChunk<SampleChunk>] {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let type = filter.type {
            conditions.append("c.type = ?")
            arguments.append(type.rawValue)
        }
        if let value = filter.startBefore {
            conditions.append("c.start_min < ?")
            arguments.append(value)
        }
        if let value = filter.startFrom {
            conditions.append("c.start_max >= ?")
            arguments.append(value)
        }
        if let value = filter.endFrom {
            conditions.append("c.end_max >= ?")
            arguments.append(value)
        }
        if let value = filter.endThrough {
            conditions.append("c.end_min <= ?")
            arguments.append(value)
        }
        if let source = filter.source {
            conditions.append(
                "src.name = ? AND ifnull(src.identifier, '') = ifnull(?, '') AND ifnull(src.manufacturer, '') = ifnull(?, '') AND ifnull(src.model, '') = ifnull(?, '')"
            )
            arguments += [source.name, source.identifier, source.manufacturer, source.model]
        }
        if let workout = filter.workout {
            conditions.append("c.workout_id = (SELECT id FROM workout WHERE uuid = ?)")
            arguments.append(workout.uuidString)
        }
        var sql = """
            SELECT c.type, c.count, c.first_ordinal, c.last_ordinal, c.start_min, c.start_max, c.end_min, c.end_max,
                   c.value_min, c.value_max, c.data, w.uuid, w.id, src.name, src.manufacturer, src.model, src.identifier
            FROM sample_chunk c JOIN workout w ON w.id = c.workout_id JOIN source src ON src.id = c.source_id
            """
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        let finalSQL = sql
        return try read { db in
            var result: [StoredChunk<SampleChunk>] = []
            var workouts: [Int64: UUID] = [:]
            var sourceCache: [String: SourceDevice] = [:]
            let rows = try Row.fetchCursor(db, sql: finalSQL, arguments: StatementArguments(arguments))
            while let row = try rows.next() {
                let workoutRow: Int64 = row[12]
                let workout: UUID
                if let known = workouts[workoutRow] {
                    workout = known
                } else {
                    workout = try Self.uuid(row[11])
                    workouts[workoutRow] = workout
                }
                // Never skipped silently: a type this build does not know is a damaged (or foreign) chunk row.
                guard let type = QuantityType(rawValue: row[0]) else {
                    throw StoreError.corruptChunk(workout: workout, detail: "unknown quantity type \(row[0] as String)")
                }
                let source = Self.source(row, offset: 13, cache: &sourceCache)
                result.append(
                    StoredChunk(
                        workout: workout, workoutOrder: workoutRow,
                        chunk: Self.sampleChunk(row, type: type, source: source)))
            }
            return result
        }
    }

    /// A source from (name, manufacturer, model, identifier) columns at `offset`, shared per key.
    static func source(_ row: Row, offset: Int, cache: inout [String: SourceDevice]) -> SourceDevice {
        let name: String = row[offset]
        let manufacturer: String? = row[offset + 1]
        let model: String? = row[offset + 2]
        let identifier: String? = row[offset + 3]
        let key = [name, manufacturer ?? "\u{0}", model ?? "\u{0}", identifier ?? "\u{0}"].joined(separator: "\u{1}")
        if let known = cache[key] { return known }
        let source = SourceDevice(name: name, manufacturer: manufacturer, model: model, identifier: identifier)
        cache[key] = source
        return source
    }

    package func routeChunks(workout id: UUID) throws(StoreError) -> [RouteChunk] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.count, r.first_ordinal, r.last_ordinal, r.date_min, r.date_max, r.data
                    FROM route_chunk r JOIN workout w ON w.id = r.workout_id WHERE w.uuid = ?
                    """, arguments: [id.uuidString]
            ).map(Self.routeChunk)
        }
    }

    static func routeChunk(_ row: Row) -> RouteChunk {
        let data: Data = row[5]
        return RouteChunk(
            count: row[0], firstOrdinal: row[1], lastOrdinal: row[2], dateMin: row[3], dateMax: row[4],
            payload: [UInt8](data))
    }

    // MARK: journal

    package func beginJournal(
        _ session: JournalSessionRecord, configuration: WorkoutConfiguration, start: Date
    ) throws(StoreError) {
        try write { db in
            let row = try insertRecordingRow(db, id: session.id, configuration: configuration, start: start)
            try db.cachedStatement(
                sql: """
                    INSERT INTO journal_session(uuid, configuration, options, created, workout_id)
                    VALUES (?, ?, ?, ?, ?)
                    """
            ).execute(
                arguments: [
                    session.id.uuidString, session.configuration, session.options,
                    session.created.timeIntervalSinceReferenceDate, row,
                ])
        }
    }

    package func commitJournal(_ commit: JournalCommit) throws(StoreError) {
        try write { db in
            let id = commit.session.uuidString
            guard
                let row = try Int64.fetchOne(
                    db.cachedStatement(sql: "SELECT workout_id FROM journal_session WHERE uuid = ?"), arguments: [id])
            else { throw StoreError.sessionNotFound(commit.session) }
            // A finish writes no entries: it continues the journal where its writer says, or nothing is written.
            if let end = commit.finishingJournalEnd {
                let next = try Self.nextJournalSeq(db, session: commit.session)
                guard end.contains(next) else {
                    throw StoreError.journalOutOfStep(
                        session: commit.session,
                        detail: "the journal continues at change \(next), not at change \(end.lowerBound)")
                }
            }
            var writer = try ChunkWriter(db)
            for chunk in commit.sampleChunks { try writer.write(chunk, workout: row) }
            for chunk in commit.routeChunks { try writer.write(chunk, workout: row) }
            // One row per commit: the entries packed (a row per change costs more than the change).
            if let first = commit.entries.first {
                // The entries continue the stored journal, or nothing is written (as PostgreSQL's
                // `workout_journal_append` checks): a writer numbering past it would leave a gap recovery refuses.
                let next = try Self.nextJournalSeq(db, session: commit.session)
                guard first.seq == next, let last = commit.entries.last,
                    case let (span, overflow) = last.seq.subtractingReportingOverflow(first.seq), !overflow,
                    span == Int64(commit.entries.count) - 1
                else {
                    throw StoreError.journalOutOfStep(
                        session: commit.session,
                        detail: "the journal continues at change \(next), not at change \(first.seq)")
                }
                try db.execute(
                    sql: """
                        INSERT INTO journal_change(session, seq, kind, payload, first_row, row_count)
                        VALUES (?, ?, 'batch', ?, NULL, ?)
                        """,
                    arguments: [id, first.seq, Data(JournalPacking.pack(commit.entries)), commit.entries.count])
            }
            switch commit.closing {
            case nil: break
            case .finish(let workout):
                if !commit.alreadyCompact { try Self.compactChunks(db, workout: row, id: commit.session, writer: &writer) }
                _ = try insertWorkout(db, workout, recordingRow: row)
                try Self.deleteJournal(db, id: id)
            case .discard:
                try db.execute(sql: "DELETE FROM sample_chunk WHERE workout_id = ?", arguments: [row])
                try db.execute(sql: "DELETE FROM route_chunk WHERE workout_id = ?", arguments: [row])
                try db.execute(sql: "DELETE FROM workout WHERE id = ? AND recording = 1", arguments: [row])
                try Self.deleteJournal(db, id: id)
            }
        }
        if commit.closing != nil { reclaimSpace() }
    }

    /// The number of the next change of `session`'s journal: one past its last stored change (0 when empty). A
    /// packed row (`batch`) holds `row_count` changes from its `seq`; a row of schema 1 holds one.
    ///
    /// - Throws: `.corruptChunk` when the last row's numbers run past the largest number (a damaged file): no change
    ///   can follow it.
    static func nextJournalSeq(_ db: Database, session: UUID) throws -> Int64 {
        guard
            let last = try Row.fetchOne(
                db, sql: "SELECT seq, kind, row_count FROM journal_change WHERE session = ? ORDER BY seq DESC LIMIT 1",
                arguments: [session.uuidString])
        else { return 0 }
        let seq: Int64 = last["seq"]
        let kind: String = last["kind"]
        let count: Int64 = kind == "batch" ? (last["row_count"] ?? 1) : 1
        let (next, overflow) = seq.addingReportingOverflow(count)
        guard !overflow, count >= 0 else {
            throw StoreError.corruptChunk(
                workout: session,
                detail: "journal change \(seq) holds \(count) changes, numbered past the largest change number")
        }
        return next
    }

    /// Merges a finishing recording's small chunks into full ones (`ChunkCompaction`).
    static func compactChunks(_ db: Database, workout row: Int64, id: UUID, writer: inout ChunkWriter) throws {
        let (samples, route) = try recordingChunks(db, workout: row, id: id)
        let plan = try ChunkCompaction.plan(samples: samples, route: route, workout: id)
        guard !plan.isEmpty else { return }
        let deleteSample = try db.cachedStatement(
            sql: "DELETE FROM sample_chunk WHERE workout_id = ? AND first_ordinal = ?")
        for first in plan.deletedSampleChunks { try deleteSample.execute(arguments: [row, first]) }
        let deleteRoute = try db.cachedStatement(
            sql: "DELETE FROM route_chunk WHERE workout_id = ? AND first_ordinal = ?")
        for first in plan.deletedRouteChunks { try deleteRoute.execute(arguments: [row, first]) }
        for chunk in plan.sampleChunks { try writer.write(chunk, workout: row) }
        for chunk in plan.routeChunks { try writer.write(chunk, workout: row) }
    }

    /// Every sample and route chunk of a workout row (a recording's included), any order.
    static func recordingChunks(_ db: Database, workout row: Int64, id: UUID) throws -> ([SampleChunk], [RouteChunk]) {
        var sourceCache: [String: SourceDevice] = [:]
        var samples: [SampleChunk] = []
        let chunkRows = try Row.fetchCursor(
            db,
            sql: """
                SELECT c.type, c.count, c.first_ordinal, c.last_ordinal, c.start_min, c.start_max, c.end_min,
                       c.end_max, c.value_min, c.value_max, c.data, src.name, src.manufacturer, src.model,
                       src.identifier
                FROM sample_chunk c JOIN source src ON src.id = c.source_id WHERE c.workout_id = ?
                """, arguments: [row])
        while let chunk = try chunkRows.next() {
            guard let type = QuantityType(rawValue: chunk[0]) else {
                throw StoreError.corruptChunk(workout: id, detail: "unknown quantity type \(chunk[0] as String)")
            }
            samples.append(Self.sampleChunk(chunk, type: type, source: Self.source(chunk, offset: 11, cache: &sourceCache)))
        }
        let route = try Row.fetchAll(
            db,
            sql: "SELECT count, first_ordinal, last_ordinal, date_min, date_max, data FROM route_chunk WHERE workout_id = ?",
            arguments: [row]
        ).map(Self.routeChunk)
        return (samples, route)
    }

    static func deleteJournal(_ db: Database, id: String) throws {
        try db.cachedStatement(sql: "DELETE FROM journal_change WHERE session = ?").execute(arguments: [id])
        try db.cachedStatement(sql: "DELETE FROM journal_session WHERE uuid = ?").execute(arguments: [id])
    }

    package func journalSessions() throws(StoreError) -> [JournalSessionRecord] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM journal_session ORDER BY created").map(Self.sessionRecord)
        }
    }

    static func sessionRecord(_ row: Row) throws -> JournalSessionRecord {
        JournalSessionRecord(
            id: try uuid(row["uuid"]), configuration: row["configuration"], options: row["options"],
            created: Date(timeIntervalSinceReferenceDate: row["created"]))
    }

    package func loadJournal(id: UUID?) throws(StoreError) -> LoadedJournal? {
        try read { db -> LoadedJournal? in
            let row: Row?
            if let id {
                row = try Row.fetchOne(
                    db, sql: "SELECT * FROM journal_session WHERE uuid = ?", arguments: [id.uuidString])
            } else {
                row = try Row.fetchOne(db, sql: "SELECT * FROM journal_session ORDER BY created DESC LIMIT 1")
            }
            guard let row else { return nil }
            let session = try Self.sessionRecord(row)
            let workoutRow: Int64 = row["workout_id"]
            var entries: [JournalEntry] = []
            let changes = try Row.fetchCursor(
                db,
                sql: "SELECT seq, kind, payload, row_count FROM journal_change WHERE session = ? ORDER BY seq",
                arguments: [row["uuid"] as String])
            while let change = try changes.next() { entries += try Self.journalEntries(change, session: session.id) }
            let (samples, route) = try Self.recordingChunks(db, workout: workoutRow, id: session.id)
            return LoadedJournal(session: session, entries: entries, sampleChunks: samples, routeChunks: route)
        }
    }

    package func journalEntries(id: UUID, from seq: Int64) throws(StoreError) -> [JournalEntry]? {
        try read { db -> [JournalEntry]? in
            guard
                try Row.fetchOne(db, sql: "SELECT 1 FROM journal_session WHERE uuid = ?", arguments: [id.uuidString])
                    != nil
            else { return nil }
            // From the row holding `seq` (a packed row holds the changes from its own number on) to the end.
            let changes = try Row.fetchCursor(
                db,
                sql: """
                    SELECT seq, kind, payload, row_count FROM journal_change WHERE session = ?1 AND seq >= coalesce(
                        (SELECT max(seq) FROM journal_change WHERE session = ?1 AND seq <= ?2), ?2)
                    ORDER BY seq
                    """, arguments: [id.uuidString, seq])
            var entries: [JournalEntry] = []
            while let change = try changes.next() {
                entries += try Self.journalEntries(change, session: id).lazy.filter { $0.seq >= seq }
            }
            return entries
        }
    }

    /// The changes of one `journal_change` row (seq, kind, payload, row_count): a packed row's, unpacked, or a
    /// schema-1 row's one.
    static func journalEntries(_ change: Row, session: UUID) throws -> [JournalEntry] {
        let kind: String = change["kind"]
        let seq: Int64 = change["seq"]
        if kind == "batch" {
            let packed: Data = change["payload"] ?? Data()
            let unpacked: [JournalEntry]
            do {
                unpacked = try JournalPacking.unpack([UInt8](packed), firstSeq: seq)
            } catch {
                throw StoreError.corruptChunk(workout: session, detail: "journal change \(seq): \(error)")
            }
            // The commit's continuity check numbers on from `row_count`: a row that holds another count
            // would refuse every later commit as out of step, so it is damage.
            if let rowCount: Int64 = change["row_count"], rowCount != Int64(unpacked.count) {
                throw StoreError.corruptChunk(
                    workout: session,
                    detail: "journal change \(seq) holds \(unpacked.count) changes but says \(rowCount)")
            }
            return unpacked
        }
        // Schema-1 rows: one change each; a batch of samples or route points names its count.
        return [
            JournalEntry(
                seq: seq, kind: JournalEntry.Kind(rawValue: kind) ?? .change, count: change["row_count"] ?? 0,
                payload: change["payload"])
        ]
    }
}

/// Writes chunks of one workout row through prepared statements: insert, or replace the chunk with
/// the same (workout, first ordinal).
struct ChunkWriter {
    let db: Database
    var sources: [SourceDevice: Int64] = [:]

    init(_ db: Database) throws { self.db = db }

    /// The row id of `source`, inserted on first use.
    mutating func sourceID(_ source: SourceDevice) throws -> Int64 {
        if let id = sources[source] { return id }
        let arguments: StatementArguments = [source.name, source.manufacturer, source.model, source.identifier]
        try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO source(name, manufacturer, model, identifier) VALUES (?, ?, ?, ?)"
        ).execute(arguments: arguments)
        let id =
            try Int64.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT id FROM source WHERE name = ? AND ifnull(manufacturer, '') = ifnull(?, '')
                        AND ifnull(model, '') = ifnull(?, '') AND ifnull(identifier, '') = ifnull(?, '')
                        """), arguments: arguments) ?? 0
        sources[source] = id
        return id
    }

    mutating func write(_ chunk: SampleChunk, workout: Int64) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO sample_chunk(workout_id, type, source_id, first_ordinal, last_ordinal, count, start_min,
                                         start_max, end_min, end_max, value_min, value_max, data)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(workout_id, first_ordinal) DO UPDATE SET
                    type = excluded.type, source_id = excluded.source_id, last_ordinal = excluded.last_ordinal,
                    count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
                    end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
                    value_max = excluded.value_max, data = excluded.data
                """)
        try statement.execute(arguments: [
            workout, chunk.type.rawValue, try sourceID(chunk.source), chunk.firstOrdinal, chunk.lastOrdinal,
            chunk.count, chunk.startMin, chunk.startMax, chunk.endMin, chunk.endMax, chunk.valueMin, chunk.valueMax,
            Data(chunk.payload),
        ])
    }

    mutating func write(_ chunk: RouteChunk, workout: Int64) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO route_chunk(workout_id, first_ordinal, last_ordinal, count, date_min, date_max, data)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(workout_id, first_ordinal) DO UPDATE SET
                    last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
                    date_max = excluded.date_max, data = excluded.data
                """)
        try statement.execute(arguments: [
            workout, chunk.firstOrdinal, chunk.lastOrdinal, chunk.count, chunk.dateMin, chunk.dateMax,
            Data(chunk.payload),
        ])
    }
}

/// Schema v1 (a row per sample and per route point) to chunks, inside the v2 migration's transaction.
enum ChunkMigration {
    static func run(_ db: Database) throws {
        let workouts = try Row.fetchAll(db, sql: "SELECT id, uuid FROM workout ORDER BY id")
        var writer = try ChunkWriter(db)
        var convertedSamples = 0
        var convertedPoints = 0
        for workout in workouts {
            let row: Int64 = workout["id"]
            let name: String = workout["uuid"]
            var samples: [QuantitySample] = []
            var sources: [String: SourceDevice] = [:]
            let cursor = try Row.fetchCursor(
                db,
                sql: """
                    SELECT s.type, s.start, s."end", s.value, s.unit, s.canonical, s.metadata,
                           src.name, src.manufacturer, src.model, src.identifier, s.id
                    FROM sample s JOIN source src ON src.id = s.source_id
                    WHERE s.workout_id = ? ORDER BY s.id
                    """, arguments: [row])
            while let sampleRow = try cursor.next() {
                let sample: QuantitySample?
                do {
                    sample = try SQLiteBackend.decodeSample(sampleRow, offset: 0, sources: &sources)
                } catch {
                    throw ChunkMigrationError(
                        "sample \(sampleRow[11] as Int64) of workout \(name) does not read (\(error))")
                }
                guard let sample else {
                    throw ChunkMigrationError(
                        "sample \(sampleRow[11] as Int64) of workout \(name) has an unknown type '\(sampleRow[0] as String)'")
                }
                samples.append(sample)
            }
            convertedSamples += samples.count
            for chunk in Series.chunks(samples, firstOrdinal: 0) { try writer.write(chunk, workout: row) }
            let points = try Row.fetchAll(
                db, sql: "SELECT * FROM route_point WHERE workout_id = ? ORDER BY rowid", arguments: [row]
            ).map(SQLiteBackend.decodeRoutePoint)
            convertedPoints += points.count
            for chunk in Series.routeChunks(points, firstOrdinal: 0) { try writer.write(chunk, workout: row) }
        }
        // Rows the joins above did not reach (a sample of no workout or of no source, a route point of
        // no workout; none are written by v1 code) would be lost silently: refuse instead.
        let samples = try Int.fetchOne(db, sql: "SELECT count(*) FROM sample") ?? 0
        if samples != convertedSamples {
            throw ChunkMigrationError("\(samples - convertedSamples) samples belong to no workout or to no source")
        }
        let points = try Int.fetchOne(db, sql: "SELECT count(*) FROM route_point") ?? 0
        if points != convertedPoints {
            throw ChunkMigrationError("\(points - convertedPoints) route points belong to no workout")
        }
    }
}

struct ChunkMigrationError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
