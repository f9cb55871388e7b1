/// How samples of a type combine into statistics.
public enum AggregationStyle: String, Sendable, Codable, Hashable {
    /// Values that add up over time (distance, strokes, energy): statistics give a sum.
    case cumulative
    /// Instantaneous readings (heart rate, power, speed): statistics give min, max, most
    /// recent and a time-weighted average.
    case discrete
}

/// The kinds of quantity the engine records, modelled on HealthKit's quantity type identifiers.
///
/// Each type has a canonical unit (what statistics are reported in), an aggregation style and a
/// range of physically possible values in the canonical unit; samples outside it are rejected.
///
/// The types are a table (`QuantityType.registry`), not a closed enum: **adding a type is one
/// entry in the registry** (and a named constant beside it when code refers to it by name). Its
/// dense `index` (array-backed tables on hot paths), its persisted identifier (`rawValue`, what
/// the store, JSON and the CLI write), its HealthKit identifier (Apple Health import) and its
/// FIT field (when a FIT record carries it) all come from that entry. Identifiers never change
/// once stored; new entries go at the end so indices of stored types stay put.
public struct QuantityType: Sendable, Hashable, CaseIterable, RawRepresentable, Codable, CodingKeyRepresentable,
    CustomStringConvertible
{
    /// Everything the engine knows about one type: one entry of `QuantityType.registry`.
    public struct Definition: Sendable, Hashable {
        /// The persisted identifier (`heartRate`): store, JSON, CLI and API spell the type so.
        public var identifier: String
        /// The unit statistics of this type are reported in.
        public var canonicalUnit: QuantityUnit
        public var aggregationStyle: AggregationStyle
        /// The physically possible values, in the canonical unit; anything outside is a bad reading.
        public var validRange: ClosedRange<Double>
        /// HealthKit's identifier (`HKQuantityTypeIdentifierHeartRate`); nil for the engine's own types.
        public var healthKitIdentifier: String?
        /// The FIT `record` field that carries the type (`heart_rate`), when one does.
        public var fitField: String?

        public init(
            _ identifier: String, unit: QuantityUnit, _ aggregationStyle: AggregationStyle,
            range: ClosedRange<Double>? = nil, healthKit: String? = nil, fit: String? = nil
        ) {
            self.identifier = identifier
            canonicalUnit = unit
            self.aggregationStyle = aggregationStyle
            // Cumulative values must not be negative; discrete ones default to the non-negative reals too.
            validRange = range ?? 0...Double.greatestFiniteMagnitude
            healthKitIdentifier = healthKit
            fitField = fit
        }
    }

    /// Every type the engine knows, in index order. Append new types at the end.
    ///
    /// Bounds are generous on purpose (a record-setting athlete must never be rejected): heart rate
    /// 1–300 count/min, speeds up to 100 m/s, power up to 5000 W, cadence up to 500 count/min, stride
    /// up to 10 m, heart-rate recovery −300…300 count/min; cumulative types must not be negative.
    public static let registry: [Definition] = [
        Definition("heartRate", unit: .countPerMinute, .discrete, range: 1...300,
            healthKit: "HKQuantityTypeIdentifierHeartRate", fit: "heart_rate"),
        Definition("distanceSwimming", unit: .meter, .cumulative, healthKit: "HKQuantityTypeIdentifierDistanceSwimming"),
        Definition("distanceCycling", unit: .meter, .cumulative, healthKit: "HKQuantityTypeIdentifierDistanceCycling",
            fit: "distance"),
        Definition("distanceWalkingRunning", unit: .meter, .cumulative,
            healthKit: "HKQuantityTypeIdentifierDistanceWalkingRunning", fit: "distance"),
        Definition("swimmingStrokeCount", unit: .count, .cumulative,
            healthKit: "HKQuantityTypeIdentifierSwimmingStrokeCount", fit: "total_cycles"),
        Definition("cyclingPower", unit: .watt, .discrete, range: 0...5000,
            healthKit: "HKQuantityTypeIdentifierCyclingPower", fit: "power"),
        Definition("cyclingCadence", unit: .countPerMinute, .discrete, range: 0...500,
            healthKit: "HKQuantityTypeIdentifierCyclingCadence", fit: "cadence"),
        Definition("cyclingSpeed", unit: .meterPerSecond, .discrete, range: 0...100,
            healthKit: "HKQuantityTypeIdentifierCyclingSpeed", fit: "speed"),
        Definition("runningPower", unit: .watt, .discrete, range: 0...5000,
            healthKit: "HKQuantityTypeIdentifierRunningPower", fit: "power"),
        Definition("runningSpeed", unit: .meterPerSecond, .discrete, range: 0...100,
            healthKit: "HKQuantityTypeIdentifierRunningSpeed", fit: "speed"),
        Definition("runningCadence", unit: .countPerMinute, .discrete, range: 0...500, fit: "cadence"),
        Definition("runningStrideLength", unit: .meter, .discrete, range: 0...10,
            healthKit: "HKQuantityTypeIdentifierRunningStrideLength", fit: "step_length"),
        Definition("activeEnergyBurned", unit: .kilocalorie, .cumulative,
            healthKit: "HKQuantityTypeIdentifierActiveEnergyBurned", fit: "calories"),
        Definition("heartRateRecoveryOneMinute", unit: .countPerMinute, .discrete, range: -300...300,
            healthKit: "HKQuantityTypeIdentifierHeartRateRecoveryOneMinute"),
        // SWOLF of pool lengths (length seconds + strokes). Derived by the engine from length events,
        // never collected as samples: an activity's statistic is the mean over its active lengths.
        Definition("swimmingSWOLF", unit: .count, .discrete, range: 0...10_000),
        // Apple Watch workout statistics (Apple Health exports).
        Definition("basalEnergyBurned", unit: .kilocalorie, .cumulative,
            healthKit: "HKQuantityTypeIdentifierBasalEnergyBurned"),
        Definition("stepCount", unit: .count, .cumulative, healthKit: "HKQuantityTypeIdentifierStepCount"),
        Definition("runningGroundContactTime", unit: .millisecond, .discrete, range: 0...10_000,
            healthKit: "HKQuantityTypeIdentifierRunningGroundContactTime", fit: "stance_time"),
        Definition("runningVerticalOscillation", unit: .centimeter, .discrete, range: 0...1_000,
            healthKit: "HKQuantityTypeIdentifierRunningVerticalOscillation", fit: "vertical_oscillation"),
        // Elevation climbed (Apple: the workout's HKElevationAscended; FIT: total_ascent).
        Definition("elevationAscended", unit: .meter, .cumulative, fit: "total_ascent"),
        Definition("flightsClimbed", unit: .count, .cumulative, healthKit: "HKQuantityTypeIdentifierFlightsClimbed"),
        Definition("walkingSpeed", unit: .meterPerSecond, .discrete, range: 0...100,
            healthKit: "HKQuantityTypeIdentifierWalkingSpeed"),
        Definition("walkingStepLength", unit: .meter, .discrete, range: 0...10,
            healthKit: "HKQuantityTypeIdentifierWalkingStepLength"),
        Definition("distanceDownhillSnowSports", unit: .meter, .cumulative,
            healthKit: "HKQuantityTypeIdentifierDistanceDownhillSnowSports"),
        Definition("distanceWheelchair", unit: .meter, .cumulative, healthKit: "HKQuantityTypeIdentifierDistanceWheelchair"),
        Definition("pushCount", unit: .count, .cumulative, healthKit: "HKQuantityTypeIdentifierPushCount"),
        // A paddled boat's distance and speed (kayak, canoe, stand-up paddleboard).
        Definition("distancePaddleSports", unit: .meter, .cumulative,
            healthKit: "HKQuantityTypeIdentifierDistancePaddleSports", fit: "distance"),
        Definition("paddleSportsSpeed", unit: .meterPerSecond, .discrete, range: 0...100,
            healthKit: "HKQuantityTypeIdentifierPaddleSportsSpeed", fit: "speed"),
    ]

    public static let heartRate = QuantityType(registered: "heartRate")
    public static let distanceSwimming = QuantityType(registered: "distanceSwimming")
    public static let distanceCycling = QuantityType(registered: "distanceCycling")
    public static let distanceWalkingRunning = QuantityType(registered: "distanceWalkingRunning")
    public static let swimmingStrokeCount = QuantityType(registered: "swimmingStrokeCount")
    public static let cyclingPower = QuantityType(registered: "cyclingPower")
    public static let cyclingCadence = QuantityType(registered: "cyclingCadence")
    public static let cyclingSpeed = QuantityType(registered: "cyclingSpeed")
    public static let runningPower = QuantityType(registered: "runningPower")
    public static let runningSpeed = QuantityType(registered: "runningSpeed")
    public static let runningCadence = QuantityType(registered: "runningCadence")
    public static let runningStrideLength = QuantityType(registered: "runningStrideLength")
    public static let activeEnergyBurned = QuantityType(registered: "activeEnergyBurned")
    public static let heartRateRecoveryOneMinute = QuantityType(registered: "heartRateRecoveryOneMinute")
    /// SWOLF of pool lengths (length seconds + strokes). Derived by the engine from length events,
    /// never collected as samples: an activity's statistic is the mean over its active lengths.
    public static let swimmingSWOLF = QuantityType(registered: "swimmingSWOLF")
    public static let basalEnergyBurned = QuantityType(registered: "basalEnergyBurned")
    public static let stepCount = QuantityType(registered: "stepCount")
    public static let runningGroundContactTime = QuantityType(registered: "runningGroundContactTime")
    public static let runningVerticalOscillation = QuantityType(registered: "runningVerticalOscillation")
    public static let elevationAscended = QuantityType(registered: "elevationAscended")
    public static let flightsClimbed = QuantityType(registered: "flightsClimbed")
    /// A paddled boat's distance (kayak, canoe, stand-up paddleboard).
    public static let distancePaddleSports = QuantityType(registered: "distancePaddleSports")
    /// A paddled boat's speed.
    public static let paddleSportsSpeed = QuantityType(registered: "paddleSportsSpeed")

    /// A dense index (0 ..< allCases.count) for array-backed tables on hot paths: the type's
    /// position in `registry`.
    public let index: Int

    private init(index: Int) {
        self.index = index
    }

    /// A registered type by identifier; a name missing from the registry is a programming error
    /// caught by the first use of the constant (the model's tests touch every one).
    private init(registered identifier: String) {
        guard let index = Self.indexByIdentifier[identifier] else {
            preconditionFailure("QuantityType.\(identifier) has no entry in QuantityType.registry")
        }
        self.index = index
    }

    private static let indexByIdentifier: [String: Int] = Dictionary(
        uniqueKeysWithValues: registry.enumerated().map { ($0.element.identifier, $0.offset) })
    private static let indexByHealthKit: [String: Int] = Dictionary(
        registry.enumerated().compactMap { entry in entry.element.healthKitIdentifier.map { ($0, entry.offset) } },
        uniquingKeysWith: { first, _ in first })

    public static let allCases: [QuantityType] = registry.indices.map { QuantityType(index: $0) }

    /// The type's entry in the registry.
    @inlinable
    public var definition: Definition { Self.registry[index] }

    /// The persisted identifier (`heartRate`).
    public var rawValue: String { definition.identifier }

    /// The type with this identifier; nil when the registry has none.
    public init?(rawValue: String) {
        guard let index = Self.indexByIdentifier[rawValue] else { return nil }
        self.index = index
    }

    /// The type HealthKit calls `identifier` (`HKQuantityTypeIdentifierHeartRate`); nil when the
    /// engine has none.
    public init?(healthKitIdentifier identifier: String) {
        guard let index = Self.indexByHealthKit[identifier] else { return nil }
        self.index = index
    }

    /// The unit statistics of this type are reported in.
    public var canonicalUnit: QuantityUnit { definition.canonicalUnit }
    public var aggregationStyle: AggregationStyle { definition.aggregationStyle }
    /// The physically possible values, in the canonical unit; anything outside is a bad reading.
    public var validRange: ClosedRange<Double> { definition.validRange }
    /// HealthKit's identifier, nil for the engine's own types.
    public var healthKitIdentifier: String? { definition.healthKitIdentifier }

    public var description: String { rawValue }

    public static func == (lhs: QuantityType, rhs: QuantityType) -> Bool { lhs.index == rhs.index }
    public func hash(into hasher: inout Hasher) { hasher.combine(index) }
}

extension QuantityType {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let identifier = try container.decode(String.self)
        guard let type = QuantityType(rawValue: identifier) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "unknown quantity type '\(identifier)'")
        }
        self = type
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
