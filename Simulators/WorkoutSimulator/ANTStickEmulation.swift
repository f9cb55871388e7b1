import Synchronization

/// An emulated USB ANT stick (ANT USB-m class: 8 channels, 8 networks) with ANT+ sensors in range.
///
/// Written from the ANT Message Protocol and Usage document (rev 5.1, sections 5 and 9), not from
/// this project's host or encoders: its framing and message layouts are its own. The stick is silent
/// until the host talks to it. Reset (0x4A) answers with the startup message (0x6F, reason 0x20
/// command reset) and forgets every setting. Each configuration message is answered with a channel
/// response (0x40: channel, message id, code): RESPONSE_NO_ERROR, or CHANNEL_IN_WRONG_STATE (0x15)
/// for a message the channel's state does not allow (assign when assigned, channel id or period when
/// open, open when not assigned or already open, close when not open), INVALID_NETWORK_NUMBER
/// (0x29), INVALID_PARAMETER_PROVIDED (0x33) for a channel the stick does not have, INVALID_MESSAGE
/// (0x28) for a length or id it does not know. Request message (0x4D) answers capabilities (0x54),
/// channel id (0x51) and channel status (0x52).
///
/// Radio: a sensor's message reaches an open slave channel on RF 57 whose network key is the ANT+
/// key (when the emulation was given one; any key otherwise) and whose channel id matches it
/// (device number, type and transmission type, 0 = wildcard). A searching channel acquires the
/// first matching sensor that transmits and from then on its channel id is that sensor's (as the
/// document says a paired wildcard channel's is). Data goes to the host as broadcast data (0x4E),
/// with the flag byte 0x80 and the channel id appended only when extended data was enabled (lib
/// config 0x6E with 0x80, or 0x66). A tracking channel that hears nothing from its sensor for
/// `goToSearchAfter` seconds sends EVENT_RX_FAIL_GO_TO_SEARCH (0x08) and searches again; a search
/// that finds nothing within the channel's search timeout (0x44, 2.5 s units, default 10 = 25 s;
/// 255 never) sends EVENT_RX_SEARCH_TIMEOUT (0x01) then EVENT_CHANNEL_CLOSED (0x07). Rx scan mode
/// (0x5B) turns channel 0 into a receiver of every sensor on RF 57.
///
/// Time is whatever the caller counts in (seconds of race time in `watch-sim`).
public final class ANTStickEmulation: Sendable {
    /// An ANT+ sensor in range: its channel id.
    public struct Sensor: Sendable, Hashable {
        public var number: UInt16
        public var type: UInt8
        public var transmissionType: UInt8

        public init(number: UInt16, type: UInt8, transmissionType: UInt8 = 1) {
            self.number = number
            self.type = type
            self.transmissionType = transmissionType
        }
    }

    private struct Channel: Sendable {
        var assigned = false
        var network: UInt8 = 0
        var number: UInt16 = 0
        var deviceType: UInt8 = 0
        var transmissionType: UInt8 = 0
        var period: UInt16 = 8192
        var searchTimeout: UInt8 = 10
        var frequency: UInt8 = 66
        var open = false
        var scan = false
        var tracking: Sensor?
        var searchStart = 0.0
        var lastHeard = 0.0
    }

    private struct State: Sendable {
        var channels: [Channel]
        var keys: [[UInt8]?]
        var extended = false
        var carry: [UInt8] = []
        var now = 0.0
        var received: [[UInt8]] = []
        var started = false
    }

    /// Channels the stick has.
    public let channelCount: Int
    /// The key ANT+ sensors talk on; nil: any key reaches them.
    public let networkKey: [UInt8]?
    /// Seconds without a message from a tracked sensor before the channel goes back to search.
    public let goToSearchAfter: Double
    private let state: Mutex<State>

    public init(channels: Int = 8, networks: Int = 8, networkKey: [UInt8]? = nil, goToSearchAfter: Double = 2) {
        channelCount = max(1, min(channels, 32))
        self.networkKey = networkKey
        self.goToSearchAfter = goToSearchAfter
        state = Mutex(
            State(
                channels: Array(repeating: Channel(), count: max(1, min(channels, 32))),
                keys: Array(repeating: nil, count: max(1, min(networks, 8)))))
    }

    /// Every whole frame the host wrote so far, as written (sync to checksum).
    public var hostFrames: [[UInt8]] { state.withLock { $0.received } }

    /// Whether the host has reset the stick (it says nothing before).
    public var started: Bool { state.withLock { $0.started } }

    /// Whether any channel is open.
    public var anyChannelOpen: Bool { state.withLock { $0.channels.contains { $0.open } } }

    /// Bytes the host wrote; returns what the stick answers.
    public func hostWrote(_ bytes: [UInt8]) -> [UInt8] {
        state.withLock { state in
            state.carry += bytes
            var out: [UInt8] = []
            while let start = state.carry.firstIndex(of: 0xA4) {
                if start > 0 { state.carry.removeFirst(start) }
                guard state.carry.count >= 2 else { break }
                let length = Int(state.carry[1])
                guard state.carry.count >= length + 4 else { break }
                let frame = Array(state.carry[0..<(length + 4)])
                var check: UInt8 = 0
                for byte in frame.dropLast() { check ^= byte }
                guard check == frame[frame.count - 1] else {
                    state.carry.removeFirst()  // not a frame: look for the next sync
                    out += Self.message(0xAE, [0x02])  // serial error: checksum
                    continue
                }
                state.carry.removeFirst(length + 4)
                state.received.append(frame)
                out += command(frame[2], Array(frame[3..<(3 + length)]), &state)
            }
            if state.carry.count > 300 { state.carry.removeAll() }
            return out
        }
    }

    /// `sensor` transmits `page` (8 bytes) at `time`; returns what the stick passes to the host.
    public func transmit(_ sensor: Sensor, page: [UInt8], at time: Double) -> [UInt8] {
        state.withLock { state in
            var out = advance(to: time, &state)
            let data = Array((page + Array(repeating: 0xFF, count: 8)).prefix(8))
            for index in state.channels.indices {
                let channel = state.channels[index]
                guard channel.open, channel.frequency == 57, hears(channel, &state) else { continue }
                if channel.scan {
                    out += broadcast(UInt8(index), data, sensor, state.extended)
                    continue
                }
                if channel.tracking == nil, matches(channel, sensor) {
                    state.channels[index].tracking = sensor
                    state.channels[index].number = sensor.number  // a paired channel keeps its master
                    state.channels[index].deviceType = sensor.type
                    state.channels[index].transmissionType = sensor.transmissionType
                }
                if state.channels[index].tracking == sensor {
                    state.channels[index].lastHeard = time
                    out += broadcast(UInt8(index), data, sensor, state.extended)
                }
            }
            return out
        }
    }

    /// Time passed without messages: search timeouts and lost sensors. Returns the events.
    public func advance(to time: Double) -> [UInt8] {
        state.withLock { advance(to: time, &$0) }
    }

    // MARK: - Inside the stick

    private func advance(to time: Double, _ state: inout State) -> [UInt8] {
        state.now = max(state.now, time)
        var out: [UInt8] = []
        for index in state.channels.indices where state.channels[index].open && !state.channels[index].scan {
            let channel = state.channels[index]
            let number = UInt8(index)
            if channel.tracking != nil {
                if state.now - channel.lastHeard > goToSearchAfter {
                    state.channels[index].tracking = nil
                    state.channels[index].searchStart = state.now
                    out += Self.message(0x40, [number, 0x01, 0x08])  // EVENT_RX_FAIL_GO_TO_SEARCH
                }
            } else if channel.searchTimeout != 255,
                state.now - channel.searchStart >= Double(channel.searchTimeout) * 2.5
            {
                state.channels[index].open = false
                out += Self.message(0x40, [number, 0x01, 0x01])  // EVENT_RX_SEARCH_TIMEOUT
                out += Self.message(0x40, [number, 0x01, 0x07])  // EVENT_CHANNEL_CLOSED
            }
        }
        return out
    }

    private func hears(_ channel: Channel, _ state: inout State) -> Bool {
        guard Int(channel.network) < state.keys.count, let key = state.keys[Int(channel.network)] else { return false }
        return networkKey == nil || networkKey == key
    }

    private func matches(_ channel: Channel, _ sensor: Sensor) -> Bool {
        (channel.number == 0 || channel.number == sensor.number)
            && (channel.deviceType & 0x7F == 0 || channel.deviceType & 0x7F == sensor.type)
            && (channel.transmissionType == 0 || channel.transmissionType == sensor.transmissionType)
    }

    private func broadcast(_ channel: UInt8, _ data: [UInt8], _ sensor: Sensor, _ extended: Bool) -> [UInt8] {
        var payload = [channel] + data
        if extended {
            payload += [0x80, UInt8(sensor.number & 0xFF), UInt8(sensor.number >> 8), sensor.type, sensor.transmissionType]
        }
        return Self.message(0x4E, payload)
    }

    /// One message from the stick: sync, length, id, payload, checksum (XOR of all before it).
    static func message(_ id: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0xA4, UInt8(payload.count), id] + payload
        var check: UInt8 = 0
        for byte in bytes { check ^= byte }
        bytes.append(check)
        return bytes
    }

    private func respond(_ channel: UInt8, _ id: UInt8, _ code: UInt8) -> [UInt8] {
        Self.message(0x40, [channel, id, code])
    }

    private func command(_ id: UInt8, _ payload: [UInt8], _ state: inout State) -> [UInt8] {
        let wrongState: UInt8 = 0x15
        let invalidParameter: UInt8 = 0x33
        /// The channel a channel message names, when the stick has it.
        func channel(_ minimumLength: Int) -> Int? {
            guard payload.count >= minimumLength, Int(payload[0]) < state.channels.count else { return nil }
            return Int(payload[0])
        }
        let first = payload.first ?? 0
        switch id {
        case 0x4A:  // reset system
            state.channels = Array(repeating: Channel(), count: state.channels.count)
            state.keys = Array(repeating: nil, count: state.keys.count)
            state.extended = false
            state.started = true
            return Self.message(0x6F, [0x20])
        case 0x4D:  // request message
            guard payload.count >= 2 else { return respond(first, id, 0x28) }
            switch payload[1] {
            case 0x54:
                return Self.message(0x54, [UInt8(state.channels.count), UInt8(state.keys.count), 0x00, 0x3A, 0x00, 0x00, 0x00, 0x00])
            case 0x51:
                guard let index = channel(2) else { return respond(first, id, invalidParameter) }
                let c = state.channels[index]
                return Self.message(0x51, [payload[0], UInt8(c.number & 0xFF), UInt8(c.number >> 8), c.deviceType, c.transmissionType])
            case 0x52:
                guard let index = channel(2) else { return respond(first, id, invalidParameter) }
                let c = state.channels[index]
                let status: UInt8 = !c.assigned ? 0 : !c.open ? 1 : c.tracking == nil ? 2 : 3
                return Self.message(0x52, [payload[0], status])
            default:
                return respond(first, id, 0x28)
            }
        case 0x46:  // set network key
            guard payload.count == 9 else { return respond(first, id, 0x28) }
            guard Int(first) < state.keys.count else { return respond(first, id, 0x29) }
            state.keys[Int(first)] = Array(payload[1...])
            return respond(first, id, 0)
        case 0x6E:  // lib config
            guard payload.count == 2 else { return respond(0, id, 0x28) }
            state.extended = payload[1] & 0x80 != 0
            return respond(0, id, 0)
        case 0x66:  // enable extended messages
            guard payload.count == 2 else { return respond(0, id, 0x28) }
            state.extended = payload[1] != 0
            return respond(0, id, 0)
        case 0x42:  // assign channel
            guard payload.count >= 3, let index = channel(3) else { return respond(first, id, invalidParameter) }
            guard !state.channels[index].assigned else { return respond(first, id, wrongState) }
            guard Int(payload[2]) < state.keys.count else { return respond(first, id, 0x29) }
            guard payload[1] == 0x00 else { return respond(first, id, invalidParameter) }  // slave receive only
            state.channels[index] = Channel(assigned: true, network: payload[2])
            return respond(first, id, 0)
        case 0x41:  // unassign channel
            guard let index = channel(1) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned, !state.channels[index].open else { return respond(first, id, wrongState) }
            state.channels[index] = Channel()
            return respond(first, id, 0)
        case 0x51:  // set channel id
            guard payload.count == 5, let index = channel(5) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned, !state.channels[index].open else { return respond(first, id, wrongState) }
            state.channels[index].number = UInt16(payload[1]) | UInt16(payload[2]) << 8
            state.channels[index].deviceType = payload[3]
            state.channels[index].transmissionType = payload[4]
            return respond(first, id, 0)
        case 0x43:  // channel period
            guard payload.count == 3, let index = channel(3) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned else { return respond(first, id, wrongState) }
            state.channels[index].period = UInt16(payload[1]) | UInt16(payload[2]) << 8
            return respond(first, id, 0)
        case 0x44:  // search timeout
            guard payload.count == 2, let index = channel(2) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned else { return respond(first, id, wrongState) }
            state.channels[index].searchTimeout = payload[1]
            return respond(first, id, 0)
        case 0x45:  // RF frequency
            guard payload.count == 2, let index = channel(2) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned else { return respond(first, id, wrongState) }
            guard payload[1] <= 124 else { return respond(first, id, invalidParameter) }
            state.channels[index].frequency = payload[1]
            return respond(first, id, 0)
        case 0x4B:  // open channel
            guard let index = channel(1) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].assigned, !state.channels[index].open else { return respond(first, id, wrongState) }
            state.channels[index].open = true
            state.channels[index].tracking = nil
            state.channels[index].searchStart = state.now
            return respond(first, id, 0)
        case 0x5B:  // open rx scan mode (channel 0)
            guard state.channels[0].assigned, !state.channels[0].open else { return respond(0, id, wrongState) }
            state.channels[0].open = true
            state.channels[0].scan = true
            return respond(0, id, 0)
        case 0x4C:  // close channel
            guard let index = channel(1) else { return respond(first, id, invalidParameter) }
            guard state.channels[index].open else { return respond(first, id, wrongState) }
            state.channels[index].open = false
            state.channels[index].scan = false
            state.channels[index].tracking = nil
            return respond(first, id, 0) + Self.message(0x40, [first, 0x01, 0x07])
        default:
            return respond(first, id, 0x28)
        }
    }
}

/// What an ANT+ sensor sends besides its main page, as the profiles say: heart-rate straps put a
/// background page (1 operating time, 2 manufacturer and serial, 3 versions and model) in every 65th
/// message with the toggle bit flipping every 4 messages; power meters and foot pods put common page
/// 80 or 81 in every 61st. Bike speed and cadence (121) has no pages.
public struct ANTSensorPages: Sendable {
    public let sensor: ANTStickEmulation.Sensor
    /// The ANT+ manufacturer id sent (255: development).
    public var manufacturer: UInt16 = 255
    /// The model number sent.
    public var model: UInt16
    private var count = 0
    private var background = 0

    public init(sensor: ANTStickEmulation.Sensor, model: UInt16 = 1) {
        self.sensor = sensor
        self.model = model
    }

    /// The next message's 8 bytes, given the sensor's current main page.
    public mutating func next(_ main: [UInt8]) -> [UInt8] {
        count += 1
        var page = Array((main + Array(repeating: 0xFF, count: 8)).prefix(8))
        switch sensor.type {
        case 120:
            if count % 65 == 0 {
                background = background % 3 + 1
                page[0] = UInt8(background)
                switch background {
                case 1:  // cumulative operating time, 2 s units, 24 bits
                    let time = count / 8
                    page[1] = UInt8(truncatingIfNeeded: time)
                    page[2] = UInt8(truncatingIfNeeded: time >> 8)
                    page[3] = UInt8(truncatingIfNeeded: time >> 16)
                case 2:  // manufacturer id, serial number (upper 16 bits)
                    page[1] = UInt8(truncatingIfNeeded: manufacturer)
                    page[2] = UInt8(truncatingIfNeeded: sensor.number)
                    page[3] = UInt8(truncatingIfNeeded: sensor.number >> 8)
                default:  // hardware version, software version, model number
                    page[1] = 1
                    page[2] = 1
                    page[3] = UInt8(truncatingIfNeeded: model)
                }
            }
            page[0] = page[0] & 0x7F | ((count / 4) % 2 == 1 ? 0x80 : 0)
        case 11, 124, 17:
            if count % 61 == 0 {
                background += 1
                if background % 2 == 1 {
                    page = [
                        0x50, 0xFF, 0xFF, 1, UInt8(truncatingIfNeeded: manufacturer), UInt8(truncatingIfNeeded: manufacturer >> 8),
                        UInt8(truncatingIfNeeded: model), UInt8(truncatingIfNeeded: model >> 8),
                    ]
                } else {
                    let serial = UInt32(sensor.number)
                    page = [
                        0x51, 0xFF, 0xFF, 10, UInt8(truncatingIfNeeded: serial), UInt8(truncatingIfNeeded: serial >> 8),
                        UInt8(truncatingIfNeeded: serial >> 16), UInt8(truncatingIfNeeded: serial >> 24),
                    ]
                }
            }
        default:
            break
        }
        return page
    }
}
