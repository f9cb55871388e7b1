import Foundation
import WorkoutModel

/// The kind of recovery test a heart-rate recovery value comes from, as HealthKit's
/// HKHeartRateRecoveryTestType.
public enum RecoveryTestType: String, Sendable, Codable, Hashable, CaseIterable {
    /// Recovery after exercise to (near) maximal effort: a race or a hard session.
    case maxExercise
    /// Recovery after submaximal exercise, from which a maximal value is predicted.
    case predictionSubMaxExercise
    /// A prediction without exercise.
    case predictionNonExercise
}

/// How one-minute heart-rate recovery (HRR1) is measured after a session stops
/// (<doc:SessionAndBuilder#Swimming-recovery-and-multisport-detection>).
///
/// Definitions (count/min):
/// - Heart rate at the end of exercise: the value at the stop instant of a least-squares line
///   through the readings of the last `endWindow` seconds of exercise (30 s): a sprint finish is
///   followed, noise is averaged, a single spike is not taken for the peak.
/// - Heart rate k seconds later (k = 60, 120): the value at stop + k of a least-squares line
///   through the readings within `levelWindow` seconds of it (±10 s), clamped to the readings'
///   range; only readings collected before the recovery was finished count.
/// - HRR1 = end − (60 s later); the two-minute drop = end − (120 s later).
/// A value needs `minimumReadings` readings in each of its windows (5), else it is unavailable with
/// the reason why.
public struct HeartRateRecoveryOptions: Sendable, Hashable, Codable {
    /// Whether the session collects heart rate after stop at all.
    public var enabled = true
    /// Seconds of heart rate collected after stop: 130 s by default, enough for the two-minute
    /// drop with its smoothing window; HRR1 is known once 70 s have passed.
    public var window: TimeInterval = 130
    public var testType: RecoveryTestType = .maxExercise
    /// Seconds of exercise before the stop that define the end-of-exercise heart rate.
    public var endWindow: TimeInterval = 30
    /// Half-width in seconds of the window that defines the heart rate at +60 s and +120 s.
    public var levelWindow: TimeInterval = 10
    /// Readings each window needs.
    public var minimumReadings = 5

    public init(
        enabled: Bool = true, window: TimeInterval = 130, testType: RecoveryTestType = .maxExercise,
        endWindow: TimeInterval = 30, levelWindow: TimeInterval = 10, minimumReadings: Int = 5
    ) {
        self.enabled = enabled
        self.window = window
        self.testType = testType
        self.endWindow = endWindow
        self.levelWindow = levelWindow
        self.minimumReadings = minimumReadings
    }

    func validate() throws(EngineError) {
        guard window.isFinite, window >= 0, window <= 3600 else {
            throw .invalidOption("heart-rate recovery window must be 0...3600 s, got \(window)")
        }
        guard endWindow.isFinite, endWindow > 0, endWindow <= 600 else {
            throw .invalidOption("heart-rate recovery endWindow must be in (0, 600] s, got \(endWindow)")
        }
        guard levelWindow.isFinite, levelWindow > 0, levelWindow <= 60 else {
            throw .invalidOption("heart-rate recovery levelWindow must be in (0, 60] s, got \(levelWindow)")
        }
        guard minimumReadings >= 1, minimumReadings <= 1000 else {
            throw .invalidOption("heart-rate recovery minimumReadings must be 1...1000, got \(minimumReadings)")
        }
    }
}

/// Why a heart-rate recovery value could not be computed.
public enum HeartRateRecoveryUnavailable: String, Error, Sendable, Codable, Hashable, CaseIterable,
    CustomStringConvertible
{
    /// Too few heart-rate readings in the last seconds of exercise.
    case tooFewExerciseReadings
    /// Too few readings around the minute mark (the strap dropped out or was taken off).
    case tooFewRecoveryReadings
    /// The recovery was finished (the session ended, the app quit) before the minute mark.
    case windowCutShort
    /// Recovery collection is turned off in the options.
    case disabled

    public var description: String {
        switch self {
        case .tooFewExerciseReadings: "too few heart-rate readings in the last seconds of exercise"
        case .tooFewRecoveryReadings: "too few heart-rate readings around the minute mark (strap dropout?)"
        case .windowCutShort: "recovery ended before the minute mark"
        case .disabled: "heart-rate recovery is turned off"
        }
    }
}

/// The outcome of a heart-rate recovery: the HRR1 sample, or why there is none, and the two-minute drop.
public struct HeartRateRecoveryResult: Sendable, Hashable, Codable {
    /// The end of exercise (the session's stop).
    public var endOfExercise: Date
    /// When collection of recovery heart rate finished.
    public var collectedUntil: Date
    public var heartRateAtEnd: Double?
    public var heartRateAfterOneMinute: Double?
    public var heartRateAfterTwoMinutes: Double?
    /// The heartRateRecoveryOneMinute sample (count/min) spanning [end of exercise, +60 s], with the
    /// recovery metadata; nil when unavailable.
    public var sample: QuantitySample?
    public var oneMinuteUnavailable: HeartRateRecoveryUnavailable?
    /// The two-minute drop (count/min), Garmin's "recovery heart rate".
    public var twoMinuteDrop: Double?
    public var twoMinutesUnavailable: HeartRateRecoveryUnavailable?
    /// The heart-rate readings collected in the recovery window (after the end of exercise, up to
    /// `collectedUntil`), in time order, each with its own source and marked
    /// `MetadataKey.heartRateRecoveryReading`; what the recovery curve is drawn from. Results encoded
    /// before this field existed decode with none.
    public var readings: [QuantitySample] = []

    public init(
        endOfExercise: Date, collectedUntil: Date, heartRateAtEnd: Double? = nil, heartRateAfterOneMinute: Double? = nil,
        heartRateAfterTwoMinutes: Double? = nil, sample: QuantitySample? = nil,
        oneMinuteUnavailable: HeartRateRecoveryUnavailable? = nil, twoMinuteDrop: Double? = nil,
        twoMinutesUnavailable: HeartRateRecoveryUnavailable? = nil, readings: [QuantitySample] = []
    ) {
        self.endOfExercise = endOfExercise
        self.collectedUntil = collectedUntil
        self.heartRateAtEnd = heartRateAtEnd
        self.heartRateAfterOneMinute = heartRateAfterOneMinute
        self.heartRateAfterTwoMinutes = heartRateAfterTwoMinutes
        self.sample = sample
        self.oneMinuteUnavailable = oneMinuteUnavailable
        self.twoMinuteDrop = twoMinuteDrop
        self.twoMinutesUnavailable = twoMinutesUnavailable
        self.readings = readings
    }

    private enum CodingKeys: String, CodingKey {
        case endOfExercise, collectedUntil, heartRateAtEnd, heartRateAfterOneMinute, heartRateAfterTwoMinutes, sample
        case oneMinuteUnavailable, twoMinuteDrop, twoMinutesUnavailable, readings
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        endOfExercise = try container.decode(Date.self, forKey: .endOfExercise)
        collectedUntil = try container.decode(Date.self, forKey: .collectedUntil)
        heartRateAtEnd = try container.decodeIfPresent(Double.self, forKey: .heartRateAtEnd)
        heartRateAfterOneMinute = try container.decodeIfPresent(Double.self, forKey: .heartRateAfterOneMinute)
        heartRateAfterTwoMinutes = try container.decodeIfPresent(Double.self, forKey: .heartRateAfterTwoMinutes)
        sample = try container.decodeIfPresent(QuantitySample.self, forKey: .sample)
        oneMinuteUnavailable = try container.decodeIfPresent(
            HeartRateRecoveryUnavailable.self, forKey: .oneMinuteUnavailable)
        twoMinuteDrop = try container.decodeIfPresent(Double.self, forKey: .twoMinuteDrop)
        twoMinutesUnavailable = try container.decodeIfPresent(
            HeartRateRecoveryUnavailable.self, forKey: .twoMinutesUnavailable)
        readings = try container.decodeIfPresent([QuantitySample].self, forKey: .readings) ?? []
    }

    /// HRR1 in count/min, when available.
    public var oneMinuteDrop: Double? { sample?.quantity.value }

    /// What to merge into the workout's metadata: the values, or the reasons they are missing.
    public var workoutMetadata: Metadata {
        var metadata: Metadata = [:]
        if let value = oneMinuteDrop { metadata[MetadataKey.heartRateRecoveryOneMinute] = .double(value) }
        if let reason = oneMinuteUnavailable {
            metadata[MetadataKey.heartRateRecoveryOneMinuteUnavailable] = .string(reason.rawValue)
        }
        if let value = twoMinuteDrop { metadata[MetadataKey.heartRateRecoveryTwoMinutes] = .double(value) }
        if let reason = twoMinutesUnavailable {
            metadata[MetadataKey.heartRateRecoveryTwoMinutesUnavailable] = .string(reason.rawValue)
        }
        return metadata
    }
}

/// A heart-rate reading kept for recovery: seconds since the reference date and count/min, with
/// the source it came from (kept for the stored readings; two readings are equal by time and value).
struct HeartRateReading: Sendable, Hashable {
    var time: Seconds
    var value: Double
    var source: SourceDevice?

    init(time: Seconds, value: Double, source: SourceDevice? = nil) {
        self.time = time
        self.value = value
        self.source = source
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.time == rhs.time && lhs.value == rhs.value }
    func hash(into hasher: inout Hasher) {
        hasher.combine(time)
        hasher.combine(value)
    }
}

/// The heart-rate readings a recovery needs: the tail of exercise, then everything after stop.
struct RecoveryCollector: Sendable {
    static let source = SourceDevice(name: "workout-engine", model: "heart-rate recovery")

    let options: HeartRateRecoveryOptions
    /// Exercise readings of the last `endWindow` seconds (plus slack), until the stop.
    var tail: [HeartRateReading] = []
    /// The tail's count at which readings older than the window are dropped: twice what the last pruning
    /// kept (at least `minimumPrune`), so a session holds about two windows of readings whatever its length
    /// and the pruning costs O(1) a reading.
    var pruneAt = RecoveryCollector.minimumPrune
    static let minimumPrune = 64
    var newest = -Double.infinity
    /// When the session paused, while it is paused: a stop now ends exercise there, so the end window
    /// before it and the readings after it (a recovery's) are kept however long the pause.
    var pausedAt: Seconds?
    /// Set at stop.
    var endOfExercise: Seconds?
    var recovery: [HeartRateReading] = []
    var result: HeartRateRecoveryResult?

    init(options: HeartRateRecoveryOptions) {
        self.options = options
    }

    var windowEnd: Seconds? { endOfExercise.map { $0 + options.window } }

    /// Keeps an exercise reading (before stop).
    @inline(__always)
    mutating func observeExercise(_ reading: HeartRateReading) {
        // Exact duplicates (a resent reading) count once, as in the builder.
        if tail.suffix(8).contains(reading) { return }
        tail.append(reading)
        if reading.time > newest { newest = reading.time }
        if tail.count >= pruneAt {
            // What a stop could still need: the end window before the newest reading (a stop while running
            // comes after it), and while paused the end window before the pause and a recovery after it.
            let recent = newest - options.endWindow - 5
            let paused = pausedAt.map { ($0 - options.endWindow - 5)...($0 + options.window) }
            tail.removeAll { $0.time < recent && !(paused?.contains($0.time) ?? false) }
            pruneAt = Swift.max(Self.minimumPrune, tail.count * 2)
        }
    }

    /// The session paused at `time` (a stop while paused ends exercise there).
    mutating func pause(at time: Seconds) {
        if endOfExercise == nil { pausedAt = time }
    }

    /// The session runs again.
    mutating func resume() {
        pausedAt = nil
    }

    /// Marks the end of exercise.
    mutating func stop(at time: Seconds) {
        guard endOfExercise == nil else { return }
        endOfExercise = time
        // Readings after the stop that arrived early belong to the recovery.
        recovery = tail.filter { $0.time > time }
        tail.removeAll { $0.time > time || $0.time < time - options.endWindow }
    }

    /// Keeps a reading after stop; returns false when it lies outside the recovery window.
    mutating func observeRecovery(_ reading: HeartRateReading) -> Bool {
        guard let endOfExercise, result == nil, reading.time >= endOfExercise,
            reading.time <= endOfExercise + options.window, !recovery.contains(reading)
        else { return false }
        recovery.append(reading)
        return true
    }

    /// Least-squares line through `readings` evaluated at `at`, clamped to their range.
    static func level(_ readings: [HeartRateReading], at time: Seconds) -> Double? {
        guard !readings.isEmpty else { return nil }
        let n = Double(readings.count)
        let meanT = readings.reduce(0) { $0 + $1.time } / n
        let meanV = readings.reduce(0) { $0 + $1.value } / n
        var sxx = 0.0
        var sxy = 0.0
        for reading in readings {
            sxx += (reading.time - meanT) * (reading.time - meanT)
            sxy += (reading.time - meanT) * (reading.value - meanV)
        }
        let low = readings.map(\.value).min() ?? meanV
        let high = readings.map(\.value).max() ?? meanV
        guard sxx > 1e-9 else { return meanV }
        let value = meanV + sxy / sxx * (time - meanT)
        return Swift.min(Swift.max(value, low), high)
    }

    /// The heart rate `offset` seconds after the stop, or why it is unknown.
    private func recoveryLevel(after offset: Seconds, stop: Seconds, until: Seconds) -> Result<
        Double, HeartRateRecoveryUnavailable
    > {
        let target = stop + offset
        guard until >= target else { return .failure(.windowCutShort) }
        let window = recovery.filter {
            abs($0.time - target) <= options.levelWindow && $0.time <= until
        }
        guard window.count >= options.minimumReadings, let value = Self.level(window, at: target) else {
            return .failure(.tooFewRecoveryReadings)
        }
        return .success(value)
    }

    /// Computes the result with the readings collected up to `until`.
    func compute(
        until: Seconds, activityType: WorkoutActivityType, activeDuration: TimeInterval, maximumHeartRate: Double?
    ) -> HeartRateRecoveryResult? {
        guard let stop = endOfExercise else { return nil }
        var result = HeartRateRecoveryResult(endOfExercise: date(stop), collectedUntil: date(until))
        result.readings = recovery.filter { $0.time >= stop && $0.time <= until }.sorted { $0.time < $1.time }.map {
            QuantitySample(
                .heartRate, $0.value, at: date($0.time), source: $0.source ?? Self.source,
                metadata: [MetadataKey.heartRateRecoveryReading: .bool(true)])
        }
        let exercise = tail.filter { $0.time <= stop && $0.time >= stop - options.endWindow }
        guard exercise.count >= options.minimumReadings, let atEnd = Self.level(exercise, at: stop) else {
            result.oneMinuteUnavailable = .tooFewExerciseReadings
            result.twoMinutesUnavailable = .tooFewExerciseReadings
            return result
        }
        result.heartRateAtEnd = atEnd
        switch recoveryLevel(after: 60, stop: stop, until: until) {
        case .success(let value):
            result.heartRateAfterOneMinute = value
            var metadata: Metadata = [
                MetadataKey.heartRateRecoveryTestType: .string(options.testType.rawValue),
                MetadataKey.heartRateRecoveryActivityType: .string(activityType.rawValue),
                MetadataKey.heartRateRecoveryActivityDuration: .double(activeDuration),
                MetadataKey.heartRateAtEndOfExercise: .double(atEnd),
                MetadataKey.heartRateOneMinuteLater: .double(value),
            ]
            if let maximumHeartRate {
                metadata[MetadataKey.heartRateRecoveryMaxObservedHeartRate] = .double(maximumHeartRate)
            }
            result.sample = QuantitySample(
                .heartRateRecoveryOneMinute, atEnd - value, at: date(stop), end: date(stop + 60), source: Self.source,
                metadata: metadata)
        case .failure(let reason):
            result.oneMinuteUnavailable = reason
        }
        switch recoveryLevel(after: 120, stop: stop, until: until) {
        case .success(let value):
            result.heartRateAfterTwoMinutes = value
            result.twoMinuteDrop = atEnd - value
            result.sample?.metadata[MetadataKey.heartRateTwoMinutesLater] = .double(value)
            result.sample?.metadata[MetadataKey.heartRateRecoveryTwoMinutes] = .double(atEnd - value)
        case .failure(let reason):
            result.twoMinutesUnavailable = reason
        }
        return result
    }
}
