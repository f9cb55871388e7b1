/// ANT serial messages (as a USB ANT stick or an ANT UART module sends them) and ANT+ data pages.
public enum ANT {
    public static let sync: UInt8 = 0xA4

    /// Message ids used here.
    public enum MessageID: UInt8, Sendable {
        case broadcastData = 0x4E
        case channelID = 0x51
        case channelEvent = 0x40
        case startup = 0x6F
    }

    /// ANT+ device types.
    public enum DeviceType: UInt8, Sendable {
        case heartRate = 120
        case bikeSpeedCadence = 121
        case bikeCadence = 122
        case bikeSpeed = 123
        case footPod = 124
        case bicyclePower = 11
    }

    /// XOR of every byte before the checksum, the sync byte included.
    public static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt8 {
        bytes.reduce(0, ^)
    }

    /// A framed message: sync, payload length, id, payload, checksum.
    public static func frame(_ id: MessageID, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [sync, UInt8(payload.count), id.rawValue] + payload
        bytes.append(checksum(bytes))
        return bytes
    }

    /// A broadcast data message: channel and 8 data bytes (a shorter page is padded with 0xFF).
    public static func broadcast(channel: UInt8, _ page: [UInt8]) -> [UInt8] {
        let data = Array(page.prefix(8)) + Array(repeating: 0xFF, count: Swift.max(0, 8 - page.count))
        return frame(.broadcastData, [channel] + data)
    }

    /// A channel id message: channel, device number (u16 LE), device type, transmission type.
    public static func channelID(
        channel: UInt8, deviceNumber: UInt16, type: DeviceType, transmission: UInt8 = 1
    )
        -> [UInt8]
    {
        frame(
            .channelID,
            [channel, UInt8(deviceNumber & 0xFF), UInt8(deviceNumber >> 8), type.rawValue, transmission])
    }

    static func le16(_ value: Int) -> (UInt8, UInt8) {
        (UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8))
    }

    /// Heart-rate page 0 or 4 (page 4 carries the previous beat time); bit 7 of byte 0 is the toggle.
    /// Times in 1/1024 s, beat count and times roll over.
    public static func heartRatePage(
        page4: Bool, toggle: Bool, beatTime: Int, previousBeatTime: Int, beatCount: Int, heartRate: Int
    ) -> [UInt8] {
        let (t0, t1) = le16(beatTime)
        let (p0, p1) = le16(previousBeatTime)
        let number: UInt8 = (page4 ? 4 : 0) | (toggle ? 0x80 : 0)
        return [
            number, 0xFF, page4 ? p0 : 0xFF, page4 ? p1 : 0xFF, t0, t1,
            UInt8(truncatingIfNeeded: beatCount), UInt8(clamping: heartRate),
        ]
    }

    /// Bike speed and cadence (device type 121): crank event time, crank revolutions, wheel event time,
    /// wheel revolutions; times in 1/1024 s; all roll over at 16 bits.
    public static func speedCadencePage(
        crankTime: Int, crankRevolutions: Int, wheelTime: Int, wheelRevolutions: Int
    )
        -> [UInt8]
    {
        let (c0, c1) = le16(crankTime)
        let (r0, r1) = le16(crankRevolutions)
        let (w0, w1) = le16(wheelTime)
        let (v0, v1) = le16(wheelRevolutions)
        return [c0, c1, r0, r1, w0, w1, v0, v1]
    }

    /// Bicycle power page 0x10: event count, pedal balance (0xFF none), cadence, accumulated power,
    /// instantaneous power.
    public static func powerPage(eventCount: Int, cadence: Int, accumulatedPower: Int, power: Int) -> [UInt8] {
        let (a0, a1) = le16(accumulatedPower)
        let (p0, p1) = le16(power)
        return [0x10, UInt8(truncatingIfNeeded: eventCount), 0xFF, UInt8(clamping: cadence), a0, a1, p0, p1]
    }

    /// Stride speed and distance page 1: time (1/200 s fraction, s), distance (m, 1/16 m), speed
    /// (m/s, 1/256 m/s), stride count, latency (1/32 s).
    public static func footPodPage(time: Double, distance: Double, speed: Double, strides: Int) -> [UInt8] {
        // Only the low bits go on the wire: reduce first, so no value can trap a conversion.
        func wrapped(_ value: Double, _ modulus: Double) -> Double {
            guard value.isFinite, value >= 0 else { return 0 }
            return value.truncatingRemainder(dividingBy: modulus)
        }
        let time = wrapped(time, 256)
        let distance = wrapped(distance, 256)
        let speed = Swift.min(wrapped(speed, 1e6), 15.99)
        let timeWhole = Int(time)
        let timeFraction = Int(((time - Double(timeWhole)) * 200).rounded(.down))
        let distanceWhole = Int(distance)
        let distanceFraction = Int(((distance - Double(distanceWhole)) * 16).rounded(.down))
        let speedWhole = Int(speed)
        let speedFraction = Int(((speed - Double(speedWhole)) * 256).rounded(.down))
        return [
            0x01, UInt8(clamping: timeFraction), UInt8(truncatingIfNeeded: timeWhole),
            UInt8(truncatingIfNeeded: distanceWhole),
            UInt8(truncatingIfNeeded: (distanceFraction & 0x0F) << 4 | (speedWhole & 0x0F)),
            UInt8(clamping: speedFraction), UInt8(truncatingIfNeeded: strides), 0,
        ]
    }
}
