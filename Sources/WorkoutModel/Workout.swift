import Foundation

/// One leg or part of a workout (a triathlon's swim, T1, bike …), as in HKWorkoutActivity.
public struct WorkoutActivity: Sendable, Hashable, Codable, Identifiable {
    public var id: UUID
    public var configuration: WorkoutConfiguration
    public var start: Date
    /// nil while the activity is still going on.
    public var end: Date?
    public var metadata: Metadata
    /// Active seconds (pauses excluded), as of `end` or of the moment it was read.
    public var duration: TimeInterval
    /// Statistics per type, as of `end` or of the moment it was read.
    public var statistics: [QuantityType: Statistics]

    public init(
        id: UUID = UUID(), configuration: WorkoutConfiguration, start: Date, end: Date? = nil,
        metadata: Metadata = [:], duration: TimeInterval = 0, statistics: [QuantityType: Statistics] = [:]
    ) {
        self.id = id
        self.configuration = configuration
        self.start = start
        self.end = end
        self.metadata = metadata
        self.duration = duration
        self.statistics = statistics
    }

    /// Seconds from start to end (pauses included); nil while open.
    public var elapsed: TimeInterval? { end.map { $0.timeIntervalSince(start) } }
}

/// How many inputs the engine dropped, and why. Nothing is dropped without a count here.
public struct IngestCounters: Sendable, Hashable, Codable {
    public var accepted: Int = 0
    public var dropped: [DropReason: Int] = [:]

    public init() {}

    public var totalDropped: Int { dropped.values.reduce(0, +) }

    public mutating func drop(_ reason: DropReason, count: Int = 1) {
        dropped[reason, default: 0] += count
    }

    public subscript(reason: DropReason) -> Int { dropped[reason] ?? 0 }
}

/// A finished workout, as in HKWorkout: immutable once the builder returns it.
///
/// Samples and route points are not held here (a 24-hour ultra would not fit); they went to the
/// builder's sink as they arrived and are stored next to the workout by its id.
public struct Workout: Sendable, Hashable, Codable, Identifiable {
    public var id: UUID
    public var configuration: WorkoutConfiguration
    public var start: Date
    public var end: Date
    /// Active seconds: elapsed minus user pauses and motion pauses (FIT total_timer_time).
    public var duration: TimeInterval
    public var activities: [WorkoutActivity]
    public var events: [WorkoutEvent]
    public var metadata: Metadata
    public var statistics: [QuantityType: Statistics]
    /// What the builder took and dropped while recording.
    public var counters: IngestCounters

    public init(
        id: UUID, configuration: WorkoutConfiguration, start: Date, end: Date, duration: TimeInterval,
        activities: [WorkoutActivity], events: [WorkoutEvent], metadata: Metadata,
        statistics: [QuantityType: Statistics], counters: IngestCounters
    ) {
        self.id = id
        self.configuration = configuration
        self.start = start
        self.end = end
        self.duration = duration
        self.activities = activities
        self.events = events
        self.metadata = metadata
        self.statistics = statistics
        self.counters = counters
    }

    public var activityType: WorkoutActivityType { configuration.activityType }

    /// Seconds from start to end, pauses included (FIT total_elapsed_time).
    public var elapsed: TimeInterval { end.timeIntervalSince(start) }
}
