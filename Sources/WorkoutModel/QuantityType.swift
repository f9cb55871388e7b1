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
public enum QuantityType: String, Sendable, Codable, Hashable, CaseIterable, CodingKeyRepresentable {
    case heartRate
    case distanceSwimming
    case distanceCycling
    case distanceWalkingRunning
    case swimmingStrokeCount
    case cyclingPower
    case cyclingCadence
    case cyclingSpeed
    case runningPower
    case runningSpeed
    case runningCadence
    case runningStrideLength
    case activeEnergyBurned
    case heartRateRecoveryOneMinute
    /// SWOLF of pool lengths (length seconds + strokes). Derived by the engine from length events,
    /// never collected as samples: an activity's statistic is the mean over its active lengths.
    case swimmingSWOLF

    /// A dense index (0 ..< allCases.count) for array-backed tables on hot paths.
    @inlinable
    public var index: Int {
        switch self {
        case .heartRate: 0
        case .distanceSwimming: 1
        case .distanceCycling: 2
        case .distanceWalkingRunning: 3
        case .swimmingStrokeCount: 4
        case .cyclingPower: 5
        case .cyclingCadence: 6
        case .cyclingSpeed: 7
        case .runningPower: 8
        case .runningSpeed: 9
        case .runningCadence: 10
        case .runningStrideLength: 11
        case .activeEnergyBurned: 12
        case .heartRateRecoveryOneMinute: 13
        case .swimmingSWOLF: 14
        }
    }

    /// The unit statistics of this type are reported in.
    public var canonicalUnit: QuantityUnit {
        switch self {
        case .heartRate, .cyclingCadence, .runningCadence, .heartRateRecoveryOneMinute: .countPerMinute
        case .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .runningStrideLength: .meter
        case .swimmingStrokeCount, .swimmingSWOLF: .count
        case .cyclingPower, .runningPower: .watt
        case .cyclingSpeed, .runningSpeed: .meterPerSecond
        case .activeEnergyBurned: .kilocalorie
        }
    }

    public var aggregationStyle: AggregationStyle {
        switch self {
        case .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .swimmingStrokeCount,
            .activeEnergyBurned:
            .cumulative
        default:
            .discrete
        }
    }

    /// The physically possible values, in the canonical unit; anything outside is a bad reading.
    ///
    /// Bounds are generous on purpose (a record-setting athlete must never be rejected): heart rate
    /// 1–300 count/min, speeds up to 100 m/s, power up to 5000 W, cadence up to 500 count/min, stride
    /// up to 10 m, heart-rate recovery −300…300 count/min; cumulative types must not be negative.
    public var validRange: ClosedRange<Double> {
        switch self {
        case .heartRate: 1...300
        case .heartRateRecoveryOneMinute: -300...300
        case .swimmingSWOLF: 0...10_000
        case .cyclingSpeed, .runningSpeed: 0...100
        case .cyclingPower, .runningPower: 0...5000
        case .cyclingCadence, .runningCadence: 0...500
        case .runningStrideLength: 0...10
        case .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .swimmingStrokeCount,
            .activeEnergyBurned:
            0...Double.greatestFiniteMagnitude
        }
    }
}
