import Foundation
import Synchronization
import WorkoutModel

/// One accepted change to a recording, in the order it happened.
///
/// A sink receives these as they are accepted; applying the same sequence to a new builder
/// (`LiveWorkoutBuilder.apply(_:)`) rebuilds the same workout and statistics, which is how the
/// journal recovers a session after a crash. Rejected input never appears here; dropped input
/// appears only as counts.
public enum RecordingChange: Sendable, Hashable, Codable {
    case sessionState(SessionStateChange)
    /// Collection began at the date; the workout has the given id.
    case collectionBegan(Date, workoutID: UUID)
    case samples([QuantitySample])
    case events([WorkoutEvent])
    case route([RoutePoint])
    case activityBegan(WorkoutActivity)
    case activityUpdated(id: UUID, end: Date?, metadata: Metadata)
    case metadata(Metadata)
    /// Inputs dropped by the call that produced the preceding changes, by reason.
    case dropped([DropReason: Int])
    case collectionEnded(Date)
    case finished(Workout)
    case discarded
}

/// Receives every accepted change, synchronously and in order.
///
/// Called while the builder holds its lock, so that the order seen is the order applied: do little
/// (append to a buffer, hand to a writer) and never call back into the same session or builder,
/// which would deadlock.
public protocol WorkoutRecordingSink: Sendable {
    func record(_ change: RecordingChange)
}

/// A sink that keeps every change in memory; for tests, small tools and replays that want the samples.
public final class InMemoryRecording: WorkoutRecordingSink {
    private let storage = Mutex<[RecordingChange]>([])

    public init() {}

    public func record(_ change: RecordingChange) {
        storage.withLock { $0.append(change) }
    }

    /// Every change so far, in order.
    public var changes: [RecordingChange] { storage.withLock { $0 } }

    /// Every accepted sample so far, in arrival order.
    public var samples: [QuantitySample] {
        storage.withLock { changes in
            changes.flatMap { change -> [QuantitySample] in
                if case .samples(let samples) = change { return samples }
                return []
            }
        }
    }
}

/// What to do with a sample that fails validation.
public enum InvalidInputPolicy: String, Sendable, Codable, Hashable {
    /// Drop it, count it under its reason, keep the rest of the batch (live sensors).
    case dropAndCount
    /// Throw a typed error and take nothing from the batch (imports, tests, strict callers).
    case reject
}

/// Tunables of a live builder; every default is stated here.
public struct BuilderOptions: Sendable {
    /// How long a discrete value holds, at most, when no newer sample of its stream arrives:
    /// 5 s by default. Longer gaps (dropouts) leave time uncovered in the average.
    public var holdCap: TimeInterval = 5
    /// How a discrete reading fills the time until the next reading of its stream (time-weighted
    /// averages): held (the default: a live sensor's latest value holds) or a straight line to the
    /// next reading when it comes within `holdCap` (a recording's sparse records, such as a watch's
    /// smart recording, standing for the device's own once-a-second values). Minimum and maximum
    /// are the readings' either way.
    public var interpolation: ReadingInterpolation = .hold
    /// Leave pool swims' rest lengths out of the time-weighted averages (heart rate over the lengths
    /// swum, as Garmin's swim watches average it); off by default: averages run with the timer,
    /// rests included. Either way the timer runs through rests and minimum and maximum take every
    /// reading. A rest counts from when its lap event is added: readings folded before are kept.
    public var averagesExcludeRests = false
    /// How an open-water swim's SWOLF is derived from its timer time, strokes and distance (it has
    /// no lengths): see `OpenWaterSWOLF`. nil (the default): an open-water swim has no SWOLF.
    public var openWaterSWOLF: OpenWaterSWOLF?
    /// How far back (seconds, per stream) a sample may arrive out of order and still be sorted in:
    /// 2 s by default. Older arrivals are dropped as `tooLate`. Activity boundaries and pauses may
    /// also be placed up to this far back. Reading statistics folds pending samples in on the fly.
    /// Detectors raise it where they place changes in the past: to `automaticTransitions.lookback`
    /// for a swim-bike-run session with detection on, to the longest auto-pause hold + 2 s.
    public var reorderWindow: TimeInterval = 2
    /// Invalid samples, events and route points: dropped and counted (default) or rejected.
    public var invalidInput: InvalidInputPolicy = .dropAndCount
    /// Which types each activity collects.
    public var dataSource = WorkoutDataSource()
    /// Where workout and activity ids come from.
    public var identifiers: IdentifierSource = .random
    /// The workout's id; nil draws it from `identifiers`. Recovery sets it to the journaled id.
    public var workoutID: UUID?
    /// Automatic swim → T1 → bike → T2 → run detection for swim-bike-run sessions (on by default;
    /// the first explicit leg change turns it off). Sessions only.
    public var automaticTransitions = TransitionDetectionOptions()
    /// Auto-pause rules; nil (the default) never auto-pauses. Sessions only.
    public var autoPause: AutoPauseSettings?
    /// Heart-rate recovery after stop (on by default). Sessions only.
    public var heartRateRecovery = HeartRateRecoveryOptions()
    /// The legs of a multisport session when they are not the configuration's own plan (nil, the default:
    /// swimBikeRun plans swim, T1, bike, T2, run; other types plan none): a race format the caller states
    /// (`LegSequence.stated`: a duathlon is running, cycling, running, a transition between two), or legs found
    /// from the sensors as they come (`LegSequence.detected`). Sessions only; journaled with the other options.
    public var legs: LegSequence?

    public init(
        holdCap: TimeInterval = 5, reorderWindow: TimeInterval = 2, invalidInput: InvalidInputPolicy = .dropAndCount,
        dataSource: WorkoutDataSource = WorkoutDataSource(), identifiers: IdentifierSource = .random,
        workoutID: UUID? = nil, automaticTransitions: TransitionDetectionOptions = TransitionDetectionOptions(),
        autoPause: AutoPauseSettings? = nil, heartRateRecovery: HeartRateRecoveryOptions = HeartRateRecoveryOptions(),
        interpolation: ReadingInterpolation = .hold, averagesExcludeRests: Bool = false,
        openWaterSWOLF: OpenWaterSWOLF? = nil, legs: LegSequence? = nil
    ) {
        self.legs = legs
        self.openWaterSWOLF = openWaterSWOLF
        self.interpolation = interpolation
        self.averagesExcludeRests = averagesExcludeRests
        self.workoutID = workoutID
        self.automaticTransitions = automaticTransitions
        self.autoPause = autoPause
        self.heartRateRecovery = heartRateRecovery
        self.holdCap = holdCap
        self.reorderWindow = reorderWindow
        self.invalidInput = invalidInput
        self.dataSource = dataSource
        self.identifiers = identifiers
    }

    /// The reorder window the builder uses for `configuration` (see `reorderWindow`).
    func effectiveReorderWindow(for configuration: WorkoutConfiguration) -> TimeInterval {
        var window = reorderWindow
        if automaticTransitions.enabled, hasPlan(for: configuration) {
            window = Swift.max(window, automaticTransitions.lookback)
        }
        if let autoPause, let hold = autoPause.rules.values.map(\.holdTime).max() {
            window = Swift.max(window, hold + 2)
        }
        return window
    }

    /// The planned legs a session with `configuration` begins with: the stated sequence's, the configuration's
    /// own (`WorkoutConfiguration.plannedLegs`), or none yet for a detected sequence.
    func plannedLegs(for configuration: WorkoutConfiguration) -> [WorkoutConfiguration] {
        switch legs {
        case nil: configuration.plannedLegs
        case .stated(let sports): LegSequence.legs(sports, in: configuration)
        case .detected: []
        }
    }

    /// Whether a session with `configuration` is a multisport (a plan, stated or to be detected).
    func hasPlan(for configuration: WorkoutConfiguration) -> Bool {
        legs == .detected || !plannedLegs(for: configuration).isEmpty
    }

    func validate() throws(EngineError) {
        guard holdCap.isFinite, holdCap >= 0 else {
            throw .invalidOption("holdCap must be a finite number of seconds >= 0, got \(holdCap)")
        }
        guard reorderWindow.isFinite, reorderWindow >= 0 else {
            throw .invalidOption("reorderWindow must be a finite number of seconds >= 0, got \(reorderWindow)")
        }
        try automaticTransitions.validate()
        try legs?.validate()
        if legs == .detected, !automaticTransitions.enabled {
            throw .invalidOption(
                "a detected leg sequence needs automaticTransitions.enabled (nothing else finds its legs: the session "
                    + "would record no activity); enable detection or state the sequence with .stated")
        }
        try autoPause?.validate()
        try heartRateRecovery.validate()
    }
}

/// How a discrete reading fills the time until its stream's next reading (`BuilderOptions.interpolation`).
public enum ReadingInterpolation: String, Sendable, Hashable, Codable {
    /// The reading's value holds until the next one (at most the hold cap).
    case hold
    /// The value moves in a straight line to the next reading when that comes within the hold cap;
    /// otherwise it holds.
    case linear
}

/// How an open-water swim's SWOLF comes from its timer time, strokes and distance (there are no
/// lengths to average): the activity's SWOLF statistic, and a lap's in a comparison.
public enum OpenWaterSWOLF: String, Sendable, Hashable, Codable {
    /// (timer seconds + strokes) per 25 m: the pool definition scaled to 25 m (Garmin's 735XT,
    /// 920XT, 945 and fenix 5X write this).
    case secondsAndStrokesPer25m
    /// Strokes per 25 m, plus 1 (what the Forerunner 255 writes: time plays no part).
    case strokesPer25mPlusOne

    /// The SWOLF of a span; nil without strokes or distance.
    public func value(seconds: TimeInterval, strokes: Double, meters: Double) -> Double? {
        guard strokes > 0, meters > 0, seconds >= 0, (seconds + strokes + meters).isFinite else { return nil }
        switch self {
        case .secondsAndStrokesPer25m: return (seconds + strokes) * 25 / meters
        case .strokesPer25mPlusOne: return strokes * 25 / meters + 1
        }
    }
}

/// What one `add` call took and dropped.
public struct IngestReport: Sendable, Hashable {
    public var accepted = 0
    public var dropped: [DropReason: Int] = [:]
    /// The first validation problem seen, to show the user why data was dropped.
    public var firstProblem: String?

    public init() {}

    public var droppedCount: Int { dropped.values.reduce(0, +) }
}
