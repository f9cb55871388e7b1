import Foundation

/// A metadata value: the closed set of value kinds HealthKit metadata allows, plus quantities.
///
/// Codable as a plain JSON value (`"Strokes": 28`, `"ImportDevice": "Forerunner 920XT"`, a quantity as
/// `{"unit": "m", "value": 50}`, a date as the encoder's date strategy writes it). Plain JSON cannot tell
/// an integral double from an int or a date from a string, so an encoder whose `userInfo` sets
/// `MetadataValue.typedCoding` to true (the store does) writes the kind as well: `{"int": 28}`.
/// Decoding accepts the plain form, that typed form, and Swift's synthesised enum form of earlier
/// versions (`{"int": {"_0": 28}}`), so stored metadata of existing databases keeps reading.
public enum MetadataValue: Sendable, Hashable {
    case string(String)
    case double(Double)
    case int(Int)
    case bool(Bool)
    case date(Date)
    case quantity(Quantity)
}

extension MetadataValue: Codable {
    /// The `userInfo` key that asks for the typed form (`{"double": 28}`), which round-trips every kind exactly.
    public static let typedCoding: CodingUserInfoKey = {
        guard let key = CodingUserInfoKey(rawValue: "workout-engine.metadata.typed") else {
            preconditionFailure("a constant, valid coding key")
        }
        return key
    }()

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let kinds: Set<String> = ["string", "double", "int", "bool", "date", "quantity"]

    public func encode(to encoder: any Encoder) throws {
        if encoder.userInfo[Self.typedCoding] as? Bool == true {
            var container = encoder.container(keyedBy: Key.self)
            switch self {
            case .string(let value): try container.encode(value, forKey: Key("string"))
            case .double(let value): try container.encode(value, forKey: Key("double"))
            case .int(let value): try container.encode(value, forKey: Key("int"))
            case .bool(let value): try container.encode(value, forKey: Key("bool"))
            case .date(let value): try container.encode(value, forKey: Key("date"))
            case .quantity(let value): try container.encode(value, forKey: Key("quantity"))
            }
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .date(let value): try container.encode(value)
        case .quantity(let value): try container.encode(value)
        }
    }

    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            let keys = object.allKeys.map(\.stringValue)
            if keys.count == 1, let kind = keys.first, Self.kinds.contains(kind) {
                let key = Key(kind)
                // Swift's synthesised form wraps the payload as {"_0": value}.
                if let wrapped = try? object.nestedContainer(keyedBy: Key.self, forKey: key),
                    wrapped.allKeys.map(\.stringValue) == ["_0"]
                {
                    self = try Self.decode(kind: kind, from: wrapped, key: Key("_0"))
                } else {
                    self = try Self.decode(kind: kind, from: object, key: key)
                }
                return
            }
            self = .quantity(try Quantity(from: decoder))
            return
        }
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    private static func decode(kind: String, from container: KeyedDecodingContainer<Key>, key: Key) throws -> Self {
        switch kind {
        case "string": return .string(try container.decode(String.self, forKey: key))
        case "double": return .double(try container.decode(Double.self, forKey: key))
        case "int": return .int(try container.decode(Int.self, forKey: key))
        case "bool": return .bool(try container.decode(Bool.self, forKey: key))
        case "date": return .date(try container.decode(Date.self, forKey: key))
        default: return .quantity(try container.decode(Quantity.self, forKey: key))
        }
    }
}

extension MetadataValue {
    /// The value as a number: a double, or an int as a double (plain JSON does not tell them apart).
    public var numberValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        case .string, .bool, .date, .quantity: nil
        }
    }

    /// The value when it is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value when it is an int, or a double with no fractional part.
    public var intValue: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value):
            guard value.rounded() == value, abs(value) < 1e15 else { return nil }
            return Int(value)
        case .string, .bool, .date, .quantity: return nil
        }
    }
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
    /// On a heart-rate sample: `true` when it is a reading of the heart-rate recovery window, taken
    /// after the end of exercise (`bool`). Such readings are stored with the workout for the recovery
    /// curve; they are not exercise: the workout's statistics never include them, and charts, exports
    /// and track points of the exercise leave them out.
    public static let heartRateRecoveryReading = "HeartRateRecoveryReading"
    /// On a segment or leg found by automatic transition detection: how it was found (`string`).
    public static let detectedBy = "DetectedBy"
}

/// Keys of a pool length (a lap event) and of the swim sets derived from lengths (WorkoutEngine's article "Session
/// and builder semantics", "Swimming, recovery and multisport detection").
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

/// Keys an import writes on the workout with the recording device's own summary of each of its
/// sessions (FIT `session` messages), so that a report can show ours next to the device's figures
/// without the file. Session numbers start at 1 (`DeviceSession1AverageHeartRate`).
public enum DeviceSummaryKey {
    /// How many sessions the device summarised (`int`).
    public static let sessions = "DeviceSessions"

    /// One figure of one session.
    public enum Figure: String, Sendable, CaseIterable {
        /// The session's sport as the FIT profile names it (`string`).
        case sport = "Sport"
        /// count/min (`double`).
        case averageHeartRate = "AverageHeartRate"
        case maximumHeartRate = "MaximumHeartRate"
        /// Watts (`double`).
        case averagePower = "AveragePower"
        /// Metres (`double`).
        case distance = "Distance"
        /// Seconds, pauses included (`double`).
        case elapsed = "Elapsed"
        /// Seconds, pauses excluded (`double`).
        case timerTime = "TimerTime"
        /// Pool lengths (`int`).
        case lengths = "Lengths"
        /// Strokes (`double`), swims only.
        case strokes = "Strokes"
        /// The device's average SWOLF (`double`).
        case swolf = "SWOLF"
    }

    /// The key of `figure` for session `number` (1-based).
    public static func key(session number: Int, _ figure: Figure) -> String {
        "DeviceSession\(number)\(figure.rawValue)"
    }
}
