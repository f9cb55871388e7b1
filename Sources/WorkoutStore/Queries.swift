import Foundation
import GRDB
import GRDBSQLite
import WorkoutEngine
import WorkoutModel

/// How a date range selects samples or workouts, as HealthKit's HKQueryOptions.
///
/// The range is [start, end). With no option an item matches when it overlaps the range
/// (item.start < end and item.end >= start). `strictStartDate`: start ≤ item.start < end.
/// `strictEndDate`: start < item.end ≤ end. Both: the item lies inside the range.
public struct DateOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let strictStartDate = DateOptions(rawValue: 1)
    public static let strictEndDate = DateOptions(rawValue: 2)
}

/// A date range with its matching mode; either bound may be open.
public struct DateRange: Sendable, Hashable {
    public var start: Date?
    public var end: Date?
    public var options: DateOptions

    public init(start: Date? = nil, end: Date? = nil, options: DateOptions = []) {
        self.start = start
        self.end = end
        self.options = options
    }

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

/// A sample query (HKSampleQuery): type, dates, source, workout, order and limit.
public struct SampleQuery: Sendable, Hashable {
    public var type: QuantityType?
    public var dates: DateRange
    public var source: SourceDevice?
    public var workout: UUID?
    /// Oldest first when true.
    public var ascending: Bool
    public var limit: Int?

    public init(
        type: QuantityType? = nil, dates: DateRange = DateRange(), source: SourceDevice? = nil, workout: UUID? = nil,
        ascending: Bool = true, limit: Int? = nil
    ) {
        self.type = type
        self.dates = dates
        self.source = source
        self.workout = workout
        self.ascending = ascending
        self.limit = limit
    }
}

/// Which statistic of an activity a condition reads.
public enum StatisticAggregate: String, Sendable, Hashable, CaseIterable {
    case average, minimum, maximum, sum

    var column: String {
        switch self {
        case .average: "average"
        case .minimum: "minimum"
        case .maximum: "maximum"
        case .sum: "sum"
        }
    }
}

/// A comparison operator.
public enum Comparison: String, Sendable, Hashable, CaseIterable {
    case lessThan = "<"
    case lessThanOrEqual = "<="
    case equal = "="
    case notEqual = "!="
    case greaterThanOrEqual = ">="
    case greaterThan = ">"
}

/// "The activity's average heart rate > 150 bpm": one statistic compared with a quantity.
public struct StatisticCondition: Sendable, Hashable {
    public var quantityType: QuantityType
    public var aggregate: StatisticAggregate
    public var comparison: Comparison
    /// Converted to the type's canonical unit; a unit of another dimension makes the query invalid.
    public var value: Quantity

    public init(
        _ quantityType: QuantityType, _ aggregate: StatisticAggregate, _ comparison: Comparison, _ value: Quantity
    ) {
        self.quantityType = quantityType
        self.aggregate = aggregate
        self.comparison = comparison
        self.value = value
    }
}

/// "A workout containing an activity matching P": every condition applies to the same activity.
public struct ActivityPredicate: Sendable, Hashable {
    public var activityType: WorkoutActivityType?
    public var conditions: [StatisticCondition]

    public init(activityType: WorkoutActivityType? = nil, conditions: [StatisticCondition] = []) {
        self.activityType = activityType
        self.conditions = conditions
    }
}

/// A workout query: type, duration, dates, and activity predicates (each may match a different
/// activity; inside one predicate, all conditions hold for one activity).
public struct WorkoutQuery: Sendable, Hashable {
    public var activityType: WorkoutActivityType?
    /// Active duration bounds, seconds.
    public var minimumDuration: TimeInterval?
    public var maximumDuration: TimeInterval?
    public var dates: DateRange
    public var activities: [ActivityPredicate]
    /// Newest first unless true.
    public var ascending: Bool
    public var limit: Int?

    public init(
        activityType: WorkoutActivityType? = nil, minimumDuration: TimeInterval? = nil,
        maximumDuration: TimeInterval? = nil, dates: DateRange = DateRange(), activities: [ActivityPredicate] = [],
        ascending: Bool = false, limit: Int? = nil
    ) {
        self.activityType = activityType
        self.minimumDuration = minimumDuration
        self.maximumDuration = maximumDuration
        self.dates = dates
        self.activities = activities
        self.ascending = ascending
        self.limit = limit
    }
}

extension WorkoutQuery {
    /// Only activity predicates, each with at least one statistic condition: the index-only path.
    var isActivityOnly: Bool {
        activityType == nil && minimumDuration == nil && maximumDuration == nil && dates.start == nil
            && dates.end == nil && !activities.isEmpty && activities.allSatisfy { !$0.conditions.isEmpty }
    }
}

/// A persistable position in the store's history of changes (HKQueryAnchor).
public struct QueryAnchor: Sendable, Hashable, Codable, Comparable {
    public var value: Int64
    public init(_ value: Int64) { self.value = value }
    public static func < (lhs: QueryAnchor, rhs: QueryAnchor) -> Bool { lhs.value < rhs.value }
}

/// What changed since an anchor.
public struct AnchoredWorkouts: Sendable, Hashable {
    public var added: [Workout]
    public var deleted: [UUID]
    /// Pass this to the next query to get only what came after.
    public var anchor: QueryAnchor
}

/// A bucket of a statistics collection; `statistics` is nil for an empty bucket.
public struct StatisticsBucket: Sendable, Hashable {
    public var start: Date
    public var end: Date
    public var statistics: Statistics?
}

/// Bucket length of a statistics collection. Buckets are fixed lengths of UTC time from the anchor
/// date (a day is 86,400 s; no daylight-saving shifts).
public enum StatisticsInterval: Sendable, Hashable {
    case seconds(TimeInterval)
    case minute, hour, day, week

    public var length: TimeInterval {
        switch self {
        case .seconds(let seconds): seconds
        case .minute: 60
        case .hour: 3600
        case .day: 86400
        case .week: 604_800
        }
    }
}

extension WorkoutStore {
    // MARK: samples

    /// Samples matching `query`.
    public func samples(matching query: SampleQuery) throws(StoreError) -> [QuantitySample] {
        try read { db in try Self.fetchSamples(db, query) }
    }

    static func fetchSamples(_ db: Database, _ query: SampleQuery) throws -> [QuantitySample] {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let type = query.type {
            conditions.append("s.type = ?")
            arguments.append(type.rawValue)
        }
        for (condition, values) in query.dates.conditions(start: "s.start", end: "s.\"end\"") {
            conditions.append(condition)
            arguments += values
        }
        if let source = query.source {
            conditions.append(
                "src.name = ? AND ifnull(src.identifier, '') = ifnull(?, '') AND ifnull(src.manufacturer, '') = ifnull(?, '') AND ifnull(src.model, '') = ifnull(?, '')"
            )
            arguments += [source.name, source.identifier, source.manufacturer, source.model]
        }
        if let workout = query.workout {
            conditions.append("s.workout_id = (SELECT id FROM workout WHERE uuid = ?)")
            arguments.append(workout.uuidString)
        }
        var sql = """
            SELECT s.type, s.start, s."end", s.value, s.unit, s.canonical, s.metadata,
                   src.name, src.manufacturer, src.model, src.identifier
            FROM sample s JOIN source src ON src.id = s.source_id
            """
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += query.ascending ? " ORDER BY s.start, s.id" : " ORDER BY s.start DESC, s.id DESC"
        if let limit = query.limit {
            sql += " LIMIT ?"
            arguments.append(max(0, limit))
        }
        var sources: [String: SourceDevice] = [:]
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).compactMap { row in
            try decodeSample(row, offset: 0, sources: &sources)
        }
    }

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

    // MARK: workouts

    /// Ids of the workouts matching `query`, in the query's order: the lean path (an index lookup
    /// on the statistics table for activity predicates).
    public func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID] {
        if query.isActivityOnly {
            let matches = try query.activities.map { (predicate) throws(StoreError) in try Self.matchSQL(predicate) }
            return try read { db in try Self.activityOnlyIDs(db, matches, query) }
        }
        let (sql, arguments) = try Self.workoutSQL(query, columns: "w.uuid")
        return try read { db in
            try String.fetchAll(db, sql: sql, arguments: arguments).map(Self.uuid)
        }
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

    /// The workouts matching `query`, fully loaded (activities, events, statistics).
    public func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout] {
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
    public func anchoredWorkouts(
        since anchor: QueryAnchor? = nil, limit: Int? = nil
    ) throws(StoreError)
        -> AnchoredWorkouts
    {
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
    /// change as it is made through this store. Ends when the consumer stops iterating.
    public func anchoredWorkoutUpdates(
        since anchor: QueryAnchor? = nil
    ) -> AsyncThrowingStream<AnchoredWorkouts, any Error> {
        live(initial: anchor) { (current: QueryAnchor?) throws(StoreError) -> (AnchoredWorkouts, QueryAnchor?) in
            let result = try self.anchoredWorkouts(since: current)
            return (result, result.anchor)
        }
    }

    // MARK: statistics

    /// Statistics of `type` over [start, end) from the stored samples, with the engine's rules
    /// (time-weighted average with its hold cap; cumulative samples prorated at the range's edges).
    public func statistics(
        _ type: QuantityType, from start: Date, to end: Date, source: SourceDevice? = nil, workout: UUID? = nil
    ) throws(StoreError) -> Statistics? {
        guard start.timeIntervalSinceReferenceDate.isFinite, end.timeIntervalSinceReferenceDate.isFinite else {
            throw .invalidQuery("the range's dates must be finite")
        }
        guard end > start else { throw .invalidQuery("the range must end after it starts") }
        let samples = try samples(
            matching: SampleQuery(
                type: type, dates: DateRange(start: start, end: end), source: source, workout: workout))
        return try Self.summarize(type, samples, from: start, to: end)
    }

    /// Statistics of `type` per fixed-length bucket aligned to `anchor`, covering [start, end);
    /// empty buckets are present with nil statistics.
    ///
    /// Each bucket is computed from the samples that start in it (discrete) or overlap it
    /// (cumulative, prorated); a value does not hold across a bucket boundary.
    public func statisticsCollection(
        _ type: QuantityType, from start: Date, to end: Date, anchor: Date, interval: StatisticsInterval,
        source: SourceDevice? = nil
    ) throws(StoreError) -> [StatisticsBucket] {
        let length = interval.length
        guard length.isFinite, length > 0 else { throw .invalidQuery("the interval must be a positive length") }
        for (name, date) in [("start", start), ("end", end), ("anchor", anchor)]
        where !date.timeIntervalSinceReferenceDate.isFinite {
            throw .invalidQuery("the \(name) date is not a finite date")
        }
        guard end > start else { throw .invalidQuery("the range must end after it starts") }
        let first = anchor.addingTimeInterval(floor(start.timeIntervalSince(anchor) / length) * length)
        let bucketCount = ceil(end.timeIntervalSince(first) / length)
        guard bucketCount.isFinite, bucketCount <= 100_000 else {
            throw .invalidQuery("\(bucketCount) buckets is too many; use a longer interval or a shorter range")
        }
        let count = Int(bucketCount)
        let samples = try samples(
            matching: SampleQuery(
                type: type, dates: DateRange(start: first, end: first.addingTimeInterval(Double(count) * length)),
                source: source))
        var buckets: [StatisticsBucket] = []
        var lower = 0
        for index in 0..<count {
            let bucketStart = first.addingTimeInterval(Double(index) * length)
            let bucketEnd = bucketStart.addingTimeInterval(length)
            while lower < samples.count, samples[lower].end < bucketStart, samples[lower].start < bucketStart {
                lower += 1
            }
            var inside: [QuantitySample] = []
            var cursor = lower
            while cursor < samples.count, samples[cursor].start < bucketEnd {
                // An interval sample must overlap the bucket; one that ends at its start does not.
                let sample = samples[cursor]
                if sample.end > bucketStart || (sample.end == sample.start && sample.start >= bucketStart) {
                    inside.append(sample)
                }
                cursor += 1
            }
            buckets.append(
                StatisticsBucket(
                    start: bucketStart, end: bucketEnd,
                    statistics: try Self.summarize(type, inside, from: bucketStart, to: bucketEnd)))
        }
        return buckets
    }

    /// The statistics collection as a live sequence: the buckets now, then again after each change.
    public func statisticsCollectionUpdates(
        _ type: QuantityType, from start: Date, to end: Date, anchor: Date, interval: StatisticsInterval
    ) -> AsyncThrowingStream<[StatisticsBucket], any Error> {
        live(initial: ()) { (_: Void) throws(StoreError) -> ([StatisticsBucket], Void) in
            (try self.statisticsCollection(type, from: start, to: end, anchor: anchor, interval: interval), ())
        }
    }

    /// Runs `compute` now and after every change, threading `state` through.
    private func live<Value: Sendable, State: Sendable>(
        initial: State, _ compute: @escaping @Sendable (State) throws(StoreError) -> (Value, State)
    ) -> AsyncThrowingStream<Value, any Error> {
        let changes = broadcaster.subscribe()
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var state = initial
                    let (first, next) = try compute(state)
                    state = next
                    continuation.yield(first)
                    for await _ in changes {
                        let (value, next) = try compute(state)
                        state = next
                        continuation.yield(value)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The engine's statistics of `samples` clipped to [start, end).
    static func summarize(
        _ type: QuantityType, _ samples: [QuantitySample], from start: Date, to end: Date
    )
        throws(StoreError) -> Statistics?
    {
        guard !samples.isEmpty else { return nil }
        do {
            let builder = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .other), clock: ManualClock(end),
                options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [type])))
            try builder.beginCollection(at: start)
            var clipped: [QuantitySample] = []
            clipped.reserveCapacity(samples.count)
            for var sample in samples {
                if type.aggregationStyle == .cumulative, sample.end > sample.start {
                    let from = max(sample.start, start)
                    let to = min(sample.end, end)
                    guard to > from else { continue }  // touching the range is not overlapping it
                    let share = to.timeIntervalSince(from) / sample.duration
                    sample.quantity.value *= share
                    sample.start = from
                    sample.end = to
                } else {
                    guard sample.start >= start, sample.start < end else { continue }
                    sample.end = min(sample.end, end)
                }
                clipped.append(sample)
            }
            try builder.add(clipped)
            try builder.endCollection(at: end)
            return builder.statistics(for: type)
        } catch {
            throw .engine(error)
        }
    }
}
