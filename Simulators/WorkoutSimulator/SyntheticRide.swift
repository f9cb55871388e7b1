import Foundation
import WorkoutModel

/// A deterministic synthetic ride: five 1 Hz streams (heart rate, speed, power, cadence, distance)
/// from three sensors, the same for the same seed. Sample `k` is a pure function of the seed and
/// `k`, so a process that resumes at any index produces exactly what an uninterrupted one would.
///
/// This is the seed of the watch simulator: crash tests, journal recovery and benchmarks use it.
public struct SyntheticRide: Sendable {
    public static let streams = 5
    public let seed: UInt64
    public let start: Date

    public static let heartRateStrap = SourceDevice(name: "HRM", manufacturer: "Simulated", identifier: "ant:120:1")
    public static let speedSensor = SourceDevice(name: "Speed", manufacturer: "Simulated", identifier: "ant:121:2")
    public static let powerMeter = SourceDevice(name: "Power", manufacturer: "Simulated", identifier: "ant:11:3")

    public init(seed: UInt64, start: Date = Date(timeIntervalSinceReferenceDate: 800_000_000)) {
        self.seed = seed
        self.start = start
    }

    /// The instant of second `second` of the ride.
    public func date(_ second: Int) -> Date { start.addingTimeInterval(Double(second)) }

    /// Sample number `index` (second `index / 5`, stream `index % 5`).
    public func sample(_ index: Int) -> QuantitySample {
        let second = index / Self.streams
        let at = date(second)
        let noise = Double(Self.mix(seed &+ UInt64(truncatingIfNeeded: second)) % 1000) / 1000  // 0 ..< 1
        let effort = 0.5 + 0.5 * sin(Double(second) / 300)
        switch index % Self.streams {
        case 0:
            return QuantitySample(
                .heartRate, (120 + 40 * effort + 4 * noise).rounded(), at: at, source: Self.heartRateStrap)
        case 1:
            return QuantitySample(.cyclingSpeed, 7 + 4 * effort + noise, at: at, source: Self.speedSensor)
        case 2:
            return QuantitySample(
                .cyclingPower, (150 + 120 * effort + 20 * noise).rounded(), at: at, source: Self.powerMeter)
        case 3:
            return QuantitySample(
                .cyclingCadence, (80 + 15 * effort + 3 * noise).rounded(), at: at, source: Self.powerMeter)
        default:
            return QuantitySample(
                .distanceCycling, 7 + 4 * effort + noise, at: at, end: at.addingTimeInterval(1),
                source: Self.speedSensor)
        }
    }

    /// Samples `range` in order.
    public func samples(_ range: Range<Int>) -> [QuantitySample] { range.map(sample) }

    /// One SplitMix64 output for `value`: a stateless hash of (seed, second).
    private static func mix(_ value: UInt64) -> UInt64 {
        var generator = SplitMix(value)
        return generator.next()
    }
}
