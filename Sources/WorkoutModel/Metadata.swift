import Foundation

/// A metadata value: the closed set of value kinds HealthKit metadata allows, plus quantities.
public enum MetadataValue: Sendable, Hashable, Codable {
    case string(String)
    case double(Double)
    case int(Int)
    case bool(Bool)
    case date(Date)
    case quantity(Quantity)
}

/// Metadata keyed by string; keys are free-form, the engine's own keys are in `MetadataKey`.
public typealias Metadata = [String: MetadataValue]

extension MetadataValue {
    /// False for values that cannot be stored faithfully: NaN or infinite numbers, dates and quantities.
    public var isFinite: Bool {
        switch self {
        case .double(let value): value.isFinite
        case .date(let date): date.timeIntervalSinceReferenceDate.isFinite
        case .quantity(let quantity): quantity.value.isFinite
        case .string, .int, .bool: true
        }
    }
}

/// The first key whose value is not finite, if any.
public func firstNonFiniteKey(_ metadata: Metadata) -> String? {
    metadata.keys.sorted().first { metadata[$0]?.isFinite == false }
}

/// Keys the engine itself writes or reads.
public enum MetadataKey {
    /// Lap length of a pool swim (`quantity`, length).
    public static let lapLength = "LapLength"
    /// On a derived segment event: what the segment is (`string`; `swimSet` for a set of pool lengths).
    public static let segmentKind = "SegmentKind"
    /// Recovery test type of a heart-rate recovery sample (`string`, a `RecoveryTestType` raw value).
    public static let heartRateRecoveryTestType = "HeartRateRecoveryTestType"
    /// The workout's activity type, on a heart-rate recovery sample (`string`).
    public static let heartRateRecoveryActivityType = "HeartRateRecoveryActivityType"
    /// The workout's active duration in seconds, on a heart-rate recovery sample (`double`).
    public static let heartRateRecoveryActivityDuration = "HeartRateRecoveryActivityDuration"
    /// The highest heart rate of the workout (count/min), on a heart-rate recovery sample (`double`).
    public static let heartRateRecoveryMaxObservedHeartRate = "HeartRateRecoveryMaxObservedHeartRate"
    /// Heart rate at the end of exercise (count/min) as the recovery defines it (`double`).
    public static let heartRateAtEndOfExercise = "HeartRateAtEndOfExercise"
    /// Heart rate one minute after the end of exercise (count/min) as the recovery defines it (`double`).
    public static let heartRateOneMinuteLater = "HeartRateOneMinuteLater"
    /// Heart rate two minutes after the end of exercise (count/min) (`double`).
    public static let heartRateTwoMinutesLater = "HeartRateTwoMinutesLater"
    /// One-minute heart-rate recovery (count/min), on the workout once it is known (`double`).
    public static let heartRateRecoveryOneMinute = "HeartRateRecoveryOneMinute"
    /// Two-minute heart-rate drop (count/min), Garmin's "recovery heart rate" (`double`).
    public static let heartRateRecoveryTwoMinutes = "HeartRateRecoveryTwoMinutes"
    /// Why there is no one-minute recovery value (`string`, a `HeartRateRecoveryUnavailable` raw value).
    public static let heartRateRecoveryOneMinuteUnavailable = "HeartRateRecoveryOneMinuteUnavailable"
    /// Why there is no two-minute recovery value (`string`).
    public static let heartRateRecoveryTwoMinutesUnavailable = "HeartRateRecoveryTwoMinutesUnavailable"
    /// On a segment or leg found by automatic transition detection: how it was found (`string`).
    public static let detectedBy = "DetectedBy"
}

/// Keys of a pool length (a lap event) and of the swim sets derived from lengths (DESIGN §7).
public enum SwimMetadataKey {
    /// Strokes of the length (`int`); absent for drills and rests.
    public static let strokes = "Strokes"
    /// Stroke style (`string`: freestyle, backstroke, breaststroke, butterfly, mixed …).
    public static let strokeStyle = "StrokeStyle"
    /// `active`, `rest` or `drill` (`string`); a lap carrying this key is a pool length.
    public static let lengthKind = "LengthKind"
    /// SWOLF (`double`): length seconds + strokes; for a set, the mean over its active lengths.
    public static let swolf = "SWOLF"
    /// Lengths in a swim set (`int`), and how many of them were active (`int`).
    public static let lengths = "Lengths"
    public static let activeLengths = "ActiveLengths"
}

/// The kind of a pool length, as watches report it.
public enum LengthKind: String, Sendable, Codable, Hashable, CaseIterable {
    /// Swimming with a counted stroke: the only kind with a SWOLF.
    case active
    /// Resting at the wall: ends a swim set.
    case rest
    /// A drill (kick, single arm …): no stroke count, no SWOLF.
    case drill
}
