import Foundation

/// Statistics of one quantity type over one span (a workout or one activity).
///
/// All quantities are in the type's canonical unit. Discrete types fill minimum, maximum,
/// average and mostRecent; cumulative types fill sum. The average is time-weighted: each value
/// holds until the next sample of the same stream (type and source), for at most the builder's
/// hold cap, and only active time (not paused, inside the span) counts.
public struct Statistics: Sendable, Hashable, Codable {
    public var quantityType: QuantityType
    public var start: Date
    public var end: Date
    public var minimum: Quantity?
    public var maximum: Quantity?
    public var average: Quantity?
    public var mostRecent: Quantity?
    /// When the most recent sample was taken.
    public var mostRecentDate: Date?
    public var sum: Quantity?
    /// Active seconds of the span (pauses excluded).
    public var duration: TimeInterval
    /// Seconds the time-weighted average covers (active time with a value holding).
    public var coveredTime: TimeInterval
    /// Samples that contributed.
    public var sampleCount: Int

    public init(
        quantityType: QuantityType, start: Date, end: Date, minimum: Quantity? = nil, maximum: Quantity? = nil,
        average: Quantity? = nil, mostRecent: Quantity? = nil, mostRecentDate: Date? = nil, sum: Quantity? = nil,
        duration: TimeInterval, coveredTime: TimeInterval = 0, sampleCount: Int = 0
    ) {
        self.quantityType = quantityType
        self.start = start
        self.end = end
        self.minimum = minimum
        self.maximum = maximum
        self.average = average
        self.mostRecent = mostRecent
        self.mostRecentDate = mostRecentDate
        self.sum = sum
        self.duration = duration
        self.coveredTime = coveredTime
        self.sampleCount = sampleCount
    }
}
