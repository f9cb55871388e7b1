/// Little-endian reads from a byte buffer (callers guard the length).
enum LittleEndian {
    @inline(__always)
    static func u16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset &+ 1]) << 8
    }

    @inline(__always)
    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(u16(bytes, offset)) | UInt32(u16(bytes, offset &+ 2)) << 16
    }
}

/// Turns a cumulative revolution count and the event time of the last revolution, as speed and
/// cadence sensors send them, into a rate.
///
/// Counts and times roll over (the differences are taken modulo their width). When the count has not
/// moved (no new revolution: Δ = 0, nothing to divide), the last rate is held until the stop timeout
/// has passed on the caller's stop clock (messages for ANT, milliseconds for watch-link GATT), then the
/// rate is 0, as a head unit shows 0 a few seconds after the wheel stops. A rate above 50 revolutions
/// per second (a 105 m/s wheel) is taken for a sensor reset, or a gap longer than the time's rollover:
/// the tracker starts again from that reading.
struct RevolutionTracker: Sendable, Hashable {
    static let maximumRate = 50.0

    private var lastCount: UInt32 = 0
    private var lastTime: UInt16 = 0
    private var hasLast = false
    /// Revolutions per second, once known.
    private(set) var rate: Double?
    /// Stop-clock units since the count last moved.
    private var idle = 0
    /// Revolutions counted since the first reading.
    private(set) var total: UInt64 = 0

    /// Takes a reading; `countMask` is the count's width (0xFFFF or 0xFFFF_FFFF), `elapsed` the stop
    /// clock's advance since the previous reading. Returns the rate in revolutions per second, if known.
    @discardableResult
    mutating func update(
        count: UInt32, countMask: UInt32, time: UInt16, ticksPerSecond: Double, elapsed: Int, stopAfter: Int
    ) -> Double? {
        defer {
            lastCount = count & countMask
            lastTime = time
            hasLast = true
        }
        guard hasLast else {
            idle = 0
            return rate
        }
        let revolutions = (count &- lastCount) & countMask
        if revolutions == 0 {
            let step = max(0, elapsed)
            idle = step > Int.max &- idle ? Int.max : idle &+ step  // saturating
            if idle >= stopAfter { rate = 0 }
            return rate
        }
        let ticks = time &- lastTime
        guard ticks > 0 else { return rate }  // new revolutions at the same instant: not a rate
        let value = Double(revolutions) * ticksPerSecond / Double(ticks)
        guard value <= Self.maximumRate else {
            rate = nil
            idle = 0
            return nil
        }
        idle = 0
        total &+= UInt64(revolutions)
        rate = value
        return value
    }

    /// Forgets the previous reading (the next one starts again); the total is kept.
    mutating func restart() {
        hasLast = false
        rate = nil
        idle = 0
    }
}
