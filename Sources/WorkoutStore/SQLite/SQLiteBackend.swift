import Foundation
import GRDB
import GRDBSQLite
import Synchronization
import WorkoutEngine
import WorkoutModel

/// The SQLite backend of `WorkoutStore`: one file in WAL mode (<doc:SavingRecordingQuerying#Saving>), samples and route
/// points in chunks (docs/storage-chunks.md). Thread-safe; reads run concurrently with the single
/// writer; every method is one transaction.
package final class SQLiteBackend: StoreBackend {
    /// The store file.
    package let path: String
    package var location: String { path }
    let pool: DatabasePool
    /// The bulk loads under way (`beginBulkLoad`).
    let bulk = Mutex(BulkLoadState())

    /// Opens (creating when missing, migrating an older schema in place) the store at `path`.
    ///
    /// This is the one place where the store file is created and opened. An existing file is checked
    /// read-only before anything is written: not SQLite, truncated, written by a newer schema,
    /// read-only or locked each throw a `StoreError` and leave it as it was. A migration that fails
    /// rolls back and leaves the file as it was (`.migrationFailed`).
    /// - Parameters:
    ///   - busyTimeout: how long to wait for another program's lock before `.locked`.
    ///   - statementTimeout: the longest one statement may run, seconds (0: no limit): past it SQLite interrupts
    ///     the statement and the call throws `.timedOut` (nothing it would have written is kept).
    package init(path: String, busyTimeout: TimeInterval = 2, statementTimeout: TimeInterval = 0) throws(StoreError) {
        self.path = path
        let found = try Self.preflight(path: path, busyTimeout: busyTimeout)
        do {
            if let found, found > 0, found < Schema.version {
                // An older schema: migrated through a plain connection, in one transaction, before the
                // pool opens (the pool's own set-up writes to the file; a failed migration must not).
                var configuration = Configuration()
                configuration.busyMode = .timeout(busyTimeout)
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                defer { try? queue.close() }
                try Schema.migrator(path: path).migrate(queue)
            }
            if ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.intValue ?? 0 == 0 {
                // A new file: 1 KiB pages (chunks are read whole, and the half-empty last page of each
                // b-tree and chunk costs less) and incremental auto-vacuum (`reclaimSpace`), both
                // fixed when the file is created, before WAL mode.
                let creator = try DatabaseQueue(path: path)
                try creator.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA page_size = 1024")
                    try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                    try db.execute(sql: "PRAGMA journal_mode = WAL")
                }
                try creator.close()
            }
            var configuration = Configuration()
            configuration.busyMode = .timeout(busyTimeout)
            configuration.prepareDatabase { db in
                // The time limit (when there is one) and the caller's cancellation (`StoreCancellation`).
                StatementWatchdog.install(on: db.sqliteConnection, limit: statementTimeout)
                // WAL + NORMAL: durable at each checkpoint, no fsync per commit; memory-mapped reads
                // share the OS page cache across the pool's connections.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                if !db.configuration.readonly {
                    // Checkpoint (and fsync) every 4 MiB of WAL, as with SQLite's default on 4 KiB pages.
                    try db.execute(sql: "PRAGMA wal_autocheckpoint = 4096")
                    // Statement and savepoint journals in memory: an import saves each workout in a savepoint
                    // (`saveEach`), whose journal of the pages it changes went to a temporary file past 64 KiB
                    // (55,168 of the 76,113 pwrite64 of a 31 MB Apple Health export's import). The writer's
                    // temporary tables and sorts are small; readers keep the default.
                    try db.execute(sql: "PRAGMA temp_store = MEMORY")
                    // New files give freed pages back (`reclaimSpace`): a recording's journal and its
                    // rewritten chunk tails leave free pages behind. No effect on an existing file.
                    try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                    // The writer's page cache: 16 MiB, the readers' size, instead of SQLite's 2 MB. An import puts each
                    // statistics row into the table and six indexes, four of them wide and ordered by value, so the
                    // rows land all over those b-trees, and with 2 MB of 1 KiB pages the writer read the same pages
                    // again and again (a 220 MB Apple Health export: its statistics and their indexes are 15 MiB;
                    // system time 0.71-1.03 s → 0.43-0.57 s). One connection; 32 MiB was no better there and costs
                    // 13.5 MiB more resident memory.
                    try db.execute(sql: "PRAGMA cache_size = -16384")
                }
                if db.configuration.readonly {
                    // Readers only: mapped pages count as resident memory, and the writer's bulk
                    // moves would map the whole file; the writer keeps SQLite's bounded page cache.
                    try db.execute(sql: "PRAGMA mmap_size = 268435456")
                    try db.execute(sql: "PRAGMA cache_size = -16384")
                }
            }
            let pool = try DatabasePool(path: path, configuration: configuration)
            try Schema.migrator(path: path).migrate(pool)
            try pool.write { db in
                if try Int.fetchOne(db, sql: "PRAGMA user_version") != Schema.version {
                    try db.execute(sql: "PRAGMA user_version = \(Schema.version)")
                }
                // A bulk load cut short (the process killed) left its indexes dropped.
                try Self.repairIndexesAtOpen(db)
            }
            self.pool = pool
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    /// Runs one read-only statement on a reader connection, as the store's own queries run (for the tests of the
    /// statement time limit: a statement that would run for minutes).
    package func runReadStatement(_ sql: String) throws(StoreError) {
        try read { db in try db.execute(sql: sql) }
    }

    /// Checks an existing file without writing to it; creates the folder for a new one.
    /// Returns the schema version of an existing store (0 for an empty file), nil for a new file.
    private static func preflight(path: String, busyTimeout: TimeInterval) throws(StoreError) -> Int? {
        let files = FileManager.default
        let folder = (path as NSString).deletingLastPathComponent
        guard files.fileExists(atPath: path) else {
            // A new store: folder 0700, file 0600 (its WAL and shared-memory files take the file's mode).
            try StoreFiles.createPrivate(path: path)
            return nil
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .readOnly(path: path) }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        try? handle.close()
        if header.isEmpty { return 0 }  // SQLite treats an empty file as a new database
        guard header.count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw .notADatabase(path: path)
        }
        let bytes = [UInt8](header)
        func bigEndian(_ offset: Int, _ count: Int) -> UInt64 {
            bytes[offset..<(offset + count)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let rawPageSize = bigEndian(16, 2)
        let pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        let pageCount = bigEndian(28, 4)
        let size = ((try? files.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.uint64Value ?? 0
        // With a write-ahead log beside it the file may be shorter than its header says (a checkpoint cut short
        // by the process ending: the pages are still in the log, and SQLite finishes the checkpoint on open).
        let walSize = ((try? files.attributesOfItem(atPath: path + "-wal")[.size]) as? NSNumber)?.uint64Value ?? 0
        if bigEndian(24, 4) == bigEndian(92, 4), pageCount > 0, size < pageCount * pageSize, walSize == 0 {
            throw .corrupt(path: path, detail: "truncated: \(size) of \(pageCount * pageSize) bytes")
        }
        guard files.isWritableFile(atPath: path), folder.isEmpty || files.isWritableFile(atPath: folder) else {
            throw .readOnly(path: path)
        }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(busyTimeout)
            let probe = try DatabaseQueue(path: path, configuration: configuration)
            let (version, tables) = try probe.read { db -> (Int, [String]) in
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
                return (try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0, tables)
            }
            try probe.close()
            if version > Schema.version {
                throw StoreError.newerSchema(path: path, found: version, supported: Schema.version)
            }
            // A database of another program: tables, but not ours. Never convert it.
            if version == 0, !tables.isEmpty {
                throw StoreError.notAWorkoutStore(path: path)
            }
            return version
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    // MARK: transactions

    /// Throws `StoreError.timedOut` when the store work of the calling thread is cancelled (`StoreCancellation`).
    static func checkCancellation() throws(StoreError) {
        if StoreCancellation.current?.isCancelled == true { throw .timedOut }
    }

    /// Runs `body` in a write transaction; `StoreError.timedOut`, nothing run, when the caller's work is cancelled
    /// (`StoreCancellation`) before it starts or while it waits for the writer, since short statements end before
    /// the progress handler (every 1,000 steps) would notice.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try Self.checkCancellation()
        do {
            return try pool.write { db in
                try Self.checkCancellation()
                return try body(db)
            }
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    /// Returns free pages to the file system (files created with incremental auto-vacuum); best
    /// effort, after a transaction that freed many pages.
    func reclaimSpace() {
        try? pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA incremental_vacuum") }
    }

    /// Runs `body` in a read transaction; `StoreError.timedOut`, nothing run, when the caller's work is cancelled.
    /// With `transaction` false, `body` (one statement, which SQLite reads from one snapshot by itself) runs without
    /// BEGIN and COMMIT around it.
    func read<T>(transaction: Bool = true, _ body: (Database) throws -> T) throws(StoreError) -> T {
        try Self.checkCancellation()
        do {
            let work = { (db: Database) throws -> T in
                try Self.checkCancellation()
                return try body(db)
            }
            return try transaction ? pool.read(work) : pool.unsafeRead(work)
        } catch {
            throw StoreError.from(error, path: path)
        }
    }
    func insertRecordingRow(_ db: Database, id: UUID, configuration: WorkoutConfiguration, start: Date) throws -> Int64
    {
        try requireFree(db, id)
        try db.cachedStatement(
            sql: """
                INSERT INTO workout(uuid, activity_type, start, "end", duration, elapsed, configuration, metadata,
                                    counters, anchor, recording) VALUES (?, ?, ?, ?, 0, 0, ?, '{}', '{}', 0, 1)
                """
        ).execute(
            arguments: [
                id.uuidString, configuration.activityType.rawValue, start.timeIntervalSinceReferenceDate,
                start.timeIntervalSinceReferenceDate, JSON.encode(configuration),
            ])
        return db.lastInsertedRowID
    }

    private func requireFree(_ db: Database, _ id: UUID) throws {
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM workout WHERE uuid = ?")
        if try Bool.fetchOne(statement, arguments: [id.uuidString]) == true {
            throw StoreError.workoutExists(id)
        }
    }

    /// Inserts the workout, activities, statistics and events; returns the workout's row id. With
    /// `recordingRow`, completes that recording row instead of inserting one.
    func insertWorkout(_ db: Database, _ workout: Workout, recordingRow: Int64? = nil) throws -> Int64 {
        if recordingRow == nil { try requireFree(db, workout.id) }
        // Saved again after a delete: it is an addition now, no longer a deletion. (Cached statements: an import saves
        // thousands of workouts, and preparing each statement again cost more than running it.)
        try db.cachedStatement(sql: "DELETE FROM deleted_object WHERE kind = 'workout' AND uuid = ?")
            .execute(arguments: [workout.id.uuidString])
        let anchor = try nextAnchor(db)
        let values: [(any DatabaseValueConvertible)?] = [
            workout.id.uuidString, workout.activityType.rawValue, workout.start.timeIntervalSinceReferenceDate,
            workout.end.timeIntervalSinceReferenceDate, workout.duration, workout.elapsed,
            JSON.encode(workout.configuration), JSON.encode(workout.metadata), JSON.encode(workout.counters),
            anchor,
        ]
        let workoutRow: Int64
        if let recordingRow {
            try db.cachedStatement(
                sql: """
                    UPDATE workout SET uuid = ?, activity_type = ?, start = ?, "end" = ?, duration = ?, elapsed = ?,
                                       configuration = ?, metadata = ?, counters = ?, anchor = ?, recording = 0
                    WHERE id = ?
                    """
            ).execute(arguments: StatementArguments(values + [recordingRow]))
            workoutRow = recordingRow
        } else {
            try db.cachedStatement(
                sql: """
                    INSERT INTO workout(uuid, activity_type, start, "end", duration, elapsed, configuration, metadata,
                                        counters, anchor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: StatementArguments(values))
            workoutRow = db.lastInsertedRowID
        }
        let owner = StatisticOwner(
            workout: workoutRow, start: workout.start.timeIntervalSinceReferenceDate, uuid: workout.id.uuidString)
        try insertStatistics(db, owner, activity: nil, type: workout.activityType, workout.statistics)
        // A workout without activities gets one implicit activity spanning it, so that activity
        // predicates ("a cycling activity with …") match single-sport workouts too.
        let activities: [(WorkoutActivity, Bool)] =
            workout.activities.isEmpty
            ? [
                (
                    WorkoutActivity(
                        id: workout.id, configuration: workout.configuration, start: workout.start, end: workout.end,
                        duration: workout.duration, statistics: workout.statistics), true
                )
            ]
            : workout.activities.map { ($0, false) }
        let insertActivity = try db.cachedStatement(
            sql: """
                INSERT INTO activity(uuid, workout_id, position, implicit, activity_type, start, "end", duration,
                                     configuration, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for (position, (activity, implicit)) in activities.enumerated() {
            try insertActivity.execute(
                arguments: [
                    activity.id.uuidString, workoutRow, position, implicit,
                    activity.configuration.activityType.rawValue,
                    activity.start.timeIntervalSinceReferenceDate, activity.end?.timeIntervalSinceReferenceDate,
                    activity.duration, JSON.encode(activity.configuration), JSON.encode(activity.metadata),
                ])
            try insertStatistics(
                db, owner, activity: db.lastInsertedRowID, type: activity.configuration.activityType,
                activity.statistics)
        }
        let insertEvent = try db.cachedStatement(
            sql: "INSERT INTO event(workout_id, position, type, start, duration, metadata) VALUES (?, ?, ?, ?, ?, ?)")
        for (position, event) in workout.events.enumerated() {
            try insertEvent.execute(
                arguments: [
                    workoutRow, position, event.type.rawValue, event.start.timeIntervalSinceReferenceDate,
                    event.duration, JSON.encode(event.metadata),
                ])
        }
        return workoutRow
    }

    /// The workout a statistics row belongs to.
    private struct StatisticOwner {
        var workout: Int64
        var start: Double
        var uuid: String
    }

    private func insertStatistics(
        _ db: Database, _ owner: StatisticOwner, activity: Int64?, type: WorkoutActivityType,
        _ statistics: [QuantityType: Statistics]
    ) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO statistic(workout_id, activity_id, activity_type, quantity_type, minimum, maximum, average,
                                      sum, most_recent, most_recent_date, start, "end", duration, covered, sample_count,
                                      workout_start, workout_uuid)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        // In the types' order (rows of one owner in a stable order), bound directly: an import writes hundreds of
        // thousands of these rows (`DirectInsert`).
        for quantityType in QuantityType.allCases {
            guard let s = statistics[quantityType] else { continue }
            var row = DirectInsert(statement)
            row.bind(owner.workout)
            row.bind(activity)
            row.bind(type.rawValue)
            row.bind(quantityType.rawValue)
            row.bind(s.minimum?.value)
            row.bind(s.maximum?.value)
            row.bind(s.average?.value)
            row.bind(s.sum?.value)
            row.bind(s.mostRecent?.value)
            row.bind(s.mostRecentDate?.timeIntervalSinceReferenceDate)
            row.bind(s.start.timeIntervalSinceReferenceDate)
            row.bind(s.end.timeIntervalSinceReferenceDate)
            row.bind(s.duration)
            row.bind(s.coveredTime)
            row.bind(Int64(s.sampleCount))
            row.bind(owner.start)
            row.bind(owner.uuid)
            try row.run()
        }
    }

    static func decodeRoutePoint(_ row: Row) -> RoutePoint {
        RoutePoint(
            date: Date(timeIntervalSinceReferenceDate: row["date"]), latitude: row["latitude"],
            longitude: row["longitude"], altitude: row["altitude"], speed: row["speed"], course: row["course"],
            horizontalAccuracy: row["horizontal_accuracy"])
    }

    func nextAnchor(_ db: Database) throws -> Int64 {
        try db.cachedStatement(sql: "UPDATE meta SET value = value + 1 WHERE key = 'anchor'").execute()
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'anchor'")) ?? 0
    }
    static func decodeWorkout(_ db: Database, _ row: Row) throws -> Workout {
        let workoutRow: Int64 = row["id"]
        let statistics = try Row.fetchAll(
            db, sql: "SELECT * FROM statistic WHERE workout_id = ?", arguments: [workoutRow])
        var byActivity: [Int64?: [QuantityType: Statistics]] = [:]
        for statistic in statistics {
            guard let type = QuantityType(rawValue: statistic["quantity_type"]) else { continue }
            byActivity[statistic["activity_id"] as Int64?, default: [:]][type] = decodeStatistics(statistic, type: type)
        }
        let activities = try Row.fetchAll(
            db, sql: "SELECT * FROM activity WHERE workout_id = ? AND implicit = 0 ORDER BY position",
            arguments: [workoutRow]
        ).map { activity -> WorkoutActivity in
            let end: Double? = activity["end"]
            return WorkoutActivity(
                id: try uuid(activity["uuid"]),
                configuration: try JSON.decode(WorkoutConfiguration.self, activity["configuration"]),
                start: Date(timeIntervalSinceReferenceDate: activity["start"]),
                end: end.map { Date(timeIntervalSinceReferenceDate: $0) },
                metadata: try JSON.decode(Metadata.self, activity["metadata"]), duration: activity["duration"],
                statistics: byActivity[activity["id"] as Int64?] ?? [:])
        }
        let events = try Row.fetchAll(
            db, sql: "SELECT * FROM event WHERE workout_id = ? ORDER BY position", arguments: [workoutRow]
        ).compactMap { event -> WorkoutEvent? in
            guard let type = WorkoutEventType(rawValue: event["type"]) else { return nil }
            return WorkoutEvent(
                type: type, start: Date(timeIntervalSinceReferenceDate: event["start"]), duration: event["duration"],
                metadata: try JSON.decode(Metadata.self, event["metadata"]))
        }
        return Workout(
            id: try uuid(row["uuid"]), configuration: try JSON.decode(WorkoutConfiguration.self, row["configuration"]),
            start: Date(timeIntervalSinceReferenceDate: row["start"]),
            end: Date(timeIntervalSinceReferenceDate: row["end"]), duration: row["duration"], activities: activities,
            events: events, metadata: try JSON.decode(Metadata.self, row["metadata"]),
            statistics: byActivity[nil] ?? [:], counters: try JSON.decode(IngestCounters.self, row["counters"]))
    }

    static func decodeStatistics(_ row: Row, type: QuantityType) -> Statistics {
        let unit = type.canonicalUnit
        func quantity(_ column: String) -> Quantity? { (row[column] as Double?).map { Quantity($0, unit) } }
        let recentDate: Double? = row["most_recent_date"]
        return Statistics(
            quantityType: type, start: Date(timeIntervalSinceReferenceDate: row["start"]),
            end: Date(timeIntervalSinceReferenceDate: row["end"]), minimum: quantity("minimum"),
            maximum: quantity("maximum"), average: quantity("average"), mostRecent: quantity("most_recent"),
            mostRecentDate: recentDate.map { Date(timeIntervalSinceReferenceDate: $0) }, sum: quantity("sum"),
            duration: row["duration"], coveredTime: row["covered"], sampleCount: row["sample_count"])
    }

    /// Parses a stored id. The canonical form takes the fast parser (`uuidBits`): Foundation's costs
    /// over a microsecond per id on Linux, which dominates large results.
    static func uuid(_ text: String) throws -> UUID {
        var text = text
        let fast = text.withUTF8 { uuidBits($0) }.map { uuid(high: $0.0, low: $0.1) }
        guard let id = fast ?? UUID(uuidString: text) else {
            throw StoreError.database(path: "", detail: "bad uuid \(text)")
        }
        return id
    }

    /// The UUID whose 16 bytes are `high` then `low`, big-endian (the inverse of `uuidBits`).
    static func uuid(high: UInt64, low: UInt64) -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            for i in 0..<8 {
                raw[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
                raw[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
            }
        }
        return UUID(uuid: bytes)
    }
}

extension SQLiteBackend {
    /// Decodes (type, start, end, value, unit, canonical, metadata, name, manufacturer, model, identifier).
    static func decodeSample(_ row: Row, offset: Int, sources: inout [String: SourceDevice]) throws -> QuantitySample? {
        guard let type = QuantityType(rawValue: row[offset]) else { return nil }
        let unitSymbol: String = row[offset + 4]
        let quantity: Quantity
        if let unit = QuantityUnit(symbol: unitSymbol) {
            quantity = Quantity(row[offset + 3], unit)
        } else {
            quantity = Quantity(row[offset + 5], type.canonicalUnit)
        }
        let name: String = row[offset + 7]
        let manufacturer: String? = row[offset + 8]
        let model: String? = row[offset + 9]
        let identifier: String? = row[offset + 10]
        let key = [name, manufacturer ?? "\u{0}", model ?? "\u{0}", identifier ?? "\u{0}"].joined(separator: "\u{1}")
        let source: SourceDevice
        if let known = sources[key] {
            source = known
        } else {
            source = SourceDevice(name: name, manufacturer: manufacturer, model: model, identifier: identifier)
            sources[key] = source
        }
        let metadataText: String? = row[offset + 6]
        return QuantitySample(
            type: type, quantity: quantity, start: Date(timeIntervalSinceReferenceDate: row[offset + 1]),
            end: Date(timeIntervalSinceReferenceDate: row[offset + 2]), source: source,
            metadata: try metadataText.map { try JSON.decode(Metadata.self, $0) } ?? [:])
    }
    /// Answers a query made only of activity predicates from the statistics index alone: each
    /// predicate is one covering-index range scan giving (workout id, workout start); the sets are
    /// intersected, ordered and limited here rather than by SQLite's slower temporary B-trees.
    static func activityOnlyIDs(
        _ db: Database, _ matches: [(String, [any DatabaseValueConvertible])], _ query: WorkoutQuery
    ) throws -> [UUID] {
        /// A match: the workout's start and its id as a 128-bit number (high, low), whose order is
        /// the order of the upper-case text ids the general path sorts by.
        struct Match: Comparable {
            var start: Double
            var high: UInt64
            var low: UInt64
            static func < (a: Match, b: Match) -> Bool {
                a.start != b.start ? a.start < b.start : a.high != b.high ? a.high < b.high : a.low < b.low
            }
        }
        var result: [Match]?
        for (condition, values) in matches {
            let statement = try db.makeStatement(
                sql: "SELECT s0.workout_uuid, s0.workout_start FROM statistic s0 WHERE \(condition)")
            try statement.setArguments(StatementArguments(values))
            let handle = statement.sqliteStatement
            var found: [Match] = []
            var code = sqlite3_step(handle)
            while code == SQLITE_ROW {
                let count = Int(sqlite3_column_bytes(handle, 0))
                if let text = sqlite3_column_text(handle, 0),
                    let (high, low) = uuidBits(UnsafeBufferPointer(start: text, count: count))
                {
                    found.append(Match(start: sqlite3_column_double(handle, 1), high: high, low: low))
                }
                code = sqlite3_step(handle)
            }
            sqlite3_reset(handle)
            guard code == SQLITE_DONE else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            // A workout with several matching activities appears once.
            found.sort()
            var unique: [Match] = []
            unique.reserveCapacity(found.count)
            for match in found where unique.last != match { unique.append(match) }
            if let previous = result {
                // Both sorted: keep the workouts every predicate matched.
                var kept: [Match] = []
                var i = 0
                var j = 0
                while i < previous.count, j < unique.count {
                    if previous[i] == unique[j] {
                        kept.append(previous[i])
                        i += 1
                        j += 1
                    } else if previous[i] < unique[j] {
                        i += 1
                    } else {
                        j += 1
                    }
                }
                result = kept
            } else {
                result = unique
            }
        }
        var ordered = result ?? []
        if !query.ascending { ordered.reverse() }
        if let limit = query.limit, ordered.count > max(0, limit) { ordered.removeLast(ordered.count - max(0, limit)) }
        return ordered.map { uuid(high: $0.high, low: $0.low) }
    }

    /// The canonical 36-character text id as a 128-bit number (high, low); nil for anything else.
    static func uuidBits(_ text: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard text.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for position in 0..<36 {
            let character = text[position]
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt64
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(character - UInt8(ascii: "0"))
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = UInt64(character - UInt8(ascii: "A") + 10)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(character - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if digits < 16 { high = high << 4 | nibble } else { low = low << 4 | nibble }
            digits += 1
        }
        return (high, low)
    }


    static func workoutSQL(_ query: WorkoutQuery, columns: String) throws(StoreError) -> (String, StatementArguments) {
        var conditions: [String] = ["w.recording = 0"]
        var arguments: [any DatabaseValueConvertible] = []
        if let type = query.activityType {
            conditions.append("w.activity_type = ?")
            arguments.append(type.rawValue)
        }
        if let minimum = query.minimumDuration {
            conditions.append("w.duration >= ?")
            arguments.append(minimum)
        }
        if let maximum = query.maximumDuration {
            conditions.append("w.duration <= ?")
            arguments.append(maximum)
        }
        for (condition, values) in query.dates.conditions(start: "w.start", end: "w.\"end\"") {
            conditions.append(condition)
            arguments += values
        }
        for predicate in query.activities {
            let (condition, values) = try activitySQL(predicate)
            conditions.append(condition)
            arguments += values
        }
        var sql = "SELECT \(columns) FROM workout w"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += query.ascending ? " ORDER BY w.start, w.uuid" : " ORDER BY w.start DESC, w.uuid DESC"
        if let limit = query.limit {
            sql += " LIMIT ?"
            arguments.append(max(0, limit))
        }
        return (sql, StatementArguments(arguments))
    }

    /// "w.id IN (workouts with an activity matching every condition)".
    static func activitySQL(
        _ predicate: ActivityPredicate
    ) throws(StoreError) -> (String, [any DatabaseValueConvertible]) {
        guard !predicate.conditions.isEmpty else {
            guard let type = predicate.activityType else { return ("1", []) }
            return ("w.id IN (SELECT workout_id FROM activity WHERE activity_type = ?)", [type.rawValue])
        }
        let (condition, arguments) = try matchSQL(predicate)
        return ("w.id IN (SELECT s0.workout_id FROM statistic s0 WHERE \(condition))", arguments)
    }

    /// The WHERE clause on statistics row `s0` for an activity matching every condition of a predicate
    /// with at least one condition. Column names and operators come from enums; values are bound.
    static func matchSQL(_ predicate: ActivityPredicate) throws(StoreError) -> (String, [any DatabaseValueConvertible])
    {
        guard let first = predicate.conditions.first else {
            throw .invalidQuery("an activity predicate without conditions")
        }
        func value(_ condition: StatisticCondition) throws(StoreError) -> Double {
            guard let value = condition.value.doubleValue(for: condition.quantityType.canonicalUnit), value.isFinite
            else {
                throw .invalidQuery(
                    "\(condition.quantityType.rawValue) compared with \(condition.value): needs a finite value in "
                        + "a \(condition.quantityType.canonicalUnit.dimension.rawValue) unit")
            }
            return value
        }
        var arguments: [any DatabaseValueConvertible] = [first.quantityType.rawValue]
        var sql = "s0.activity_id IS NOT NULL AND s0.quantity_type = ?"
        if let type = predicate.activityType {
            sql += " AND s0.activity_type = ?"
            arguments.append(type.rawValue)
        }
        sql += " AND s0.\(first.aggregate.column) \(first.comparison.rawValue) ?"
        arguments.append(try value(first))
        for (index, condition) in predicate.conditions.dropFirst().enumerated() {
            let alias = "s\(index + 1)"
            sql += """
                 AND EXISTS (SELECT 1 FROM statistic \(alias) WHERE \(alias).activity_id = s0.activity_id
                AND \(alias).quantity_type = ? AND \(alias).\(condition.aggregate.column) \(condition.comparison.rawValue) ?)
                """
            arguments.append(condition.quantityType.rawValue)
            arguments.append(try value(condition))
        }
        return (sql, arguments)
    }
    // MARK: anchored

    /// Workouts added and deleted since `anchor` (everything when nil), oldest change first, at
    /// most `limit` changes; the returned anchor continues from the last change included.
    package func anchoredWorkouts(since anchor: QueryAnchor?, limit: Int?) throws(StoreError) -> AnchoredWorkouts {
        let from = anchor?.value ?? 0
        let cap = limit.map { max(0, $0) } ?? Int.max
        return try read { db in
            let limitSQL = cap == Int.max ? "" : " LIMIT \(cap)"
            let added = try Row.fetchAll(
                db, sql: "SELECT * FROM workout WHERE anchor > ? AND recording = 0 ORDER BY anchor\(limitSQL)",
                arguments: [from])
            let deleted = try Row.fetchAll(
                db, sql: "SELECT anchor, uuid FROM deleted_object WHERE anchor > ? ORDER BY anchor\(limitSQL)",
                arguments: [from])
            var merged: [(Int64, Row, Bool)] =
                added.map { ($0["anchor"], $0, true) } + deleted.map { ($0["anchor"], $0, false) }
            merged.sort { $0.0 < $1.0 }
            if merged.count > cap { merged.removeLast(merged.count - cap) }
            var result = AnchoredWorkouts(added: [], deleted: [], anchor: QueryAnchor(from))
            for (value, row, isAdded) in merged {
                if isAdded {
                    result.added.append(try Self.decodeWorkout(db, row))
                } else {
                    result.deleted.append(try Self.uuid(row["uuid"]))
                }
                result.anchor = QueryAnchor(value)
            }
            return result
        }
    }

    /// The anchored query as a live sequence: first what changed since `anchor`, then each later
}

extension DateRange {
    /// SQL conditions on `startColumn`/`endColumn`, with their bound values.
    func conditions(start startColumn: String, end endColumn: String) -> [(String, [any DatabaseValueConvertible])] {
        var result: [(String, [any DatabaseValueConvertible])] = []
        let from = start?.timeIntervalSinceReferenceDate
        let to = end?.timeIntervalSinceReferenceDate
        if options.contains(.strictStartDate) {
            if let from { result.append(("\(startColumn) >= ?", [from])) }
            if let to { result.append(("\(startColumn) < ?", [to])) }
        }
        if options.contains(.strictEndDate) {
            if let from { result.append(("\(endColumn) > ?", [from])) }
            if let to { result.append(("\(endColumn) <= ?", [to])) }
        }
        if options.isEmpty {
            if let to { result.append(("\(startColumn) < ?", [to])) }
            if let from { result.append(("\(endColumn) >= ?", [from])) }
        }
        return result
    }
}

extension StoreError {
    /// Maps a GRDB/SQLite error on `path` to the store error a user can act on.
    static func from(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? EngineError { return .engine(error) }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_NOTADB: return .notADatabase(path: path)
            case .SQLITE_CORRUPT: return .corrupt(path: path, detail: error.message ?? "malformed")
            case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked(path: path)
            case .SQLITE_INTERRUPT: return .timedOut
            case .SQLITE_READONLY, .SQLITE_PERM: return .readOnly(path: path)
            case .SQLITE_CANTOPEN: return .cannotCreate(path: path, detail: error.message ?? "cannot open")
            default: return .database(path: path, detail: error.description)
            }
        }
        return .database(path: path, detail: String(describing: error))
    }
}
