/// ANT serial messages (as a USB ANT stick or an ANT UART module sends them) and ANT+ data pages.
public enum ANT {
    public static let sync: UInt8 = 0xA4

    /// Message ids used here, both directions (ANT Message Protocol and Usage, section 9.3).
    public enum MessageID: UInt8, Sendable, CaseIterable {
        // Stick to host.
        case broadcastData = 0x4E
        case acknowledgedData = 0x4F
        case channelID = 0x51
        /// A channel response (to a configuration message) or a channel event (message id 0x01).
        case channelEvent = 0x40
        case startup = 0x6F
        case capabilities = 0x54
        case serialError = 0xAE
        // Host to stick.
        case resetSystem = 0x4A
        case requestMessage = 0x4D
        case setNetworkKey = 0x46
        case assignChannel = 0x42
        case unassignChannel = 0x41
        case channelPeriod = 0x43
        case searchTimeout = 0x44
        case rfFrequency = 0x45
        case openChannel = 0x4B
        case closeChannel = 0x4C
        case openRxScanMode = 0x5B
        case enableExtendedMessages = 0x66
        case libConfig = 0x6E

        /// The protocol document's name of the message.
        public var name: String {
            switch self {
            case .broadcastData: "broadcast data"
            case .acknowledgedData: "acknowledged data"
            case .channelID: "set channel id"
            case .channelEvent: "channel response / event"
            case .startup: "startup message"
            case .capabilities: "capabilities"
            case .serialError: "serial error"
            case .resetSystem: "reset system"
            case .requestMessage: "request message"
            case .setNetworkKey: "set network key"
            case .assignChannel: "assign channel"
            case .unassignChannel: "unassign channel"
            case .channelPeriod: "channel messaging period"
            case .searchTimeout: "search timeout"
            case .rfFrequency: "channel RF frequency"
            case .openChannel: "open channel"
            case .closeChannel: "close channel"
            case .openRxScanMode: "open rx scan mode"
            case .enableExtendedMessages: "enable extended messages"
            case .libConfig: "lib config"
            }
        }

        /// `name (0xNN)` for any id, known or not.
        public static func describe(_ id: UInt8) -> String {
            let hex = "0x" + (id < 16 ? "0" : "") + String(id, radix: 16, uppercase: true)
            return (MessageID(rawValue: id).map { "\($0.name) (\(hex))" }) ?? "message \(hex)"
        }
    }

    /// Channel event codes (a 0x40 message whose message-id byte is 0x01).
    public enum EventCode: UInt8, Sendable {
        case rxSearchTimeout = 0x01
        case rxFail = 0x02
        case tx = 0x03
        case transferRxFailed = 0x04
        case transferTxCompleted = 0x05
        case transferTxFailed = 0x06
        case channelClosed = 0x07
        case rxFailGoToSearch = 0x08
        case channelCollision = 0x09
        case transferTxStart = 0x0A
    }

    /// The protocol document's name of a channel response code (0 is RESPONSE_NO_ERROR).
    public static func responseCodeName(_ code: UInt8) -> String {
        switch code {
        case 0x00: "RESPONSE_NO_ERROR"
        case 0x15: "CHANNEL_IN_WRONG_STATE"
        case 0x16: "CHANNEL_NOT_OPENED"
        case 0x18: "CHANNEL_ID_NOT_SET"
        case 0x19: "CLOSE_ALL_CHANNELS"
        case 0x1F: "TRANSFER_IN_PROGRESS"
        case 0x20: "TRANSFER_SEQUENCE_NUMBER_ERROR"
        case 0x21: "TRANSFER_IN_ERROR"
        case 0x27: "MESSAGE_SIZE_EXCEEDS_LIMIT"
        case 0x28: "INVALID_MESSAGE"
        case 0x29: "INVALID_NETWORK_NUMBER"
        case 0x30: "INVALID_LIST_ID"
        case 0x31: "INVALID_SCAN_TX_CHANNEL"
        case 0x33: "INVALID_PARAMETER_PROVIDED"
        case 0x35: "EVENT_SERIAL_QUE_OVERFLOW"
        case 0x36: "EVENT_QUE_OVERFLOW"
        case 0x40: "NVM_FULL_ERROR"
        case 0x41: "NVM_WRITE_ERROR"
        default: "code 0x" + (code < 16 ? "0" : "") + String(code, radix: 16, uppercase: true)
        }
    }

    /// ANT+ device types.
    public enum DeviceType: UInt8, Sendable {
        case heartRate = 120
        case bikeSpeedCadence = 121
        case bikeCadence = 122
        case bikeSpeed = 123
        case footPod = 124
        case bicyclePower = 11
        /// Fitness equipment (FE-C: smart trainers, treadmills, rowers …).
        case fitnessEquipment = 17
    }

    /// The ANT+ network's RF channel: 2457 MHz.
    public static let antPlusFrequency: UInt8 = 57

    /// XOR of every byte before the checksum, the sync byte included.
    public static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt8 {
        bytes.reduce(0, ^)
    }

    /// A framed message: sync, payload length, id, payload, checksum.
    public static func frame(_ id: MessageID, _ payload: [UInt8]) -> [UInt8] {
        frame(id: id.rawValue, payload)
    }

    /// A framed message with any id (payloads longer than 255 bytes are cut).
    public static func frame(id: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let payload = payload.prefix(255)
        var bytes: [UInt8] = [sync, UInt8(payload.count), id] + payload
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
