import Foundation

/// The kinds of workout event, as in HealthKit's HKWorkoutEventType.
public enum WorkoutEventType: String, Sendable, Codable, Hashable, CaseIterable {
    /// The user paused; time until the next resume is not active.
    case pause
    /// The user resumed.
    case resume
    /// A lap (a pool length, a manual lap, an auto lap); has a duration, laps never overlap.
    case lap
    /// A point of interest at an instant.
    case marker
    /// Movement stopped (auto-pause); time until motionResumed is not active.
    case motionPaused
    /// Movement started again.
    case motionResumed
    /// A span of interest (a swim set, an interval); has a duration, segments may overlap.
    case segment
    /// The device asked to pause or resume (a button); recorded, but only the session's own pause
    /// and resume change active time.
    case pauseOrResumeRequest

    /// Whether events of this type span time (lap, segment) rather than mark an instant.
    public var hasDuration: Bool { self == .lap || self == .segment }
}

/// Something that happened during a workout, at an instant or (laps, segments) over an interval.
public struct WorkoutEvent: Sendable, Hashable, Codable {
    public var type: WorkoutEventType
    public var start: Date
    /// Seconds; zero for every type except lap and segment.
    public var duration: TimeInterval
    public var metadata: Metadata

    public init(type: WorkoutEventType, start: Date, duration: TimeInterval = 0, metadata: Metadata = [:]) {
        self.type = type
        self.start = start
        self.duration = duration
        self.metadata = metadata
    }

    public var end: Date { start.addingTimeInterval(duration) }
}
