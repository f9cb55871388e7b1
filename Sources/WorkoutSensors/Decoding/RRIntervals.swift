/// Beat-to-beat (RR) intervals, oldest first: a collection of seconds, kept as the 1/1024 s ticks the
/// sensors send.
///
/// Up to nine intervals (what a heart-rate measurement holds in a default 20-byte BLE notification;
/// ANT+ gives at most one) are stored inline, so a reading costs no allocation; more spill to an array.
public struct RRIntervals: RandomAccessCollection, Sendable, Hashable, CustomStringConvertible {
    public typealias Index = Int
    public typealias Element = Double

    private static let inlineCapacity = 9
    private var inline: (UInt16, UInt16, UInt16, UInt16, UInt16, UInt16, UInt16, UInt16, UInt16) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0
    )
    private var inlineCount: UInt8 = 0
    private var overflow: [UInt16] = []

    /// No intervals.
    public init() {}

    /// Intervals of the given ticks (1/1024 s).
    public init<Ticks: Sequence<UInt16>>(ticks: Ticks) {
        for tick in ticks { append(ticks: tick) }
    }

    /// Adds an interval of `ticks` 1/1024 s.
    public mutating func append(ticks: UInt16) {
        if Int(inlineCount) < Self.inlineCapacity {
            let offset = Int(inlineCount) &* 2
            withUnsafeMutableBytes(of: &inline) { $0.storeBytes(of: ticks, toByteOffset: offset, as: UInt16.self) }
            inlineCount &+= 1
        } else {
            overflow.append(ticks)
        }
    }

    /// The interval at `index` in ticks of 1/1024 s, as sent.
    public func ticks(at index: Int) -> UInt16 {
        if index < Self.inlineCapacity {
            return withUnsafeBytes(of: inline) { $0.load(fromByteOffset: index &* 2, as: UInt16.self) }
        }
        return overflow[index &- Self.inlineCapacity]
    }

    /// Every interval in ticks of 1/1024 s.
    public var ticks: [UInt16] { indices.map { ticks(at: $0) } }

    public var startIndex: Int { 0 }
    public var endIndex: Int { Int(inlineCount) &+ overflow.count }

    /// The interval at `index`, seconds.
    public subscript(index: Int) -> Double { Double(ticks(at: index)) / 1024 }

    public static func == (lhs: RRIntervals, rhs: RRIntervals) -> Bool {
        lhs.count == rhs.count && lhs.indices.allSatisfy { lhs.ticks(at: $0) == rhs.ticks(at: $0) }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for index in indices { hasher.combine(ticks(at: index)) }
    }

    public var description: String { Array(self).description }
}
