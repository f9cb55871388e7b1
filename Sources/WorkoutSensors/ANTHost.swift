// The host side of a USB ANT stick: what a program must send before the stick delivers anything.
// Pure Swift (no Foundation, no I/O) so the fuzz target compiles it with the decoders: the caller
// gives it the bytes read and the time, and writes the bytes it returns.

/// An ANT+ device profile the host opens a channel for.
public enum ANTProfile: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    // In the order channels are given out when the stick has fewer channels than profiles.
    case heartRate = "hr"
    case power = "power"
    case speedCadence = "sc"
    case footPod = "stride"
    case fitnessEquipment = "fe"
    case speed = "speed"
    case cadence = "cadence"

    /// The ANT+ device type.
    public var deviceType: UInt8 {
        switch self {
        case .heartRate: 120
        case .power: 11
        case .speedCadence: 121
        case .footPod: 124
        case .fitnessEquipment: 17
        case .speed: 123
        case .cadence: 122
        }
    }

    /// The channel period the profile documents (32768 / period messages per second, about 4 Hz).
    public var period: UInt16 {
        switch self {
        case .heartRate: 8070
        case .power: 8182
        case .speedCadence: 8086
        case .footPod: 8134
        case .fitnessEquipment: 8192
        case .speed: 8118
        case .cadence: 8102
        }
    }

    /// The profile of an ANT+ device type.
    public init?(deviceType: UInt8) {
        guard let profile = Self.allCases.first(where: { $0.deviceType == deviceType & 0x7F }) else { return nil }
        self = profile
    }

    /// The profile named in a `--sensor` pin (`hr`, `power`, `sc`, `stride`, `fe`, `speed`, `cadence`,
    /// and a few long forms).
    public init?(name: String) {
        switch name.lowercased() {
        case "hr", "heartrate", "heart-rate": self = .heartRate
        case "power", "pwr": self = .power
        case "sc", "speedcadence", "speed-cadence": self = .speedCadence
        case "stride", "footpod", "foot-pod", "sdm": self = .footPod
        case "fe", "fec", "fe-c", "trainer": self = .fitnessEquipment
        case "speed", "spd": self = .speed
        case "cadence", "cad": self = .cadence
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .heartRate: "heart rate"
        case .power: "power"
        case .speedCadence: "speed and cadence"
        case .footPod: "foot pod"
        case .fitnessEquipment: "fitness equipment"
        case .speed: "speed"
        case .cadence: "cadence"
        }
    }
}

/// The 8-byte key of an ANT network (ANT+ sensors talk only on the ANT+ network's key).
///
/// Given as 16 hexadecimal digits (spaces, colons, commas and a `0x` prefix are ignored). The
/// description never shows the key.
public struct ANTNetworkKey: Sendable, Hashable, CustomStringConvertible {
    /// The key's 8 bytes, in the order `set network key` (0x46) sends them.
    public let bytes: [UInt8]

    /// Parses 16 hexadecimal digits; throws `ANTHostError.malformedNetworkKey` otherwise.
    public init(hex text: String) throws(ANTHostError) {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        let kept = digits.unicodeScalars.filter { !" :,-_\t".unicodeScalars.contains($0) }
        guard kept.count == 16 else {
            throw .malformedNetworkKey(detail: "it has \(kept.count) hexadecimal digits, 16 are needed")
        }
        var bytes: [UInt8] = []
        var high: UInt8?
        for scalar in kept {
            guard let nibble = Self.nibble(scalar) else {
                throw .malformedNetworkKey(detail: "'\(Character(scalar))' is not a hexadecimal digit")
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self.bytes = bytes
    }

    /// A key from its 8 bytes (nil for another count).
    public init?(bytes: [UInt8]) {
        guard bytes.count == 8 else { return nil }
        self.bytes = bytes
    }

    private static func nibble(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x30...0x39: UInt8(scalar.value - 0x30)
        case 0x41...0x46: UInt8(scalar.value - 0x41 + 10)
        case 0x61...0x66: UInt8(scalar.value - 0x61 + 10)
        default: nil
        }
    }

    public var description: String { "an 8-byte ANT network key" }
}

/// What can go wrong on the host side of an ANT stick.
public enum ANTHostError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No network key was given.
    case missingNetworkKey
    /// The network key is not 16 hexadecimal digits.
    case malformedNetworkKey(detail: String)
    /// The stick answered a configuration message with a non-zero response code.
    case refused(message: UInt8, code: UInt8, channel: UInt8)
    /// The stick did not answer a message within the response timeout (after retries).
    case noAnswer(message: UInt8)
    /// A `--sensor` ANT option that does not parse.
    case invalidSpec(spec: String, detail: String)

    public var description: String {
        switch self {
        case .missingNetworkKey:
            "no ANT network key: ANT+ sensors talk only on the ANT+ network, whose key you get from "
                + "thisisant.com (register as an ANT+ Adopter); give it as 16 hex digits in "
                + "$WORKOUT_ANT_NETWORK_KEY or with --ant-network-key (docs/ant-sensors.md)"
        case .malformedNetworkKey(let detail):
            "the ANT network key is malformed (\(detail)): give 16 hexadecimal digits, e.g. 0123456789ABCDEF"
        case .refused(let message, let code, let channel):
            "the ANT stick refused \(ANT.MessageID.describe(message)) on channel \(channel) with "
                + "\(ANT.responseCodeName(code)) (0x\(code < 16 ? "0" : "")\(String(code, radix: 16, uppercase: true))): "
                + "unplug and replug the stick; if it persists, another program may be configuring it"
        case .noAnswer(let message):
            "the ANT stick did not answer \(ANT.MessageID.describe(message)): is this an ANT stick "
                + "(`workout ports` names known sticks) and is the port's speed right?"
        case .invalidSpec(let spec, let detail):
            "invalid ANT sensor options '\(spec)': \(detail); write them like hr=4711,power=1234 "
                + "(profiles: hr, power, sc, stride, fe, speed, cadence)"
        }
    }
}

/// What the host opens on the stick, and how.
public struct ANTHostPlan: Sendable, Hashable {
    /// How the stick's channels are used.
    public enum Mode: Sendable, Hashable {
        /// One slave channel per profile, in priority order, as many as the stick has.
        case channels
        /// Continuous scan (0x5B): one channel hears every ANT+ device in range (`workout sensors scan`).
        case scan
    }

    /// The ANT+ network key, set on network 0.
    public var networkKey: ANTNetworkKey
    /// The profiles wanted, in priority order.
    public var profiles: [ANTProfile]
    /// Device numbers fixed per profile (others search with the wildcard 0).
    public var pinned: [ANTProfile: UInt16]
    /// The search timeout sent with 0x44, in 2.5 s units (12 = 30 s; 255 = never).
    public var searchTimeout: UInt8
    /// Channels or scan.
    public var mode: Mode
    /// Seconds to wait for each answer of the stick before sending again (3 tries, then start over).
    public var responseTimeout: Double
    /// The first wait before a closed channel is opened again, seconds; doubles up to `reopenMaximum`.
    public var reopenInitial: Double
    /// The longest wait before a closed channel is opened again, seconds.
    public var reopenMaximum: Double

    /// A plan for every profile (or `profiles`), wildcard unless pinned.
    public init(
        networkKey: ANTNetworkKey, profiles: [ANTProfile] = ANTProfile.allCases, pinned: [ANTProfile: UInt16] = [:],
        searchTimeout: UInt8 = 12, mode: Mode = .channels, responseTimeout: Double = 2, reopenInitial: Double = 0.5,
        reopenMaximum: Double = 2
    ) {
        self.networkKey = networkKey
        var seen = Set<ANTProfile>()
        self.profiles = (profiles + pinned.keys.sorted { $0.rank < $1.rank }).filter { seen.insert($0).inserted }
            .sorted { $0.rank < $1.rank }
        self.pinned = pinned
        self.searchTimeout = searchTimeout
        self.mode = mode
        self.responseTimeout = responseTimeout.isFinite && responseTimeout > 0 ? responseTimeout : 2
        self.reopenInitial = reopenInitial.isFinite && reopenInitial > 0 ? reopenInitial : 0.5
        self.reopenMaximum = max(self.reopenInitial, reopenMaximum.isFinite ? reopenMaximum : 2)
    }
}

extension ANTProfile {
    /// Position in the channel priority order.
    var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
}

/// Something the host learned or did, for the user and the recorder.
public enum ANTHostEvent: Sendable, Equatable {
    /// The stick started (0x6F) after the reset.
    case started
    /// The stick's capabilities: how many channels and networks it has.
    case capabilities(channels: Int, networks: Int)
    /// Every channel is configured and open (the profiles that got one, by channel number).
    case configured([ANTProfile])
    /// Neither lib config nor enable extended messages was accepted: broadcasts carry no device ids.
    case noExtendedData
    /// A channel found its device (and keeps it from now on).
    case found(channel: UInt8, profile: ANTProfile?, device: ANTDeviceID)
    /// A channel lost its device (out of range, search timeout): unavailable until found again.
    case lost(channel: UInt8, profile: ANTProfile?, device: ANTDeviceID?, event: UInt8)
    /// A channel searched without finding its device and closed; it is opened again after a wait.
    case searchTimedOut(channel: UInt8, profile: ANTProfile?)
    /// Configuration failed; the host starts over after a wait.
    case failed(ANTHostError)
}

/// The host side of an ANT stick as a state machine without I/O.
///
/// On every connect (``connected(now:)``) it resets the stick and waits for the startup message,
/// requests the capabilities for the channel count, sets the network key on network 0, turns
/// extended data on (lib config 0x6E with 0x80; 0x66 when the stick refuses it), then per profile
/// assigns a slave channel, sets its channel id (wildcard 0, or the pinned device number), search
/// timeout, period and RF frequency 57, and opens it. One message is in flight at a time and each
/// waits for its channel response (0x40 with RESPONSE_NO_ERROR); a non-zero code becomes
/// ``ANTHostError/refused(message:code:channel:)`` and the whole configuration starts over after
/// a wait. A message not answered within the response timeout is sent again, twice, then the same.
///
/// Running: the first broadcast of a channel pairs it with its device (from the extended data, or
/// a channel-id request); a channel that closes (after a search timeout) has its channel id set to
/// that device and is opened again after a back-off; EVENT_RX_FAIL_GO_TO_SEARCH marks the device
/// lost until data flows again. An unexpected startup message (the stick reset itself) starts the
/// configuration over. Times are seconds on any monotonic clock.
public struct ANTHost: Sendable {
    /// A channel as the host configured it.
    public struct Channel: Sendable, Equatable {
        public var number: UInt8
        /// The profile (nil for the scan channel).
        public var profile: ANTProfile?
        /// The device the channel is fixed on: pinned, or the first one it found.
        public var device: ANTDeviceID?
        /// Whether data is flowing (found and not lost since).
        public var tracking = false
        /// Whether the channel is open (or opening).
        public var open = false
        var reopenAt: Double?
        var reopenAttempts = 0
        var requestedID = false
    }

    /// What the host counted.
    public struct Counters: Sendable, Equatable {
        /// Frames read from the stick with a good checksum.
        public var frames = 0
        /// Frames with a bad checksum, and bytes skipped looking for a frame.
        public var badFrames = 0
        /// Messages sent again because no answer came in time.
        public var retries = 0
        /// Times the configuration started over (refused, unanswered, the stick reset itself).
        public var restarts = 0
        /// Channel responses that answered nothing in flight.
        public var unexpectedResponses = 0
        public init() {}
    }

    private enum Awaiting: Sendable, Equatable {
        case startup
        case capabilities
        case response(channel: UInt8?)
        case channelID(channel: UInt8)
    }

    private struct Command: Sendable, Equatable {
        var id: UInt8
        var payload: [UInt8]
        var awaiting: Awaiting
    }

    public let plan: ANTHostPlan
    public private(set) var channels: [Channel] = []
    public private(set) var counters = Counters()
    /// Channels the stick has (from its capabilities), once known.
    public private(set) var stickChannels: Int?
    /// Whether every channel is configured and opened.
    public private(set) var configured = false
    /// Whether broadcasts carry the channel id (extended data on).
    public private(set) var extendedData = false

    private var queue: [Command] = []
    private var inFlight: (command: Command, sentAt: Double, attempts: Int)?
    private var restartAt: Double?
    private var restartAttempts = 0
    private var carry: [UInt8] = []
    private var events: [ANTHostEvent] = []
    private var connectedNow = false

    public init(plan: ANTHostPlan) {
        self.plan = plan
    }

    /// The events since the last call.
    public mutating func takeEvents() -> [ANTHostEvent] {
        defer { events.removeAll() }
        return events
    }

    /// The stick was (re)opened: forgets the partial frame and the stick's state, and starts the
    /// configuration with a reset. Returns the bytes to write. Pinned and found devices are kept.
    public mutating func connected(now: Double) -> [UInt8] {
        carry.removeAll()
        connectedNow = true
        restartAttempts = 0
        return startOver(now: now, reset: true)
    }

    /// The stick went away: nothing more is sent until ``connected(now:)``.
    public mutating func disconnected() {
        connectedNow = false
        queue.removeAll()
        inFlight = nil
        restartAt = nil
        configured = false
        for index in channels.indices {
            channels[index].open = false
            channels[index].tracking = false
            channels[index].reopenAt = nil
        }
    }

    /// Bytes read from the stick; returns the bytes to write.
    public mutating func receive(_ bytes: [UInt8], now: Double) -> [UInt8] {
        guard connectedNow else { return [] }
        carry.append(contentsOf: bytes)
        var out: [UInt8] = []
        var index = 0
        let count = carry.count
        while index < count {
            guard carry[index] == ANT.sync else {
                counters.badFrames &+= 1
                index += 1
                continue
            }
            guard index + 1 < count else { break }
            let length = Int(carry[index + 1])
            guard length >= 1, length <= 32 else {
                counters.badFrames &+= 1
                index += 1
                continue
            }
            let end = index + length + 4
            guard end <= count else { break }
            var sum: UInt8 = 0
            for offset in index..<(end - 1) { sum ^= carry[offset] }
            guard sum == carry[end - 1] else {
                counters.badFrames &+= 1
                index += 1
                continue
            }
            counters.frames &+= 1
            handle(id: carry[index + 2], payload: Array(carry[(index + 3)..<(end - 1)]), now: now, out: &out)
            index = end
        }
        carry.removeFirst(min(index, carry.count))
        if carry.count > 64 { carry.removeFirst(carry.count - 64) }
        out += tick(now: now)
        return out
    }

    /// Time passed: resends what was not answered, starts over after a failure's wait, reopens
    /// closed channels when their back-off ends. Returns the bytes to write.
    public mutating func tick(now: Double) -> [UInt8] {
        guard connectedNow else { return [] }
        var out: [UInt8] = []
        if let at = restartAt {
            guard now >= at else { return [] }
            restartAt = nil
            return startOver(now: now, reset: true)
        }
        if let flight = inFlight, now - flight.sentAt >= plan.responseTimeout {
            if flight.attempts < 3 {
                counters.retries &+= 1
                inFlight = (flight.command, now, flight.attempts + 1)
                return ANT.frame(id: flight.command.id, flight.command.payload)
            }
            fail(.noAnswer(message: flight.command.id), now: now)
            return []
        }
        if configured {
            for index in channels.indices {
                if let at = channels[index].reopenAt, now >= at {
                    channels[index].reopenAt = nil
                    channels[index].open = true
                    let channel = channels[index]
                    if let profile = channel.profile {
                        let number = channel.device?.number ?? 0
                        queue.append(
                            Command(
                                id: ANT.MessageID.channelID.rawValue,
                                payload: [channel.number, UInt8(number & 0xFF), UInt8(number >> 8), profile.deviceType, 0],
                                awaiting: .response(channel: channel.number)))
                    }
                    queue.append(
                        Command(
                            id: ANT.MessageID.openChannel.rawValue, payload: [channel.number],
                            awaiting: .response(channel: channel.number)))
                }
            }
        }
        out += sendNext(now: now)
        return out
    }

    // MARK: - Configuration

    private mutating func startOver(now: Double, reset: Bool) -> [UInt8] {
        queue.removeAll()
        inFlight = nil
        configured = false
        extendedData = false
        for index in channels.indices {
            channels[index].open = false
            channels[index].tracking = false
            channels[index].reopenAt = nil
            channels[index].requestedID = false
        }
        if reset {
            queue.append(Command(id: ANT.MessageID.resetSystem.rawValue, payload: [0], awaiting: .startup))
        } else {
            queue.append(capabilitiesRequest)
        }
        return sendNext(now: now)
    }

    private var capabilitiesRequest: Command {
        Command(
            id: ANT.MessageID.requestMessage.rawValue, payload: [0, ANT.MessageID.capabilities.rawValue],
            awaiting: .capabilities)
    }

    private mutating func fail(_ error: ANTHostError, now: Double) {
        events.append(.failed(error))
        counters.restarts &+= 1
        queue.removeAll()
        inFlight = nil
        configured = false
        restartAttempts += 1
        var wait = plan.reopenInitial
        for _ in 1..<min(restartAttempts, 8) { wait *= 2 }
        restartAt = now + min(wait, max(plan.reopenMaximum, 5))
    }

    private mutating func sendNext(now: Double) -> [UInt8] {
        guard inFlight == nil, !queue.isEmpty else { return [] }
        let command = queue.removeFirst()
        inFlight = (command, now, 1)
        return ANT.frame(id: command.id, command.payload)
    }

    /// The configuration after the capabilities: key, extended data, then the channels.
    private mutating func configure(channelCount: Int) {
        let key = plan.networkKey.bytes
        queue.append(
            Command(id: ANT.MessageID.setNetworkKey.rawValue, payload: [0] + key, awaiting: .response(channel: nil)))
        queue.append(Command(id: ANT.MessageID.libConfig.rawValue, payload: [0, 0x80], awaiting: .response(channel: nil)))
        let wanted: [ANTProfile?] =
            switch plan.mode {
            case .channels: Array(plan.profiles.prefix(max(0, channelCount)))
            case .scan: channelCount > 0 ? [nil] : []
            }
        var kept: [UInt8: ANTDeviceID] = [:]
        for channel in channels { if let device = channel.device { kept[channel.number] = device } }
        channels = wanted.enumerated().map { index, profile in
            let number = UInt8(truncatingIfNeeded: index)
            var device: ANTDeviceID?
            if let profile {
                if let pin = plan.pinned[profile] {
                    device = ANTDeviceID(number: pin, type: profile.deviceType)
                } else if let found = kept[number], found.type == profile.deviceType {
                    device = found
                }
            }
            return Channel(number: number, profile: profile, device: device)
        }
        for channel in channels {
            let c = channel.number
            let number = channel.device?.number ?? 0
            let type = channel.profile?.deviceType ?? 0
            let period = channel.profile?.period ?? 8192
            queue.append(Command(id: ANT.MessageID.assignChannel.rawValue, payload: [c, 0x00, 0], awaiting: .response(channel: c)))
            queue.append(
                Command(
                    id: ANT.MessageID.channelID.rawValue, payload: [c, UInt8(number & 0xFF), UInt8(number >> 8), type, 0],
                    awaiting: .response(channel: c)))
            if plan.mode == .channels {
                queue.append(
                    Command(
                        id: ANT.MessageID.searchTimeout.rawValue, payload: [c, plan.searchTimeout],
                        awaiting: .response(channel: c)))
                queue.append(
                    Command(
                        id: ANT.MessageID.channelPeriod.rawValue, payload: [c, UInt8(period & 0xFF), UInt8(period >> 8)],
                        awaiting: .response(channel: c)))
            }
            queue.append(
                Command(
                    id: ANT.MessageID.rfFrequency.rawValue, payload: [c, ANT.antPlusFrequency],
                    awaiting: .response(channel: c)))
            if plan.mode == .channels {
                queue.append(Command(id: ANT.MessageID.openChannel.rawValue, payload: [c], awaiting: .response(channel: c)))
            } else {
                queue.append(Command(id: ANT.MessageID.openRxScanMode.rawValue, payload: [0], awaiting: .response(channel: 0)))
            }
        }
    }

    // MARK: - What the stick says

    private mutating func handle(id: UInt8, payload: [UInt8], now: Double, out: inout [UInt8]) {
        let awaiting = inFlight?.command.awaiting
        switch id {
        case ANT.MessageID.startup.rawValue:
            if awaiting == .startup {
                inFlight = nil
                events.append(.started)
                queue.insert(capabilitiesRequest, at: 0)
            } else {
                // The stick reset itself (power glitch, another program): configure it again.
                counters.restarts &+= 1
                out += startOver(now: now, reset: false)
                return
            }
        case ANT.MessageID.capabilities.rawValue:
            guard awaiting == .capabilities, let count = payload.first else { return }
            inFlight = nil
            stickChannels = Int(count)
            events.append(.capabilities(channels: Int(count), networks: payload.count > 1 ? Int(payload[1]) : 0))
            configure(channelCount: Int(count))
        case ANT.MessageID.channelEvent.rawValue:
            guard payload.count >= 3 else { return }
            if payload[1] == 0x01 {
                channelEvent(channel: payload[0], code: payload[2], now: now)
            } else {
                response(channel: payload[0], message: payload[1], code: payload[2], now: now)
            }
        case ANT.MessageID.channelID.rawValue:
            guard payload.count >= 5 else { return }
            let device = ANTDeviceID(
                number: UInt16(payload[1]) | UInt16(payload[2]) << 8, type: payload[3], transmissionType: payload[4])
            if case .channelID(let channel)? = awaiting, channel == payload[0] { inFlight = nil }
            if device.number != 0, device.type != 0 { pair(channel: payload[0], device: device) }
        case ANT.MessageID.broadcastData.rawValue, ANT.MessageID.acknowledgedData.rawValue, 0x50:
            guard payload.count >= 9 else { return }
            let channel = payload[0]
            if payload.count >= 14, payload[9] & 0x80 != 0 {
                let device = ANTDeviceID(
                    number: UInt16(payload[10]) | UInt16(payload[11]) << 8, type: payload[12],
                    transmissionType: payload[13])
                if plan.mode == .channels, device.number != 0, device.type != 0 { pair(channel: channel, device: device) }
            } else if let index = channelIndex(channel), !channels[index].tracking {
                if let profile = channels[index].profile, let pin = plan.pinned[profile],
                    let device = channels[index].device, device.number == pin
                {
                    channels[index].tracking = true
                    events.append(.found(channel: channel, profile: profile, device: device))
                } else if !channels[index].requestedID {
                    // No device id with the data: ask the stick which device the channel found.
                    channels[index].requestedID = true
                    queue.append(
                        Command(
                            id: ANT.MessageID.requestMessage.rawValue, payload: [channel, ANT.MessageID.channelID.rawValue],
                            awaiting: .channelID(channel: channel)))
                }
            }
        default:
            break
        }
    }

    private func channelIndex(_ channel: UInt8) -> Int? {
        channels.firstIndex { $0.number == channel }
    }

    private mutating func pair(channel: UInt8, device: ANTDeviceID) {
        guard let index = channelIndex(channel) else { return }
        if let profile = channels[index].profile, profile.deviceType != device.type { return }
        let changed = channels[index].device != device
        if changed || !channels[index].tracking {
            channels[index].device = device
            channels[index].tracking = true
            channels[index].reopenAttempts = 0
            events.append(.found(channel: channel, profile: channels[index].profile, device: device))
        }
    }

    private mutating func response(channel: UInt8, message: UInt8, code: UInt8, now: Double) {
        guard let flight = inFlight, flight.command.id == message else {
            counters.unexpectedResponses &+= 1
            return
        }
        if case .response(let expected) = flight.command.awaiting, let expected, expected != channel {
            counters.unexpectedResponses &+= 1
            return
        }
        inFlight = nil
        if code != 0 {
            if message == ANT.MessageID.libConfig.rawValue {
                // Older sticks know only "enable extended messages".
                queue.insert(
                    Command(id: ANT.MessageID.enableExtendedMessages.rawValue, payload: [0, 1], awaiting: .response(channel: nil)),
                    at: 0)
                return
            }
            if message == ANT.MessageID.enableExtendedMessages.rawValue {
                events.append(.noExtendedData)
                return
            }
            fail(.refused(message: message, code: code, channel: channel), now: now)
            return
        }
        if message == ANT.MessageID.libConfig.rawValue || message == ANT.MessageID.enableExtendedMessages.rawValue {
            extendedData = true
        }
        if message == ANT.MessageID.openChannel.rawValue || message == ANT.MessageID.openRxScanMode.rawValue,
            let index = channelIndex(channel)
        {
            channels[index].open = true
        }
        if !configured, queue.isEmpty, stickChannels != nil {
            configured = true
            restartAttempts = 0
            events.append(.configured(channels.compactMap(\.profile)))
        }
    }

    private mutating func channelEvent(channel: UInt8, code: UInt8, now: Double) {
        guard let index = channelIndex(channel) else { return }
        let profile = channels[index].profile
        switch code {
        case ANT.EventCode.rxSearchTimeout.rawValue:
            channels[index].requestedID = false
            if channels[index].tracking {
                channels[index].tracking = false
                events.append(.lost(channel: channel, profile: profile, device: channels[index].device, event: code))
            }
            events.append(.searchTimedOut(channel: channel, profile: profile))
        case ANT.EventCode.rxFailGoToSearch.rawValue:
            channels[index].requestedID = false
            if channels[index].tracking {
                channels[index].tracking = false
                events.append(.lost(channel: channel, profile: profile, device: channels[index].device, event: code))
            }
        case ANT.EventCode.channelClosed.rawValue:
            channels[index].requestedID = false
            if channels[index].tracking {
                channels[index].tracking = false
                events.append(.lost(channel: channel, profile: profile, device: channels[index].device, event: code))
            }
            guard configured, channels[index].open else { return }
            channels[index].open = false
            var wait = plan.reopenInitial
            for _ in 0..<min(channels[index].reopenAttempts, 16) { wait *= 2 }
            channels[index].reopenAttempts += 1
            channels[index].reopenAt = now + min(wait, plan.reopenMaximum)
        default:
            break
        }
    }
}
