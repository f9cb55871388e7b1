import Foundation
import GRDB
import GRDBSQLite
import Synchronization
import WorkoutEngine
import WorkoutModel

/// The embedded workout store: one SQLite file in WAL mode (DESIGN §10).
///
/// Holds finished workouts (with activities, events, samples, route and per-activity statistics),
/// the journal of sessions being recorded, and answers the queries of DESIGN §11. Thread-safe;
/// reads run concurrently with the single writer. Every save and delete is one transaction.
public final class WorkoutStore: Sendable {
    /// The store file.
    public let path: String
    let pool: DatabasePool
    let broadcaster = AsyncBroadcaster<StoreChange>()

    /// Opens (creating when missing) the store at `path`.
    ///
    /// An existing file is checked read-only before anything is written: not SQLite, truncated,
    /// written by a newer schema, read-only or locked each throw a `StoreError` and leave it as it was.
    /// - Parameter busyTimeout: how long to wait for another program's lock before `.locked`.
    public init(path: String, busyTimeout: TimeInterval = 2) throws(StoreError) {
        self.path = path
        try Self.preflight(path: path, busyTimeout: busyTimeout)
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(busyTimeout)
            configuration.prepareDatabase { db in
                // WAL + NORMAL: durable at each checkpoint, no fsync per commit; memory-mapped reads
                // share the OS page cache across the pool's connections.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                if db.configuration.readonly {
                    // Readers only: mapped pages count as resident memory, and the writer's bulk
                    // moves would map the whole file; the writer keeps SQLite's bounded page cache.
                    try db.execute(sql: "PRAGMA mmap_size = 268435456")
                    try db.execute(sql: "PRAGMA cache_size = -16384")
                }
            }
            let pool = try DatabasePool(path: path, configuration: configuration)
            try Schema.migrator.migrate(pool)
            try pool.write { db in
                if try Int.fetchOne(db, sql: "PRAGMA user_version") != Schema.version {
                    try db.execute(sql: "PRAGMA user_version = \(Schema.version)")
                }
            }
            self.pool = pool
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    /// Opens the store at `--db`, else `$WORKOUT_DB`, else the XDG default.
    public convenience init(explicitPath: String?) throws(StoreError) {
        try self.init(path: explicitPath ?? StoreLocation.defaultPath())
    }

    /// Checks an existing file without writing to it; creates the folder for a new one.
    private static func preflight(path: String, busyTimeout: TimeInterval) throws(StoreError) {
        let files = FileManager.default
        let folder = (path as NSString).deletingLastPathComponent
        guard files.fileExists(atPath: path) else {
            // A new store: folder 0700, file 0600 (its WAL and shared-memory files take the file's mode).
            try StoreFiles.createPrivate(path: path)
            return
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .readOnly(path: path) }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        try? handle.close()
        if header.isEmpty { return }  // SQLite treats an empty file as a new database
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
        if bigEndian(24, 4) == bigEndian(92, 4), pageCount > 0, size < pageCount * pageSize {
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
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    // MARK: transactions

    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.write(body)
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.read(body)
        } catch {
            throw StoreError.from(error, path: path)
        }
    }

    // MARK: saving

    /// Saves a finished workout with its samples and route in one transaction.
    ///
    /// - Throws: `.workoutExists` when a workout with the same id is already stored.
    public func save(_ workout: Workout, samples: [QuantitySample] = [], route: [RoutePoint] = []) throws(StoreError) {
        try write { db in
            let rowID = try insertWorkout(db, workout)
            var inserter = try SampleInserter(db)
            for sample in samples { try inserter.insert(sample, workout: rowID) }
            try insertRoute(db, workout: rowID, points: route)
        }
        broadcaster.publish(.added([workout.id]))
    }

    /// Inserts a workout row marked as recording (a journaled session's home); returns its row id.
    ///
    /// - Throws: `.workoutExists` when the id is taken.
    func insertRecordingRow(_ db: Database, id: UUID, configuration: WorkoutConfiguration, start: Date) throws -> Int64
    {
        try requireFree(db, id)
        try db.execute(
            sql: """
                INSERT INTO workout(uuid, activity_type, start, "end", duration, elapsed, configuration, metadata,
                                    counters, anchor, recording) VALUES (?, ?, ?, ?, 0, 0, ?, '{}', '{}', 0, 1)
                """,
            arguments: [
                id.uuidString, configuration.activityType.rawValue, start.timeIntervalSinceReferenceDate,
                start.timeIntervalSinceReferenceDate, try JSON.encode(configuration),
            ])
        return db.lastInsertedRowID
    }

    private func requireFree(_ db: Database, _ id: UUID) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM workout WHERE uuid = ?", arguments: [id.uuidString]) == true {
            throw StoreError.workoutExists(id)
        }
    }

    /// Inserts the workout, activities, statistics and events; returns the workout's row id. With
    /// `recordingRow`, completes that recording row instead of inserting one.
    func insertWorkout(_ db: Database, _ workout: Workout, recordingRow: Int64? = nil) throws -> Int64 {
        if recordingRow == nil { try requireFree(db, workout.id) }
        // Saved again after a delete: it is an addition now, no longer a deletion.
        try db.execute(
            sql: "DELETE FROM deleted_object WHERE kind = 'workout' AND uuid = ?", arguments: [workout.id.uuidString])
        let anchor = try nextAnchor(db)
        let values: [(any DatabaseValueConvertible)?] = [
            workout.id.uuidString, workout.activityType.rawValue, workout.start.timeIntervalSinceReferenceDate,
            workout.end.timeIntervalSinceReferenceDate, workout.duration, workout.elapsed,
            try JSON.encode(workout.configuration), try JSON.encode(workout.metadata),
            try JSON.encode(workout.counters), anchor,
        ]
        let workoutRow: Int64
        if let recordingRow {
            try db.execute(
                sql: """
                    UPDATE workout SET uuid = ?, activity_type = ?, start = ?, "end" = ?, duration = ?, elapsed = ?,
                                       configuration = ?, metadata = ?, counters = ?, anchor = ?, recording = 0
                    WHERE id = ?
                    """, arguments: StatementArguments(values + [recordingRow]))
            workoutRow = recordingRow
        } else {
            try db.execute(
                sql: """
                    INSERT INTO workout(uuid, activity_type, start, "end", duration, elapsed, configuration, metadata,
                                        counters, anchor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: StatementArguments(values))
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
        for (position, (activity, implicit)) in activities.enumerated() {
            try db.execute(
                sql: """
                    INSERT INTO activity(uuid, workout_id, position, implicit, activity_type, start, "end", duration,
                                         configuration, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    activity.id.uuidString, workoutRow, position, implicit,
                    activity.configuration.activityType.rawValue,
                    activity.start.timeIntervalSinceReferenceDate, activity.end?.timeIntervalSinceReferenceDate,
                    activity.duration, try JSON.encode(activity.configuration), try JSON.encode(activity.metadata),
                ])
            try insertStatistics(
                db, owner, activity: db.lastInsertedRowID, type: activity.configuration.activityType,
                activity.statistics)
        }
        for (position, event) in workout.events.enumerated() {
            try db.execute(
                sql:
                    "INSERT INTO event(workout_id, position, type, start, duration, metadata) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    workoutRow, position, event.type.rawValue, event.start.timeIntervalSinceReferenceDate,
                    event.duration, try JSON.encode(event.metadata),
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
        for quantityType in QuantityType.allCases {
            guard let s = statistics[quantityType] else { continue }
            try statement.execute(arguments: [
                owner.workout, activity, type.rawValue, quantityType.rawValue, s.minimum?.value, s.maximum?.value,
                s.average?.value, s.sum?.value, s.mostRecent?.value, s.mostRecentDate?.timeIntervalSinceReferenceDate,
                s.start.timeIntervalSinceReferenceDate, s.end.timeIntervalSinceReferenceDate, s.duration, s.coveredTime,
                s.sampleCount, owner.start, owner.uuid,
            ])
        }
    }

    /// Inserts route points for a workout row through one prepared statement with raw binds.
    func insertRoute(_ db: Database, workout: Int64, points: [RoutePoint]) throws {
        guard !points.isEmpty else { return }
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO route_point(workout_id, date, latitude, longitude, altitude, speed, course,
                                        horizontal_accuracy) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let handle = statement.sqliteStatement
        func bind(_ index: Int32, _ value: Double?) {
            if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
        }
        for point in points {
            sqlite3_bind_int64(handle, 1, workout)
            bind(2, point.date.timeIntervalSinceReferenceDate)
            bind(3, point.latitude)
            bind(4, point.longitude)
            bind(5, point.altitude)
            bind(6, point.speed)
            bind(7, point.course)
            bind(8, point.horizontalAccuracy)
            let code = sqlite3_step(handle)
            sqlite3_reset(handle)
            guard code == SQLITE_DONE else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
        }
    }

    static func decodeRoutePoint(_ row: Row) -> RoutePoint {
        RoutePoint(
            date: Date(timeIntervalSinceReferenceDate: row["date"]), latitude: row["latitude"],
            longitude: row["longitude"], altitude: row["altitude"], speed: row["speed"], course: row["course"],
            horizontalAccuracy: row["horizontal_accuracy"])
    }

    func nextAnchor(_ db: Database) throws -> Int64 {
        try db.execute(sql: "UPDATE meta SET value = value + 1 WHERE key = 'anchor'")
        return try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'anchor'") ?? 0
    }

    /// Attaches a heart-rate recovery to a saved workout (DESIGN §8): the heartRateRecoveryOneMinute
    /// sample when there is one, and the values (or the reasons they are missing) merged into the
    /// workout's metadata. The workout's anchor moves, so anchored queries report it again.
    /// Attaching again replaces the earlier recovery (sample and metadata).
    ///
    /// - Throws: `.workoutNotFound` when no finished workout has the id.
    public func attachHeartRateRecovery(_ result: HeartRateRecoveryResult, toWorkout id: UUID) throws(StoreError) {
        try write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT id, metadata FROM workout WHERE uuid = ? AND recording = 0",
                    arguments: [id.uuidString])
            else { throw StoreError.workoutNotFound(id) }
            let rowID: Int64 = row["id"]
            var metadata = try JSON.decode(Metadata.self, row["metadata"] as String)
            // Attaching again replaces what an earlier attach stored.
            for key in [
                MetadataKey.heartRateRecoveryOneMinute, MetadataKey.heartRateRecoveryTwoMinutes,
                MetadataKey.heartRateRecoveryOneMinuteUnavailable, MetadataKey.heartRateRecoveryTwoMinutesUnavailable,
            ] {
                metadata[key] = nil
            }
            try db.execute(
                sql: "DELETE FROM sample WHERE workout_id = ? AND type = ?",
                arguments: [rowID, QuantityType.heartRateRecoveryOneMinute.rawValue])
            metadata.merge(result.workoutMetadata) { _, new in new }
            if let sample = result.sample {
                var inserter = try SampleInserter(db)
                try inserter.insert(sample, workout: rowID)
            }
            try db.execute(
                sql: "UPDATE workout SET metadata = ?, anchor = ? WHERE id = ?",
                arguments: [try JSON.encode(metadata), try nextAnchor(db), rowID])
        }
        broadcaster.publish(.added([id]))
    }

    // MARK: deleting

    /// Deletes a workout and everything attached to it; anchored queries report it as deleted.
    public func delete(workout id: UUID) throws(StoreError) {
        try write { db in
            guard
                let row = try Int64.fetchOne(
                    db, sql: "SELECT id FROM workout WHERE uuid = ? AND recording = 0", arguments: [id.uuidString])
            else { throw StoreError.workoutNotFound(id) }
            try db.execute(sql: "DELETE FROM sample WHERE workout_id = ?", arguments: [row])
            try db.execute(sql: "DELETE FROM route_point WHERE workout_id = ?", arguments: [row])
            try db.execute(sql: "DELETE FROM workout WHERE id = ?", arguments: [row])
            let anchor = try nextAnchor(db)
            try db.execute(
                sql: "INSERT INTO deleted_object(anchor, kind, uuid) VALUES (?, 'workout', ?)",
                arguments: [anchor, id.uuidString])
        }
        broadcaster.publish(.deleted([id]))
    }

    // MARK: reading

    /// The stored workout with `id`, or nil.
    public func workout(id: UUID) throws(StoreError) -> Workout? {
        try read { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM workout WHERE uuid = ? AND recording = 0", arguments: [id.uuidString])
            else { return nil }
            return try Self.decodeWorkout(db, row)
        }
    }

    /// The samples saved with a workout, in time order.
    public func samples(workout id: UUID) throws(StoreError) -> [QuantitySample] {
        try samples(matching: SampleQuery(workout: id))
    }

    /// The route saved with a workout, in time order.
    public func route(workout id: UUID) throws(StoreError) -> [RoutePoint] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.* FROM route_point r JOIN workout w ON w.id = r.workout_id
                    WHERE w.uuid = ? ORDER BY r.date, r.rowid
                    """, arguments: [id.uuidString]
            ).map(Self.decodeRoutePoint)
        }
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

/// JSON for the store's text columns: sorted keys, so equal values store equal text.
/// Non-finite numbers, which the engine refuses, are still written as strings rather than making
/// a commit fail.
enum JSON {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Metadata keeps its kind: an integral double stays a double, a date a date.
        encoder.userInfo[MetadataValue.typedCoding] = true
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(type, from: Data(text.utf8))
    }
}

/// Inserts samples through one prepared statement with raw binds: the store's hot write path.
struct SampleInserter {
    let db: Database
    let statement: Statement
    var sources: [SourceDevice: Int64] = [:]
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ db: Database) throws {
        self.db = db
        statement = try db.cachedStatement(
            sql: """
                INSERT INTO sample(workout_id, type, start, "end", value, unit, canonical, source_id, metadata)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
    }

    /// The row id of `source`, inserted on first use.
    mutating func sourceID(_ source: SourceDevice) throws -> Int64 {
        if let id = sources[source] { return id }
        let arguments: StatementArguments = [source.name, source.manufacturer, source.model, source.identifier]
        try db.execute(
            sql: "INSERT OR IGNORE INTO source(name, manufacturer, model, identifier) VALUES (?, ?, ?, ?)",
            arguments: arguments)
        let id =
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT id FROM source WHERE name = ? AND ifnull(manufacturer, '') = ifnull(?, '')
                    AND ifnull(model, '') = ifnull(?, '') AND ifnull(identifier, '') = ifnull(?, '')
                    """, arguments: arguments) ?? 0
        sources[source] = id
        return id
    }

    /// Inserts `sample` for the workout row `workout`; returns its row id.
    @discardableResult
    mutating func insert(_ sample: QuantitySample, workout: Int64) throws -> Int64 {
        let source = try sourceID(sample.source)
        let handle = statement.sqliteStatement
        sqlite3_bind_int64(handle, 1, workout)
        sqlite3_bind_text(handle, 2, sample.type.rawValue, -1, Self.transient)
        sqlite3_bind_double(handle, 3, sample.start.timeIntervalSinceReferenceDate)
        sqlite3_bind_double(handle, 4, sample.end.timeIntervalSinceReferenceDate)
        sqlite3_bind_double(handle, 5, sample.quantity.value)
        sqlite3_bind_text(handle, 6, sample.quantity.unit.symbol, -1, Self.transient)
        sqlite3_bind_double(handle, 7, sample.canonicalValue ?? sample.quantity.value)
        sqlite3_bind_int64(handle, 8, source)
        if sample.metadata.isEmpty {
            sqlite3_bind_null(handle, 9)
        } else {
            sqlite3_bind_text(handle, 9, try JSON.encode(sample.metadata), -1, Self.transient)
        }
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
        return db.lastInsertedRowID
    }
}
