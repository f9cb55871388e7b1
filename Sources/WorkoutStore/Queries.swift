import Foundation
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
    package var isActivityOnly: Bool {
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

    /// For backends outside this module (WorkoutStorePostgres).
    package init(added: [Workout], deleted: [UUID], anchor: QueryAnchor) {
        self.added = added
        self.deleted = deleted
        self.anchor = anchor
    }
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

    /// Samples matching `query`: the chunks whose index columns can match, decoded, filtered exactly,
    /// in time order (samples at the same instant in the order they were saved).
    public func samples(matching query: SampleQuery) throws(StoreError) -> [QuantitySample] {
        let from = query.dates.start?.timeIntervalSinceReferenceDate
        let to = query.dates.end?.timeIntervalSinceReferenceDate
        var filter = ChunkFilter(type: query.type, source: query.source, workout: query.workout)
        let options = query.dates.options
        if options.contains(.strictStartDate) {
            filter.startFrom = from
            filter.startBefore = to
        }
        if options.contains(.strictEndDate) {
            filter.endFrom = from
            filter.endThrough = to
        }
        if options.isEmpty {
            filter.startBefore = to
            filter.endFrom = from
        }
        let chunks = try backend.sampleChunks(filter)
        // The whole chunk passes when its index columns say every sample matches.
        func matches(_ start: Double, _ end: Double) -> Bool {
            if options.contains(.strictStartDate) {
                if let from, !(start >= from) { return false }
                if let to, !(start < to) { return false }
            }
            if options.contains(.strictEndDate) {
                if let from, !(end > from) { return false }
                if let to, !(end <= to) { return false }
            }
            if options.isEmpty {
                if let to, !(start < to) { return false }
                if let from, !(end >= from) { return false }
            }
            return true
        }
        var keys: [SampleKey] = []
        var found: [QuantitySample] = []
        var runs: [Range<Int>] = []
        for stored in chunks {
            let chunk = stored.chunk
            let whole = matches(chunk.startMin, chunk.endMin) && matches(chunk.startMax, chunk.endMax)
                && matches(chunk.startMin, chunk.endMax) && matches(chunk.startMax, chunk.endMin)
            let lower = keys.count
            for (ordinal, sample) in try Series.decode(chunk, workout: stored.workout) {
                let start = sample.start.timeIntervalSinceReferenceDate
                if !whole, !matches(start, sample.end.timeIntervalSinceReferenceDate) { continue }
                keys.append(SampleKey(start: start, workout: stored.workoutOrder, ordinal: ordinal))
                found.append(sample)
            }
            if keys.count > lower { runs.append(lower..<keys.count) }
        }
        var order = Self.mergedOrder(keys, runs)
        if !query.ascending { order.reverse() }
        if let limit = query.limit, order.count > max(0, limit) { order.removeLast(order.count - max(0, limit)) }
        return order.map { found[$0] }
    }

    /// The position of a sample in query order: start, then workout, then the order saved.
    struct SampleKey: Comparable {
        var start: Double
        var workout: Int64
        var ordinal: Int64
        static func < (a: SampleKey, b: SampleKey) -> Bool {
            if a.start != b.start { return a.start < b.start }
            if a.workout != b.workout { return a.workout < b.workout }
            return a.ordinal < b.ordinal
        }
    }

    /// Indexes of `keys` in ascending order. Each run (a chunk's samples) is usually sorted already:
    /// runs are sorted on their own when needed, then merged through a heap of run heads.
    static func mergedOrder(_ keys: [SampleKey], _ runs: [Range<Int>]) -> [Int] {
        var sortedRuns: [[Int]] = []
        sortedRuns.reserveCapacity(runs.count)
        for run in runs {
            var indexes = Array(run)
            var sorted = true
            var previous = run.lowerBound
            for index in run.dropFirst() {
                if keys[index] < keys[previous] {
                    sorted = false
                    break
                }
                previous = index
            }
            if !sorted { indexes.sort { keys[$0] < keys[$1] } }
            sortedRuns.append(indexes)
        }
        if sortedRuns.count == 1 { return sortedRuns[0] }
        var cursors = [Int](repeating: 0, count: sortedRuns.count)
        func head(_ run: Int) -> SampleKey { keys[sortedRuns[run][cursors[run]]] }
        // A binary min-heap of run numbers by their head's key.
        var heap = Array(sortedRuns.indices)
        func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1
                guard left < heap.count else { return }
                var smallest = left
                if left + 1 < heap.count, head(heap[left + 1]) < head(heap[left]) { smallest = left + 1 }
                guard head(heap[smallest]) < head(heap[parent]) else { return }
                heap.swapAt(smallest, parent)
                parent = smallest
            }
        }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        var order: [Int] = []
        order.reserveCapacity(keys.count)
        while let run = heap.first {
            order.append(sortedRuns[run][cursors[run]])
            cursors[run] += 1
            if cursors[run] == sortedRuns[run].count {
                heap[0] = heap[heap.count - 1]
                heap.removeLast()
            }
            if !heap.isEmpty { siftDown(0) }
        }
        return order
    }

    // MARK: workouts

    /// Ids of the workouts matching `query`, in the query's order: the lean path (an index lookup
    /// on the statistics for activity predicates).
    public func workoutIDs(matching query: WorkoutQuery) throws(StoreError) -> [UUID] {
        try backend.workoutIDs(matching: query)
    }

    /// The workouts matching `query`, fully loaded (activities, events, statistics).
    public func workouts(matching query: WorkoutQuery) throws(StoreError) -> [Workout] {
        try backend.workouts(matching: query)
    }

    // MARK: anchored

    /// Workouts added and deleted since `anchor` (everything when nil), oldest change first, at
    /// most `limit` changes; the returned anchor continues from the last change included.
    public func anchoredWorkouts(
        since anchor: QueryAnchor? = nil, limit: Int? = nil
    ) throws(StoreError)
        -> AnchoredWorkouts
    {
        try backend.anchoredWorkouts(since: anchor, limit: limit)
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
        let changes = subscribeToChanges()
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
