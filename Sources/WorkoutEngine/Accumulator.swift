import Foundation
import WorkoutModel

/// Running statistics of one quantity type over one span; every update is O(1).
struct Accumulator: Sendable, Hashable {
    var minimum = Double.infinity
    var maximum = -Double.infinity
    /// Σ value × held active seconds (time-weighted average numerator).
    var weightedSum = 0.0
    /// Σ held active seconds.
    var weight = 0.0
    /// Σ values of counted samples (plain mean, used only when no time is covered).
    var valueSum = 0.0
    /// Σ prorated amounts (cumulative types).
    var sum = 0.0
    var count = 0
    var recentValue = 0.0
    var recentTime = -Double.infinity

    @inline(__always)
    mutating func addReading(_ value: Double, at time: Seconds) {
        if value < minimum { minimum = value }
        if value > maximum { maximum = value }
        valueSum += value
        count += 1
        if time >= recentTime {
            recentTime = time
            recentValue = value
        }
    }

    @inline(__always)
    mutating func addHold(_ value: Double, seconds: Seconds) {
        weightedSum += value * seconds
        weight += seconds
    }

    @inline(__always)
    mutating func addAmount(_ amount: Double, at time: Seconds) {
        sum += amount
        count += 1
        if time >= recentTime {
            recentTime = time
            recentValue = amount
        }
    }

    var isEmpty: Bool { count == 0 && weight == 0 }

    /// The public statistics value, nil when nothing was recorded.
    func statistics(
        type: QuantityType, start: Seconds, end: Seconds, duration: Seconds
    ) -> Statistics? {
        guard !isEmpty else { return nil }
        let unit = type.canonicalUnit
        var result = Statistics(
            quantityType: type, start: Date(timeIntervalSinceReferenceDate: start),
            end: Date(timeIntervalSinceReferenceDate: end), duration: duration, coveredTime: weight,
            sampleCount: count)
        switch type.aggregationStyle {
        case .cumulative:
            result.sum = Quantity(sum, unit)
        case .discrete:
            if count > 0 {
                result.minimum = Quantity(minimum, unit)
                result.maximum = Quantity(maximum, unit)
                result.mostRecent = Quantity(recentValue, unit)
                result.mostRecentDate = Date(timeIntervalSinceReferenceDate: recentTime)
            }
            if weight > 0 {
                result.average = Quantity(weightedSum / weight, unit)
            } else if count > 0 {
                result.average = Quantity(valueSum / Double(count), unit)
            }
        }
        return result
    }
}
