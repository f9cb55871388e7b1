import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// The PostgreSQL backend of `WorkoutStore`, scoped to one athlete (reads and writes) or to a team (reads only):
/// every statement names the athletes, so it touches only their partitions.
final class PostgresBackend: StoreBackend {
    let pool: ConnectionPool
    let athletes: [UUID]
    /// The athlete a write goes to (an athlete's store).
    var athlete: UUID { athletes[0] }
    /// A team's store: reads every athlete's partitions in one statement, writes nothing.
    let isTeam: Bool
    var location: String {
        isTeam
            ? "\(pool.url.redacted) (a team of \(athletes.count) athletes)"
            : "\(pool.url.redacted) (athlete \(athlete.uuidString.lowercased()))"
    }

    /// Where other writers' changes come from (LISTEN/NOTIFY), and this instance's id in its notifications.
    let feed: ChangeFeed
    let origin = UUID()
    /// Where live commits wait to be committed together with other sessions' (the database's, shared).
    let commitGroups: JournalCommitGroups

    init(pool: ConnectionPool, feed: ChangeFeed, commitGroups: JournalCommitGroups, athlete: UUID) {
        self.pool = pool
        self.feed = feed
        self.commitGroups = commitGroups
        athletes = [athlete]
        isTeam = false
    }

    /// A team's store; `athletes` is not empty (the caller checks).
    init(pool: ConnectionPool, feed: ChangeFeed, commitGroups: JournalCommitGroups, team athletes: [UUID]) {
        self.pool = pool
        self.feed = feed
        self.commitGroups = commitGroups
        self.athletes = athletes
        isTeam = true
    }

    func observeOtherWriters(_ deliver: @escaping @Sendable (StoreChange) -> Void) -> (any AnyObject & Sendable)? {
        feed.subscribe(athletes: athletes, origin: origin, deliver)
    }

    /// Tells other stores of the athlete about `change` when the transaction commits.
    private func notify(_ t: Transaction, _ change: StoreChange) throws {
        for statement in ChangeFeed.notifyStatements(athlete: athlete, origin: origin, change) { try t.run(statement) }
    }

    private func write<T>(_ body: (Transaction) throws -> T) throws(StoreError) -> T {
        guard !isTeam else {
            throw .database(path: location, detail: "a team's store only reads; write through the athlete's own store")
        }
        return try pool.transaction(body)
    }

    private func read<T>(single: Bool = false, _ body: (Transaction) throws -> T) throws(StoreError) -> T {
        try pool.transaction(readOnly: true, single: single, team: isTeam, body)
    }

    /// A statement whose `$1` is this backend's athlete (or, for a team, its athletes).
    private func scoped() -> SQL {
        var sql = SQL()
        _ = sql.bind(isTeam ? .uuids(athletes) : .uuid(athlete))
        return sql
    }

    private func nextAnchor(_ t: Transaction) throws -> Int64 {
        var sql = scoped()
        sql.text = "UPDATE athlete_partition SET anchor = anchor + 1 WHERE athlete = $1 RETURNING anchor"
        guard let anchor = try t.run(sql).first?.int(0) else {
            throw StoreError.database(path: location, detail: "the athlete has no partitions")
        }
        return anchor
    }

    private func workoutRow(_ t: Transaction, _ id: UUID, recording: Bool = false) throws -> Int64? {
        var sql = scoped()
        sql.text =
            "SELECT row_id FROM workout WHERE athlete = $1 AND uuid = \(sql.bind(.uuid(id))) AND recording = \(sql.bind(.bool(recording)))"
        return try t.run(sql).first?.int(0)
    }

    private func requireFree(_ t: Transaction, _ id: UUID) throws {
        var sql = scoped()
        sql.text = "SELECT 1 FROM workout WHERE athlete = $1 AND uuid = \(sql.bind(.uuid(id)))"
        if try !t.run(sql).isEmpty { throw StoreError.workoutExists(id) }
    }

    // MARK: saving

    func save(_ workout: Workout, sampleChunks: [SampleChunk], routeChunks: [RouteChunk]) throws(StoreError) {
        try write { t in
            let row = try insertWorkout(t, workout, recordingRow: nil)
            for chunk in sampleChunks { try writeChunk(t, chunk, workout: row) }
            for chunk in routeChunks { try writeChunk(t, chunk, workout: row) }
            try notify(t, .added([workout.id]))
        }
    }

    private func insertWorkout(_ t: Transaction, _ workout: Workout, recordingRow: Int64?) throws -> Int64 {
        if recordingRow == nil { try requireFree(t, workout.id) }
        var tombstone = scoped()
        tombstone.text =
            "DELETE FROM deleted_object WHERE athlete = $1 AND kind = 'workout' AND uuid = \(tombstone.bind(.uuid(workout.id)))"
        try t.run(tombstone)
        let anchor = try nextAnchor(t)
        var sql = scoped()
        let values = [
            sql.bind(.uuid(workout.id)), sql.bind(.text(workout.activityType.rawValue)),
            sql.bind(.double(workout.start.timeIntervalSinceReferenceDate)),
            sql.bind(.double(workout.end.timeIntervalSinceReferenceDate)), sql.bind(.double(workout.duration)),
            sql.bind(.double(workout.elapsed)), sql.bind(.text(JSON.encode(workout.configuration))),
            sql.bind(.text(JSON.encode(workout.metadata))), sql.bind(.text(JSON.encode(workout.counters))),
            sql.bind(.int(anchor)),
        ]
        if let recordingRow {
            sql.text = """
                UPDATE workout SET uuid = \(values[0]), activity_type = \(values[1]), start = \(values[2]),
                    "end" = \(values[3]), duration = \(values[4]), elapsed = \(values[5]), configuration = \(values[6]),
                    metadata = \(values[7]), counters = \(values[8]), anchor = \(values[9]), recording = false
                WHERE athlete = $1 AND row_id = \(sql.bind(.int(recordingRow))) RETURNING row_id
                """
        } else {
            sql.text = """
                INSERT INTO workout(athlete, uuid, activity_type, start, "end", duration, elapsed, configuration,
                                    metadata, counters, anchor)
                VALUES ($1, \(values.joined(separator: ", "))) RETURNING row_id
                """
        }
        guard let row = try t.run(sql).first?.int(0) else {
            throw StoreError.database(path: location, detail: "the workout row was not written")
        }
        try insertStatistics(t, workout: row, workoutStart: workout.start, workoutID: workout.id, activity: nil,
            type: workout.activityType, workout.statistics)
        // As in the SQLite backend: a workout without activities gets one implicit activity spanning it.
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
            var insert = scoped()
            insert.text = """
                INSERT INTO activity(athlete, uuid, workout_row, position, implicit, activity_type, start, "end",
                                     duration, configuration, metadata)
                VALUES ($1, \(insert.bind(.uuid(activity.id))), \(insert.bind(.int(row))),
                        \(insert.bind(.int(Int64(position))))::integer, \(insert.bind(.bool(implicit))),
                        \(insert.bind(.text(activity.configuration.activityType.rawValue))),
                        \(insert.bind(.double(activity.start.timeIntervalSinceReferenceDate))),
                        \(insert.bind(.double(activity.end?.timeIntervalSinceReferenceDate))),
                        \(insert.bind(.double(activity.duration))),
                        \(insert.bind(.text(JSON.encode(activity.configuration)))),
                        \(insert.bind(.text(JSON.encode(activity.metadata)))))
                RETURNING row_id
                """
            let activityRow = try t.run(insert).first?.int(0)
            try insertStatistics(t, workout: row, workoutStart: workout.start, workoutID: workout.id,
                activity: activityRow, type: activity.configuration.activityType, activity.statistics)
        }
        try insertRows(
            t, "event(athlete, workout_row, position, type, start, duration, metadata)",
            workout.events.enumerated().map { position, event in
                [
                    (.int(row), ""), (.int(Int64(position)), "::integer"), (.text(event.type.rawValue), ""),
                    (.double(event.start.timeIntervalSinceReferenceDate), ""), (.double(event.duration), ""),
                    (.text(JSON.encode(event.metadata)), ""),
                ]
            })
        return row
    }

    /// A workout's or activity's statistics, one row per quantity type (an activity's go into the teams' table
    /// too, migration 2): one statement per table.
    private func insertStatistics(
        _ t: Transaction, workout: Int64, workoutStart: Date, workoutID: UUID, activity: Int64?,
        type: WorkoutActivityType, _ statistics: [QuantityType: Statistics]
    ) throws {
        // Per quantity type: the columns both tables have (to `sum`), then what each adds before the workout's
        // start and id.
        let present = QuantityType.allCases.compactMap { quantityType in statistics[quantityType].map { (quantityType, $0) } }
        let shared: [[(Bind, String)]] = present.map { quantityType, s in
            [
                (.int(workout), ""), (.int(activity), ""), (.text(type.rawValue), ""), (.text(quantityType.rawValue), ""),
                (.double(s.minimum?.value), ""), (.double(s.maximum?.value), ""), (.double(s.average?.value), ""),
                (.double(s.sum?.value), ""),
            ]
        }
        let workoutColumns: [(Bind, String)] = [
            (.double(workoutStart.timeIntervalSinceReferenceDate), ""), (.uuid(workoutID), ""),
        ]
        try insertRows(
            t,
            """
            statistic(athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum, average, sum,
                      most_recent, most_recent_date, start, "end", duration, covered, sample_count, workout_start,
                      workout_uuid)
            """,
            zip(shared, present).map { row, entry in
                let s = entry.1
                return row + [
                    (.double(s.mostRecent?.value), ""), (.double(s.mostRecentDate?.timeIntervalSinceReferenceDate), ""),
                    (.double(s.start.timeIntervalSinceReferenceDate), ""), (.double(s.end.timeIntervalSinceReferenceDate), ""),
                    (.double(s.duration), ""), (.double(s.coveredTime), ""), (.int(Int64(s.sampleCount)), "::integer"),
                ] + workoutColumns
            })
        guard activity != nil else { return }
        try insertRows(
            t,
            """
            team_statistic(athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum, average,
                           sum, workout_start, workout_uuid)
            """,
            shared.map { $0 + workoutColumns })
    }

    /// Inserts `rows` (each value with its cast, after the athlete `$1`) into `table` (its name and columns, the
    /// athlete first): one statement of up to 500 rows at a time, instead of a round trip per row.
    private func insertRows(_ t: Transaction, _ table: String, _ rows: [[(Bind, String)]]) throws {
        var start = 0
        while start < rows.count {
            let end = min(start + 500, rows.count)
            var sql = scoped()
            let values = rows[start..<end].map { row in
                "($1, " + row.map { value, cast in sql.bind(value) + cast }.joined(separator: ", ") + ")"
            }
            sql.text = "INSERT INTO \(table) VALUES " + values.joined(separator: ", ")
            try t.run(sql)
            start = end
        }
    }

    private func writeChunk(_ t: Transaction, _ chunk: SampleChunk, workout: Int64) throws {
        var sql = scoped()
        let values = [
            sql.bind(.int(workout)), sql.bind(.text(chunk.type.rawValue)), sql.bind(.text(chunk.source.name)),
            sql.bind(.text(chunk.source.manufacturer)), sql.bind(.text(chunk.source.model)),
            sql.bind(.text(chunk.source.identifier)), sql.bind(.int(chunk.firstOrdinal)),
            sql.bind(.int(chunk.lastOrdinal)), sql.bind(.int(Int64(chunk.count))) + "::integer",
            sql.bind(.double(chunk.startMin)), sql.bind(.double(chunk.startMax)), sql.bind(.double(chunk.endMin)),
            sql.bind(.double(chunk.endMax)), sql.bind(.double(chunk.valueMin)), sql.bind(.double(chunk.valueMax)),
            sql.bind(.bytes(chunk.payload)),
        ]
        sql.text = """
            INSERT INTO sample_chunk(athlete, workout_row, type, source_name, source_manufacturer, source_model,
                                     source_identifier, first_ordinal, last_ordinal, count, start_min, start_max,
                                     end_min, end_max, value_min, value_max, data)
            VALUES ($1, \(values.joined(separator: ", ")))
            \(Self.sampleChunkUpsert)
            """
        try t.run(sql)
    }

    /// How a sample chunk row replaces the one at the same ordinal (a journal's tail rewritten by a commit).
    static let sampleChunkUpsert = """
        ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
            type = excluded.type, source_name = excluded.source_name,
            source_manufacturer = excluded.source_manufacturer, source_model = excluded.source_model,
            source_identifier = excluded.source_identifier, last_ordinal = excluded.last_ordinal,
            count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
            end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
            value_max = excluded.value_max, data = excluded.data
        """
    /// How a route chunk row replaces the one at the same ordinal.
    static let routeChunkUpsert = """
        ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
            last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
            date_max = excluded.date_max, data = excluded.data
        """

    private func writeChunk(_ t: Transaction, _ chunk: RouteChunk, workout: Int64) throws {
        var sql = scoped()
        let values = [
            sql.bind(.int(workout)), sql.bind(.int(chunk.firstOrdinal)), sql.bind(.int(chunk.lastOrdinal)),
            sql.bind(.int(Int64(chunk.count))) + "::integer", sql.bind(.double(chunk.dateMin)),
            sql.bind(.double(chunk.dateMax)), sql.bind(.bytes(chunk.payload)),
        ]
        sql.text = """
            INSERT INTO route_chunk(athlete, workout_row, first_ordinal, last_ordinal, count, date_min, date_max, data)
            VALUES ($1, \(values.joined(separator: ", ")))
            \(Self.routeChunkUpsert)
            """
        try t.run(sql)
    }

    /// Deletes a workout row and everything hanging from it.
    private func deleteRows(_ t: Transaction, workout row: Int64) throws {
        for table in ["sample_chunk", "route_chunk", "statistic", "team_statistic", "activity", "event"] {
            var sql = scoped()
            sql.text = "DELETE FROM \(table) WHERE athlete = $1 AND workout_row = \(sql.bind(.int(row)))"
            try t.run(sql)
        }
        var sql = scoped()
        sql.text = "DELETE FROM workout WHERE athlete = $1 AND row_id = \(sql.bind(.int(row)))"
        try t.run(sql)
    }

    func delete(workout id: UUID) throws(StoreError) {
        try write { t in
            guard let row = try workoutRow(t, id) else { throw StoreError.workoutNotFound(id) }
            try deleteRows(t, workout: row)
            let anchor = try nextAnchor(t)
            var sql = scoped()
            sql.text =
                "INSERT INTO deleted_object(athlete, anchor, kind, uuid) VALUES ($1, \(sql.bind(.int(anchor))), 'workout', \(sql.bind(.uuid(id))))"
            try t.run(sql)
            try notify(t, .deleted([id]))
        }
    }

    func updateWorkout(
        _ id: UUID, replacing types: Set<QuantityType>,
        where isReplaced: (SampleChunk) throws(StoreError) -> Bool,
        _ update: (Metadata, Int64) throws(StoreError) -> (Metadata, [SampleChunk])
    ) throws(StoreError) {
        try write { t in
            var select = scoped()
            select.text =
                "SELECT row_id, metadata FROM workout WHERE athlete = $1 AND uuid = \(select.bind(.uuid(id))) AND NOT recording FOR UPDATE"
            guard let found = try t.run(select).first else { throw StoreError.workoutNotFound(id) }
            let row = try found.int(0)
            let metadata = try JSON.decode(Metadata.self, try found.text(1))
            var next = scoped()
            next.text =
                "SELECT coalesce(max(last_ordinal) + 1, 0) FROM sample_chunk WHERE athlete = $1 AND workout_row = \(next.bind(.int(row)))"
            let nextOrdinal = try t.run(next).first?.int(0) ?? 0
            // Only the chunks of `types` that `isReplaced` picks go (as in the SQLite backend): attaching a
            // recovery again replaces its readings' chunks and keeps the exercise's heart rate.
            for type in types.sorted(by: { $0.rawValue < $1.rawValue }) {
                var select = scoped()
                select.text = """
                    SELECT \(Self.chunkColumns)
                    FROM sample_chunk c
                    WHERE c.athlete = $1 AND c.workout_row = \(select.bind(.int(row))) AND c.type = \(select.bind(.text(type.rawValue)))
                    """
                for record in try t.run(select) {
                    let chunk = try decodeChunk(record, workout: id)
                    guard try isReplaced(chunk) else { continue }
                    var remove = scoped()
                    remove.text =
                        "DELETE FROM sample_chunk WHERE athlete = $1 AND workout_row = \(remove.bind(.int(row))) AND first_ordinal = \(remove.bind(.int(chunk.firstOrdinal)))"
                    try t.run(remove)
                }
            }
            let (newMetadata, chunks) = try update(metadata, nextOrdinal)
            for chunk in chunks { try writeChunk(t, chunk, workout: row) }
            var store = scoped()
            store.text =
                "UPDATE workout SET metadata = \(store.bind(.text(JSON.encode(newMetadata)))), anchor = \(store.bind(.int(try nextAnchor(t)))) WHERE athlete = $1 AND row_id = \(store.bind(.int(row)))"
            try t.run(store)
            try notify(t, .added([id]))
        }
    }

    // MARK: reading

    private static let workoutColumns =
        #"w.row_id, w.uuid, w.configuration, w.start, w."end", w.duration, w.metadata, w.counters, w.anchor"#

    private func decodeWorkout(_ t: Transaction, _ record: Record) throws -> Workout {
        let row = try record.int(0)
        var statisticsSQL = scoped()
        statisticsSQL.text = """
            SELECT activity_row, quantity_type, minimum, maximum, average, sum, most_recent, most_recent_date, start,
                   "end", duration, covered, sample_count::bigint
            FROM statistic WHERE athlete = $1 AND workout_row = \(statisticsSQL.bind(.int(row)))
            """
        var byActivity: [Int64?: [QuantityType: Statistics]] = [:]
        for s in try t.run(statisticsSQL) {
            guard let type = QuantityType(rawValue: try s.text(1)) else { continue }
            let unit = type.canonicalUnit
            func quantity(_ index: Int) throws -> Quantity? { try s.optionalDouble(index).map { Quantity($0, unit) } }
            byActivity[try s.optionalInt(0), default: [:]][type] = Statistics(
                quantityType: type, start: Date(timeIntervalSinceReferenceDate: try s.double(8)),
                end: Date(timeIntervalSinceReferenceDate: try s.double(9)), minimum: try quantity(2),
                maximum: try quantity(3), average: try quantity(4), mostRecent: try quantity(6),
                mostRecentDate: try s.optionalDouble(7).map { Date(timeIntervalSinceReferenceDate: $0) },
                sum: try quantity(5), duration: try s.double(10), coveredTime: try s.double(11),
                sampleCount: Int(try s.int(12)))
        }
        var activitySQL = scoped()
        activitySQL.text = """
            SELECT row_id, uuid, configuration, start, "end", metadata, duration FROM activity
            WHERE athlete = $1 AND workout_row = \(activitySQL.bind(.int(row))) AND NOT implicit ORDER BY position
            """
        let activities = try t.run(activitySQL).map { a -> WorkoutActivity in
            WorkoutActivity(
                id: try a.uuid(1), configuration: try JSON.decode(WorkoutConfiguration.self, try a.text(2)),
                start: Date(timeIntervalSinceReferenceDate: try a.double(3)),
                end: try a.optionalDouble(4).map { Date(timeIntervalSinceReferenceDate: $0) },
                metadata: try JSON.decode(Metadata.self, try a.text(5)), duration: try a.double(6),
                statistics: byActivity[try a.int(0)] ?? [:])
        }
        var eventSQL = scoped()
        eventSQL.text =
            "SELECT type, start, duration, metadata FROM event WHERE athlete = $1 AND workout_row = \(eventSQL.bind(.int(row))) ORDER BY position"
        let events = try t.run(eventSQL).compactMap { e -> WorkoutEvent? in
            guard let type = WorkoutEventType(rawValue: try e.text(0)) else { return nil }
            return WorkoutEvent(
                type: type, start: Date(timeIntervalSinceReferenceDate: try e.double(1)), duration: try e.double(2),
                metadata: try JSON.decode(Metadata.self, try e.text(3)))
        }
        return Workout(
            id: try record.uuid(1), configuration: try JSON.decode(WorkoutConfiguration.self, try record.text(2)),
            start: Date(timeIntervalSinceReferenceDate: try record.double(3)),
            end: Date(timeIntervalSinceReferenceDate: try record.double(4)), duration: try record.double(5),
            activities: activities, events: events, metadata: try JSON.decode(Metadata.self, try record.text(6)),
            statistics: byActivity[nil] ?? [:], counters: try JSON.decode(IngestCounters.self, try record.text(7)))
    }

    func workout(id: UUID) throws(StoreError) -> Workout? {
        try read { t in
            var sql = scoped()
            sql.text =
                "SELECT \(Self.workoutColumns) FROM workout w WHERE w.athlete = $1 AND w.uuid = \(sql.bind(.uuid(id))) AND NOT w.recording"
            return try t.run(sql).first.map { try decodeWorkout(t, $0) }
        }
    }

    func containsWorkout(id: UUID) throws(StoreError) -> Bool {
        try read { t in
            var sql = scoped()
            sql.text = "SELECT 1 FROM workout w WHERE w.athlete = $1 AND w.uuid = \(sql.bind(.uuid(id))) AND NOT w.recording"
            return try !t.run(sql).isEmpty
        }
    }

    func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout] {
        let sql = try workoutSQL(query, columns: Self.workoutColumns)
        return try read { t in try t.run(sql).map { try decodeWorkout(t, $0) } }
    }

    func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID] {
        if query.isActivityOnly { return try activityOnlyIDs(query) }
        let sql = try workoutSQL(query, columns: "w.uuid")
        return try read(single: true) { t in try t.run(sql).map { try $0.uuid(0) } }
    }

    /// A query of activity predicates only, answered from the statistics indexes alone (each statistics row
    /// carries its workout's id and start; recordings have none): one statement per predicate, intersected here.
    private func activityOnlyIDs(_ query: WorkoutQuery) throws(StoreError) -> [UUID] {
        struct Match: Hashable {
            var start: Double
            var id: UUID
            /// The id as a 128-bit number: its order is the order of the id's text.
            var high: UInt64
            var low: UInt64

            init(start: Double, id: UUID) {
                self.start = start
                self.id = id
                high = withUnsafeBytes(of: id.uuid) { $0.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
                low = withUnsafeBytes(of: id.uuid) { $0.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            }
        }
        var statements: [SQL] = []
        for predicate in query.activities {
            var sql = scoped()
            let condition = try matchSQL(predicate, &sql)
            sql.text = "SELECT DISTINCT s0.workout_start, s0.workout_uuid FROM \(statisticTable) s0 WHERE \(condition)"
            statements.append(sql)
        }
        let found = try read(single: statements.count == 1) { t -> [Match] in
            var result: Set<Match>?
            for sql in statements {
                let matches = Set(try t.run(sql).map { Match(start: try $0.double(0), id: try $0.uuid(1)) })
                result = result.map { $0.intersection(matches) } ?? matches
            }
            return Array(result ?? [])
        }
        // The general path's order: by start, ties by the id's text (the same order as its bytes).
        var ordered = found.sorted {
            $0.start != $1.start ? $0.start < $1.start : $0.high != $1.high ? $0.high < $1.high : $0.low < $1.low
        }
        if !query.ascending { ordered.reverse() }
        if let limit = query.limit, ordered.count > max(0, limit) { ordered.removeLast(ordered.count - max(0, limit)) }
        return ordered.map(\.id)
    }

    /// The workout query as one statement; newest first unless ascending, ties by id (as the SQLite backend).
    func workoutSQL(_ query: WorkoutQuery, columns: String) throws(StoreError) -> SQL {
        var sql = scoped()
        var conditions = ["w.athlete = $1", "NOT w.recording"]
        if let type = query.activityType { conditions.append("w.activity_type = \(sql.bind(.text(type.rawValue)))") }
        if let minimum = query.minimumDuration { conditions.append("w.duration >= \(sql.bind(.double(minimum)))") }
        if let maximum = query.maximumDuration { conditions.append("w.duration <= \(sql.bind(.double(maximum)))") }
        let from = query.dates.start.map { $0.timeIntervalSinceReferenceDate }
        let to = query.dates.end.map { $0.timeIntervalSinceReferenceDate }
        if query.dates.options.contains(.strictStartDate) {
            if let from { conditions.append("w.start >= \(sql.bind(.double(from)))") }
            if let to { conditions.append("w.start < \(sql.bind(.double(to)))") }
        }
        if query.dates.options.contains(.strictEndDate) {
            if let from { conditions.append("w.\"end\" > \(sql.bind(.double(from)))") }
            if let to { conditions.append("w.\"end\" <= \(sql.bind(.double(to)))") }
        }
        if query.dates.options.isEmpty {
            if let to { conditions.append("w.start < \(sql.bind(.double(to)))") }
            if let from { conditions.append("w.\"end\" >= \(sql.bind(.double(from)))") }
        }
        for predicate in query.activities {
            guard !predicate.conditions.isEmpty else {
                if let type = predicate.activityType {
                    conditions.append(
                        "w.row_id IN (SELECT workout_row FROM activity WHERE athlete = $1 AND activity_type = \(sql.bind(.text(type.rawValue))))"
                    )
                }
                continue
            }
            conditions.append(
                "w.row_id IN (SELECT s0.workout_row FROM \(statisticTable) s0 WHERE \(try matchSQL(predicate, &sql)))")
        }
        sql.text = "SELECT \(columns) FROM workout w WHERE " + conditions.joined(separator: " AND ")
        sql.text += query.ascending ? " ORDER BY w.start, w.uuid" : " ORDER BY w.start DESC, w.uuid DESC"
        if let limit = query.limit { sql.text += " LIMIT \(sql.bind(.int(Int64(max(0, limit)))))" }
        return sql
    }

    /// Where activity predicates look: an athlete's `statistic` partition, or for a team the unpartitioned
    /// `team_statistic` (one index scan for all the athletes instead of a scan planned per partition).
    private var statisticTable: String { isTeam ? "team_statistic" : "statistic" }

    /// Statistics row `s0` of an activity matching every condition. Columns and operators come from enums.
    private func matchSQL(_ predicate: ActivityPredicate, _ sql: inout SQL) throws(StoreError) -> String {
        func value(_ condition: StatisticCondition) throws(StoreError) -> Double {
            guard let value = condition.value.doubleValue(for: condition.quantityType.canonicalUnit), value.isFinite
            else {
                throw .invalidQuery(
                    "\(condition.quantityType.rawValue) compared with \(condition.value): needs a finite value in "
                        + "a \(condition.quantityType.canonicalUnit.dimension.rawValue) unit")
            }
            return value
        }
        guard let first = predicate.conditions.first else { throw .invalidQuery("an activity predicate without conditions") }
        var text = "s0.athlete = $1 AND s0.activity_row IS NOT NULL AND s0.quantity_type = \(sql.bind(.text(first.quantityType.rawValue)))"
        if let type = predicate.activityType { text += " AND s0.activity_type = \(sql.bind(.text(type.rawValue)))" }
        text += " AND s0.\(first.aggregate.rawValue) \(first.comparison.rawValue) \(sql.bind(.double(try value(first))))"
        for (index, condition) in predicate.conditions.dropFirst().enumerated() {
            let alias = "s\(index + 1)"
            text += """
                 AND EXISTS (SELECT 1 FROM \(statisticTable) \(alias) WHERE \(alias).athlete = $1
                 AND \(alias).activity_row = s0.activity_row AND \(alias).quantity_type = \(sql.bind(.text(condition.quantityType.rawValue)))
                 AND \(alias).\(condition.aggregate.rawValue) \(condition.comparison.rawValue) \(sql.bind(.double(try value(condition)))))
                """
        }
        return text
    }

    func anchoredWorkouts(since anchor: QueryAnchor?, limit: Int?) throws(StoreError) -> AnchoredWorkouts {
        let from = anchor?.value ?? 0
        let cap = limit.map { max(0, $0) } ?? Int.max
        return try read { t in
            var added = scoped()
            added.text =
                "SELECT \(Self.workoutColumns) FROM workout w WHERE w.athlete = $1 AND w.anchor > \(added.bind(.int(from))) AND NOT w.recording ORDER BY w.anchor"
            var deleted = scoped()
            deleted.text =
                "SELECT anchor, uuid FROM deleted_object WHERE athlete = $1 AND anchor > \(deleted.bind(.int(from))) ORDER BY anchor"
            if cap != Int.max {
                added.text += " LIMIT \(added.bind(.int(Int64(cap))))"
                deleted.text += " LIMIT \(deleted.bind(.int(Int64(cap))))"
            }
            var merged: [(Int64, Record, Bool)] =
                try t.run(added).map { (try $0.int(8), $0, true) } + t.run(deleted).map { (try $0.int(0), $0, false) }
            merged.sort { $0.0 < $1.0 }
            if merged.count > cap { merged.removeLast(merged.count - cap) }
            var result = AnchoredWorkouts(added: [], deleted: [], anchor: QueryAnchor(from))
            for (value, record, isAdded) in merged {
                if isAdded {
                    result.added.append(try decodeWorkout(t, record))
                } else {
                    result.deleted.append(try record.uuid(1))
                }
                result.anchor = QueryAnchor(value)
            }
            return result
        }
    }

    private static let chunkColumns = """
        c.type, c.count::bigint, c.first_ordinal, c.last_ordinal, c.start_min, c.start_max, c.end_min, c.end_max,
        c.value_min, c.value_max, c.data, c.source_name, c.source_manufacturer, c.source_model, c.source_identifier
        """

    private func decodeChunk(_ record: Record, workout: UUID) throws -> SampleChunk {
        guard let type = QuantityType(rawValue: try record.text(0)) else {
            throw StoreError.corruptChunk(workout: workout, detail: "unknown quantity type \(try record.text(0))")
        }
        return SampleChunk(
            type: type,
            source: SourceDevice(
                name: try record.text(11), manufacturer: try record.optionalText(12), model: try record.optionalText(13),
                identifier: try record.optionalText(14)),
            count: Int(try record.int(1)), firstOrdinal: try record.int(2), lastOrdinal: try record.int(3),
            startMin: try record.double(4), startMax: try record.double(5), endMin: try record.double(6),
            endMax: try record.double(7), valueMin: try record.optionalDouble(8), valueMax: try record.optionalDouble(9),
            payload: try record.bytes(10))
    }

    func sampleChunks(_ filter: ChunkFilter) throws(StoreError) -> [StoredChunk<SampleChunk>] {
        var sql = scoped()
        var conditions = ["c.athlete = $1"]
        if let type = filter.type { conditions.append("c.type = \(sql.bind(.text(type.rawValue)))") }
        if let value = filter.startBefore { conditions.append("c.start_min < \(sql.bind(.double(value)))") }
        if let value = filter.startFrom { conditions.append("c.start_max >= \(sql.bind(.double(value)))") }
        if let value = filter.endFrom { conditions.append("c.end_max >= \(sql.bind(.double(value)))") }
        if let value = filter.endThrough { conditions.append("c.end_min <= \(sql.bind(.double(value)))") }
        if let source = filter.source {
            conditions.append(
                "c.source_name = \(sql.bind(.text(source.name))) AND coalesce(c.source_identifier, '') = coalesce(\(sql.bind(.text(source.identifier))), '') AND coalesce(c.source_manufacturer, '') = coalesce(\(sql.bind(.text(source.manufacturer))), '') AND coalesce(c.source_model, '') = coalesce(\(sql.bind(.text(source.model))), '')"
            )
        }
        if let workout = filter.workout { conditions.append("w.uuid = \(sql.bind(.uuid(workout)))") }
        sql.text = """
            SELECT \(Self.chunkColumns), w.uuid, w.row_id
            FROM sample_chunk c JOIN workout w ON w.athlete = c.athlete AND w.row_id = c.workout_row
            WHERE \(conditions.joined(separator: " AND "))
            """
        return try read(single: true) { t in
            try t.run(sql).map { record in
                let workout = try record.uuid(15)
                return StoredChunk(workout: workout, workoutOrder: try record.int(16), chunk: try decodeChunk(record, workout: workout))
            }
        }
    }

    private static let routeColumns = "r.count::bigint, r.first_ordinal, r.last_ordinal, r.date_min, r.date_max, r.data"

    private static func routeChunk(_ record: Record) throws -> RouteChunk {
        RouteChunk(
            count: Int(try record.int(0)), firstOrdinal: try record.int(1), lastOrdinal: try record.int(2),
            dateMin: try record.double(3), dateMax: try record.double(4), payload: try record.bytes(5))
    }

    func routeChunks(workout id: UUID) throws(StoreError) -> [RouteChunk] {
        try read { t in
            var sql = scoped()
            sql.text = """
                SELECT \(Self.routeColumns) FROM route_chunk r JOIN workout w ON w.athlete = r.athlete AND w.row_id = r.workout_row
                WHERE r.athlete = $1 AND w.uuid = \(sql.bind(.uuid(id)))
                """
            return try t.run(sql).map(Self.routeChunk)
        }
    }

    // MARK: journal

    func beginJournal(_ session: JournalSessionRecord, configuration: WorkoutConfiguration, start: Date) throws(StoreError)
    {
        try write { t in
            try requireFree(t, session.id)
            var insert = scoped()
            insert.text = """
                INSERT INTO workout(athlete, uuid, activity_type, start, "end", duration, elapsed, configuration,
                                    metadata, counters, anchor, recording)
                VALUES ($1, \(insert.bind(.uuid(session.id))), \(insert.bind(.text(configuration.activityType.rawValue))),
                        \(insert.bind(.double(start.timeIntervalSinceReferenceDate))),
                        \(insert.bind(.double(start.timeIntervalSinceReferenceDate))), 0, 0,
                        \(insert.bind(.text(JSON.encode(configuration)))), '{}', '{}', 0, true)
                RETURNING row_id
                """
            guard let row = try t.run(insert).first?.int(0) else {
                throw StoreError.database(path: location, detail: "the recording row was not written")
            }
            var journal = scoped()
            journal.text = """
                INSERT INTO journal_session(athlete, uuid, configuration, options, created, workout_row)
                VALUES ($1, \(journal.bind(.uuid(session.id))), \(journal.bind(.text(session.configuration))),
                        \(journal.bind(.text(session.options))),
                        \(journal.bind(.double(session.created.timeIntervalSinceReferenceDate))), \(journal.bind(.int(row))))
                """
            try t.run(journal)
        }
    }

    func commitJournal(_ commit: JournalCommit) throws(StoreError) {
        // The commit's chunks and journal entries go in one statement (`appendSQL`): one round trip and one
        // parse instead of one per chunk and entry (a FIT import's commit holds thousands of entries). A live
        // session's commit (nothing closing) is one statement that commits itself, a CALL of
        // `workout_journal_commit` (migration 6) or, with other sessions' commits waiting at the same moment,
        // of `workout_journal_commit_group` (migration 7, `JournalCommitGroups`): it is answered only once
        // PostgreSQL committed it, in one round trip, and a failure of the commit itself is the CALL's error.
        if commit.closing == nil, !isTeam {
            _ = try commitGroups.commit(athlete: athlete, commit, pool: pool)
            return
        }
        try write { t in
            guard let row = try append(t, commit) else {
                throw StoreError.sessionNotFound(commit.session)
            }
            // Under the session row's lock `append` took; its chunks are rolled back with the refusal.
            if let end = commit.finishingJournalEnd { try checkJournalEnd(t, commit.session, end) }
            switch commit.closing {
            case nil: break
            case .finish(let workout):
                if !commit.alreadyCompact { try compactChunks(t, workout: row, id: commit.session) }
                _ = try insertWorkout(t, workout, recordingRow: row)
                try deleteJournal(t, commit.session)
                try notify(t, .added([workout.id]))
            case .discard:
                for table in ["sample_chunk", "route_chunk"] {
                    var sql = scoped()
                    sql.text = "DELETE FROM \(table) WHERE athlete = $1 AND workout_row = \(sql.bind(.int(row)))"
                    try t.run(sql)
                }
                var sql = scoped()
                sql.text = "DELETE FROM workout WHERE athlete = $1 AND row_id = \(sql.bind(.int(row))) AND recording"
                try t.run(sql)
                try deleteJournal(t, commit.session)
            }
        }
    }

    /// One statement appending a commit's sample and route chunks (inserted or replacing the open tail) and
    /// journal entries to a session's journal, locking the session's row first as every commit does: a call of
    /// `workout_journal_append` (schema migration 4), whose statements PostgreSQL plans once per connection. Its
    /// one row holds the session's workout row, or NULL (nothing written) when the session's journal is gone.
    ///
    /// With `committing`, the same arguments go to `CALL workout_journal_commit(…)` (migration 6), which commits
    /// before it answers: only outside a transaction block, as the one statement of its own.
    static func appendSQL(athlete: UUID, _ commit: JournalCommit, committing: Bool = false) -> SQL {
        var sql = SQL()
        var arguments = [sql.bind(.uuid(athlete)) + "::uuid", sql.bind(.uuid(commit.session)) + "::uuid"]
        addRows(&sql, &arguments, commit.sampleChunks, commit.routeChunks, commit.entries)
        sql.text =
            committing
            ? "CALL workout_journal_commit(" + arguments.joined(separator: ", ") + ", NULL)"
            : "SELECT workout_journal_append(" + arguments.joined(separator: ", ") + ")"
        return sql
    }

    /// `CALL workout_journal_commit_group(…)` (migration 7) of several sessions' live commits, in `members`' order
    /// (the order their session rows are locked in): each member's chunks and entries follow the others', with
    /// their member's position (1-based) beside them. Its one row holds two arrays, one element per member
    /// (`o_rows`, `o_next`: see `PostgresSchema.journalCommitGroupProcedure`).
    static func groupSQL(_ members: [(athlete: UUID, commit: JournalCommit)]) -> SQL {
        var sql = SQL()
        var arguments: [String] = []
        func add(_ value: Bind, _ type: String) { arguments.append("\(sql.bind(value))::\(type)") }
        add(.uuids(members.map(\.athlete)), "uuid[]")
        add(.uuids(members.map(\.commit.session)), "uuid[]")
        add(.ints(members.map { $0.commit.entries.first?.seq ?? 0 }), "bigint[]")
        add(.ints(members.map { $0.commit.entries.last?.seq ?? 0 }), "bigint[]")
        add(.ints(members.map { Int64($0.commit.entries.count) }), "bigint[]")
        func positions(_ count: (JournalCommit) -> Int) -> [Int64] {
            members.enumerated().flatMap { index, member in
                repeatElement(Int64(index + 1), count: count(member.commit))
            }
        }
        add(.ints(positions(\.sampleChunks.count)), "bigint[]")
        add(.ints(positions(\.routeChunks.count)), "bigint[]")
        add(.ints(positions(\.entries.count)), "bigint[]")
        let commits = members.map(\.commit)
        addRows(
            &sql, &arguments, commits.flatMap(\.sampleChunks), commits.flatMap(\.routeChunks),
            commits.flatMap(\.entries))
        sql.text = "CALL workout_journal_commit_group(" + arguments.joined(separator: ", ") + ", NULL, NULL)"
        return sql
    }

    /// The row arguments `workout_journal_append` and the procedures take after their sessions' (`c_…`, `r_…`,
    /// `j_…`: one array per column, one element per row; a nullable column has a flag array beside it).
    private static func addRows(
        _ sql: inout SQL, _ arguments: inout [String], _ chunks: [SampleChunk], _ routes: [RouteChunk],
        _ entries: [JournalEntry]
    ) {
        func add(_ value: Bind, _ type: String) { arguments.append("\(sql.bind(value))::\(type)") }
        func texts(_ values: [String?]) {
            add(.texts(values.map { $0 ?? "" }), "text[]")
            add(.bools(values.map { $0 != nil }), "boolean[]")
        }
        func doubles(_ values: [Double?]) {
            add(.doubles(values.map { $0 ?? 0 }), "float8[]")
            add(.bools(values.map { $0 != nil }), "boolean[]")
        }
        add(.texts(chunks.map(\.type.rawValue)), "text[]")
        add(.texts(chunks.map(\.source.name)), "text[]")
        texts(chunks.map(\.source.manufacturer))
        texts(chunks.map(\.source.model))
        texts(chunks.map(\.source.identifier))
        add(.ints(chunks.map(\.firstOrdinal)), "bigint[]")
        add(.ints(chunks.map(\.lastOrdinal)), "bigint[]")
        add(.ints(chunks.map { Int64($0.count) }), "bigint[]")
        add(.doubles(chunks.map(\.startMin)), "float8[]")
        add(.doubles(chunks.map(\.startMax)), "float8[]")
        add(.doubles(chunks.map(\.endMin)), "float8[]")
        add(.doubles(chunks.map(\.endMax)), "float8[]")
        doubles(chunks.map(\.valueMin))
        doubles(chunks.map(\.valueMax))
        add(.byteas(chunks.map(\.payload)), "bytea[]")
        add(.ints(routes.map(\.firstOrdinal)), "bigint[]")
        add(.ints(routes.map(\.lastOrdinal)), "bigint[]")
        add(.ints(routes.map { Int64($0.count) }), "bigint[]")
        add(.doubles(routes.map(\.dateMin)), "float8[]")
        add(.doubles(routes.map(\.dateMax)), "float8[]")
        add(.byteas(routes.map(\.payload)), "bytea[]")
        add(.ints(entries.map(\.seq)), "bigint[]")
        add(.texts(entries.map(\.kind.rawValue)), "text[]")
        add(.ints(entries.map { Int64($0.count) }), "bigint[]")
        texts(entries.map(\.payload))
    }

    /// Runs `appendSQL(commit, committing:)`: the session's workout row, nil when the session's journal is gone.
    /// Entries that do not continue the stored journal are refused by the database (migration 5):
    /// `journalOutOfStep`. The committing CALL, a live session's commit, runs as a prepared statement of its
    /// connection (its text is the same for every commit: only the arguments change), parsed once per connection.
    private func append(_ t: Transaction, _ commit: JournalCommit, committing: Bool = false) throws -> Int64? {
        try Self.append(t, athlete: athlete, commit, committing: committing)
    }

    /// `append` of `athlete`'s `commit` (a live commit group's member committed alone).
    static func append(_ t: Transaction, athlete: UUID, _ commit: JournalCommit, committing: Bool = false) throws
        -> Int64?
    {
        do {
            let sql = appendSQL(athlete: athlete, commit, committing: committing)
            return try (committing ? t.runPrepared(sql) : t.run(sql)).first?.optionalInt(0)
        } catch where ConnectionPool.sqlState(error) == PostgresSchema.journalOutOfStepState {
            throw StoreError.journalOutOfStep(session: commit.session, detail: ConnectionPool.describe(error))
        }
    }

    /// Refuses a finishing commit (`JournalCommit.finishingJournalEnd`) whose writer's journal is not the stored
    /// one: the next change's number, as migration 5's `workout_journal_append` counts it, must be in `end`.
    private func checkJournalEnd(_ t: Transaction, _ session: UUID, _ end: ClosedRange<Int64>) throws {
        var sql = scoped()
        sql.text = """
            SELECT coalesce(max(seq), -1) + 1 FROM journal_change WHERE athlete = $1 AND session = \(sql.bind(.uuid(session)))
            """
        let next = try t.run(sql).first?.int(0) ?? 0
        guard end.contains(next) else {
            throw StoreError.journalOutOfStep(
                session: session, detail: "the journal continues at change \(next), not at change \(end.lowerBound)")
        }
    }

    /// Merges a finishing recording's small chunks into full ones (`ChunkCompaction`), before its journal is
    /// deleted (the new chunks are written by `appendSQL`, which needs the journal's row).
    private func compactChunks(_ t: Transaction, workout row: Int64, id: UUID) throws {
        let (samples, route) = try recordingChunks(t, workout: row, id: id)
        let plan = try ChunkCompaction.plan(samples: samples, route: route, workout: id)
        guard !plan.isEmpty else { return }
        for (table, firsts) in [("sample_chunk", plan.deletedSampleChunks), ("route_chunk", plan.deletedRouteChunks)]
        where !firsts.isEmpty {
            var sql = scoped()
            sql.text = """
                DELETE FROM \(table) WHERE athlete = $1 AND workout_row = \(sql.bind(.int(row)))
                AND first_ordinal = ANY(\(sql.bind(.ints(firsts)))::bigint[])
                """
            try t.run(sql)
        }
        let rewrite = JournalCommit(
            session: id, entries: [], sampleChunks: plan.sampleChunks, routeChunks: plan.routeChunks, closing: nil)
        guard try append(t, rewrite) != nil else { throw StoreError.sessionNotFound(id) }
    }

    /// Every sample and route chunk of a workout row (a recording's included), any order.
    private func recordingChunks(_ t: Transaction, workout row: Int64, id: UUID) throws -> ([SampleChunk], [RouteChunk]) {
        var chunks = scoped()
        chunks.text = "SELECT \(Self.chunkColumns) FROM sample_chunk c WHERE c.athlete = $1 AND c.workout_row = \(chunks.bind(.int(row)))"
        let samples = try t.run(chunks).map { try decodeChunk($0, workout: id) }
        var route = scoped()
        route.text = "SELECT \(Self.routeColumns) FROM route_chunk r WHERE r.athlete = $1 AND r.workout_row = \(route.bind(.int(row)))"
        return (samples, try t.run(route).map(Self.routeChunk))
    }

    private func deleteJournal(_ t: Transaction, _ id: UUID) throws {
        var changes = scoped()
        changes.text = "DELETE FROM journal_change WHERE athlete = $1 AND session = \(changes.bind(.uuid(id)))"
        try t.run(changes)
        var session = scoped()
        session.text = "DELETE FROM journal_session WHERE athlete = $1 AND uuid = \(session.bind(.uuid(id)))"
        try t.run(session)
    }

    private static func sessionRecord(_ record: Record) throws -> JournalSessionRecord {
        JournalSessionRecord(
            id: try record.uuid(0), configuration: try record.text(1), options: try record.text(2),
            created: Date(timeIntervalSinceReferenceDate: try record.double(3)))
    }

    func journalSessions() throws(StoreError) -> [JournalSessionRecord] {
        try read { t in
            var sql = scoped()
            sql.text = "SELECT uuid, configuration, options, created FROM journal_session WHERE athlete = $1 ORDER BY created"
            return try t.run(sql).map(Self.sessionRecord)
        }
    }

    func loadJournal(id: UUID?) throws(StoreError) -> LoadedJournal? {
        // One snapshot for the session, its changes and its chunks: read in separate statements of a READ
        // COMMITTED transaction, a commit landing in between could show its chunks without its changes.
        try pool.transaction(readOnly: true, team: isTeam, snapshot: true) { t -> LoadedJournal? in
            var find = scoped()
            find.text = "SELECT uuid, configuration, options, created, workout_row FROM journal_session WHERE athlete = $1"
            if let id {
                find.text += " AND uuid = \(find.bind(.uuid(id)))"
            } else {
                find.text += " ORDER BY created DESC LIMIT 1"
            }
            guard let record = try t.run(find).first else { return nil }
            let session = try Self.sessionRecord(record)
            let row = try record.int(4)
            var changes = scoped()
            changes.text =
                "SELECT seq, kind, count::bigint, payload FROM journal_change WHERE athlete = $1 AND session = \(changes.bind(.uuid(session.id))) ORDER BY seq"
            let entries = try t.run(changes).map { change in
                JournalEntry(
                    seq: try change.int(0), kind: JournalEntry.Kind(rawValue: try change.text(1)) ?? .change,
                    count: Int(try change.int(2)), payload: try change.optionalText(3))
            }
            let (samples, route) = try recordingChunks(t, workout: row, id: session.id)
            return LoadedJournal(session: session, entries: entries, sampleChunks: samples, routeChunks: route)
        }
    }

    func journalEntries(id: UUID, from seq: Int64) throws(StoreError) -> [JournalEntry]? {
        // One snapshot: the session and its changes as of one instant (as `loadJournal`).
        try pool.transaction(readOnly: true, team: isTeam, snapshot: true) { t -> [JournalEntry]? in
            var find = scoped()
            find.text = "SELECT 1 FROM journal_session WHERE athlete = $1 AND uuid = \(find.bind(.uuid(id)))"
            guard try t.run(find).first != nil else { return nil }
            var changes = scoped()
            changes.text =
                "SELECT seq, kind, count::bigint, payload FROM journal_change WHERE athlete = $1 AND session = \(changes.bind(.uuid(id))) AND seq >= \(changes.bind(.int(seq))) ORDER BY seq"
            return try t.run(changes).map { change in
                JournalEntry(
                    seq: try change.int(0), kind: JournalEntry.Kind(rawValue: try change.text(1)) ?? .change,
                    count: Int(try change.int(2)), payload: try change.optionalText(3))
            }
        }
    }
}
